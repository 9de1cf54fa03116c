"""`Memory` views and the handle's cache of them: a cached view is never stale,
whatever changes a memory, and the cache stays within its size."""

from __future__ import annotations

import gc

import pytest

import cortex
from cortex import Constraint, Fact, Frame, Goal
from cortex.forms import render_full
from cortex.cache import CurrentHeads, ViewCache
from cortex.records import HEAD_PREFIX, head_key


FRAME = Frame("build", "tool", "t-1")


def _raw_id(memory) -> bytes:
    from cortex.ids import decode_id

    return decode_id(memory.id)


def test_the_same_stored_bytes_give_the_same_view_and_other_bytes_a_new_one(store):
    uri = store.write(Fact(statement="GPU quotes are in USD", subject="vendor-a", predicate="currency"))
    memory = store.resolve(uri)
    key = head_key(_raw_id(memory))
    raw = store._engine.storage.get(key)
    cache = ViewCache(size=8)
    first = cache.view(key, raw)
    assert cache.view(key, raw) is first
    assert cache.view(key, bytes(raw)) is first  # equal bytes, another object
    store.update_head(uri, tags=["pricing"])
    changed = cache.view(key, store._engine.storage.get(key))
    assert changed is not first and changed.tags == ("pricing",) and first.tags == ()


def test_the_cache_keeps_at_most_its_size(store):
    uris = [store.write(Fact(statement=f"fact {i}", subject="s", predicate="p")) for i in range(6)]
    cache = ViewCache(size=3)
    for uri in uris:
        key = head_key(_raw_id(store.resolve(uri)))
        cache.view(key, store._engine.storage.get(key))
    assert len(cache._views) == 3


def test_both_view_caches_evict_oldest_first_and_keep_their_size(store):
    uris = [store.write(Fact(statement=f"fact {i}", subject="s", predicate="p")) for i in range(10)]
    keys = [head_key(_raw_id(store.resolve(uri))) for uri in uris]
    views, heads = ViewCache(size=4), CurrentHeads(size=4)
    for key in keys:
        raw = store._engine.storage.get(key)
        heads.put(key, views.view(key, raw))
    assert [key for key, _ in views._views] == keys[-4:]
    assert [key for key, _ in heads.items()] == keys[-4:]
    assert heads.get_many(keys) == [None] * 6 + [memory for _, memory in heads.items()]


def test_a_bundle_never_shows_a_stale_cached_view(store, clock):
    frame = Frame("acquire", "service", "gpu")
    goal = store.write(Goal(statement="ship the release", status="active"), frames=[frame])
    fact = store.write(Fact(statement="vendor a quotes 3 USD", subject="vendor-a", predicate="price"), frames=[frame])
    before = store.context(verb="acquire", objects={"service": "gpu"})
    assert {m.uri for m in before.memories()} == {goal, fact}
    # Same version, new tags and importance: the head bytes change, so the view does.
    store.update_head(fact, tags=["pricing"], importance=9)
    after = store.context(verb="acquire", objects={"service": "gpu"})
    (m,) = after.frame_relevant
    assert m.tags == ("pricing",) and m.importance == 9
    # A new version and a tombstone show as well.
    clock.advance(1)
    fact2 = store.update(fact, Fact(statement="vendor a quotes 4 USD", subject="vendor-a", predicate="price"))
    assert store.context(verb="acquire", objects={"service": "gpu"}).frame_relevant[0].uri == fact2
    store.tombstone(fact2, "superseded")
    assert store.context(verb="acquire", objects={"service": "gpu"}).frame_relevant == []


@pytest.mark.parametrize("form", ["short", "medium", "full"])
def test_a_cached_view_renders_each_form_like_a_fresh_read(store, form):
    uri = store.write(Constraint(statement="never pay twice", strength="hard", polarity="avoid", source="user_declared"))
    first = store.context(form=form)
    again = store.context(form=form)
    (m,) = again.pinned
    assert again.pinned[0] is first.pinned[0]  # the cached view
    expected = render_full(store.resolve(uri).data) if form == "full" else store.resolve(uri).forms[form]
    assert again.rendered[m.id] == first.rendered[m.id] == expected


