"""First full-form call on each hot frame after a short warm-up, vs again."""
import sys, time, statistics
import cortex
from cortex.bench import hotframe
path = sys.argv[1]
prof = len(sys.argv) > 2
c = cortex.open(path, actor="bench-agent")
hot = hotframe.hot_frames(c)
for f in hot:
    c.context(**f.query("short"))
if prof:
    import cProfile, pstats
    pr = cProfile.Profile(); pr.enable()
first, again = [], []
for f in hot:
    t = time.perf_counter(); b = c.context(**f.query("full")); first.append((time.perf_counter() - t) * 1000)
for f in hot:
    t = time.perf_counter(); b = c.context(**f.query("full")); again.append((time.perf_counter() - t) * 1000)
if prof:
    pr.disable(); pstats.Stats(pr).sort_stats("cumulative").print_stats(40)
print("first", " ".join(f"{x:.3f}" for x in first), "median", f"{statistics.median(first):.3f}")
print("again", " ".join(f"{x:.3f}" for x in again), "median", f"{statistics.median(again):.3f}")
print("survivors", len(b.pinned) + len(b.frame_relevant) + len(b.outcomes))
