"""`find()`: bounded queries (docs/data-model.md, the `where` / `order_by` / budget rules in
the `cortex.query` docstring), its one writing form (`late_binding=True`, journaled),
and a property test against a brute-force filter over `memories()`.

Every test runs on a real RocksDB store in a temporary directory, with a clock that
stands still unless advanced.
"""

from __future__ import annotations

import dataclasses
import random
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import cortex
from conftest import FakeClock, open_store
from cortex import Constraint, Fact, Goal, MemoryType, Preference
from cortex.index import DERIVED_PREFIXES
from cortex.salience import score_of
from cortex.records import META_WEIGHTS, SALIENCE_PREFIX

Q_START = datetime(2025, 2, 1, 8, 30, tzinfo=timezone.utc)


def q_open(path, clock, *, seed: int = 5, mode: str = "rw") -> cortex.Cortex:
    return open_store(Path(path), clock, mode=mode, entropy=random.Random(seed).randbytes)


@pytest.fixture
def q_clock() -> FakeClock:
    return FakeClock(Q_START)


@pytest.fixture
def q_store(tmp_path, q_clock):
    c = q_open(tmp_path / "s", q_clock)
    try:
        yield c
    finally:
        c.close()


def q_fact(i: int, subject: str = "s") -> Fact:
    return Fact(statement=f"fact number {i}", subject=subject, predicate="is")


def q_ids(memories) -> list[str]:
    return [m.id for m in memories]


def q_id(c: cortex.Cortex, uri: str) -> str:
    return c.resolve(uri).id


def q_records(c: cortex.Cortex) -> dict[str, cortex.Score]:
    return {m.id: c.salience(m.id) for m in c.memories(include_tombstoned=True)}


# ---------------------------------------------------------------------------
# boundary: bounded and selective, validated


def test_find_without_limit_or_budget_is_unbounded(q_store):
    c = q_store
    c.write(q_fact(1))
    with pytest.raises(cortex.Unbounded):
        c.find(type="Fact")
    with pytest.raises(cortex.Unbounded):
        c.find(tags=["x"])
    with pytest.raises(cortex.ValidationError):  # Unbounded is a ValidationError
        c.find(type="Fact", where={"subject": "s"})
    assert len(c.find(type="Fact", limit=1)) == 1
    assert len(c.find(type="Fact", budget_tokens=1000)) == 1


def test_find_without_type_or_tags_is_too_broad(q_store):
    c = q_store
    c.write(q_fact(1), tags=["x"])
    with pytest.raises(cortex.TooBroad):
        c.find(limit=5)
    with pytest.raises(cortex.TooBroad):
        c.find(tags=[], budget_tokens=100)
    with pytest.raises(cortex.TooBroad):
        c.find(where=("eq", "subject", "s"), limit=5)
    assert issubclass(cortex.TooBroad, cortex.ValidationError)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"type": "Fact", "where": ("eq", "no_such_field", 1)},
        {"type": "Fact", "where": {"no_such_field": 1}},
        {"type": "Fact", "where": ("and", ("eq", "subject", "s"), ("lt", "nope", 3))},
        {"type": "Fact", "where": ("not", ("eq", "nope", 3))},
        {"type": "Fact", "where": ("eq", "polarity", "avoid")},  # a field of another type
        {"type": "Goal", "where": ("eq", "topic", "tone")},
        {"tags": ["x"], "where": ("eq", "no_data_class_has_this", 1)},
    ],
    ids=["leaf", "dict", "inside-and", "inside-not", "other-type-fact", "other-type-goal", "tags-only"],
)
def test_find_unknown_where_field_is_a_validation_error(q_store, kwargs):
    c = q_store
    c.write(q_fact(1), tags=["x"])
    root = c.root()
    with pytest.raises(cortex.ValidationError):
        c.find(limit=5, **kwargs)
    assert c.root() == root


