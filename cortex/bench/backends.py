"""The harness's figures on PostgreSQL, side by side with RocksDB (docs/performance.md, docs/postgresql.md).

`run_postgresql(options, dsn, rocksdb_store)` is what `--backend postgresql --dsn DSN`
runs: the workload store is built on RocksDB as usual (at `rocksdb_store`, reused when
it holds one), copied into the database with `cortex.migrate` (the copy is the load:
the same bytes, no forms rendered twice) under the workload's actor `bench-agent`,
so one database holds one workload (use another database, or another schema through
the DSN's `options=-csearch_path=...`, for another size), and the same query mix is then timed on both stores in
the same run, alternating between them in blocks so that a machine whose load changes
during the run changes both figures alike. It returns the report as a dict:

* `context_ms` (PostgreSQL) and `rocksdb_context_ms`: warm `context()` latency,
  p50/p95/p99/max over the mix, with `candidates` and `tokens_delivered_p50`;
  both stores must give the same bundles (checked on the first queries, at a fixed `now`);
* `cold_process_ms_median`: a fresh interpreter that imports cortex, opens the
  actor's store as a reader and composes one context(), until that returns (median
  of 10); `cold_process_whole_ms_median`, until it has closed and exited
  (`cortex.bench.harness.cold_process`);
* `resolve_us_mean`, `single_write_per_s` (one `write()` a transaction, on a fresh
  actor), `migrate_keys_per_s` (the load), `rows` (the actor's keys);
* `postgresql`: the server's version line; `verdict`: the 5 ms / 25 ms targets.

`measure_context(c, queries)` is the timing loop on its own, for any open store.
Nothing here starts a server: the DSN names one (the tests' throwaway server,
`tests/pgserver.py`, or a real one).
"""

from __future__ import annotations

import os
import platform
import random
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import cortex
from cortex import Fact, Frame

from .harness import BASELINE_NOW, OUR_P50_MS, OUR_P99_MS, RunOptions, cold_process, has_store
from .progress import progress as progress_bar
from .workload import Workload

