import sys, time
import numpy as np
import cortex
from cortex.index import frame
from cortex.bench import hotframe
n, path = int(sys.argv[1]), sys.argv[2]
with cortex.open(path, actor="bench-agent") as c:
    hot = hotframe.hot_frames(c)
    for h in hot: c.context(**h.query("short"))
    e = c._engine
    for h in hot[:5]:
        cols = e.hot.lookup(frame.prefix(int(h.verb), int(h.kind), h.ref), e.storage)
        from cortex.index.entry import TOKEN_FIELDS; col = cols[TOKEN_FIELDS["full"]]
        t = time.perf_counter(); a = int(col.sum(dtype=np.int64)); t1 = time.perf_counter() - t
        t = time.perf_counter(); a = int(col.sum(dtype=np.int64)); t2 = time.perf_counter() - t
        print(len(col), col.dtype, col.flags["C_CONTIGUOUS"], f"first {t1*1e6:.0f} us, again {t2*1e6:.0f} us")
