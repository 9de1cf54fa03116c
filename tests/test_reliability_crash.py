"""Crash safety (docs/architecture.md "a crash leaves either all of it or none of it", docs/operations.md
"acknowledged writes survive a killed process").

A writer subprocess (`reliability_helpers/crash_writer.py`) ingests memories into a
real RocksDB store and logs every call it starts and every call that returned. The
test SIGKILLs it at random moments (some during interpreter start-up and store
open/recovery, most in the middle of writing), reopens the store in this process
after every kill, and checks:

* `verify()` is clean;
* every acknowledged URI resolves, with exactly the data that was written (lost or
  altered writes are counted and reported);
* tombstones that were acknowledged hold;
* every call is atomic: the memories of a `write` / `write_many` that was cut off
  by the kill are all there or none are (found by the tag every item carries);
* the OverallRoot recomputed from the raw `j/` records with
  sha256(b"cortex.journal.v1" + prev + entry) equals `root()`, the journal
  sequence is 1..n, and every root the writer saw after an acknowledged call is a
  state of that chain, in order.

`CORTEX_CRASH_KILLS` sets the number of kills (default 20); `CORTEX_CRASH_SEED`
the seed (default 20250101). The run ends with a summary line:
"reliability: N kills, M acknowledged writes, L lost".
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time

import cortex
from cortex import NotFound

from reliability_helpers.common import emit, helper_cmd, journal_chain, subprocess_env, REPO

ACTOR = "crash-agent"
KILLS = int(os.environ.get("CORTEX_CRASH_KILLS", "20"))
SEED = int(os.environ.get("CORTEX_CRASH_SEED", "20250101"))
READY_TIMEOUT_S = 120.0  # generous: the machine may be busy; this is a hang guard, not a timing assertion


class Ledger:
    """What the writer's log says was acknowledged, across every session so far."""

    def __init__(self) -> None:
        self.expected: dict[str, dict] = {}  # uri -> {"type", "data"}
        self.tombstoned: set[str] = set()  # uris whose memory was tombstoned (acknowledged)
        self.begun: dict[str, int] = {}  # tag -> item count of the call
        self.acked_tags: set[str] = set()
        self.roots: list[str] = []  # roots seen after acknowledged calls, in log order
        self.calls = 0
        self.lines_read = 0
        self.torn_lines = 0
        self.checked_uris = 0  # expected[:checked_uris] were checked after an earlier kill
        self.checked_tags = 0

    def read(self, path) -> None:
        if not os.path.exists(path):
            return
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        # The last element is "" after a complete line, or a torn tail: the kill can
        # only cut the line that was being written, and that call is not acknowledged.
        for line in lines[self.lines_read : len(lines) - 1]:
            self.lines_read += 1
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                # A line cut by a kill, closed by the next session's leading newline.
                self.torn_lines += 1
                continue
            op = rec["op"]
            if op == "open":
                self.roots.append(rec["root"])
            elif op == "begin":
                self.begun[rec["tag"]] = rec["count"]
            else:
                self.calls += 1
                self.roots.append(rec["root"])
                if op == "write":
                    self.acked_tags.add(rec["tag"])
                    for uri, item in zip(rec["uris"], rec["items"], strict=True):
                        self.expected[uri] = item
                elif op == "update":
                    self.expected[rec["uri"]] = rec["item"]
                elif op == "tombstone":
                    self.tombstoned.add(rec["uri"])


