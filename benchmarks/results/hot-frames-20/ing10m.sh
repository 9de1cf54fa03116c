#!/bin/bash
# ing10m.sh: one 10M ../hot-frames-9/ing.py build a side, kept: part first, then base
for side in part base; do
  (cd /tmp && TAG=$side PYTHONPATH=/work/h20/$side python /work/main/benchmarks/results/hot-frames-9/ing.py 10000000 /work/bench/b10m-$side-20 2>&1 | tail -12)
done
