"""The benchmark harness: `run()` builds a workload store and measures it.

`run(RunOptions(memories=N, queries=Q), store)` builds the workload store at `store`
once (reused when it already holds one) and runs `optimize()` on it as a user would
after a bulk load (`optimize`: what it packed, and its seconds), then measures warm
`context()` latency over a query mix (p50/p95/p99/max, candidates scored, tokens
delivered; `context_ms_warm`: the same mix again on the same handle, as a
long-lived agent process would see it), a cold process (fresh interpreter: import,
open, one context(); `cold_process()`), bulk and single-write throughput, resolve
latency, bytes per memory on disk, and the two baselines side by side; it returns
the JSON report as a dict. Three figures of the hot-frames issue come with it:

* `hot_frame` (`cortex.bench.hotframe`): calls on the hottest frames of the workload
  against calls on cold ones, in the same run: p50/p99 of each side, the candidates
  the hot calls score, and hot p99 ÷ cold p50 (the goal: at most 5);
* `index_entries_read`: the scan counter, index entries read from storage per
  `context()` call (p50/p99/max), over the query mix and over the hot and cold calls;
* `beside_writer` (`cortex.bench.beside`, only when `beside_writer_seconds` > 0): a
  reader's `context()` latency while another process ingests without pause, and
  the writer's memories/s, on a copy of the store that is removed afterwards.

`hot_only=True` measures only the query mix (latency and scan counter), the
hot-frame figure and, when asked, the reader beside a writer: a quick run on an
existing store to compare engine versions by.

Two entry points call it:

* `cortex bench` (`cortex.cli`): a temporary store removed afterwards (unless
  `--keep` or `--store DIR`), the report on standard output or `--report PATH`;
  nothing is written into the current folder.
* `python -m benchmarks run` from a checkout (`main()` below): the store under
  `bench-stores/n<N>-s<seed>` (kept, so the next run skips the build), the report
  under `benchmarks/results/n<N>.json` with a PNG plot of every report there, which
  is where `benchmarks/RESULTS.md` takes its figures from.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import cortex
from cortex import Fact, Frame

from . import beside, hotframe
from .calls import latency, pct, spread, timed_call
from .workload import Workload

SEED_TARGET_P50_MS = 80.0
SEED_CEILING_MS = 250.0
OUR_P50_MS = 5.0
OUR_P99_MS = 25.0
# The query mix run a second time on the same handle (hot-frames issue: "1M warm").
WARM_P50_MS = 1.0
WARM_P99_MS = 3.0
# A reader beside a writer that ingests without pause (hot-frames issue).
BESIDE_P50_MS = 2.0
BESIDE_P99_MS = 15.0
# The baselines are compared at a fixed instant, so their answers can be asserted equal.
BASELINE_NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class RunOptions:
    """What one harness run measures: `memories` in the workload store (at least 1),
    `queries` in the timed mix (at least 1), the workload `seed`, the queries the
    baselines are compared on (0 skips them; at most `queries`), the fresh processes
    the cold start is the median of, and the `write()` calls timed without and with
    `sync=True`. `hot_rounds`: rounds of the hot-frame figure (each one call on every
    hot and every cold frame); `hot_only`: only the query mix, the hot-frame figure
    and the reader beside a writer (module docstring); `beside_writer_seconds`: how
    long the reader beside a writer is measured (0 skips it; at most
    `beside.MAX_SECONDS`). `RunOptions.smoke()` makes a run that only checks the
    harness works."""

    memories: int = 100_000
    queries: int = 1000
    seed: int = 7
    baseline_queries: int = 200
    cold_runs: int = 10
    writes: int = 1000
    sync_writes: int = 300
    scoped_queries: int = 0  # > 0: scoped against unscoped context() on that many queries
    edges: bool = False  # a copy with 10% of memories superseded against the store itself
    hot_rounds: int = 30
    hot_only: bool = False
    beside_writer_seconds: float = 0.0

    @staticmethod
    def smoke(memories: int, queries: int, seed: int = 7, baseline_queries: int = 0) -> RunOptions:
        """A quick run end to end (one cold process, a few dozen writes): figures to
        check the harness by, not to compare."""
        return RunOptions(memories, queries, seed, baseline_queries, cold_runs=1, writes=50, sync_writes=10)

    def __post_init__(self) -> None:
        for name, lo in (("memories", 1), ("queries", 1), ("seed", 0), ("baseline_queries", 0), ("cold_runs", 1), ("writes", 1), ("sync_writes", 1),
                         ("hot_rounds", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= MAX_SIZE:
                raise cortex.ValidationError(name, f"must be an integer within {lo}..{MAX_SIZE:,}", value)
        if self.baseline_queries > self.queries:
            raise cortex.ValidationError("baseline_queries", f"must be at most queries ({self.queries})", self.baseline_queries)
        seconds = self.beside_writer_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= beside.MAX_SECONDS:
            raise cortex.ValidationError("beside_writer_seconds", f"must be a number of seconds within 0..{beside.MAX_SECONDS:.0f} (0: skip)", seconds)


# The largest workload (or query mix) the harness takes.
MAX_SIZE = 1_000_000_000


def _dir_bytes(path: str) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


# What a cold process runs: import cortex, open the store as a reader, compose one
# context(), say so on standard output, then close and exit.
_COLD_CODE = (
    "import cortex,json,sys; q=json.loads(sys.argv[3]);"
    "c=cortex.open(sys.argv[1], actor=sys.argv[2], mode='r'); c.context(**q); print('answered', flush=True); c.close()"
)


def cold_process(target: str, actor: str, query: dict[str, Any], runs: int = 10) -> dict[str, float]:
    """Medians over `runs` fresh interpreters (ms): `first_context`, from starting the
    process until its first `context()` has returned (the goal's "import, open, first
    context"); `whole`, until the process has exited, which adds closing the store and
    the interpreter's own teardown (tens of ms with numpy loaded: benchmarks/RESULTS.md,
    seventeenth pass). Both are read off this process's clock: the child's line on its
    standard output marks the first."""
    first, whole = [], []
    for _ in range(runs):
        started = time.perf_counter()
        with subprocess.Popen([sys.executable, "-c", _COLD_CODE, target, actor, json.dumps(query)],
                              stdout=subprocess.PIPE, text=True) as child:
            line = child.stdout.readline() if child.stdout is not None else ""
            answered = time.perf_counter()
        if child.returncode != 0 or line != "answered\n":
            raise RuntimeError(f"the cold process failed (exit {child.returncode})")
        first.append((answered - started) * 1000)
        whole.append((time.perf_counter() - started) * 1000)
    return {"first_context": statistics.median(first), "whole": statistics.median(whole)}


def _single_writes(count: int = 1000, sync: bool = False) -> float:
    """write() calls per second on a fresh store (`sync=True`: fsync per write)."""
    with tempfile.TemporaryDirectory() as d, cortex.open(os.path.join(d, "s"), actor="bench", sync=sync) as c:
        c.write(Fact(statement="warm-up", subject="s", predicate="p"))  # loads the tokenizer
        t = time.perf_counter()
        for i in range(count):
            c.write(Fact(statement=f"the quote of vendor {i} was {i % 97} USD per hour", subject=f"vendor-{i}", predicate="price"),
                    frames=[Frame("acquire", "service", f"obj-{i % 50}")])
        return count / (time.perf_counter() - t)


# Memories in the store that measures `write_many` without the helper process.
INLINE_INGEST_SAMPLE = 50_000


def _inline_ingest(count: int, seed: int) -> float:
    """Bulk ingest (memories/s) of the workload's first `count` memories into a fresh
    store, all forms rendered and counted in the writer's thread."""
    with tempfile.TemporaryDirectory() as d:
        return count / Workload(count, seed=seed).build(os.path.join(d, "s"), progress=False, helper=False)


