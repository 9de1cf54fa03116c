"""Provenance on memories: occurred_at, session, sequence, origin, attributes
(cortex/provenance.py), through write, update, find(session=...), the JSON forms,
export/import and HMX ingest."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cortex
from cortex import Event, Fact, Origin, Write
from cortex.errors import TooBroad, ValidationError
from cortex.interop.memory_json import memory_from_json, memory_to_json
from cortex.provenance import Provenance
from cortex.records import Head, head_key

from conftest import START, open_store

AT = datetime(2026, 3, 15, 0, 12, 34, 567000, tzinfo=timezone.utc)


def _event(n: int = 0) -> Event:
    return Event(kind="dispatch", outcome="success", counterparty=f"tool{n}")


def test_a_memory_carries_its_provenance(store):
    uri = store.write(_event(), occurred_at=AT, session="sess_1", sequence=4,
                      origin=Origin(event_id="evt_1", tenant="ten_acme", agent="agent-ops-1"),
                      attributes={"status": 503, "endpoint": "billing-api"})
    m = store.resolve(uri)
    assert (m.occurred_at, m.session, m.sequence) == (AT, "sess_1", 4)
    assert m.origin == Origin(event_id="evt_1", message_id=None, tenant="ten_acme", agent="agent-ops-1")
    assert m.attributes == {"endpoint": "billing-api", "status": 503}
    assert m.created_at == START
    d = m.to_dict()
    assert d["occurred_at"] == "2026-03-15T00:12:34.567000Z" and d["session"] == "sess_1"
    assert d["origin"] == {"event_id": "evt_1", "message_id": None, "tenant": "ten_acme", "agent": "agent-ops-1"}
    assert store.verify() == []


def test_without_provenance_occurred_at_is_created_at_and_records_are_unchanged(store):
    uri = store.write(_event())
    m = store.resolve(uri)
    assert m.occurred_at == m.created_at == START
    assert (m.session, m.sequence, m.origin, m.attributes) == (None, None, None, None)
    assert set(m.to_dict()) == {"id", "uri", "type", "data", "version", "frames", "tags", "importance", "confidence",
                                "source", "created_at", "updated_at", "tombstoned", "forms", "tokens", "expires_at"}
    # the head is stored as before provenance existed: 14 fields, no 15th
    raw = store._engine.storage.get(head_key(cortex.ids.decode_id(m.id)))
    assert len(cortex.records.unpack_head(b"k", raw)) == 14


def test_update_keeps_the_provenance_and_old_versions_keep_theirs(store):
    uri = store.write(_event(1), occurred_at=AT, session="s", sequence=2)
    new = store.update(uri, _event(2))
    assert store.resolve(new).session == "s" and store.resolve(new).occurred_at == AT
    assert store.resolve(uri).sequence == 2 and store.resolve(uri).data.counterparty == "tool1"
    assert store.verify() == []


@pytest.mark.parametrize(("kwargs", "field", "rule"), [
    ({"session": ""}, "session", "must be a non-empty string"),
    ({"session": "x" * 257}, "session", "at most 256 bytes"),
    ({"sequence": -1}, "sequence", "within 0.."),
    ({"sequence": True}, "sequence", "must be an integer"),
    ({"occurred_at": datetime(2026, 1, 1)}, "occurred_at", "timezone-aware"),
    ({"origin": {"event_id": "e"}}, "origin", "must be a cortex.Origin"),
    ({"attributes": ["a"]}, "attributes", "must be a JSON object"),
    ({"attributes": {"x": float("nan")}}, "attributes.x", "finite"),
    ({"attributes": {"x": object()}}, "attributes.x", "JSON values only"),
    ({"attributes": {"x": "y" * 17000}}, "attributes.x", "at most"),
])
def test_bad_provenance_is_refused_and_writes_nothing(store, kwargs, field, rule):
    before = store.root()
    with pytest.raises(ValidationError) as info:
        store.write(_event(), **kwargs)
    assert info.value.field == field and rule in info.value.rule
    assert store.root() == before


@pytest.mark.no_store
def test_origin_checks_its_fields():
    with pytest.raises(ValidationError) as info:
        Origin(event_id="")
    assert info.value.field == "origin.event_id"


def test_find_selects_by_session_in_sequence_order(store):
    uris = {}
    for seq in (3, 1, 2):
        uris[seq] = store.write(_event(seq), session="s1", sequence=seq)
    store.write(_event(9), session="s2", sequence=1)
    fact = store.write(Fact(statement="x", subject="a", predicate="b"), session="s1", sequence=0)
    got = store.find(session="s1", order_by="sequence", limit=10)
    assert [m.uri for m in got] == [fact, uris[1], uris[2], uris[3]]
    assert [m.uri for m in store.find(session="s1", type="Event", order_by="sequence", limit=10)] == [uris[1], uris[2], uris[3]]
    assert [m.uri for m in store.find(session="s1", type="Event", order_by="sequence", limit=2)] == [uris[1], uris[2]]
    store.tombstone(uris[2], "wrong")
    assert [m.uri for m in store.find(session="s1", type="Event", order_by="sequence", limit=10)] == [uris[1], uris[3]]
    assert len(store.find(session="s1", type="Event", order_by="sequence", limit=10, include_tombstoned=True)) == 3
    assert store.find(session="nope", limit=10) == []
    with pytest.raises(ValidationError) as info:
        store.find(type="Event", order_by="sequence", limit=10)
    assert info.value.field == "order_by"
    with pytest.raises(TooBroad):
        store.find(limit=10)
    assert store.verify() == []


def test_rebuild_recreates_the_session_index(store):
    store.write(_event(), session="s1", sequence=1)
    engine = store._engine
    keys = [k for k, _ in engine.storage.scan_items(b"idx/session/")]
    assert len(keys) == 1
    engine.write({keys[0]: None})
    assert any("idx/session/" in p for p in store.verify())
    store.rebuild()
    assert store.verify() == []
    assert len(store.find(session="s1", limit=5)) == 1


def test_memory_json_round_trip(store):
    uri = store.write(_event(), occurred_at=AT, session="s", sequence=7, origin=Origin(message_id="m1"),
                      attributes={"a": [1, {"b": None}]})
    obj = memory_to_json(store.resolve(uri))
    assert obj["occurred_at"] == "2026-03-15T00:12:34.567000Z"
    assert obj["origin"] == {"message_id": "m1"} and obj["attributes"] == {"a": [1, {"b": None}]}
    again = store.resolve(store.write_many([memory_from_json(json.loads(json.dumps(obj)))])[0])
    assert (again.occurred_at, again.session, again.sequence, again.origin, again.attributes) == (
        AT, "s", 7, Origin(message_id="m1"), {"a": [1, {"b": None}]})
    assert "session" not in memory_to_json(store.resolve(store.write(_event())))
    with pytest.raises(ValidationError) as info:
        memory_from_json({"type": "Event", "data": {"kind": "dispatch", "outcome": "success"}, "origin": {"tenantx": "t"}})
    assert info.value.field == "origin.tenantx"


def test_export_import_keeps_provenance(tmp_path):
    with open_store(tmp_path / "a") as a:
        a.write(_event(1), occurred_at=AT, session="s", sequence=1, origin=Origin(event_id="e"), attributes={"k": "v"})
        uri = a.write(_event(2))
        a.update(uri, _event(3))
        a.export_jsonl(tmp_path / "a.jsonl")
        root = a.root()
        before = [m.to_dict() for m in a.memories()]
    with open_store(tmp_path / "b") as b:
        b.import_jsonl(tmp_path / "a.jsonl")
        assert b.root() == root and b.verify() == []
        assert [m.to_dict() for m in b.memories()] == before
        assert len(b.find(session="s", limit=3)) == 1
        b.export_jsonl(tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


_texts = st.one_of(st.none(), st.text(min_size=1, max_size=20).filter(lambda s: s.strip() != ""))


@pytest.mark.no_store
@settings(max_examples=60, deadline=None)
@given(occurred=st.one_of(st.none(), st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9000, 1, 1),
                                                    timezones=st.just(timezone.utc))),
       session=_texts, sequence=st.one_of(st.none(), st.integers(0, 2**63 - 1)),
       origin=st.one_of(st.none(), st.builds(Origin, event_id=_texts, message_id=_texts, tenant=_texts, agent=_texts)),
       attributes=st.one_of(st.none(), st.dictionaries(st.text(max_size=5), st.integers(-100, 100) | st.booleans(), max_size=3)))
def test_a_provenance_record_decodes_to_what_was_written(occurred, session, sequence, origin, attributes):
    prov = Provenance.check(occurred_at=occurred, session=session, sequence=sequence, origin=origin, attributes=attributes)
    if prov is None:
        assert (occurred, session, sequence, origin, attributes) == (None, None, None, None, None)
        return
    decoded = Provenance.from_record(prov.record())
    assert decoded == prov
    assert decoded.attributes_dict() == attributes


def test_hmx_ingest_fills_provenance_and_keeps_unknown_fields(store):
    base = {"hmx_version": "HMX-1.0", "agent_id": "agent-ops-1", "tenant_id": "ten_acme", "session_id": "sess_abc"}
    events = [
        {**base, "event_id": "e1", "event_type": "api_result", "timestamp": "2026-03-15T10:04:00Z", "sequence": 1,
         "content": {"endpoint": "billing-api", "status": 503}, "metadata": {"framework": "x", "message_id": "m-9"}},
        {**base, "event_id": "e2", "event_type": "decision", "timestamp": "2026-03-15T10:05:00Z", "sequence": 2,
         "content": {"decision": "retry later", "why": "rate limited"}},
        {**base, "event_id": "e3", "event_type": "tool_call", "timestamp": "2026-03-15T10:12:00Z", "sequence": 3,
         "content": {"tool_name": "deploy"}},
    ]
    uris = store.ingest_hmx(events)
    api, decision, call = (store.resolve(u) for u in uris)
    assert api.occurred_at == datetime(2026, 3, 15, 10, 4, tzinfo=timezone.utc)
    assert (api.session, api.sequence) == ("sess_abc", 1)
    assert api.origin == Origin(event_id="e1", message_id="m-9", tenant="ten_acme", agent="agent-ops-1")
    assert api.attributes == {"content": {"status": 503}, "metadata": {"framework": "x", "message_id": "m-9"}}
    assert api.data.summary == '2026-03-15T10:04:00Z api_result: billing-api {"status":503}'
    assert decision.attributes == {"content": {"why": "rate limited"}}
    assert call.attributes is None and call.occurred_at - api.occurred_at == timedelta(minutes=8)
    assert [m.uri for m in store.find(session="sess_abc", order_by="sequence", limit=10)] == uris
    assert store.ingest_hmx(events) == uris  # idempotent still


def test_outcomes_come_newest_first_by_when_they_happened(store):
    frame = cortex.Frame("delegate", "tool", "deploy")
    at = {name: AT + timedelta(minutes=m) for name, m in (("a", 4), ("b", 12), ("c", 5))}
    uris = dict(zip(at, store.write_many([Write(Event(kind="dispatch", outcome="success", counterparty=name), frames=[frame],
                                                occurred_at=when) for name, when in at.items()])))
    later = store.write(Event(kind="dispatch", outcome="success", counterparty="d"), frames=[frame])  # occurred = created
    assert store.resolve(later).occurred_at == START
    b = store.context(verb="delegate", objects={"tool": "deploy"}, outcome_limit=3)
    assert [m.uri for m in b.outcomes] == [uris["b"], uris["c"], uris["a"]]  # 2026 happened after START (2025)
    b = store.context(verb="delegate", objects={"tool": "deploy"}, outcome_limit=2)
    assert [m.uri for m in b.outcomes] == [uris["b"], uris["c"]]
    assert store.verify() == []
    store.rebuild()
    assert [m.uri for m in store.context(verb="delegate", objects={"tool": "deploy"}, outcome_limit=2).outcomes] == [uris["b"], uris["c"]]


def test_ingested_events_come_back_in_the_order_they_happened(store):
    base = {"hmx_version": "HMX-1.0", "agent_id": "a", "tenant_id": "t", "session_id": "s"}
    stamps = ["2026-03-15T10:12:00Z", "2026-03-15T10:04:00Z", "2026-03-15T10:05:00Z"]
    uris = store.ingest_hmx([{**base, "event_id": f"e{i}", "event_type": "tool_call", "timestamp": ts, "sequence": i,
                              "content": {"tool_name": "deploy"}} for i, ts in enumerate(stamps)])
    b = store.context(verb="delegate", objects={"tool": "deploy"}, outcome_limit=3)
    assert [m.uri for m in b.outcomes] == [uris[0], uris[2], uris[1]]
