"""stamp.py TREE 18|19: add perf_counter stamps to TREE/cortex/context.py (18: bf8a7bf's layout; 19: 798fb56's to 8481f43's)."""
import sys
p=sys.argv[1]+'/cortex/context.py'; s=open(p).read()
T="_T.append(time.perf_counter())\n"
shared = [
 ("    journal, journal_at = e.view_state()\n", "    _T=[time.perf_counter()]\n    journal, journal_at = e.view_state()\n"),
 ("        candidates = _candidates(e, blocks, included, counts)\n", "        _T.append(time.perf_counter())\n        candidates = _candidates(e, blocks, included, counts)\n        _T.append(time.perf_counter())\n"),
 ("    keys = head_keys(named_ids[:picked])\n", "    keys = head_keys(named_ids[:picked])\n    "+T+"    _views = e.current_views(keys)\n    "+T),
 ("        keys, e.current_views(keys), tiers", "        keys, _views, tiers"),
 ("    ordered = {t:", "    "+T+"    ordered = {t:"),
 ("    return Bundle(\n        pinned=ordered[0],", "    "+T+"    global PH; PH.append(_T)\n    _B = Bundle(\n        pinned=ordered[0],"),
 ("        superseded_tokens=_LazyIdMap(len(stale), stale.ids, stale.tokens),\n    )\n", "        superseded_tokens=_LazyIdMap(len(stale), stale.ids, stale.tokens),\n    )\n    "+T+"    return _B\n"),
 ('''    plan = _plan(opts, e.now)
    if plan.scope is None:
        return e.read(lambda: _compose_locked(e, plan, started), catch_up=True)''', '''    plan = _plan(opts, e.now)
    global PRE; PRE.append(time.perf_counter() - started)
    if plan.scope is None:
        _r = e.read(lambda: _compose_locked(e, plan, started), catch_up=True)
        PH[-1].append(time.perf_counter()); return _r'''),
]
stamps18 = shared + [
 ("    weights = e.weights()\n", "    weights = e.weights()\n    "+T),
 ("    scores = _scores(cols,", "    "+T+"    scores = _scores(cols,"),
 ("    if going is not None:\n        _rank_last", "    "+T+"    if going is not None:\n        _rank_last"),
 ("    trim = _trim(", "    "+T+"    trim = _trim("),
 ("    keep_mask = functools", "    "+T+"    keep_mask = functools"),
 ("    survivors = trim.survivors\n", "    "+T+"    survivors = trim.survivors\n"),
]
stamps19 = shared + [
 ("    going = _dropped(", "    "+T+"    going = _dropped("),
 ("    count = len(cols) - (0 if going is None", "    "+T+"    count = len(cols) - (0 if going is None"),
 ("    bounded = _bounded_parts(", "    "+T+"    bounded = _bounded_parts("),
 ("    if candidate_tokens <= plan.budget or count <= 1:\n        trim", "    "+T+"    if candidate_tokens <= plan.budget or count <= 1:\n        trim"),
 ("    dropped, total = count - len(trim.survivors), trim.total\n", "    "+T+"    dropped, total = count - len(trim.survivors), trim.total\n"),
]
stamps = stamps18 if sys.argv[2] == '18' else stamps19
for a,b in stamps:
    assert s.count(a)==1, a
    s=s.replace(a,b)
s = s.replace("def _compose_locked(", "PH: list = []\nPRE: list = []\n\ndef _compose_locked(",1)
open(p,'w').write(s)
