"""HMX-1.0 Context Packs built from bundles (seed 000, docs/interop.md)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from interop_helpers import GPU, NOW, Clock, open_store, populate, validate

import cortex
from cortex.interop import hmx_pack
from cortex.forms import Tokenizer
from cortex.interop.canonical import canonical_json, content_hash, without

ASK = {"verb": "acquire", "objects": {"service": "gpu_inference"}, "now": NOW}
SECTION_OF = {
    "Identity": "core", "Constraint": "constraints", "Goal": "goals", "Fact": "facts", "Belief": "facts",
    "Preference": "facts", "Capability": "facts", "Pattern": "procedures", "Event": "episodes",
}
PRIORITY = list(hmx_pack.SECTION_ORDER)


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
    total = 0.25 + 0.15 + 0.30 + 0.20  # the default salience weights, under the seed's names (docs/interop-seeds.md)
    assert pack["assembly_metadata"]["ranking_weights"] == {"relevance": 0.0, "recency": 0.25 / total,
                                                            "provenance": 0.30 / total, "salience": (0.15 + 0.20) / total}
    assert pack["token_budget"]["dropped_count"] == 0 and pack["dropped_entries"] == []
    assert pack["metadata"]["root"] == store.root()
    hard, soft = (next(d for d in pack["decision_constraints"] if d["artifact_id"] == uris[k]) for k in ("hard", "soft"))
    assert hard == {"artifact_id": uris["hard"], "condition": "price check", "constraint": "never pay above 2 USD/h",  # not "dont never"
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
                         forms={"short": str(batch * 1000 + i)})  # one or two tokens, all distinct: thousands fit in 4,000
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


def test_one_memory_over_the_budget_by_itself_is_cut_with_the_truncated_marker(store):
    """Seed 000 §4 rules 1, 4 and 5: the section's one entry is kept, cut to the budget."""
    uri = store.write(cortex.Fact(statement="a rather long statement about the price of GPUs " * 3, subject="acme",
                                  predicate="price"), frames=[GPU])
    bundle = store.context(**ASK, budget_tokens=5)
    assert len(bundle.memories()) == 1 and bundle.total_tokens > 5  # context() keeps one
    pack = hmx_pack.build(bundle)
    check_invariants(pack, bundle)
    [entry] = pack["entries"]
    assert entry["source_id"] == uri and entry["content"].endswith(" [truncated]")
    assert bundle.rendered[bundle.memories()[0].id].startswith(entry["content"].removesuffix(" [truncated]"))
    assert entry["token_estimate"] == Tokenizer().count(entry["content"]) <= 5
    assert pack["token_budget"]["truncated"] is True
    assert pack["dropped_entries"] == [] and pack["token_budget"]["dropped_count"] == 0


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


# ---------------------------------------------------------------------------
# Edges: superseded memories as drops, relations between entries


LATER = {**ASK, "now": NOW.replace(hour=14)}


def id_of(uri: str) -> str:
    """The memory id a URI names (an id stays as it is)."""
    return uri.rsplit("/", 1)[-1].split("#")[0]


def priced(c: cortex.Cortex, clock: Clock) -> dict[str, str]:
    """Two prices and two stock levels, each superseded by a newer one, a Pattern
    derived from the new price, a corroborating edge; name -> URI."""
    u = {}
    u["old_price"] = c.write(cortex.Fact(statement="A100 spot is 1.40 USD/h", subject="acme", predicate="price"),
                             frames=[GPU], importance=7)
    clock.advance(60)
    u["old_stock"] = c.write(cortex.Fact(statement="acme has no H100", subject="acme", predicate="stock"),
                             frames=[GPU], importance=3)
    clock.advance(60)
    u["price"] = c.write(cortex.Fact(statement="A100 spot is 1.20 USD/h", subject="acme", predicate="price"),
                         frames=[GPU], importance=7, supersedes=[u["old_price"]])
    u["stock"] = c.write(cortex.Fact(statement="acme has 8 H100", subject="acme", predicate="stock"),
                         frames=[GPU], importance=3, supersedes=[u["old_stock"]])
    u["pattern"] = c.write(cortex.Pattern(statement="acme cuts prices on Mondays", strength=0.7, coverage=4), frames=[GPU])
    c.link(u["pattern"], "derived_from", u["price"], weight=0.5)
    c.link(u["stock"], "corroborates", u["price"])
    return u


@pytest.fixture
def fixed(tmp_path):
    """A store on a fixed clock with zero entropy: its ids, hence its URIs, are known."""
    clock = Clock()
    c = cortex.open(tmp_path / "fixed", actor="a", clock=clock, entropy=bytes)
    yield c, clock
    c.close()


