"""The query mix's two passes on one handle (as the harness runs them): the warm pass's
p50 / p99, and the median of its small and of its large calls (4,096 candidates or more)."""
import sys

import numpy as np

import cortex
from cortex.bench.calls import timed_call
from cortex.bench.workload import Workload

n, path, label = int(sys.argv[1]), sys.argv[2], sys.argv[3]
qs = Workload(n, seed=7).queries(1000)
with cortex.open(path, actor="bench-agent") as c:
    for q in qs[:50]:
        c.context(**q)
    first = [timed_call(c, q) for q in qs]
    warm = [timed_call(c, q) for q in qs]
ms = np.array([x.ms for x in warm])
large = np.array([x.candidates >= 4096 for x in warm])
print("{:4s} first p50 {:.2f} p99 {:.2f} | warm p50 {:.3f} p99 {:.2f} | warm small p50 {:.3f}, large ({}) p50 {:.2f} p90 {:.2f}".format(
    label, np.percentile([x.ms for x in first], 50), np.percentile([x.ms for x in first], 99), np.percentile(ms, 50),
    np.percentile(ms, 99), np.percentile(ms[~large], 50), int(large.sum()), np.percentile(ms[large], 50), np.percentile(ms[large], 90)))
