"""impmed.py PYTHON: `python -X importtime -c "import cortex"` 15 times; median self and cumulative µs per module."""
import subprocess, statistics, collections, sys
self_t = collections.defaultdict(list); cum = collections.defaultdict(list)
for _ in range(15):
    err = subprocess.run([sys.argv[1], "-X", "importtime", "-c", "import cortex"], capture_output=True, text=True).stderr
    for line in err.splitlines()[1:]:
        a, b, name = line.split("|")
        self_t[name.strip()].append(int(a.split(":")[1])); cum[name.strip()].append(int(b))
med = {n: statistics.median(v) for n, v in self_t.items()}
print("import cortex median", statistics.median(cum["cortex"]) / 1000, "numpy", statistics.median(cum["numpy"]) / 1000, "site", statistics.median(cum["site"]) / 1000)
print("cortex modules self total", sum(v for n, v in med.items() if n.startswith("cortex")) / 1000)
for n, v in sorted(med.items(), key=lambda x: -x[1])[:45]:
    print(f"{v/1000:6.2f} {statistics.median(cum[n])/1000:7.2f} {n}")
