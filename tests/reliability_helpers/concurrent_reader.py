"""Reader process of the multi-process concurrency test.

    python concurrent_reader.py STORE OUT READY_FILE STOP_FILE SEED K

Opens STORE with mode="r" beside the running writer, creates READY_FILE, then
until STOP_FILE exists calls `context(verb="find", objects={"tool": "batch-<n>"},
budget_tokens=4000)` for batches near the newest one it has seen complete, and
records (root, n, count) for every call; it also checks each survivor's token count
in the index (`bundle.tokens`) against its head (`m.tokens`). When STOP_FILE
appears it records `root()` before and after `refresh()` and the count of every
batch after the refresh, then writes one JSON document to OUT. Errors are
recorded, not raised, so the parent sees all of them.
"""

from __future__ import annotations

import json
import os
import random
import sys
import traceback

import cortex


def main() -> None:
    store, out, ready, stop, seed, k = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
    rng = random.Random(seed)
    calls: list[tuple[str, int, int]] = []
    errors: list[str] = []
    result: dict = {"calls": calls, "errors": errors}
    try:
        with cortex.open(store, actor="conc-agent", mode="r") as c:
            open(ready, "w").close()
            frontier = 0
            while not os.path.exists(stop):
                n = max(0, frontier + rng.randint(-3, 2))
                try:
                    b = c.context(verb="find", objects={"tool": f"batch-{n}"}, budget_tokens=4000)
                except Exception:
                    errors.append(traceback.format_exc())
                    continue
                mems = b.memories()
                calls.append((b.root, n, len(mems)))
                if len(mems) == k:
                    frontier = max(frontier, n + 1)
                for m in mems:
                    if b.tokens[m.id] != m.tokens[b.form]:
                        errors.append(f"torn: index tokens {b.tokens[m.id]} != head tokens {m.tokens[b.form]} for {m.uri} at root {b.root}")
            result["root_before_refresh"] = c.root()
            c.refresh()
            result["root_after_refresh"] = c.root()
            counts = []
            n = 0
            while True:
                got = len(c.context(verb="find", objects={"tool": f"batch-{n}"}, budget_tokens=4000).memories())
                counts.append(got)
                if not got:
                    break
                n += 1
            result["final_counts"] = counts
    except Exception:
        errors.append(traceback.format_exc())
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
