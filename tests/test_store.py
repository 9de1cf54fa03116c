"""The store (docs/data-model.md write/read path, docs/architecture.md storage, docs/context.md salience, docs/operations.md concurrency):
versions, index maintenance read from raw keys, salience records and scores, the
journal and its root, rebuild / verify, the single writer and read-only views."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import msgpack
import pytest
import xxhash

import cortex
from cortex import (
    ActorMismatch,
    Belief,
    Capability,
    Constraint,
    CorruptRecord,
    Event,
    Fact,
    Frame,
    Goal,
    Identity,
    MemoryTombstoned,
    NotFound,
    ObjKind,
    Pattern,
    Preference,
    ReadOnlyStore,
    Score,
    StoreClosed,
    StoreLocked,
    TypeMismatch,
    Verb,
    Weights,
    Write,
)
from cortex.index import actor_obj, by_tag, by_type, entry, frame, pinned
from cortex.ids import decode_id, format_uri
from cortex.model import to_micros
from cortex.records import INDEX_VALUE_SIZE
from cortex.salience import PINNED_FLOOR, score_of

from conftest import ACTOR, START, FakeClock, open_store

REPO = Path(__file__).resolve().parent.parent
UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
GPU = Frame("acquire", "service", "gpu_inference")
VENDOR = Frame("negotiate", "agent", "vendor-x")
PLAN = Frame("build", "plan", "plan-7")


def fact(i: int = 0) -> Fact:
    return Fact(statement=f"statement {i}", subject="subject", predicate="predicate")


def rid(memory) -> bytes:
    return decode_id(memory.id)


def keys_of(store, prefix: bytes, raw_id: bytes) -> set[bytes]:
    """The raw index keys under `prefix` that belong to the memory `raw_id`."""
    return {k for k, _ in store._engine.storage.scan_items(prefix) if k.endswith(raw_id)}


def items_under(store, *prefixes: bytes) -> dict[bytes, bytes]:
    out = {}
    for p in prefixes:
        out.update(dict(store._engine.storage.scan_items(p)))
    return out


def raw_items(store) -> dict[bytes, bytes]:
    return dict(store._engine.storage.all_items())


def b8(n: int) -> bytes:
    return n.to_bytes(8, "big")


# Keys built by hand from docs/architecture.md.
def frame_key(f: Frame, raw_id: bytes) -> bytes:
    return b"idx/frame/" + bytes([int(f.verb), int(f.kind)]) + xxhash.xxh3_128_digest(f.ref.encode()) + raw_id


def actor_obj_key(f: Frame, created: int, raw_id: bytes) -> bytes:
    return b"idx/actor_obj/" + bytes([int(f.verb)]) + xxhash.xxh3_128_digest(f.ref.encode()) + b8(created) + raw_id


def type_key(m) -> bytes:
    return b"idx/type/" + bytes([int(m.type)]) + b8(to_micros(m.created_at)) + rid(m)


def tag_key(tag: str, m) -> bytes:
    return b"idx/tag/" + xxhash.xxh3_64_digest(tag.encode()) + b8(to_micros(m.created_at)) + rid(m)


def pinned_key(m) -> bytes:
    return b"idx/pinned/" + rid(m)


def entry_of(store, key: bytes):
    value = store._engine.storage.get(key)
    assert value is not None, key
    assert len(value) == INDEX_VALUE_SIZE
    return entry.decode_many([value])[0]


def run_python(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True, text=True, env=env, cwd=str(cwd), timeout=120,
    )


def last_json(result: subprocess.CompletedProcess):
    assert result.stdout.strip(), result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------
# Versions


def test_update_adds_a_version_and_keeps_the_old_one(store, clock):
    v1 = Fact(statement="quota is 8", subject="cluster", predicate="quota")
    v2 = Fact(statement="quota is 16", subject="cluster", predicate="quota", source="ops")
    uri1 = store.write(v1, frames=[GPU], tags=["infra"], importance=4, confidence=0.5, source="agent")
    m1 = store.resolve(uri1)
    clock.advance(60)
    uri2 = store.update(uri1, v2)
    assert uri2 == format_uri(cortex.MemoryType.FACT, rid(m1), 2)
    old, new = store.resolve(uri1), store.resolve(uri2)
    assert old.data == v1 and new.data == v2
    assert old.id == new.id == m1.id
    assert (old.version, new.version) == (1, 2)
    assert (old.uri, new.uri) == (uri1, uri2)
    assert old.created_at == new.created_at == START
    assert old.updated_at == START
    assert new.updated_at == START + timedelta(seconds=60)
    assert new.frames == (GPU,) and new.tags == ("infra",) and new.importance == 4
    assert new.confidence == 0.5 and new.source == "agent"
    assert old.forms["short"] == "quota(cluster)=quota is 8"
    assert new.forms["short"] == "quota(cluster)=quota is 16"
    assert store.resolve_latest(m1.id) == new
    assert [m.uri for m in store.memories()] == [uri2]
    assert store.stats()["memories"] == 1


def test_old_versions_survive_reopen(tmp_path, clock):
    path = tmp_path / "s"
    with open_store(path, clock) as s:
        uri = s.write(Goal(statement="g", status="active"))
        clock.advance(1)
        s.update(uri, Goal(statement="g", status="paused"))
        clock.advance(1)
        uri3 = s.update(uri, Goal(statement="g", status="completed"))
    with open_store(path, clock) as s:
        statuses = [s.resolve(uri.replace("#1", f"#{n}")).data.status for n in (1, 2, 3)]
        assert statuses == ["active", "paused", "completed"]
        assert s.resolve_latest(s.resolve(uri3).id).version == 3
        assert s.verify() == []


def test_any_existing_version_uri_names_the_memory(store, clock):
    uri1 = store.write(fact(1))
    clock.advance(1)
    uri2 = store.update(uri1, fact(2))
    clock.advance(1)
    uri3 = store.update(uri1, fact(3))  # through the version-1 URI
    assert uri3.endswith("#3")
    clock.advance(1)
    uri4 = store.update(uri2, fact(4))  # through the version-2 URI
    assert uri4.endswith("#4")
    store.update_head(uri1, importance=7)
    store.update_head(uri2, tags=["x"])
    assert store.resolve(uri4).importance == 7 and store.resolve(uri4).tags == ("x",)
    store.tombstone(uri2, "obsolete")
    assert store.resolve(uri4).tombstoned
    assert store.resolve(uri1).tombstoned and store.resolve(uri1).data == fact(1)


def test_a_version_above_the_current_one_is_not_found(store, clock):
    uri1 = store.write(fact(1))
    clock.advance(1)
    store.update(uri1, fact(2))
    future = uri1.replace("#1", "#3")
    before = raw_items(store)
    for call in (
        lambda: store.resolve(future),
        lambda: store.update(future, fact(9)),
        lambda: store.update_head(future, importance=3),
        lambda: store.tombstone(future, "x"),
    ):
        with pytest.raises(NotFound):
            call()
    assert raw_items(store) == before


def test_unknown_id_is_not_found_by_every_call(store):
    store.write(fact())
    ghost = format_uri(cortex.MemoryType.FACT, bytes(range(16)), 1)
    before = raw_items(store)
    for call in (
        lambda: store.resolve(ghost),
        lambda: store.update(ghost, fact(1)),
        lambda: store.update_head(ghost, importance=1),
        lambda: store.tombstone(ghost, "x"),
        lambda: store.salience(ghost.split("/")[-1].split("#")[0]),
    ):
        with pytest.raises(NotFound):
            call()
    assert raw_items(store) == before


def test_update_to_another_type_is_rejected(store, clock):
    uri = store.write(fact(1), importance=2)
    clock.advance(1)
    before = raw_items(store)
    with pytest.raises(TypeMismatch) as info:
        store.update(uri, Belief(statement="statement 1", stance="believe"))
    assert info.value.field == "data"
    assert raw_items(store) == before
    assert store.resolve_latest(store.resolve(uri).id).version == 1


def test_a_tombstoned_memory_cannot_change(store, clock):
    uri = store.write(fact(1), frames=[GPU])
    clock.advance(1)
    uri2 = store.update(uri, fact(2))
    store.tombstone(uri, "wrong")
    before = (store.root(), raw_items(store))
    with pytest.raises(MemoryTombstoned):
        store.update(uri2, fact(3))
    with pytest.raises(MemoryTombstoned):
        store.update_head(uri2, importance=5)
    assert (store.root(), raw_items(store)) == before
    m1, m2 = store.resolve(uri), store.resolve(uri2)
    assert m1.tombstoned and m2.tombstoned
    assert (m1.data, m2.data) == (fact(1), fact(2))
    assert list(store.memories()) == []
    assert [m.uri for m in store.memories(include_tombstoned=True)] == [uri2]


def test_update_head_changes_no_version(store, clock):
    uri = store.write(fact(1), frames=[GPU], tags=["a"], importance=1)
    clock.advance(5)
    assert store.update_head(uri, tags=["b", "c"], frames=[VENDOR], importance=9) is None
    m = store.resolve(uri)
    assert m.version == 1 and m.uri == uri
    assert m.tags == ("b", "c") and m.frames == (VENDOR,) and m.importance == 9
    assert m.data == fact(1)
    assert m.updated_at == START  # no new version was written
    store.update_head(uri, importance=0)
    m = store.resolve(uri)
    assert m.tags == ("b", "c") and m.frames == (VENDOR,) and m.importance == 0
    store.update_head(uri, tags=[], frames=[])
    m = store.resolve(uri)
    assert m.tags == () and m.frames == ()


# ---------------------------------------------------------------------------
# Index maintenance, read from raw keys


def test_preference_with_two_frames_has_two_frame_entries_and_no_actor_obj(store):
    m = store.resolve(store.write(Preference(topic="tone", polarity="prefer"), frames=[GPU, VENDOR], tags=["style", "tone"]))
    raw = rid(m)
    assert keys_of(store, frame.PREFIX, raw) == {frame_key(GPU, raw), frame_key(VENDOR, raw)}
    assert keys_of(store, actor_obj.PREFIX, raw) == set()
    assert keys_of(store, pinned.PREFIX, raw) == set()
    assert keys_of(store, by_type.PREFIX, raw) == {type_key(m)}
    assert keys_of(store, by_tag.PREFIX, raw) == {tag_key("style", m), tag_key("tone", m)}


def test_event_has_frame_and_actor_obj_entries(store, clock):
    clock.advance(0.000123)
    m = store.resolve(store.write(Event(kind="payment", outcome="success"), frames=[GPU, VENDOR]))
    raw, created = rid(m), to_micros(m.created_at)
    assert created == to_micros(START) + 123
    assert keys_of(store, frame.PREFIX, raw) == {frame_key(GPU, raw), frame_key(VENDOR, raw)}
    assert keys_of(store, actor_obj.PREFIX, raw) == {actor_obj_key(GPU, created, raw), actor_obj_key(VENDOR, created, raw)}
    assert keys_of(store, by_type.PREFIX, raw) == {type_key(m)}


def test_every_type_gets_a_type_entry_and_only_events_get_actor_obj(store):
    values = [Identity(name="n"), fact(), Preference(topic="t", polarity="do"), Belief(statement="s", stance="doubt"),
              Event(kind="dispatch", outcome="failure"), Goal(statement="g", status="paused"),
              Constraint(statement="c", strength="firm", polarity="avoid", source="learned"),
              Capability(subject="s", capability="c"), Pattern(statement="p")]
    for value in values:
        m = store.resolve(store.write(value, frames=[PLAN]))
        raw = rid(m)
        assert keys_of(store, by_type.PREFIX, raw) == {type_key(m)}
        assert keys_of(store, frame.PREFIX, raw) == {frame_key(PLAN, raw)}
        expected_actor_obj = {actor_obj_key(PLAN, to_micros(m.created_at), raw)} if isinstance(value, Event) else set()
        assert keys_of(store, actor_obj.PREFIX, raw) == expected_actor_obj
        assert (keys_of(store, pinned.PREFIX, raw) == {pinned_key(m)}) == isinstance(value, Identity)


def test_index_values_carry_what_context_needs(store, clock):
    uri = store.write(Event(kind="payment", outcome="success"), frames=[GPU], tags=["t"], importance=6)
    m = store.resolve(uri)
    raw = rid(m)
    for key in (frame_key(GPU, raw), actor_obj_key(GPU, to_micros(m.created_at), raw), type_key(m), tag_key("t", m)):
        row = entry_of(store, key)
        assert entry.ids_of(entry.decode_many([store._engine.storage.get(key)])) == [raw]
        assert int(row["type"]) == int(cortex.MemoryType.EVENT)
        assert int(row["importance"]) == 6
        assert int(row["version"]) == 1
        assert int(row["created"]) == to_micros(m.created_at)
        assert int(row["last_used"]) == to_micros(START)
        assert int(row["flags"]) == 0
        assert (int(row["short_tokens"]), int(row["medium_tokens"]), int(row["full_tokens"])) == (
            m.tokens["short"], m.tokens["medium"], m.tokens["full"])
    clock.advance(30)
    store.update(uri, Event(kind="payment", outcome="failure", summary="declined " * 50))
    new = store.resolve_latest(m.id)
    row = entry_of(store, frame_key(GPU, raw))
    assert int(row["version"]) == 2
    assert int(row["last_used"]) == to_micros(START) + 30_000_000
    assert (int(row["short_tokens"]), int(row["medium_tokens"]), int(row["full_tokens"])) == (
        new.tokens["short"], new.tokens["medium"], new.tokens["full"])
    clock.advance(30)
    store.update_head(uri, importance=9)
    for key in (frame_key(GPU, raw), type_key(m), tag_key("t", m)):
        row = entry_of(store, key)
        assert int(row["importance"]) == 9
        assert int(row["last_used"]) == to_micros(START) + 60_000_000


def test_update_head_swaps_frame_entries(store):
    uri = store.write(Event(kind="payment", outcome="success"), frames=[GPU, VENDOR])
    m = store.resolve(uri)
    raw, created = rid(m), to_micros(m.created_at)
    store.update_head(uri, frames=[VENDOR, PLAN])
    assert keys_of(store, frame.PREFIX, raw) == {frame_key(VENDOR, raw), frame_key(PLAN, raw)}
    assert keys_of(store, actor_obj.PREFIX, raw) == {actor_obj_key(VENDOR, created, raw), actor_obj_key(PLAN, created, raw)}
    store.update_head(uri, frames=[])
    assert keys_of(store, frame.PREFIX, raw) == set()
    assert keys_of(store, actor_obj.PREFIX, raw) == set()
    assert keys_of(store, by_type.PREFIX, raw) == {type_key(m)}


def test_update_head_swaps_tag_entries(store):
    uri = store.write(fact(), tags=["a", "b"])
    m = store.resolve(uri)
    store.update_head(uri, tags=["b", "c"])
    assert keys_of(store, by_tag.PREFIX, rid(m)) == {tag_key("b", m), tag_key("c", m)}


def test_other_memories_entries_are_untouched(store):
    keep = store.resolve(store.write(Event(kind="payment", outcome="success"), frames=[GPU], tags=["a"]))
    before = {k: v for k, v in items_under(store, b"idx/").items() if k.endswith(rid(keep))}
    other = store.write(Event(kind="payment", outcome="failure"), frames=[GPU], tags=["a"])
    store.update_head(other, frames=[VENDOR], tags=["b"], importance=3)
    store.tombstone(other, "x")
    after = {k: v for k, v in items_under(store, b"idx/").items() if k.endswith(rid(keep))}
    assert after == before


def test_pinned_index_follows_goal_status(store, clock):
    uri = store.write(Goal(statement="ship", status="active"), frames=[PLAN])
    m = store.resolve(uri)
    raw = rid(m)
    assert keys_of(store, pinned.PREFIX, raw) == {pinned_key(m)}
    assert int(entry_of(store, pinned_key(m))["flags"]) & entry.FLAG_PINNED
    assert int(entry_of(store, frame_key(PLAN, raw))["flags"]) & entry.FLAG_PINNED
    clock.advance(1)
    uri = store.update(uri, Goal(statement="ship", status="completed"))
    assert keys_of(store, pinned.PREFIX, raw) == set()
    assert int(entry_of(store, frame_key(PLAN, raw))["flags"]) & entry.FLAG_PINNED == 0
    assert store.salience(m.id).pinned is False
    clock.advance(1)
    uri = store.update(uri, Goal(statement="ship", status="active"))
    assert keys_of(store, pinned.PREFIX, raw) == {pinned_key(m)}
    assert int(entry_of(store, pinned_key(m))["version"]) == 3
    assert store.salience(m.id).pinned is True
    clock.advance(1)
    store.update(uri, Goal(statement="ship", status="paused"))
    assert keys_of(store, pinned.PREFIX, raw) == set()


def test_pinned_index_follows_constraint_strength(store, clock):
    uri = store.write(Constraint(statement="overspend", strength="soft", polarity="dont", source="learned"))
    m = store.resolve(uri)
    assert keys_of(store, pinned.PREFIX, rid(m)) == set()
    clock.advance(1)
    uri = store.update(uri, Constraint(statement="overspend", strength="firm", polarity="dont", source="learned"))
    assert keys_of(store, pinned.PREFIX, rid(m)) == set()
    clock.advance(1)
    uri = store.update(uri, Constraint(statement="overspend", strength="hard", polarity="dont", source="learned"))
    assert keys_of(store, pinned.PREFIX, rid(m)) == {pinned_key(m)}
    assert store.salience(m.id).pinned is True
    clock.advance(1)
    store.update(uri, Constraint(statement="overspend", strength="soft", polarity="dont", source="learned"))
    assert keys_of(store, pinned.PREFIX, rid(m)) == set()


def test_identities_are_pinned(store):
    m = store.resolve(store.write(Identity(name="ops-1")))
    assert keys_of(store, pinned.PREFIX, rid(m)) == {pinned_key(m)}


def test_tombstone_removes_tier_entries_and_keeps_type_and_tag(store, clock):
    uri = store.write(Goal(statement="g", status="active"), frames=[GPU], tags=["t1", "t2"])
    ev = store.write(Event(kind="payment", outcome="success"), frames=[GPU, VENDOR], tags=["t1"])
    g, e = store.resolve(uri), store.resolve(ev)
    clock.advance(10)
    store.tombstone(uri, "abandoned")
    store.tombstone(ev, "duplicate")
    for m, tags in ((g, ("t1", "t2")), (e, ("t1",))):
        raw = rid(m)
        assert keys_of(store, pinned.PREFIX, raw) == set()
        assert keys_of(store, frame.PREFIX, raw) == set()
        assert keys_of(store, actor_obj.PREFIX, raw) == set()
        assert keys_of(store, by_type.PREFIX, raw) == {type_key(m)}
        assert keys_of(store, by_tag.PREFIX, raw) == {tag_key(t, m) for t in tags}
        row = entry_of(store, type_key(m))
        assert int(row["flags"]) & entry.FLAG_TOMBSTONED
        assert int(row["flags"]) & entry.FLAG_PINNED == 0
    stats = store.stats()
    assert stats["memories"] == 0 and stats["tombstoned"] == 2


def test_tombstone_is_idempotent(store, clock):
    uri = store.write(fact(), frames=[GPU])
    clock.advance(1)
    store.tombstone(uri, "first")
    root, items = store.root(), raw_items(store)
    clock.advance(1)
    assert store.tombstone(uri, "second") is None
    assert store.root() == root
    assert raw_items(store) == items
    assert store.resolve(uri).tombstoned is True


def test_tombstoned_memory_still_resolves(store, clock):
    uri = store.write(fact(7), tags=["t"], importance=4)
    clock.advance(1)
    store.tombstone(uri, "wrong")
    m = store.resolve(uri)
    assert m.tombstoned is True
    assert m.data == fact(7) and m.tags == ("t",) and m.version == 1
    assert store.resolve_latest(m.id).tombstoned is True


# ---------------------------------------------------------------------------
# Salience records and scores


@pytest.mark.parametrize(
    "data, is_pinned",
    [
        (Identity(name="n"), True),
        (Constraint(statement="c", strength="hard", polarity="dont", source="user_declared"), True),
        (Constraint(statement="c", strength="firm", polarity="dont", source="user_declared"), False),
        (Goal(statement="g", status="active"), True),
        (Goal(statement="g", status="completed"), False),
        (fact(), False),
        (Event(kind="payment", outcome="success"), False),
        (Pattern(statement="p"), False),
    ],
)
def test_salience_record_on_write(store, clock, data, is_pinned):
    clock.advance(3.5)
    m = store.resolve(store.write(data, importance=7))
    assert store.salience(m.id) == Score(
        last_used=START + timedelta(seconds=3.5), access_count=0, citations=0, importance=7, pinned=is_pinned)
    assert store.salience(m.uri) == store.salience(m.id)


def test_salience_bumps(store, clock):
    uri = store.write(fact(1), importance=2)
    m = store.resolve(uri)
    clock.advance(100)
    store.update(uri, fact(2))
    assert store.salience(m.id) == Score(START + timedelta(seconds=100), 0, 0, 2, False)
    clock.advance(100)
    store.update_head(uri, tags=["x"])
    assert store.salience(m.id) == Score(START + timedelta(seconds=200), 0, 0, 2, False)
    clock.advance(100)
    store.update_head(uri, importance=8)
    assert store.salience(m.id) == Score(START + timedelta(seconds=300), 0, 0, 8, False)
    assert store.resolve(uri).importance == 8
    clock.advance(100)
    store.tombstone(uri, "gone")
    assert store.salience(m.id) == Score(EPOCH, 0, 0, 0, False)


def test_salience_of_write_many_items(store, clock):
    uris = store.write_many([Write(fact(i), importance=i) for i in range(5)] + [Write(Identity(name="me"), importance=10)])
    records = [store.salience(store.resolve(u).id) for u in uris]
    assert records == [Score(START, 0, 0, i, False) for i in range(5)] + [Score(START, 0, 0, 10, True)]


def test_reads_do_not_bump_salience(store, clock):
    uri = store.write(Preference(topic="t", polarity="prefer"), frames=[GPU], importance=3)
    m = store.resolve(uri)
    before = store.salience(m.id)
    clock.advance(1000)
    store.resolve(uri)
    list(store.memories())
    store.context(verb="acquire", objects={"service": "gpu_inference"})
    assert store.salience(m.id) == before


def test_default_weights(store):
    assert store.weights() == Weights(recency=0.25, access=0.15, citation=0.30, importance=0.20)
    assert PINNED_FLOOR == 0.7


def by_hand(record: Score, now: datetime, w=(0.25, 0.15, 0.30, 0.20), floor=True) -> float:
    age = max(0.0, (now - record.last_used).total_seconds())
    r = math.exp(-age / (90 * 24 * 3600))
    a = min(1.0, math.log(1 + record.access_count) / math.log(1001))
    c = min(1.0, math.log(1 + record.citations) / math.log(1001))
    d = record.importance / 10
    score = (w[0] * r + w[1] * a + w[2] * c + w[3] * d) / sum(w)
    return max(score, 0.7) if record.pinned and floor else score


NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "record",
    [
        Score(NOW, 0, 0, 0, False),
        Score(NOW, 0, 0, 6, False),
        Score(NOW - timedelta(days=30), 5, 3, 7, False),
        Score(NOW - timedelta(days=90), 1, 0, 10, False),
        Score(NOW - timedelta(days=400, seconds=17), 999, 1000, 1, False),
        Score(NOW - timedelta(hours=3), 5000, 250_000, 4, False),  # capped at 1
        Score(NOW + timedelta(days=2), 0, 0, 2, False),  # last_used after now: R = 1
        Score(NOW - timedelta(days=200), 0, 0, 0, True),  # pinned: floor
        Score(NOW, 1000, 1000, 10, True),  # pinned above the floor
        Score(NOW - timedelta(days=10), 2, 1, 5, True),
    ],
)
def test_score_of_matches_the_formula(record):
    got = score_of(record, NOW)
    assert got == pytest.approx(by_hand(record, NOW), abs=1e-12)
    assert 0.0 <= got <= 1.0
    if record.pinned:
        assert got >= 0.7


def test_score_of_specific_values():
    assert score_of(Score(NOW, 0, 0, 0, True), NOW) == pytest.approx(0.7, abs=1e-12)
    assert score_of(Score(NOW, 0, 0, 0, False), NOW) == pytest.approx(0.25 / 0.9, abs=1e-12)
    assert score_of(Score(NOW, 1000, 1000, 10, False), NOW) == pytest.approx(1.0, abs=1e-12)
    assert score_of(Score(NOW - timedelta(days=90), 0, 0, 0, False), NOW) == pytest.approx(0.25 * math.exp(-1) / 0.9, abs=1e-12)


def test_score_of_a_stored_record(store, clock):
    uri = store.write(Goal(statement="g", status="paused"), importance=5)
    m = store.resolve(uri)
    later = START + timedelta(days=12, hours=5)
    record = store.salience(m.id)
    assert score_of(record, later) == pytest.approx(by_hand(record, later), abs=1e-12)
    clock.advance(1)
    store.update(uri, Goal(statement="g", status="active"))
    record = store.salience(m.id)
    assert record.pinned is True
    assert score_of(record, START + timedelta(days=365)) == pytest.approx(0.7, abs=1e-12)


# ---------------------------------------------------------------------------
# Journal and root


def replay_chain(store) -> tuple[str, list[dict]]:
    root = bytes(32)
    entries = []
    for i, (key, value) in enumerate(store._engine.storage.scan_items(b"j/"), start=1):
        assert key == b"j/" + b8(i)
        stored_root, raw = value[:32], value[32:]  # each value: root after it + entry
        entries.append(msgpack.unpackb(raw, raw=False))
        root = hashlib.sha256(b"cortex.journal.v1" + root + raw).digest()
        assert stored_root == root
    return root.hex(), entries


def test_empty_store_root(store):
    assert store.root() == "0" * 64
    assert store.stats()["root"] == "0" * 64
    assert store.stats()["journal_seq"] == 0


def test_every_write_changes_the_root(store, clock):
    roots = [store.root()]
    uri = store.write(fact(1), frames=[GPU])
    roots.append(store.root())
    clock.advance(1)
    uri = store.update(uri, fact(2))
    roots.append(store.root())
    clock.advance(1)
    store.update_head(uri, importance=4)
    roots.append(store.root())
    clock.advance(1)
    store.update_head(uri, importance=4)  # same value again: still a journaled write
    roots.append(store.root())
    store.write_many([Write(fact(3)), Write(fact(4))])
    roots.append(store.root())
    clock.advance(1)
    store.tombstone(uri, "done")
    roots.append(store.root())
    assert len(set(roots)) == len(roots)
    assert store.stats()["root"] == store.root()


def test_reads_do_not_change_the_root(store, clock):
    uri = store.write(Goal(statement="g", status="active"), frames=[GPU], tags=["t"])
    store.write(Event(kind="payment", outcome="success"), frames=[GPU])
    root, items = store.root(), raw_items(store)
    clock.advance(3600)
    m = store.resolve(uri)
    store.resolve_latest(m.id)
    list(store.memories())
    list(store.memories(include_tombstoned=True))
    store.stats()
    store.salience(m.id)
    store.weights()
    b = store.context(verb="acquire", objects={"service": "gpu_inference"}, form="medium")
    assert b.root == root
    store.context()
    assert store.verify() == []
    assert store.root() == root
    assert raw_items(store) == items


def test_root_is_the_hash_chain_of_the_journal(store, clock):
    uri = store.write(fact(1), importance=3)
    clock.advance(2)
    store.update(uri, fact(2))
    clock.advance(2)
    store.update_head(uri, importance=6, tags=["x"])
    clock.advance(2)
    store.write_many([Write(Identity(name="me")), Write(fact(3))])
    clock.advance(2)
    store.tombstone(uri, "because")
    root, entries = replay_chain(store)
    assert root == store.root()
    assert store.stats()["journal_seq"] == len(entries)
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    kinds = [e["kind"] for e in entries]
    assert kinds[:3] == ["write", "update", "update_head"]
    assert kinds[-1] == "tombstone"
    assert kinds.count("write") == 3
    assert entries[0]["at"] == to_micros(START)
    assert entries[-1]["at"] == to_micros(START) + 8_000_000
    assert entries[0]["payload"]["importance"] == 3
    assert entries[2]["payload"]["importance"] == 6
    assert entries[-1]["payload"]["reason"] == "because"


def test_root_survives_reopen(tmp_path, clock):
    path = tmp_path / "s"
    with open_store(path, clock) as s:
        s.write(fact(1))
        s.write(Identity(name="me"))
        root = s.root()
    with open_store(path, clock) as s:
        assert s.root() == root
        assert replay_chain(s)[0] == root
        clock.advance(1)
        s.write(fact(2))
        assert s.root() != root
        root2 = s.root()
    with open_store(path, clock, mode="r") as r:
        assert r.root() == root2


# ---------------------------------------------------------------------------
# rebuild() and verify()


def populate(store, clock) -> dict[str, str]:
    uris = {}
    uris["id"] = store.write(Identity(name="me", roles=("ops",)), tags=["self"], importance=10)
    uris["goal"] = store.write(Goal(statement="ship", status="active"), frames=[PLAN], tags=["work"])
    uris["c"] = store.write(Constraint(statement="overspend", strength="soft", polarity="dont", source="learned"), frames=[GPU])
    uris["ev"] = store.write(Event(kind="payment", outcome="success", cost=("USDC", 3.0)), frames=[GPU, VENDOR], tags=["pay"], importance=4)
    uris["pref"] = store.write(Preference(topic="tone", polarity="prefer", strength=0.9), frames=[GPU, VENDOR], tags=["style", "work"])
    clock.advance(10)
    uris["goal"] = store.update(uris["goal"], Goal(statement="ship", status="completed"))
    uris["c"] = store.update(uris["c"], Constraint(statement="overspend", strength="hard", polarity="dont", source="learned"))
    clock.advance(10)
    store.update_head(uris["pref"], frames=[PLAN], tags=["style"], importance=6)
    store.update_head(uris["ev"], importance=8)
    batch = store.write_many([Write(Pattern(statement=f"p{i}"), frames=[GPU], tags=["batch"], importance=i) for i in range(5)])
    uris.update({f"batch{i}": u for i, u in enumerate(batch)})
    clock.advance(10)
    uris["dead"] = store.write(Event(kind="observation", outcome="failure"), frames=[GPU], tags=["pay"])
    store.tombstone(uris["dead"], "bad")
    store.tombstone(batch[1], "dup")
    return uris


def test_verify_is_empty_on_a_sound_store(store, clock):
    assert store.verify() == []
    populate(store, clock)
    assert store.verify() == []


def test_rebuild_recreates_derived_keys_byte_for_byte(store, clock):
    populate(store, clock)
    derived = items_under(store, b"idx/", b"sal/")
    assert any(k.startswith(b"idx/pinned/") for k in derived)
    assert any(k.startswith(b"idx/actor_obj/") for k in derived)
    root = store.root()
    store._engine.storage.write({k: None for k in derived})
    assert items_under(store, b"idx/", b"sal/") == {}
    problems = store.verify()
    assert len(problems) == len(derived)
    assert all("missing" in line for line in problems)
    store.rebuild()
    assert items_under(store, b"idx/", b"sal/") == derived
    assert store.verify() == []
    assert store.root() == root


def test_rebuild_of_a_sound_store_changes_nothing(store, clock):
    populate(store, clock)
    items = raw_items(store)
    store.rebuild()
    assert raw_items(store) == items


def test_rebuild_then_reads_work(tmp_path, clock):
    path = tmp_path / "s"
    with open_store(path, clock) as s:
        uris = populate(s, clock)
        expected = {name: s.resolve(u) for name, u in uris.items()}
        scores = {name: s.salience(m.id) for name, m in expected.items()}
        s._engine.storage.write({k: None for k in items_under(s, b"idx/", b"sal/")})
        s.rebuild()
    with open_store(path, clock) as s:
        for name, uri in uris.items():
            assert s.resolve(uri) == expected[name]
            assert s.salience(expected[name].id) == scores[name]
        b = s.context(verb="acquire", objects={"service": "gpu_inference"})
        got = {m.id for m in b.pinned + b.outcomes + b.frame_relevant}
        assert expected["ev"].id in got and expected["id"].id in got and expected["c"].id in got
        assert expected["dead"].id not in got


def test_verify_reports_broken_index_entries_and_rebuild_fixes_them(store, clock):
    uris = populate(store, clock)
    ev = store.resolve(uris["ev"])
    key = frame_key(GPU, rid(ev))
    assert store._engine.storage.get(key) is not None
    store._engine.storage.write({key: b"garbage"})
    ghost_id = bytes(range(100, 116))
    orphan = frame_key(VENDOR, ghost_id)
    store._engine.storage.write({orphan: store._engine.storage.get(type_key(ev))})
    problems = store.verify()
    assert len(problems) == 2
    garbage_lines = [p for p in problems if "idx/frame/" + key[len(b"idx/frame/"):].hex() in p]
    orphan_lines = [p for p in problems if "idx/frame/" + orphan[len(b"idx/frame/"):].hex() in p]
    assert len(garbage_lines) == 1 and len(orphan_lines) == 1
    store.rebuild()
    assert store.verify() == []
    assert store._engine.storage.get(orphan) is None
    assert entry_of(store, key)["version"] == 1


def test_verify_reports_a_missing_version(store, clock):
    uris = populate(store, clock)
    goal = store.resolve(uris["goal"])
    assert goal.version == 2
    vkey = b"mv/" + rid(goal) + b8(1)
    assert store._engine.storage.get(vkey) is not None
    store._engine.storage.write({vkey: None})
    problems = store.verify()
    assert len(problems) == 1
    assert goal.id in problems[0] and "version" in problems[0] and "missing" in problems[0]
    store.rebuild()  # cannot recreate a canonical key
    assert store.verify() == problems


def test_verify_reports_a_missing_salience_record(store, clock):
    uris = populate(store, clock)
    m = store.resolve(uris["pref"])
    store._engine.storage.write({b"sal/" + rid(m): None})
    problems = store.verify()
    assert len(problems) == 1 and "sal/" in problems[0]
    store.rebuild()
    assert store.verify() == []


def test_verify_reports_a_tampered_journal(store, clock):
    populate(store, clock)
    key = b"j/" + b8(2)
    value = store._engine.storage.get(key)
    entry_raw = msgpack.unpackb(value[32:], raw=False)
    entry_raw["at"] += 1
    store._engine.storage.write({key: value[:32] + msgpack.packb(entry_raw, use_bin_type=True)})
    problems = store.verify()
    assert any(p.startswith("j/" + b8(2).hex()) and "hash chain" in p for p in problems), problems


def test_a_corrupt_head_raises_corrupt_record_naming_the_key(store):
    uri = store.write(fact())
    key = b"m/" + rid(store.resolve(uri))
    store._engine.storage.write({key: b"\xc1"})
    with pytest.raises(CorruptRecord) as info:
        store.resolve(uri)
    assert info.value.key == key
    assert store.verify()


# ---------------------------------------------------------------------------
# Single writer, read-only views, actors


def test_a_second_writer_in_the_same_process_gets_store_locked(store):
    uri = store.write(fact())
    with pytest.raises(StoreLocked) as info:
        open_store(store.path)
    assert 'mode="r"' in str(info.value)
    assert store.resolve(uri).data == fact()
    store.write(fact(2))


LOCKED_CHILD = """
import json, sys
import cortex
try:
    cortex.open(sys.argv[1], actor=sys.argv[2])
    print(json.dumps({"error": None}))
