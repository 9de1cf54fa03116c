import sys, time, timeit, numpy as np
import cortex, cortex.context as cc
from cortex.context import *
from cortex.context import _plan, _pinned, _outcomes, _frame_relevant, _block_ids, _candidates, _live, _scores, _rank_last, _trim, _top, _above_cutoff, _ranking, _uris, _request, _TIER_ORDER, _block_views, _copies_by_search, _joined
from cortex.index import entry, hot
from cortex.records import head_keys
from cortex.bench import hotframe
store = sys.argv[1]
def t(name, f, n=300):
    f()
    ts = []
    for _ in range(n):
        a = time.perf_counter(); f(); ts.append(time.perf_counter() - a)
    print(f"{name:40s} {np.median(ts)*1e6:8.1f} us")
with cortex.open(store, actor="bench-agent", mode="r") as c:
    hot_ = hotframe.hot_frames(c)
    q = hot_[0].query("medium")
    for _ in range(3): c.context(**q)
    e = c._engine if hasattr(c, "_engine") else c._e
    plan = _plan(ContextOpts(**q), e.now)
    included = [tt for tt in _TIER_ORDER if tt in plan.tiers]
    blocks = []; counts = []
    for tier in included:
        found = [_pinned(e)] if tier is Tier.PINNED else [_outcomes(e, plan, _block_ids(blocks), None)] if tier is Tier.OUTCOMES else _frame_relevant(e, plan)
        blocks += found; counts.append(sum(len(b) for b in found))
    print("blocks", [ (len(b), type(b.rows).__name__, b.by_id) for b in blocks])
    t("_pinned", lambda: _pinned(e))
    t("_outcomes", lambda: _outcomes(e, plan, _block_ids(blocks[:1]), None))
    t("_frame_relevant", lambda: _frame_relevant(e, plan))
    t("_candidates", lambda: _candidates(e, blocks, included, counts))
    t("_joined", lambda: _joined(blocks))
    cols = _joined(blocks)
    t("copies_by_search", lambda: _copies_by_search(_block_views(cols, blocks)))
    views = _block_views(cols, blocks)
    for j,(b,bb) in enumerate(views):
        for a,ab in views[:j]:
            print(j, len(a), ab, len(b), bb)
    a, b = views[0][0], views[2][0]
    t("locate pinned in frame", lambda: hot.locate(a["id_hi"], a["id_lo"], b["id_hi"], b["id_lo"]))
    a, b = views[1][0], views[2][0]
    t("locate outcomes in frame", lambda: hot.locate(a["id_hi"], a["id_lo"], b["id_hi"], b["id_lo"]))
    cand = _candidates(e, blocks, included, counts)
    t("facts (fresh join)", lambda: _joined(blocks).facts())
    t("_live", lambda: _live(cols, plan.now))
    w = e.weights()
    t("_scores", lambda: _scores(cols, cand.pinned, plan.now, w))
    scores = _scores(cols, cand.pinned, plan.now, w)
    keep = _live(cols, plan.now); keep[cand.copies] = False
    t("keep.all", lambda: keep.all())
    sc2 = scores.copy()
    going = _rank_last(sc2, keep)
    t("rank_last", lambda: _rank_last(scores.copy(), keep))
    t("scores.copy", lambda: scores.copy())
    tokens = cols[entry.TOKEN_FIELDS[plan.form]]
    count = len(cols) - len(going)
    t("_trim", lambda: _trim(sc2, tokens, cols, plan.budget, count, going))
    t("tokens.sum", lambda: int(tokens.sum(dtype=np.int64)))
    t("_above_cutoff 256", lambda: _above_cutoff(sc2, 256))
    rows = _above_cutoff(sc2, 256); print("above cutoff rows", len(rows))
    t("cols.take(rows)+ids hi lo", lambda: (lambda ids: (ids["id_hi"], ids["id_lo"]))(cols.take(rows)))
    ids = cols.take(rows); hi, lo = ids["id_hi"], ids["id_lo"]; s = sc2[rows]
    t("ranking lexsort", lambda: _ranking(s, hi, lo))
    t("argsort scores", lambda: np.argsort(s))
    trim = _trim(sc2, tokens, cols, plan.budget, count, going)
    print("survivors", len(trim.survivors), "reachable", len(trim.reachable))
    def uris():
        gone = cols.take(trim.reachable)
        return _uris(gone["type"].tolist(), gone.ids(), gone["version"].tolist())
    t("uris", uris)
    gone = cols.take(trim.reachable)
    t("gone type", lambda: cols.take(trim.reachable)["type"])
    t("gone ids", lambda: cols.take(trim.reachable).ids())
    L = (gone["type"].tolist(), gone.ids(), gone["version"].tolist())
    t("_uris lists", lambda: _uris(*L))
    t("chosen ids+keys", lambda: head_keys(cols.take(trim.survivors).ids()))
    keys = head_keys(cols.take(trim.survivors).ids())
    t("current_views", lambda: e.current_views(keys))
    t("_request", lambda: _request(plan))
    t("context()", lambda: c.context(**q), 200)
