"""A reader beside a writer: `context()` in a reader process while another process ingests without pause.

    figure = beside.measure(store, workload, queries, seconds=10.0)

The writer must not change the store the other figures measure, so both run on a
copy: a temporary folder next to the store (`.<name>-beside-*`, removed at the end,
also on failure). RocksDB never rewrites a table file (`*.sst`, `*.blob`) once
written, so those are hard-linked into the copy (copied when the file system
refuses a link) and only the small files (MANIFEST, WAL, OPTIONS, ...) are copied:
the copy takes well under a second at 1M and doubles no disk space, and the
report says how long it took (`store_copy`). The copy holds the full workload, so
the reader's figure is at the size the other figures are.

Then, in order:

1. the reader (this process) opens the copy with `mode="r"`, counts its memories
   and warms up on the first `WARM_UP` queries;
2. a writer process starts (`python -c`, no multiprocessing: the harness may run
   as any `__main__`), takes `POOL` items of a second workload over the same objects
   (seed + 1, the pinned members left out), cut into batches of `BATCH`, opens the
   copy with `mode="rw"` (no ingest helper: one writer process beside one reader
   process), says it is ready and waits;
3. at "go", the writer calls `write_many` batch after batch, cycling through its
   pool (new memories each time) without pause, while the reader times
   `context()` over the query mix, in turn, for `seconds`;
4. at "stop", the writer ends its batch, closes the store and reports the memories
   it wrote and the seconds it wrote them in; the reader catches up and counts the
   memories again (`memories_after` = `memories_before` + the writer's memories
   when every write landed) and resolves the writer's last memory.

Counting the memories scans the type index (about 0.3 µs a memory: 3 s at 10M).
"""

from __future__ import annotations

import itertools
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

import cortex

from .calls import Call, latency, spread, timed_call
from .workload import BATCH, PINNED_MEMBERS, Workload

POOL = 20_000  # workload items the writer cycles through
WARM_UP = 50  # untimed reader calls before the writer starts
MAX_SECONDS = 600.0  # the longest measurement the harness takes
READY_TIMEOUT_S = 600.0  # for the writer to build its pool and open the copy
STOP_TIMEOUT_S = 300.0  # for the writer to end its batch and close the copy
IMMUTABLE_SUFFIXES = (".sst", ".blob")  # RocksDB files never rewritten in place


def copy_store(source: str, target: str) -> dict[str, Any]:
    """Copy the RocksDB store folder `source` to the new folder `target`, table files
    hard-linked (module docstring). Returns the seconds taken, the files linked and
    copied and the bytes those hold."""
    started = time.perf_counter()
    linked = copied = size = 0
    for folder, _, names in os.walk(source):
        destination = os.path.join(target, os.path.relpath(folder, source))
        os.makedirs(destination, exist_ok=True)
        for name in sorted(names):
            src, dst = os.path.join(folder, name), os.path.join(destination, name)
            size += os.path.getsize(src)
            if name.endswith(IMMUTABLE_SUFFIXES):
                try:
                    os.link(src, dst)
                    linked += 1
                    continue
                except OSError:
                    pass  # another file system, or links refused: copy it
            shutil.copy2(src, dst)
            copied += 1
    return {"seconds": time.perf_counter() - started, "files_linked": linked, "files_copied": copied, "bytes": size}


