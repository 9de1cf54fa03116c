import sys, time, numpy as np
import cortex, cortex.context as cc
from cortex.bench import hotframe
from cortex.salience import score as S
from cortex.index import frame
with cortex.open(sys.argv[1], actor="bench-agent", mode="r") as c:
    e = c._engine
    hf = hotframe.hot_frames(c); h = hf[0]
    c.context(**h.query("short"))
    cols = e.hot.lookup(frame.prefix(int(h.verb), int(h.kind), h.ref), e.storage)
    lu, ac, ci, im = cols["last_used"], cols["access"], cols["citations"], cols["importance"]
    pin = np.zeros(len(cols), bool); now = e.now(); from cortex.model import to_micros; now = to_micros(now)
    w = e.weights(); n = len(lu)
    out = np.empty(n)
    def t(name, f, k=500):
        for _ in range(20): f()
        ts = []
        for _ in range(k):
            t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
        print(name, "%.1f us" % (np.median(ts) * 1e6))
    t("live_scores", lambda: S.live_scores(lu, ac, ci, im, pin, now, w, out))
    t("recency", lambda: S._recency(lu, now, out))
    st = lu.view(np.int64)
    t("now - stamps", lambda: now - st)
    ages = now - st
    t("ages.min", lambda: ages.min())
    t("divide", lambda: np.divide(ages, -7776000000000.0, out=out))
    t("exp", lambda: np.exp(out, out=out))
    t("add A", lambda: S._add_count_share(out, ac, 0.15))
    t("count_nonzero", lambda: np.count_nonzero(ac))
    t("flatnonzero", lambda: np.flatnonzero(ac != 0))
    t("D", lambda: im.astype(np.float64))
    d = im.astype(np.float64)
    t("d/=10", lambda: np.divide(d, 10.0, out=d))
    t("d*=", lambda: np.multiply(d, 0.2, out=d))
    t("+=", lambda: np.add(out, d, out=out))
    t("pin.any", lambda: pin.any())
    print(w)
