"""HMX-1.0 events ingested as memories (seed 001, docs/interop.md)."""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from datetime import datetime, timezone

import pytest
from interop_helpers import Clock, open_store

import cortex
from cortex import Frame
from cortex.interop import hmx_events
from cortex import MalformedEvent, UnsupportedHMXVersion

STAMP = "2026-03-15T00:12:34.567Z"


def event(n: int, event_type: str, content: dict, **fields) -> dict:
    return {
        "hmx_version": "HMX-1.0", "event_id": f"evt_{n:04d}", "event_type": event_type, "agent_id": "agent-ops-1",
        "tenant_id": "ten_acme", "session_id": "sess_abc123", "timestamp": STAMP, "sequence": n,
        "content": content, "metadata": {"framework": "openai-agents"}, **fields,
    }


def summary(event_type: str, detail: str) -> str:
    return f"{STAMP} {event_type}: {detail}"


# (event_type, content, the memory's type, its data as to_dict(), its frames), one per type.
CASES = [
    ("message", {"role": "user", "content": "Deploy payments to staging"}, "Event",
     {"kind": "interaction", "outcome": "success", "counterparty": "user", "summary": summary("message", "Deploy payments to staging")}, []),
    ("tool_call", {"tool_name": "deploy", "input": '{"service": "payments"}'}, "Event",
     {"kind": "dispatch", "outcome": "success", "counterparty": "deploy", "summary": summary("tool_call", '{"service": "payments"}')},
     [("delegate", "tool", "deploy")]),
    ("tool_result", {"tool_name": "deploy", "error": "namespace missing"}, "Event",
     {"kind": "intent_failed", "outcome": "failure", "counterparty": "deploy", "summary": summary("tool_result", "namespace missing")},
     [("delegate", "tool", "deploy")]),
    ("file_edit", {"path": "k8s/payments.yaml", "operation": "modify", "description": "replicas 2 -> 4"}, "Event",
     {"kind": "intent_completed", "outcome": "success", "artifacts": ["k8s/payments.yaml"],
      "summary": summary("file_edit", "modify k8s/payments.yaml: replicas 2 -> 4")}, [("modify", "asset", "k8s/payments.yaml")]),
    ("test_run", {"suite": "unit", "passed": 40, "failed": 2, "skipped": 1}, "Event",
     {"kind": "intent_failed", "outcome": "partial", "artifacts": ["unit"], "summary": summary("test_run", "unit: passed=40, failed=2, skipped=1")},
     [("analyze", "asset", "unit")]),
    ("command_exec", {"command": ["kubectl", "rollout", "status", "deploy/payments"], "exit_code": 0}, "Event",
     {"kind": "intent_completed", "outcome": "success", "counterparty": "kubectl",
      "summary": summary("command_exec", "kubectl rollout status deploy/payments (exit 0)")}, [("delegate", "tool", "kubectl")]),
    ("browser_action", {"action": "open", "url": "https://docs.example.com/deploy?tab=k8s"}, "Event",
     {"kind": "interaction", "outcome": "success", "counterparty": "docs.example.com",
      "summary": summary("browser_action", "open https://docs.example.com/deploy?tab=k8s")}, [("find", "address", "docs.example.com")]),
    ("api_result", {"endpoint": "POST /v1/payments", "status_code": 502, "body": {"error": "bad gateway"}}, "Event",
     {"kind": "intent_failed", "outcome": "failure", "counterparty": "POST /v1/payments",
      "summary": summary("api_result", 'POST /v1/payments -> 502: {"error":"bad gateway"}')}, [("acquire", "service", "POST /v1/payments")]),
    ("decision", {"decision": "use a blue-green rollout", "rationale": "zero downtime", "domain": "deployment", "confidence": 0.75},
     "Belief", {"statement": "use a blue-green rollout", "stance": "believe", "subject": "deployment",
                "evidence_for": ["zero downtime"], "evidence_against": []}, []),
    ("error", {"message": "deadline exceeded", "error_type": "TimeoutError", "tool_name": "deploy"}, "Event",
     {"kind": "intent_failed", "outcome": "failure", "counterparty": "TimeoutError", "summary": summary("error", "deadline exceeded")},
     [("delegate", "tool", "deploy")]),
    ("observation", {"observation": "pods restart every 10 minutes"}, "Event",
     {"kind": "observation", "outcome": "success", "summary": summary("observation", "pods restart every 10 minutes")}, []),
    ("state_change", {"entity": "payments", "field": "replicas", "from": 2, "to": 4}, "Fact",
     {"statement": "payments.replicas: 2 -> 4", "subject": "payments", "predicate": "replicas", "object": "4", "source": None,
      "as_of": "2026-03-15T00:12:34.567000Z"}, [("monitor", "knowledge", "payments")]),
    ("feedback", {"sentiment": "negative", "comment": "too slow", "target_event_id": "evt_0003", "source": "user"}, "Event",
     {"kind": "interaction", "outcome": "failure", "counterparty": "user", "intent_ref": "evt_0003",
      "summary": summary("feedback", "negative: too slow")}, []),
]
EVENT_DEFAULTS = {"intent_ref": None, "counterparty": None, "cost": None, "duration": None, "artifacts": [], "summary": None}


