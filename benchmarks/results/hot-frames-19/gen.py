import itertools, pickle, sys
from cortex.bench.workload import Workload, BATCH
n = int(sys.argv[1]); it = Workload(memories=n).writes(); batches = []
while True:
    b = list(itertools.islice(it, BATCH))
    if not b: break
    batches.append(b)
pickle.dump(batches, open(sys.argv[2], "wb"), protocol=5)
