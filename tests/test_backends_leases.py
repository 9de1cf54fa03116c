"""One writer per actor on PostgreSQL, across processes (docs/operations.md, docs/postgresql.md): the lease.

* Two writer processes for one actor: exactly one holds the lease, the other gets
  `StoreLocked`.
* A writer paused past its lease's expiry (SIGSTOP) whose lease another writer took
  meanwhile fails its next write with `StoreLocked`, and nothing of it is committed.
* A writer killed with SIGKILL in the middle of its batches loses no acknowledged
  write and leaves no partial batch; a new writer gets `StoreLocked` until the dead
  one's lease lapses, then opens.
* Reader processes beside a writing writer see every write acknowledged before their
  call began and never a torn bundle (the checks of tests/test_reliability_concurrency.py).

Child processes get short leases through `CORTEX_PG_LEASE_SECONDS` and
`CORTEX_PG_RENEW_SECONDS` (read by `cortex.storage.postgres`).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import cortex
from cortex import Fact, Frame, Write

pytest_plugins = ["pgfixture"]  # pg_dsn, pg_actor (a no-op once tests/conftest.py lists it)

REPO = Path(__file__).resolve().parent.parent
WAIT_S = 120  # hang guard only
LEASE_S = 1.5  # the children's lease
RENEW_S = 0.4

# A writer that takes commands on stdin: "write <text>" and "close"; one JSON line out per step.
WRITER = """
import json, sys
import cortex
def say(**obj):
    print(json.dumps(obj), flush=True)
try:
    c = cortex.open(sys.argv[1], actor=sys.argv[2])
except cortex.CortexError as exc:
    say(open=type(exc).__name__, message=str(exc))
    sys.exit(0)
say(open="ok", root=c.root())
for line in sys.stdin:
    command, _, text = line.strip().partition(" ")
    if command == "close":
        c.close()
        say(closed=True)
        break
    assert command == "write", command
    try:
        uri = c.write(cortex.Fact(statement=text, subject="child", predicate="wrote"))
        say(ok=uri, root=c.root())
    except cortex.CortexError as exc:
        say(error=type(exc).__name__, message=str(exc))
"""

# A writer of batches: batch n is one write_many of K facts tagged b<n>; "ack" after each.
BATCHES = """
import json, sys
import cortex
c = cortex.open(sys.argv[1], actor=sys.argv[2])
first, k = int(sys.argv[3]), int(sys.argv[4])
print(json.dumps({"open": "ok"}), flush=True)
n = first
while True:
    c.write_many([cortex.Write(cortex.Fact(statement=f"batch {n} item {i} " + "words " * (i % 9), subject=f"s{n}",
                                           predicate="in"), tags=[f"b{n}"]) for i in range(k)])
    print(json.dumps({"ack": n, "root": c.root()}), flush=True)
    n += 1
"""

# A reader: context() for batches around the last acknowledged one until told to stop.
READER = """
import json, os, random, sys
import cortex
dsn, actor, acked_path, stop_path, seed, k = sys.argv[1:7]
rng, k = random.Random(int(seed)), int(k)
calls, problems = [], []
with cortex.open(dsn, actor=actor, mode="r") as r:
    print(json.dumps({"ready": True}), flush=True)
    while not os.path.exists(stop_path):
        with open(acked_path) as f:
            acked = int(f.read())
        m = max(0, acked + rng.randint(-3, 1))
        b = r.context(verb="find", objects={"tool": f"batch-{m}"}, budget_tokens=4000,
                      form=rng.choice(["short", "medium", "full"]))
        mems = b.memories()
        for mem in mems:
            if b.tokens[mem.id] != mem.tokens[b.form]:
                problems.append(f"torn: index tokens {b.tokens[mem.id]} != head tokens {mem.tokens[b.form]} for {mem.uri}")
        found = len(r.find(tags=[f"batch-{m}"], limit=100))
        if found not in (0, k):
            problems.append(f"torn find(): batch-{m} has {found} memories")
        calls.append([b.root, m, len(mems), acked])
print(json.dumps({"calls": calls, "problems": problems}), flush=True)
"""


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["CORTEX_PG_LEASE_SECONDS"] = str(LEASE_S)
    env["CORTEX_PG_RENEW_SECONDS"] = str(RENEW_S)
    return env


def spawn(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(), cwd=REPO)


def said(proc: subprocess.Popen[str]) -> dict:
    """The child's next JSON line (failing with its stderr when it has none)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(WAIT_S)
        raise AssertionError(f"the child said nothing more (exit {proc.returncode}): {proc.stderr.read() if proc.stderr else ''}")
    return json.loads(line)


