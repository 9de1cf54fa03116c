"""Seed 002: compile_context's compiler output envelope (manifests, runtime controls,
budget report, the ledger), the ContextOS ten-layer projection with its content hash,
routing hints, conflicts only for contradicted suspicions, and the ledger's drop
reasons. Runs on PostgreSQL too (test_backends_interop_seeds.py)."""

from __future__ import annotations

import copy

import jsonschema
import pytest
from interop_helpers import DEPLOY, GPU, NOW, Clock, open_store, populate, validate

import cortex
from cortex import Frame
from cortex.interop import contextos, ledger, schema_check
from cortex.interop.canonical import canonical_json

ASK = {"verb": "acquire", "objects": {"service": "gpu_inference"}, "now": NOW}
LAYERS = ["contract_meta", "pack_meta", "intelligence_refs", "business_context", "policy_layer", "tooling_layer",
          "decision_layer", "memory_layer", "evaluation_layer", "tone_and_comms"]


@pytest.fixture
def store(tmp_path):
    c = open_store(tmp_path / "s", clock=Clock())
    yield c
    c.close()


def check(out: dict) -> None:
    validate(out, "compiler_output")
    validate(out["pack"], "context_pack_v2")
    jsonschema.Draft202012Validator(schema_check.load("contextos_pack"), format_checker=jsonschema.FormatChecker()).validate(
        out["contextos"])
    assert ledger.verify(out["context_ledger"])
    assert contextos.verify_projection(out["contextos"])


def test_the_envelope_has_every_part_of_the_seed_and_passes_its_schemas(store):
    uris = populate(store)
    bundle = store.context(**ASK)
    out = contextos.compile_context(bundle, "renew the GPU reservation")
    check(out)
    assert list(out["contextos"]) == LAYERS
    manifests = out["manifests"]
    rules = manifests["policy_manifest"]["rules"]
    assert [(r["uri"], r["enforcement"]) for r in rules] == [(uris["hard"], "block"), (uris["soft"], "advise")]
    assert [a["uri"] for a in manifests["policy_manifest"]["advisories"]] == [uris["preference"]]
    assert manifests["policy_manifest"]["advisories"][0]["rationale"] == "latency"
    assert [i["evidence_id"] for i in manifests["evidence_manifest"]["items"]] == [m.id for m in bundle.memories()]
    tools = {t["tool"]: t for t in manifests["tool_manifest"]["tools"]}
    assert tools["cortex.resolve"]["capability_class"] == "recall"
    assert (tools["deploy"]["capability_class"], tools["deploy"]["risk_level"], tools["deploy"]["approval_mode"]) == (
        "act", "write_external", "delegated")  # filed under delegate:tool:deploy
    # A payment was made under the Capability's own frame: reserving is irreversible.
    assert (tools["reserve GPUs"]["risk_level"], tools["reserve GPUs"]["approval_mode"]) == ("write_irreversible", "destructive")
    controls = out["runtime_controls"]
    assert controls["approval_required"] == ["deploy", "reserve GPUs"] and controls["blocked_tools"] == []
    assert controls["max_risk_level"] == "write_irreversible" and controls["web_mode"] == "off"
    report = out["budget_report"]
    assert report["used_tokens"] == bundle.total_tokens and report["selected"] == len(bundle.memories())
    compiled = out["context_ledger"]
    assert compiled["pack_id"] == out["pack"]["pack_id"] and compiled["pack_ref"] == out["pack"]["pack_id"] + "@1"
    assert compiled["policy_rules"] == [r["rule_id"] for r in rules]
    assert [t["tool"] for t in compiled["tool_capabilities"]] == ["cortex.resolve", "deploy", "reserve GPUs"]
    assert compiled["memory_block_ids"] == [m.id for m in bundle.memories()]
    assert compiled["evidence_ids"] == [m.id for m in bundle.outcomes + bundle.frame_relevant]


def test_the_projection_hash_replays_pack_id_at_version(tmp_path):
    with cortex.open(tmp_path / "s", actor="a", clock=Clock()) as c:
        populate(c)
        first = contextos.compile_context(c.context(**ASK), "renew", version=3)
        again = contextos.compile_context(c.context(**ASK), "renew", version=3)
    with cortex.open(tmp_path / "s", actor="a", clock=Clock()) as c:
        reopened = contextos.compile_context(c.context(**ASK), "renew", version=3)
    assert canonical_json(first) == canonical_json(again) == canonical_json(reopened)
    meta = first["contextos"]["pack_meta"]
    assert meta["ref"] == f"{first['pack']['pack_id']}@3" and meta["content_hash"].startswith("sha256:")
    tampered = copy.deepcopy(first["contextos"])
    tampered["policy_layer"]["hard_constraints"] = []
    assert not contextos.verify_projection(tampered)
    later = contextos.compile_context(_bundle_of(tmp_path), "renew", version=4)["contextos"]["pack_meta"]
    assert later["ref"].endswith("@4") and later["content_hash"] != meta["content_hash"]
    with pytest.raises(cortex.ValidationError) as info:
        contextos.compile_context(_bundle_of(tmp_path), "renew", version=0)
    assert (info.value.field, info.value.rule) == ("version", "must be an integer >= 1")


