"""abr.py N REPS: the write path without forms (forms counted beforehand): writer thread CPU us/mem
per run of N memories into a fresh store, REPS runs; prints the runs and their median."""
import itertools, random, shutil, sys, tempfile, time, os, statistics
import cortex, cortex.writes
from cortex.bench.workload import Workload, Clock, START, BATCH
from cortex.forms import build_forms, Tokenizer
n = int(sys.argv[1]); reps = int(sys.argv[2])
items = list(itertools.islice(Workload(memories=1_000_000).writes(), n))
pre = {id(w.data): f for w, f in zip(items, build_forms(Tokenizer(), [(w.data, w.forms) for w in items]))}
cortex.writes.build_forms = lambda tok, pairs: [pre[id(d)] for d, _ in pairs]
runs = []
import gc
if os.environ.get("GCOFF"): gc.disable()
for r in range(reps):
    path = tempfile.mkdtemp(dir="/work/bench")
    c = cortex.open(path, actor="bench-agent", clock=Clock(START), entropy=random.Random(7).randbytes)
    th = 0.0
    for a in range(0, n, BATCH):
        b = items[a:a+BATCH]
        c0 = time.thread_time(); c.write_many(b); th += time.thread_time() - c0
    c.close(); shutil.rmtree(path)
    runs.append(1e6 * th / n)
print(f"{os.environ.get('TAG',''):8s} n={n} write path w/o forms: median {statistics.median(runs):.2f} us/mem  runs " + " ".join(f"{x:.1f}" for x in runs), flush=True)