@pytest.fixture
def store(tmp_path):
    c = open_store(tmp_path / "s")
    yield c
    c.close()


def write_jsonl(path, events, blank_lines=False) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
            if blank_lines:
                f.write("\n")
    return str(path)


def test_the_mapping_covers_the_13_types():
    assert hmx_events.EVENT_TYPES == tuple(case[0] for case in CASES)


@pytest.mark.parametrize(("event_type", "content", "type_name", "data", "frames"), CASES, ids=[c[0] for c in CASES])
def test_each_type_ingests_to_its_documented_memory(store, event_type, content, type_name, data, frames):
    [uri] = hmx_events.ingest(store, [event(7, event_type, content)])
    m = store.resolve(uri)
    assert m.type.type_name == type_name
    expected = {**EVENT_DEFAULTS, **data} if type_name == "Event" else data
    assert m.data.to_dict() == expected
    assert m.frames == tuple(Frame(*f) for f in frames)
    assert m.tags == ("hmx:evt_0007", f"hmx.type:{event_type}", "hmx.session:sess_abc123")
    assert m.source == "hmx:agent-ops-1"
    assert m.confidence == (0.75 if event_type == "decision" else 1.0)


def test_reingesting_changes_nothing(store, tmp_path):
    events = [event(n, t, c) for n, (t, c, *_) in enumerate(CASES)]
    uris = hmx_events.ingest(store, events)
    assert len(set(uris)) == 13
    root, count = store.root(), len(list(store.memories()))
    assert hmx_events.ingest(store, events) == uris
    assert hmx_events.ingest(store, write_jsonl(tmp_path / "e.jsonl", events)) == uris
    assert (store.root(), len(list(store.memories()))) == (root, count)
    store.tombstone(uris[0], "wrong")
    root = store.root()
    assert hmx_events.ingest(store, events[:1]) == [uris[0]]  # a tombstoned event is not brought back
    assert store.root() == root


def test_a_later_ingest_adds_only_the_new_events_of_a_known_session(store):
    events = [event(n, "observation", {"observation": f"seen {n}"}) for n in range(10)]
    first = hmx_events.ingest(store, events[:5])
    both = hmx_events.ingest(store, events, batch_size=3)
    assert both[:5] == first and len(set(both)) == 10
    assert len(list(store.memories())) == 10


def test_a_file_is_read_as_json_lines(store, tmp_path):
    events = [event(n, "observation", {"observation": f"seen {n}"}) for n in range(5)]
    uris = hmx_events.ingest(store, write_jsonl(tmp_path / "e.jsonl", events, blank_lines=True))
    assert [store.resolve(u).data.summary for u in uris] == [summary("observation", f"seen {n}") for n in range(5)]


def test_a_generator_is_read_once(store):
    uris = hmx_events.ingest(store, (event(n, "observation", {"observation": "x"}) for n in range(3)))
    assert len(set(uris)) == 3


