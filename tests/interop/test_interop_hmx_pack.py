"""HMX-1.0 Context Packs built from bundles (seed 000, DESIGN §9)."""

from __future__ import annotations

import pytest
from interop_helpers import GPU, NOW, open_store, populate, validate

import cortex
from cortex.interop import hmx_pack
from cortex.interop.canonical import canonical_json, content_hash, without

ASK = {"verb": "acquire", "objects": {"service": "gpu_inference"}, "now": NOW}
SECTION_OF = {
    "Identity": "core", "Constraint": "constraints", "Goal": "goals", "Fact": "facts", "Belief": "facts",
    "Preference": "facts", "Capability": "facts", "Pattern": "procedures", "Event": "episodes",
}
PRIORITY = ["core", "constraints", "goals", "procedures", "facts", "episodes"]


@pytest.fixture
def store(tmp_path):
    c = open_store(tmp_path / "s")
    yield c
    c.close()


def check_invariants(pack: dict, bundle: cortex.Bundle) -> None:
    """What every pack promises: schema, limits, order, ranks, budget arithmetic."""
    validate(pack, "hmx_context_pack")
    budget = pack["token_budget"]
    entries = pack["entries"]
    assert len(canonical_json(pack)) <= hmx_pack.MAX_PACK_BYTES
    assert len(entries) <= 500 and len(pack["dropped_entries"]) <= 100
    assert budget["used"] == sum(e["token_estimate"] for e in entries) <= budget["total_budget"]
    assert budget["remaining"] == budget["total_budget"] - budget["used"]
    assert budget["total_budget"] == bundle.request["budget_tokens"]
    sections = budget["section_budgets"]
    if entries:
        assert sum(s["budget"] for s in sections.values()) == budget["total_budget"]
    for name, share in sections.items():
        assert share["used"] == sum(e["token_estimate"] for e in entries if e["section"] == name) <= share["budget"]
    keys = [(PRIORITY.index(e["section"]), -e["relevance_score"], e["token_estimate"], e["source_id"]) for e in entries]
    assert keys == sorted(keys)
    assert [e["rank"] for e in entries] == list(range(1, len(entries) + 1))
    assert [d["rank"] for d in pack["dropped_entries"]] == list(range(len(entries) + 1, len(entries) + 1 + len(pack["dropped_entries"])))
    assert pack["assembly_metadata"]["included_count"] == len(entries)
    assert pack["assembly_metadata"]["candidate_count"] == bundle.candidates
    assert pack["pack_id"] == "pack-" + content_hash(without(pack, "pack_id"))[:32]


def test_a_pack_maps_every_survivor_to_its_section_with_its_provenance(store):
    uris = populate(store)
    bundle = store.context(**ASK)
    pack = hmx_pack.build(bundle, query_context="reserve GPUs for the batch job")
    check_invariants(pack, bundle)
    assert pack["hmx_version"] == "HMX-1.0"
    assert pack["query_context"] == "reserve GPUs for the batch job"
    assert pack["created_at"] == "2025-03-01T12:00:00.000000Z"
    by_uri = {e["source_id"]: e for e in pack["entries"]}
    assert set(by_uri) == {m.uri for m in bundle.memories()} and len(by_uri) == len(uris)
    for m in bundle.memories():
        entry = by_uri[m.uri]
        assert entry["section"] == SECTION_OF[m.type.type_name]
        assert entry["content"] == bundle.rendered[m.id]
        assert entry["relevance_score"] == bundle.scores[m.id]
        assert entry["token_estimate"] == bundle.tokens[m.id]
        assert entry["provenance"]["origin"] == m.source and entry["provenance"]["confidence"] == m.confidence
    assert by_uri[uris["fact"]]["provenance"]["origin"] == "vendor_api"
    assert by_uri[uris["identity"]]["source_type"] == "entity"
    assert by_uri[uris["hard"]]["source_type"] == "policy"
    assert by_uri[uris["event"]]["source_type"] == "episode"
    assert by_uri[uris["belief"]]["provenance"]["evidence_count"] == 1
    assert pack["assembly_metadata"]["assembly_strategy"] == "ranked"
    assert pack["assembly_metadata"]["assembly_duration_ms"] == 0
    assert pack["assembly_metadata"]["ranking_weights"] == {"recency": 0.25, "access": 0.15, "citation": 0.30, "importance": 0.20}
    assert pack["token_budget"]["dropped_count"] == 0 and pack["dropped_entries"] == []
    assert pack["metadata"]["root"] == store.root()
    hard, soft = (next(d for d in pack["decision_constraints"] if d["artifact_id"] == uris[k]) for k in ("hard", "soft"))
    assert hard == {"artifact_id": uris["hard"], "condition": "price check", "constraint": "dont never pay above 2 USD/h",
                    "confidence": 1.0, "override_allowed": False}
    assert soft["override_allowed"] is True and soft["condition"] == "always"


