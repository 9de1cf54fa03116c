"""render_full and render_short_medium per memory over the workload's type mix (warm, isolated)."""
import random, timeit
from cortex.bench.workload import Workload
from cortex.forms import render_full, render_short_medium
w = Workload(memories=20000, seed=3) if 'seed' in Workload.__init__.__code__.co_varnames else Workload(20000)
rng = random.Random(5)
datas = [w._data(rng, i) for i in range(100, 2100)]
from collections import Counter
print(Counter(type(d).__name__ for d in datas))
n = 20
t = min(timeit.repeat(lambda: [render_full(d) for d in datas], number=n, repeat=5)) / n / len(datas) * 1e6
t2 = min(timeit.repeat(lambda: [render_short_medium(d) for d in datas], number=n, repeat=5)) / n / len(datas) * 1e6
print(f"render_full {t:.2f} us, short_medium {t2:.2f} us")
