"""The command line's moving-memory commands through the real entry point:
export / import, import-hmx, export-fingerprint / import-fingerprint, migrate, and
mcp's usage line."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import cortex
from cortex import Event, Fact, Frame, Goal

GPU = Frame("acquire", "service", "gpu")


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cortex", *args], capture_output=True, text=True, input=stdin, timeout=180)


def seed(path: Path) -> str:
    with cortex.open(path, actor="agent-ops-1") as c:
        c.write(Goal(statement="keep the fleet under budget", status="active"))
        fact = c.write(Fact(statement="A100 spot is 1.40 USD/h", subject="acme", predicate="price"), frames=[GPU], tags=["price"])
        c.write(Event(kind="payment", outcome="success", counterparty="acme"), frames=[GPU])
        c.attest([fact], "success")
        return c.root()


def test_export_then_import_gives_the_same_store(tmp_path):
    root = seed(tmp_path / "a")
    done = run("export", str(tmp_path / "a"), str(tmp_path / "a.jsonl"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["root"] == root
    done = run("import", str(tmp_path / "b"), str(tmp_path / "a.jsonl"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"file": str(tmp_path / "a.jsonl"), "lines": {"memory": 3, "weights": 1, "record": 0, "journal": 4},
                                       "root": root}
    assert cortex.store_actor(tmp_path / "b") == "agent-ops-1"
    again = run("import", str(tmp_path / "b"), str(tmp_path / "a.jsonl"))
    assert again.returncode == 2 and again.stderr.startswith("cortex: ImportRefused: path: the store is not empty")
    assert len(again.stderr.strip().splitlines()) == 1


def test_import_of_a_file_that_is_not_an_export_exits_2(tmp_path):
    (tmp_path / "x.jsonl").write_text("hello\n")
    done = run("import", str(tmp_path / "b"), str(tmp_path / "x.jsonl"))
    assert done.returncode == 2 and "is not a cortex export" in done.stderr and "Traceback" not in done.stderr


def test_import_hmx_ingests_once(tmp_path):
    seed(tmp_path / "a")
    event = {"hmx_version": "HMX-1.0", "event_id": "e-1", "event_type": "observation", "session_id": "s-1", "agent_id": "a-1",
             "tenant_id": "t-1", "timestamp": "2025-01-01T00:00:00Z", "sequence": 1,
             "content": {"observation": "the queue is long"}}
    (tmp_path / "events.jsonl").write_text(json.dumps(event) + "\n")
    first = run("import-hmx", str(tmp_path / "a"), str(tmp_path / "events.jsonl"), "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert len(report["uris"]) == 1 and report["changed"] is True
    with cortex.open(tmp_path / "a", actor="agent-ops-1", mode="r") as c:
        assert c.resolve(report["uris"][0]).data.summary.endswith("the queue is long")
    second = run("import-hmx", str(tmp_path / "a"), str(tmp_path / "events.jsonl"), "--json")
    assert second.returncode == 0 and json.loads(second.stdout) == {"uris": report["uris"], "changed": False}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**event, "event_id": "e-2", "hmx_version": "HMX-2.0"}) + "\n")
    refused = run("import-hmx", str(tmp_path / "a"), str(bad))
    assert refused.returncode == 2 and refused.stderr.startswith("cortex: UnsupportedHMXVersion: ")


def test_fingerprint_out_and_in(tmp_path):
    seed(tmp_path / "a")
    out = run("export-fingerprint", str(tmp_path / "a"), "--tier", "compact")
    assert out.returncode == 0, out.stderr
    envelope = json.loads(out.stdout)
    assert envelope["fingerprint"]["fingerprint_hash"]
    assert run("export-fingerprint", str(tmp_path / "a"), "--tier", "compact").stdout == out.stdout  # deterministic
    cortex.open(tmp_path / "b", actor="agent-ops-2").close()
    first = run("import-fingerprint", str(tmp_path / "b"), stdin=out.stdout)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("imported ")
    assert run("import-fingerprint", str(tmp_path / "b"), stdin=out.stdout).stdout == "nothing written: this fingerprint was imported before\n"
    flipped = out.stdout.replace('"compact"', '"minimal"', 1)
    refused = run("import-fingerprint", str(tmp_path / "b"), stdin=flipped)
    assert refused.returncode == 2 and refused.stderr.startswith("cortex: ")


def test_migrate_copies_and_checks(tmp_path):
    root = seed(tmp_path / "a")
    done = run("migrate", str(tmp_path / "a"), str(tmp_path / "copy"), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["root"] == root and report["actor"] == "agent-ops-1" and report["keys"] > 0
    with cortex.open(tmp_path / "copy", actor="agent-ops-1", mode="r") as c:
        assert c.root() == root and c.verify() == []
        now = datetime(2025, 6, 1, tzinfo=timezone.utc)
        with cortex.open(tmp_path / "a", actor="agent-ops-1", mode="r") as a:
            assert c.context(verb="acquire", objects={"service": "gpu"}, now=now).to_json() == \
                a.context(verb="acquire", objects={"service": "gpu"}, now=now).to_json()
    refused = run("migrate", str(tmp_path / "a"), str(tmp_path / "copy"))
    assert refused.returncode == 2 and refused.stderr.startswith("cortex: ") and len(refused.stderr.splitlines()) == 1


def test_mcp_needs_a_store(tmp_path):
    done = run("mcp", str(tmp_path / "missing"))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"cortex: ValidationError: actor: is required to create a store: {tmp_path / 'missing'} "
                           "holds no store to read it from\n")
    assert not (tmp_path / "missing").exists()


def test_bench_on_postgresql_and_the_fleet_figure(tmp_path, pg_dsn):
    done = run("bench", "--backend", "postgresql", "--dsn", pg_dsn, "--memories", "500", "--queries", "20",
               "--baseline-queries", "0", "--smoke", "--report", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["backend"] == "postgresql" and report["memories"] == 500
    assert set(report["context_ms"]) >= {"p50", "p99"} and set(report["rocksdb_context_ms"]) >= {"p50", "p99"}
    fleet = run("bench-fleet", "--dsn", pg_dsn, "--actors", "2", "--memories", "20", "--workers", "1", "--seconds", "0.5",
                "--report", str(tmp_path / "f.json"))
    assert fleet.returncode == 0, fleet.stderr
    runs = json.loads((tmp_path / "f.json").read_text())["runs"]
    assert [r["workers"] for r in runs] == [1] and runs[0]["contexts"] > 0
    missing = run("bench", "--backend", "postgresql")
    assert missing.returncode == 2 and missing.stderr.startswith("cortex: BadParameter: ")