def test_the_same_state_and_query_give_the_same_bytes_also_after_a_reopen(tmp_path):
    c = open_store(tmp_path / "s")
    populate(c)
    first = canonical_json(hmx_pack.build(c.context(**ASK), "q"))
    assert canonical_json(hmx_pack.build(c.context(**ASK), "q")) == first
    c.close()
    with open_store(tmp_path / "s") as again:
        bundle = again.context(**ASK)
        assert canonical_json(hmx_pack.build(bundle, "q")) == first
        assert hmx_pack.build(bundle, "another query")["pack_id"] != hmx_pack.build(bundle, "q")["pack_id"]


def test_trimmed_memories_are_dropped_entries_best_first(store):
    for i in range(30):
        store.write(cortex.Fact(statement=f"offer {i}", subject="acme", predicate="price"), frames=[GPU], importance=i % 11)
    bundle = store.context(**ASK, budget_tokens=40)
    pack = hmx_pack.build(bundle)
    check_invariants(pack, bundle)
    dropped = pack["dropped_entries"]
    assert len(dropped) == bundle.trimmed == pack["token_budget"]["dropped_count"]
    assert [d["source_id"].rsplit("/", 1)[1].split("#")[0] for d in dropped] == list(bundle.dropped_ids)
    assert all(d["drop_reason"] == "budget_exceeded" and d["section"] == "facts" for d in dropped)
    scores = [d["relevance_score"] for d in dropped]
    assert scores == sorted(scores, reverse=True)
    assert min(e["relevance_score"] for e in pack["entries"]) >= scores[0]
    assert pack["query_context"] == "acquire service=gpu_inference"


def test_a_10k_store_under_a_tiny_budget_stays_within_every_limit(store):
    for batch in range(10):
        store.write_many([
            cortex.Write(cortex.Fact(statement=f"offer {batch}-{i}", subject="acme", predicate="price"), frames=[GPU],
                         forms={"short": "ok"})  # one token: thousands fit in 4,000
            for i in range(1000)
        ])
    for budget in (1, 25):
        bundle = store.context(**ASK, budget_tokens=budget)
        pack = hmx_pack.build(bundle, "q")
        check_invariants(pack, bundle)
        assert pack["token_budget"]["used"] <= budget
        assert len(pack["dropped_entries"]) == 100
        assert pack["token_budget"]["dropped_count"] == 10_000 - len(pack["entries"])
    assert pack["entries"]  # 25 tokens hold a few short facts
    # Under 4,000 tokens of short forms more than 500 memories survive: the pack keeps 500.
    bundle = store.context(**ASK, budget_tokens=4000, form="short")
    assert len(bundle.memories()) > 500
    pack = hmx_pack.build(bundle, "q")
    check_invariants(pack, bundle)
    assert len(pack["entries"]) == 500
    assert pack["token_budget"]["dropped_count"] == 10_000 - 500


def test_one_memory_over_the_budget_by_itself_is_dropped_not_kept(store):
    uri = store.write(cortex.Fact(statement="a rather long statement about the price of GPUs " * 3, subject="acme",
                                  predicate="price"), frames=[GPU])
    bundle = store.context(**ASK, budget_tokens=5)
    assert len(bundle.memories()) == 1 and bundle.total_tokens > 5  # context() keeps one
    pack = hmx_pack.build(bundle)
    check_invariants(pack, bundle)
    assert pack["entries"] == []
    assert pack["dropped_entries"] == [{
        "source_id": uri, "source_type": "memory", "section": "facts", "relevance_score": bundle.scores[bundle.memories()[0].id],
        "token_estimate": bundle.total_tokens, "drop_reason": "budget_exceeded", "rank": 1,
    }]
    assert pack["token_budget"]["dropped_count"] == 1


