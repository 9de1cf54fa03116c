import itertools, timeit, os
from cortex.bench.workload import Workload
from cortex.forms import Tokenizer, render_texts, count_forms
from cortex import workers
import msgpack
N = 5000
items = list(itertools.islice(Workload(memories=1_000_000).writes(), N))
tok = Tokenizer(); tok.encode("x")
texts = [render_texts(w.data, w.forms) for w in items]
rows = [[int(w.data.TYPE), w.data.to_record(), None, None] for w in items]
c = min(timeit.repeat(lambda: count_forms(tok.name, texts), number=1, repeat=7)) / N * 1e6
h = min(timeit.repeat(lambda: workers._counted_rows(tok.name, rows), number=1, repeat=7)) / N * 1e6
ans = workers._counted_rows(tok.name, rows)
f = min(timeit.repeat(lambda: [workers._forms_of(ans[a:a+16], len(ans[a:a+16])) for a in range(0, N, 16)], number=1, repeat=7)) / N * 1e6
print(f"{os.environ.get('TAG',''):8s} count_forms {c:.2f}  helper rows {h:.2f}  forms_of {f:.2f} us/mem")