def test_threads_sharing_a_small_cache_never_fail(store):
    import threading

    uris = [store.write(Fact(statement=f"fact {i}", subject="s", predicate="p")) for i in range(40)]
    keys = [head_key(_raw_id(store.resolve(u))) for u in uris]
    heads = [(key, store._engine.storage.get(key)) for key in keys]
    cache = ViewCache(size=3)
    errors: list[BaseException] = []

    def hammer(offset: int) -> None:
        try:
            for round_ in range(200):
                key, raw = heads[(offset + round_) % len(heads)]
                assert cache.view(key, raw).id == _raw_id_text(key)
        except BaseException as exc:  # noqa: BLE001 - any failure fails the test
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(i * 7,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(cache._views) <= 3


def _raw_id_text(key: bytes) -> str:
    from cortex.ids import encode_id

    return encode_id(key[len(HEAD_PREFIX):])


def test_the_handle_keeps_32_current_heads_per_mb_of_cache(tmp_path, clock):
    from conftest import open_store

    with open_store(tmp_path / "small", clock, cache_mb=2) as small, open_store(tmp_path / "default", clock) as default:
        assert small._engine.heads.size == 64
        assert default._engine.heads.size == 32768
        uris = small.write_many([cortex.Write(Fact(statement=f"fact {i}", subject="s", predicate="p"), frames=[FRAME])
                                 for i in range(100)])
        small.context(verb="build", objects={"tool": "t-1"}, budget_tokens=100_000)
        assert len(small._engine.heads) == 64  # the newest 64 survivors, the rest read again when asked
        assert len(small.context(verb="build", objects={"tool": "t-1"}, budget_tokens=100_000).frame_relevant) == len(uris)


def test_cached_heads_leave_the_garbage_collectors_walk(store):
    """A cached view's decoded head holds only tuples of plain values, which the
    collector stops tracking once it has seen their contents are untracked (one
    collection per level of nesting: head, frames, frame); lists would stay tracked."""
    store.write_many([cortex.Write(Fact(statement=f"fact {i}", subject="s", predicate="p"),
                                   frames=[FRAME], tags=["a", "b"]) for i in range(20)])
    bundle = store.context(verb="build", objects={"tool": "t-1"}, budget_tokens=100_000)
    assert len(bundle.frame_relevant) == 20
    heads = [memory._head for _, memory in store._engine.heads.items()]
    assert len(heads) == 20
    for _ in range(3):
        gc.collect()
    assert not any(gc.is_tracked(head) for head in heads)
    assert all(type(head) is tuple for head in heads)


def test_a_handle_with_room_for_32_heads_answers_as_one_with_room_for_all(tmp_path, clock):
    """The heads cache only saves reads: with 32 views (cache_mb=1) a handle evicts
    all the time, and its bundles are byte for byte those of the default handle."""
    import random

    from conftest import open_store

    rng = random.Random(3)
    tools = [f"t-{i}" for i in range(6)]
    with open_store(tmp_path / "s", clock) as writer:
        for start in range(0, 400, 100):
            writer.write_many([
                cortex.Write(Fact(statement=f"fact {i} about {rng.choice(tools)}", subject="s", predicate="p"),
                             frames=[Frame(rng.choice(["build", "find"]), "tool", rng.choice(tools))],
                             importance=rng.randrange(0, 11))
                for i in range(start, start + 100)
            ])
    asks = [{"verb": rng.choice(["build", "find"]), "objects": {"tool": rng.choice(tools)},
             "form": rng.choice(["short", "medium", "full"]), "budget_tokens": rng.choice([200, 1500, 6000])}
            for _ in range(40)]
    with open_store(tmp_path / "s", clock, mode="r", cache_mb=1) as small, open_store(tmp_path / "s", clock, mode="r") as large:
        for ask in asks + asks:
            assert small.context(**ask).to_json() == large.context(**ask).to_json()
        assert len(small._engine.heads) == 32 and len(large._engine.heads) > 32
