"""Validation of the data classes and of frames and tags (docs/data-model.md "validated at the
boundary", docs/data-model.md): every field of the nine data classes is checked by the rule it
declares, with the exact normalisation and error a user sees; list checks stop
reading at the limit; frames are `Frame` objects only; and the README's call forms
type-check under `mypy --strict`."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import pickle
import subprocess
import sys
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
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
    ObjKind,
    Pattern,
    Preference,
    ValidationError,
    Verb,
    Write,
)
from cortex.model import (
    CONSTRAINT_SOURCES,
    DATA_CLASSES,
    EVENT_KINDS,
    GOAL_STATUSES,
    OUTCOMES,
    POLARITIES,
    STANCES,
    STRENGTHS,
    check_frames,
    check_number,
    check_tags,
    check_texts,
    stored_frame,
)

UTC = timezone.utc
PLUS2 = timezone(timedelta(hours=2))

# The smallest valid value of each class: its required fields (docs/data-model.md, in bold).
MINIMAL = {
    Identity: {"name": "agent"},
    Fact: {"statement": "s", "subject": "a", "predicate": "p"},
    Preference: {"topic": "tone", "polarity": "prefer"},
    Belief: {"statement": "s", "stance": "doubt"},
    Event: {"kind": "payment", "outcome": "success"},
    Goal: {"statement": "s", "status": "active"},
    Constraint: {"statement": "s", "strength": "hard", "polarity": "dont", "source": "learned"},
    Capability: {"subject": "s", "capability": "c"},
    Pattern: {"statement": "s"},
}

REQUIRED = [(cls, name) for cls, kwargs in MINIMAL.items() for name in kwargs]
ALL_FIELDS = [(cls, f.name) for cls in MINIMAL for f in dataclasses.fields(cls)]


class _Unknown:
    """A value of a type no rule accepts."""


def state(store):
    """What a rejected call must leave unchanged (public API only)."""
    return store.root(), list(store.memories(include_tombstoned=True)), store.stats()


class Reads:
    """An iterable over `items` that counts the items read and fails the test (with
    an AssertionError, not a ValidationError) if more than `limit` are read."""

    def __init__(self, items: Iterable[object], limit: int) -> None:
        self.items = items
        self.limit = limit
        self.count = 0

    def __iter__(self) -> Iterator[object]:
        for item in self.items:
            self.count += 1
            if self.count > self.limit:
                raise AssertionError(f"read item {self.count}, past the limit of {self.limit}")
            yield item


# ---------------------------------------------------------------------------
# Every field is checked by its declared rule


def test_minimal_values_are_valid_and_fill_the_defaults():
    assert set(MINIMAL) == set(DATA_CLASSES.values())
    assert Identity(name="n") == Identity(name="n", did=None, wallets=(), roles=(), public_keys=())
    assert Preference(topic="t", polarity="do").strength == 0.5
    assert Pattern(statement="s") == Pattern(statement="s", derived_from=(), strength=0.5, coverage=0)
    cap = Capability(subject="s", capability="c")
    assert cap.parameters == {} and cap.verified is False and cap.last_observed is None
    event = Event(kind="payment", outcome="failure")
    assert (event.cost, event.duration, event.artifacts, event.summary) == (None, None, (), None)


@pytest.mark.parametrize("cls, name", REQUIRED, ids=[f"{c.__name__}.{n}" for c, n in REQUIRED])
def test_leaving_out_a_required_field_names_it(cls, name):
    kwargs = dict(MINIMAL[cls])
    del kwargs[name]
    with pytest.raises(ValidationError) as info:
        cls(**kwargs)
    assert type(info.value) is ValidationError
    assert info.value.field == name


@pytest.mark.parametrize("cls, name", ALL_FIELDS, ids=[f"{c.__name__}.{n}" for c, n in ALL_FIELDS])
def test_every_field_rejects_a_value_of_the_wrong_type(cls, name):
    bad = _Unknown()
    with pytest.raises(ValidationError) as info:
        cls(**{**MINIMAL[cls], name: bad})
    assert info.value.field == name
    assert info.value.value is bad


def test_rules_run_in_field_order():
    with pytest.raises(ValidationError) as info:
        Event(kind="nope", outcome="nope", duration=-1.0)
    assert info.value.field == "kind"
    with pytest.raises(ValidationError) as info:
        Capability(subject="s", capability="c", verified=1, parameters=[])
    assert info.value.field == "parameters"


@pytest.mark.parametrize(
    "cls, name, choices",
    [
        (Preference, "polarity", POLARITIES),
        (Belief, "stance", STANCES),
        (Event, "kind", EVENT_KINDS),
        (Event, "outcome", OUTCOMES),
        (Goal, "status", GOAL_STATUSES),
        (Constraint, "strength", STRENGTHS),
        (Constraint, "polarity", POLARITIES),
        (Constraint, "source", CONSTRAINT_SOURCES),
    ],
)
def test_choice_fields_take_exactly_their_exported_closed_set(cls, name, choices):
    for choice in choices:
        assert getattr(cls(**{**MINIMAL[cls], name: choice}), name) == choice
    with pytest.raises(ValidationError) as info:
        cls(**{**MINIMAL[cls], name: "nope"})
    assert str(info.value) == f"{name}: must be one of {', '.join(choices)}; got 'nope'"
    with pytest.raises(ValidationError):
        cls(**{**MINIMAL[cls], name: choices[0].upper()})


def test_closed_sets_are_the_design_values():
    assert POLARITIES == ("prefer", "avoid", "neutral", "do", "dont")
    assert STANCES == ("believe", "doubt", "suspect")
    assert EVENT_KINDS == ("intent_completed", "intent_failed", "payment", "dispatch", "observation", "interaction")
    assert OUTCOMES == ("success", "failure", "partial")
    assert GOAL_STATUSES == ("active", "paused", "completed", "abandoned")
    assert STRENGTHS == ("soft", "firm", "hard")
    assert CONSTRAINT_SOURCES == ("user_declared", "learned", "inferred")


def test_optional_text_may_be_blank_but_required_text_may_not():
    assert Fact(statement="s", subject="a", predicate="p", object="", source="  ").object == ""
    with pytest.raises(ValidationError) as info:
        Fact(statement="s", subject=" ", predicate="p")
    assert str(info.value) == "subject: must be a non-empty string"
    with pytest.raises(ValidationError) as info:
        Fact(statement=None, subject="a", predicate="p")
    assert str(info.value) == "statement: is required"


# ---------------------------------------------------------------------------
# Normalisation


def test_lists_become_tuples_from_any_iterable():
    ident = Identity(name="n", wallets=["w1", "w2"], roles=(r for r in ["ops"]), public_keys=None)
    assert ident.wallets == ("w1", "w2") and ident.roles == ("ops",) and ident.public_keys == ()
    goal = Goal(statement="s", status="paused", success_criteria=iter(["a", "b"]), subgoals=[])
    assert goal.success_criteria == ("a", "b") and goal.subgoals == ()


def test_numbers_become_floats_and_counts_stay_ints():
    pref = Preference(topic="t", polarity="avoid", strength=1)
    assert pref.strength == 1.0 and type(pref.strength) is float
    event = Event(kind="payment", outcome="success", duration=3, cost=["USD", 2])
    assert event.duration == 3.0 and type(event.duration) is float
    assert event.cost == ("USD", 2.0) and type(event.cost) is tuple and type(event.cost[1]) is float
    pattern = Pattern(statement="s", strength=0, coverage=7)
    assert type(pattern.strength) is float and pattern.coverage == 7 and type(pattern.coverage) is int


def test_cost_takes_a_pair_a_mapping_or_a_one_shot_iterable():
    assert Event(kind="payment", outcome="success", cost={"asset": "USDC", "amount": 1.5}).cost == ("USDC", 1.5)
    assert Event(kind="payment", outcome="success", cost=iter(["EUR", 4])).cost == ("EUR", 4.0)
    endless = Reads(itertools.repeat("USD"), 3)
    with pytest.raises(ValidationError) as info:
        Event(kind="payment", outcome="success", cost=endless)
    assert str(info.value) == "cost: must be (asset, amount)"
    assert endless.count == 3


def test_datetimes_become_utc_with_microseconds_kept():
    at = datetime(2024, 5, 6, 9, 30, 15, 123456, tzinfo=PLUS2)
    for value, name in [
        (Fact(statement="s", subject="a", predicate="p", as_of=at), "as_of"),
        (Goal(statement="s", status="active", horizon_end=at), "horizon_end"),
        (Capability(subject="s", capability="c", last_observed=at), "last_observed"),
    ]:
        stored = getattr(value, name)
        assert stored == at and stored.tzinfo is UTC and (stored.hour, stored.microsecond) == (7, 123456)


def test_parameters_are_sorted_by_key_and_none_is_empty():
    cap = Capability(subject="s", capability="c", parameters={"zone": "b", "gpu": "h100", "Arch": ""})
    assert list(cap.parameters) == ["Arch", "gpu", "zone"]
    assert type(cap.parameters) is dict
    assert Capability(subject="s", capability="c", parameters=None).parameters == {}
    with pytest.raises(ValidationError) as info:
        Capability(subject="s", capability="c", parameters={"k": None})
    assert str(info.value) == "parameters['k']: must be a string"


# ---------------------------------------------------------------------------
# Error messages for number ranges


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Event(kind="payment", outcome="success", duration=-1), "duration: must be at least 0.0"),
        (lambda: Event(kind="payment", outcome="success", cost=("USD", -0.5)), "cost.amount: must be at least 0.0"),
        (lambda: Preference(topic="t", polarity="prefer", strength=1.5), "strength: must be within [0.0, 1.0]"),
        (lambda: Pattern(statement="s", strength=-0.1), "strength: must be within [0.0, 1.0]"),
        (lambda: check_number("x", 3, hi=2.0), "x: must be at most 2.0"),
        (lambda: check_number("x", -3, lo=-2.0), "x: must be at least -2.0"),
        (lambda: Pattern(statement="s", coverage=-1), "coverage: must be an integer within 0..9007199254740992"),
    ],
)
def test_range_errors_state_the_bounds_that_exist(make, message):
    with pytest.raises(ValidationError) as info:
        make()
    assert str(info.value) == message
    assert "None" not in str(info.value)


def test_check_number_without_bounds_accepts_any_finite_number():
    assert check_number("x", -1e300) == -1e300
    assert check_number("x", 2**53) == float(2**53)


# ---------------------------------------------------------------------------
# Records: validated on write, not again on the fast read path


FULL = [
    Identity(name="agent", did="did:key:z", wallets=("0xa",), roles=("ops",), public_keys=("k",)),
    Fact(statement="s", subject="a", predicate="p", object="o", source="wiki", as_of=datetime(2023, 2, 28, 1, 2, 3, 4, tzinfo=UTC)),
    Preference(topic="tone", polarity="prefer", strength=0.8, value="short", rationale="r"),
    Belief(statement="s", stance="suspect", subject="x", evidence_for=("a",), evidence_against=("b", "c")),
    Event(kind="payment", outcome="partial", intent_ref="i", counterparty="x", cost=("USDC", 12.5), duration=3.25, artifacts=("a",), summary="s"),
    Goal(statement="s", status="active", horizon_end=datetime(2026, 6, 30, tzinfo=UTC), success_criteria=("a",), subgoals=("b",)),
    Constraint(statement="s", strength="hard", polarity="dont", source="user_declared", trigger="t"),
    Capability(subject="s", capability="c", parameters={"b": "2", "a": "1"}, verified=True, last_observed=datetime(2024, 1, 1, tzinfo=UTC)),
    Pattern(statement="s", derived_from=("cortex://Event/01JGFJJZ0072TECMQ49PKZ57H6#1",), strength=0.35, coverage=7),
]


@pytest.mark.parametrize("value", FULL, ids=[type(v).__name__ for v in FULL])
def test_records_round_trip_with_and_without_validation(value):
    record = value.to_record()
    assert all(type(v) in (str, int, float, bool, list, dict, type(None)) for v in record)
    for validate in (True, False):
        back = type(value).from_record(record, validate=validate)
        assert back == value and type(back) is type(value)
        assert back.to_record() == record


def test_from_record_without_validation_does_not_run_the_rules():
    record = Preference(topic="t", polarity="prefer").to_record()
    record[2] = 5.0  # strength out of [0, 1]
    assert Preference.from_record(record, validate=False).strength == 5.0
    with pytest.raises(ValidationError) as info:
        Preference.from_record(record, validate=True)
    assert info.value.field == "strength"


def test_from_record_rejects_a_record_of_the_wrong_length():
    with pytest.raises(ValueError, match="Fact record must be a list of 6 values"):
        Fact.from_record(["s", "a"], validate=False)


# ---------------------------------------------------------------------------
# List limits: read at most limit + 1 items


def distinct_tags(n: int = 20_000) -> Iterator[str]:
    return (f"tag{i}" for i in range(n))


def test_tags_from_an_iterable_stop_at_the_17th_distinct_tag():
    tags = Reads(distinct_tags(), 17)
    with pytest.raises(ValidationError) as info:
        check_tags(tags)
    assert str(info.value) == "tags: must hold at most 16 distinct tags"
    assert tags.count == 17


def test_twenty_thousand_distinct_tags_are_rejected_after_17_reads():
    tags = Reads(list(distinct_tags()), 17)
    with pytest.raises(ValidationError) as info:
        Write(Fact(**MINIMAL[Fact]), tags=tags)
    assert info.value.field == "tags"
    assert tags.count == 17


def test_repeated_tags_count_once():
    tags = Reads(itertools.chain(["a"] * 1000, (f"t{i}" for i in range(15)), ["a"] * 1000), 2015)
    assert check_tags(tags) == ("a",) + tuple(f"t{i}" for i in range(15))
    assert check_tags(f"t{i % 16}" for i in range(500)) == tuple(f"t{i}" for i in range(16))


def test_frames_from_an_iterable_stop_at_the_17th_distinct_frame():
    frames = Reads((Frame("find", "tool", f"r{i}") for i in itertools.count()), 17)
    with pytest.raises(ValidationError) as info:
        check_frames(frames)
    assert str(info.value) == "frames: must hold at most 16 distinct frames"
    assert frames.count == 17
    same = Frame("find", "tool", "r")
    assert check_frames(Reads([same] * 100, 100)) == (same,)


def test_text_lists_stop_at_item_257():
    wallets = Reads((f"w{i}" for i in itertools.count()), 257)
    with pytest.raises(ValidationError) as info:
        Identity(name="n", wallets=wallets)
    assert str(info.value) == "wallets: must hold at most 256 items"
    assert wallets.count == 257
    assert len(check_texts("roles", (f"r{i}" for i in range(256)))) == 256


def test_over_limit_tags_and_frames_through_the_store_write_nothing(store):
    store.write(Fact(**MINIMAL[Fact]), tags=["kept"])
    before = state(store)
    tags = Reads(distinct_tags(), 17)
    with pytest.raises(ValidationError):
        store.write(Fact(**MINIMAL[Fact]), tags=tags)
    frames = Reads((Frame("find", "tool", f"r{i}") for i in itertools.count()), 17)
    uri = before[1][0].uri
    with pytest.raises(ValidationError):
        store.update_head(uri, frames=frames)
    assert (tags.count, frames.count) == (17, 17)
    assert state(store) == before


# ---------------------------------------------------------------------------
# Frames are Frame objects


@pytest.mark.parametrize(
    "frames, field",
    [
        ([("acquire", "service", "gpu")], "frames[0]"),
        ([Frame("acquire", "service", "gpu"), ["find", "model", "m"]], "frames[1]"),
        ([Frame("acquire", "service", "gpu"), ("acquire", "service", "gpu")], "frames[1]"),
        ([{"verb": "find", "kind": "tool", "ref": "t"}], "frames[0]"),
        ([None], "frames[0]"),
    ],
)
def test_frames_that_are_not_frame_objects_are_refused(store, frames, field):
    before = state(store)
    with pytest.raises(ValidationError) as info:
        store.write(Fact(**MINIMAL[Fact]), frames=frames)
    assert type(info.value) is ValidationError
    assert str(info.value) == f"{field}: must be a cortex.Frame(verb, kind, ref)"
    assert state(store) == before


@pytest.mark.parametrize("frames", ["acquire", b"x", Frame("find", "tool", "t"), 5])
def test_frames_must_be_a_list(frames):
    with pytest.raises(ValidationError) as info:
        check_frames(frames)
    assert str(info.value) == "frames: must be a list of Frame"


def test_frame_parses_names_and_behaves_as_a_value():
    frame = Frame("acquire", "service", "gpu")
    assert frame.verb is Verb.ACQUIRE and frame.kind is ObjKind.SERVICE and frame.ref == "gpu"
    assert frame == Frame(Verb.ACQUIRE, ObjKind.SERVICE, "gpu") == Frame(verb="acquire", kind="service", ref="gpu")
    assert frame == stored_frame(2, 1, "gpu") and hash(frame) == hash(stored_frame(2, 1, "gpu"))
    assert frame != Frame("acquire", "model", "gpu")
    assert repr(frame) == "Frame(verb=<Verb.ACQUIRE: 2>, kind=<ObjKind.SERVICE: 1>, ref='gpu')"
    for clone in (pickle.loads(pickle.dumps(frame)), copy.copy(frame), copy.deepcopy(frame)):
        assert clone == frame and hash(clone) == hash(frame) and clone.verb is Verb.ACQUIRE
    with pytest.raises(dataclasses.FrozenInstanceError):
        frame.ref = "cpu"


_VERB_NAMES = [v.name.lower() for v in Verb]
_KIND_NAMES = [k.name.lower() for k in ObjKind]
_ODD = st.one_of(
    st.none(), st.integers(), st.floats(), st.binary(max_size=4), st.text(max_size=8),
    st.lists(st.integers(), max_size=2), st.just("\ud800"), st.just("x" * 300),
)


@settings(max_examples=300, deadline=None)
@given(
    verb=st.one_of(st.sampled_from(_VERB_NAMES + list(Verb)), _ODD),
    kind=st.one_of(st.sampled_from(_KIND_NAMES + list(ObjKind)), _ODD),
    ref=st.one_of(st.text(min_size=1, max_size=20), _ODD),
)
def test_frame_accepts_or_names_the_broken_part_property(verb, kind, ref):
    try:
        frame = Frame(verb, kind, ref)
    except InvalidVerb as exc:
        assert exc.field == "frame.verb" and not isinstance(verb, Verb)
    except InvalidObjKind as exc:
        assert exc.field == "frame.kind" and not isinstance(kind, ObjKind)
    except EmptyObjRef as exc:
        assert exc.field == "frame.ref" and ref in (None, "")
    except ValidationError as exc:
        assert type(exc) is ValidationError and exc.field == "frame.ref"
    else:
        assert frame.verb == Verb.parse(verb) and frame.kind == ObjKind.parse(kind) and frame.ref == ref
        assert check_frames([frame, frame]) == (frame,)


# ---------------------------------------------------------------------------
# Static types: what the README writes type-checks under mypy --strict

_README_FORMS = """\
from cortex import Event, Frame, ObjKind, Preference, Verb

