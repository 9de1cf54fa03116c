"""Hot calls under given weights with the bounded ranking where `_worth_bounding` says so
(shipped), everywhere (on), or nowhere (off). One mode per process; median and p90 (ms)."""
import statistics
import sys
import time

import numpy as np

import cortex
from cortex import context as ctx
from cortex.bench import hotframe
from cortex.salience.score import DEFAULT_WEIGHTS, Weights

n, path, wname, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
W = {"default": DEFAULT_WEIGHTS, "noimp": Weights(0.5, 0.25, 0.25, 0.0), "learned": None}[wname]
if mode == "on":
    ctx._worth_bounding = lambda p, now, w: True
elif mode == "off":
    ctx._bounded_parts = lambda *a: []
with cortex.open(path, actor="bench-agent") as c:
    e = c._engine
    if W is not None:
        e.weights = lambda: W
    frames = hotframe.hot_frames(c)
    out = []
    for r in range(11):
        for fr in frames:
            for form in hotframe.FORMS:
                t = time.perf_counter(); c.context(**fr.query(form)); d = time.perf_counter() - t
                if r: out.append(d * 1e3)
    print(f"{wname:8s} {mode:8s} p50 {statistics.median(out):.3f} p90 {np.percentile(out, 90):.3f} ms")