def test_an_event_id_repeated_in_the_input_becomes_one_memory(store):
    first = event(1, "observation", {"observation": "first"})
    again = event(1, "observation", {"observation": "second"})
    uris = hmx_events.ingest(store, [first, event(2, "observation", {"observation": "x"}), again], batch_size=2)
    assert uris[0] == uris[2] != uris[1]
    assert store.resolve(uris[0]).data.summary == summary("observation", "first")
    assert len(list(store.memories())) == 2


def test_a_long_event_id_gets_a_hashed_tag(store):
    long_id = "evt-" + "x" * 100
    [uri] = hmx_events.ingest(store, [event(1, "observation", {"observation": "x"}, event_id=long_id)])
    tag = store.resolve(uri).tags[0]
    assert tag == hmx_events.event_tag(long_id) and tag.startswith("hmx~") and len(tag) == 64
    assert hmx_events.ingest(store, [event(1, "observation", {"observation": "x"}, event_id=long_id)]) == [uri]


def test_writes_go_in_batches(tmp_path):
    clock = Clock()
    stamps = iter(range(100))

    def ticking() -> datetime:  # each write_many reads the clock once
        clock.advance(next(stamps))
        return clock()

    with cortex.open(str(tmp_path / "s"), actor="a", clock=ticking) as c:
        uris = hmx_events.ingest(c, [event(n, "observation", {"observation": "x"}) for n in range(25)], batch_size=10)
        created = [c.resolve(u).created_at for u in uris]
    assert [len({*created[i:i + 10]}) for i in (0, 10, 20)] == [1, 1, 1]
    assert len(set(created)) == 3


REQUIRED = ["hmx_version", "event_id", "event_type", "agent_id", "tenant_id", "session_id", "timestamp", "sequence", "content"]


@pytest.mark.parametrize("missing", REQUIRED)
def test_a_missing_required_field_names_line_and_field_and_writes_nothing(store, tmp_path, missing):
    events = [event(n, "observation", {"observation": "x"}) for n in range(6)]
    del events[4][missing]
    path = write_jsonl(tmp_path / "e.jsonl", events)
    root = store.root()
    with pytest.raises(MalformedEvent) as info:
        hmx_events.ingest(store, path, batch_size=2)  # two batches would fit before the bad line
    assert (info.value.line, info.value.field, info.value.rule) == (5, missing, "is required")
    assert str(info.value) == f"line 5: {missing}: is required"
    assert store.root() == root and list(store.memories()) == []


@pytest.mark.parametrize(("patch", "field", "rule"), [
    ({"event_type": "telepathy"}, "event_type", "must be one of the HMX-1.0 types: " + ", ".join(hmx_events.EVENT_TYPES)),
    ({"hmx_version": "1.0"}, "hmx_version", 'must look like "HMX-<major>.<minor>", e.g. "HMX-1.0"'),
    ({"timestamp": "yesterday"}, "timestamp", "must be ISO 8601 text, e.g. 2026-03-15T00:12:34.567Z"),
    ({"timestamp": "2026-03-15T00:12:34"}, "timestamp", "must carry a timezone (Z or an offset)"),
    ({"sequence": -1}, "sequence", "must be at least 0"),
    ({"sequence": True}, "sequence", "must be an integer, not bool"),
    ({"content": "text"}, "content", "must be an object, not str"),
    ({"metadata": []}, "metadata", "must be an object, not list"),
    ({"agent_id": ""}, "agent_id", "must be a non-empty string"),
    ({"event_id": "e" * 201}, "event_id", "must be at most 200 bytes of UTF-8 (got 201)"),
    ({"event_type": "tool_call", "content": {"input": "x"}}, "content.tool_name", "is required"),
    ({"event_type": "test_run", "content": {"passed": 1, "failed": "2"}}, "content.failed", "must be an integer, not str"),
    ({"event_type": "feedback", "content": {"sentiment": "meh"}}, "content.sentiment", "must be one of positive, negative, neutral"),
    ({"event_type": "decision", "content": {"decision": "x", "confidence": 2}}, "content.confidence", "must be a number within [0.0, 1.0]"),
    ({"event_type": "message", "content": {"role": "user", "content": " "}}, "content.content", "must not be empty"),
    ({"event_type": "file_edit", "content": {"path": "p" * 300}}, "content.path", "must be at most 256 bytes of UTF-8 (got 300)"),
])
def test_a_malformed_event_is_refused_with_line_and_field(store, patch, field, rule):
    events = [event(1, "observation", {"observation": "fine"}), {**event(2, "observation", {"observation": "x"}), **patch}]
    with pytest.raises(MalformedEvent) as info:
        hmx_events.ingest(store, events)
    assert (info.value.line, info.value.field, info.value.rule) == (2, field, rule)
    assert list(store.memories()) == []


