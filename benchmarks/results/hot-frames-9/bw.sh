#!/bin/bash
S=$1; T=$2; R=$3
for r in $(seq 1 $R); do for side in base l0t8; do
  unset X_L0T; [ $side = l0t8 ] && export X_L0T=8
  (cd /tmp/wt-exp && PYTHONPATH=/tmp/wt-exp python -m benchmarks run --memories 1000000 --queries 300 --hot-only --hot-rounds 1 --beside-writer --store $S --report /tmp/exp9/bw/$T-$side-$r.json > /dev/null 2>/tmp/exp9/bw/$T-$side-$r.log)
  python - /tmp/exp9/bw/$T-$side-$r.json $side <<'PY'
import json,sys
r=json.load(open(sys.argv[1])); b=r['beside_writer']; c=b['reader']['context_ms']
print(sys.argv[2], "reader p50 %.2f p95 %.2f p99 %.2f max %.0f calls %d writer %.0f/s" % (c['p50'], c['p95'], c['p99'], c['max'], b['reader'].get('calls', 0), b['writer']['memories_per_s']))
PY
done; done