@pytest.mark.parametrize(
    "where",
    [
        ("like", "statement", "fact%"),
        ("EQ", "subject", "s"),
        ("contains", "subject", "s"),
        ("or", ("eq", "subject", "s"), ("regex", "subject", ".*")),
        ("not", ("between", "subject", "a")),
        ("xor", ("eq", "subject", "s"), ("eq", "subject", "t")),
    ],
)
def test_find_unknown_operator_is_a_validation_error(q_store, where):
    c = q_store
    c.write(q_fact(1))
    with pytest.raises(cortex.ValidationError):
        c.find(type="Fact", where=where, limit=5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"order_by": "newest"},
        {"order_by": "salience desc"},
        {"order_by": "-salience"},
        {"order_by": None},
        {"form": "long"},
        {"form": "Medium"},
        {"form": "full ", "budget_tokens": 100},
        {"where": ("in", "subject", "s")},  # 'in' takes a list, not a string
        {"where": ("eq", "subject")},
        {"where": "subject == s"},
        {"limit": 0},
        {"limit": -1},
        {"budget_tokens": -5},
        {"type": "Rumour"},
        {"type": 42},
    ],
)
def test_find_bad_arguments_are_validation_errors(q_store, kwargs):
    c = q_store
    c.write(q_fact(1))
    args = {"type": "Fact", "limit": 5, **kwargs}
    with pytest.raises(cortex.ValidationError):
        c.find(**args)


@pytest.mark.parametrize("spelling", ["Fact", cortex.Fact, MemoryType.FACT])
def test_find_type_accepts_name_class_and_member(q_store, q_clock, spelling):
    c = q_store
    facts = []
    for i in range(3):
        facts.append(c.write(q_fact(i)))
        c.write(Preference(topic=f"t{i}", polarity="prefer"))
        c.write(Goal(statement=f"g{i}", status="paused"))
        q_clock.advance(10)
    found = c.find(type=spelling, order_by="created", limit=10)
    assert q_ids(found) == [q_id(c, u) for u in facts]
    assert all(m.type is MemoryType.FACT and isinstance(m.data, Fact) for m in found)


def test_find_all_type_spellings_agree(q_store):
    c = q_store
    for i in range(4):
        c.write(q_fact(i), importance=i)
        c.write(Constraint(statement=f"c{i}", strength="soft", polarity="avoid", source="learned"))
    results = [q_ids(c.find(type=t, limit=10)) for t in ("Constraint", Constraint, MemoryType.CONSTRAINT)]
    assert results[0] == results[1] == results[2]
    assert len(results[0]) == 4


# ---------------------------------------------------------------------------
# semantics


def test_find_excludes_tombstoned_unless_asked(q_store, q_clock):
    c = q_store
    uris = []
    for i in range(4):
        uris.append(c.write(q_fact(i), tags=["t"]))
        q_clock.advance(1)
    c.tombstone(uris[1], "wrong")
    ids = [q_id(c, u) for u in uris]
    for kwargs in ({"type": "Fact"}, {"tags": ["t"]}, {"type": cortex.Fact, "tags": ["t"]}):
        assert q_ids(c.find(order_by="created", limit=10, **kwargs)) == [ids[0], ids[2], ids[3]]
        with_dead = c.find(order_by="created", limit=10, include_tombstoned=True, **kwargs)
        assert q_ids(with_dead) == ids
        assert [m.tombstoned for m in with_dead] == [False, True, False, False]


def test_find_tags_are_intersected(q_store, q_clock):
    c = q_store
    tagged = {
        "ab": c.write(q_fact(1), tags=["a", "b"]),
        "a": c.write(q_fact(2), tags=["a"]),
        "b": c.write(Goal(statement="g", status="paused"), tags=["b"]),
        "abc": c.write(Goal(statement="g2", status="completed"), tags=["c", "b", "a"]),
        "none": c.write(q_fact(3)),
    }
    ids = {k: q_id(c, u) for k, u in tagged.items()}
    assert sorted(q_ids(c.find(tags=["a", "b"], limit=10))) == sorted([ids["ab"], ids["abc"]])
    assert sorted(q_ids(c.find(tags=["b", "a"], limit=10))) == sorted([ids["ab"], ids["abc"]])
    assert q_ids(c.find(tags=["a", "b", "c"], limit=10)) == [ids["abc"]]
    assert sorted(q_ids(c.find(tags=["a"], limit=10))) == sorted([ids["ab"], ids["a"], ids["abc"]])
    assert c.find(tags=["a", "zzz"], limit=10) == []
    assert q_ids(c.find(type="Fact", tags=["a", "b"], limit=10)) == [ids["ab"]]
    assert q_ids(c.find(type="Goal", tags=["b"], order_by="created", limit=10)) == [ids["b"], ids["abc"]]


