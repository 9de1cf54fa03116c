"""HMX-F (seed 003) read line by line: compiler_state, tags, expires_at; an import that
applies what it can (context priors used by pack assembly, compiler state recorded);
versioning per seed 001; round trips that lose no content, one test per memory type.
Runs on PostgreSQL too (test_backends_interop_seeds.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from interop_helpers import DEPLOY, GPU, NOW, Clock, open_store, validate

import cortex
from cortex.interop import fingerprint, hmx_pack
from cortex.interop.canonical import content_hash, without
from cortex.interop.fingerprint_trust import content_id
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cortex.salience.score import DEFAULT_WEIGHTS

SEED_REQUIRED = ("hmx_version", "fingerprint_id", "fingerprint_version", "tenant_id", "created_at", "artifact_summaries",
                 "behavioral_patterns", "graph_digest", "semantic_summary", "context_priors", "fingerprint_hash", "metadata")
SEED_OPTIONAL = ("agent_id", "compression_tier", "source_event_count", "source_artifact_count", "compiler_state", "tags",
                 "expires_at")


@pytest.fixture
def store(tmp_path):
    c = open_store(tmp_path / "a", actor="agent-a", clock=Clock())
    yield c
    c.close()


@pytest.fixture
def other(tmp_path):
    c = open_store(tmp_path / "b", actor="agent-b", clock=Clock())
    yield c
    c.close()


def rehash(envelope: dict) -> dict:
    """The envelope with its two hashes made right again after an edit."""
    fp = envelope["fingerprint"]
    fp["fingerprint_hash"] = content_hash(without(fp, "fingerprint_hash"))
    envelope["integrity_hash"] = content_hash(fp)
    return envelope


def test_every_field_of_the_seed_is_exported(store):
    uri = store.write(cortex.Pattern(statement="retry a 502 once", strength=0.9, coverage=4), frames=[DEPLOY], tags=["deploy"])
    store.attest([uri], "success")  # the weights adapt
    envelope = fingerprint.export(store, "full", expires_at="2025-06-01T00:00:00Z")
    validate(envelope, "hmx_fingerprint")
    fp = envelope["fingerprint"]
    assert set(SEED_REQUIRED) | set(SEED_OPTIONAL) <= set(fp)
    assert fp["tags"] == ["deploy"]  # the artifacts' tags by default
    assert fp["expires_at"] == "2025-06-01T00:00:00.000000Z"
    state = fp["compiler_state"]
    w = store.weights()
    assert [p["parameter"] for p in state["adapted_parameters"]] == [f"salience.{n}" for n in ("recency", "access", "citation", "importance")]
    assert [p["current_value"] for p in state["adapted_parameters"]] == list(w.as_tuple())
    assert [p["baseline_value"] for p in state["adapted_parameters"]] == list(DEFAULT_WEIGHTS.as_tuple())
    assert state["total_parameters"] == 4 and state["adapted_parameter_count"] == sum(
        p["current_value"] != p["baseline_value"] for p in state["adapted_parameters"]) > 0
    assert fingerprint.export(store, "minimal", tags=["ops"])["fingerprint"]["tags"] == ["ops"]
    with pytest.raises(cortex.ValidationError) as info:
        fingerprint.export(store, "full", expires_at="tomorrow")
    assert info.value.field == "expires_at"


def test_import_stores_the_priors_and_pack_assembly_uses_them(store, other):
    store.write_many([cortex.Write(cortex.Pattern(statement=f"step {i} of the rollout", strength=0.5), frames=[GPU])
                      for i in range(3)])
    envelope = fingerprint.export(store, "full")
    priors = envelope["fingerprint"]["context_priors"]
    priors["section_weights"] = {"procedures": 3.0, "facts": 0.5}
    priors["suppressed_tags"] = ["gossip"]
    report = fingerprint.import_report(other, rehash(envelope))
    assert report.priors_stored and report.compiler_state_recorded and report.written == 3
    assert fingerprint.stored_priors(other) == priors
    assert fingerprint.stored_compiler_state(other) == envelope["fingerprint"]["compiler_state"]
    other.write(cortex.Fact(statement="acme's CEO likes golf", subject="acme", predicate="trivia"), frames=[GPU], tags=["gossip"])
    other.write(cortex.Fact(statement="acme sells A100", subject="acme", predicate="sells"), frames=[GPU])
    bundle = other.context(verb="acquire", objects={"service": "gpu_inference"}, now=NOW)
    pack = hmx_pack.synthesize(other, bundle, "q")
    validate(pack, "hmx_context_pack")
    assert pack["fingerprint_priors"] == priors
    assert pack["assembly_metadata"]["assembly_strategy"] == "fingerprint_guided"
    assert pack["metadata"]["section_weights"]["procedures"] == 3.0 * hmx_pack.DEFAULT_SECTION_WEIGHTS["procedures"]
    assert pack["token_budget"]["total_budget"] == priors["default_token_budget"]
    assert [d["drop_reason"] for d in pack["dropped_entries"]] == ["low_relevance"]  # the suppressed tag


def test_priors_expire_with_their_fingerprint(store, other):
    store.write(cortex.Pattern(statement="retry once", strength=0.5), frames=[GPU])
    fingerprint.import_(other, fingerprint.export(store, "full", expires_at=NOW + timedelta(days=1)))
    assert fingerprint.stored_priors(other, NOW) is not None
    assert fingerprint.stored_priors(other, NOW + timedelta(days=2)) is None
    bundle = other.context(verb="acquire", objects={"service": "gpu_inference"}, now=NOW + timedelta(days=2))
    assert "fingerprint_priors" not in hmx_pack.synthesize(other, bundle, "q")


def test_a_newer_minor_version_with_unknown_fields_is_imported_and_they_are_kept_and_reported(store, other):
    store.write(cortex.Pattern(statement="retry once", strength=0.5), frames=[GPU])
    envelope = fingerprint.export(store, "full")
    envelope["hmx_version"] = envelope["fingerprint"]["hmx_version"] = "HMX-1.3"
    envelope["fingerprint"]["fingerprint_version"] = 2
    envelope["fingerprint"]["skill_graph"] = {"nodes": 3}
    envelope["fingerprint"]["artifact_summaries"]["task_schema_set"][0]["risk"] = "low"
    envelope["signature"] = "abc"
    report = fingerprint.import_report(other, rehash(envelope))
    assert report.written == 1
    assert report.unknown_fields == ("signature", "fingerprint.skill_graph",
                                     "fingerprint.artifact_summaries.task_schema_set[0].risk")
    assert report.warnings == ("fingerprint_version 2 is newer than 1: imported best-effort, 3 unknown fields kept",)
    [record] = other.find(tags=[fingerprint.import_tag(content_id(envelope["fingerprint"]))], limit=2)  # known by its content
    assert record.attributes == {"unknown_fields": {"signature": "abc", "fingerprint.skill_graph": {"nodes": 3},
                                                    "fingerprint.artifact_summaries.task_schema_set[0].risk": "low"},
                                 "warnings": list(report.warnings)}


def test_a_newer_major_version_is_refused_and_writes_nothing(store, other):
    store.write(cortex.Pattern(statement="retry once", strength=0.5), frames=[GPU])
    envelope = fingerprint.export(store, "full")
    envelope["hmx_version"] = envelope["fingerprint"]["hmx_version"] = "HMX-2.0"
    root = other.root()
    with pytest.raises(cortex.ValidationError) as info:
        fingerprint.import_(other, rehash(envelope))
    assert (info.value.field, info.value.rule) == ("hmx_version", "major version 2 is not supported: this reader takes HMX-1.x")
    assert other.root() == root


EXPIRY = datetime(2026, 1, 1, tzinfo=timezone.utc)
ARTIFACT_TYPES = {
    "Constraint": lambda: cortex.Constraint(statement="never pay above 2 USD/h", strength="hard", polarity="dont",
                                            source="user_declared", trigger="price check"),
    "Preference": lambda: cortex.Preference(topic="region", polarity="prefer", strength=0.8, value="eu-west",
                                            rationale="latency is lower there"),
    "Pattern": lambda: cortex.Pattern(statement="retry a 502 once after 5 s", derived_from=("evt_1", "evt_2"),
                                      strength=0.9, coverage=12),
}
STATISTICS_ONLY = {
    "Identity": lambda: cortex.Identity(name="agent-ops-1", roles=("ops",)),
    "Fact": lambda: cortex.Fact(statement="1.40 USD/h", subject="acme", predicate="price"),
    "Belief": lambda: cortex.Belief(statement="acme throttles at night", stance="suspect"),
    "Event": lambda: cortex.Event(kind="payment", outcome="success", summary="reserved 10 h"),
    "Goal": lambda: cortex.Goal(statement="cut cost 20%", status="active"),
    "Capability": lambda: cortex.Capability(subject="agent-ops-1", capability="reserve GPUs"),
}


@pytest.mark.parametrize("type_name", sorted(ARTIFACT_TYPES))
def test_an_artifact_memory_round_trips_without_losing_content(store, other, type_name):
    uri = store.write(ARTIFACT_TYPES[type_name](), frames=[GPU, DEPLOY], tags=["ops", "billing"], confidence=0.7,
                      expires_at=EXPIRY)
    first = fingerprint.export(store, "full")
    validate(first, "hmx_fingerprint")
    peer = Ed25519PrivateKey.generate()  # signed by a key the other store trusts: imported as it is (docs/trust.md)
    other.trust(peer.public_key(), "peer")
    assert fingerprint.import_(other, fingerprint.export(store, "full", sign_with=peer)) == 1
    [copy] = other.find(type=type_name, limit=5)
    original = store.resolve(uri)
    assert copy.data == original.data  # every data field, a Preference's rationale included
    assert (sorted(copy.frames, key=str), sorted(copy.tags), copy.confidence, copy.expires_at) == (
        sorted(original.frames, key=str), sorted(original.tags), original.confidence, original.expires_at)
    assert copy.forms == original.forms  # so the short and medium forms say the same
    assert copy.source == "hmx-fingerprint"
    # Exported again from the other store: the same summaries.
    again = fingerprint.export(other, "full")["fingerprint"]["artifact_summaries"]
    for name in ("policy_set", "task_schema_set", "playbook_set"):
        assert again[name] == first["fingerprint"]["artifact_summaries"][name]


@pytest.mark.parametrize("type_name", sorted(STATISTICS_ONLY))
def test_a_memory_that_is_no_artifact_travels_as_statistics_only(store, other, type_name):
    store.write(STATISTICS_ONLY[type_name](), frames=[GPU])
    envelope = fingerprint.export(store, "full")
    fp = envelope["fingerprint"]
    assert fp["semantic_summary"]["type_distribution"] == {type_name.lower(): 1}
    assert all(not fp["artifact_summaries"][name] for name in ("policy_set", "task_schema_set", "playbook_set"))
    assert fingerprint.import_(other, envelope) == 0  # seed 003: distilled knowledge, no raw content
    # Only the import's own record (an Event) and the Facts keeping priors and compiler state are written.
    assert [m.data for m in other.find(type=type_name, limit=5) if m.source != "hmx-fingerprint"] == []
