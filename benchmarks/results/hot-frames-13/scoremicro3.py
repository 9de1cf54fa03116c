import numpy as np, time
import cortex.salience.score as sc
rng = np.random.default_rng(3)
n = 60000
now = 1_800_000_000_000_000
lu = (now - rng.integers(0, 400*86400*10**6, n)).astype('<u8')
ac = rng.integers(0, 3, n).astype('<u4'); im = rng.integers(0, 11, n).astype(np.uint8)
def t(name, f, k=2000):
    v=[]
    for _ in range(k):
        s=time.perf_counter(); f(); v.append(time.perf_counter()-s)
    print("%-28s %.1f" % (name, np.median(v)*1e6))
ages = np.subtract(np.int64(now), lu, dtype=np.int64, casting="unsafe")
t("subtract unsafe", lambda: np.subtract(np.int64(now), lu, dtype=np.int64, casting="unsafe"))
t("astype i8", lambda: lu.astype(np.int64))
t("maximum inplace", lambda: np.maximum(ages, 0, out=ages))
r = np.divide(ages, -7.776e12)
t("divide int->f", lambda: np.divide(ages, -7.776e12))
t("astype f8", lambda: ages.astype(np.float64))
t("divide inplace f", lambda: np.divide(r, 7.776e12, out=r))
r2 = r.copy()
t("exp inplace", lambda: np.exp(r2, out=r2))
t("exp new", lambda: np.exp(r))
t("mult inplace", lambda: np.multiply(r, 0.3, out=r))
t("add inplace", lambda: np.add(r, r2, out=r))
T = sc._SHARE_TABLE * 0.2
t("ac astype intp", lambda: ac.astype(np.intp))
idx = ac.astype(np.intp)
t("take intp", lambda: T.take(idx))
t("ac max", lambda: ac.max())
I = sc._IMPORTANCE_SHARE*0.4
t("take u1", lambda: I.take(im))
t("take u1->intp", lambda: I.take(im.astype(np.intp)))
t("im astype f / 10", lambda: im.astype(np.float64) / 10.0)
t("empty", lambda: np.empty(n))
