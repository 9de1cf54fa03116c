import sys, time, resource
import cortex, cortex.context as cm
from cortex.index import packs, hot as hotmod
from cortex.bench import hotframe
def flt(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
hotfr = hotframe.hot_frames(c)
e = c._engine
orig_read = packs.read
orig_mg = e.storage.multi_get
log = []
def mg(keys):
    f0 = flt(); t = time.perf_counter(); r = orig_mg(keys); log.append(("multi_get %d keys %d bytes" % (len(keys), sum(len(v or b"") for v in r)), flt()-f0, (time.perf_counter()-t)*1e3)); return r
e.storage.multi_get = mg
def rd(storage, prefix):
    f0 = flt(); t = time.perf_counter(); r = orig_read(storage, prefix); log.append(("packs.read", flt()-f0, (time.perf_counter()-t)*1e3)); return r
packs.read = rd; cm.packs.read = rd
orig_store = e.hot.store
def st(prefix, cols, always=False):
    f0 = flt(); t = time.perf_counter(); orig_store(prefix, cols, always); log.append(("hot.store", flt()-f0, (time.perf_counter()-t)*1e3))
e.hot.store = st
for f in hotfr[:4]:
    log.clear()
    f0 = flt(); t = time.perf_counter(); c.context(**f.query("short")); total = (time.perf_counter()-t)*1e3
    print("call %.2f ms faults %d" % (total, flt()-f0))
    for l in log: print("   %-45s faults %5d %.2f ms" % l)
