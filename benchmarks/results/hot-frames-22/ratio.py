"""The harness's order (mix first pass, warm pass, then the hot-frame figure), with the
hot figure's calls kept: where its p99 comes from."""
import sys

import cortex
from cortex.bench import hotframe
from cortex.bench.workload import Workload

n, path = int(sys.argv[1]), sys.argv[2]
mix = sys.argv[3] == "mix"
w = Workload(n, seed=7)
qs = w.queries(1000)
from gcpauses import pauses

with cortex.open(path, actor="bench-agent") as c:
    if mix:
        for q in qs[:50]: c.context(**q)
        for q in qs: c.context(**q)
        for q in qs: c.context(**q)
    for k in range(2):
        pauses.clear()
        fig, _ = hotframe.measure(c, w, 30, 7)
        g = [p for p in pauses]
        print("mix" if mix else "nomix", "hot p50 {:.2f} p99 {:.2f} max {:.2f} | cold p50 {:.2f} p99 {:.2f} | ratio {:.2f} | gcs gen2 {} gen1 {} ({:.1f} ms)".format(
            fig["hot_ms"]["p50"], fig["hot_ms"]["p99"], fig["hot_ms"]["max"], fig["cold_ms"]["p50"], fig["cold_ms"]["p99"],
            fig["ratio_hot_p99_cold_p50"], sum(1 for p in g if p[0] == 2), sum(1 for p in g if p[0] == 1), sum(p[1] for p in g)))
