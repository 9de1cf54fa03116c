"""`cortex.migrate(src, dst)` (docs/postgresql.md): a store copied between backends, both ways,
byte for byte, checked at the end; streamed in bounded batches; refused into a store
that holds anything; an interrupted copy named by verify() and completed by a rerun."""

from __future__ import annotations

import random
import threading
from datetime import datetime, timedelta, timezone

import pytest

import cortex
import cortex.interop.migrate as migrate_module
from cortex import Event, Fact, Frame, Goal, Identity, Preference, Write

pytest_plugins = ["pgfixture"]  # pg_dsn, pg_actor (a no-op once tests/conftest.py lists it)

T0 = datetime(2025, 5, 1, tzinfo=timezone.utc)
GPU = Frame("acquire", "service", "gpu")
ASK = {"verb": "acquire", "objects": {"service": "gpu"}, "budget_tokens": 300, "now": T0 + timedelta(days=3)}


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def populate(c: cortex.Cortex, clock: Clock, n: int = 30) -> None:
    """Memories of several types, versions, head changes, a tombstone and feedback."""
    c.write(Identity(name="agent-9"))
    goal = c.write(Goal(statement="keep gpu spend low", status="active"), frames=[GPU])
    uris = c.write_many([Write(Fact(statement=f"vendor {i} quoted {i % 7} usd", subject=f"v{i}", predicate="quote"),
                               frames=[GPU], tags=["quotes"], importance=i % 11) for i in range(n)])
    clock.now += timedelta(hours=2)
    c.update(uris[0], Fact(statement="vendor 0 quoted 3 usd", subject="v0", predicate="quote"))
    c.update_head(uris[1], importance=10, tags=["quotes", "best"])
    pay = c.write(Event(kind="payment", outcome="success", counterparty="v1", cost=("usd", 1.5)), frames=[GPU])
    c.write(Preference(topic="tone", polarity="prefer", strength=0.6))
    c.attest([uris[1], pay], "success")
    c.tombstone(uris[2], "withdrawn")
    c.update(goal, Goal(statement="keep gpu spend low", status="completed"))


def snapshot(c: cortex.Cortex) -> tuple[object, ...]:
    """Everything a user reads back, and every stored byte."""
    return (c.root(), c._engine.storage.all_items(), c.context(**ASK).to_json(),
            [m.to_dict() for m in c.memories(include_tombstoned=True)], c.weights())


@pytest.fixture
def rocks_store(tmp_path, pg_actor):
    """A populated RocksDB store of actor `pg_actor` (closed) and what it reads back."""
    clock = Clock()
    path = tmp_path / "rocks"
    with cortex.open(path, actor=pg_actor, clock=clock, entropy=random.Random(5).randbytes) as c:
        populate(c, clock)
        return path, snapshot(c)


def test_rocksdb_to_postgresql_and_back_round_trips(rocks_store, tmp_path, pg_dsn, pg_actor) -> None:
    path, before = rocks_store
    there = cortex.migrate(path, pg_dsn)
    assert there.actor == pg_actor and there.root == before[0]
    assert there.keys == len(before[1])
    with cortex.open(pg_dsn, actor=pg_actor, mode="r") as pg:
        assert snapshot(pg) == before
        assert pg.verify() == []
    back = cortex.migrate(pg_dsn, tmp_path / "back", actor=pg_actor)
    assert back == there
    with cortex.open(tmp_path / "back", actor=pg_actor) as again:
        assert snapshot(again) == before
        assert again.verify() == []
        again.write(Fact(statement="the copy is writable", subject="copy", predicate="is"))  # ids go on from the copy's


def test_postgresql_to_rocksdb_to_postgresql(tmp_path, pg_dsn, pg_actor) -> None:
    clock = Clock()
    first = f"{pg_actor}/first"
    with cortex.open(pg_dsn, actor=first, clock=clock, entropy=random.Random(8).randbytes) as c:
        populate(c, clock, n=12)
        before = snapshot(c)
    cortex.migrate(pg_dsn, tmp_path / "r", actor=first)
    with cortex.open(tmp_path / "r", actor=first, mode="r") as r:
        assert snapshot(r) == before
    # And into another database: the same actor name, another store.
    with cortex.open(pg_dsn.rsplit("/", 1)[0] + "/postgres", actor=first) as other:  # creates the tables there
        assert other.root() == "0" * 64
    cortex.migrate(tmp_path / "r", pg_dsn.rsplit("/", 1)[0] + "/postgres")
    with cortex.open(pg_dsn.rsplit("/", 1)[0] + "/postgres", actor=first, mode="r") as back:
        assert snapshot(back) == before