def _wait_for_ack(proc: subprocess.Popen, log_path, offset: int) -> bool:
    """Wait until the writer has logged an acknowledged call past byte `offset` of the
    log. False if the process ended first."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with open(log_path, "rb") as f:
                f.seek(offset)
                tail = f.read()
        except FileNotFoundError:
            tail = b""
        if any(b'"root"' in line and b'"op": "open"' not in line for line in tail.split(b"\n")[:-1]):
            return True
        time.sleep(0.005)
    raise AssertionError(f"writer made no acknowledged write within {READY_TIMEOUT_S} s")


def _check_store(store, ledger: Ledger, kill: int, rng: random.Random, full: bool) -> tuple[list[str], set[str]]:
    """Reopen the store and check it against the ledger. Returns (problems, lost URIs).

    Every acknowledged write is checked after the kill that follows it; older ones
    are sampled (500 of them) after later kills, and all of them after the last."""
    problems: list[str] = []
    lost: set[str] = set()
    with cortex.open(store, actor=ACTOR) as c:
        bad = c.verify()
        if bad:
            problems.append(f"kill {kill}: verify() is not clean: {bad[:5]}")

        seq, root, chain_roots = journal_chain(c)
        if root != c.root():
            problems.append(f"kill {kill}: root() {c.root()} != root recomputed from j/ records {root}")
        if c.stats()["journal_seq"] != seq:
            problems.append(f"kill {kill}: stats() journal_seq {c.stats()['journal_seq']} != {seq} j/ records")
        position = {r: i for i, r in enumerate(chain_roots)}
        last = 0
        for r in ledger.roots:
            if r not in position:
                problems.append(f"kill {kill}: acknowledged root {r} is not a state of the recovered journal chain")
                continue
            if position[r] < last:
                problems.append(f"kill {kill}: acknowledged root {r} is out of order in the recovered chain")
            last = max(last, position[r])

        uris = list(ledger.expected)
        fresh, old = uris[ledger.checked_uris :], uris[: ledger.checked_uris]
        if not full and len(old) > 500:
            old = rng.sample(old, 500)
        ledger.checked_uris = len(uris)
        for uri in old + fresh:
            item = ledger.expected[uri]
            try:
                m = c.resolve(uri)
            except NotFound:
                lost.add(uri)
                problems.append(f"kill {kill}: acknowledged {uri} is lost (NotFound)")
                continue
            got = json.loads(json.dumps(m.data.to_dict(), ensure_ascii=False))
            if m.type.type_name != item["type"] or got != item["data"] or any(getattr(m, f) != item[f] for f in ("confidence", "source") if f in item):
                lost.add(uri)
                problems.append(f"kill {kill}: {uri} resolves to other data: {got} != {item['data']}")
        for uri in ledger.tombstoned:
            try:
                if not c.resolve(uri).tombstoned:
                    problems.append(f"kill {kill}: acknowledged tombstone of {uri} is lost")
            except NotFound:
                lost.add(uri)
                problems.append(f"kill {kill}: tombstoned {uri} is lost (NotFound)")

        tags = list(ledger.begun)
        fresh_tags, old_tags = tags[ledger.checked_tags :], tags[: ledger.checked_tags]
        if not full and len(old_tags) > 200:
            old_tags = rng.sample(old_tags, 200)
        ledger.checked_tags = len(tags)
        for tag in old_tags + fresh_tags:
            count = ledger.begun[tag]
            found = len(c.find(tags=[tag], limit=10_000, include_tombstoned=True))
            if tag in ledger.acked_tags and found != count:
                problems.append(f"kill {kill}: acknowledged call {tag} has {found} of its {count} memories")
            elif found not in (0, count):
                problems.append(f"kill {kill}: call {tag} cut by the kill is torn: {found} of {count} memories")
    return problems, lost


def test_sigkill_during_ingest_loses_no_acknowledged_write(tmp_path, request):
    rng = random.Random(SEED)
    store = tmp_path / "store"
    log_path = tmp_path / "writer.log"
    ledger = Ledger()
    problems: list[str] = []
    lost: set[str] = set()
    early = 0
    for kill in range(1, KILLS + 1):
        ledger.read(log_path)
        offset = log_path.stat().st_size if log_path.exists() else 0
        stderr_path = tmp_path / f"writer-{kill}.err"
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(
                helper_cmd("crash_writer.py", store, log_path, rng.randrange(2**32), kill, int(rng.random() < 0.25)),
                cwd=REPO, env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=err,
            )
            try:
                if rng.random() < 0.25:
                    # Anywhere from interpreter start-up through open (WAL recovery) to
                    # the first writes.
                    early += 1
                    time.sleep(rng.uniform(0.05, 1.5))
                else:
                    alive = _wait_for_ack(proc, log_path, offset)
                    assert alive, f"writer exited with {proc.returncode} before writing: {stderr_path.read_text()}"
                    time.sleep(rng.uniform(0.0, 0.3))
                assert proc.poll() is None, f"writer exited by itself ({proc.returncode}): {stderr_path.read_text()}"
                proc.send_signal(signal.SIGKILL)
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
        assert proc.returncode == -signal.SIGKILL, f"writer ended with {proc.returncode}: {stderr_path.read_text()}"

        ledger.read(log_path)
        found, lost_now = _check_store(store, ledger, kill, rng, full=kill == KILLS)
        problems += found
        lost |= lost_now

    summary = (
        f"reliability: {KILLS} kills ({early} during start-up/open), {len(ledger.expected)} acknowledged writes "
        f"in {ledger.calls} acknowledged calls, {len(ledger.begun) - len(ledger.acked_tags)} calls cut by a kill "
        f"checked for atomicity, {len(lost)} lost"
    )
    emit(request.config, summary)
    assert ledger.expected, "the writer never acknowledged a write"
    assert ledger.torn_lines <= KILLS
    assert not problems, summary + "\n" + "\n".join(problems[:30])