ACTOR = "bench-agent"  # the workload's actor (cortex.bench.workload)
BLOCK = 50  # queries timed on one store before switching to the other
CHECKED = 20  # queries whose bundles must be equal on both stores
COLD_RUNS = 10  # fresh interpreters timed for the cold-process figure (the median is reported)


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def latency(values: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99/max of a list of milliseconds."""
    return {"p50": _pct(values, 50), "p95": _pct(values, 95), "p99": _pct(values, 99), "max": max(values)}


def measure_context(c: cortex.Cortex, queries: Sequence[dict[str, Any]], warmup: int = 50) -> dict[str, Any]:
    """Warm `context()` latency over `queries` on an open store (after `warmup` untimed calls)."""
    for q in queries[:warmup]:
        c.context(**q)
    times, candidates, tokens = [], [], []
    for q in queries:
        started = time.perf_counter()
        b = c.context(**q)
        times.append((time.perf_counter() - started) * 1000)
        candidates.append(b.candidates)
        tokens.append(b.total_tokens)
    return {"context_ms": latency(times), "candidates": {"p50": _pct(candidates, 50), "p99": _pct(candidates, 99),
                                                          "max": max(candidates)},
            "tokens_delivered_p50": _pct(tokens, 50)}


def server_version(dsn: str) -> str:
    """The server's `SELECT version()` line."""
    import psycopg  # the postgres extra; imported here so the harness runs without it

    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT version()").fetchone()
    return str(row[0]) if row else "unknown"


def _side_by_side(pg: cortex.Cortex, rocks: cortex.Cortex, queries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Both stores timed on the same queries, in alternating blocks of `BLOCK`."""
    for q in queries[:CHECKED]:
        if pg.context(**q, now=BASELINE_NOW).to_json() != rocks.context(**q, now=BASELINE_NOW).to_json():
            raise AssertionError(f"the PostgreSQL and RocksDB stores answer {q} differently")
    for q in queries[:50]:  # warm-up, both
        pg.context(**q)
        rocks.context(**q)
    times: dict[str, list[float]] = {"pg": [], "rocks": []}
    candidates: list[int] = []
    tokens: list[int] = []
    for start in range(0, len(queries), BLOCK):
        block = queries[start:start + BLOCK]
        for name, c in (("pg", pg), ("rocks", rocks)) if (start // BLOCK) % 2 == 0 else (("rocks", rocks), ("pg", pg)):
            for q in block:
                started = time.perf_counter()
                b = c.context(**q)
                times[name].append((time.perf_counter() - started) * 1000)
                if name == "pg":
                    candidates.append(b.candidates)
                    tokens.append(b.total_tokens)
    return {"context_ms": latency(times["pg"]), "rocksdb_context_ms": latency(times["rocks"]),
            "candidates": {"p50": _pct(candidates, 50), "p99": _pct(candidates, 99), "max": max(candidates)},
            "tokens_delivered_p50": _pct(tokens, 50)}


def _single_writes(dsn: str, actor: str, count: int = 300) -> float:
    """write() calls per second for a fresh actor (one transaction each)."""
    with cortex.open(dsn, actor=actor) as c:
        c.write(Fact(statement="warm-up", subject="s", predicate="p"))
        started = time.perf_counter()
        for i in range(count):
            c.write(Fact(statement=f"the quote of vendor {i} was {i % 97} USD per hour", subject=f"vendor-{i}",
                         predicate="price"), frames=[Frame("acquire", "service", f"obj-{i % 50}")])
        return count / (time.perf_counter() - started)


def run_postgresql(options: RunOptions, dsn: str, rocksdb_store: str) -> dict[str, Any]:
    """Build (once) the workload on RocksDB, copy it to `dsn` unless the actor's store is
    there already, and measure both (see the module docstring)."""
    actor = ACTOR
    workload = Workload(options.memories, seed=options.seed)
    report: dict[str, Any] = {
        "backend": "postgresql", "dsn": dsn.split("@")[-1], "actor": actor,
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "postgresql": server_version(dsn),
        "memories": options.memories, "queries": options.queries, "seed": options.seed, "store": rocksdb_store,
    }
    if not has_store(rocksdb_store):
        print(f"building {options.memories:,} memories in {rocksdb_store}", file=sys.stderr)
        report["bulk_ingest_per_s"] = options.memories / workload.build(rocksdb_store)
    try:
        cortex.open(dsn, actor=actor, mode="r").close()
    except cortex.NotFound:
        print(f"copying {rocksdb_store} to the database (actor {actor})", file=sys.stderr)
        started = time.perf_counter()
        with progress_bar("copying keys", None) as advance:
            done = cortex.migrate(rocksdb_store, dsn, progress=advance)
        report["migrate_keys_per_s"] = done.keys / (time.perf_counter() - started)
        report["rows"] = done.keys
    queries = workload.queries(options.queries)
    with cortex.open(dsn, actor=actor, mode="r") as pg, cortex.open(rocksdb_store, actor=ACTOR, mode="r") as rocks:
        report.update(_side_by_side(pg, rocks, queries))
        sample = [m.uri for m in pg.find(type="Fact", limit=1000)]
        random.Random(1).shuffle(sample)
        started = time.perf_counter()
        for uri in sample:
            pg.resolve(uri)
        report["resolve_us_mean"] = (time.perf_counter() - started) / max(1, len(sample)) * 1e6
    cold = cold_process(dsn, actor, queries[0], COLD_RUNS)
    report["cold_process_ms_median"], report["cold_process_whole_ms_median"] = cold["first_context"], cold["whole"]
    report["single_write_per_s"] = _single_writes(dsn, f"{actor}-writes-{os.getpid()}-{time.time_ns()}")
    p50, p99 = report["context_ms"]["p50"], report["context_ms"]["p99"]
    report["verdict"] = {"ours_p50_5ms": p50 <= OUR_P50_MS, "ours_p99_25ms": p99 <= OUR_P99_MS}
    return report


def summary(report: dict[str, Any]) -> str:
    """A few lines for a person."""
    pg, rocks = report["context_ms"], report["rocksdb_context_ms"]
    lines = [
        f"{report['memories']:,} memories, {report['queries']:,} queries; {report['postgresql']}",
        f"context() ms on PostgreSQL: p50 {pg['p50']:.2f}, p95 {pg['p95']:.2f}, p99 {pg['p99']:.2f}, max {pg['max']:.1f}",
        f"context() ms on RocksDB:    p50 {rocks['p50']:.2f}, p95 {rocks['p95']:.2f}, p99 {rocks['p99']:.2f}, "
        f"max {rocks['max']:.1f}",
        f"cold process: {report['cold_process_ms_median']:.0f} ms to its first context(); resolve(): {report['resolve_us_mean']:.0f} µs; "
        f"write(): {report['single_write_per_s']:,.0f}/s",
    ]
    if "migrate_keys_per_s" in report:
        lines.append(f"load (cortex.migrate): {report['rows']:,} keys at {report['migrate_keys_per_s']:,.0f} keys/s")
    met = [k for k, v in report["verdict"].items() if v]
    missed = [k for k, v in report["verdict"].items() if not v]
    lines.append(f"targets met: {', '.join(met) or 'none'}" + (f"; not met: {', '.join(missed)}" if missed else ""))
    return "\n".join(lines) + "\n"
