#!/bin/bash
# bw11.sh STORE REPS : the harness's reader beside a writer at 1M, before and after alternating
S=$1; R=$2
for r in $(seq 1 $R); do for side in before after; do
  (cd /tmp/wt-$side && PYTHONPATH=/tmp/wt-$side python -m benchmarks run --memories 1000000 --queries 300 --hot-only --hot-rounds 1 --beside-writer --store $S --report /tmp/exp11/bw/beside-writer-1m-$side-$r.json > /dev/null 2>/tmp/exp11/bw/$side-$r.log)
  python - /tmp/exp11/bw/beside-writer-1m-$side-$r.json $side <<'PY'
import json,sys
r=json.load(open(sys.argv[1])); b=r['beside_writer']; c=b['reader']['context_ms']
print(sys.argv[2], "reader p50 %.2f p95 %.2f p99 %.2f max %.0f calls %d writer %.0f/s" % (c['p50'], c['p95'], c['p99'], c['max'], b['reader'].get('calls', 0), b['writer']['memories_per_s']))
PY
done; done
