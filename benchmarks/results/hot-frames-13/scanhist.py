import sys, numpy as np
import cortex
from cortex.bench.workload import Workload
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
st = c._engine.storage
sizes = []
orig = st.scan_values
def sv(prefix, key_of=None):
    r = orig(prefix, key_of); sizes.append(len(r)); return r
st.scan_values = sv
wl = Workload(int(sys.argv[2]), seed=7)
for q in wl.queries(1000): c.context(**q)
sizes.clear()
for q in wl.queries(1000): c.context(**q)
s = np.array(sizes)
print(len(s), "scans; <=8: %d, 9-32: %d, 33-511: %d, >=512: %d" % ((s<=8).sum(), ((s>8)&(s<=32)).sum(), ((s>32)&(s<512)).sum(), (s>=512).sum()))
