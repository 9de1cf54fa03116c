"""dcost.py: the time `import cortex` spends creating dataclasses (numpy preloaded), per module."""
import time, dataclasses, collections
orig = dataclasses._process_class
acc = collections.Counter(); n = collections.Counter()
def wrapped(cls, *a, **k):
    t = time.perf_counter(); r = orig(cls, *a, **k); acc[cls.__module__] += time.perf_counter() - t; n[cls.__module__] += 1
    return r
dataclasses._process_class = wrapped
import numpy, json, hashlib, msgpack, xxhash, datetime, enum, typing
t = time.perf_counter()
import cortex
print("import cortex (numpy preloaded)", round((time.perf_counter() - t) * 1000, 1), "ms; dataclass creation", round(sum(acc.values()) * 1000, 1), "ms for", sum(n.values()), "classes")
for m, v in acc.most_common(): print(m, n[m], round(v * 1000, 2))
