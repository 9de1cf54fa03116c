"""share_micro.py STORE: the count-share lookup on a real hot frame's access and citations columns (59k rows),
old (fancy index, u32 counts) against new (take, native indices); min of 7 repeats of 200 calls, 5 alternating pairs."""
import sys, timeit
import cortex
from cortex.salience import score
from cortex.index import frame, packs
from cortex.bench.workload import Workload
from cortex.model import Verb
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
kind, ref = Workload.ref(0)
cols = packs.read(c._engine.storage, frame.prefix(int(Verb.FIND), int(kind), ref))
access, cites = cols["access"], cols["citations"]
print("rows", len(access), access.dtype)
new = score._count_share
def old(counts):
    return score._SHARE_TABLE[counts]
assert old(access).tobytes() == new(access).tobytes() and old(cites).tobytes() == new(cites).tobytes()
for pair in range(5):
    r = []
    for name, fn in (("old", old), ("new", new)):
        t = min(timeit.repeat(lambda: (fn(access), fn(cites)), number=200, repeat=7)) / 200 * 1e6
        r.append(f"{name} {t:.0f} us")
    print("both columns:", ", ".join(r))