def test_the_size_limit_drops_the_lowest_entries(store, monkeypatch):
    for i in range(40):
        store.write(cortex.Fact(statement=f"offer {i} " + "details " * 20, subject="acme", predicate="price"),
                    frames=[GPU], importance=i % 11)
    bundle = store.context(**ASK, budget_tokens=4000, form="full")
    whole = len(canonical_json(hmx_pack.build(bundle)))
    limit = whole * 3 // 4
    monkeypatch.setattr(hmx_pack, "MAX_PACK_BYTES", limit)
    pack = hmx_pack.build(bundle)
    assert limit - 600 < len(canonical_json(pack)) <= limit  # at most about one entry under the limit
    kept = {e["source_id"] for e in pack["entries"]}
    assert 0 < len(kept) < 40
    lowest_kept = min(e["relevance_score"] for e in pack["entries"])
    assert all(d["relevance_score"] <= lowest_kept for d in pack["dropped_entries"])
    assert pack["token_budget"]["dropped_count"] == 40 - len(kept)


@pytest.mark.parametrize(("query", "expected"), [
    (None, "acquire service=gpu_inference"),
    ({"task": "renew", "hours": 10}, '{"hours":10,"task":"renew"}'),
    ("plain text", "plain text"),
])
def test_query_context_forms(store, query, expected):
    populate(store)
    assert hmx_pack.build(store.context(**ASK), query)["query_context"] == expected


def test_a_verb_less_call_is_a_pinned_pack(store):
    populate(store)
    pack = hmx_pack.build(store.context(now=NOW))
    assert pack["query_context"] == "pinned"
    assert {e["section"] for e in pack["entries"]} == {"core", "constraints", "goals"}


@pytest.mark.parametrize(("query", "rule"), [
    (42, "must be a string, a mapping or None, not int"),
    ("x" * (16 * 1024 + 1), "must be at most 16384 bytes of UTF-8 (got 16385)"),
    ({"at": object()}, "a mapping must be JSON-serializable"),
], ids=["int", "too-long", "not-json"])
def test_a_bad_query_context_is_refused(store, query, rule):
    populate(store)
    with pytest.raises(cortex.ValidationError) as info:
        hmx_pack.build(store.context(**ASK), query)
    assert (info.value.field, info.value.rule) == ("query_context", rule)


def test_a_dropped_memory_of_unknown_type_is_named_by_id_unless_its_uri_is_given(store):
    store.write_many([cortex.Write(cortex.Fact(statement=f"offer {i}", subject="acme", predicate="price"), frames=[GPU])
                      for i in range(200)])
    bundle = store.context(**ASK, budget_tokens=20)
    known = {u.rsplit("/", 1)[1].split("#")[0] for u in bundle.reachable_uris}
    unknown = [i for i in bundle.dropped_ids[:100] if i not in known]
    assert unknown  # 100 entries, at most 64 reachable URIs
    entries = {d["source_id"]: d for d in hmx_pack.build(bundle)["dropped_entries"]}
    assert entries[unknown[0]]["source_type"] == "memory" and "section" not in entries[unknown[0]]
    uris = [store.resolve_latest(i).uri for i in unknown]
    pack = hmx_pack.build(bundle, dropped_uris=uris)
    check_invariants(pack, bundle)
    assert all(d["section"] == "facts" and d["source_id"].startswith("cortex://Fact/") for d in pack["dropped_entries"])


def test_contradicting_memories_go_to_the_conflicts_section(tmp_path):
    import cortex
    from cortex import Fact, Frame

    gpu = Frame("acquire", "service", "gpu")
    with cortex.open(tmp_path / "s", actor="a") as c:
        a = c.write(Fact(statement="acme is up", subject="acme", predicate="status"), frames=[gpu])
        b = c.write(Fact(statement="acme is down", subject="acme", predicate="status"), frames=[gpu])
        other = c.write(Fact(statement="acme sells GPUs", subject="acme", predicate="sells"), frames=[gpu])
        c.link(a, "contradicts", b)
        pack = c.context(verb="acquire", objects={"service": "gpu"}).to_hmx_pack("lease")
    sections = {e["source_id"]: (e["section"], e["source_type"]) for e in pack["entries"]}
    assert sections == {a: ("conflicts", "conflict"), b: ("conflicts", "conflict"), other: ("facts", "memory")}
