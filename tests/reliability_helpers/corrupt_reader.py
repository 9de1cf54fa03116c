"""Reader subprocess of the file-level corruption test.

    python corrupt_reader.py STORE ACTOR EXPECTED_JSON OUT_JSON

Opens a store whose SST files have flipped bytes and runs every read on it, so that
a crash (a segfault or an abort in RocksDB) kills this process, not pytest. For
every call it records "ok" (with whether the result equals EXPECTED_JSON's), or the
exception's class, whether it is a CortexError, and for a CorruptRecord the key
it names (hex). Writes one JSON document to OUT_JSON.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime

import cortex
from cortex import CortexError, CorruptRecord


def outcome(fn, expected=None):
    try:
        got = fn()
    except CorruptRecord as exc:
        return {"error": "CorruptRecord", "cortex": True, "key": exc.key.hex()}
    except CortexError as exc:
        return {"error": type(exc).__name__, "cortex": True, "message": str(exc)[:200]}
    except Exception as exc:  # what the test is looking for: anything else
        return {"error": type(exc).__name__, "cortex": False, "message": str(exc)[:200]}
    return {"ok": True, "equal": expected is None or got == expected, "value": got if expected is None else None}


def main() -> None:
    store, actor, expected_path, out = sys.argv[1:5]
    expected = json.load(open(expected_path))
    result: dict = {}
    opened = outcome(lambda: cortex.open(store, actor=actor, mode="r"))
    if "ok" not in opened:
        result["open"] = opened
    else:
        c = cortex.open(store, actor=actor, mode="r")
        result["open"] = {"ok": True, "equal": True}
        result["resolve"] = {
            uri: outcome(lambda uri=uri: c.resolve(uri).data.to_dict(), want) for uri, want in expected["resolve"].items()
        }
        result["memories"] = outcome(lambda: [m.data.to_dict() for m in c.memories()], expected["memories"])
        now = datetime.fromisoformat(expected["now"])
        result["context"] = outcome(lambda: [m.id for m in c.context(verb="find", objects={"tool": "t"}, budget_tokens=4000, now=now).memories()], expected["context"])
        result["find"] = outcome(lambda: [m.data.to_dict() for m in c.find(tags=["t1"], limit=10_000, order_by="created")], expected["find"])
        result["stats"] = outcome(lambda: c.stats()["memories"], expected["count"])
        result["verify"] = outcome(lambda: c.verify())
        c.close()
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
