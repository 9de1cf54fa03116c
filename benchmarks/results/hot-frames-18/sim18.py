import sys, numpy as np
import cortex
from cortex.context import _plan, ContextOpts, _frame_relevant
from cortex.salience.score import live_scores, DEFAULT_WEIGHTS
from cortex.bench import hotframe
store = sys.argv[1]
with cortex.open(store, actor="bench-agent", mode="r") as c:
    e = c._engine if hasattr(c, "_engine") else c._e
    for h in hotframe.hot_frames(c):
        q = h.query("medium"); c.context(**q)
        plan = _plan(ContextOpts(**q), e.now)
        p = _frame_relevant(e, plan)[0].rows
        n = len(p); now = plan.now
        lu, ac, ci, im = p["last_used"], p["access"], p["citations"], p["importance"]
        ages_days = (now - lu.astype(np.int64)) / 86400e6
        print(h, n, "age days min/med/max %.1f %.1f %.1f" % (ages_days.min(), np.median(ages_days), ages_days.max()))
        for w in (e.weights(), DEFAULT_WEIGHTS):
            s = live_scores(lu, ac, ci, im, np.zeros(n, bool), now, w)
            for B in (256, 1024, 4096):
                starts = np.arange(0, n, B)
                mx = [np.maximum.reduceat(a, starts) for a in (lu, ac, ci, im)]
                U = live_scores(*mx, np.zeros(len(starts), bool), now, w) * (1 + 1e-9)
                order = np.argsort(-U, kind="stable")
                res = []
                for m in (256, 1024):
                    kth = np.sort(s)[::-1][m - 1]
                    # blocks needed: all blocks with U >= kth (at least)
                    need = U >= kth
                    rows = sum(min(B, n - st) for st in starts[need])
                    res.append(f"m={m}: {need.sum()}/{len(starts)} blocks {rows} rows")
                print(f"  w={tuple(round(x,2) for x in w.as_tuple())} B={B}: " + "; ".join(res))
