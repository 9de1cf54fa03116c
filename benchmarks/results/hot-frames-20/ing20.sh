#!/bin/bash
# ing20.sh N ROUNDS: ../hot-frames-9/ing.py builds alternating, base = HEAD, part = HEAD + prefix partitioner
for i in $(seq 1 ${2:-1}); do
  for side in base part; do
    (cd /tmp && TAG=$side PYTHONPATH=/work/h20/$side python /work/main/benchmarks/results/hot-frames-9/ing.py $1 /work/bench/ing-tmp 2>&1 | tail -1)
  done
done
rm -rf /work/bench/ing-tmp
