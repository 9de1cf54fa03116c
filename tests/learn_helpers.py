"""Traces for the learn tests: sessions written as HMX events, and brute-force
recounts of what the rules in docs/learning.md say, written independently of
cortex/learn/ (plain loops over position combinations)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from datetime import datetime, timedelta, timezone

T0 = datetime(2026, 3, 15, 10, 0, tzinfo=timezone.utc)

# A session: a list of ("call", tool, ok) and ("decide", domain, decision) entries.


def hmx_events(sessions: list[list[tuple[str, str, object]]], prefix: str = "s") -> list[dict]:
    out = []
    for n, entries in enumerate(sessions):
        sess = f"{prefix}{n}"
        seq = 0

        def event(etype: str, content: dict) -> None:
            nonlocal seq
            out.append({"hmx_version": "HMX-1.0", "event_id": f"{sess}-{seq}", "event_type": etype, "agent_id": "ops",
                        "tenant_id": "acme", "session_id": sess, "timestamp": (T0 + timedelta(seconds=seq)).isoformat(),
                        "sequence": seq, "content": content})
            seq += 1

        for kind, name, value in entries:
            if kind == "call":
                event("tool_call", {"tool_name": name})
                event("tool_result", {"tool_name": name, "output": "ok"} if value else {"tool_name": name, "error": "Error: failed"})
            else:
                event("decision", {"decision": value, "domain": name})
    return out


def label(tool: str) -> str:
    return f"delegate tool:{tool}"


def steps_of(entries) -> list[tuple[str, bool]]:
    return [(label(name), bool(ok)) for kind, name, ok in entries if kind == "call"]


def clean_path(steps: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """The steps schemas are mined from: a failed step retried later with success is
    dropped with the steps up to that retry."""
    out = []
    i = 0
    while i < len(steps):
        lab, ok = steps[i]
        if not ok:
            later = [j for j in range(i + 1, len(steps)) if steps[j] == (lab, True)]
            if later:
                i = later[0]
                continue
        out.append(steps[i])
        i += 1
    return out


def draft_support(n: int, p) -> int:
    return max(p.draft_min_sessions, math.ceil(p.draft_min_share * n))


def active_support(n: int, p) -> int:
    return max(p.active_min_sessions, math.ceil(p.active_min_share * n))


def brute_occurs(seq: list[str], pattern: tuple[str, ...], gap: int) -> list[int] | None:
    """The first (by end, then latest positions) gap-constrained occurrence, by trying every combination."""
    best = None
    for combo in itertools.combinations(range(len(seq)), len(pattern)):
        if any(seq[i] != x for i, x in zip(combo, pattern)):
            continue
        if any(b - a - 1 > gap for a, b in zip(combo, combo[1:])):
            continue
        key = (combo[-1], [-c for c in reversed(combo)])
        if best is None or key < best[0]:
            best = (key, combo)
    return None if best is None else list(best[1])


def brute_patterns(sessions, p) -> dict[tuple[str, ...], int]:
    """Frequent gap-constrained patterns over the frequent labels, by enumerating every position combination."""
    seqs = [[lab for lab, _ in clean_path(steps_of(s))] for s in sessions if steps_of(s)]
    n = len(seqs)
    minsup = draft_support(n, p)
    support = Counter(lab for s in seqs for lab in set(s))
    keep = {lab for lab, c in support.items() if c >= minsup}
    proj = [[lab for lab in s if lab in keep] for s in seqs]
    counts: Counter = Counter()
    for s in proj:
        found = set()
        for k in range(1, p.max_steps + 1):
            for combo in itertools.combinations(range(len(s)), k):
                if all(b - a - 1 <= p.max_gap for a, b in zip(combo, combo[1:])):
                    found.add(tuple(s[i] for i in combo))
        counts.update(found)
    return {q: c for q, c in counts.items() if c >= minsup}


def brute_schemas(sessions, p) -> dict[tuple[str, ...], int]:
    freq = {q: c for q, c in brute_patterns(sessions, p).items() if len(q) >= p.min_steps}

    def sub(small, big):
        it = iter(big)
        return all(any(x == y for y in it) for x in small)

    reported: dict[tuple[str, ...], int] = {}
    for q, c in sorted(freq.items(), key=lambda kv: (-len(kv[0]), kv[0])):
        if sum(cr for r, cr in reported.items() if len(r) > len(q) and sub(q, r)) < p.cover_share * c:
            reported[q] = c
    return reported
