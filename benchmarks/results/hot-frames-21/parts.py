"""parts.py N: per-memory cost (us) of each step of write_many, each timed alone over N workload memories."""
import itertools
import shutil
import sys
import time

import cortex
from cortex import index, journal, records, workers
from cortex.bench.workload import START, Clock, Workload
from cortex.forms import build_forms
from cortex.model import is_pinned
from cortex.records import (
    Head,
    Version,
    content_hash,
    frames_record,
    head_key,
    pack,
    salience_key,
    version_key,
)
from cortex.salience import score as salience

n = int(sys.argv[1])
w = Workload(memories=n); items = list(itertools.islice(w.writes(), n))
path = "/tmp/p1/parts"; shutil.rmtree(path, ignore_errors=True)
c = cortex.open(path, actor="bench-agent", clock=Clock(START)); e = c._engine
def once(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0
def t(label, f, reps=7):
    best = min(once(f) for _ in range(reps))
    print(f"{label:28s} {1e6*best/n:6.2f} us/mem")
    return best
recs = [x.data.to_record() for x in items]
t("to_record", lambda: [x.data.to_record() for x in items])
packed = [pack(r) for r in recs]
t("pack(record)", lambda: [pack(r) for r in recs])
t("content_hash(packed)", lambda: [records.packed_hash(p) for p in packed] if hasattr(records, "packed_hash") else [content_hash(r) for r in recs])
forms = build_forms(e.tokenizer, [(x.data, x.forms) for x in items])
t("forms inline", lambda: build_forms(e.tokenizer, [(x.data, x.forms) for x in items]), reps=1)
now = 1_700_000_000_000_000
ids = e.ids.next_many(now // 1000, n)
def heads():
    out = []
    for x, form in zip(items, forms):
        d = x.data
        out.append(Head(type=d.TYPE, version=1, created=now, updated=now, frames=x.frames, tags=x.tags, importance=x.importance,
                        tombstone=None, expires=None, data=d, confidence=x.confidence, source=x.source,
                        forms=(form.short, form.medium), tokens=(form.short_tokens, form.medium_tokens, form.full_tokens)))
    return out
hs = heads()
t("Head()", heads)
fr = [frames_record(x.frames) for x in items]
t("frames_record", lambda: [frames_record(x.frames) for x in items])
arg = packed if hasattr(records, "packed_hash") else recs
t("head.encode", lambda: [h.encode(a, f) for h, a, f in zip(hs, arg, fr)])
vs = [Version(h.data, now, "a", h.confidence, h.source, h.forms, h.tokens, b"x" * 32) for h in hs]
t("version.encode", lambda: [v.encode(a) for v, a in zip(vs, arg)])
nr = salience.NewRecords(now)
t("entries", lambda: [index.entries(i, h, nr[h.importance, is_pinned(h.data)][0]) for i, h in zip(ids, hs)])
def jr():
    puts = {}; j = e.journal
    for i, h, f in zip(ids, hs, fr):
        j = journal.append(puts, j, "write", now, {"id": i, "type": int(h.type), "version": 1, "importance": h.importance, "pinned": False, "frames": f, "tags": list(h.tags), "expires": None})
t("journal append", jr)
def allputs():
    puts = {}
    for i, h, f, a in zip(ids, hs, fr, arg):
        puts[head_key(i)] = h.encode(a, f); puts[version_key(i, 1)] = b"v" * 300; puts[salience_key(i)] = b"s" * 20
        puts.update(index.entries(i, h, nr[h.importance, False][0]))
    return puts
P = allputs()
print(f"keys/mem {len(P)/n:.2f}")
chunks = [dict(itertools.islice(P.items(), k, k + 8800)) for k in range(0, len(P), 8800)]
def sw():
    for ch in chunks: e.storage.write(ch)
t("storage.write (8.8k-key batches)", sw, reps=1)
def sorted_only():
    for ch in chunks:
        for k in sorted(ch): ch[k]
t("  of which sort+lookup", sorted_only)
wi = [(x.data, p, x.forms) for x, p in zip(items, arg)]
t("_request (writer, per chunk)", lambda: [workers._request(s, wi[s:s+16]) for s in range(0, n, 16)])
c.close()