def test_find_where_operators(q_store):
    c = q_store
    p = {
        s: c.write(Preference(topic=f"topic-{s}", polarity=pol, strength=s), tags=["pref"])
        for s, pol in ((0.1, "avoid"), (0.5, "prefer"), (0.9, "prefer"), (1.0, "dont"))
    }
    ids = {s: q_id(c, u) for s, u in p.items()}

    def ask(where):
        return sorted(q_ids(c.find(type="Preference", where=where, limit=20)))

    def want(*keys):
        return sorted(ids[k] for k in keys)

    assert ask(("eq", "polarity", "prefer")) == want(0.5, 0.9)
    assert ask({"polarity": "prefer", "topic": "topic-0.9"}) == want(0.9)
    assert ask(("ne", "polarity", "prefer")) == want(0.1, 1.0)
    assert ask(("lt", "strength", 0.5)) == want(0.1)
    assert ask(("lte", "strength", 0.5)) == want(0.1, 0.5)
    assert ask(("gt", "strength", 0.5)) == want(0.9, 1.0)
    assert ask(("gte", "strength", 0.9)) == want(0.9, 1.0)
    assert ask(("in", "polarity", ["avoid", "dont"])) == want(0.1, 1.0)
    assert ask(("and", ("gte", "strength", 0.5), ("not", ("eq", "polarity", "dont")))) == want(0.5, 0.9)
    assert ask(("or", ("lt", "strength", 0.2), ("eq", "polarity", "dont"))) == want(0.1, 1.0)
    assert ask(("not", ("in", "polarity", ["prefer"]))) == want(0.1, 1.0)
    assert ask(("lt", "topic", "topic-0.5")) == want(0.1)  # strings order too
    # A value the field's own rule refuses is an error, not a query that matches nothing.
    with pytest.raises(cortex.ValidationError, match="where.strength: must be a number"):
        ask(("lt", "strength", "zzz"))
    with pytest.raises(cortex.ValidationError, match="where.topic: must be a string"):
        ask(("gte", "topic", 0))


def test_find_where_field_missing_from_a_type_does_not_match(q_store):
    c = q_store
    pref = q_id(c, c.write(Preference(topic="tone", polarity="prefer", strength=0.8), tags=["mix"]))
    cons = q_id(c, c.write(Constraint(statement="no", strength="hard", polarity="dont", source="learned"), tags=["mix"]))
    goal = q_id(c, c.write(Goal(statement="g", status="active"), tags=["mix"]))
    # strength is a number on Preference, a word on Constraint, absent on Goal
    assert q_ids(c.find(tags=["mix"], where=("gte", "strength", 0.5), limit=10)) == [pref]
    assert q_ids(c.find(tags=["mix"], where=("eq", "strength", "hard"), limit=10)) == [cons]
    assert sorted(q_ids(c.find(tags=["mix"], where=("ne", "strength", "hard"), limit=10))) == [pref]
    assert sorted(q_ids(c.find(tags=["mix"], where=("eq", "status", "active"), limit=10))) == [goal]


def test_find_order_by_created_and_newest_first_with_id_ties(q_store, q_clock):
    c = q_store
    first = [c.write(q_fact(i)) for i in range(3)]  # same created_at: ids break the tie
    q_clock.advance(5)
    later = c.write_many([cortex.Write(q_fact(10 + i)) for i in range(2)])
    ids = [q_id(c, u) for u in first + later]
    assert q_ids(c.find(type="Fact", order_by="created", limit=10)) == ids
    assert q_ids(c.find(type="Fact", order_by="-created", limit=10)) == ids[3:] + ids[:3]
    assert q_ids(c.find(type="Fact", order_by="created", limit=2)) == ids[:2]
    assert q_ids(c.find(type="Fact", order_by="-created", limit=1)) == [ids[3]]


