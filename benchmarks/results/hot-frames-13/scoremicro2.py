import numpy as np, time, sys, resource
import cortex.salience.score as sc
sys.path.insert(0, '/tmp/wt-a')
rng = np.random.default_rng(3)
n = 60000
now = 1_800_000_000_000_000
lu = (now - rng.integers(0, 400*86400*10**6, n)).astype('<u8')
ac = rng.integers(0, 3, n).astype('<u4'); ci = rng.integers(0, 2, n).astype('<u4'); im = rng.integers(0, 11, n).astype(np.uint8)
pin = np.zeros(n, bool); pin[:30] = True
w = sc.Weights(0.3, 0.2, 0.1, 0.4)
import importlib.util
spec = importlib.util.spec_from_file_location("oldscore", "/tmp/wt-a/cortex/salience/score.py", submodule_search_locations=None)
def blocked(B):
    def f(lu, ac, ci, im, pin, now, w):
        out = np.empty(len(lu))
        for s in range(0, len(lu), B):
            out[s:s+B] = sc.live_scores(lu[s:s+B], ac[s:s+B], ci[s:s+B], im[s:s+B], pin[s:s+B], now, w)
        return out
    return f
def t(f, k=1500):
    v=[]
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(k):
        s=time.perf_counter(); f(); v.append(time.perf_counter()-s)
    return np.median(v)*1e6, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt-f0)/k
ref = sc.live_scores(lu, ac, ci, im, pin, now, w)
for B in (4096, 8192, 16384):
    assert blocked(B)(lu, ac, ci, im, pin, now, w).tobytes() == ref.tobytes()
for _ in range(2):
    print("whole %.1f (%.1f faults)" % t(lambda: sc.live_scores(lu, ac, ci, im, pin, now, w)), 
      " ".join("B%d %.1f (%.1f)" % ((B,) + t(lambda: blocked(B)(lu, ac, ci, im, pin, now, w))) for B in (4096, 8192, 16384)))