def test_superseded_memories_are_dropped_entries_with_what_they_would_have_scored(fixed):
    c, clock = fixed
    u = priced(c, clock)
    bundle = c.context(**LATER)
    assert sorted(bundle.superseded_ids) == sorted(id_of(u[k]) for k in ("old_price", "old_stock"))
    pack = hmx_pack.build(bundle, "q")
    check_invariants(pack, bundle)
    # What they would have scored and cost: the same call with include_superseded=True.
    full = c.context(**LATER, include_superseded=True)
    expected = [
        {"source_id": u[k], "source_type": "memory", "section": "facts", "relevance_score": full.scores[id_of(u[k])],
         "token_estimate": tokens, "drop_reason": "superseded", "rank": rank}
        for k, tokens, rank in (("old_price", 14, 4), ("old_stock", 10, 5))  # the better score first
    ]
    assert full.tokens[id_of(u["old_price"])] == 14 and full.tokens[id_of(u["old_stock"])] == 10
    assert pack["dropped_entries"] == expected
    assert expected[0]["relevance_score"] > expected[1]["relevance_score"]
    assert [e["source_id"] for e in pack["entries"]] == [u["pattern"], u["price"], u["stock"]]
    assert pack["token_budget"]["dropped_count"] == 2
    # Asked for, they are entries and nothing is dropped.
    everything = hmx_pack.build(full, "q")
    check_invariants(everything, full)
    assert {e["source_id"] for e in everything["entries"]} == set(u.values())
    assert everything["dropped_entries"] == [] and everything["token_budget"]["dropped_count"] == 0


def test_budget_drops_are_listed_before_superseded_ones_and_the_list_stops_at_100(fixed):
    c, clock = fixed
    olds = c.write_many([cortex.Write(cortex.Fact(statement=f"old offer {i}", subject="acme", predicate="price"),
                                      frames=[GPU], importance=10, forms={"short": "abcde"[i]}) for i in range(5)])
    c.write_many([cortex.Write(cortex.Fact(statement=f"offer {i}", subject="acme", predicate="price"), frames=[GPU],
                               forms={"short": str(i)}, supersedes=[olds[i]] if i < 5 else ()) for i in range(200)])
    for budget, trimmed in ((195, 5), (20, 180)):
        bundle = c.context(**ASK, budget_tokens=budget, form="short")
        assert bundle.trimmed == trimmed and len(bundle.superseded_ids) == 5
        pack = hmx_pack.build(bundle)
        check_invariants(pack, bundle)
        dropped = pack["dropped_entries"]
        reasons = [d["drop_reason"] for d in dropped]
        shown = min(5, 100 - trimmed)
        assert reasons == ["budget_exceeded"] * min(trimmed, 100) + ["superseded"] * shown
        assert [id_of(d["source_id"]) for d in dropped if d["drop_reason"] == "budget_exceeded"] == list(bundle.dropped_ids[:100])
        superseded = [d for d in dropped if d["drop_reason"] == "superseded"]
        assert all(d["source_id"] in olds and d["token_estimate"] == 1 and d["section"] == "facts" for d in superseded)
        # Higher importance than every survivor, yet left out: they are stale.
        assert all(d["relevance_score"] > e["relevance_score"] for d in superseded for e in pack["entries"])
        assert pack["token_budget"]["dropped_count"] == trimmed + 5


