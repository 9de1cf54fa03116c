import sys
import time

import cortex
from cortex.bench import hotframe
from cortex.model import from_micros

n, path = int(sys.argv[1]), sys.argv[2]
with cortex.open(path, actor="bench-agent") as c:
    uris = []
    for h in hotframe.hot_frames(c):
        b = c.context(**h.query("full")); uris += [m.uri for m in b.memories()]
    ms = [c.resolve(u) for u in uris]
    recs = [(type(m.data), m.data.to_record()) for m in ms]
setters = {}
def fast(cls, record):
    s = setters.get(cls)
    if s is None:
        s = setters[cls] = tuple(zip(tuple(cls.__dict__[name].__set__ for name in cls._layout.names), cls._layout.is_datetime))
    value = object.__new__(cls)
    for (setter, is_dt), raw in zip(s, record):
        if type(raw) is list:
            raw = tuple(raw)
        elif is_dt and raw is not None:
            raw = from_micros(raw)
        setter(value, raw)
    return value
for name, f in (("current", lambda cls, r: cls.from_record(r, False)), ("fast", fast)) * 2:
    t = time.perf_counter()
    for _ in range(20):
        out = [f(cls, r) for cls, r in recs]
    print(name, f"{(time.perf_counter() - t) / 20 / len(recs) * 1e6:.2f} us")
    assert all(a == b for a, b in zip(out, [cls.from_record(r, False) for cls, r in recs]))
