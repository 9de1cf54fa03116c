#!/bin/bash
# b10.sh TAG L0T : harness hot-only 10M build in wt-exp, L0T empty = default
T=$1; L=$2; S=/work/bench/b9-$T
rm -rf $S; mkdir -p /tmp/exp9/r
unset X_L0T; [ -n "$L" ] && export X_L0T=$L
cd /tmp/wt-exp && PYTHONPATH=/tmp/wt-exp python -m benchmarks run --memories 10000000 --queries 1000 --hot-only --store $S --report /tmp/exp9/r/$T.json > /tmp/exp9/r/$T.out 2>/tmp/exp9/r/$T.log
python - /tmp/exp9/r/$T.json $T $S <<'PY'
import json,sys,glob,re
r=json.load(open(sys.argv[1])); h=r['hot_frame']; m=r['context_ms']
comp = []
for f in glob.glob(sys.argv[3]+"/LOG*"):
    for line in open(f, errors="replace"):
        if "Cumulative compaction:" in line: comp.append(line.strip())
best = max(comp, key=lambda l: float(re.search(r"([\d.]+) seconds", l).group(1))) if comp else ""
print(sys.argv[2], "ingest %.0f/s" % r['bulk_ingest_per_s'], "opt %.1fs" % r['optimize']['seconds'], "mix %.2f/%.2f" % (m['p50'], m['p99']), "hot %.2f/%.2f cold %.2f ratio %.1f" % (h['hot_ms']['p50'],h['hot_ms']['p99'],h['cold_ms']['p50'],h['ratio_hot_p99_cold_p50']), "|", best[best.find("Cumulative"):])
PY
du -sh $S | cut -f1; ls $S/*.sst | wc -l
