"""The scoped query mix: `context()` with and without a scope, on the same queries.

    report["scoped"] = scoped.measure(c, queries)      # c: the workload store, mode "rw"

Three scopes of the kinds a parent hands a sub-agent (docs/scopes.md), each reused
call after call as a sub-agent would, and a fourth that admits every memory:

* `types`: Facts, Preferences, Beliefs and Events, without three common tags;
* `tags`: three tags, without Events;
* `frames`: every frame of the five hottest objects (all ten verbs), plus
  Preferences, without one tag;
* `everything`: all nine types, without a tag no memory has: the same bundle as
  the unscoped call, so its latency against the unscoped one is the cost of the
  scope checks alone (`overhead_ratio_p50`; docs/performance.md asks for at most 1.10).

The queries are taken in turn by the three scopes; each is run unscoped, under
`everything` and under its scope, once untimed and then timed, back to back in a
rotating order (warm). The report gives the latency
distributions, the ratios at the median, and the first scoped call of each scope
(which scans the tag buckets and frame prefixes the scope names and confirms its
include sets on the heads: a cost paid once per scope and handle, then moved forward
from the journal).

The store trusts a fixed bench key under the name `bench-parent` (journaled the
first time only); scopes expire a day after the run.
"""

from __future__ import annotations

import hashlib
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import cortex
from cortex import Frame, MemoryType, Scope, Selector, SignedScope

from .workload import Workload

BENCH_SIGNER = "bench-parent"
BENCH_KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"cortex bench scope key").digest())
HOT_OBJECTS = 5


def scopes(actor: str, now: datetime) -> dict[str, Scope]:
    """The mix's three scopes, for the store of `actor`."""
    hot = [Workload.ref(i) for i in range(HOT_OBJECTS)]
    frames = [Frame(verb, kind, ref) for kind, ref in hot for verb in cortex.Verb]

    def scope(include: Selector, exclude: Selector) -> Scope:
        return Scope(include, exclude, expires_at=now + timedelta(days=1), granted_by=actor, granted_to="bench-sub-agent")

    return {
        "types": scope(Selector(types=[MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.BELIEF, MemoryType.EVENT]),
                       Selector(tags=["invoice", "payment", "customer"])),
        "tags": scope(Selector(tags=["gpu", "price", "latency"]), Selector(types=[MemoryType.EVENT])),
        "frames": scope(Selector(types=[MemoryType.PREFERENCE], frames=frames), Selector(tags=["risk"])),
        "everything": scope(Selector(types=list(MemoryType)), Selector(tags=["no memory has this tag"])),
    }


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) if values else 0.0


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50": _pct(values, 50), "p95": _pct(values, 95), "p99": _pct(values, 99), "max": max(values, default=0.0)}


def measure(c: cortex.Cortex, queries: list[dict[str, Any]], warmup: int = 20) -> dict[str, Any]:
    """Scoped against unscoped `context()` latency (ms, warm) over `queries`, which the
    three scopes take in turn. `c` must be writable the first time (to trust the key)."""
    c.trust(BENCH_KEY.public_key(), BENCH_SIGNER)
    granted: dict[str, SignedScope] = {name: c.grant(scope, BENCH_KEY) for name, scope in scopes(c.actor, datetime.now(timezone.utc)).items()}
    everything = granted.pop("everything")
    names = list(granted)
    first_call_ms = {}
    for name, signed in [*granted.items(), ("everything", everything)]:
        started = time.perf_counter()
        c.context(**queries[0], scope=signed)
        first_call_ms[name] = (time.perf_counter() - started) * 1000
    for i, q in enumerate(queries[:warmup]):
        c.context(**q)
        c.context(**q, scope=everything)
        c.context(**q, scope=granted[names[i % len(names)]])
    plain: list[float] = []
    admit_all: list[float] = []
    scoped: list[float] = []
    by_scope: dict[str, list[float]] = {name: [] for name in names}
    kept: list[float] = []
    for i, q in enumerate(queries):
        name = names[i % len(names)]
        calls: list[tuple[str, SignedScope | None]] = [("plain", None), ("everything", everything), ("scoped", granted[name])]
        for _, scope in calls:  # untimed: each call's keys and survivors' views in the caches (warm)
            c.context(**q, scope=scope)
        runs: dict[str, tuple[float, cortex.Bundle]] = {}
        for label, scope in calls[i % 3:] + calls[: i % 3]:  # rotate the order
            started = time.perf_counter()
            bundle = c.context(**q, scope=scope)
            runs[label] = ((time.perf_counter() - started) * 1000, bundle)
        plain.append(runs["plain"][0])
        admit_all.append(runs["everything"][0])
        scoped.append(runs["scoped"][0])
        by_scope[name].append(runs["scoped"][0])
        unscoped, b = runs["plain"][1], runs["scoped"][1]
        kept.append(b.candidates / unscoped.candidates if unscoped.candidates else 1.0)
    report: dict[str, Any] = {
        "queries": len(queries),
        "unscoped_ms": _summary(plain),
        "admit_everything_ms": _summary(admit_all),
        "overhead_ratio_p50": _pct(admit_all, 50) / _pct(plain, 50) if plain and _pct(plain, 50) else 0.0,
        "scoped_ms": _summary(scoped),
        "scoped_ms_by_scope": {name: _summary(values) for name, values in by_scope.items()},
        "ratio_p50": _pct(scoped, 50) / _pct(plain, 50) if plain and _pct(plain, 50) else 0.0,
        "first_scoped_call_ms": first_call_ms,
        "candidates_kept_p50": _pct(kept, 50),
    }
    report["verdict_within_10pct_p50"] = report["overhead_ratio_p50"] <= 1.10 and report["ratio_p50"] <= 1.10
    return report
