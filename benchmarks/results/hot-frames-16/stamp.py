import sys
p=sys.argv[1]+'/cortex/context.py'; s=open(p).read()
stamps = [
 ("    journal, journal_at = e.view_state()\n", "    _T=[time.perf_counter()]\n    journal, journal_at = e.view_state()\n"),
 ("    weights = e.weights()\n", "    weights = e.weights()\n    _T.append(time.perf_counter())\n"),
 ("            if tier is Tier.PINNED:\n                found = [_pinned(e)]\n", "            if tier is Tier.PINNED:\n                found = [_pinned(e)]\n                _T.append(time.perf_counter())\n"),
 ("                found = [_outcomes(e, plan, _block_ids(blocks), scope)]\n", "                found = [_outcomes(e, plan, _block_ids(blocks), scope)]\n                _T.append(time.perf_counter())\n"),
 ("                found = _frame_relevant(e, plan)\n", "                found = _frame_relevant(e, plan)\n                _T.append(time.perf_counter())\n"),
 ("        candidates = _candidates(e, blocks, included, counts)\n", "        candidates = _candidates(e, blocks, included, counts)\n        _T.append(time.perf_counter())\n"),
 ("    scores = _scores(cols,", "    _T.append(time.perf_counter())\n    scores = _scores(cols,"),
 ("    tokens = cols[token_field]", "    _T.append(time.perf_counter())\n    tokens = cols[token_field]"),
 ("    reachable = _uris(", "    _T.append(time.perf_counter())\n    reachable = _uris("),
 ("    keep = trim.survivors\n", "    _T.append(time.perf_counter())\n    keep = trim.survivors\n"),
 ("    for key, memory, tier, score, created, version in zip(\n        keys, e.current_views(keys),", "    _views = e.current_views(keys)\n    _T.append(time.perf_counter())\n    for key, memory, tier, score, created, version in zip(\n        keys, _views,"),
 ("    ordered = {t:", "    _T.append(time.perf_counter())\n    ordered = {t:"),
 ("    return Bundle(\n        pinned=ordered[0],", "    _T.append(time.perf_counter())\n    global PH; PH.append(_T)\n    return Bundle(\n        pinned=ordered[0],"),
 ('''    plan = _plan(opts, e.now)
    if plan.scope is None:
        return e.read(lambda: _compose_locked(e, plan, started), catch_up=True)''', '''    plan = _plan(opts, e.now)
    global PRE; PRE.append(time.perf_counter() - started)
    if plan.scope is None:
        _r = e.read(lambda: _compose_locked(e, plan, started), catch_up=True)
        PH[-1].append(time.perf_counter()); return _r'''),
]
for a,b in stamps:
    assert s.count(a)==1, a
    s=s.replace(a,b)
s = s.replace("def _compose_locked(", "PH: list = []\nPRE: list = []\n\ndef _compose_locked(",1)
open(p,'w').write(s)
