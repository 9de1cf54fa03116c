"""The writer's own context() on a 60k-memory frame right after each attest of one of its memories."""
import os, random, statistics, tempfile, time
import cortex
from cortex import Fact, Frame, Write
d = tempfile.mkdtemp()
c = cortex.open(os.path.join(d, "s"), actor="w")
fr = (Frame("acquire", "service", "hot"),)
uris = c.write_many(Write(Fact(statement=f"vendor {i} quoted {i % 97} USD per hour", subject=f"v{i}", predicate="price"), frames=fr,
                          importance=i % 11) for i in range(60000))
c.optimize()
q = dict(verb="acquire", objects={"service": "hot"}, budget_tokens=2000)
for _ in range(5): c.context(**q)
rng = random.Random(1)
after_write, write_ms = [], []
for i in range(300):
    t = time.perf_counter(); c.attest([rng.choice(uris)], "success"); write_ms.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter(); c.context(**q); after_write.append((time.perf_counter() - t) * 1000)
steady = []
for i in range(300):
    t = time.perf_counter(); c.context(**q); steady.append((time.perf_counter() - t) * 1000)
pct = lambda xs, p: statistics.quantiles(xs, n=100)[p - 1]
print(f"attest p50 {statistics.median(write_ms):.3f} ms; context after each attest p50 {statistics.median(after_write):.3f} p99 {pct(after_write, 99):.3f}; "
      f"context again p50 {statistics.median(steady):.3f} p99 {pct(steady, 99):.3f} ms")
c.close()
import shutil; shutil.rmtree(d)