def has_store(path: str) -> bool:
    """Whether `path` already holds a cortex store (the harness then reuses it)."""
    try:
        cortex.store_actor(path)
    except cortex.NotFound:
        return False
    return True


def run(options: RunOptions, store: str) -> dict[str, Any]:
    """Build the workload store at `store` unless it holds one, measure it, and return
    the report (see the module docstring)."""
    workload = Workload(options.memories, seed=options.seed)
    report: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "memories": options.memories, "queries": options.queries, "seed": options.seed, "store": store,
    }
    if options.hot_only:
        report["hot_only"] = True
    else:
        report["samples"] = {"cold_runs": options.cold_runs, "writes": options.writes, "sync_writes": options.sync_writes}
    if not has_store(store):
        print(f"building {options.memories:,} memories in {store}", file=sys.stderr)
        report["bulk_ingest_per_s"] = options.memories / workload.build(store)
        with cortex.open(store, actor="bench-agent") as c:  # as a user would after a bulk load
            started = time.perf_counter()
            report["optimize"] = {**c.optimize(), "seconds": time.perf_counter() - started}
    if not options.hot_only:
        report["bulk_ingest_inline_per_s"] = _inline_ingest(min(options.memories, INLINE_INGEST_SAMPLE), options.seed)
    queries = workload.queries(options.queries)
    with cortex.open(store, actor="bench-agent") as c:
        for q in queries[: min(50, len(queries))]:
            c.context(**q)  # warm-up
        calls = [timed_call(c, q) for q in queries]
        warm = [timed_call(c, q) for q in queries]  # the same mix again: a long-lived handle
        report["hot_frame"], hot_entries_read = hotframe.measure(c, workload, options.hot_rounds, options.seed)
        if not options.hot_only:
            sample = [m.uri for m in c.find(type="Fact", limit=1000)]
            random.Random(1).shuffle(sample)
            t = time.perf_counter()
            for uri in sample:
                c.resolve(uri)
            report["resolve_us_mean"] = (time.perf_counter() - t) / max(1, len(sample)) * 1e6
            if options.scoped_queries:
                from .scoped import measure as measure_scoped

                report["scoped"] = measure_scoped(c, queries[: options.scoped_queries])
    report["context_ms"] = latency([call.ms for call in calls])
    report["context_ms_warm"] = latency([call.ms for call in warm])
    report["candidates"] = spread([call.candidates for call in calls])
    report["tokens_delivered_p50"] = pct([call.tokens for call in calls], 50)
    report["index_entries_read"] = {"mix": spread([call.entries_read for call in calls]), **hot_entries_read}
    if not options.hot_only:
        _measure_the_rest(options, store, queries, report)
    if options.beside_writer_seconds:
        print(f"reader beside a writer: {options.beside_writer_seconds:g} s on a copy of {store}", file=sys.stderr)
        report["beside_writer"] = beside.measure(store, workload, queries, options.beside_writer_seconds)
    report["verdict"] = _verdict(report)
    return report


