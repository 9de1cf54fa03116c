"""Medians [ranges] of hab2.sh output lines per tree: python summ.py FILE."""
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    t = line.split()[0]
    m = re.search(r'hot ([\d.]+)/([\d.]+)\s+cold p50 ([\d.]+)\s+ratio ([\d.]+)\s+hot/cold p50 ([\d.]+)', line)
    w = re.search(r'warm ([\d.]+)/([\d.]+)', line)
    f = re.search(r'first ([\d.]+)/([\d.]+)', line)
    rows.setdefault(t, []).append([float(x) for x in m.groups()] + [float(x) for x in w.groups()] + [float(x) for x in f.groups()])
for t, v in rows.items():
    cols = list(zip(*v))
    names = ["hot p50", "hot p99", "cold p50", "ratio", "hot/cold p50", "warm p50", "warm p99", "first p50", "first p99"]
    print(t, len(v), " ".join(f"{n}={statistics.median(c):.3f}[{min(c):.2f}-{max(c):.2f}]" for n, c in zip(names, cols)), "over5:", sum(1 for r in cols[3] if r > 5))
