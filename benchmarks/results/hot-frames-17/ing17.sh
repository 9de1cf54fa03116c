#!/bin/bash
for i in 1 2; do
  for side in main h; do
    if [ $side = main ]; then T=/work/main; else T=/tmp/wt-h; fi
    (cd /tmp && PYTHONPATH=$T python /work/main/benchmarks/results/hot-frames-9/ing.py 1000000 /work/bench/ing-tmp 2>&1 | tail -1 | sed "s/^/$side /")
  done
done
rm -rf /work/bench/ing-tmp
