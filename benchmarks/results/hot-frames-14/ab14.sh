#!/bin/bash
# ab14.sh N TAG MEM STORE_A STORE_B: alternate harness --hot-only runs on two stores, same code (/work/main)
N=$1; TAG=$2; MEM=$3; SA=$4; SB=$5
for i in $(seq 1 $N); do
  for side in a b; do
    if [ $side = a ]; then S=$SA; else S=$SB; fi
    (cd /tmp && PYTHONPATH=/work/main python -m benchmarks run --memories $MEM --queries 1000 --hot-only --store $S --report /work/bench/$TAG-$side-$i.json 2>&1 | grep -E "context\(\) ms|warm|hot frames|index entries" | sed "s/^/$side$i /")
  done
done
