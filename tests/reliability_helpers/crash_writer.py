"""Writer subprocess of the crash test (tests/test_reliability_crash.py).

    python crash_writer.py STORE LOG SEED SESSION SYNC

Opens STORE (actor "crash-agent"; SYNC "1" opens with sync=True) and writes until
it is killed: single writes, `write_many` batches, updates, head updates,
tombstones, attests and memtable flushes, chosen by random.Random(SEED). The parent SIGKILLs it at a
random moment.

LOG gets one JSON line per event, appended with a single unbuffered os.write so a
line is in the file (page cache, which a SIGKILL does not lose) before the next
call starts; the session starts with a newline, which ends a line a kill may
have cut:

* {"op": "open", "root": ...} once the store is open;
* {"op": "begin", "tag": ..., "count": n} before each write / write_many: every
  item of that call carries the tag, so the parent can check the call was atomic
  even when the kill lands inside it;
* after a call returns (acknowledged): {"op": "write", "tag", "uris", "items",
  "root"} with each item's type and data; {"op": "update", "uri", "item", "root"};
  {"op": "tombstone", "uri", "root"}; {"op": "update_head", "uri", "root"};
  {"op": "attest", "root"}.

Nothing in this process catches errors: any exception ends it with a traceback on
stderr and exit status 1, which the parent reports.
"""

from __future__ import annotations

import json
import os
import random
import sys

import cortex
from cortex import Event, Fact, Frame, Goal, Pattern, Preference, Write

ACTOR = "crash-agent"
WORDS = ["alpha", "beta", "gamma", "delta", "émigré", "日本語", "naïve", "zeta", "🙂", "omega", "x" * 40]


def text(rng: random.Random, n: int = 6) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, n))) + f" #{rng.randrange(10**9)}"


def make_data(rng: random.Random):
    kind = rng.randrange(5)
    if kind == 0:
        return Fact(statement=text(rng, 30), subject=text(rng, 2), predicate=rng.choice(["is", "has", "uses"]), object=text(rng) if rng.random() < 0.5 else None)
    if kind == 1:
        return Event(
            kind=rng.choice(["payment", "dispatch", "observation"]), outcome=rng.choice(["success", "failure", "partial"]),
            counterparty=text(rng, 2), cost=("usd", rng.random() * 100), duration=rng.random() * 10, artifacts=[text(rng, 2) for _ in range(rng.randrange(3))],
            summary=text(rng, 20),
        )
    if kind == 2:
        return Preference(topic=text(rng, 2), polarity=rng.choice(["prefer", "avoid", "do", "dont", "neutral"]), strength=rng.random(), rationale=text(rng, 10))
    if kind == 3:
        return Goal(statement=text(rng, 10), status=rng.choice(["active", "paused", "completed"]), success_criteria=[text(rng, 3)])
    return Pattern(statement=text(rng, 10), derived_from=[text(rng, 1)], strength=rng.random(), coverage=rng.randrange(1000))


def describe(data) -> dict:
    return {"type": type(data).__name__, "data": data.to_dict()}


def main() -> None:
    store, log_path, seed, session, sync = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
    rng = random.Random(seed)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(record: dict) -> None:
        os.write(fd, (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))

    os.write(fd, b"\n")  # ends a line the previous session may have been killed in the middle of

    c = cortex.open(store, actor=ACTOR, sync=sync)
    log({"op": "open", "root": c.root(), "session": session})
    live: list[str] = []  # URIs (latest versions) of this session's live memories
    n = 0
    while True:
        n += 1
        tag = f"s{session}-{n}"
        frame = Frame("find", "tool", f"crash-{rng.randrange(20)}")
        r = rng.random()
        if r < 0.35 or not live:
            data = make_data(rng)
            confidence = rng.random()
            log({"op": "begin", "tag": tag, "count": 1})
            uri = c.write(data, frames=[frame], tags=[tag], importance=rng.randrange(11), confidence=confidence, source="crash-test")
            live.append(uri)
            log({"op": "write", "tag": tag, "uris": [uri], "items": [{**describe(data), "confidence": confidence, "source": "crash-test"}], "root": c.root()})
        elif r < 0.65:
            batch = [make_data(rng) for _ in range(rng.randint(2, 16))]
            log({"op": "begin", "tag": tag, "count": len(batch)})
            uris = c.write_many([Write(d, frames=[frame], tags=[tag], importance=rng.randrange(11), source="crash-test") for d in batch])
            live.extend(uris)
            log({"op": "write", "tag": tag, "uris": uris, "items": [describe(d) for d in batch], "root": c.root()})
        elif r < 0.80:
            i = rng.randrange(len(live))
            old = live[i]
            mtype = old.split("/")[2]
            data = make_data(rng)
            while type(data).__name__ != mtype:
                data = make_data(rng)
            uri = c.update(old, data)
            live[i] = uri
            log({"op": "update", "uri": uri, "item": describe(data), "root": c.root()})
        elif r < 0.90:
            uri = rng.choice(live)
            c.update_head(uri, importance=rng.randrange(11))
            log({"op": "update_head", "uri": uri, "root": c.root()})
        elif r < 0.95:
            uri = live.pop(rng.randrange(len(live)))
            c.tombstone(uri, "crash test")
            log({"op": "tombstone", "uri": uri, "root": c.root()})
        elif r < 0.97:
            # What a full memtable does in a long run: an SST file is written and the
            # WAL replaced, so some kills land in the middle of a flush.
            c._engine.storage.flush()
        else:
            cited = rng.sample(live, min(len(live), rng.randint(1, 3)))
            c.attest(cited, rng.choice(["success", "failure"]), rng.choice([None, "factual_error"]))
            log({"op": "attest", "root": c.root()})


if __name__ == "__main__":
    main()