def _measure_the_rest(options: RunOptions, store: str, queries: list[dict[str, Any]], report: dict[str, Any]) -> None:
    """The figures a `hot_only` run leaves out: edges, baselines, a cold process,
    write throughput and disk use (into `report`)."""
    if options.edges:
        from .edges import measure as measure_edges

        report["edges"] = measure_edges(store, queries)
    if options.baseline_queries:
        from .baselines import compare

        print(f"baselines: loading SQLite, comparing {options.baseline_queries} queries", file=sys.stderr)
        with cortex.open(store, actor="bench-agent", mode="r") as c:
            report["baselines"] = compare(c, queries[: options.baseline_queries], BASELINE_NOW)
    cold = cold_process(store, "bench-agent", queries[0], options.cold_runs)
    report["cold_process_ms_median"], report["cold_process_whole_ms_median"] = cold["first_context"], cold["whole"]
    report["single_write_per_s"] = _single_writes(options.writes)
    report["single_write_sync_per_s"] = _single_writes(options.sync_writes, sync=True)
    report["bytes_per_memory"] = _dir_bytes(store) / options.memories


def _verdict(report: dict[str, Any]) -> dict[str, bool | None]:
    """Each target against the figures the report has (a figure it lacks, no key)."""
    ctx = report["context_ms"]
    full = "cold_process_ms_median" in report  # not a hot_only run
    verdict: dict[str, bool | None] = {}
    if full:
        verdict["seed_target_p50_80ms"] = ctx["p50"] < SEED_TARGET_P50_MS and ctx["max"] < SEED_CEILING_MS
    verdict["ours_p50_5ms"] = ctx["p50"] <= OUR_P50_MS
    verdict["ours_p99_25ms"] = ctx["p99"] <= OUR_P99_MS
    warm = report["context_ms_warm"]
    verdict["warm_p50_1ms_p99_3ms"] = warm["p50"] <= WARM_P50_MS and warm["p99"] <= WARM_P99_MS
    if full:
        verdict["cold_process_200ms"] = report["cold_process_ms_median"] <= 200
        verdict["bulk_ingest_20k_per_s"] = report["bulk_ingest_per_s"] >= 20_000 if "bulk_ingest_per_s" in report else None
        verdict["disk_1_5kb_per_memory"] = report["bytes_per_memory"] <= 1536
    if "baselines" in report:
        verdict["5x_original"] = report["baselines"]["ratio_original"] >= 5
        verdict["3x_sqlite"] = report["baselines"]["ratio_sqlite"] >= 3
    verdict["hot_p99_5x_cold_p50"] = report["hot_frame"]["ratio_hot_p99_cold_p50"] <= hotframe.GOAL_RATIO
    if "beside_writer" in report:
        reader = report["beside_writer"]["reader"]["context_ms"]
        verdict["beside_writer_p50_2ms"] = reader["p50"] <= BESIDE_P50_MS
        verdict["beside_writer_p99_15ms"] = reader["p99"] <= BESIDE_P99_MS
    return verdict


