import sys, time, collections, numpy as np
import cortex, cortex.context as cc
from cortex.bench import hotframe
store = sys.argv[1]
names = (['view..blocks','candidates','facts','dropped','keep/tokens','ranking setup','trim','named+keys','views','loop','order','bundle','read-exit']
         if len(sys.argv) < 3 or sys.argv[2] == "19" else  # stamp.py 19
         ['view+weights','blocks','candidates','live/keep','score','ranklast','tokens','trim','survivors+reachable','views','loop','order','bundle','read-exit'])  # stamp.py 18
with cortex.open(store, actor="bench-agent", mode="r") as c:
    hot = hotframe.hot_frames(c)
    qs = [h.query(f) for f in ("short","medium","full") for h in hot]
    for q in qs: c.context(**q)
    for rep in range(2):
        ts = []; cc.PH.clear(); cc.PRE.clear()
        for r in range(10):
            for q in qs:
                t = time.perf_counter(); c.context(**q); ts.append((time.perf_counter() - t) * 1e3)
        lens = collections.Counter(len(p) for p in cc.PH); L = lens.most_common(1)[0][0]
        ph = np.array([np.diff(p) for p in cc.PH if len(p) == L]) * 1e3
        print(f"p50 {np.median(ts):.3f} p99 {np.percentile(ts,99):.3f} | " + " ".join(f"{n} {v:.3f}" for n, v in zip(names, np.median(ph, axis=0))), "pre %.3f" % (np.median(cc.PRE) * 1e3), flush=True)
