"""learn(): traces compiled into HMX-A artifacts (cortex/learn/, docs/learning.md).

Every number an artifact reports is checked against a brute-force recount
(tests/learn_helpers.py) written from the rules in docs/learning.md."""

from __future__ import annotations

import json
import math
from collections import Counter

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cortex
from cortex.errors import ValidationError
from cortex.learn import DEFAULT, LearnParams
from cortex.learn.artifacts import form_bytes, schema
from cortex.learn.compile import ratio

from conftest import open_store
from learn_helpers import active_support, brute_occurs, brute_schemas, clean_path, draft_support, hmx_events, label, steps_of

OK, FAIL = True, False


def call(tool: str, ok: bool = OK) -> tuple[str, str, object]:
    return ("call", tool, ok)


def decide(domain: str, decision: str) -> tuple[str, str, object]:
    return ("decide", domain, decision)


# The worked example of docs/learning.md: five deploy sessions; the tests are flaky
# three times and a cache clear fixes them; the rollout decision matters.
WORKED = [
    [call("checkout"), call("build"), call("test"), decide("rollout", "canary"), call("deploy")],
    [call("checkout"), call("build"), call("test", FAIL), call("clear_cache"), call("test"), decide("rollout", "canary"), call("deploy")],
    [call("checkout"), call("lint"), call("build"), call("test"), decide("rollout", "direct"), call("deploy", FAIL)],
    [call("checkout"), call("build"), call("test", FAIL), call("clear_cache"), call("test"), decide("rollout", "canary"), call("deploy")],
    [call("checkout"), call("build"), call("test", FAIL), call("clear_cache"), call("test"), decide("rollout", "direct"), call("deploy", FAIL)],
]


def by_type(c: cortex.Cortex) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for form in c.artifact_forms():
        out.setdefault(form["artifact_type"], []).append(form)
    return out


def test_the_worked_example(store):
    store.ingest_hmx(hmx_events(WORKED))
    report = store.learn()
    assert report.events_read == 2 * 27 + 5 and report.sessions == 5
    forms = by_type(store)
    schemas = {tuple(f["content"]["steps"]): f for f in forms["task_schema"]}
    procedure = tuple(label(t) for t in ("checkout", "build", "test", "deploy"))
    assert procedure in schemas
    s = schemas[procedure]["content"]
    assert (s["observed_count"], s["success_rate"], s["tools_used"]) == (5, 0.6, ["checkout", "build", "test", "deploy"])
    assert schemas[procedure]["status"] == "active"
    playbooks = {f["content"]["failure_pattern"]: f for f in forms["failure_playbook"]}
    flaky = playbooks[f"{label('test')} fails"]["content"]
    assert flaky["occurrence_count"] == 3 and flaky["recovered_count"] == 3 and flaky["recovery_rate"] == 1.0
    assert flaky["trigger_conditions"] == [label("build")]
    assert flaky["recovery_steps"] == [label("clear_cache"), label("test")]
    policy = forms["decision_policy"][0]["content"]
    assert policy["condition"] == "rollout" and policy["recommendation"] == "canary" and policy["confidence"] == 1.0
    assert {o["option"]: (o["sessions"], o["successes"]) for o in policy["options"]} == {"canary": (3, 3), "direct": (2, 0)}
    assert store.verify() == []
    # the next deploy task's context() carries the procedure and the playbook
    bundle = store.context(verb="delegate", objects={"tool": "test"}, budget_tokens=2000)
    texts = [bundle.rendered[m.id] for m in bundle.frame_relevant]
    assert any("Procedure seen in 5 sessions" in t and "delegate tool:deploy" in t for t in texts)
    assert any("recovery that worked: delegate tool:clear_cache" in t for t in texts)


def test_artifacts_are_memories_linked_to_their_evidence(store):
    uris = store.ingest_hmx(hmx_events(WORKED))
    store.learn()
    procedure = [label(t) for t in ("checkout", "build", "test", "deploy")]
    schema_memory = next(m for m in store.artifacts("task_schema")
                         if m.attributes["hmx_artifact"]["content"]["steps"] == procedure)
    assert len(schema_memory.data.derived_from) == 40  # 4 steps x (call + result) x 5 sessions
    assert store.resolve(schema_memory.uri) == schema_memory
    assert schema_memory.type == cortex.MemoryType.PATTERN and schema_memory.source == "learned"
    assert "hmx.artifact:task_schema" in schema_memory.tags and "hmx.status:active" in schema_memory.tags
    edges = store.edges(schema_memory.uri, types=["derived_from"])
    assert sorted(e.dst for e in edges) == sorted(u.split("/")[-1].split("#")[0] for u in schema_memory.data.derived_from)
    assert set(schema_memory.data.derived_from) <= set(uris)
    found = store.find(tags=["hmx.artifact:failure_playbook"], limit=10)
    assert sorted(m.id for m in found) == sorted(m.id for m in store.artifacts("failure_playbook"))
    assert [m.type.type_name for m in store.find(tags=["hmx.artifact"], limit=100)] == ["Pattern"] * len(store.artifacts())


