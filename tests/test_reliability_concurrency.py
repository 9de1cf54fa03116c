"""Concurrency (docs/operations.md): one writer process per store, `mode="r"` readers beside
it, many reader threads inside one process, and `StoreLocked` for a second writer.

Torn reads are detected by construction: the writer writes batch n as one
`write_many` of K memories that all share the frame ("find", "tool", "batch-<n>"),
and logs the root after every call. A `context()` for batch n must return 0 or K
memories, never a part; and since the bundle carries the root it was read at, the
count must be exactly what that root implies (K if batch n was committed at that
root, else 0), and the root must be one the writer actually produced. The writer
also rewrites the first memory of the previous batch (a new version with other
token counts), so a reader that mixed an index entry of one state with a head of
another would see `bundle.tokens[id] != memory.tokens[form]`.

The writers also flush the memtable every 10 batches (what a long-running
writer's full memtable does), so reads also run while WAL files are replaced by
SST files. Loops are bounded by work (a fixed number of batches), not by time.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
import traceback

import pytest

import cortex
from cortex import Fact, Frame, StoreLocked, Write

from reliability_helpers.common import REPO, emit, helper_cmd, subprocess_env

ACTOR = "conc-agent"
K = 8
WAIT_S = 300  # hang guard only


def _read_log(path) -> tuple[dict[str, int], dict]:
    roots: dict[str, int] = {}
    last = None
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        roots.setdefault(rec["root"], rec["b"])
        last = rec
    return roots, last


def _wait_for(path, proc: subprocess.Popen, what: str, *, line: bool = False) -> None:
    """Wait until `path` exists (with `line`: and holds a complete line)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        if path.exists():
            text = path.read_text()
            if not line or text.endswith("\n"):
                return
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited with {proc.returncode} before it was ready: {proc.stderr.read().decode() if proc.stderr else ''}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not ready after {WAIT_S} s")
        time.sleep(0.005)


def _check_calls(calls, roots: dict[str, int], who: str) -> list[str]:
    """Each (root, n, count) must match the writer's state at that root."""
    problems = []
    for root, n, count in calls:
        if root not in roots:
            problems.append(f"{who}: bundle root {root} was never produced by the writer")
            continue
        want = K if n < roots[root] else 0
        if count != want:
            kind = "torn read" if count not in (0, K) else "inconsistent with its root"
            problems.append(f"{who}: {kind}: batch-{n} has {count} memories at root {root[:12]}… (committed batches {roots[root]}, want {want})")
    return problems