def test_find_order_by_salience_uses_live_scores(q_store, q_clock):
    c = q_store
    low = c.write(q_fact(1), importance=1)
    high = c.write(q_fact(2), importance=9)
    mid = c.write(q_fact(3), importance=5)
    pinned = c.write(Goal(statement="g", status="active"), tags=["x"])  # pinned: floor 0.7
    c.write(Goal(statement="g2", status="paused"), importance=10, tags=["x"])
    assert q_ids(c.find(type="Fact", limit=10)) == [q_id(c, u) for u in (high, mid, low)]
    c.attest([low], "success")
    c.attest([low], "success")
    q_clock.advance(3600)
    found = c.find(type="Fact", limit=10)
    now = q_clock.now
    scores = {m.id: score_of(c.salience(m.id), now, c.weights()) for m in found}
    assert q_ids(found) == sorted(scores, key=lambda i: (-scores[i], i))
    assert q_ids(c.find(tags=["x"], limit=1)) == [q_id(c, pinned)]


def test_find_budget_takes_the_longest_fitting_prefix_and_at_least_one(q_store, q_clock):
    c = q_store
    uris = []
    for i in range(6):
        uris.append(c.write(Fact(statement="word " * (5 + 10 * i), subject="s", predicate="p")))
        q_clock.advance(1)
    ordered = c.find(type="Fact", order_by="created", limit=10)
    medium = [m.tokens["medium"] for m in ordered]
    short = [m.tokens["short"] for m in ordered]
    full = [m.tokens["full"] for m in ordered]

    def prefix(tokens, budget):
        n, used = 0, 0
        for t in tokens:
            if n and used + t > budget:
                break
            n, used = n + 1, used + t
        return n

    for budget in (1, medium[0], medium[0] + medium[1] - 1, medium[0] + medium[1], sum(medium) - 1, sum(medium), 10_000):
        got = c.find(type="Fact", order_by="created", budget_tokens=budget)
        assert q_ids(got) == q_ids(ordered[: prefix(medium, budget)])
        assert len(got) >= 1
    budget = short[0] + short[1] + short[2]
    assert len(c.find(type="Fact", order_by="created", budget_tokens=budget, form="short")) == prefix(short, budget)
    budget = full[0] + full[1]
    assert len(c.find(type="Fact", order_by="created", budget_tokens=budget, form="full")) == prefix(full, budget)
    # limit and budget together: whichever is tighter
    assert len(c.find(type="Fact", order_by="created", budget_tokens=10_000, limit=2)) == 2
    assert len(c.find(type="Fact", order_by="created", budget_tokens=1, limit=4)) == 1


def test_find_with_no_match_returns_empty_list(q_store):
    c = q_store
    c.write(q_fact(1))
    assert c.find(type="Goal", limit=3) == []
    assert c.find(tags=["nothing"], budget_tokens=50) == []
    assert c.find(type="Fact", where=("eq", "subject", "other"), limit=3) == []


def test_find_returns_the_current_versions(q_store, q_clock):
    c = q_store
    uri = c.write(q_fact(1), tags=["t"])
    q_clock.advance(2)
    v2 = c.update(uri, Fact(statement="revised", subject="s", predicate="is"))
    found = c.find(tags=["t"], limit=5)
    assert [m.uri for m in found] == [v2]
    assert found[0] == c.resolve(v2)
    assert c.find(type="Fact", where=("eq", "statement", "fact number 1"), limit=5) == []


# ---------------------------------------------------------------------------
# find() and the root; late binding


def test_plain_find_does_not_change_root_or_records(q_store, q_clock):
    c = q_store
    for i in range(5):
        c.write(q_fact(i), tags=["t"], importance=i)
    c.attest([m.uri for m in c.memories()][:2], "success")
    root, records, weights = c.root(), q_records(c), c.weights()
    q_clock.advance(60)
    for order in ("salience", "created", "-created"):
        c.find(type="Fact", order_by=order, limit=3)
        c.find(tags=["t"], order_by=order, budget_tokens=20, include_tombstoned=True)
    assert c.root() == root
    assert q_records(c) == records
    assert c.weights() == weights
    assert c.stats()["journal_seq"] == 5 + 1


