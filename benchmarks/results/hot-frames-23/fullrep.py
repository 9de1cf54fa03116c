import sys
import time

import cortex
from cortex.bench import hotframe

n, path = int(sys.argv[1]), sys.argv[2]
with cortex.open(path, actor="bench-agent") as c:
    hot = hotframe.hot_frames(c)
    for form in ("short", "medium"):
        for h in hot: c.context(**h.query(form))
    for rep in range(3):
        ts = []
        for h in hot:
            t = time.perf_counter(); b = c.context(**h.query("full")); ts.append((time.perf_counter() - t) * 1e3)
        print(rep, " ".join(f"{x:.2f}" for x in ts))
    b1 = c.context(**hot[0].query("full")); b2 = c.context(**hot[0].query("full"))
    print(sum(a is b for a, b in zip(b1.memories(), b2.memories())), "of", len(b1.memories()), "same objects;", len(b1.pinned), "pinned")
