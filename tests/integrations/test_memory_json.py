"""The JSON form of one memory (cortex.interop.memory_json, docs/cli.md)."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

import cortex
from cortex.interop.memory_json import TYPE_NAMES, data_fields, memory_from_json, memory_to_json

from integration_helpers import TickClock, open_store

# One memory of every type, every field given, as a user would write it in JSON.
FULL = [
    {"type": "Identity", "data": {"name": "ops-1", "did": "did:example:1", "wallets": ["w1"], "roles": ["op", "buyer"],
                                  "public_keys": ["k1"]}},
    {"type": "Fact", "data": {"statement": "A100 spot is 1.40 USD/h", "subject": "acme", "predicate": "price",
                              "object": "A100", "source": "invoice 7", "as_of": "2025-01-31T12:00:00Z"},
     "frames": [{"verb": "acquire", "kind": "service", "ref": "gpu"}], "tags": ["pricing"], "importance": 5},
    {"type": "Preference", "data": {"topic": "tone", "polarity": "prefer", "strength": 0.75, "value": "terse",
                                    "rationale": "short answers"}, "confidence": 0.5, "source": "chat"},
    {"type": "Belief", "data": {"statement": "acme is reliable", "stance": "suspect", "subject": "acme",
                                "evidence_for": ["3 runs"], "evidence_against": []}},
    {"type": "Event", "data": {"kind": "payment", "outcome": "partial", "intent_ref": "i-9", "counterparty": "acme",
                               "cost": {"asset": "USD", "amount": 1.25}, "duration": 3.5, "artifacts": ["r.pdf"],
                               "summary": "half paid"},
     "frames": [{"verb": "negotiate", "kind": "agent", "ref": "acme"}, {"verb": "acquire", "kind": "service", "ref": "gpu"}]},
    {"type": "Goal", "data": {"statement": "stay under budget", "status": "active", "horizon_end": "2025-06-30T00:00:00+02:00",
                              "success_criteria": ["< 500 USD"], "subgoals": ["renegotiate"]},
     "expires_at": "2026-01-01T00:00:00Z"},
    {"type": "Constraint", "data": {"statement": "EU providers only", "strength": "firm", "polarity": "prefer",
                                    "source": "user_declared", "trigger": "on purchase"}},
    {"type": "Capability", "data": {"subject": "acme", "capability": "serve llama", "parameters": {"ctx": "8k", "gpu": "A100"},
                                    "verified": True, "last_observed": "2025-02-01T08:30:00.250000Z"}},
    {"type": "Pattern", "data": {"statement": "spot is scarce on Mondays", "derived_from": ["e1", "e2"], "strength": 0.6,
                                 "coverage": 4}},
]


def test_every_type_is_covered():
    assert [m["type"] for m in FULL] == list(TYPE_NAMES)
    assert data_fields("Fact") == ("statement", "subject", "predicate", "object", "source", "as_of")


@pytest.mark.parametrize("obj", FULL, ids=[m["type"] for m in FULL])
def test_write_resolve_and_back_to_the_same_json(tmp_path, obj):
    with open_store(tmp_path / "s", clock=TickClock()) as c:
        uri = c.write_many([memory_from_json(json.loads(json.dumps(obj)))])[0]
        out = memory_to_json(c.resolve(uri))
        # What went in comes back: same type, data (times in UTC), frames, tags, numbers.
        assert out["type"] == obj["type"]
        for name, value in obj["data"].items():
            if name in ("as_of", "horizon_end", "last_observed"):
                assert datetime.fromisoformat(out["data"][name]) == datetime.fromisoformat(value)
            elif name == "cost":
                assert out["data"][name] == [value["asset"], value["amount"]]
            else:
                assert out["data"][name] == value
        assert out["frames"] == obj.get("frames", [])
        assert out["tags"] == obj.get("tags", [])
        assert out["importance"] == obj.get("importance", 0)
        assert out["confidence"] == obj.get("confidence", 1.0)
        assert out["source"] == obj.get("source", "user_input")
        assert ("expires_at" in out) == ("expires_at" in obj)
        # ...and the JSON of a stored memory writes the same memory again.
        again = c.resolve(c.write_many([memory_from_json(json.loads(json.dumps(out)))])[0])
        assert memory_to_json(again) == out
        assert again.data == c.resolve(uri).data


@pytest.mark.parametrize(
    ("obj", "error", "field"),
    [
        ([1, 2], cortex.ValidationError, "memory"),
        ({"data": {}}, cortex.ValidationError, "type"),
        ({"type": "Fakt", "data": {}}, cortex.ValidationError, "type"),
        ({"type": 2, "data": {}}, cortex.ValidationError, "type"),
        ({"type": "Fact"}, cortex.ValidationError, "data"),
        ({"type": "Fact", "data": "x"}, cortex.ValidationError, "data"),
        ({"type": "Fact", "data": {"subject": "s", "predicate": "p"}}, cortex.ValidationError, "data.statement"),
        ({"type": "Fact", "data": {"statement": "", "subject": "s", "predicate": "p"}}, cortex.ValidationError, "data.statement"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p", "colour": "red"}},
         cortex.ValidationError, "data.colour"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p", "as_of": "yesterday"}},
         cortex.ValidationError, "data.as_of"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p", "as_of": "2025-01-01T00:00:00"}},
         cortex.ValidationError, "data.as_of"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p", "as_of": 1700000000}},
         cortex.ValidationError, "data.as_of"),
        ({"type": "Goal", "data": {"statement": "x", "status": "someday"}}, cortex.ValidationError, "data.status"),
        ({"type": "Goal", "data": {"statement": "x", "status": "active", "subgoals": {"a": 1}}}, cortex.ValidationError, "data.subgoals"),
        ({"type": "Goal", "data": {"statement": "x", "status": "active", "subgoals": "abc"}}, cortex.ValidationError, "data.subgoals"),
        ({"type": "Preference", "data": {"topic": "t", "polarity": "prefer", "strength": 2}}, cortex.ValidationError, "data.strength"),
        ({"type": "Event", "data": {"kind": "payment", "outcome": "success", "cost": {"asset": "USD", "amount": -1}}},
         cortex.ValidationError, "data.cost.amount"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "frames": {"verb": "find"}},
         cortex.ValidationError, "frames"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "frames": ["find"]},
         cortex.ValidationError, "frames[0]"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"},
          "frames": [{"verb": "acquire", "kind": "service", "ref": "a"}, {"verb": "acquire", "kind": "planet", "ref": "b"}]},
         cortex.InvalidObjKind, "frames[1].kind"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"},
          "frames": [{"verb": "fly", "kind": "service", "ref": "a"}]}, cortex.InvalidVerb, "frames[0].verb"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"},
          "frames": [{"verb": "find", "kind": "service", "ref": ""}]}, cortex.EmptyObjRef, "frames[0].ref"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"},
          "frames": [{"verb": "find", "kind": "service"}]}, cortex.ValidationError, "frames[0].ref"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"},
          "frames": [{"verb": "find", "kind": "service", "ref": "a", "weight": 1}]}, cortex.ValidationError, "frames[0].weight"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "tags": "a"}, cortex.ValidationError, "tags"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "tags": ["ok", 3]}, cortex.ValidationError, "tags[1]"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "tags": ["x" * 65]}, cortex.ValidationError, "tags[0]"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "importance": 11}, cortex.ValidationError, "importance"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "importance": True}, cortex.ValidationError, "importance"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "confidence": "high"}, cortex.ValidationError, "confidence"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "source": ""}, cortex.ValidationError, "source"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "expires_at": "soon"}, cortex.ValidationError, "expires_at"),
        ({"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "pinned": True}, cortex.ValidationError, "pinned"),
    ],
)
def test_bad_json_names_the_field(obj, error, field):
    with pytest.raises(error) as info:
        memory_from_json(obj)
    assert type(info.value) is error
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")
