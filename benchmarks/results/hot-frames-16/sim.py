import sys, numpy as np
import cortex
from cortex.bench import hotframe
from cortex.salience import score as S
from cortex.index import frame
from cortex.model import to_micros
with cortex.open(sys.argv[1], actor="bench-agent", mode="r") as c:
    e = c._engine
    hf = hotframe.hot_frames(c)
    for h in hf[:3]:
        c.context(**h.query("short"))
        cols = e.hot.lookup(frame.prefix(int(h.verb), int(h.kind), h.ref), e.storage)
        lu, ac, ci, im = cols["last_used"], cols["access"], cols["citations"], cols["importance"]
        now = to_micros(e.now())
        for w in (e.weights(), S.DEFAULT_WEIGHTS):
            sc = S.live_scores(lu, ac, ci, im, np.zeros(len(lu), bool), now, w)
            m = 256
            kth = np.sort(sc)[-m]
            ub = []
            for v in range(11):
                sel = im == v
                if not sel.any(): continue
                b = S.live_scores(np.array([lu[sel].max()], np.uint64), np.array([ac[sel].max()], np.uint32), np.array([ci[sel].max()], np.uint32), np.array([v], np.uint8), np.zeros(1, bool), now, w)[0]
                ub.append((b, v, int(sel.sum())))
            ub.sort(reverse=True)
            need = sum(cnt for b, v, cnt in ub if b >= kth)
            print(h.verb.name, w, "kth", round(kth, 4), "buckets", [(round(b, 3), v, cnt) for b, v, cnt in ub][:4], "rows to score", need)