def test_hmx_forms_validate_against_the_shipped_schema(store):
    store.ingest_hmx(hmx_events(WORKED))
    store.learn()
    forms = store.artifact_forms()
    assert {f["artifact_type"] for f in forms} >= {"task_schema", "failure_playbook", "decision_policy"}
    validator = jsonschema.Draft202012Validator(schema())
    for form in forms:
        validator.validate(form)
    bad = dict(forms[0], status="retired")
    assert list(validator.iter_errors(bad))


def test_same_store_same_bytes(tmp_path, clock):
    blobs = []
    for name in ("a", "b"):
        with open_store(tmp_path / name, clock) as c:
            c.ingest_hmx(hmx_events(WORKED))
            c.learn()
            blobs.append(b"\n".join(form_bytes(f) for f in c.artifact_forms()))
            c.learn(full=True)  # from scratch: nothing changes
            assert b"\n".join(form_bytes(f) for f in c.artifact_forms()) == blobs[-1]
    assert blobs[0] == blobs[1] and blobs[0]


def test_learn_rejects_bad_arguments(store):
    before = store.root()
    with pytest.raises(ValidationError) as info:
        store.learn(full="yes")
    assert info.value.field == "full"
    with pytest.raises(ValidationError) as info:
        LearnParams(max_gap=-1)
    assert info.value.field == "params.max_gap"
    with pytest.raises(ValidationError) as info:
        LearnParams(min_steps=1)
    assert info.value.field == "params.max_steps"
    with pytest.raises(ValidationError) as info:
        store.artifacts("recipe")
    assert info.value.field == "type"
    assert store.root() == before


def test_a_longer_procedure_supersedes_and_falling_success_deprecates(store):
    short = [[call("a"), call("b"), call("c")]] * 4
    store.ingest_hmx(hmx_events(short, "x"))
    store.learn()
    (abc,) = store.artifacts("task_schema")
    assert abc.data.statement.endswith("delegate tool:a \u2192 delegate tool:b \u2192 delegate tool:c.")
    longer = [[call("a"), call("b"), call("c"), call("d")]] * 12
    store.ingest_hmx(hmx_events(longer, "y"))
    report = store.learn()
    forms = {f["artifact_id"]: f for f in store.artifact_forms("task_schema")}
    assert forms[json.loads(json.dumps(report.superseded))[0]]["status"] == "superseded"
    assert store.resolve(abc.id.join(["cortex://Pattern/", "#1"]))  # still resolves: nothing deleted
    assert [e.type.name for e in store.edges(abc.uri, "in", ["supersedes"])] == ["SUPERSEDES"]
    assert abc.id not in {m.id for m in store.find(tags=["hmx.artifact:task_schema"], limit=10)}
    failing = [[call("a"), call("b"), call("c"), call("d", FAIL)]] * 60
    store.ingest_hmx(hmx_events(failing, "z"))
    report = store.learn()
    abcd = next(f for f in store.artifact_forms("task_schema") if len(f["content"]["steps"]) == 4)
    assert abcd["artifact_id"] in report.deprecated and abcd["status"] == "deprecated"
    assert abcd["content"]["success_rate"] == ratio(12, 72)
    assert store.verify() == []


def test_verify_names_an_artifact_whose_numbers_were_altered(store):
    store.ingest_hmx(hmx_events(WORKED))
    store.learn()
    m = store.artifacts("decision_policy")[0]
    from cortex import writes
    from cortex.provenance import Provenance

    attrs = m.attributes
    attrs["hmx_artifact"]["content"]["confidence"] = 0.5
    writes.update(store._engine, m.uri, m.data, provenance=Provenance.check(attributes=attrs))
    problems = store.verify()
    assert len(problems) == 1 and "content_hash does not match" in problems[0]


# ---------------------------------------------------------------------------
# Brute-force recounts and incremental = from scratch (Hypothesis)

