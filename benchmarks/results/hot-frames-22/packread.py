import sys
import time

import cortex
from cortex.index import packs
from cortex.index.entry import start_after, unsound

path = sys.argv[1]
with cortex.open(path, actor="bench-agent") as c:
    e = c._engine
    st = e.storage
    tails = sorted(e.packs._bounds.keys())
    for tail in tails[:: max(1, len(tails) // 12)][:12]:
        prefix = packs.prefix_of(tail)
        t0 = time.perf_counter()
        raw = st.get(packs.dir_key(tail))
        bound, count, chunks = packs.decode_dir(packs.dir_key(tail), raw)
        t1 = time.perf_counter()
        values = st.multi_get([packs.rows_key(tail, n) for n in range(chunks)])
        t2 = time.perf_counter()
        cols = packs.decode_chunk(packs.rows_key(tail, 0), values[0])
        u = unsound(cols); inc = packs._increasing(cols)
        t3 = time.perf_counter()
        marked = list(packs.scan_keys(st, packs.DIRTY_PREFIX + tail))
        t4 = time.perf_counter()
        newer = list(st.scan_items(prefix, start_after(prefix, bound)))
        t5 = time.perf_counter()
        again = time.perf_counter(); packs.read(st, prefix); again = time.perf_counter() - again
        print(f"rows {count:6d} chunks {chunks} bytes {sum(map(len,values)):8d} dir {1e3*(t1-t0):.2f} get {1e3*(t2-t1):.2f} decode+check {1e3*(t3-t2):.2f} dirty {1e3*(t4-t3):.2f} newer {1e3*(t5-t4):.2f} ({len(newer)}) | read again {1e3*again:.2f} ms")
