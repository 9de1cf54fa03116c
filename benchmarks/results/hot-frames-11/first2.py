"""first2.py STORE: first touches of the 10 hot frames on a fresh follower, each storage read timed."""
import sys, time
import cortex
from cortex.bench import hotframe
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
hot = hotframe.hot_frames(c); c.close()
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
c.context(verb="find", objects={"tool": "nothing-here"}, budget_tokens=1000)
st = c._engine.storage
log = []
og, omg = st.get, st.multi_get
def get(key):
    t = time.perf_counter(); v = og(key); log.append(("get", key[:12], 1, (time.perf_counter() - t) * 1e3, len(v or b""))); return v
def multi_get(keys):
    t = time.perf_counter(); v = omg(keys); log.append(("multi_get", keys[0][:12] if keys else b"", len(keys), (time.perf_counter() - t) * 1e3, sum(len(x or b"") for x in v))); return v
st.get, st.multi_get = get, multi_get
for f in hot[:5]:
    log.clear()
    t = time.perf_counter(); c.context(**f.query("medium")); total = (time.perf_counter() - t) * 1e3
    print(f"{f.verb.name}: {total:.1f} ms;", "; ".join(f"{k} {p!r} x{n} {ms:.2f} ms {b/1e3:.0f} KB" for k, p, n, ms, b in log))