@pytest.mark.rocksdb_only('the helper processes are given directory paths (tests/test_backends_leases.py has the PostgreSQL readers)')
def test_writer_process_and_two_reader_processes(tmp_path, request):
    batches = 250
    store = tmp_path / "store"
    log = tmp_path / "writer.log"
    go, stop = tmp_path / "go", tmp_path / "stop"
    env = subprocess_env()
    writer = subprocess.Popen(helper_cmd("concurrent_writer.py", store, log, go, batches, K), cwd=REPO, env=env, stderr=subprocess.PIPE)
    readers = []
    try:
        _wait_for(log, writer, "writer", line=True)
        # A reader in this process too: its view must not move until refresh().
        watcher = cortex.open(store, actor=ACTOR, mode="r")
        initial_root = watcher.root()
        for i in range(2):
            ready = tmp_path / f"ready-{i}"
            proc = subprocess.Popen(
                helper_cmd("concurrent_reader.py", store, tmp_path / f"reader-{i}.json", ready, stop, 1000 + i, K),
                cwd=REPO, env=env, stderr=subprocess.PIPE,
            )
            readers.append(proc)
            _wait_for(ready, proc, f"reader {i}")
        go.touch()
        _, writer_err = writer.communicate(timeout=WAIT_S)
        assert writer.returncode == 0, writer_err.decode()
        stop.touch()
        for i, proc in enumerate(readers):
            _, err = proc.communicate(timeout=WAIT_S)
            assert proc.returncode == 0, f"reader {i}: {err.decode()}"
    finally:
        for proc in [writer, *readers]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    roots, last = _read_log(log)
    assert last.get("done") and last["b"] == batches
    final_root = last["root"]

    # The in-process reader has not caught up yet; refresh() brings it to the end.
    assert watcher.root() == initial_root
    watcher.refresh()
    assert watcher.root() == final_root
    assert len(watcher.context(verb="find", objects={"tool": f"batch-{batches - 1}"}, budget_tokens=4000).memories()) == K
    watcher.close()

    problems: list[str] = []
    total_calls = 0
    seen_roots: set[str] = set()
    for i in range(2):
        result = json.loads((tmp_path / f"reader-{i}.json").read_text())
        problems += [f"reader {i}: {e}" for e in result["errors"]]
        problems += _check_calls(result["calls"], roots, f"reader {i}")
        total_calls += len(result["calls"])
        seen_roots |= {root for root, _, _ in result["calls"]}
        if result.get("root_after_refresh") != final_root:
            problems.append(f"reader {i}: after refresh() root is {result.get('root_after_refresh')}, writer ended at {final_root}")
        if result.get("final_counts") != [K] * batches + [0]:
            problems.append(f"reader {i}: after refresh() batch counts are {result.get('final_counts')}")
    emit(request.config, f"reliability-concurrency: 2 reader processes made {total_calls} context() calls beside a writer process, saw {len(seen_roots)} distinct roots of {len(roots)}, {len(problems)} problems")
    assert not problems, "\n".join(problems[:30])
    assert total_calls > 0
    # Both readers started before the writer's first batch and stopped after its
    # last one, so together they must have observed the store move.
    assert len(seen_roots) >= 2, "the readers never observed a write (the test proved nothing)"


def test_eight_reader_threads_and_one_writer_thread(tmp_path, request):
    batches = 150
    c = cortex.open(tmp_path / "store", actor=ACTOR)
    roots: dict[str, int] = {c.root(): 0}
    acked: list[str] = []
    committed = [0]
    done = threading.Event()
    errors: list[str] = []
    calls: list[tuple[str, int, int]] = []
    counts = {"context": 0, "find": 0, "resolve": 0, "stats": 0}
    lock = threading.Lock()

    def writer() -> None:
        try:
            first: list[str] = []
            for n in range(batches):
                frame = Frame("find", "tool", f"batch-{n}")
                items = [Write(Fact(statement=f"batch {n} item {i}", subject=f"s{n}", predicate="in"), frames=[frame], tags=[f"batch-{n}"]) for i in range(K)]
                uris = c.write_many(items)
                first.append(uris[0])
                roots[c.root()] = n + 1
                acked.extend(uris)
                committed[0] = n + 1
                if n % 10 == 9:
                    c._engine.storage.flush()  # memtable -> SST under the readers, as a full memtable would
                if n:
                    uri = c.update(first[n - 1], Fact(statement=f"batch {n - 1} revised " + "more words " * (n % 7 + 1), subject=f"s{n - 1}", predicate="in"))
                    roots[c.root()] = n + 1
                    acked.append(uri)
                    c.update_head(uri, importance=n % 11)
                    roots[c.root()] = n + 1
        except BaseException:
            errors.append("writer: " + traceback.format_exc())
        finally:
            done.set()

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        mine: list[tuple[str, int, int]] = []
        try:
            i = 0
            while not done.is_set():
                i += 1
                n = max(0, committed[0] + rng.randint(-3, 1))
                b = c.context(verb="find", objects={"tool": f"batch-{n}"}, budget_tokens=4000, form=rng.choice(["short", "medium", "full"]))
                mems = b.memories()
                mine.append((b.root, n, len(mems)))
                for m in mems:
                    if b.tokens[m.id] != m.tokens[b.form]:
                        errors.append(f"torn: index tokens {b.tokens[m.id]} != head tokens {m.tokens[b.form]} for {m.uri}")
                found = len(c.find(tags=[f"batch-{n}"], limit=100))
                if found not in (0, K):
                    errors.append(f"torn find(): batch-{n} has {found} memories")
                if acked:
                    c.resolve(acked[rng.randrange(len(acked))])
                if i % 25 == 0:
                    c.stats()
                with lock:
                    counts["context"] += 1
                    counts["find"] += 1
                    counts["resolve"] += bool(acked)
                    counts["stats"] += i % 25 == 0
        except BaseException:
            errors.append(f"reader {seed}: " + traceback.format_exc())
        with lock:
            calls.extend(mine)

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    w = threading.Thread(target=writer)
    w.start()
    w.join(WAIT_S)
    done.set()
    for t in threads:
        t.join(WAIT_S)
    try:
        assert not w.is_alive() and not any(t.is_alive() for t in threads), "a thread hung"
        problems = errors + _check_calls(calls, roots, "thread")
        emit(request.config, f"reliability-concurrency: 8 reader threads made {counts['context']} context(), {counts['find']} find(), {counts['resolve']} resolve() calls beside 1 writer thread ({batches} batches), {len(problems)} problems")
        assert not problems, "\n".join(problems[:30])
        assert c.verify() == []
        assert len(set(r for r, _, _ in calls)) >= 2, "the readers never observed a write (the test proved nothing)"
    finally:
        c.close()