def test_edges_between_entries_are_graph_relations(fixed):
    c, clock = fixed
    u = priced(c, clock)
    outsider = c.write(cortex.Fact(statement="acme is in Frankfurt", subject="acme", predicate="site"))  # not a candidate
    c.link(u["stock"], "references", outsider)
    c.link(u["pattern"], "references", u["stock"])
    c.unlink(u["pattern"], "references", u["stock"], reason="wrong")
    bundle = c.context(**LATER)
    edges = hmx_pack.edges_among(c, bundle)
    assert [(e.src, e.type.name, e.dst) for e in edges] == [
        (id_of(u["stock"]), "CORROBORATES", id_of(u["price"])),
        (id_of(u["pattern"]), "DERIVED_FROM", id_of(u["price"])),
    ]
    pack = hmx_pack.build(bundle, "q", edges=edges)
    check_invariants(pack, bundle)
    score = {e["source_id"]: e["relevance_score"] for e in pack["entries"]}
    relations = [e for e in pack["entries"] if e["section"] == "graph_relations"]
    assert relations == [
        {"section": "graph_relations", "content": f"{u['stock']} corroborates {u['price']}",
         "source_id": f"edge:{id_of(u['stock'])}/corroborates/{id_of(u['price'])}", "source_type": "relation",
         "relevance_score": min(score[u["stock"]], score[u["price"]]), "token_estimate": 41, "rank": 3,
         "provenance": {"origin": "graph", "confidence": 1.0, "evidence_count": 1}},
        {"section": "graph_relations", "content": f"{u['pattern']} derived_from {u['price']}",
         "source_id": f"edge:{id_of(u['pattern'])}/derived_from/{id_of(u['price'])}", "source_type": "relation",
         "relevance_score": 0.5 * min(score[u["pattern"]], score[u["price"]]), "token_estimate": 41, "rank": 4,
         "provenance": {"origin": "graph", "confidence": 0.5, "evidence_count": 1}},
    ]
    assert u["stock"] == "cortex://Fact/01JN8SBCP00000000000000001#1"  # zero entropy: the token counts above hold
    assert pack["token_budget"]["used"] == 17 + 14 + 11 + 41 + 41
    assert pack["token_budget"]["section_budgets"]["graph_relations"]["used"] == 82
    assert pack["assembly_metadata"]["included_count"] == 5
    # The unlinked edge, the edge to a memory outside the pack and a repeated edge
    # change nothing, and neither does the order the edges come in.
    everything = c.edges(u["stock"], "both", include_tombstoned=True) + c.edges(u["pattern"], "both", include_tombstoned=True)
    assert canonical_json(hmx_pack.build(bundle, "q", edges=reversed(everything + edges))) == canonical_json(pack)
    # Without edges there is no graph_relations section.
    assert {e["section"] for e in hmx_pack.build(bundle, "q")["entries"]} == {"procedures", "facts"}


def test_relations_get_only_the_room_the_memories_leave(fixed):
    c, clock = fixed
    u = priced(c, clock)
    bundle = c.context(**LATER, budget_tokens=17 + 14 + 11 + 41)  # the memories and one relation
    assert bundle.trimmed == 0
    pack = hmx_pack.build(bundle, "q", edges=hmx_pack.edges_among(c, bundle))
    check_invariants(pack, bundle)
    assert [e["source_id"] for e in pack["entries"] if e["section"] == "graph_relations"] == [
        f"edge:{id_of(u['stock'])}/corroborates/{id_of(u['price'])}"]
    last = pack["dropped_entries"][-1]
    assert last == {"source_id": f"edge:{id_of(u['pattern'])}/derived_from/{id_of(u['price'])}", "source_type": "relation",
                    "section": "graph_relations", "relevance_score": last["relevance_score"], "token_estimate": 41,
                    "drop_reason": "budget_exceeded", "rank": 7}  # after the two superseded memories
    assert pack["token_budget"]["dropped_count"] == 3 and pack["token_budget"]["remaining"] == 0
    # A budget the memories alone fill: no relation, every memory kept.
    bundle = c.context(**LATER, budget_tokens=17 + 14 + 11)
    pack = hmx_pack.build(bundle, "q", edges=hmx_pack.edges_among(c, bundle))
    assert [e["section"] for e in pack["entries"]] == ["procedures", "facts", "evidence"]  # the price is supported
    assert [d["source_type"] for d in pack["dropped_entries"]] == ["memory", "memory", "relation", "relation"]


def test_the_size_limit_drops_relations_before_memories(fixed, monkeypatch):
    c, clock = fixed
    u = priced(c, clock)
    bundle = c.context(**LATER)
    edges = hmx_pack.edges_among(c, bundle)
    corroborates = f"edge:{id_of(u['stock'])}/corroborates/{id_of(u['price'])}"
    derived = f"edge:{id_of(u['pattern'])}/derived_from/{id_of(u['price'])}"
    limit = len(canonical_json(hmx_pack.build(bundle, "q", edges=edges)))
    kept = []
    for _ in range(3):  # each time one byte less than the last pack
        monkeypatch.setattr(hmx_pack, "MAX_PACK_BYTES", limit - 1)
        pack = hmx_pack.build(bundle, "q", edges=edges)
        limit = len(canonical_json(pack))
        assert limit <= hmx_pack.MAX_PACK_BYTES
        kept.append([e["source_id"] for e in pack["entries"]])
        check_invariants(pack, bundle)
    assert kept == [
        [u["pattern"], u["stock"], corroborates, u["price"]],  # the price is evidence: the others point at it
        [u["pattern"], u["stock"], u["price"]],
        [u["stock"], u["price"]],  # a memory (the lowest) goes only once the relations are gone
    ]
    assert [(d["source_id"], d["drop_reason"]) for d in pack["dropped_entries"]] == [
        (u["pattern"], "budget_exceeded"), (u["old_price"], "superseded"), (u["old_stock"], "superseded"),
        (corroborates, "budget_exceeded"), (derived, "budget_exceeded")]


