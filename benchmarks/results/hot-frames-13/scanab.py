import sys, time, numpy as np
import cortex
from cortex.bench.workload import Workload
from cortex.storage.rocksdb import prefix_end
from cortex.index import frame
from rocksdict import ReadOptions
from cortex.model import Verb, ObjKind
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
e = c._engine; st = e.storage
wl = Workload(int(sys.argv[2]), seed=7)
prefixes = []
for idx in range(wl.objects//2, wl.objects//2 + 400):
    kind, ref = Workload.ref(idx)
    p = frame.prefix(int(Verb.ACQUIRE), int(kind), ref)
    prefixes.append(p)
counts = [len(st.scan_values(p)) for p in prefixes]
print("keys per prefix: mean %.1f max %d" % (np.mean(counts), max(counts)))
def t(f, k=5):
    v=[]
    for _ in range(k):
        s=time.perf_counter()
        for p in prefixes: f(p)
        v.append((time.perf_counter()-s)/len(prefixes)*1e6)
    return min(v)
kof = frame.key_of
print("scan_values+check %.1f us" % t(lambda p: st.scan_values(p, kof(p))))
print("check alone %.1f us" % t(lambda p: st._check_scan_end(p, None)))
def bulk(p):
    ro = ReadOptions(); ro.set_iterate_upper_bound(prefix_end(p)); return list(st.db.values(from_key=p, read_opt=ro))
print("bulk alone %.1f us" % t(bulk))
def raw(p):
    ro = ReadOptions(); ro.set_iterate_upper_bound(prefix_end(p)); it = st.db.iter(ro); it.seek(p); out = []
    while it.valid(): out.append(it.value()); it.next()
    it.status(); return out
print("raw loop+status %.1f us" % t(raw))
assert all(raw(p) == bulk(p) for p in prefixes)
