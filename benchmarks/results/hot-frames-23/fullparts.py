"""Each hot frame with the full form three times, after short and medium: where the first pass's
time goes (cProfile per pass: the cumulative time of the main steps, us a call; the profiler's
own cost included, so compare passes, not figures with other scripts)."""
import cProfile
import pstats
import sys
import time

import cortex
from cortex.bench import hotframe

STEPS = ("form", "total", "_trim", "_uris", "ids", "_outcomes", "_request", "_dropped", "current_views", "_candidates")
n, path = int(sys.argv[1]), sys.argv[2]
with cortex.open(path, actor="bench-agent") as c:
    hot = hotframe.hot_frames(c)
    for form in ("short", "medium"):
        for h in hot:
            c.context(**h.query(form))
    for rep in range(3):
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.enable()
        for h in hot:
            c.context(**h.query("full"))
        profile.disable()
        wall = (time.perf_counter() - started) / len(hot) * 1e6
        stats = pstats.Stats(profile).stats  # (file, line, name) -> (calls, ncalls, tottime, cumtime, callers)
        cumulative = {name: 0.0 for name in STEPS}
        for (_, _, name), (_, _, _, cum, _) in stats.items():
            if name in cumulative:
                cumulative[name] += cum
        print(rep, f"per call {wall:.0f} us (profiled):", ", ".join(f"{k} {v / len(hot) * 1e6:.0f}" for k, v in sorted(cumulative.items(), key=lambda x: -x[1])))
