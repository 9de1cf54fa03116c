#!/bin/bash
# build20.sh: fresh 10M harness builds (--hot-only), one per tree, in the same session:
#   base = 5a68313 (before the twentieth pass), new = 59f84f4 (the partitioned writer).
# Trees are `git archive <commit> cortex benchmarks` under /work/h20/<side>; run from /tmp.
for side in "$@"; do
  S=/work/bench/b10m-$side-20; rm -rf $S
  echo "# $side: python -m benchmarks run --memories 10000000 --queries 1000 --hot-only --store $S; started $(date)"
  (cd /tmp && PYTHONPATH=/work/h20/$side bash -c "time python -m benchmarks run --memories 10000000 --queries 1000 --hot-only --store $S --report /work/h20/b10m-$side.json" 2>&1 | grep -v "^loading\|it/s\]" | tail -30)
  du -sh $S; ls $S/*.sst | wc -l
done