TOOLS = ("a", "b", "c", "d", "e")
_entry = st.one_of(
    st.tuples(st.just("call"), st.sampled_from(TOOLS), st.sampled_from((True, True, True, False))),
    st.tuples(st.just("decide"), st.sampled_from(("x", "y")), st.sampled_from(("p", "q"))),
)
_sessions = st.lists(st.lists(_entry, min_size=0, max_size=7), min_size=1, max_size=14)
SMALL = LearnParams(active_min_sessions=3, draft_min_sessions=2, max_steps=4, max_gap=1)


def recount_schema(sessions, steps: tuple[str, ...], p: LearnParams) -> tuple[int, int]:
    seqs = [steps_of(s) for s in sessions]
    seqs = [s for s in seqs if s]
    n = len(seqs)
    counts = Counter(lab for s in seqs for lab in {lab for lab, _ in clean_path(s)})
    keep = {lab for lab, c in counts.items() if c >= draft_support(n, p)}
    support = successes = 0
    for s in seqs:
        if brute_occurs([lab for lab, _ in clean_path(s) if lab in keep], steps, p.max_gap) is not None:
            support += 1
            successes += s[-1][1]
    return support, successes


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sessions=_sessions)
def test_every_number_is_a_brute_force_recount(tmp_path_factory, sessions):
    with open_store(tmp_path_factory.mktemp("s") / "s") as c:
        c.ingest_hmx(hmx_events(sessions))
        c.learn(params=SMALL)
        forms = by_type(c)
        assert c.verify() == []
    seqs = [steps_of(s) for s in sessions if steps_of(s)]
    n = len(seqs)
    expected = {q: s for q, s in brute_schemas(sessions, SMALL).items()}
    got = {tuple(f["content"]["steps"]): f for f in forms.get("task_schema", [])}
    expected_statuses = {}
    for q, support in expected.items():
        sup, ok = recount_schema(sessions, q, SMALL)
        assert sup == support
        rate = ratio(ok, sup)
        expected_statuses[q] = ("deprecated" if rate < SMALL.deprecate_below else
                                "active" if sup >= active_support(n, SMALL) else "draft")
    assert set(got) == set(expected)
    for q, f in got.items():
        sup, ok = recount_schema(sessions, q, SMALL)
        assert (f["content"]["observed_count"], f["content"]["success_rate"]) == (sup, ratio(ok, sup))
        assert f["status"] == expected_statuses[q]
    # failure playbooks: failures, sessions, recoveries
    failures: Counter = Counter()
    fail_sessions: Counter = Counter()
    recovered: Counter = Counter()
    for s in seqs:
        for i, (lab, ok) in enumerate(s):
            if not ok:
                failures[lab] += 1
                recovered[lab] += any(l2 == lab and ok2 for l2, ok2 in s[i + 1:])
        fail_sessions.update({lab for lab, ok in s if not ok})
    for f in forms.get("failure_playbook", []):
        lab = f["content"]["failure_pattern"][: -len(" fails")]
        c_ = f["content"]
        assert (c_["occurrence_count"], c_["session_count"], c_["recovered_count"]) == (failures[lab], fail_sessions[lab], recovered[lab])
    assert {f["content"]["failure_pattern"][: -len(" fails")] for f in forms.get("failure_playbook", [])} == {
        lab for lab in failures if fail_sessions[lab] >= draft_support(n, SMALL)}
    # causal patterns: support, confidence, lift
    successes = sum(s[-1][1] for s in seqs)
    for f in forms.get("causal_pattern", []):
        c_ = f["content"]
        with_cause = [s for s in seqs if c_["cause"] in {lab for lab, _ in s}]
        good = c_["effect"] == "session success"
        hits = sum(1 for s in with_cause if s[-1][1] == good)
        base = successes if good else n - successes
        assert (c_["cause_sessions"], c_["support"], c_["effect_sessions"]) == (len(with_cause), hits, base)
        assert math.isclose(c_["lift"], round((hits / len(with_cause)) / (base / n), 6))
    # decision policies: sessions and successes per option
    for f in forms.get("decision_policy", []):
        c_ = f["content"]
        for o in c_["options"]:
            took = [s for s in sessions if steps_of(s) and ("decide", c_["condition"], o["option"]) in s]
            assert (o["sessions"], o["successes"]) == (len(took), sum(steps_of(s)[-1][1] for s in took))


def compiled_view(c: cortex.Cortex) -> list[tuple[str, str, str]]:
    return sorted((f["artifact_id"], f["status"], f["content_hash"]) for f in c.artifact_forms()
                  if f["status"] not in ("superseded", "archived"))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sessions=_sessions, cuts=st.lists(st.integers(0, 200), max_size=4))
