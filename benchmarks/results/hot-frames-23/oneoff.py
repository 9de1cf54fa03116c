"""One-off costs on a cached hot frame (10M): building one importance group (the first call that
opens it), and summing the full form's token column the first time and again. (Two scripts, merged
after they made groupof.txt and the token lines of first-full-form.txt.)"""
import sys
import time

import numpy as np

import cortex
from cortex import context as ctx
from cortex.bench import hotframe
from cortex.index import frame
from cortex.index.entry import TOKEN_FIELDS

n, path = int(sys.argv[1]), sys.argv[2]
with cortex.open(path, actor="bench-agent") as c:
    hot = hotframe.hot_frames(c)
    for h in hot:
        c.context(**h.query("short"))
    e = c._engine
    for h in hot[:4]:
        part = e.hot.lookup(frame.prefix(int(h.verb), int(h.kind), h.ref), e.storage)
        col = part[TOKEN_FIELDS["full"]]
        started = time.perf_counter()
        int(col.sum(dtype=np.int64))
        first = time.perf_counter() - started
        started = time.perf_counter()
        int(col.sum(dtype=np.int64))
        print(f"full-form token column, {len(col)} rows: first sum {first * 1e6:.0f} us, again {(time.perf_counter() - started) * 1e6:.0f} us")
        for v in (10, 9):
            started = time.perf_counter()
            group = ctx._Group.of(part, v)
            built = time.perf_counter() - started
            rows = np.flatnonzero(part["importance"] == v)
            started = time.perf_counter()
            np.argsort(part["last_used"][rows], kind="stable")
            print(f"importance {v}: {len(rows)} rows, {len(group.counted.rows)} counted; _Group.of {built * 1e6:.0f} us; "
                  f"stable argsort of its last uses {(time.perf_counter() - started) * 1e6:.0f} us")
