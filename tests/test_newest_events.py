"""The outcomes tier's cache of the newest entries under each (verb, object)
(`cortex.cache.newest`): a call reads from storage only what no earlier call on the
same view read, the writer's own writes and a follower's catch-ups keep it exact,
and `verify()` names a cache that differs from what is stored. (The random stores of
`test_hot_frames.py` compare whole bundles with and without it.)"""

from __future__ import annotations

from datetime import timedelta

import cortex
from cortex import Event, Frame
from cortex.index import actor_obj
from cortex.cache import NewestEvents
from cortex.model import Verb

from conftest import START, FakeClock, open_store

NOW = START + timedelta(days=30)
PREFIX = actor_obj.prefix(Verb.parse("acquire").value, "gpu")


def _events(c: cortex.Cortex, clock: FakeClock, n: int, ref: str = "gpu", start: int = 0) -> list[str]:
    uris = []
    for i in range(start, start + n):
        clock.now += timedelta(minutes=1)
        uris.append(c.write(Event(kind="dispatch", outcome="success", summary=f"event {i}"), frames=[Frame("acquire", "service", ref)]))
    return uris


def _outcomes(c: cortex.Cortex, limit: int, ref: str = "gpu") -> list[str]:
    bundle = c.context(verb="acquire", objects={"service": ref}, now=NOW, outcome_limit=limit, include_tiers=["outcomes"], budget_tokens=4000)
    return [m.id for m in bundle.outcomes]


def _uncached(c: cortex.Cortex, limit: int, ref: str = "gpu") -> list[str]:
    engine = c._engine
    kept, engine.newest = engine.newest, None
    try:
        return _outcomes(c, limit, ref)
    finally:
        engine.newest = kept


def test_a_call_reads_only_the_entries_no_earlier_call_read(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        uris = _events(c, clock, 10)
        ids = [u.rsplit("/", 1)[1].split("#")[0] for u in uris]
        engine = c._engine
        read = engine.index_entries_read
        assert _outcomes(c, 1) == ids[-1:]
        assert engine.index_entries_read == read + 2  # the newest, and the one that shows it is the last needed
        items, complete = engine.newest.cached(PREFIX)
        assert len(items) == 2 and not complete and items[0][0] > items[1][0]  # newest first, and more are stored
        assert _outcomes(c, 1) == ids[-1:] and engine.index_entries_read == read + 2
        assert _outcomes(c, 5) == ids[:-6:-1]
        assert engine.index_entries_read == read + 6  # four more, past the two kept
        assert _outcomes(c, 20) == ids[::-1]
        assert engine.index_entries_read == read + 10 and engine.newest.cached(PREFIX)[1] is True  # all ten, and it knows
        for limit in (1, 5, 20):
            assert _outcomes(c, limit) == _uncached(c, limit)
        assert engine.index_entries_read == read + 10 + 2 + 6 + 10  # only the uncached calls read
        assert c.verify() == []


def test_a_write_under_a_prefix_drops_it_and_no_other(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        _events(c, clock, 3)
        _events(c, clock, 3, ref="tpu")
        engine = c._engine
        _outcomes(c, 5)
        _outcomes(c, 5, ref="tpu")
        assert len(engine.newest) == 2
        [new] = _events(c, clock, 1, start=3)
        assert engine.newest.prefixes() == [actor_obj.prefix(Verb.parse("acquire").value, "tpu")]
        assert _outcomes(c, 1) == [new.rsplit("/", 1)[1].split("#")[0]]
        c.tombstone(new, "gone")
        assert _outcomes(c, 1) == _uncached(c, 1) != [new.rsplit("/", 1)[1].split("#")[0]]
        assert c.verify() == []


def test_a_follower_drops_the_newest_entries_at_every_catch_up(tmp_path):
    clock = FakeClock()
    path = tmp_path / "s"
    with open_store(path, clock) as w:
        _events(w, clock, 4)
        with open_store(path, clock, mode="r") as r:
            before = _outcomes(r, 2)
            r.context(verb="acquire", objects={"service": "gpu"}, now=NOW)
            assert len(r._engine.newest) == 1
            [new] = _events(w, clock, 1, start=4)  # new memories alone: the frames stay cached
            r.refresh()
            assert len(r._engine.newest) == 0 and r._engine.hot.prefixes() != []
            assert _outcomes(r, 2) == [new.rsplit("/", 1)[1].split("#")[0], before[0]] == _uncached(r, 2)


def test_verify_names_newest_entries_that_differ_from_the_stored_ones(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        _events(c, clock, 3)
        _outcomes(c, 1)
        newest = c._engine.newest
        items, complete = newest.cached(PREFIX)
        shown = "idx/actor_obj/" + PREFIX[len(b"idx/actor_obj/"):].hex()
        line = f"{shown}: this handle's newest entries under it differ from the stored entries"
        newest.drop()
        newest._keep(PREFIX, list(reversed(items)), complete)  # what a cache that missed a write would hold
        assert c.verify() == [line]
        newest.drop()
        _outcomes(c, 1)
        newest._kept.get(PREFIX).complete = True  # "all of them", with a third still stored
        assert c.verify() == [line]
        c.rebuild()
        assert c.verify() == []


def test_the_longest_read_of_a_view_is_kept_and_the_total_is_bounded(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        _events(c, clock, 6)
        _events(c, clock, 3, ref="tpu")
        _events(c, clock, 3, ref="npu")
        storage = c._engine.storage
        newest = NewestEvents(max_entries=7)
        far, near = newest.newest(PREFIX, storage), newest.newest(PREFIX, storage)
        for _ in range(4):
            next(far)
        next(near)
        far.close()
        near.close()  # a shorter read of the same view, closed later, keeps nothing
        assert len(newest.cached(PREFIX)[0]) == 4
        assert [created for created, _ in newest.cached(PREFIX)[0]] == sorted((created for created, _ in newest.cached(PREFIX)[0]), reverse=True)
        everything = list(newest.newest(PREFIX, storage))
        assert len(everything) == 6 and newest.cached(PREFIX) == (everything, True)
        others = [actor_obj.prefix(Verb.parse("acquire").value, ref) for ref in ("tpu", "npu")]
        for prefix in others:
            assert len(list(newest.newest(prefix, storage))) == 3
        assert newest.prefixes() == sorted(others)  # 6 + 3 + 3 > 7: the least recently used went first