def summary(report: dict[str, Any]) -> str:
    """A few lines for a person: latency, scans, the hot frame, throughput, disk, and the targets."""
    ctx = report["context_ms"]
    lines = [
        f"{report['memories']:,} memories, {report['queries']:,} queries (seed {report['seed']})"
        + (", hot figures only" if report.get("hot_only") else ""),
        f"context() ms: p50 {ctx['p50']:.2f}, p95 {ctx['p95']:.2f}, p99 {ctx['p99']:.2f}, max {ctx['max']:.1f}",
    ]
    if "context_ms_warm" in report:  # (reports from before the warm pass have none)
        warm = report["context_ms_warm"]
        lines.append(f"the same queries again (warm): p50 {warm['p50']:.2f}, p95 {warm['p95']:.2f}, p99 {warm['p99']:.2f}, "
                     f"max {warm['max']:.1f}")
    scans = report["index_entries_read"]
    lines.append("index entries read per context(), p50 / p99: "
                 + ", ".join(f"{side} {scans[side]['p50']:,.0f} / {scans[side]['p99']:,.0f}" for side in ("mix", "hot", "cold")))
    hot = report["hot_frame"]
    lines.append(f"hot frames ({hot['object']['ref']}, 10 verbs, up to {hot['hottest_entries']:,} entries): "
                 f"p50 {hot['hot_ms']['p50']:.2f}, p99 {hot['hot_ms']['p99']:.2f} ms, {hot['hot_candidates']['p50']:,.0f} candidates; "
                 f"cold p50 {hot['cold_ms']['p50']:.2f}, p99 {hot['cold_ms']['p99']:.2f} ms; "
                 f"hot p99 / cold p50 {hot['ratio_hot_p99_cold_p50']:.1f}x")
    if "beside_writer" in report:
        side = report["beside_writer"]
        reader = side["reader"]["context_ms"]
        lines.append(f"reader beside a writer ({side['measured_seconds']:.0f} s, store copied in {side['store_copy']['seconds']:.1f} s): "
                     f"context() p50 {reader['p50']:.2f}, p99 {reader['p99']:.2f} ms; "
                     f"the writer {side['writer']['memories_per_s']:,.0f} memories/s")
    if "cold_process_ms_median" in report:
        lines += [
            f"cold process (import, open, one context()): {report['cold_process_ms_median']:.0f} ms"
            + (f"; until it exits {report['cold_process_whole_ms_median']:.0f} ms" if "cold_process_whole_ms_median" in report else ""),
            f"write(): {report['single_write_per_s']:,.0f}/s, with sync=True {report['single_write_sync_per_s']:,.0f}/s",
            f"bulk ingest without the helper: {report['bulk_ingest_inline_per_s']:,.0f} memories/s",
            f"resolve(): {report['resolve_us_mean']:.0f} µs; disk: {report['bytes_per_memory']:.0f} bytes per memory",
        ]
    if "bulk_ingest_per_s" in report:
        lines.append(f"bulk ingest with the helper: {report['bulk_ingest_per_s']:,.0f} memories/s")
    if "optimize" in report:
        done = report["optimize"]
        lines.append(f"optimize() after the build: {done['packed']:,} frame prefixes packed ({done['rows']:,} entries) "
                     f"in {done['seconds']:.1f} s")
    if "baselines" in report:
        base = report["baselines"]
        lines.append(f"the original algorithm is {base['ratio_original']:.1f}x slower, the same on SQLite {base['ratio_sqlite']:.1f}x (p50)")
        if "alone" in base:
            lines.append(f"SQLite lean + numpy is {base['ratio_sqlite_bulk']:.2f}x slower taking turns per query, "
                         f"{base['alone']['ratio_sqlite_bulk']:.2f}x each running alone (p50)")
    met = sorted(k for k, v in report["verdict"].items() if v)  # sorted: as a report read back from JSON has them
    missed = sorted(k for k, v in report["verdict"].items() if v is False)
    lines.append(f"targets met: {', '.join(met) or 'none'}" + (f"; not met: {', '.join(missed)}" if missed else ""))
    return "\n".join(lines) + "\n"


