"""A failed `open()` leaves nothing behind (issue 10, item 5).

`cortex.open()` takes the store's writer lock before it reads the store's settings
and journal head. If one of those is damaged, or the store belongs to another
actor, the open fails after the lock was taken; it must release it, so that the
next open in the same process fails for the same reason (not with a misleading
`StoreLocked`) and an open after the repair succeeds.

The damage is written through the store's own backend (`c._engine.storage`), and
repaired through a bare writer handle of the backend, opened without cortex: that
handle could not open if a failed `cortex.open()` had kept the lock.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import cortex
from cortex import ActorMismatch, CorruptRecord, Fact, Frame, StoreError
from cortex.storage.rocksdb import open_rocksdb

ACTOR = "agent-1"
GPU = Frame("acquire", "service", "gpu")


def make_store(path: Path) -> tuple[str, list[str]]:
    """A store with three memories; returns its root and the memories' URIs."""
    with cortex.open(path, actor=ACTOR, entropy=random.Random(3).randbytes) as c:
        uris = [c.write(Fact(statement=f"gpu costs {n} USD", subject="gpu", predicate="price"), frames=[GPU]) for n in (1, 2, 3)]
        return c.root(), uris


def damage(path: Path, key: bytes, value: bytes) -> bytes:
    """Overwrite `key` through the store's own handle; return the value it held."""
    with cortex.open(path, actor=ACTOR) as c:
        original = c._engine.storage.get(key)
        assert original is not None, key
        c._engine.storage.write({key: value})
    return original


def repair(path: Path, key: bytes, value: bytes) -> None:
    """Put `value` back with a bare RocksDB writer (StoreLocked if the lock leaked)."""
    storage = open_rocksdb(str(path), read_only=False, cache_mb=8, sync=False)
    try:
        storage.write({key: value})
    finally:
        storage.close()


def open_error(path: Path, **options: str) -> cortex.CortexError:
    """The error `cortex.open(path, ...)` raises (the test fails if it opens)."""
    with pytest.raises(cortex.CortexError) as info:
        cortex.open(path, **{"actor": ACTOR, **options})
    return info.value


# A damaged setting read while the store opens, and what open() must raise for it.
DAMAGED_SETTINGS = [
    pytest.param(b"meta/journal", b"\x00garbage", CorruptRecord, "journal head of 8 bytes, not 40", id="journal-head-garbage"),
    pytest.param(b"meta/journal", b"", CorruptRecord, "journal head of 0 bytes, not 40", id="journal-head-empty"),
    pytest.param(b"meta/journal", bytes(41), CorruptRecord, "journal head of 41 bytes, not 40", id="journal-head-41-bytes"),
    pytest.param(b"meta/clock_high", b"\x01" * 7, CorruptRecord, "must be 8 bytes", id="clock-high-7-bytes"),
    pytest.param(b"meta/schema", b"99", StoreError, "has schema version 99; this cortex reads version 1", id="schema-99"),
]


@pytest.mark.parametrize("key, value, error, detail", DAMAGED_SETTINGS)
def test_a_damaged_store_raises_the_same_error_on_every_open(tmp_path, key, value, error, detail):
    path = tmp_path / "s"
    root, uris = make_store(path)
    original = damage(path, key, value)

    first = open_error(path)
    second = open_error(path)  # the first failure released the lock: not StoreLocked
    follower = open_error(path, mode="r")
    for exc in (first, second, follower):
        assert type(exc) is error, f"{type(exc).__name__}: {exc}"
        assert detail in str(exc)
        if error is CorruptRecord:
            assert exc.key == key
    assert str(second) == str(first) == str(follower)

    repair(path, key, original)
    with cortex.open(path, actor=ACTOR) as c:
        assert c.root() == root
        assert [c.resolve(u).data.statement for u in uris] == ["gpu costs 1 USD", "gpu costs 2 USD", "gpu costs 3 USD"]
        assert c.verify() == []


def test_a_store_of_another_actor_raises_actor_mismatch_every_time_then_opens_for_its_own(tmp_path):
    path = tmp_path / "s"
    root, uris = make_store(path)

    errors = [open_error(path, actor="agent-2"), open_error(path, actor="agent-2"), open_error(path, actor="agent-2", mode="r")]
    for exc in errors:
        assert type(exc) is ActorMismatch
        assert str(exc) == f"store {str(path)!r} belongs to actor {ACTOR!r}, not 'agent-2'"

    # The failed opens released the writer lock and wrote nothing: the owner opens
    # the store as it was, and can write to it.
    with cortex.open(path, actor=ACTOR) as c:
        assert c.root() == root
        assert c.actor == ACTOR
        new = c.write(Fact(statement="gpu costs 4 USD", subject="gpu", predicate="price"), frames=[GPU])
        assert [m.uri for m in c.memories()] == [*uris, new]
        assert c.verify() == []