def test_batches_are_bounded_and_progress_counts_every_key(rocks_store, pg_dsn, monkeypatch) -> None:
    path, before = rocks_store
    monkeypatch.setattr(migrate_module, "BATCH_KEYS", 50)
    batches: list[int] = []
    done = cortex.migrate(path, pg_dsn, progress=batches.append)
    assert len(batches) == -(-len(before[1]) // 50) and max(batches) <= 50
    assert sum(batches) == done.keys == len(before[1])


def test_a_non_empty_destination_is_refused_and_left_as_it_was(rocks_store, tmp_path, pg_dsn, pg_actor) -> None:
    path, _ = rocks_store
    with cortex.open(pg_dsn, actor=pg_actor) as dst:
        dst.write(Fact(statement="already here", subject="dst", predicate="holds"))
        held = snapshot(dst)
    with pytest.raises(cortex.ValidationError) as info:
        cortex.migrate(path, pg_dsn)
    assert info.value.field == "dst" and "empty" in str(info.value)
    with cortex.open(pg_dsn, actor=pg_actor, mode="r") as dst:
        assert snapshot(dst) == held
    with pytest.raises(cortex.ValidationError, match="dst"):
        cortex.migrate(path, path)


def test_the_actor_is_needed_from_postgresql_and_checked_on_rocksdb(rocks_store, tmp_path, pg_dsn, pg_actor) -> None:
    path, _ = rocks_store
    with pytest.raises(cortex.ValidationError) as info:
        cortex.migrate(pg_dsn, tmp_path / "x")
    assert info.value.field == "actor"
    with pytest.raises(cortex.ActorMismatch):
        cortex.migrate(path, pg_dsn, actor="someone-else")
    with pytest.raises(cortex.NotFound):
        cortex.migrate(pg_dsn, tmp_path / "x", actor=f"{pg_actor}/nobody")
    for bad in (None, 7, ""):
        with pytest.raises(cortex.ValidationError):
            cortex.migrate(bad, tmp_path / "y")  # type: ignore[arg-type]
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_an_interrupted_migration_is_named_by_verify_and_completed_by_a_rerun(rocks_store, pg_dsn, pg_actor,
                                                                           monkeypatch) -> None:
    path, before = rocks_store
    monkeypatch.setattr(migrate_module, "BATCH_KEYS", 40)

    def interrupt(written: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cortex.migrate(path, pg_dsn, progress=interrupt)
    with cortex.open(pg_dsn, actor=pg_actor, mode="r") as half:
        with pytest.raises(cortex.StoreError, match="an import or migration into it is in progress"):
            half.root()  # a reader refuses a store that is half copied (docs/trust.md)
        assert any(line.startswith("meta/import") for line in half.verify())
    done = cortex.migrate(path, pg_dsn)
    assert done.root == before[0]
    with cortex.open(pg_dsn, actor=pg_actor, mode="r") as whole:
        assert snapshot(whole) == before
        assert whole.verify() == []


def test_the_copy_is_one_state_of_a_source_that_keeps_writing(tmp_path, pg_dsn, pg_actor, monkeypatch) -> None:
    """A PostgreSQL source's writer goes on writing while the copy runs; the copy is one
    committed state of it (one REPEATABLE READ view), so it verifies and has its root."""
    monkeypatch.setattr(migrate_module, "BATCH_KEYS", 30)
    clock = Clock()
    roots: list[str] = []
    src = cortex.open(pg_dsn, actor=pg_actor, clock=clock)
    try:
        populate(src, clock, n=60)
        roots.append(src.root())
        stop = threading.Event()

        def keep_writing() -> None:
            i = 0
            while not stop.is_set():
                src.write_many([Write(Fact(statement=f"late {i}.{k}", subject="late", predicate="p"), frames=[GPU])
                                for k in range(5)])
                roots.append(src.root())
                i += 1

        writer = threading.Thread(target=keep_writing)
        writer.start()
        try:
            done = cortex.migrate(pg_dsn, tmp_path / "copy", actor=pg_actor,
                                  progress=lambda n: stop.wait(0.02))
        finally:
            stop.set()
            writer.join()
        assert len(roots) > 2, "the writer never wrote during the copy (the test proved nothing)"
        assert done.root in roots
        with cortex.open(tmp_path / "copy", actor=pg_actor, mode="r") as copy:
            assert copy.root() == done.root and copy.verify() == []
    finally:
        src.close()