def test_packs_with_edges_are_byte_identical_also_after_a_reopen(tmp_path):
    clock = Clock()
    with cortex.open(tmp_path / "s", actor="a", clock=clock) as c:
        priced(c, clock)
        bundle = c.context(**LATER)
        first = canonical_json(hmx_pack.build(bundle, "q", edges=hmx_pack.edges_among(c, bundle)))
        bundle = c.context(**LATER)
        assert canonical_json(hmx_pack.build(bundle, "q", edges=hmx_pack.edges_among(c, bundle))) == first
    with cortex.open(tmp_path / "s", actor="a", clock=clock) as c:
        bundle = c.context(**LATER)
        assert canonical_json(hmx_pack.build(bundle, "q", edges=hmx_pack.edges_among(c, bundle))) == first


@pytest.mark.parametrize(("edges", "field", "rule"), [
    ("edge", "edges", "must be a collection of cortex.Edge"),
    (None, "edges", "must be a collection of cortex.Edge"),
    ([("a", "supersedes", "b")], "edges[0]", "must be a cortex.Edge, not tuple"),
], ids=["str", "none", "tuple"])
def test_a_bad_edges_argument_is_refused(store, edges, field, rule):
    populate(store)
    with pytest.raises(cortex.ValidationError) as info:
        hmx_pack.build(store.context(**ASK), edges=edges)
    assert (info.value.field, info.value.rule) == (field, rule)


EDGE_TYPES = ["supersedes", "contradicts", "derived_from", "corroborates", "references"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    importance=st.lists(st.integers(0, 10), min_size=2, max_size=10),
    links=st.lists(st.tuples(st.integers(0, 9), st.sampled_from(EDGE_TYPES), st.integers(0, 9)), max_size=15),
    budget=st.integers(1, 300),
    include_superseded=st.booleans(),
)
def test_any_store_with_edges_gives_a_pack_within_every_rule(tmp_path_factory, importance, links, budget, include_superseded):
    with cortex.open(tmp_path_factory.mktemp("p"), actor="a", clock=Clock()) as c:
        uris = c.write_many([cortex.Write(cortex.Fact(statement=f"offer {i} at {v}.00 USD/h", subject="acme", predicate="price"),
                                          frames=[GPU], importance=v) for i, v in enumerate(importance)])
        for src, edge_type, dst in links:
            if src < len(uris) and dst < len(uris) and src != dst:
                try:
                    c.link(uris[src], edge_type, uris[dst])
                except cortex.SupersedesCycle:
                    pass
        bundle = c.context(**ASK, budget_tokens=budget, include_superseded=include_superseded)
        pack = hmx_pack.build(bundle, "q", edges=hmx_pack.edges_among(c, bundle))
        again = hmx_pack.build(bundle, "q", edges=hmx_pack.edges_among(c, bundle))
    check_invariants(pack, bundle)
    assert canonical_json(pack) == canonical_json(again)
    memories = {id_of(e["source_id"]): e for e in pack["entries"] if e["source_type"] != "relation"}
    relations = [e for e in pack["entries"] if e["source_type"] == "relation"]
    for r in relations:  # both ends are memory entries of this pack
        src, edge_type, dst = r["source_id"].removeprefix("edge:").split("/")
        assert r["content"] == f"{memories[src]['source_id']} {edge_type} {memories[dst]['source_id']}"
        assert r["relevance_score"] <= min(memories[src]["relevance_score"], memories[dst]["relevance_score"])
    superseded = {id_of(d["source_id"]) for d in pack["dropped_entries"] if d["drop_reason"] == "superseded"}
    assert superseded == set(bundle.superseded_ids) or len(pack["dropped_entries"]) == 100
    assert not superseded & set(memories)
    if include_superseded:
        assert not bundle.superseded_ids
    relation_drops = sum(d["source_type"] == "relation" for d in pack["dropped_entries"])
    pack_drops = len(bundle.memories()) - len(memories)
    assert pack["token_budget"]["dropped_count"] == bundle.trimmed + pack_drops + len(bundle.superseded_ids) + relation_drops
