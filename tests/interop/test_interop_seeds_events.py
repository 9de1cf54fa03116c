"""HMX-E (seed 001): the per-session monotonic `sequence`, the event schema shipped in
the package, and the docs' example of every type. Runs on PostgreSQL too
(test_backends_interop_seeds.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from interop_helpers import Clock, open_store

import cortex
from cortex.interop import hmx_events, schema_check

DOCS = Path(__file__).resolve().parents[2] / "docs" / "interop-seeds.md"


def doc_examples() -> list[dict]:
    """The JSON blocks of the docs page's "One example per type" section."""
    text = DOCS.read_text()
    section = text[text.index("### One example per type"):]
    section = section[: section.index("\n## ")] if "\n## " in section else section
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", section, flags=re.S)]


def ev(event_id: str, sequence: int, session: str = "sess_a") -> dict:
    return {"hmx_version": "HMX-1.0", "event_id": event_id, "event_type": "observation", "agent_id": "agent-ops-1",
            "tenant_id": "ten_acme", "session_id": session, "timestamp": "2026-03-15T00:12:34Z", "sequence": sequence,
            "content": {"observation": f"seen {event_id}"}}


@pytest.fixture
def store(tmp_path):
    c = open_store(tmp_path / "s", clock=Clock())
    yield c
    c.close()


def test_the_docs_hold_one_complete_example_per_type_and_they_ingest(store):
    examples = doc_examples()
    assert [e["event_type"] for e in examples] == list(hmx_events.EVENT_TYPES)
    validator = jsonschema.Draft202012Validator(schema_check.load("hmx_event"), format_checker=jsonschema.FormatChecker())
    required = ("hmx_version", "event_id", "event_type", "agent_id", "tenant_id", "session_id", "timestamp", "sequence",
                "content", "metadata")
    for e in examples:
        validator.validate(e)
        assert all(key in e for key in required)  # every field of seed 001's table
    uris = store.ingest_hmx(examples)
    assert len(set(uris)) == 13
    assert [store.resolve(u).sequence for u in uris] == list(range(1, 14))
    root = store.root()
    assert store.ingest_hmx(examples) == uris and store.root() == root  # again: a no-op


def test_the_event_schema_ships_in_the_package():
    from importlib import resources

    shipped = resources.files("cortex.interop").joinpath("schemas", "hmx_event.schema.json")
    schema = json.loads(shipped.read_text())
    assert schema == schema_check.load("hmx_event")
    jsonschema.Draft202012Validator.check_schema(schema)
    assert set(schema["required"]) == {"hmx_version", "event_id", "event_type", "agent_id", "tenant_id", "session_id",
                                       "timestamp", "sequence", "content"}


def test_a_sequence_that_goes_back_within_an_input_is_refused_naming_both_lines(store):
    root = store.root()
    with pytest.raises(cortex.MalformedEvent) as info:
        store.ingest_hmx([ev("e1", 5), ev("x1", 1, "sess_b"), ev("e2", 2), ev("e3", 2)])
    assert str(info.value) == "line 3: sequence: must be greater than 5, the sequence of line 1 in session 'sess_a' (got 2)"
    assert (info.value.line, info.value.field) == (3, "sequence")
    assert store.root() == root and store.stats()["memories"] == 0  # nothing written
    with pytest.raises(cortex.MalformedEvent) as info:
        store.ingest_hmx([ev("e1", 1), ev("e2", 2), ev("e3", 2)])  # equal is not greater
    assert str(info.value) == "line 3: sequence: must be greater than 2, the sequence of line 2 in session 'sess_a' (got 2)"


def test_each_session_has_its_own_counter_and_a_repeated_event_is_not_checked(store):
    uris = store.ingest_hmx([ev("e1", 1), ev("x1", 1, "sess_b"), ev("e2", 2), ev("e1", 1), ev("x2", 2, "sess_b")])
    assert uris[0] == uris[3] and len(set(uris)) == 4


def test_a_sequence_at_or_below_what_the_store_holds_is_refused_naming_the_stored_event(store):
    first = store.ingest_hmx([ev("e1", 1), ev("e2", 7)])
    root = store.root()
    with pytest.raises(cortex.MalformedEvent) as info:
        store.ingest_hmx([ev("e9", 8), ev("e3", 3)])
    assert str(info.value) == ("line 2: sequence: must be greater than 8, the sequence of line 1 in session 'sess_a' (got 3)")
    with pytest.raises(cortex.MalformedEvent) as info:
        store.ingest_hmx([ev("e3", 3)])
    assert str(info.value) == ("line 1: sequence: must be greater than 7, the highest sequence of session 'sess_a' in the "
                               f"store (event e2, {first[1]}) (got 3)")
    assert store.root() == root
    # Sending the stored events again, then new ones, is fine: the stored ones are skipped.
    again = store.ingest_hmx([ev("e1", 1), ev("e2", 7), ev("e8", 8)])
    assert again[:2] == first and store.resolve(again[2]).sequence == 8
    # Another session is not held back by this one.
    assert store.ingest_hmx([ev("y1", 1, "sess_c")])


@pytest.mark.parametrize(("content", "field"), [
    ({"passed": 1.0, "failed": 0}, "content.passed"),  # an integer the schema and the reader both want
    ({"passed": 1, "failed": 0, "suite": ""}, "content.suite"),
])
def test_an_event_the_schema_refuses_is_refused_naming_the_field(store, content, field):
    bad = {**ev("t1", 1), "event_type": "test_run", "content": content}
    with pytest.raises(cortex.MalformedEvent) as info:
        store.ingest_hmx([bad])
    assert (info.value.line, info.value.field) == (1, field)
    assert store.stats()["memories"] == 0


def test_the_ingest_runs_every_event_through_the_shipped_schema(store):
    # The reader's own check takes any Unicode digit in a version ("HMX-1.٠" reads as 1.0);
    # the shipped schema takes ASCII digits only, and the ingest applies it.
    odd = {**ev("v1", 1), "hmx_version": "HMX-1.\u0660"}
    with pytest.raises(cortex.MalformedEvent) as info:
        store.ingest_hmx([ev("v0", 0), odd])
    assert (info.value.line, info.value.field) == (2, "hmx_version")
    assert info.value.rule.startswith("breaks the HMX event schema: ")
    assert store.stats()["memories"] == 0
