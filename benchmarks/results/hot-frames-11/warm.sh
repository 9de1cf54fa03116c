#!/bin/bash
# warm.sh ROUNDS: the harness's 10M hot-only run on b9-base, page cache as it is, sides alternating
for r in $(seq 1 $1); do for side in after async; do

  (cd /tmp/wt-$side && PYTHONPATH=/tmp/wt-$side python -m benchmarks run --memories 10000000 --queries 1000 --hot-only --store /work/bench/b9-base --report /tmp/exp11/h/w-$side-$r.json > /dev/null 2>&1)
  python - /tmp/exp11/h/w-$side-$r.json $side <<'PY'
import json,sys
r=json.load(open(sys.argv[1])); m=r['context_ms']; w=r['context_ms_warm']; h=r['hot_frame']
print(sys.argv[2], "first pass p50 %.2f p95 %.2f p99 %.2f max %.1f | warm p50 %.2f p99 %.2f | hot p99 %.2f cold p50 %.2f ratio %.1f" % (m['p50'], m['p95'], m['p99'], m['max'], w['p50'], w['p99'], h['hot_ms']['p99'], h['cold_ms']['p50'], h['ratio_hot_p99_cold_p50']), flush=True)
PY
done; done
