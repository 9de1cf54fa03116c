"""SecondBrain's ContextPackV2 built from bundles (seed 002, docs/interop.md)."""

from __future__ import annotations

import pytest
from interop_helpers import DEPLOY, GPU, NOW, Clock, open_store, populate, validate

import cortex
from cortex.interop import context_pack
from cortex.interop.canonical import canonical_json, content_hash, without

ASK = {"verb": "acquire", "objects": {"service": "gpu_inference"}, "now": NOW}


@pytest.fixture
def store(tmp_path):
    c = open_store(tmp_path / "s")
    yield c
    c.close()


def ids(uris, *names):
    return [uris[n].rsplit("/", 1)[1].split("#")[0] for n in names]


def test_every_field_is_present_and_the_pack_passes_its_schema(store):
    populate(store)
    pack = context_pack.build(store.context(**ASK), intent="renew the GPU reservation")
    validate(pack, "context_pack_v2")
    assert pack["schema_version"] == "context_pack.v2"
    assert pack["intent"] == "renew the GPU reservation"
    assert pack["created_at"] == "2025-03-01T12:00:00.000000Z"
    assert (pack["pack_strategy"], pack["web_mode"], pack["functional_state"]) == ("memory_first", "off", None)
    assert pack["routing_hints"]["suggested_agent"] == "agent-ops-1"  # the verified Capability's subject
    assert pack["pack_id"] == "cp-" + content_hash(without(pack, "pack_id"))[:32]


def test_each_memory_lands_where_the_table_says(store):
    uris = populate(store)
    bundle = store.context(**ASK)
    pack = context_pack.build(bundle, "renew")
    text = {name: bundle.rendered[i] for name, i in zip(uris, ids(uris, *uris))}
    score = {name: bundle.scores[i] for name, i in zip(uris, ids(uris, *uris))}
    # A hard constraint: in constraints (first) and in policy_controls.
    assert pack["constraints"] == [text["hard"], text["soft"]]
    assert pack["policy_controls"] == {"hard_constraints": [text["hard"]], "budget_tokens": 3000}
    # An active goal: an open loop, and its criteria are the success criteria; a paused one is not.
    assert pack["open_loops"] == [text["goal"]]
    assert pack["success_criteria"] == ["cost report shows -20%", "no SLA breach"]
    assert pack["preferences"] == [text["preference"]]
    assert pack["allowed_actions"] == [text["capability"]]
    # Durable facts: the pinned memories in bundle order, then Facts, Beliefs, Capabilities, Patterns by score.
    durable = pack["durable_facts"]
    assert [d["memory_id"] for d in durable[:3]] == [m.id for m in bundle.pinned]
    assert {d["category"] for d in durable[3:]} == {"Fact", "Belief", "Capability", "Pattern"}
    fact = next(d for d in durable if d["category"] == "Fact")
    assert fact == {"memory_id": ids(uris, "fact")[0], "category": "Fact", "text": text["fact"], "score": score["fact"],
                    "evidence_refs": [uris["fact"]], "provenance": "vendor_api"}
    belief = next(d for d in durable if d["category"] == "Belief")
    assert belief["evidence_refs"] == [uris["belief"], "two slow nights"]
    # Frame-relevant survivors not durable: the soft constraint, the paused goal and the preference
    # are relevant facts; frame-relevant Events are evidence; all anchored on the frame asked for.
    relevant = {r["path"] for r in pack["relevant_facts"]}
    assert relevant == {uris["soft"], uris["paused"], uris["preference"]}
    assert all(r["anchor"] == "acquire:service:gpu_inference" for r in pack["relevant_facts"] + pack["evidence"])
    # Outcomes are prior decisions; every Event survivor is episode state, newest first.
    assert [d["source_path"] for d in pack["prior_decisions"]] == [m.uri for m in bundle.outcomes]
    assert {d["rationale"] for d in pack["prior_decisions"]} == {"reserved 10 h", "quota exceeded"}
    assert {e["episode_id"] for e in pack["episode_state"]} == set(ids(uris, "event", "failed"))
    # A suspected belief is a conflict; the pattern is a plan step needing its tool.
    assert pack["conflicts"] == []  # a suspect Belief that nothing contradicts is no conflict
    assert pack["suggested_plan"] == [{"step_id": "step-1", "title": "retry a 502 once after 5 s", "dependencies": [],
                                       "tool_requirements": ["deploy"], "risk_level": "low"}]


def test_episode_state_is_newest_first(tmp_path):
    clock = Clock()
    with open_store(tmp_path / "s", clock=clock) as c:
        old = c.write(cortex.Event(kind="payment", outcome="success", summary="old"), frames=[GPU])
        clock.advance(60)
        new = c.write(cortex.Event(kind="payment", outcome="failure", summary="new"), frames=[GPU, DEPLOY])
        pack = context_pack.build(c.context(**ASK), "x")
    assert [e["episode_id"] for e in pack["episode_state"]] == [new.rsplit("/", 1)[1][:26], old.rsplit("/", 1)[1][:26]]


def test_the_same_state_and_now_give_the_same_bytes(tmp_path):
    with open_store(tmp_path / "s") as c:
        populate(c)
        first = canonical_json(context_pack.build(c.context(**ASK), "renew"))
        assert canonical_json(context_pack.build(c.context(**ASK), "renew")) == first
    with open_store(tmp_path / "s") as c:
        assert canonical_json(context_pack.build(c.context(**ASK), "renew")) == first
        assert context_pack.build(c.context(**ASK), "other")["pack_id"] != context_pack.build(c.context(**ASK), "renew")["pack_id"]


def test_an_empty_bundle_gives_empty_lists(store):
    pack = context_pack.build(store.context(**ASK), "nothing yet")
    validate(pack, "context_pack_v2")
    for key in ("constraints", "preferences", "durable_facts", "relevant_facts", "evidence", "prior_decisions",
                "open_loops", "episode_state", "conflicts", "suggested_plan", "allowed_actions", "success_criteria"):
        assert pack[key] == []


def test_intent_must_be_a_string(store):
    with pytest.raises(cortex.ValidationError) as info:
        context_pack.build(store.context(**ASK), intent=None)  # type: ignore[arg-type]
    assert (info.value.field, info.value.rule) == ("intent", "must be a string, not NoneType")


def test_contradicting_memories_land_in_conflicts(tmp_path):
    import cortex
    from cortex import Fact, Frame

    gpu = Frame("acquire", "service", "gpu")
    with cortex.open(tmp_path / "s", actor="a") as c:
        a = c.write(Fact(statement="acme is up", subject="acme", predicate="status"), frames=[gpu])
        b = c.write(Fact(statement="acme is down", subject="acme", predicate="status"), frames=[gpu])
        c.link(a, "contradicts", b)
        bundle = c.context(verb="acquire", objects={"service": "gpu"})
        pack = bundle.to_context_pack(intent="lease")
    ida, idb = sorted(u.split("/")[3].split("#")[0] for u in (a, b))
    assert bundle.conflicts == [(ida, idb)]
    assert pack["conflicts"] == [{"artifact_id": f"{ida}~{idb}",
                                  "text": f"{bundle.rendered[ida]} | contradicts | {bundle.rendered[idb]}",
                                  "score": min(bundle.scores[ida], bundle.scores[idb])}]
