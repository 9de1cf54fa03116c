#!/bin/bash
# ing19.sh: ../hot-frames-9/ing.py 1M builds alternating, base = ef9d000, after = 6fa61c7
for i in 1 2 3; do
  for side in base after; do
    (cd /tmp && PYTHONPATH=/work/h19/$side python /work/main/benchmarks/results/hot-frames-9/ing.py 1000000 /work/bench/ing-tmp 2>&1 | tail -1 | sed "s/^/$side /")
  done
done
rm -rf /work/bench/ing-tmp
