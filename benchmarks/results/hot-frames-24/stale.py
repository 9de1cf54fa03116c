"""The bug fixed by item 66: a bounded call's bundle, its scores read after a later write (20,000-memory frame)."""
import tempfile, os
import cortex
from datetime import datetime, timezone, timedelta
from cortex import Fact, Frame, Write
from cortex.model import Verb, ObjKind
d = tempfile.mkdtemp()
c = cortex.open(os.path.join(d, "s"), actor="a")
fr = (Frame(Verb(1), ObjKind(1), "hot"),)
uris = c.write_many(Write(Fact(statement=f"s {i}", subject="x", predicate="p"), frames=fr, importance=i % 11) for i in range(20000))
q = dict(verb=Verb(1).name.lower(), objects={ObjKind(1).name.lower(): "hot"}, budget_tokens=300, now=datetime.now(timezone.utc) + timedelta(days=1))
c.context(**q); c.context(**q)
b1 = c.context(**q)
ref = dict(c.context(**q).scores)
c.attest(uris[:3000], "success")
for u in uris[5000:5100]: c.update_head(u, tags=("t",))
c.context(**q)  # applies the pending changes
s1 = dict(b1.scores)
print("scores of the earlier bundle changed after a write:", s1 != ref, sum(1 for k in ref if ref[k] != s1[k]))
t1 = dict(b1.tokens)
c.close()
import shutil; shutil.rmtree(d)