def _bundle_of(path) -> cortex.Bundle:
    with cortex.open(path / "s", actor="a", clock=Clock()) as c:
        return c.context(**ASK)


def test_a_hard_dont_constraint_filed_under_a_tool_blocks_it(store):
    deploy = store.write(cortex.Pattern(statement="deploy after the smoke tests", strength=0.8), frames=[DEPLOY])
    rule = store.write(cortex.Constraint(statement="no deploys on Friday", strength="hard", polarity="dont",
                                         source="user_declared"), frames=[DEPLOY])
    out = contextos.compile_context(store.context(verb="delegate", objects={"tool": "deploy"}, now=NOW), "ship")
    check(out)
    tools = {t["tool"]: t for t in out["manifests"]["tool_manifest"]["tools"]}
    assert tools["deploy"]["blocked_by"] == [rule] and tools["deploy"]["sources"] == sorted([deploy, rule])
    assert out["runtime_controls"]["blocked_tools"] == ["deploy"] and out["runtime_controls"]["approval_required"] == []


def test_routing_hints_are_filled_when_derivable(store):
    store.write(cortex.Capability(subject="gpu-broker", capability="reserve GPUs", verified=True), frames=[GPU])
    store.write(cortex.Capability(subject="slow-broker", capability="reserve GPUs slowly"), frames=[GPU])
    bundle = store.context(**ASK)
    hints = contextos.compile_context(bundle, "renew")["pack"]["routing_hints"]
    best = next(m for m in bundle.memories() if m.data.subject == "gpu-broker")
    assert hints == {"subsystems": ["service:gpu_inference"], "suggested_agent": "gpu-broker",
                     "confidence": bundle.scores[best.id], "reason": "gpu-broker can reserve GPUs (verified); asked: service:gpu_inference"}
    named = contextos.compile_context(store.context(verb="delegate", objects={"agent": "billing-bot"}, now=NOW), "bill")
    assert named["pack"]["routing_hints"] == {"subsystems": ["agent:billing-bot"], "suggested_agent": "billing-bot",
                                              "confidence": 1.0, "reason": "the call names agent billing-bot"}
    assert contextos.compile_context(store.context(now=NOW), "idle")["pack"]["routing_hints"] is None  # nothing to route by


def test_a_suspect_belief_is_a_conflict_only_when_something_contradicts_it(store):
    gpu = Frame("acquire", "service", "gpu_inference")
    suspect = store.write(cortex.Belief(statement="acme throttles at night", stance="suspect"), frames=[gpu])
    pack = contextos.compile_context(store.context(**ASK), "renew")["pack"]
    assert pack["conflicts"] == []
    other = store.write(cortex.Fact(statement="acme never throttles", subject="acme", predicate="throttling"), frames=[gpu])
    store.link(other, "contradicts", suspect)
    bundle = store.context(**ASK)
    pack = contextos.compile_context(bundle, "renew")["pack"]
    ids = [c["artifact_id"] for c in pack["conflicts"]]
    sid, oid = (u.rsplit("/", 1)[1].split("#")[0] for u in (suspect, other))
    assert ids == [sid, f"{min(sid, oid)}~{max(sid, oid)}"]
    doubted = store.write(cortex.Belief(statement="acme is cheap", stance="believe", evidence_against=("one bill",)), frames=[gpu])
    assert doubted.rsplit("/", 1)[1].split("#")[0] in [c["artifact_id"] for c in
                                                       contextos.compile_context(store.context(**ASK), "renew")["pack"]["conflicts"]]


def test_the_ledger_says_why_each_memory_was_left_out(store):
    old = store.write(cortex.Fact(statement="A100 spot is 1.40 USD/h", subject="acme", predicate="price"), frames=[GPU])
    store.write(cortex.Fact(statement="A100 spot is 1.20 USD/h", subject="acme", predicate="price"), frames=[GPU],
                supersedes=[old])
    store.write_many([cortex.Write(cortex.Fact(statement=f"offer {i}: {i}.10 USD/h", subject="acme", predicate="offer"),
                                   frames=[GPU]) for i in range(30)])
    bundle = store.context(**ASK, budget_tokens=60)
    record = bundle.ledger()
    validate(record, "context_ledger")
    reasons = [(e["id"], e["reason"]) for e in record["dropped_entries"]]
    assert reasons == [(i, "budget") for i in bundle.dropped_ids] + [(old.rsplit("/", 1)[1].split("#")[0], "superseded")]
    out = contextos.compile_context(bundle, "renew")
    check(out)
    assert out["budget_report"]["dropped"] == record["dropped_entries"]
    assert out["context_ledger"]["dropped_block_ids"] == [i for i, _ in reasons]
    assert [w["code"] for w in record["warnings"]] == out["context_ledger"]["budget_warnings"] == ["budget_hit"]
