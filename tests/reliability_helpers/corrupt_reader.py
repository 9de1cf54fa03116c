"""Reader subprocess of the file-level corruption test.

    python corrupt_reader.py STORE ACTOR EXPECTED_JSON OUT_JSON

Opens a store whose SST files have flipped bytes and runs every read on it, so that
a crash (a segfault or an abort in RocksDB) kills this process, not pytest. For
every call it records "ok" (with whether the result equals EXPECTED_JSON's), or the
exception's class, whether it is a CortexError, and for a CorruptRecord the key
it names (hex). Writes one JSON document to OUT_JSON:

    {"open": [first, second],      # two opens as a follower (mode "r")
     "resolve": {uri: outcome}, "memories", "context", "find", "stats", "verify",
                                   # the reads, on the first open if it succeeded
     "open_rw": [first, second]}   # then two opens as the writer, each closed at once

A failed open is tried a second time: it must fail the same way (a failed open
releases the store).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any

import cortex
from cortex import CortexError, CorruptRecord


def outcome(fn: Callable[[], Any], expected: Any = None) -> dict[str, Any]:
    try:
        got = fn()
    except CorruptRecord as exc:
        return {"error": "CorruptRecord", "cortex": True, "key": exc.key.hex(), "message": str(exc)[:300]}
    except CortexError as exc:
        return {"error": type(exc).__name__, "cortex": True, "message": str(exc)[:300]}
    except Exception as exc:  # what the test is looking for: anything else
        return {"error": type(exc).__name__, "cortex": False, "message": str(exc)[:300]}
    return {"ok": True, "equal": expected is None or got == expected, "value": got if expected is None else None}


def opened(store: str, actor: str, mode: str, keep: list[cortex.Cortex]) -> dict[str, Any]:
    """One open; a store that opens is appended to `keep` (the caller closes it)."""

    def call() -> None:
        keep.append(cortex.open(store, actor=actor, mode=mode))

    return outcome(call)


def main() -> None:
    store, actor, expected_path, out = sys.argv[1:5]
    with open(expected_path) as f:
        expected = json.load(f)
    result: dict[str, Any] = {}

    handles: list[cortex.Cortex] = []
    result["open"] = [opened(store, actor, "r", handles), opened(store, actor, "r", handles)]
    if handles:
        c = handles[0]
        result["resolve"] = {
            uri: outcome(lambda uri=uri: c.resolve(uri).data.to_dict(), want) for uri, want in expected["resolve"].items()
        }
        result["memories"] = outcome(lambda: [m.data.to_dict() for m in c.memories()], expected["memories"])
        now = datetime.fromisoformat(expected["now"])
        result["context"] = outcome(lambda: [m.id for m in c.context(verb="find", objects={"tool": "t"}, budget_tokens=4000, now=now).memories()], expected["context"])
        result["find"] = outcome(lambda: [m.data.to_dict() for m in c.find(tags=["t1"], limit=10_000, order_by="created")], expected["find"])
        result["stats"] = outcome(lambda: c.stats()["memories"], expected["count"])
        result["verify"] = outcome(lambda: c.verify())
    for handle in handles:
        handle.close()

    writers: list[cortex.Cortex] = []
    result["open_rw"] = []
    for _ in range(2):
        result["open_rw"].append(opened(store, actor, "rw", writers))
        while writers:
            writers.pop().close()

    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
