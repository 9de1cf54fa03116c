"""Writer process of the multi-process concurrency test.

    python concurrent_writer.py STORE LOG GO_FILE BATCHES K

Opens STORE (mode "rw", actor "conc-agent"), logs {"b": 0, "root": ...}, waits for
GO_FILE to exist (the readers are running), then writes BATCHES batches. Batch n is
one `write_many` of K Facts that all carry the frame ("find", "tool", "batch-<n>")
and the tag "batch-<n>"; after it, the first memory of batch n-1 gets a new version
with a longer statement (so its token counts change: a reader that mixed an old
index entry with a new head would see it). Every 10 batches it flushes the
memtable, so the readers also run while WAL and SST files come and go. After every call it logs
{"b": batches committed, "root": root()}; the last line is {"done": true, ...}.
"""

from __future__ import annotations

import json
import os
import sys
import time

import cortex
from cortex import Fact, Frame, Write


def main() -> None:
    store, log_path, go_file, batches, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(record: dict) -> None:
        os.write(fd, (json.dumps(record, sort_keys=True) + "\n").encode())

    with cortex.open(store, actor="conc-agent") as c:
        log({"b": 0, "root": c.root()})
        while not os.path.exists(go_file):
            time.sleep(0.005)
        first: list[str] = []
        for n in range(batches):
            frame = Frame("find", "tool", f"batch-{n}")
            items = [Write(Fact(statement=f"batch {n} item {i}", subject=f"s{n}", predicate="in"), frames=[frame], tags=[f"batch-{n}"], importance=i % 11) for i in range(k)]
            uris = c.write_many(items)
            first.append(uris[0])
            log({"b": n + 1, "root": c.root()})
            if n % 10 == 9:
                # Stands in for the memtable filling up, which a long-running agent's
                # writer reaches after ~64 MB of writes: RocksDB writes an SST file,
                # starts a new WAL file and deletes the old one under the readers.
                c._engine.storage.flush()
            if n:
                c.update(first[n - 1], Fact(statement=f"batch {n - 1} item 0, revised " + "with more words " * (n % 7 + 1), subject=f"s{n - 1}", predicate="in"))
                log({"b": n + 1, "root": c.root()})
        log({"done": True, "b": batches, "root": c.root()})


if __name__ == "__main__":
    main()
