#!/bin/bash
# abs.sh N TAG MEM STORE_A STORE_B [TREE]: alternate harness --hot-only runs of one tree on two stores
N=$1; TAG=$2; MEM=$3; SA=$4; SB=$5; T=${6:-/work/main}
for i in $(seq 1 $N); do
  for side in a b; do
    if [ $side = a ]; then S=$SA; else S=$SB; fi
    (cd /tmp && PYTHONPATH=$T python -m benchmarks run --memories $MEM --queries 1000 --hot-only --store $S --report /work/bench/$TAG-$side-$i.json 2>&1 | grep -E "^(context\(\) ms|the same|hot frames|index entries)" | sed "s/^/$side$i /")
  done
done