def test_late_binding_find_counts_an_access_and_is_journaled(q_store, q_clock):
    c = q_store
    uris = [c.write(q_fact(i), tags=["t"], importance=i) for i in range(6)]
    c.tombstone(uris[0], "old")
    q_clock.advance(30)
    before = q_records(c)
    root = c.root()

    found = c.find(type="Fact", order_by="created", limit=3, late_binding=True)
    returned = set(q_ids(found))
    assert len(returned) == 3
    assert c.root() != root
    after = q_records(c)
    for mid, record in after.items():
        bump = 1 if mid in returned else 0
        assert record.access_count == before[mid].access_count + bump
        assert record.citations == before[mid].citations
    assert c.verify() == []

    # a second one bumps again and changes the root again
    root2 = c.root()
    again = c.find(tags=["t"], order_by="-created", limit=2, late_binding=True)
    assert c.root() != root2
    for m in again:
        assert c.salience(m.id).access_count == after[m.id].access_count + 1
    assert c.verify() == []

    # a late-binding find that returns nothing writes nothing
    root3 = c.root()
    assert c.find(type="Goal", limit=3, late_binding=True) == []
    assert c.root() == root3

    # the access bumps are in the journal: rebuild() reproduces them exactly
    records, weights = q_records(c), c.weights()
    derived = {}
    for prefix in (*DERIVED_PREFIXES, SALIENCE_PREFIX):
        derived.update(dict(c._engine.storage.scan_items(prefix)))
    for key in [META_WEIGHTS, *derived]:
        c._engine.storage.write({key: None})
    c.rebuild()
    assert q_records(c) == records
    assert c.weights() == weights
    rebuilt = {}
    for prefix in (*DERIVED_PREFIXES, SALIENCE_PREFIX):
        rebuilt.update(dict(c._engine.storage.scan_items(prefix)))
    assert rebuilt == derived
    assert c.verify() == []


def test_late_binding_find_on_read_only_handle_raises(tmp_path, q_clock):
    path = tmp_path / "s"
    with q_open(path, q_clock) as writer:
        uri = writer.write(q_fact(1))
        root = writer.root()
        reader = q_open(path, q_clock, mode="r")
        try:
            assert q_ids(reader.find(type="Fact", limit=3)) == [q_id(writer, uri)]
            with pytest.raises(cortex.ReadOnlyStore):
                reader.find(type="Fact", limit=3, late_binding=True)
        finally:
            reader.close()
        assert writer.root() == root
        assert writer.salience(uri).access_count == 0


# ---------------------------------------------------------------------------
# property: find() equals a brute-force filter over memories()


Q_TAGS = ["red", "green", "blue", "amber"]
Q_STATEMENTS = ["alpha", "beta", "gamma", "delta"]
Q_SUBJECTS = ["alice", "bob", "carol"]
Q_TOPICS = ["tone", "length", "format"]
Q_POLARITIES = ["prefer", "avoid", "neutral", "do", "dont"]
Q_STATUSES = ["active", "paused", "completed", "abandoned"]
Q_STRENGTH_WORDS = ["soft", "firm", "hard"]
Q_STRENGTH_NUMBERS = [0.0, 0.25, 0.5, 0.75, 1.0]
Q_SOURCES = ["user_declared", "learned", "inferred"]

Q_FIELDS = {
    MemoryType.FACT: ["statement", "subject"],
    MemoryType.PREFERENCE: ["topic", "polarity", "strength"],
    MemoryType.GOAL: ["statement", "status"],
    MemoryType.CONSTRAINT: ["statement", "strength", "polarity", "source"],
}
Q_VALUES = {
    "statement": Q_STATEMENTS + ["b", "zzz"],
    "subject": Q_SUBJECTS,
    "topic": Q_TOPICS,
    "polarity": Q_POLARITIES,
    "status": Q_STATUSES,
    "strength": Q_STRENGTH_NUMBERS + Q_STRENGTH_WORDS + [0.4, 1],
    "source": Q_SOURCES,
}
Q_TYPE_SPELLINGS = {
    MemoryType.FACT: ["Fact", Fact, MemoryType.FACT],
    MemoryType.PREFERENCE: ["Preference", Preference, MemoryType.PREFERENCE],
    MemoryType.GOAL: ["Goal", Goal, MemoryType.GOAL],
    MemoryType.CONSTRAINT: ["Constraint", Constraint, MemoryType.CONSTRAINT],
}


