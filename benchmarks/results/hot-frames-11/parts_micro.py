"""parts_micro.py STORE: a hot call's checks before the drop (unsound, live, superseded) on a lazy concat of the
hottest 10M frame (59,589 rows) and a 40-row part: on the joined columns (before) against part by part (after);
min of 7 repeats of 200, 5 alternating pairs."""
import sys, timeit
import numpy as np
import cortex
from cortex.index import frame, packs, entry
from cortex.index.entry import Columns
from cortex.bench.workload import Workload
from cortex.model import Verb
from cortex.records import FLAG_SUPERSEDED
from cortex.context import _live, _by_part
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
kind, ref = Workload.ref(0)
big = packs.read(c._engine.storage, frame.prefix(int(Verb.FIND), int(kind), ref))
small = big.slice(0, 40)
now = 1 << 60
def before():
    cols = Columns.concat([small, big])
    entry.unsound(cols); keep = _live(cols, now); sup = (cols["flags"] & FLAG_SUPERSEDED) != 0
    return keep, sup
def after():
    cols = Columns.concat([small, big]); parts = cols.parts()
    any(entry.unsound(p) for p in parts); keep = _by_part(parts, lambda p: _live(p, now))
    sup = _by_part(parts, lambda p: (p["flags"] & FLAG_SUPERSEDED) != 0)
    return keep, sup
b, a = before(), after()
assert (b[0] == a[0]).all() and (b[1] == a[1]).all()
for pair in range(5):
    r = []
    for name, fn in (("before", before), ("after", after)):
        t = min(timeit.repeat(fn, number=200, repeat=7)) / 200 * 1e6
        r.append(f"{name} {t:.0f} us")
    print(", ".join(r))
