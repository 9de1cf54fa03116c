"""`find()` arguments are checked like a write's (issue 13), and the other input gaps
that issue listed: frames only as `Frame`, range messages without "None" bounds, the
two citation-losing attest reasons exported.

A `where` value is checked by the rule of the field it names, as a write of that
field would check it: a NaN, a number past 2**53, a 10 MB string, a value of the
wrong type or outside a closed set, or an order comparison on a list field raises
`ValidationError` (naming `where.<field>`) instead of quietly matching nothing. A
rejected call writes nothing, `late_binding=True` included.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cortex
from cortex import Constraint, Event, Fact, Frame, Goal, Identity, Preference, ValidationError

AT = datetime(2025, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def world(store):
    """A store with one memory of each kind the cases below query, all tagged "t"."""
    store.write(Preference(topic="tone", polarity="prefer", strength=0.8), tags=["t"])
    store.write(Identity(name="ops", roles=("buyer", "seller")), tags=["t"])
    store.write(Identity(name="ops-2", did="did:x"), tags=["t"])
    store.write(Constraint(statement="never pay twice", strength="hard", polarity="dont", source="learned"), tags=["t"])
    store.write(Goal(statement="ship", status="active"), tags=["t"])
    store.write(Fact(statement="s", subject="a", predicate="p", as_of=AT), tags=["t"])
    store.write(Event(kind="payment", outcome="success", cost=("USD", 2.0)), tags=["t"])
    return store


BAD_WHERE = [
    pytest.param("Preference", ("gt", "strength", math.nan), "where.strength", "must be a finite number", id="nan"),
    pytest.param("Preference", ("gt", "strength", math.inf), "where.strength", "must be a finite number", id="inf"),
    pytest.param("Preference", ("gt", "strength", 10**400), "where.strength", "2**53", id="huge-int"),
    pytest.param("Preference", ("lt", "strength", 2), "where.strength", "must be within [0.0, 1.0]", id="out-of-range"),
    pytest.param("Preference", ("eq", "strength", "high"), "where.strength", "must be a number", id="wrong-type"),
    pytest.param("Fact", ("eq", "statement", "x" * 10_000_000), "where.statement", "at most 16384 bytes", id="10MB-string"),
    pytest.param("Fact", ("eq", "statement", 5), "where.statement", "must be a string", id="number-for-text"),
    pytest.param("Identity", ("gt", "roles", "a"), "where.roles", "'gt' compares numbers, text and times", id="compare-tuple"),
    pytest.param("Event", ("lte", "cost", ("USD", 1.0)), "where.cost", "'lte' compares", id="compare-cost"),
    pytest.param("Goal", ("eq", "status", "actve"), "where.status", "must be one of active, paused", id="closed-set-typo"),
    pytest.param("Goal", ("in", "status", ["active", "done"]), "where.status", "must be one of", id="closed-set-in"),
    pytest.param("Goal", ("in", "status", range(10**9)), "where.status", "at most 256 values", id="huge-in"),
    pytest.param("Fact", ("gt", "as_of", "2025-01-01"), "where.as_of", "must be a datetime", id="text-for-time"),
    pytest.param("Fact", ("gt", "as_of", datetime(2025, 1, 1)), "where.as_of", "timezone-aware", id="naive-time"),
    pytest.param("Fact", ("gt", "as_of", None), "where.as_of", "must be a datetime", id="compare-none"),
    pytest.param("Event", {"outcome": "succes"}, "where.outcome", "must be one of success, failure, partial", id="dict-form"),
    pytest.param(None, ("eq", "strength", math.nan), "where.strength", "finite", id="shared-field-nan"),
    pytest.param(None, ("eq", "verified", "yes"), "where.verified", "must be a bool", id="flag"),
    pytest.param(None, ("not", ("or", ("eq", "status", "x"))), "where.status", "must be one of", id="nested"),
]


@pytest.mark.parametrize("type_, where, field, rule", BAD_WHERE)
@pytest.mark.parametrize("late_binding", [False, True])
def test_a_where_value_a_write_would_refuse_raises_and_writes_nothing(world, type_, where, field, rule, late_binding):
    root = world.root()
    with pytest.raises(ValidationError) as caught:
        world.find(type=type_, tags=["t"], where=where, limit=10, late_binding=late_binding)
    assert caught.value.field == field
    assert rule in caught.value.rule
    assert "None]" not in str(caught.value) and "[None" not in str(caught.value)  # no made-up bounds
    assert world.root() == root


GOOD_WHERE = [
    ("Preference", ("gte", "strength", 0.5), ["tone"]),
    ("Preference", ("gte", "strength", 1), []),  # an int where a float is stored
    ("Identity", ("eq", "roles", ["buyer", "seller"]), ["ops"]),  # a list matches the stored tuple
    ("Identity", ("eq", "did", None), ["ops"]),  # None: the optional field is absent
    ("Identity", ("ne", "did", None), ["ops-2"]),
    ("Goal", ("in", "status", ("active", "paused")), ["ship"]),
    ("Fact", ("lte", "as_of", AT), ["s"]),
    ("Event", ("eq", "cost", {"asset": "USD", "amount": 2}), ["payment"]),  # normalised like a write
    (None, ("eq", "strength", "hard"), ["never pay twice"]),  # Constraint.strength, beside two numeric ones
    (None, ("gt", "strength", 0.5), ["tone"]),
]


def _label(memory: cortex.Memory) -> str:
    data = memory.data
    for name in ("topic", "name", "statement", "kind"):
        if hasattr(data, name):
            return str(getattr(data, name))
    raise AssertionError(memory)


@pytest.mark.parametrize("type_, where, expected", GOOD_WHERE)
def test_a_where_value_a_write_would_accept_still_matches(world, type_, where, expected):
    found = world.find(type=type_, tags=["t"], where=where, order_by="created", limit=10)
    assert [_label(m) for m in found] == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-(10**30), max_value=10**30),
    st.booleans(), st.none(), st.text(max_size=5), st.decimals(allow_nan=False).map(float),
))
def test_find_accepts_exactly_the_strengths_a_write_accepts(store, value):
    try:
        Preference(topic="t", polarity="prefer", strength=value)
        writable = True
    except ValidationError:
        writable = False
    try:
        store.find(type="Preference", where=("gte", "strength", value), limit=1)
        findable = True
    except ValidationError:
        findable = False
    assert findable == writable


@pytest.mark.parametrize("tags, field, rule", [
    (["x" * 65], "tags[0]", "at most 64 characters"),
    (["ok", "x" * 16 * 1024], "tags[1]", "at most 64 characters"),
    (["x" * 20_000], "tags[0]", "at most 16384 bytes"),
    ([f"t{i}" for i in range(17)], "tags", "at most 16 distinct tags"),
    (["  "], "tags[0]", "non-empty"),
    ("style", "tags", "must be a list of strings"),
])
def test_find_tags_are_checked_as_on_writes(world, tags, field, rule):
    root = world.root()
    with pytest.raises(ValidationError) as caught:
        world.find(tags=tags, limit=1, late_binding=True)
    assert (caught.value.field, rule in caught.value.rule) == (field, True)
    assert world.root() == root


def test_frames_are_only_frame_objects(store):
    root = store.root()
    for frames in ([("acquire", "service", "gpu")], ["acquire/service/gpu"], [["acquire", "service", "gpu"]]):
        with pytest.raises(ValidationError) as caught:
            store.write(Fact(statement="s", subject="a", predicate="p"), frames=frames)
        assert caught.value.field == "frames[0]"
    assert store.root() == root
    uri = store.write(Fact(statement="s", subject="a", predicate="p"), frames=[Frame("acquire", "service", "gpu")])
    root = store.root()
    with pytest.raises(ValidationError):
        store.update_head(uri, frames=[("acquire", "service", "gpu")])
    assert store.root() == root


@pytest.mark.parametrize("make, message", [
    (lambda: Event(kind="payment", outcome="success", duration=-1), "duration: must be at least 0.0"),
    (lambda: Event(kind="payment", outcome="success", cost=("USD", -1)), "cost.amount: must be at least 0.0"),
    (lambda: Preference(topic="t", polarity="prefer", strength=1.5), "strength: must be within [0.0, 1.0]"),
])
def test_range_messages_name_only_real_bounds(make, message):
    with pytest.raises(ValidationError) as caught:
        make()
    assert str(caught.value) == message


def test_only_the_exported_reasons_take_a_citation_away(store):
    uri = store.write(Fact(statement="s", subject="a", predicate="p"))
    store.attest([uri], "success")
    store.attest([uri], "success")
    store.attest([uri], "failure", reason="wrong_assumptions")  # a typo: free text, takes nothing
    assert store.salience(uri).citations == 2
    store.attest([uri], "failure", reason=cortex.WRONG_ASSUMPTION)
    store.attest([uri], "failure", reason=cortex.FACTUAL_ERROR)
    assert store.salience(uri).citations == 0
