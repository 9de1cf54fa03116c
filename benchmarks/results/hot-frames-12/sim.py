"""sim.py STORE: how many rows a chunk-bound top-m would score on the hot frames."""
import sys, numpy as np, cortex
from cortex.bench import hotframe
from cortex.salience.score import live_scores, _count_share, RECENCY_SCALE_US
from cortex.model import to_micros
from datetime import datetime, timezone
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
e = c._engine
w = e.weights(); print("weights", w)
now = to_micros(datetime.now(timezone.utc))
for f in hotframe.hot_frames(c):
    q = f.query("short"); c.context(**q)
    from cortex.index import frame
    cols = e.hot.lookup(frame.prefix(int(f.verb), int(f.kind), f.ref), e.storage)
    if cols is None: print("uncached", f.entries); continue
    n = len(cols)
    s = live_scores(cols["last_used"], cols["access"], cols["citations"], cols["importance"], np.zeros(n, bool), now, w)
    out = [f"{f.verb.name} n={n}"]
    for K in (256, 512, 1024):
        starts = np.arange(0, n, K)
        lu = np.maximum.reduceat(cols["last_used"], starts).astype(np.int64)
        acc = np.maximum.reduceat(cols["access"], starts); cit = np.maximum.reduceat(cols["citations"], starts)
        imp = np.maximum.reduceat(cols["importance"], starts)
        b = live_scores(lu, acc, cit, imp, np.zeros(len(starts), bool), now, w)
        for m in (256, 1024):
            mth = np.sort(s)[-m]
            need = int((b >= mth).sum())
            out.append(f"K{K} m{m}: {need}/{len(starts)} chunks")
    print("; ".join(out), "maxacc", int(cols["access"].max()), "maxcit", int(cols["citations"].max()))
print("--- 2D: importance level x id-order chunks")
for f in hotframe.hot_frames(c)[:4]:
    cols = e.hot.lookup(frame.prefix(int(f.verb), int(f.kind), f.ref), e.storage)
    n = len(cols)
    s = live_scores(cols["last_used"], cols["access"], cols["citations"], cols["importance"], np.zeros(n, bool), now, w)
    out=[f"n={n}"]
    for K in (128, 256, 512):
        bs=[]; sizes=[]
        for L in range(11):
            idx = np.flatnonzero(cols["importance"] == L)
            if not len(idx): continue
            starts = np.arange(0, len(idx), K)
            lu = np.maximum.reduceat(cols["last_used"][idx], starts).astype(np.int64)
            acc = np.maximum.reduceat(cols["access"][idx], starts); cit = np.maximum.reduceat(cols["citations"][idx], starts)
            b = live_scores(lu, acc, cit, np.full(len(starts), L), np.zeros(len(starts), bool), now, w)
            bs.append(b); sizes.append(np.diff(np.append(starts, len(idx))))
        b = np.concatenate(bs); sz = np.concatenate(sizes)
        for m in (256, 1024):
            mth = np.sort(s)[-m]
            sel = b >= mth
            out.append(f"K{K} m{m}: {int(sel.sum())}/{len(b)} chunks, {int(sz[sel].sum())} rows")
    print("; ".join(out))