def test_incremental_learning_equals_learning_from_scratch(tmp_path_factory, sessions, cuts):
    events = hmx_events(sessions)
    # interleave the sessions (events ordered by sequence, then session) and cut the stream anywhere
    events.sort(key=lambda ev: (ev["sequence"], ev["session_id"]))
    bounds = sorted({min(c, len(events)) for c in cuts}) + [len(events)]
    root = tmp_path_factory.mktemp("inc")
    with open_store(root / "step") as inc, open_store(root / "all") as scratch:
        start = 0
        for end in bounds:
            inc.ingest_hmx(events[start:end])
            inc.learn(params=SMALL)
            start = end
        scratch.ingest_hmx(events)
        scratch.learn(params=SMALL)
        assert compiled_view(inc) == compiled_view(scratch)
        assert inc.verify() == [] and scratch.verify() == []
        before = compiled_view(inc)
        inc.learn(full=True, params=SMALL)
        assert compiled_view(inc) == before


def test_learning_again_without_new_events_writes_nothing(store):
    store.ingest_hmx(hmx_events(WORKED))
    store.learn()
    root = store.root()
    report = store.learn()
    assert (report.events_read, report.created, report.updated) == (0, [], [])
    assert store.root() == root


@pytest.mark.no_store
def test_defaults_are_one_frozen_value():
    with pytest.raises(AttributeError):
        DEFAULT.max_gap = 3  # type: ignore[misc]
    assert DEFAULT.to_dict()["active_min_sessions"] == 3


def test_the_fingerprint_carries_the_active_artifacts_and_the_thresholds(store):
    store.ingest_hmx(hmx_events(WORKED))
    rows = store.export_fingerprint()["fingerprint"]["compiler_state"]["adapted_parameters"]
    assert not [r for r in rows if r["parameter"].startswith("learn.")]
    store.learn()
    fp = store.export_fingerprint()["fingerprint"]
    active = {f["artifact_id"]: f for f in store.artifact_forms(status="active")}
    schemas = fp["artifact_summaries"]["task_schema_set"]
    learned = [s for s in schemas if s["artifact_id"] in active]
    assert learned and all(s["steps"] == active[s["artifact_id"]]["content"]["steps"] for s in learned)
    assert [s["steps"] for s in learned] == [[label(t) for t in ("checkout", "build", "test", "deploy")]]
    playbooks = fp["artifact_summaries"]["playbook_set"]
    assert [p["recovery_steps"] for p in playbooks] == [[label("clear_cache"), label("test")]]
    policies = [p for p in fp["artifact_summaries"]["policy_set"] if p["artifact_id"] in active]
    assert [(p["condition"], p["recommendation"]) for p in policies] == [("rollout", "canary")]
    state = fp["compiler_state"]
    learned = {r["parameter"]: r for r in state["adapted_parameters"] if r["parameter"].startswith("learn.")}
    assert len(learned) == len(DEFAULT.to_dict()) and state["total_parameters"] == len(state["adapted_parameters"])
    assert learned["learn.max_gap"]["current_value"] == DEFAULT.max_gap and learned["learn.max_gap"]["frozen"] is True
    store.learn(params=LearnParams(max_gap=1))
    rows = store.export_fingerprint()["fingerprint"]["compiler_state"]["adapted_parameters"]
    assert {r["parameter"]: r["delta"] for r in rows}["learn.max_gap"] == 1 - DEFAULT.max_gap


def test_withdrawn_evidence_archives_and_nothing_is_deleted(store):
    uris = store.ingest_hmx(hmx_events(WORKED))
    store.learn()
    playbook = next(f for f in store.artifact_forms("failure_playbook") if f["content"]["failure_pattern"].startswith(label("test")))
    for uri in uris:
        m = store.resolve(uri)
        if m.type == cortex.MemoryType.EVENT and m.data.outcome == "failure" and m.data.counterparty == "test":
            store.tombstone(uri, "the flaky runner was misconfigured")
    report = store.learn()
    assert report.archived == []  # an incremental learn reads each event once
    assert any("run learn(full=True)" in p for p in store.verify())
    report = store.learn(full=True)
    assert playbook["artifact_id"] in report.archived
    archived = {f["artifact_id"]: f for f in store.artifact_forms(status="archived")}
    assert archived[playbook["artifact_id"]]["content_hash"] == playbook["content_hash"]
    assert store.resolve(playbook["memory_uri"]).data.statement == playbook["summary"]
    assert store.verify() == []