except cortex.CortexError as e:
    print(json.dumps({"error": type(e).__name__, "message": str(e)}))
"""


def test_a_second_writer_in_another_process_gets_store_locked(store, tmp_path):
    store.write(fact())
    out = last_json(run_python(LOCKED_CHILD, str(store.path), ACTOR, cwd=tmp_path))
    assert out["error"] == "StoreLocked"
    assert 'mode="r"' in out["message"]


READER_CHILD = """
import json, sys
import cortex
with cortex.open(sys.argv[1], actor=sys.argv[2], mode="r") as r:
    ms = list(r.memories())
    print(json.dumps({"uris": [m.uri for m in ms], "root": r.root(),
                      "statements": [m.data.statement for m in ms]}))
"""


def test_a_reader_process_runs_beside_the_writer(store, tmp_path):
    uris = [store.write(fact(i)) for i in range(3)]
    out = last_json(run_python(READER_CHILD, str(store.path), ACTOR, cwd=tmp_path))
    assert out["uris"] == uris
    assert out["root"] == store.root()
    assert out["statements"] == ["statement 0", "statement 1", "statement 2"]
    store.write(fact(3))  # the writer is unaffected


def test_read_view_sees_acknowledged_writes_after_refresh(store, clock):
    first = store.write(fact(1))
    with open_store(store.path, mode="r") as r:
        assert [m.uri for m in r.memories()] == [first]
        assert r.root() == store.root()
        second = store.write(fact(2), frames=[GPU])
        store.update_head(first, importance=5)
        r.refresh()
        assert [m.uri for m in r.memories()] == [first, second]
        assert r.root() == store.root()
        assert r.resolve(first).importance == 5
        assert r.resolve(second).data == fact(2)
        assert r.stats()["memories"] == 2
        assert r.verify() == []


def test_read_view_catches_up_before_context(store):
    with open_store(store.path, mode="r") as r:
        uri = store.write(Identity(name="me"))
        b = r.context()
        assert [m.uri for m in b.pinned] == [uri]
        assert r.root() == store.root()


@pytest.mark.rocksdb_only("ages the store folder's time and counts reads of its entries: RocksDB's files")
def test_a_read_view_whose_folder_is_quiet_checks_the_known_files_only(store, monkeypatch):
    """Before a context(), a follower whose store folder has had no file come or go
    for a while stats the folder and the files it knows instead of reading the
    folder's entries; it still sees plain appends to the WAL at once, and a flush
    (new files: the folder's time moves) through a full look."""
    from cortex.storage.rocksdb import RocksStorage

    store.write(fact(0), frames=[GPU])
    with open_store(store.path, mode="r") as r:
        an_hour_ago = time.time_ns() - 3600 * 10**9
        os.utime(store.path, ns=(an_hour_ago, an_hour_ago))
        r.refresh()  # reads the folder's entries, and notes its (old) time
        full_looks = []
        real = RocksStorage._files_signature
        monkeypatch.setattr(RocksStorage, "_files_signature", lambda self: full_looks.append(1) or real(self))
        ask = {"verb": "acquire", "objects": {"service": "gpu_inference"}}
        assert r.context(**ask).candidates == 1 and full_looks == []
        appended = store.write(fact(1), frames=[GPU])  # the WAL grows; no file comes or goes
        assert appended in {m.uri for m in r.context(**ask).memories()}  # (the catch-up looks in full)
        assert r.root() == store.root()
        full_looks.clear()
        assert r.context(**ask).candidates == 2 and full_looks == []
        store._engine.storage.flush()  # a new WAL and table file: the folder's time moves
        flushed = store.write(fact(2), frames=[GPU])
        assert flushed in {m.uri for m in r.context(**ask).memories()}
        assert full_looks and r.root() == store.root()


def test_writes_through_a_read_view_raise_read_only_store(store):
    uri = store.write(fact(1), frames=[GPU])
    with open_store(store.path, mode="r") as r:
        before = (store.root(), raw_items(store))
        for call in (
            lambda: r.write(fact(2)),
            lambda: r.write_many([Write(fact(3))]),
            lambda: r.update(uri, fact(4)),
            lambda: r.update_head(uri, importance=1),
            lambda: r.tombstone(uri, "x"),
            lambda: r.rebuild(),
        ):
            with pytest.raises(ReadOnlyStore):
                call()
        assert (store.root(), raw_items(store)) == before
        assert r.resolve(uri).data == fact(1)


@pytest.mark.rocksdb_only("a PostgreSQL database holds many actors: another actor's open() is another store, not a mismatch")
def test_open_under_another_actor_raises_actor_mismatch(tmp_path, clock):
    path = tmp_path / "s"
    with open_store(path, clock) as s:
        s.write(fact())
        root = s.root()
    with pytest.raises(ActorMismatch):
        open_store(path, clock, actor="agent-2")
    with pytest.raises(ActorMismatch):
        open_store(path, clock, actor="agent-2", mode="r")
    with open_store(path, clock) as s:  # the failed opens left it intact and unlocked
        assert s.root() == root
        assert s.stats()["actor"] == ACTOR


def test_read_view_of_a_missing_store_raises_not_found(tmp_path):
    with pytest.raises(NotFound):
        open_store(tmp_path / "missing", mode="r")
    assert not (tmp_path / "missing").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotFound):
        open_store(tmp_path / "empty", mode="r")


