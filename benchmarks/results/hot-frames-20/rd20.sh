#!/bin/bash
# rd20.sh N STORE_NEW STORE_BASE: harness --hot-only runs alternating on two 10M stores, each side with its own tree
# (first used on the two ing.py stores, b10m-part-20 and b10m-base-20, then on the fresh harness builds)
for i in $(seq 1 $1); do
  for side in new base; do
    if [ $side = new ]; then S=$2; else S=$3; fi
    (cd /tmp && PYTHONPATH=/work/h20/$side python -m benchmarks run --memories 10000000 --queries 1000 --hot-only --store $S --report /work/h20/rd-$side-$i.json 2>&1 | grep -v "^loading\|it/s\]" | tail -25 | sed "s/^/$side$i /")
  done
done
