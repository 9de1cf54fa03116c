#!/bin/bash
# cold20.sh ROUNDS RUNS: the cold process (../hot-frames-17/cold17.py) on the two fresh 10M harness builds,
# blocks of RUNS processes alternating new/base, each side with its own tree
for i in $(seq 1 $1); do
  for side in new base; do
    (cd /tmp && PYTHONPATH=/work/h20/$side python /work/main/benchmarks/results/hot-frames-17/cold17.py \
      python /work/bench/b10m-$side-20 $2 $side$i)
  done
done