def q_data(draw, mtype: MemoryType):
    pick = lambda values: draw(st.sampled_from(values))  # noqa: E731
    if mtype is MemoryType.FACT:
        return Fact(statement=pick(Q_STATEMENTS), subject=pick(Q_SUBJECTS), predicate="is")
    if mtype is MemoryType.PREFERENCE:
        return Preference(topic=pick(Q_TOPICS), polarity=pick(Q_POLARITIES), strength=pick(Q_STRENGTH_NUMBERS))
    if mtype is MemoryType.GOAL:
        return Goal(statement=pick(Q_STATEMENTS), status=pick(Q_STATUSES))
    return Constraint(statement=pick(Q_STATEMENTS), strength=pick(Q_STRENGTH_WORDS), polarity=pick(Q_POLARITIES), source=pick(Q_SOURCES))


# Values each type's rule accepts for `strength` (a number on Preference, a word on
# Constraint); a query without a type may use either.
Q_STRENGTH_BY_TYPE = {MemoryType.PREFERENCE: Q_STRENGTH_NUMBERS + [0.4, 1], MemoryType.CONSTRAINT: Q_STRENGTH_WORDS}


def q_predicate(fields: list[str], mtype: MemoryType | None = None):
    def leaf_for(name):
        choices = Q_STRENGTH_BY_TYPE[mtype] if name == "strength" and mtype in Q_STRENGTH_BY_TYPE else Q_VALUES[name]
        values = st.sampled_from(choices)
        return st.one_of(
            st.tuples(st.sampled_from(["eq", "ne", "lt", "lte", "gt", "gte"]), st.just(name), values),
            st.tuples(st.just("in"), st.just(name), st.lists(values, min_size=1, max_size=3)),
        )

    leaf = st.sampled_from(fields).flatmap(leaf_for)
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3).map(lambda ps: ("and", *ps)),
            st.lists(inner, min_size=1, max_size=3).map(lambda ps: ("or", *ps)),
            inner.map(lambda p: ("not", p)),
        ),
        max_leaves=5,
    )


_Q_MISSING = object()


