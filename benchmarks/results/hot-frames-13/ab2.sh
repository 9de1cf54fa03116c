#!/bin/bash
# ab2.sh N STORE TAG MEM: alternate harness --hot-only runs of before (/tmp/wt-a) and after (/tmp/wt-b)
N=$1; STORE=$2; TAG=$3; MEM=$4
for i in $(seq 1 $N); do
  for side in a b; do
    if [ $side = a ]; then W=/tmp/wt-a; else W=/tmp/wt-b; fi
    (cd $W && PYTHONPATH=$W python -m benchmarks run --memories $MEM --queries 1000 --hot-only --store $STORE --report /work/bench/$TAG-$side-$i.json 2>&1 | grep -E "context\(\) ms|warm|hot frames|index entries" | sed "s/^/$side$i /")
  done
done
