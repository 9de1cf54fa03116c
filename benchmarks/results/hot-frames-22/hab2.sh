#!/bin/bash
# TREES="base new" TREE_ROOT=DIR OUT_DIR=DIR hab2.sh N STORE ROUNDS OUT
# The harness --hot-only on STORE with each tree of $TREES in turn (a copy of cortex/
# and benchmarks/ under $TREE_ROOT), ROUNDS times; one summary line a run into OUT.
n=$1; store=$2; rounds=$3; out=$4
for r in $(seq $rounds); do for t in $TREES; do
  (cd /tmp && PYTHONPATH=$TREE_ROOT/$t python -m benchmarks run --memories $n --queries 1000 --hot-only --store $store --report $OUT_DIR/hab-$n-$t-$r.json > /dev/null 2>&1)
  OUT_DIR=$OUT_DIR python - $n $t $r <<'PY'
import json, os, sys
n, t, r = sys.argv[1:]
d = json.load(open(f"{os.environ['OUT_DIR']}/hab-{n}-{t}-{r}.json"))
c, w, h = d["context_ms"], d["context_ms_warm"], d["hot_frame"]
print(f"{t:4s} r{r} first {c['p50']:.2f}/{c['p99']:.2f}  warm {w['p50']:.2f}/{w['p99']:.2f}  hot {h['hot_ms']['p50']:.2f}/{h['hot_ms']['p99']:.2f}  cold p50 {h['cold_ms']['p50']:.2f}  ratio {h['ratio_hot_p99_cold_p50']:.2f}  hot/cold p50 {h['hot_ms']['p50']/h['cold_ms']['p50']:.2f}")
PY
done; done | tee $out
