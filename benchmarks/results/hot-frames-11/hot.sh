#!/bin/bash
# hot.sh ROUNDS SIDES...: the harness's 10M hot-only run on b9-base (page cache as it is), sides alternating
R=$1; shift
for r in $(seq 1 $R); do for side in "$@"; do
  (cd /tmp/wt-$side && PYTHONPATH=/tmp/wt-$side python -m benchmarks run --memories 10000000 --queries 1000 --hot-only --store /work/bench/b9-base --report /tmp/exp11/h/hot-$side-$r.json > /dev/null 2>&1)
  python - /tmp/exp11/h/hot-$side-$r.json $side <<'PY'
import json,sys
r=json.load(open(sys.argv[1])); m=r['context_ms']; w=r['context_ms_warm']; h=r['hot_frame']
print(sys.argv[2], "first pass p50 %.2f p99 %.2f | warm p50 %.2f p99 %.2f | hot p50 %.2f p99 %.2f cold p50 %.2f ratio %.1f" % (m['p50'], m['p99'], w['p50'], w['p99'], h['hot_ms']['p50'], h['hot_ms']['p99'], h['cold_ms']['p50'], h['ratio_hot_p99_cold_p50']), flush=True)
PY
done; done
