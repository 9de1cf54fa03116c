#!/bin/bash
# ab14t.sh N TAG MEM STORE TREE_A TREE_B: alternate harness --hot-only runs of two trees on one store
N=$1; TAG=$2; MEM=$3; S=$4; TA=$5; TB=$6
for i in $(seq 1 $N); do
  for side in a b; do
    if [ $side = a ]; then T=$TA; else T=$TB; fi
    (cd /tmp && PYTHONPATH=$T python -m benchmarks run --memories $MEM --queries 1000 --hot-only --store $S --report /work/bench/$TAG-$side-$i.json 2>&1 | grep -E "context\(\) ms|warm|hot frames" | sed "s/^/$side$i /")
  done
done