def test_another_major_version_is_refused_clearly(store):
    with pytest.raises(UnsupportedHMXVersion) as info:
        hmx_events.ingest(store, [event(1, "observation", {"observation": "x"}, hmx_version="HMX-2.0")])
    assert str(info.value) == "line 1: hmx_version: major version 2 is not supported: this reader takes HMX-1.x"
    assert isinstance(info.value, cortex.ValidationError)


def test_a_later_minor_version_keeps_an_unknown_type_as_an_observation(store):
    [uri] = hmx_events.ingest(store, [event(1, "telepathy", {"signal": 3}, hmx_version="HMX-1.2")])
    m = store.resolve(uri)
    assert (m.data.kind, m.data.outcome, m.data.summary) == ("observation", "success", summary("telepathy", '{"signal":3}'))
    assert "hmx.type:telepathy" in m.tags


@pytest.mark.parametrize(("text", "rule"), [
    (b"{not json}\n", "is not valid JSON (Expecting property name enclosed in double quotes at column 2)"),
    (b"[1, 2]\n", "must be a JSON object, not list"),
    (b'{"a": NaN}\n', "NaN is not a JSON number"),
    (b"\xff\xfe\n", "is not valid UTF-8"),
])
def test_a_line_that_is_not_an_event_object_is_named(store, tmp_path, text, rule):
    path = tmp_path / "e.jsonl"
    path.write_bytes(json.dumps(event(1, "observation", {"observation": "x"})).encode() + b"\n" + text)
    with pytest.raises(MalformedEvent) as info:
        hmx_events.ingest(store, path)
    assert (info.value.line, info.value.field, info.value.rule) == (2, "event", rule)
    assert list(store.memories()) == []


def test_input_that_is_not_events_is_refused(store, tmp_path):
    with pytest.raises(cortex.ValidationError) as info:
        hmx_events.ingest(store, event(1, "observation", {"observation": "x"}))  # type: ignore[arg-type]
    assert info.value.field == "events"
    with pytest.raises(cortex.ValidationError) as info:
        hmx_events.ingest(store, tmp_path / "missing.jsonl")
    assert info.value.field == "events" and "No such file or directory" in info.value.rule
    with pytest.raises(MalformedEvent) as info:
        hmx_events.ingest(store, [{**event(1, "observation", {"observation": "x"}), "metadata": {"at": datetime.now(timezone.utc)}}])
    assert (info.value.line, info.value.field) == (1, "event")


@pytest.mark.skipif(os.environ.get("CORTEX_SLOW") != "1", reason="100k events: set CORTEX_SLOW=1")
def test_100k_events_ingest_in_bounded_memory(store, tmp_path):
    path = write_jsonl(tmp_path / "e.jsonl", (event(n, "tool_call", {"tool_name": f"tool-{n % 50}", "input": "x" * 200})
                                             for n in range(100_000)))
    tracemalloc.start()
    started = time.perf_counter()
    uris = hmx_events.ingest(store, path)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"\n100k events: {seconds:.1f} s ({100_000 / seconds:,.0f} events/s under tracemalloc), peak {peak / 2**20:.1f} MiB")
    assert len(set(uris)) == 100_000
    assert peak < 64 * 2**20  # one batch of Writes plus the 100k result URIs; the input is never held


def test_long_texts_are_cut_to_2_kib(store):
    [uri] = hmx_events.ingest(store, [event(1, "observation", {"observation": "é" * 5000})])
    text = store.resolve(uri).data.summary
    assert len(text.encode("utf-8")) <= 2048 and text.endswith("…")
    assert text.startswith(summary("observation", "éé"))