def q_orderable(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    numbers = (int, float)
    return (isinstance(a, numbers) and isinstance(b, numbers)) or (isinstance(a, str) and isinstance(b, str))


def q_matches(pred, data) -> bool:
    """The `where` semantics of the cortex.query docstring, evaluated naively."""
    op = pred[0]
    if op == "and":
        return all(q_matches(p, data) for p in pred[1:])
    if op == "or":
        return any(q_matches(p, data) for p in pred[1:])
    if op == "not":
        return not q_matches(pred[1], data)
    _, name, value = pred
    if name not in {f.name for f in dataclasses.fields(data)}:
        return False  # a memory without the field does not match
    v = getattr(data, name)
    if op == "eq":
        return v == value
    if op == "ne":
        return v != value
    if op == "in":
        return v in value
    if not q_orderable(v, value):
        return False
    return {"lt": v < value, "lte": v <= value, "gt": v > value, "gte": v >= value}[op]


def q_brute_force(c, now, *, mtype, tags, where, order_by, limit, budget, form, include_tombstoned):
    weights = c.weights()
    pool = [
        m for m in c.memories(include_tombstoned=include_tombstoned)
        if (mtype is None or m.type == mtype)
        and all(t in m.tags for t in tags)
        and (where is None or q_matches(where, m.data))
    ]
    if order_by == "salience":
        score = {m.id: score_of(c.salience(m.id), now, weights) for m in pool}
        pool.sort(key=lambda m: (-score[m.id], m.id))
    elif order_by == "created":
        pool.sort(key=lambda m: (m.created_at, m.id))
    else:
        pool.sort(key=lambda m: (-((m.created_at - Q_START) // timedelta(microseconds=1)), m.id))
    if limit is not None:
        pool = pool[:limit]
    if budget is not None:
        out, used = [], 0
        for m in pool:
            t = m.tokens[form or "medium"]
            if out and used + t > budget:
                break
            out.append(m)
            used += t
        pool = out
    return pool


@st.composite
def q_scenario(draw):
    n = draw(st.integers(10, 40))
    memories = []
    for _ in range(n):
        mtype = draw(st.sampled_from(list(Q_FIELDS)))
        memories.append(
            (
                q_data(draw, mtype),
                draw(st.lists(st.sampled_from(Q_TAGS), max_size=3, unique=True)),
                draw(st.integers(0, 10)),
                draw(st.sampled_from([0, 0, 1, 0.0005, 3600, 86400 * 7, 86400 * 40])),  # clock advance before
            )
        )
    tombstoned = draw(st.lists(st.integers(0, n - 1), max_size=n // 3, unique=True))
    attests = draw(
        st.lists(
            st.tuples(
                st.lists(st.integers(0, n - 1), min_size=1, max_size=4, unique=True),
                st.sampled_from(["success", "success", "failure"]),
                st.sampled_from([None, "factual_error", "wrong_assumption"]),
                st.integers(0, 86400 * 10),
            ),
            max_size=8,
        )
    )
    queries = []
    for _ in range(draw(st.integers(3, 6))):
        mtype = draw(st.none() | st.sampled_from(list(Q_FIELDS)))
        tags = draw(st.lists(st.sampled_from(Q_TAGS), min_size=0 if mtype else 1, max_size=2, unique=True))
        fields = Q_FIELDS[mtype] if mtype else sorted({f for fs in Q_FIELDS.values() for f in fs})
        where = draw(st.none() | q_predicate(fields, mtype))
        budget = draw(st.none() | st.integers(1, 120))
        limit = draw((st.none() if budget is not None else st.nothing()) | st.integers(1, 15))
        queries.append(
            {
                "mtype": mtype,
                "spelling": draw(st.sampled_from(Q_TYPE_SPELLINGS[mtype])) if mtype else None,
                "tags": tags,
                "where": where,
                "order_by": draw(st.sampled_from(["salience", "created", "-created"])),
                "limit": limit,
                "budget": budget,
                "form": draw(st.sampled_from([None, "short", "medium", "full"])),
                "include_tombstoned": draw(st.booleans()),
            }
        )
    final_advance = draw(st.sampled_from([0, 60, 86400 * 30]))
    return memories, tombstoned, attests, queries, final_advance


@settings(max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(q_scenario())
def test_find_equals_brute_force_filter(scenario):
    memories, tombstoned, attests, queries, final_advance = scenario
    clock = FakeClock()
    with tempfile.TemporaryDirectory() as tmp, q_open(Path(tmp) / "s", clock) as c:
        uris = []
        for data, tags, importance, advance in memories:
            clock.advance(advance)
            uris.append(c.write(data, tags=tags, importance=importance))
        dead = set()
        for i in tombstoned:
            clock.advance(1)
            c.tombstone(uris[i], "random")
            dead.add(i)
        for cited, outcome, reason, advance in attests:
            live = [uris[i] for i in cited if i not in dead]
            if live:
                clock.advance(advance)
                c.attest(live, outcome, reason)
        clock.advance(final_advance)
        now = clock.now
        root = c.root()

        for q in queries:
            got = c.find(
                type=q["spelling"], tags=q["tags"], where=q["where"], order_by=q["order_by"],
                limit=q["limit"], budget_tokens=q["budget"], form=q["form"],
                include_tombstoned=q["include_tombstoned"],
            )
            want = q_brute_force(
                c, now, mtype=q["mtype"], tags=q["tags"], where=q["where"], order_by=q["order_by"],
                limit=q["limit"], budget=q["budget"], form=q["form"], include_tombstoned=q["include_tombstoned"],
            )
            assert q_ids(got) == q_ids(want), q
            event(f"results: {'0' if not want else '1-2' if len(want) < 3 else '3+'}")
            if q["budget"] is not None and (q["limit"] is None or len(want) < q["limit"]):
                event("budget query")
            if any(m.tombstoned for m in want):
                event("tombstoned in result")
            assert got == want  # the same Memory objects (current version, every field)
        assert c.root() == root
