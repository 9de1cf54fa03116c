import itertools, time, random, tempfile, sys
import cortex
from cortex.bench.workload import Workload, Clock, START
from cortex import index
from cortex.forms import build_forms
from cortex.journal import append
from cortex.model import is_pinned, to_micros
from cortex.records import Head, Version, content_hash, frames_record, head_key, version_key, salience_key, JournalHead
from cortex.salience import score as salience
N = 20000
items = list(itertools.islice(Workload(memories=1_000_000).writes(), N))
c = cortex.open(tempfile.mkdtemp(), actor="a", clock=Clock(START))
e = c._engine
T = {}
def tick(name, t0):
    T[name] = T.get(name, 0.0) + time.perf_counter() - t0
t = time.perf_counter(); records = [w.data.to_record() for w in items]; tick("to_record", t)
t = time.perf_counter(); forms = build_forms(e.tokenizer, [(w.data, w.forms) for w in items]); tick("forms", t)
now = to_micros(e.now())
t = time.perf_counter(); raw_ids = e.ids.next_many(now // 1000, N); tick("ids", t)
from rocksdict import WriteBatch
journal = JournalHead(0, bytes(32))
B = 1000
for b0 in range(0, N, B):
  puts = {}
  for raw_id, item, record, form in zip(raw_ids[b0:b0+B], items[b0:b0+B], records[b0:b0+B], forms[b0:b0+B]):
      t = time.perf_counter()
      data = item.data
      fs = (form.short, form.medium)
      tokens = (form.short_tokens, form.medium_tokens, form.full_tokens)
      expires = to_micros(item.expires_at) if item.expires_at else None
      head = Head(type=data.TYPE, version=1, created=now, updated=now, frames=item.frames, tags=item.tags,
                  importance=item.importance, tombstone=None, expires=expires, data=data,
                  confidence=item.confidence, source=item.source, forms=fs, tokens=tokens)
      tick("head", t); t = time.perf_counter()
      ch = content_hash(record)
      tick("content_hash", t); t = time.perf_counter()
      version = Version(data, now, e.actor, item.confidence, item.source, fs, tokens, ch)
      frames = frames_record(item.frames)
      payload = {"id": raw_id, "type": int(data.TYPE), "version": 1, "importance": item.importance, "pinned": is_pinned(data),
                 "frames": frames, "tags": list(item.tags), "expires": expires}
      tick("version+payload", t); t = time.perf_counter()
      score = salience.apply(None, "write", now, payload)
      tick("salience", t); t = time.perf_counter()
      puts[head_key(raw_id)] = head.encode(record, frames)
      tick("head.encode", t); t = time.perf_counter()
      puts[version_key(raw_id, 1)] = version.encode(record)
      tick("version.encode", t); t = time.perf_counter()
      puts[salience_key(raw_id)] = score.encode()
      tick("score.encode", t); t = time.perf_counter()
      puts.update(index.entries(raw_id, head, score))
      tick("index.entries", t); t = time.perf_counter()
      journal = append(puts, journal, "write", now, payload)
      tick("journal", t)
  t = time.perf_counter(); ks = sorted(puts); tick("w.sort", t)
  t = time.perf_counter(); wb = WriteBatch(raw_mode=True)
  for k in ks:
    v = puts[k]
    if v is None: wb.delete(k)
    else: wb.put(k, v)
  tick("w.puts", t)
  t = time.perf_counter(); e.storage.db.write(wb, e.storage._write_opts); tick("w.db.write", t)
print(len(puts)/N, "keys/mem")
tot = sum(T.values())
for k, v in sorted(T.items(), key=lambda kv: -kv[1]):
    print(f"{k:18s} {1e6*v/N:6.2f} us/mem")
print(f"{'total':18s} {1e6*tot/N:6.2f}  (without forms {1e6*(tot-T['forms'])/N:.2f})")
