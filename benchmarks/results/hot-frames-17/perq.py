import sys, time, numpy as np, collections
import cortex
from cortex.bench import hotframe
from cortex.bench.hotframe import FORMS
with cortex.open(sys.argv[1], actor="bench-agent", mode="r") as c:
    hot = hotframe.hot_frames(c)
    for h in hot: c.context(**h.query(FORMS[0]))
    per = collections.defaultdict(list)
    for r in range(60):
        form = FORMS[r % len(FORMS)]
        for h in hot:
            t = time.perf_counter(); b = c.context(**h.query(form)); per[(h.verb.name, form)].append((time.perf_counter() - t) * 1e3)
    allv = [v for vs in per.values() for v in vs]
    print("all p50 %.3f p99 %.3f" % (np.median(allv), np.percentile(allv, 99)))
    for k, vs in sorted(per.items(), key=lambda kv: -np.median(kv[1]))[:12]:
        print(k, "p50 %.3f max %.3f n %d" % (np.median(vs), max(vs), len(vs)))
    for k, vs in sorted(per.items(), key=lambda kv: np.median(kv[1]))[:4]:
        print(k, "p50 %.3f max %.3f n %d" % (np.median(vs), max(vs), len(vs)))
