"""writecall.py DIR: a writer that writes one memory to a hot object and then calls context() on it, again and
again (an agent at work): per-iteration times. Builds the store on first use (40,000 memories in one frame,
importances 0-10, a year of writes, and a few attests so that weights are learned), then copies it per run."""
import os, random, shutil, sys, time, numpy as np
from datetime import datetime, timedelta, timezone
import cortex
from cortex import Fact, Frame
src = sys.argv[1]
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
class Clock:
    def __init__(self): self.now = START
    def __call__(self): return self.now
clock = Clock()
if not os.path.exists(src):
    rng = random.Random(7)
    with cortex.open(src, actor="w", clock=clock, entropy=random.Random(7).randbytes) as c:
        uris = []
        for b in range(40):
            clock.now = START + timedelta(days=9 * b)
            uris += c.write_many([cortex.Write(Fact(statement=f"fact {b}-{i} " + "x" * rng.randint(10, 200), subject="s", predicate="p"),
                                               frames=(Frame("acquire", "service", "gpu"),), importance=rng.randint(0, 10)) for i in range(1000)])
        for _ in range(30):
            c.attest(rng.sample(uris[-3000:], 3), "success")
    print("built", src)
run = src + "-run"
shutil.rmtree(run, ignore_errors=True); shutil.copytree(src, run)
clock.now = START + timedelta(days=370)
ts = []
import cortex.context as cc
used = [0]
if hasattr(cc, "_Bounded"):
    orig = cc._Bounded.__init__
    def counted(self, *a, **k):
        used[0] += 1; orig(self, *a, **k)
    cc._Bounded.__init__ = counted
with cortex.open(run, actor="w", clock=clock) as c:
    print("weights", c._engine.weights())
    ask = {"verb": "acquire", "objects": {"service": "gpu"}, "budget_tokens": 2000}
    c.context(**ask)
    for i in range(300):
        clock.now += timedelta(seconds=30)
        t = time.perf_counter()
        c.write(Fact(statement=f"new {i}", subject="s", predicate="p"), frames=[Frame("acquire", "service", "gpu")], importance=i % 11)
        b = c.context(**ask)
        ts.append((time.perf_counter() - t) * 1e3)
print(f"{cortex.__file__.split('/')[2]}: write+context p50 {np.median(ts):.3f} p90 {np.percentile(ts, 90):.3f} ms; candidates {b.candidates}; bounded calls {used[0]}")
shutil.rmtree(run)