def plot(results_dir: Path) -> Path | None:
    """A PNG of context() latency (p50, p99) against N from every report in
    `results_dir`; None when matplotlib (the `bench` extra) is not installed."""
    try:
        # Imported by name: matplotlib is an optional extra, absent when mypy runs.
        importlib.import_module("matplotlib").use("Agg")
        plt = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return None
    reports = sorted((json.loads(p.read_text()) for p in results_dir.glob("n*.json")), key=lambda r: r["memories"])
    if not reports:
        return None
    sizes = [r["memories"] for r in reports]
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, style in (("p50", "o-"), ("p99", "s--")):
        ax.plot(sizes, [r["context_ms"][key] for r in reports], style, label=f"cortex {key}")
    for name, style in (("original", "^:"), ("sqlite", "v:")):
        if all(name in r.get("baselines", {}) for r in reports):
            ax.plot(sizes, [r["baselines"][name]["p50_ms"] for r in reports], style, label=f"{name} p50")
    ax.axhline(SEED_TARGET_P50_MS, color="grey", linewidth=0.8, label="seed target p50 (80 ms)")
    ax.axhline(OUR_P50_MS, color="green", linewidth=0.8, label="our target p50 (5 ms)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("memories in the store")
    ax.set_ylabel("context() latency, ms (warm)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    out = results_dir / "latency.png"
    fig.savefig(out, dpi=120)
    return out


def tables(results_dir: Path) -> str:
    """Markdown tables of every report in `results_dir` (for RESULTS.md)."""
    reports = sorted((json.loads(p.read_text()) for p in results_dir.glob("n*.json")), key=lambda r: r["memories"])
    cols = [f"{r['memories']:,}" for r in reports]
    lines = ["| | " + " | ".join(cols) + " |", "|---|" + "---|" * len(reports)]

    def row(label: str, fn: Any) -> None:
        cells = []
        for r in reports:
            try:
                cells.append(fn(r))
            except (KeyError, TypeError):
                cells.append("—")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("context() p50 / p95 / p99 / max, ms", lambda r: "{p50:.2f} / {p95:.2f} / {p99:.2f} / {max:.1f}".format(**r["context_ms"]))
    row("the same queries again (warm), p50 / p99 ms", lambda r: "{p50:.2f} / {p99:.2f}".format(**r["context_ms_warm"]))
    row("candidates scored p50 / p99 / max", lambda r: "{p50:.0f} / {p99:.0f} / {max}".format(**r["candidates"]))
    row("tokens delivered, p50", lambda r: f"{r['tokens_delivered_p50']:.0f}")
    for side, label in (("mix", "query mix"), ("hot", "hot-frame calls"), ("cold", "cold-frame calls")):
        row(f"index entries read per call, {label}, p50 / p99", lambda r, k=side: "{p50:,.0f} / {p99:,.0f}".format(**r["index_entries_read"][k]))
    row("hot frames: entries in the hottest / candidates scored p50",
        lambda r: f"{r['hot_frame']['hottest_entries']:,} / {r['hot_frame']['hot_candidates']['p50']:,.0f}")
    row("hot frames, p50 / p99 ms", lambda r: "{p50:.2f} / {p99:.2f}".format(**r["hot_frame"]["hot_ms"]))
    row("cold frames, p50 / p99 ms", lambda r: "{p50:.2f} / {p99:.2f}".format(**r["hot_frame"]["cold_ms"]))
    row("hot p99 ÷ cold p50 (same run)", lambda r: f"{r['hot_frame']['ratio_hot_p99_cold_p50']:.1f}x")
    row("reader beside a writer: context() p50 / p99 ms", lambda r: "{p50:.2f} / {p99:.2f}".format(**r["beside_writer"]["reader"]["context_ms"]))
    row("reader beside a writer: the writer's memories/s", lambda r: f"{r['beside_writer']['writer']['memories_per_s']:,.0f}")
    for name, label in (("cortex", "cortex"), ("original", "baseline 1: original algorithm"), ("sqlite", "baseline 2: same on SQLite"),
                        ("sqlite_lean", "SQLite, lean (scoring columns only)"), ("sqlite_bulk", "SQLite, lean + numpy scoring")):
        row(f"{label}, p50 / p99 ms (fixed now)", lambda r, n=name: "{p50_ms:.2f} / {p99_ms:.2f}".format(**r["baselines"][n]))
    for name in ("original", "sqlite", "sqlite_lean", "sqlite_bulk"):
        row(f"ratio {name} / cortex (p50)", lambda r, n=name: f"{r['baselines'][f'ratio_{n}']:.1f}x")
    for name in ("cortex", "sqlite_lean", "sqlite_bulk"):
        row(f"{name} alone, p50 / p99 ms (fixed now)", lambda r, n=name: "{p50_ms:.2f} / {p99_ms:.2f}".format(**r["baselines"]["alone"][n]))
    for name in ("sqlite_lean", "sqlite_bulk"):
        row(f"ratio {name} / cortex, each alone (p50)", lambda r, n=name: f"{r['baselines']['alone'][f'ratio_{n}']:.2f}x")
    # Reports from before the seventeenth pass timed the whole process under this key.
    row("cold process until its first context() returns, median of 10, ms",
        lambda r: f"{r['cold_process_ms_median']:.0f}" if "cold_process_whole_ms_median" in r else "—")
    row("cold process until it exits, median of 10, ms", lambda r: f"{r.get('cold_process_whole_ms_median', r['cold_process_ms_median']):.0f}")
    row("bulk ingest (write_many, ingest_helper=True), memories/s", lambda r: f"{r['bulk_ingest_per_s']:,.0f}")
    row(f"bulk ingest without the helper (first {INLINE_INGEST_SAMPLE:,}), memories/s", lambda r: f"{r['bulk_ingest_inline_per_s']:,.0f}")
    row("write(), per s / with sync=True", lambda r: f"{r['single_write_per_s']:,.0f} / {r['single_write_sync_per_s']:,.0f}")
    row("resolve(), µs mean", lambda r: f"{r['resolve_us_mean']:.0f}")
    row("bytes per memory on disk", lambda r: f"{r['bytes_per_memory']:.0f}")
    for key in ("seed_target_p50_80ms", "ours_p50_5ms", "ours_p99_25ms", "cold_process_200ms", "5x_original", "3x_sqlite", "bulk_ingest_20k_per_s", "disk_1_5kb_per_memory",
                "hot_p99_5x_cold_p50", "beside_writer_p50_2ms", "beside_writer_p99_15ms"):
        row(f"target: {key}", lambda r, k=key: {True: "met", False: "**not met**", None: "—"}[r["verdict"][k]])
    return "\n".join(lines) + "\n"


def _size(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    """An argparse type: seconds above 0, at most `beside.MAX_SECONDS`."""
    value = float(text)
    if not 0 < value <= beside.MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most {beside.MAX_SECONDS:.0f}, got {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    """`python -m benchmarks run|tables` from a checkout (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="build (once) and measure a workload store")
    p.add_argument("--memories", type=_size, default=100_000)
    p.add_argument("--queries", type=_size, default=1000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--store", help="store directory (default bench-stores/n<N>-s<seed>)")
    p.add_argument("--report", help="JSON report path (default benchmarks/results/n<N>.json; with --hot-only benchmarks/results/hot/n<N>.json)")
    p.add_argument("--baseline-queries", type=int, default=200, help="queries for the side-by-side baselines (0: skip)")
    p.add_argument("--scoped-queries", type=int, default=0, help="queries for scoped vs unscoped context() (0: skip)")
    p.add_argument("--edges", action="store_true", help="also time a copy with 10%% of memories superseded")
    p.add_argument("--hot-only", action="store_true",
                   help="only the query mix, the hot-frame figure and the scan counter (and --beside-writer): a quick run on an existing store")
    p.add_argument("--hot-rounds", type=_size, default=30, help="rounds of the hot-frame figure (each: every hot and every cold frame once)")
    p.add_argument("--beside-writer", action="store_true", help="also time a reader beside a writer that ingests without pause (on a copy of the store)")
    p.add_argument("--beside-seconds", type=_seconds, default=10.0, help="how long --beside-writer measures (default 10)")
    p = sub.add_parser("tables", help="print markdown tables of the reports in benchmarks/results")
    p.add_argument("--results", default="benchmarks/results", help="the folder of n<N>.json reports (default benchmarks/results)")
    args = parser.parse_args(argv)
    if args.command == "tables":
        print(tables(Path(args.results)), end="")
        return 0
    options = RunOptions(args.memories, args.queries, args.seed, min(args.baseline_queries, args.queries),
                         scoped_queries=min(args.scoped_queries, args.queries), edges=args.edges, hot_rounds=args.hot_rounds,
                         hot_only=args.hot_only, beside_writer_seconds=args.beside_seconds if args.beside_writer else 0.0)
    report = run(options, args.store or os.path.join("bench-stores", f"n{args.memories}-s{args.seed}"))
    results = Path("benchmarks/results/hot" if args.hot_only else "benchmarks/results")
    out = Path(args.report) if args.report else results / f"n{args.memories}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print(json.dumps(report, indent=2, sort_keys=True))
    print(summary(report), end="", file=sys.stderr)
    if args.hot_only:  # no plot: it draws the full reports of one folder
        print(f"report: {out}", file=sys.stderr)
        return 0
    png = plot(out.parent)
    print(f"report: {out}" + (f", plot: {png}" if png else " (pip install '.[bench]' for the plot)"), file=sys.stderr)
    return 0