def measure(store: str, workload: Workload, queries: Sequence[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """The reader-beside-a-writer figure on a copy of the workload store `store`
    (module docstring); `queries` is the reader's mix, taken in turn."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= MAX_SECONDS:
        raise cortex.ValidationError("seconds", f"must be a number of seconds above 0 and at most {MAX_SECONDS:.0f}", seconds)
    if not queries:
        raise cortex.ValidationError("queries", "must hold at least one query", queries)
    actor = cortex.store_actor(store)
    source = os.path.abspath(store)
    folder = tempfile.mkdtemp(prefix=f".{os.path.basename(source)}-beside-", dir=os.path.dirname(source))
    try:
        copy = os.path.join(folder, "store")
        copied = copy_store(source, copy)
        return {"seconds": seconds, "store_copy": copied, **_measure_copy(copy, actor, workload, queries, seconds)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _measure_copy(path: str, actor: str, workload: Workload, queries: Sequence[dict[str, Any]], seconds: float) -> dict[str, Any]:
    with cortex.open(path, actor=actor, mode="r") as reader, tempfile.TemporaryFile("w+") as errors:
        before = reader.stats()["memories"]
        for query in queries[:WARM_UP]:
            reader.context(**query)
        code = "import sys; from cortex.bench.beside import write_until_stopped; write_until_stopped(sys.argv[1:])"
        args = [path, actor, str(workload.memories), str(workload.seed + 1)]
        # Standard error goes to a file: a pipe nobody reads during the run could fill.
        writer = subprocess.Popen([sys.executable, "-c", code, *args], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors)
        try:
            _expect_ready(writer, errors)
            assert writer.stdin is not None
            writer.stdin.write("go\n")
            writer.stdin.flush()
            calls: list[Call] = []
            started = time.perf_counter()
            for query in itertools.cycle(queries):
                calls.append(timed_call(reader, query))
                if time.perf_counter() - started >= seconds:
                    break
            measured = time.perf_counter() - started
            out, _ = writer.communicate("stop\n", timeout=STOP_TIMEOUT_S)
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
        if writer.returncode != 0 or not out.strip():
            raise cortex.StoreError(f"the beside-writer writer process failed (exit {writer.returncode}): {_tail(errors)}")
        wrote = json.loads(out.strip().splitlines()[-1])
        reader.refresh()
        after = reader.stats()["memories"]
        last = reader.resolve(wrote["last_uri"])
    return {
        "measured_seconds": measured,
        "memories_before": before,
        "memories_after": after,
        "last_write_visible": last.uri == wrote["last_uri"],
        "reader": {
            "calls": len(calls),
            "context_ms": latency([call.ms for call in calls]),
            "candidates": spread([call.candidates for call in calls]),
            "index_entries_read": spread([call.entries_read for call in calls]),
        },
        "writer": {
            "memories": wrote["memories"], "batches": wrote["batches"], "batch": BATCH, "seconds": wrote["seconds"],
            "memories_per_s": wrote["memories"] / wrote["seconds"] if wrote["seconds"] else 0.0, "ingest_helper": False,
        },
    }


def _expect_ready(writer: subprocess.Popen[str], errors: TextIO) -> None:
    """Wait for the writer to print "ready" (it has built its pool and opened the copy)."""
    assert writer.stdout is not None
    readable, _, _ = select.select([writer.stdout], [], [], READY_TIMEOUT_S)
    line = writer.stdout.readline().strip() if readable else ""
    if line != "ready":
        if writer.poll() is None:
            writer.kill()
        writer.wait()
        raise cortex.StoreError(f"the beside-writer writer process did not get ready (said {line!r}): {_tail(errors)}")


def _tail(errors: TextIO) -> str:
    """The end of what the writer wrote on standard error."""
    errors.seek(0)
    return errors.read().strip()[-2000:]


def write_until_stopped(argv: list[str]) -> None:
    """The writer process: `PATH ACTOR MEMORIES SEED` (module docstring, step 2–4).
    Prints "ready", waits for "go" on standard input, writes until "stop" (or the
    end of standard input), then prints its figures as one JSON line."""
    path, actor, memories, seed = argv[0], argv[1], int(argv[2]), int(argv[3])
    writes = Workload(memories, seed=seed).writes()
    items = list(itertools.islice(writes, PINNED_MEMBERS, PINNED_MEMBERS + POOL)) or list(Workload(memories, seed=seed).writes())
    batches = [items[i:i + BATCH] for i in range(0, len(items), BATCH)]
    stop = threading.Event()

    def wait_for_stop() -> None:
        sys.stdin.readline()  # "stop", or "" when the reader has gone
        stop.set()

    with cortex.open(path, actor=actor) as c:
        print("ready", flush=True)
        if sys.stdin.readline().strip() != "go":
            return
        threading.Thread(target=wait_for_stop, daemon=True).start()
        written = done = 0
        last = ""
        started = time.perf_counter()
        for batch in itertools.cycle(batches):
            uris = c.write_many(batch)
            written, done, last = written + len(uris), done + 1, uris[-1]
            if stop.is_set():
                break
        elapsed = time.perf_counter() - started
    print(json.dumps({"memories": written, "batches": done, "seconds": elapsed, "last_uri": last}), flush=True)
