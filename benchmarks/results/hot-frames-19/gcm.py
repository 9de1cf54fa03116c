"""gcm.py STORE MEM ROUNDS: the hot-frame rounds as the harness runs them, with the time
the garbage collector spends inside each timed call (gc.callbacks)."""
import gc, sys, time
import numpy as np
import cortex
from cortex.bench import hotframe
from cortex.bench.workload import Workload
store, mem, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
spent = [0.0]; gens = [0, 0, 0]; t0 = [0.0]
def cb(phase, info):
    if phase == "start": t0[0] = time.perf_counter()
    else:
        spent[0] += time.perf_counter() - t0[0]; gens[info["generation"]] += 1
gc.callbacks.append(cb)
with cortex.open(store, actor="bench-agent", mode="r") as c:
    hot = hotframe.hot_frames(c); cold = hotframe.cold_frames(c, Workload(mem, seed=7), len(hot), seed=7)
    res = {"hot": [], "cold": []}
    for r in range(rounds + 1):
        form = hotframe.FORMS[r % 3]
        for h, cf in zip(hot, cold):
            for kind, fr in (("hot", h), ("cold", cf)):
                g0 = list(gens); spent[0] = 0.0
                t = time.perf_counter(); c.context(**fr.query(form)); ms = (time.perf_counter() - t) * 1e3
                if r: res[kind].append((ms, spent[0] * 1e3, [a - b for a, b in zip(gens, g0)]))
    for kind, rows in res.items():
        ms = np.array([x[0] for x in rows]); g = np.array([x[1] for x in rows])
        n1 = sum(1 for x in rows if x[2][1] or x[2][2]); n2 = sum(1 for x in rows if x[2][2])
        top = np.argsort(ms)[-max(1, len(ms) // 100):]
        print(f"{kind}: n={len(ms)} p50 {np.median(ms):.3f} p99 {np.percentile(ms, 99):.3f} | gc ms/call mean {g.mean():.4f}, "
              f"calls with a gen1+ collection {n1}, gen2 {n2}; the slowest 1%: gc {g[top].mean():.3f} ms of {ms[top].mean():.3f}; "
              f"p99 without gc time {np.percentile(ms - g, 99):.3f}")
    print("collections per call (gen0, gen1, gen2):", [round(x / (2 * len(hot) * rounds), 2) for x in gens])
