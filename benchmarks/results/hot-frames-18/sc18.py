import sys, time, numpy as np
import cortex
from cortex.context import _plan, ContextOpts, _frame_relevant
from cortex.salience.score import live_scores, _recency, RECENCY_SCALE_US, PINNED_FLOOR, _add_count_share
from cortex.bench import hotframe
store = sys.argv[1]
junk = np.ones(1 << 20)  # 8 MB
def flush(): junk.sum(); junk[::8] += 0
def t(name, f, n=300, fl=True):
    f(); ts = []
    for _ in range(n):
        if fl: flush()
        a = time.perf_counter(); f(); ts.append(time.perf_counter() - a)
    print(f"{name:40s} {np.median(ts)*1e6:8.1f} us", flush=True)
    return np.median(ts)
with cortex.open(store, actor="bench-agent", mode="r") as c:
    q = hotframe.hot_frames(c)[0].query("medium")
    c.context(**q)
    e = c._engine if hasattr(c, "_engine") else c._e
    plan = _plan(ContextOpts(**q), e.now)
    part = _frame_relevant(e, plan)[0].rows
    w = e.weights(); now = plan.now
    print(len(part), w, {k: part[k].dtype for k in ("last_used","access","citations","importance")})
    lu, ac, ci, im = part["last_used"], part["access"], part["citations"], part["importance"]
    pin = np.zeros(len(part), bool)
    out = np.empty(len(part))
    ref = live_scores(lu, ac, ci, im, pin, now, w, out.copy())
    print("distinct last_used", len(np.unique(lu)), "distinct (lu,imp)", len(np.unique(lu.astype(np.float64)*11+im)))
    for fl in (False, True):
        print("flush", fl)
        t("live_scores", lambda: live_scores(lu, ac, ci, im, pin, now, w, out), fl=fl)
        def chunked(step):
            def f():
                for s in range(0, len(lu), step):
                    live_scores(lu[s:s+step], ac[s:s+step], ci[s:s+step], im[s:s+step], pin[s:s+step], now, w, out[s:s+step])
            return f
        for step in (8192, 16384, 32768):
            t(f"chunked {step}", chunked(step), fl=fl)
            assert np.array_equal(out, ref)
        wr, wa, wc, wd = w.as_tuple()
        table = (np.arange(256, dtype=np.float64) / 10.0) * wd
        def v2():
            score = out
            stamps = lu.view(np.int64)
            ages = score.view(np.int64)
            np.subtract(now, stamps, out=ages)
            if int(ages.min()) < 0: np.maximum(ages, 0, out=ages)
            np.divide(ages, -float(RECENCY_SCALE_US), out=score)
            np.exp(score, out=score)
            score *= wr
            _add_count_share(score, ac, wa); _add_count_share(score, ci, wc)
            score += table.take(im.astype(np.intp))
            score /= wr + wa + wc + wd
            if pin.any(): score[pin] = np.maximum(score[pin], PINNED_FLOOR)
        t("v2 (in-place ages, D table)", v2, fl=fl)
        assert np.array_equal(out, ref)
        d = np.empty(len(lu))
        t("  ages sub", lambda: np.subtract(now, lu.view(np.int64), out=out.view(np.int64)), fl=fl)
        t("  ages alloc sub", lambda: now - lu.view(np.int64), fl=fl)
        t("  min", lambda: out.view(np.int64).min(), fl=fl)
        t("  divide", lambda: np.divide(lu.view(np.int64), -1e12, out=out), fl=fl)
        t("  exp", lambda: np.exp(out, out=out), fl=fl)
        t("  *=", lambda: np.multiply(out, 0.3, out=out), fl=fl)
        t("  D table", lambda: table.take(im.astype(np.intp)), fl=fl)
        t("  D astype", lambda: im.astype(np.float64), fl=fl)
        t("  /=", lambda: np.divide(out, 0.3, out=out), fl=fl)
