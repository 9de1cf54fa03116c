"""In-process A/B: the base tree (as cortex_base) and the working tree (cortex), calls alternating."""
from datetime import datetime, timezone
import sys, time, random, numpy as np
import os; sys.path.insert(0, os.environ.get("ABPKG", "/tmp/abpkg"))
import cortex, cortex_base
import cortex.context as _cc
if os.environ.get("BF"): _cc._BOUNDED_FROM = int(os.environ["BF"])
from cortex.bench import hotframe
from cortex.bench.workload import Workload
store, mem, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with cortex.open(store, actor="bench-agent", mode="r") as new, cortex_base.open(store, actor="bench-agent", mode="r") as base:
    hot = hotframe.hot_frames(new)
    cold = hotframe.cold_frames(new, Workload(mem, seed=7), len(hot), seed=7)
    sides = {"base": base, "new": new}
    res = {(s, k): [] for s in sides for k in ("hot", "cold")}
    forms = ("short", "medium", "full")
    for r in range(rounds + 1):
        order = ["base", "new"] if r % 2 else ["new", "base"]
        for h, c_ in zip(hot, cold):
            for kind, fr in (("hot", h), ("cold", c_)):
                q = fr.query(forms[r % 3])
                for s in order:
                    t = time.perf_counter(); b = sides[s].context(**q); dt = (time.perf_counter() - t) * 1e3
                    if r: res[(s, kind)].append(dt)
    for s in sides:
        h, c_ = np.array(res[(s, "hot")]), np.array(res[(s, "cold")])
        print(f"{s}: hot p50 {np.median(h):.3f} p99 {np.percentile(h, 99):.3f} | cold p50 {np.median(c_):.3f} p99 {np.percentile(c_, 99):.3f} | ratio {np.percentile(h, 99) / np.median(c_):.2f}")
    # same answers
    for fr in hot + cold:
        q = {**fr.query("medium"), "now": datetime.now(timezone.utc)}
        a, b = base.context(**q), new.context(**q)
        assert [m.id for m in a.memories()] == [m.id for m in b.memories()] and a.reachable_uris == b.reachable_uris
        assert list(a.scores.items()) == list(b.scores.items())
    print("answers equal")
