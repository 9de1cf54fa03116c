"""backward scans of the outcome prefixes: current vs bounded variants; warm and after cache thrash."""
import sys, time, json, numpy as np, itertools
import cortex
from cortex.bench.workload import Workload
from cortex.index import actor_obj
from cortex.model import Verb
from rocksdict import ReadOptions
from cortex.storage.rocksdb import prefix_end, _raw_items
store, mem = sys.argv[1], int(sys.argv[2])
qs = Workload(mem, seed=7).queries(1000)[:200]
blob = [{"k%d" % i: [i, str(i), {"x": i * 1.5}]} for i in range(3000)]
with cortex.open(store, actor="bench-agent", mode="r") as c:
    st = c._engine.storage; db = st.db
    prefixes = []
    for q in qs:
        v = Verb[q["verb"].upper()]
        for kind, ref in q["objects"].items():
            prefixes.append(actor_obj.prefix(int(v), ref))
    N = 4  # outcome_limit 3 plus one
    def cur(p): return list(itertools.islice(st.scan_items_backward(p), N))
    def bounded(p):
        ro = ReadOptions(); ro.set_iterate_upper_bound(prefix_end(p))
        out = []
        for k, v in _raw_items(db.items(backwards=True, from_key=prefix_end(p), read_opt=ro)):
            if not k.startswith(p) or len(out) == N: break
            out.append((k, v))
        return out
    def raw(p):
        ro = ReadOptions(); ro.set_iterate_upper_bound(prefix_end(p))
        it = db.iter(ro); it.seek_to_last(); out = []
        while it.valid() and len(out) < N:
            k = it.key()
            if not k.startswith(p): break
            out.append((k, it.value())); it.prev()
        it.status()
        return out
    for p in prefixes[:50]:
        a, b, r = cur(p), bounded(p), raw(p)
        assert a == b == r, (p, len(a), len(b), len(r))
    counts = [len(list(st.scan_items_backward(p))) for p in prefixes]
    print("prefixes", len(prefixes), "entries p50", np.median(counts), "max", max(counts))
    for mode in ("warm", "cold"):
        for name, f in (("cur", cur), ("bounded", bounded), ("raw", raw)) * 2:
            ts = []
            for p in prefixes:
                if mode == "cold": json.loads(json.dumps(blob))
                t = time.perf_counter(); f(p); ts.append((time.perf_counter() - t) * 1e6)
            print(f"{mode} {name:8s} p50 {np.median(ts):.1f} us mean {np.mean(ts):.1f}", flush=True)