frame = Frame("acquire", "service", "gpu")
same = Frame(Verb.ACQUIRE, ObjKind.SERVICE, "gpu")
verb: Verb = frame.verb
kind: ObjKind = frame.kind
ref: str = frame.ref
preference = Preference(topic="tone", polarity="prefer", strength=0.8, rationale="short answers")
event = Event(kind="intent_completed", outcome="success", counterparty="acme", cost=("USD", 1.2))
strength: float = preference.strength
cost: tuple[str, float] | None = event.cost
"""

_MISTAKES = """\
from cortex import Fact, Frame, Preference

Fact(statement="s", subject="a")
Frame(2, "service", "gpu")
Preference(topic="tone", polarity="prefer", strength="high")
Preference(topic="tone", polarity="prefer").topic = "mood"
"""


def test_readme_call_forms_type_check_and_mistakes_do_not(tmp_path):
    pytest.importorskip("mypy")
    (tmp_path / "readme_forms.py").write_text(_README_FORMS)
    (tmp_path / "mistakes.py").write_text(_MISTAKES)
    root = Path(cortex.__file__).resolve().parent.parent
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), "readme_forms.py", "mistakes.py"],
        cwd=tmp_path, capture_output=True, text=True, env={"MYPYPATH": str(root), "PATH": ""}, timeout=300,
    )
    errors = [line.split(": error: ")[0] + " " + line.rsplit("[", 1)[-1].rstrip("]")
              for line in result.stdout.splitlines() if ": error: " in line]
    assert errors == [
        "mistakes.py:3 call-arg",
        "mistakes.py:4 arg-type",
        "mistakes.py:5 arg-type",
        "mistakes.py:6 misc",
    ], result.stdout + result.stderr