def test_a_closed_store_raises_store_closed(tmp_path):
    s = open_store(tmp_path / "s")
    uri = s.write(fact())
    s.close()
    s.close()  # idempotent
    with pytest.raises(StoreClosed):
        s.resolve(uri)
    with pytest.raises(StoreClosed):
        s.write(fact(1))
    with open_store(tmp_path / "s") as again:  # the lock was released
        assert again.resolve(uri).data == fact()


KILLED_CHILD = """
import os, signal, sys
import cortex
s = cortex.open(sys.argv[1], actor=sys.argv[2])
uri = s.write(cortex.Fact(statement="survives", subject="s", predicate="p"), frames=[cortex.Frame("find", "tool", "t")])
s.update_head(uri, importance=9)
print(uri, s.root(), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.rocksdb_only('the child process is given the directory path (tests/test_backends_leases.py kills PostgreSQL writers)')
def test_acknowledged_writes_survive_a_killed_process(tmp_path):
    path = tmp_path / "s"
    result = run_python(KILLED_CHILD, str(path), ACTOR, cwd=tmp_path)
    assert result.returncode != 0
    uri, root = result.stdout.split()
    with open_store(path) as s:
        m = s.resolve(uri)
        assert m.data.statement == "survives" and m.importance == 9
        assert s.root() == root
        assert s.verify() == []


def test_stats(store, clock):
    populate(store, clock)
    stats = store.stats()
    assert stats["actor"] == ACTOR and stats["mode"] == "rw"
    assert stats["memories"] == 9 and stats["tombstoned"] == 2
    by_type = stats["by_type"]
    assert (by_type["Identity"], by_type["Goal"], by_type["Constraint"], by_type["Preference"]) == (1, 1, 1, 1)
    assert set(by_type) == {"Identity", "Goal", "Constraint", "Event", "Preference", "Pattern"}
    assert stats["root"] == store.root()
    assert stats["memories"] == len(list(store.memories()))
    assert stats["memories"] + stats["tombstoned"] == len(list(store.memories(include_tombstoned=True)))


def test_memories_iterate_in_id_order(store, clock):
    uris = []
    for i in range(5):
        clock.advance(0.0005)
        uris.append(store.write(fact(i)))
    uris += store.write_many([Write(fact(10 + i)) for i in range(5)])
    listed = [m.uri for m in store.memories()]
    assert listed == uris
    ids = [m.id for m in store.memories()]
    assert ids == sorted(ids)


def test_verb_and_kind_members_are_accepted_in_frames(store):
    m = store.resolve(store.write(fact(), frames=[Frame(Verb.MONITOR, ObjKind.TOOL, "t")]))
    assert m.frames == (Frame("monitor", "tool", "t"),)
    assert keys_of(store, frame.PREFIX, rid(m)) == {b"idx/frame/" + bytes([9, 12]) + xxhash.xxh3_128_digest(b"t") + rid(m)}


def test_memories_pickle_and_copy_with_every_field(store):
    import copy
    import pickle

    uri = store.write(fact(), frames=[Frame("find", "tool", "hammer")], tags=["t"], importance=4)
    memory = store.resolve(uri)
    for clone in (pickle.loads(pickle.dumps(memory)), copy.deepcopy(memory), copy.copy(memory)):
        assert clone == memory
        assert clone.uri == uri and clone.frames == memory.frames and clone.data == memory.data
    with pytest.raises(AttributeError):
        memory.importance = 9  # type: ignore[misc]
