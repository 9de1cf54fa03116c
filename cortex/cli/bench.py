"""The benchmark commands: bench, bench-fleet."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import click

from ._common import _echo_json, _epilog, cli


@cli.command(short_help="Run the benchmark harness on a temporary store.", epilog=_epilog(
    "cortex bench --memories 10000 --queries 200",
    "cortex bench --memories 100000 --store ./bench-store --report report.json",
    "cortex bench --memories 100000 --store ./bench-store --hot-only --beside-writer --report hot.json",
))
@click.option("--memories", type=click.IntRange(min=1), default=100_000, show_default=True, help="Memories in the workload store.")
@click.option("--queries", type=click.IntRange(min=1), default=1000, show_default=True, help="context() calls timed.")
@click.option("--seed", type=click.IntRange(min=0), default=7, show_default=True, help="Workload seed.")
@click.option("--baseline-queries", type=click.IntRange(min=0), default=200, show_default=True,
              help="Queries the two baselines are compared on (0: skip; at most --queries).")
@click.option("--store", type=click.Path(file_okay=False), help="Build (or reuse) the workload store here, and keep it.")
@click.option("--keep", is_flag=True, help="Keep the temporary store and print its path.")
@click.option("--report", type=click.Path(dir_okay=False, writable=True), help="Write the JSON report here and print a summary.")
@click.option("--smoke", is_flag=True, help="A quick run that checks the harness works (one cold process, a few dozen writes).")
@click.option("--backend", type=click.Choice(["rocksdb", "postgresql"]), default="rocksdb", show_default=True,
              help="postgresql: copy the workload to --dsn and time it there beside RocksDB.")
@click.option("--dsn", metavar="DSN", help="The PostgreSQL database for --backend postgresql (postgresql://user@host:port/db).")
@click.option("--hot-only", is_flag=True,
              help="Only the query mix, the hot-frame figure and the scan counter (and --beside-writer): a quick run on an existing store.")
@click.option("--hot-rounds", type=click.IntRange(min=1), default=30, show_default=True,
              help="Rounds of the hot-frame figure (each calls every hot and every cold frame once).")
@click.option("--beside-writer", is_flag=True, help="Also time a reader beside a writer that ingests without pause (on a copy of the store).")
@click.option("--beside-seconds", type=click.FloatRange(min=0, min_open=True, max=600), default=10.0, show_default=True,
              help="How long --beside-writer measures.")
def bench(memories: int, queries: int, seed: int, baseline_queries: int, store: str | None, keep: bool, report: str | None,
          smoke: bool, backend: str, dsn: str | None, hot_only: bool, hot_rounds: int, beside_writer: bool, beside_seconds: float) -> int:
    """Run the benchmark harness: build a seeded workload store, then measure
    context() latency, the index entries each call reads, the workload's hottest
    frames against cold ones, a cold process, write and ingest throughput, resolve
    latency, disk use and the two baselines. --hot-only keeps the query mix, the
    hot-frame figure and the scan counter; --beside-writer adds a reader's latency
    beside a process that ingests without pause, on a copy of the store.

    The store goes to a temporary folder, removed at the end unless --keep (or
    --store DIR, which also reuses a store built there before). The JSON report goes
    to standard output, or to --report PATH with a summary on standard output.
    Nothing is written into the current folder.
    """
    from dataclasses import replace

    from ..bench import backends, harness

    if backend == "postgresql" and not dsn:
        raise click.BadParameter("is required with --backend postgresql", param_hint="--dsn")
    if backend == "postgresql" and (hot_only or beside_writer):
        raise click.BadParameter("measures RocksDB stores only; leave it out with --backend postgresql",
                                 param_hint="--hot-only" if hot_only else "--beside-writer")
    shape = harness.RunOptions.smoke if smoke else harness.RunOptions
    options = replace(shape(memories, queries, seed, min(baseline_queries, queries)), hot_rounds=hot_rounds,
                      hot_only=hot_only, beside_writer_seconds=beside_seconds if beside_writer else 0.0)
    folder = None if store is not None else tempfile.mkdtemp(prefix="cortex-bench-")
    path = os.path.join(folder, "store") if folder is not None else str(store)
    try:
        result = backends.run_postgresql(options, dsn, path) if dsn and backend == "postgresql" else harness.run(options, path)
    finally:
        if folder is not None and not keep:
            shutil.rmtree(folder, ignore_errors=True)
    if folder is not None and keep:
        click.echo(f"store kept: {path}", err=True)
    if report is None:
        _echo_json(result)
        return 0
    with open(report, "w", encoding="utf-8") as out:
        out.write(json.dumps(result, indent=2, sort_keys=True) + "\n")
    click.echo(backends.summary(result) if backend == "postgresql" else harness.summary(result), nl=False)
    click.echo(f"report: {report}", err=True)
    return 0


@cli.command("bench-fleet", short_help="The fleet figure: many actors on PostgreSQL.", epilog=_epilog(
    "cortex bench-fleet --dsn postgresql://cortex@127.0.0.1:5432/fleet",
    "cortex bench-fleet --dsn postgresql://cortex@127.0.0.1:5432/fleet --actors 100 --workers 1,2 --seconds 5"))
@click.option("--dsn", required=True, metavar="DSN", help="The PostgreSQL database (loaded once, reused).")
@click.option("--actors", type=click.IntRange(min=1), default=1000, show_default=True, help="Actors in the database.")
@click.option("--memories", type=click.IntRange(min=1), default=1000, show_default=True, help="Memories per actor.")
@click.option("--workers", default="1,2,4", show_default=True, help="Worker process counts to measure, comma-separated.")
@click.option("--seconds", type=click.FloatRange(min=0.1), default=20.0, show_default=True, help="Seconds per worker count.")
@click.option("--warm-actors", type=click.IntRange(min=0), default=0, show_default=True,
              help="Stores each worker keeps open (0: open one per task).")
@click.option("--report", type=click.Path(dir_okay=False, writable=True), help="Write the JSON report here.")
def bench_fleet(dsn: str, actors: int, memories: int, workers: str, seconds: float, warm_actors: int, report: str | None) -> int:
    """N worker processes compose contexts for random actors of a many-actor
    PostgreSQL database, concurrently: contexts per second and p50/p99, for each N."""
    from ..bench import fleet

    try:
        counts = tuple(int(n) for n in workers.split(","))
    except ValueError:
        raise click.BadParameter(f"must be whole numbers separated by commas, got {workers!r}", param_hint="--workers") from None
    if not counts or min(counts) < 1:
        raise click.BadParameter("must name at least one count of 1 or more", param_hint="--workers")
    result = fleet.run_fleet(dsn, fleet.FleetOptions(actors=actors, memories=memories, workers=counts, seconds=seconds,
                                                     warm_actors=warm_actors))
    if report is not None:
        with open(report, "w", encoding="utf-8") as out:
            out.write(json.dumps(result, indent=2, sort_keys=True) + "\n")
    click.echo(fleet.summary(result), nl=False)
    return 0
