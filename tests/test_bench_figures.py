"""The harness's hot-frames figures on a 5,000-memory workload store: the hot-frame
figure (`cortex.bench.hotframe`), the scan counter (index entries read per call) and
the reader beside a writer (`cortex.bench.beside`), through `harness.run`, the
`cortex bench` and `python -m benchmarks` options, the summary and the tables.

The figures are checked against counts made another way (the frames of every live
memory, read through the public API), never against timings.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

import cortex
from cortex.bench import beside, harness, hotframe
from cortex.bench.calls import timed_call
from cortex.bench.workload import BATCH, Workload
from cortex.cli import main as cli_main
from cortex.model import Verb, is_pinned

MEMORIES = 5000
ROUNDS = 2
BESIDE_SECONDS = 1.0
NEW_VERDICTS = {"hot_p99_5x_cold_p50", "warm_p50_1ms_p99_3ms", "beside_writer_p50_2ms", "beside_writer_p99_15ms"}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("bench-figures") / "store"
    Workload(MEMORIES).build(str(path), progress=False)
    return str(path)


@pytest.fixture(scope="module")
def direct(store) -> dict:
    """What the store holds, counted from every live memory: index entries per
    (verb, kind, ref) frame (one per memory and frame), and the pinned memories."""
    frames: Counter = Counter()
    pinned = 0
    with cortex.open(store, actor="bench-agent", mode="r") as c:
        for memory in c.memories():
            frames.update({(f.verb, f.kind, f.ref) for f in memory.frames})
            pinned += is_pinned(memory.data)
        count = c.stats()["memories"]
    return {"frames": frames, "pinned": pinned, "memories": count}


@pytest.fixture(scope="module")
def report(store, direct) -> dict:
    options = harness.RunOptions(MEMORIES, 60, baseline_queries=0, hot_rounds=ROUNDS, hot_only=True, beside_writer_seconds=BESIDE_SECONDS)
    return harness.run(options, store)


def test_a_hot_only_run_reports_the_new_figures_and_leaves_the_others_out(report):
    assert set(report) == {"machine", "memories", "queries", "seed", "store", "hot_only", "context_ms", "context_ms_warm",
                           "candidates", "tokens_delivered_p50", "index_entries_read", "hot_frame", "beside_writer", "verdict"}
    warm = report["context_ms_warm"]
    assert 0 < warm["p50"] <= warm["p95"] <= warm["p99"] <= warm["max"]
    assert report["verdict"]["warm_p50_1ms_p99_3ms"] == (warm["p50"] <= 1 and warm["p99"] <= 3)
    assert set(report["verdict"]) == {"ours_p50_5ms", "ours_p99_25ms"} | NEW_VERDICTS
    assert set(report["index_entries_read"]) == {"mix", "hot", "cold"}
    hot = report["hot_frame"]
    assert (hot["rounds"], hot["calls_per_side"], hot["budget_tokens"]) == (ROUNDS, ROUNDS * len(Verb), hotframe.BUDGET_TOKENS)
    assert hot["ratio_hot_p99_cold_p50"] == hot["hot_ms"]["p99"] / hot["cold_ms"]["p50"]
    assert report["verdict"]["hot_p99_5x_cold_p50"] == (hot["ratio_hot_p99_cold_p50"] <= 5)


def test_the_hot_frames_are_the_hottest_object_with_every_verb_and_the_cold_ones_hold_a_handful(report, direct):
    frames = direct["frames"]
    hot = report["hot_frame"]
    kind, ref = Workload.ref(0)
    assert hot["object"] == {"index": 0, "kind": kind.name.lower(), "ref": ref}
    assert [(f["verb"], f["kind"], f["ref"]) for f in hot["hot_frames"]] == [(v.name.lower(), kind.name.lower(), ref) for v in Verb]
    assert [f["entries"] for f in hot["hot_frames"]] == [frames[(v, kind, ref)] for v in Verb]
    assert hot["hottest_entries"] == max(frames.values())  # no frame of the store holds more
    cold = hot["cold_frames"]
    assert len(cold) == len(Verb)
    assert len({f["ref"] for f in cold}) == len(cold)
    for f in cold:
        key = (Verb[f["verb"].upper()], cortex.ObjKind[f["kind"].upper()], f["ref"])
        assert f["entries"] == frames[key] >= 1
        assert f["entries"] == max(frames[(v, key[1], key[2])] for v in Verb)
        assert sum(frames[(v, key[1], key[2])] for v in Verb) <= hotframe.COLD_MAX_ENTRIES
    assert hot["hot_candidates"]["p50"] > hot["cold_candidates"]["max"]


def test_the_scan_counter_counts_the_index_entries_a_call_reads(store, report, direct):
    pinned = direct["pinned"]
    with cortex.open(store, actor="bench-agent", mode="r") as c:
        # No verb: the pinned tier alone, every entry of which the first call reads;
        # the handle keeps it, so the next call reads none.
        assert timed_call(c, {}).entries_read == pinned
        assert timed_call(c, {"budget_tokens": 500}).entries_read == 0
        assert c._engine.index_entries_read == pinned
    scans = report["index_entries_read"]
    # After the hot-frame figure's warm-up round, each frame's entries and the newest
    # of its Events come from the handle's caches: no timed call reads an entry.
    assert scans["hot"]["max"] == scans["cold"]["max"] == 0
    # The mix's first pass reads the objects the warm-up did not touch.
    assert 0 <= scans["mix"]["p50"] <= scans["mix"]["p99"] <= scans["mix"]["max"] and scans["mix"]["max"] > 0


def test_the_reader_beside_a_writer_reads_a_copy_the_writer_grows(store, report, direct):
    side = report["beside_writer"]
    written = side["writer"]["memories"]
    assert written >= BATCH and side["writer"]["batches"] >= 1 and side["writer"]["ingest_helper"] is False
    assert side["memories_before"] == direct["memories"]
    assert side["memories_after"] == side["memories_before"] + written  # every write landed, in the copy
    assert side["last_write_visible"] is True
    assert side["writer"]["memories_per_s"] == written / side["writer"]["seconds"]
    assert side["reader"]["calls"] >= 1 and side["seconds"] == BESIDE_SECONDS
    assert side["measured_seconds"] >= BESIDE_SECONDS
    assert side["store_copy"]["files_linked"] >= 1  # the table files
    assert report["verdict"]["beside_writer_p99_15ms"] == (side["reader"]["context_ms"]["p99"] <= 15)
    # The store itself is as it was, and the copy is gone.
    with cortex.open(store, actor="bench-agent", mode="r") as c:
        assert c.stats()["memories"] == direct["memories"]
    assert sorted(os.listdir(Path(store).parent)) == ["store"]


def test_the_copy_links_the_table_files_and_copies_the_rest(store, direct, tmp_path):
    copied = beside.copy_store(store, str(tmp_path / "copy"))
    names = sorted(os.listdir(store))
    assert sorted(os.listdir(tmp_path / "copy")) == names
    tables = [n for n in names if n.endswith(".sst")]
    assert copied["files_linked"] == len(tables) >= 1
    assert copied["files_copied"] == len(names) - len(tables)
    assert copied["bytes"] == sum(os.path.getsize(os.path.join(store, n)) for n in names)
    for name in tables:
        assert os.stat(tmp_path / "copy" / name).st_ino == os.stat(os.path.join(store, name)).st_ino
    with cortex.open(store, actor="bench-agent", mode="r") as c:
        root = c.root()
    with cortex.open(tmp_path / "copy", actor="bench-agent", mode="r") as c:
        assert (c.root(), c.stats()["memories"]) == (root, direct["memories"])


def test_the_summary_and_the_tables_show_the_new_figures(report, tmp_path):
    text = harness.summary(report)
    hot = report["hot_frame"]
    assert f"hot p99 / cold p50 {hot['ratio_hot_p99_cold_p50']:.1f}x" in text
    assert f"mix {report['index_entries_read']['mix']['p50']:,.0f} / " in text
    assert f"the writer {report['beside_writer']['writer']['memories_per_s']:,.0f} memories/s" in text
    assert "cold process" not in text
    assert "the same queries again (warm): p50 {p50:.2f}, p95 {p95:.2f}, p99 {p99:.2f}".format(**report["context_ms_warm"]) in text
    (tmp_path / f"n{MEMORIES}.json").write_text(json.dumps(report))
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1].rstrip(" |") for line in harness.tables(tmp_path).splitlines()[2:]}
    assert rows["hot p99 ÷ cold p50 (same run)"] == f"{hot['ratio_hot_p99_cold_p50']:.1f}x"
    assert rows["hot frames: entries in the hottest / candidates scored p50"] == f"{hot['hottest_entries']:,} / {hot['hot_candidates']['p50']:,.0f}"
    assert rows["index entries read per call, hot-frame calls, p50 / p99"] == "{p50:,.0f} / {p99:,.0f}".format(**report["index_entries_read"]["hot"])
    assert rows["reader beside a writer: context() p50 / p99 ms"] == "{p50:.2f} / {p99:.2f}".format(**report["beside_writer"]["reader"]["context_ms"])
    assert rows["the same queries again (warm), p50 / p99 ms"] == "{p50:.2f} / {p99:.2f}".format(**report["context_ms_warm"])
    assert rows["cold process until its first context() returns, median of 10, ms"] == "—"  # not in a hot-only run
    assert rows["cold process until it exits, median of 10, ms"] == "—"


def test_the_tables_show_a_cold_process_timed_to_its_answer_apart_from_one_timed_to_its_exit(report, tmp_path):
    # Reports from before the seventeenth pass timed the whole process under the one key.
    older = {**report, "memories": 1, "cold_process_ms_median": 210.4}
    newer = {**report, "memories": 2, "cold_process_ms_median": 160.2, "cold_process_whole_ms_median": 188.6}
    for r in (older, newer):
        (tmp_path / f"n{r['memories']}.json").write_text(json.dumps(r))
    table = harness.tables(tmp_path).splitlines()
    cells = {line.split(" | ")[0].lstrip("| "): line.rstrip(" |").split(" | ")[1:] for line in table[2:]}
    assert cells["cold process until its first context() returns, median of 10, ms"] == ["—", "160"]
    assert cells["cold process until it exits, median of 10, ms"] == ["210", "189"]


def test_the_summary_and_the_tables_show_both_side_by_side_ratios(store, report, tmp_path):
    from cortex.bench.baselines import compare

    queries = Workload(MEMORIES).queries(6)
    with cortex.open(store, actor="bench-agent", mode="r") as c:
        base = compare(c, queries, harness.BASELINE_NOW)
    full = {**report, "baselines": base}
    full["verdict"] = harness._verdict(full)
    assert (f"SQLite lean + numpy is {base['ratio_sqlite_bulk']:.2f}x slower taking turns per query, "
            f"{base['alone']['ratio_sqlite_bulk']:.2f}x each running alone (p50)") in harness.summary(full)
    (tmp_path / f"n{MEMORIES}.json").write_text(json.dumps(full))
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1].rstrip(" |") for line in harness.tables(tmp_path).splitlines()[2:]}
    assert rows["ratio sqlite_bulk / cortex, each alone (p50)"] == f"{base['alone']['ratio_sqlite_bulk']:.2f}x"
    assert rows["cortex alone, p50 / p99 ms (fixed now)"] == "{p50_ms:.2f} / {p99_ms:.2f}".format(**base["alone"]["cortex"])


def test_cortex_bench_hot_only_on_an_existing_store(store, tmp_path, capsys):
    out = tmp_path / "hot.json"
    assert cli_main(["bench", "--memories", str(MEMORIES), "--queries", "20", "--store", store, "--hot-only", "--hot-rounds", "1",
                     "--report", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["hot_only"] is True and report["hot_frame"]["calls_per_side"] == len(Verb)
    assert "beside_writer" not in report and "cold_process_ms_median" not in report and "bulk_ingest_per_s" not in report
    assert printed == harness.summary(report)


def test_python_m_benchmarks_hot_only_writes_the_report_it_is_given(store, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert harness.main(["run", "--memories", str(MEMORIES), "--queries", "20", "--store", store, "--hot-only", "--hot-rounds", "1",
                         "--report", str(out)]) == 0
    report = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == report
    assert set(report["verdict"]) == {"ours_p50_5ms", "ours_p99_25ms", "hot_p99_5x_cold_p50", "warm_p50_1ms_p99_3ms"}
    assert harness.main(["tables", "--results", str(tmp_path)]) == 0
    assert "| hot p99 ÷ cold p50 (same run) | " in capsys.readouterr().out


def test_bad_options_are_refused_before_anything_runs(tmp_path, capsys):
    for bad in (-1.0, 601.0, True, "5"):
        with pytest.raises(cortex.ValidationError) as caught:
            harness.RunOptions(100, 10, baseline_queries=0, beside_writer_seconds=bad)
        assert caught.value.field == "beside_writer_seconds"
    with pytest.raises(cortex.ValidationError) as caught:
        harness.RunOptions(100, 10, baseline_queries=0, hot_rounds=0)
    assert caught.value.field == "hot_rounds"
    with pytest.raises(cortex.ValidationError) as caught:
        beside.measure(str(tmp_path / "none"), Workload(100), [{}], seconds=0)
    assert caught.value.field == "seconds"
    status = cli_main(["bench", "--backend", "postgresql", "--dsn", "postgresql://nobody@127.0.0.1:1/x", "--hot-only"])
    assert status == 2
    assert "--hot-only" in capsys.readouterr().err
    assert cli_main(["bench", "--beside-writer", "--beside-seconds", "0"]) == 2
    assert list(tmp_path.iterdir()) == []


def test_a_store_without_the_workloads_cold_objects_is_refused(tmp_path):
    with cortex.open(tmp_path / "s", actor="bench-agent") as c:
        c.write(cortex.Fact(statement="one", subject="s", predicate="p"), frames=[cortex.Frame("find", "service", "elsewhere")])
        with pytest.raises(cortex.ValidationError) as caught:
            hotframe.measure(c, Workload(MEMORIES), rounds=1, seed=7)
    assert caught.value.field == "store"


def test_a_run_that_builds_its_store_optimizes_it_as_a_user_would(tmp_path, monkeypatch):
    """The harness packs the frames of the store it builds (`optimize()` after a bulk
    load), and reports what it packed."""
    monkeypatch.setattr(cortex.upkeep.optimize, "__defaults__", (20,))  # a small store's hottest frames
    store = str(tmp_path / "built")
    report = harness.run(harness.RunOptions(2000, 20, baseline_queries=0, hot_rounds=1, hot_only=True), store)
    frames: Counter = Counter()
    with cortex.open(store, actor="bench-agent", mode="r") as c:
        for memory in c.memories():
            frames.update({(f.verb, f.kind, f.ref) for f in memory.frames})
        packed = len(c._engine.packs)
        assert c.verify() == []
    large = [n for n in frames.values() if n >= 20]
    assert len(large) > 0
    assert (report["optimize"]["packed"], report["optimize"]["rows"]) == (len(large), sum(large)) == (packed, sum(large))
    assert report["optimize"]["seconds"] > 0
    assert "optimize() after the build: " in harness.summary(report)


def test_the_cold_process_is_timed_to_its_first_answer_and_to_its_exit(store):
    query = Workload(MEMORIES).queries(1)[0]
    cold = harness.cold_process(store, "bench-agent", query, runs=2)
    assert set(cold) == {"first_context", "whole"}
    assert 0 < cold["first_context"] < cold["whole"]


def test_a_cold_process_that_fails_is_an_error_not_a_figure(store):
    query = Workload(MEMORIES).queries(1)[0]
    with pytest.raises(RuntimeError, match="the cold process failed"):
        harness.cold_process(store, "another-actor", query, runs=1)