_SECOND_WRITER = """
import sys, cortex
try:
    cortex.open(sys.argv[1], actor=sys.argv[2]).close()
    print("opened")
except Exception as exc:
    print(type(exc).__name__)
    print(str(exc))
"""


@pytest.mark.rocksdb_only('the child process is given the directory path (tests/test_backends_leases.py has two writer processes)')
def test_second_writer_process_gets_store_locked(tmp_path):
    store = tmp_path / "store"
    with cortex.open(store, actor=ACTOR) as c:
        c.write(Fact(statement="held", subject="lock", predicate="is"))
        out = subprocess.run(
            [sys.executable, "-c", _SECOND_WRITER, str(store), ACTOR],
            cwd=REPO, env=subprocess_env(), capture_output=True, text=True, timeout=WAIT_S,
        )
        assert out.returncode == 0, out.stderr
        name, _, message = out.stdout.partition("\n")
        assert name == "StoreLocked", out.stdout + out.stderr
        assert 'mode="r"' in message
        # A reader beside the writer is fine, from this process too.
        with cortex.open(store, actor=ACTOR, mode="r") as r:
            assert r.root() == c.root()
        c.write(Fact(statement="still writable", subject="lock", predicate="is"))
        assert c.verify() == []


@pytest.mark.rocksdb_only("spells one directory five ways; on PostgreSQL a store is named by its DSN")
def test_a_second_writer_under_another_spelling_of_the_path_gets_store_locked(tmp_path, monkeypatch):
    # Before the per-process registry, each of these opened a second writer, and
    # writing through both then closing both left a store that no longer opened
    # ("Corruption ... .sst: No such file").
    monkeypatch.chdir(tmp_path)
    (tmp_path / "alias").symlink_to(tmp_path / "store")
    a = cortex.open("store", actor=ACTOR)
    try:
        for i in range(100):
            a.write(Fact(statement=f"A{i}", subject="s", predicate="p"))
        for spelling in ("store", "./store", "store/", str(tmp_path / "store"), "alias", "./alias/"):
            with pytest.raises(StoreLocked, match="another handle of this process"):
                cortex.open(spelling, actor=ACTOR)
        a.write(Fact(statement="after the refused opens", subject="s", predicate="p"))
        root = a.root()
    finally:
        a.close()
    with cortex.open("./alias/", actor=ACTOR) as again:
        assert again.root() == root
        assert again.verify() == []
        assert again.stats()["memories"] == 101


def test_second_writer_handle_in_the_same_process_gets_store_locked(tmp_path):
    store = tmp_path / "store"
    with cortex.open(store, actor=ACTOR) as c:
        root = c.root()
        with pytest.raises(StoreLocked, match='mode="r"'):
            cortex.open(store, actor=ACTOR)
        # The failed open did not disturb the first handle.
        c.write(Fact(statement="after the failed open", subject="lock", predicate="is"))
        assert c.root() != root
        assert c.verify() == []
    # Once closed, the store can be opened for writing again.
    with cortex.open(store, actor=ACTOR) as again:
        assert again.verify() == []
