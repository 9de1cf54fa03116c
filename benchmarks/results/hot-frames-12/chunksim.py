import sys, numpy as np, cortex
from cortex.bench import hotframe
from cortex.index import frame, hot
from cortex.salience.score import live_scores
from cortex.model import to_micros
from datetime import datetime, timezone
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r"); e = c._engine
w = e.weights(); now = to_micros(datetime.now(timezone.utc))
for f in hotframe.hot_frames(c)[:3]:
    c.context(**f.query("short"))
    cols = e.hot.lookup(frame.prefix(int(f.verb), int(f.kind), f.ref), e.storage)
    n = len(cols)
    s = live_scores(cols["last_used"], cols["access"], cols["citations"], cols["importance"], np.zeros(n, bool), now, w)
    mth = np.sort(s)[-256]
    out = []
    for K in (16, 32, 64, 128, 256, 512):
        hot.CHUNK_ROWS = K
        ch = hot.chunks_of(cols)
        b = live_scores(ch.last_used, ch.access, ch.citations, ch.importance, np.zeros(len(ch), bool), now, w)
        sizes = np.diff(ch.starts)
        sel = b >= mth
        out.append(f"K{K}: {len(ch)} chunks, {int(sel.sum())} picked, {int(sizes[sel].sum())} rows")
    print(n, "; ".join(out))