def tell(proc: subprocess.Popen[str], command: str) -> dict:
    assert proc.stdin is not None
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    return said(proc)


def end(*procs: subprocess.Popen[str]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(WAIT_S)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def open_when_free(dsn: str, actor: str, limit: float) -> cortex.Cortex:
    """Open the writer, retrying while another writer's lease runs (at most `limit` s)."""
    deadline = time.monotonic() + limit
    while True:
        try:
            return cortex.open(dsn, actor=actor)
        except cortex.StoreLocked:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_two_writer_processes_exactly_one_holds_the_lease(pg_dsn, pg_actor) -> None:
    a, b = spawn(WRITER, pg_dsn, pg_actor), spawn(WRITER, pg_dsn, pg_actor)
    try:
        opened = {"a": said(a), "b": said(b)}
        outcomes = sorted(o["open"] for o in opened.values())
        assert outcomes == ["StoreLocked", "ok"], opened
        holder, other = (a, b) if opened["a"]["open"] == "ok" else (b, a)
        locked = opened["b" if holder is a else "a"]
        assert 'mode="r"' in locked["message"] and pg_actor in locked["message"]
        wrote = tell(holder, "write from the holder")
        assert "ok" in wrote
        assert tell(holder, "close") == {"closed": True}
        with cortex.open(pg_dsn, actor=pg_actor, mode="r") as r:
            assert [m.data.statement for m in r.memories()] == ["from the holder"]
            assert r.root() == wrote["root"]
        other.wait(WAIT_S)
    finally:
        end(a, b)


def test_a_writer_paused_past_its_lease_cannot_commit(pg_dsn, pg_actor, monkeypatch) -> None:
    monkeypatch.setenv("CORTEX_PG_LEASE_SECONDS", str(LEASE_S))
    monkeypatch.setenv("CORTEX_PG_RENEW_SECONDS", str(RENEW_S))
    paused = spawn(WRITER, pg_dsn, pg_actor)
    try:
        assert said(paused)["open"] == "ok"
        assert "ok" in tell(paused, "write before the pause")
        os.kill(paused.pid, signal.SIGSTOP)  # a GC pause, a stopped VM, a partition
        try:
            with pytest.raises(cortex.StoreLocked):
                cortex.open(pg_dsn, actor=pg_actor)  # its lease still runs
            taker = open_when_free(pg_dsn, actor=pg_actor, limit=LEASE_S + 5)
        finally:
            os.kill(paused.pid, signal.SIGCONT)
        with taker:
            uri = taker.write(Fact(statement="by the new writer", subject="taker", predicate="wrote"))
            root = taker.root()
            refused = tell(paused, "write after the pause")
            assert refused["error"] == "StoreLocked", refused
            assert "lease lost" in refused["message"] and "nothing of this write was committed" in refused["message"]
            assert tell(paused, "write again")["error"] == "StoreLocked"
            assert taker.root() == root
            assert [m.data.statement for m in taker.memories()] == ["before the pause", "by the new writer"]
            assert taker.resolve(uri).data.statement == "by the new writer"
            assert taker.verify() == []
    finally:
        end(paused)


def test_sigkill_mid_batch_loses_no_acknowledged_write_and_leaves_no_partial_batch(pg_dsn, pg_actor, request) -> None:
    k = 120  # facts per batch: a transaction of about a thousand rows
    rng = random.Random(16)
    acked: set[int] = set()
    earlier: set[int] = set()  # batches found by an earlier round, acknowledged or not
    next_batch = 0
    rounds = 3
    for _ in range(rounds):
        child = spawn(BATCHES, pg_dsn, pg_actor, next_batch, k)
        try:
            assert said(child)["open"] == "ok"
            last_root = None
            for _ in range(rng.randint(1, 3)):
                ack = said(child)
                acked.add(ack["ack"])
                last_root = ack["root"]
            time.sleep(rng.uniform(0, 0.15))
            child.send_signal(signal.SIGKILL)
            child.wait(WAIT_S)
            assert child.stdout is not None
            for line in child.stdout.read().splitlines():  # acks printed before the kill
                ack = json.loads(line)
                acked.add(ack["ack"])
                last_root = ack["root"]
        finally:
            end(child)
        with pytest.raises(cortex.StoreLocked, match="lease runs until"):
            cortex.open(pg_dsn, actor=pg_actor)  # the dead writer's lease has not lapsed yet
        with open_when_free(pg_dsn, pg_actor, limit=LEASE_S + 5) as c:
            counts = Counter(m.tags[0] for m in c.memories())
            assert c.verify() == []
            root = c.root()
        present = {int(tag[1:]) for tag in counts}
        assert all(count == k for count in counts.values()), f"a partial batch: {counts}"
        assert acked <= present, f"acknowledged batches lost: {sorted(acked - present)}"
        # At most one batch of this round committed without its ack reaching us (the
        # kill fell between the commit and the print), and it is the round's last.
        unacked = present - acked - earlier
        assert len(unacked) <= 1 and all(n > max(acked) for n in unacked), (sorted(acked), sorted(present))
        if not unacked:
            assert root == last_root
        earlier |= present
        next_batch = max(present) + 1
    request.node.add_report_section("call", "kills", f"{rounds} kills, {len(acked)} acknowledged batches of {k}, none lost")


def test_reader_processes_see_every_acknowledged_write_and_no_torn_bundle(tmp_path, pg_dsn, pg_actor) -> None:
    k, batches = 8, 40
    acked_path, stop_path = tmp_path / "acked", tmp_path / "stop"
    acked_path.write_text("-1")
    c = cortex.open(pg_dsn, actor=pg_actor)
    readers: list[subprocess.Popen[str]] = []
    try:
        roots = {c.root(): 0}
        readers = [spawn(READER, pg_dsn, pg_actor, acked_path, stop_path, seed, k) for seed in (1, 2)]
        for reader in readers:
            assert said(reader) == {"ready": True}
        first: list[str] = []
        for n in range(batches):
            frame = Frame("find", "tool", f"batch-{n}")
            uris = c.write_many([Write(Fact(statement=f"batch {n} item {i}", subject=f"s{n}", predicate="in"),
                                       frames=[frame], tags=[f"batch-{n}"]) for i in range(k)])
            first.append(uris[0])
            roots[c.root()] = n + 1
            if n:  # a new version of the previous batch's first memory, with other token counts
                c.update(first[n - 1], Fact(statement=f"batch {n - 1} revised " + "more words " * (n % 7 + 1),
                                            subject=f"s{n - 1}", predicate="in"))
                roots[c.root()] = n + 1
            (tmp_path / "acked.tmp").write_text(str(n))
            os.replace(tmp_path / "acked.tmp", acked_path)
            time.sleep(0.01)
        stop_path.write_text("stop")
        results = [said(reader) for reader in readers]
    finally:
        stop_path.write_text("stop")
        end(*readers)
        c.close()
    problems = [p for r in results for p in r["problems"]]
    calls = [call for r in results for call in r["calls"]]
    for root, m, count, seen in calls:
        if root not in roots:
            problems.append(f"a bundle at root {root[:12]}, which the writer never produced")
            continue
        expected = k if m < roots[root] else 0
        if count != expected:
            problems.append(f"batch-{m} at root {root[:12]}: {count} memories, expected {expected}")
        if m <= seen and count != k:
            problems.append(f"batch-{m} was acknowledged before the call began, but the bundle has {count}")
    assert not problems, "\n".join(problems[:20])
    assert len(calls) >= 10 and len({root for root, *_ in calls}) >= 2, "the readers never saw the store move"


def test_lease_times_come_from_the_environment(pg_dsn, pg_actor, monkeypatch) -> None:
    import psycopg

    monkeypatch.setenv("CORTEX_PG_LEASE_SECONDS", "4")
    monkeypatch.delenv("CORTEX_PG_RENEW_SECONDS", raising=False)
    with cortex.open(pg_dsn, actor=pg_actor), psycopg.connect(pg_dsn) as conn:
        left = conn.execute("SELECT extract(epoch FROM expires_at - now()) FROM cortex_lease WHERE actor = %s",
                            (pg_actor,)).fetchone()
        assert left is not None and 2.5 < float(left[0]) <= 4
    for name, value, field in (("CORTEX_PG_LEASE_SECONDS", "soon", "CORTEX_PG_LEASE_SECONDS"),
                               ("CORTEX_PG_LEASE_SECONDS", "-1", "CORTEX_PG_LEASE_SECONDS"),
                               ("CORTEX_PG_RENEW_SECONDS", "nan", "CORTEX_PG_RENEW_SECONDS"),
                               ("CORTEX_PG_RENEW_SECONDS", "9", "renew_seconds")):  # not below the lease (4)
        monkeypatch.setenv(name, value)
        with pytest.raises(cortex.ValidationError) as info:
            cortex.open(pg_dsn, actor=pg_actor)
        assert info.value.field == field
        monkeypatch.delenv(name)
        monkeypatch.setenv("CORTEX_PG_LEASE_SECONDS", "4")
