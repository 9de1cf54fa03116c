"""abingest.py N PKL: in-process A/B of bulk ingest. The base tree (cortex_base, from ABPKG) and the
working tree (cortex) each write the same batches to their own store, batch by batch,
alternating which goes first. IN_NEW / IN_BASE set each side's IN_FLIGHT."""
import os, pickle, random, shutil, sys, time
import numpy as np
sys.path.insert(0, os.environ.get("ABPKG", "/work/h19/abpkg"))
import cortex, cortex_base
import cortex.workers as WN, cortex_base.workers as WB
from cortex.bench.workload import Clock, START, BATCH
n, pkl = int(sys.argv[1]), sys.argv[2]
class Mapped(pickle.Unpickler):
    def find_class(self, module, name):
        if module == "cortex" or module.startswith("cortex."):
            module = "cortex_base" + module[len("cortex"):]
        return super().find_class(module, name)
bn = pickle.load(open(pkl, "rb"))[: n // BATCH]
bb = Mapped(open(pkl, "rb")).load()[: n // BATCH]
import gc; gc.collect(); gc.freeze()  # the loaded batches: not the heap a lazy generator leaves
inflight = {"new": int(os.environ.get("IN_NEW", WN.IN_FLIGHT)), "base": int(os.environ.get("IN_BASE", WB.IN_FLIGHT))}
mods = {"new": WN, "base": WB}
stolen = {"new": 0, "base": 0}
def patch(side):
    W = mods[side]; orig = W._count_here
    def counted(enc, items):
        stolen[side] += len(items); return orig(enc, items)
    W._count_here = counted
patch("new"); patch("base")
stores = {}
for side, pkg in (("new", cortex), ("base", cortex_base)):
    p = f"/work/bench/abw-{side}"; shutil.rmtree(p, ignore_errors=True)
    stores[side] = pkg.open(p, actor="bench-agent", clock=pkg.bench.workload.Clock(START) if hasattr(pkg, "bench") else Clock(START),
                            entropy=random.Random(7).randbytes, ingest_helper=True)
batches = {"new": bn, "base": bb}
wall = {"new": [], "base": []}; th = {"new": [], "base": []}
for i in range(len(bn)):
    order = ("new", "base") if i % 2 else ("base", "new")
    for s in order:
        mods[s].IN_FLIGHT = inflight[s]
        t0 = time.perf_counter(); c0 = time.thread_time()
        stores[s].write_many(batches[s][i])
        wall[s].append(time.perf_counter() - t0); th[s].append(time.thread_time() - c0)
for s in ("base", "new"):
    stores[s].close()
    w = np.array(wall[s]); t = np.array(th[s])
    print(f"{os.environ.get('TAG','')} {s} IN_FLIGHT={inflight[s]}: {n / w.sum():.0f}/s, batch median {np.median(w)*1e3:.2f} ms, "
          f"thread {1e6 * t.sum() / n:.1f} us/mem, counted by the writer {stolen[s] / n:.1%}")
