"""Cost of a first full-form render: decoding the data vs rendering it."""
import sys
import time

import cortex
from cortex import forms
from cortex.bench import hotframe

n, path = int(sys.argv[1]), sys.argv[2]
with cortex.open(path, actor="bench-agent") as c:
    hot = hotframe.hot_frames(c)
    uris = []
    for h in hot:
        b = c.context(**h.query("full")); uris += [m.uri for m in b.memories()]
    print(len(uris), "memories")
    def fresh():
        return [c.resolve(u) for u in uris]
    ms = fresh()
    t = time.perf_counter(); datas = [m.data for m in ms]; t_data = time.perf_counter() - t
    t = time.perf_counter(); sm = [forms.render_short_medium(d) for d in datas]; t_sm = time.perf_counter() - t
    t = time.perf_counter(); full = [forms.render_full(d, s[1]) for d, s in zip(datas, sm)]; t_rest = time.perf_counter() - t
    ms = fresh()
    t = time.perf_counter(); [m.form("full") for m in ms]; t_all = time.perf_counter() - t
    k = len(uris)
    print(f"per memory: data {t_data/k*1e6:.1f} us, short+medium {t_sm/k*1e6:.1f} us, rest of full {t_rest/k*1e6:.1f} us; form('full') from a fresh Memory {t_all/k*1e6:.1f} us")
    from collections import Counter
    print(Counter(type(d).__name__ for d in datas))
