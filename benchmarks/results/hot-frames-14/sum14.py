"""sum14.py TAG N: medians [min-max] per side of harness --hot-only reports TAG-{a,b}-i.json."""
import json, sys, statistics as s
tag, n = sys.argv[1], int(sys.argv[2])
def get(r, path):
    for k in path: r = r[k]
    return r
rows = [("first pass p50", ("context_ms", "p50")), ("first pass p99", ("context_ms", "p99")),
        ("warm p50", ("context_ms_warm", "p50")), ("warm p99", ("context_ms_warm", "p99")),
        ("hot p50", ("hot_frame", "hot_ms", "p50")), ("hot p99", ("hot_frame", "hot_ms", "p99")),
        ("cold p50", ("hot_frame", "cold_ms", "p50")), ("hot p99 / cold p50", ("hot_frame", "ratio_hot_p99_cold_p50"))]
reps = {side: [json.load(open(f"/work/bench/{tag}-{side}-{i}.json")) for i in range(1, n + 1)] for side in "ab"}
for name, path in rows:
    out = []
    for side in "ab":
        try: v = [get(r, path) for r in reps[side]]
        except KeyError: out.append("?"); continue
        out.append(f"{s.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]")
    print(f"{name:20s} a {out[0]:22s} b {out[1]}")
