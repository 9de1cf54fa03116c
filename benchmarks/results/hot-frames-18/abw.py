"""abw.py STORE MEM ROUNDS W1 W2 W3 W4: the working tree, bounded (new) against itself with every row scored (base:
cortex_base from ABPKG with _BOUNDED_FROM huge), both under the given weights; calls alternating."""
import os, sys, time, numpy as np
sys.path.insert(0, os.environ.get("ABPKG", "/tmp/abpkg"))
import cortex, cortex_base
import cortex_base.context as bc
from cortex.salience.score import Weights
from cortex.bench import hotframe
from cortex.bench.workload import Workload
store, mem, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
w = Weights(*(float(x) for x in sys.argv[4:8]))
bc._BOUNDED_FROM = 1 << 40
with cortex.open(store, actor="bench-agent", mode="r") as new, cortex_base.open(store, actor="bench-agent", mode="r") as base:
    for h in (new, base): h._engine.weights = lambda: w
    hot = hotframe.hot_frames(new)
    sides = {"base": base, "new": new}
    res = {s: [] for s in sides}
    for r in range(rounds + 1):
        for h in hot:
            q = h.query(("short", "medium", "full")[r % 3])
            for s in (("base", "new") if r % 2 else ("new", "base")):
                t = time.perf_counter(); sides[s].context(**q); dt = (time.perf_counter() - t) * 1e3
                if r: res[s].append(dt)
    for s in sides: print(f"{s}: hot p50 {np.median(res[s]):.3f} p99 {np.percentile(res[s], 99):.3f}")
    from datetime import datetime, timezone
    q = {**hot[0].query("medium"), "now": datetime.now(timezone.utc)}; a, b = base.context(**q), new.context(**q)
    assert [m.id for m in a.memories()] == [m.id for m in b.memories()] and a.reachable_uris == b.reachable_uris and list(a.scores.items()) == list(b.scores.items())
    print("answers equal; weights", w)
