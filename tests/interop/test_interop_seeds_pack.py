"""HMX-C (seed 000) read line by line: the five budget rules, every drop reason, the
optional fields, the seed's ranking-weight names and `sections=`. Runs on
PostgreSQL too (test_backends_interop_seeds.py)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from interop_helpers import DEPLOY, GPU, NOW, Clock, open_store, populate, validate

import cortex
from cortex.forms import Tokenizer
from cortex.interop import hmx_pack
from cortex.interop.canonical import canonical_json
from cortex.interop.hmx_budget import TRUNCATE_FLOOR, TRUNCATED_MARKER

ASK = {"verb": "acquire", "objects": {"service": "gpu_inference"}, "now": NOW}
PRIORITY = list(hmx_pack.SECTION_ORDER)
SEED_OPTIONAL = ("tenant_id", "agent_id", "session_id", "workflow_hints", "decision_constraints", "dropped_entries",
                 "fingerprint_priors", "tags")
SEED_REQUIRED = ("hmx_version", "pack_id", "query_context", "entries", "token_budget", "assembly_metadata", "created_at",
                 "metadata")


@pytest.fixture
def store(tmp_path):
    c = open_store(tmp_path / "s")
    yield c
    c.close()


def sections_of(pack: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for e in pack["entries"]:
        out.setdefault(e["section"], []).append(e)
    return out


def facts_and_patterns(c: cortex.Cortex, facts: int = 40, patterns: int = 30) -> None:
    """Many important facts and many unimportant patterns under the GPU frame: the
    call's own trim keeps facts only."""
    c.write_many([cortex.Write(cortex.Fact(statement=f"offer {i}: A100 spot at {i}.25 USD/h in eu-west-{i}", subject="acme",
                                           predicate="price"), frames=[GPU], importance=10) for i in range(facts)])
    c.write_many([cortex.Write(cortex.Pattern(statement=f"retry step {i} of the reservation after {i} s", strength=0.5,
                                              coverage=i), frames=[GPU, DEPLOY]) for i in range(patterns)])


def expected_budgets(total: int, needs: dict[str, int], firsts: dict[str, int], weights: dict[str, float]) -> dict[str, int]:
    """Rules 2-4 written independently of the engine: a floor each, then by weight
    with the overflow shared again, exact fractions, largest remainder."""
    order = [s for s in PRIORITY if s in needs]
    budget = {s: 0 for s in order}
    pool = total
    for s in order:
        budget[s] = min(firsts[s], TRUNCATE_FLOOR, pool)
        pool -= budget[s]

    def split(amount: int, names: list[str]) -> dict[str, int]:
        w = {s: Fraction(weights[s]) for s in names}
        whole = sum(w.values())
        exact = {s: amount * w[s] / whole for s in names}
        base = {s: int(exact[s]) for s in names}
        for s in sorted(names, key=lambda s: (-(exact[s] - base[s]), names.index(s)))[: amount - sum(base.values())]:
            base[s] += 1
        return base

    while pool:
        wanting = [s for s in order if needs[s] > budget[s]]
        if not wanting:
            break
        for s, share in split(pool, wanting).items():
            take = min(share, needs[s] - budget[s])
            budget[s] += take
            pool -= take
    for s, extra in split(pool, order).items():
        budget[s] += extra
    return budget


def test_rule_2_section_budgets_follow_the_configured_weights(store):
    facts_and_patterns(store)
    bundle = store.context(**ASK, budget_tokens=4000)
    assert not bundle.trimmed
    for weights in (None, {"facts": 1.0, "procedures": 3.0}):
        pack = hmx_pack.build(bundle, "q", max_tokens=300, section_weights=weights)
        validate(pack, "hmx_context_pack")
        effective = dict(hmx_pack.DEFAULT_SECTION_WEIGHTS) | (weights or {})
        groups = {"facts": [], "procedures": []}
        for m in bundle.memories():
            groups["facts" if m.type.type_name == "Fact" else "procedures"].append(bundle.tokens[m.id])
        firsts = {}
        for name in groups:
            best = min((m for m in bundle.memories() if (m.type.type_name == "Fact") == (name == "facts")),
                       key=lambda m: (-bundle.scores[m.id], bundle.tokens[m.id], m.uri))
            firsts[name] = bundle.tokens[best.id]
        expected = expected_budgets(300, {k: sum(v) for k, v in groups.items()}, firsts, effective)
        assert pack["metadata"]["section_allocation"] == expected
        # What a section leaves unused after its prefix of whole entries is lent to the best entry left out (rule 3).
        budgets = pack["token_budget"]["section_budgets"]
        assert sum(v["budget"] for v in budgets.values()) == sum(expected.values()) == 300
        assert all(v["used"] <= v["budget"] for v in budgets.values())
        assert pack["metadata"]["section_weights"] == effective
    # Three times the weight: about three times the budget (the floors aside).
    assert expected["procedures"] > 2 * expected["facts"]


def test_rule_3_a_section_that_needs_less_lends_its_share(store):
    store.write(cortex.Identity(name="agent-ops-1", roles=("ops",)))
    facts_and_patterns(store, patterns=0)
    bundle = store.context(**ASK, budget_tokens=4000)
    identity = bundle.pinned[0]
    pack = hmx_pack.build(bundle, "q", max_tokens=400)
    budgets = pack["token_budget"]["section_budgets"]
    core_need = bundle.tokens[identity.id]
    assert core_need < 400 * 0.15 / 0.35  # core's weighted share is more than it needs...
    assert budgets["core"] == {"budget": core_need, "used": core_need}
    assert budgets["facts"]["budget"] == 400 - core_need  # ... and facts get the rest
    assert pack["token_budget"]["used"] <= 400


def test_rule_4_every_non_empty_section_keeps_an_entry_even_when_the_call_trimmed_it_all(store):
    facts_and_patterns(store)
    bundle = store.context(**ASK, budget_tokens=200)
    trimmed_types = {store.resolve_latest(i).type.type_name for i in bundle.dropped_ids}
    assert {m.type.type_name for m in bundle.memories()} == {"Fact"} and "Pattern" in trimmed_types
    assert {e["section"] for e in hmx_pack.build(bundle, "q")["entries"]} == {"facts"}  # the bundle alone
    pack = hmx_pack.synthesize(store, bundle, "q")
    validate(pack, "hmx_context_pack")
    by_section = sections_of(pack)
    assert set(by_section) == {"facts", "procedures"}
    assert pack["token_budget"]["used"] <= 200
    assert pack["workflow_hints"]["suggested_next_steps"][0]["artifact_id"] == by_section["procedures"][0]["source_id"]
    dropped = {d["source_id"] for d in pack["dropped_entries"]}
    assert not dropped & {e["source_id"] for e in pack["entries"]}
    assert pack["token_budget"]["dropped_count"] == 70 - len(pack["entries"])


def test_rule_4_constraints_keep_their_section_and_decision_constraints(store):
    store.write_many([cortex.Write(cortex.Constraint(statement=f"never exceed quota {i} on region {i}", strength="firm",
                                                     polarity="dont", source="learned"), frames=[GPU]) for i in range(30)])
    facts_and_patterns(store, patterns=0)
    bundle = store.context(**ASK, budget_tokens=300)
    pack = hmx_pack.synthesize(store, bundle, "q", max_tokens=120)
    validate(pack, "hmx_context_pack")
    by_section = sections_of(pack)
    assert set(by_section) == {"constraints", "facts"}
    assert [d["artifact_id"] for d in pack["decision_constraints"]] == [e["source_id"] for e in by_section["constraints"]]


def test_rule_5_a_first_entry_larger_than_its_section_budget_is_cut(store):
    long = store.write(cortex.Pattern(statement="reserve, then " + "check the quota and the region, " * 20, strength=0.9,
                                      coverage=3), frames=[GPU])
    facts_and_patterns(store, patterns=0)
    bundle = store.context(**ASK, budget_tokens=4000)
    pack = hmx_pack.build(bundle, "q", max_tokens=150)
    validate(pack, "hmx_context_pack")
    [procedure] = sections_of(pack)["procedures"]
    assert procedure["source_id"] == long and procedure["content"].endswith(TRUNCATED_MARKER)
    full = bundle.rendered[store.resolve(long).id]
    assert full.startswith(procedure["content"].removesuffix(TRUNCATED_MARKER))
    assert procedure["token_estimate"] == Tokenizer().count(procedure["content"])
    budget = pack["token_budget"]["section_budgets"]["procedures"]
    assert procedure["token_estimate"] <= budget["budget"] < bundle.tokens[store.resolve(long).id]
    assert pack["token_budget"]["truncated"] is True
    assert all(not e["content"].endswith(TRUNCATED_MARKER) for e in sections_of(pack)["facts"])


def test_rule_1_the_hard_limit_wins_when_it_cannot_hold_every_section(store):
    populate(store)
    bundle = store.context(**ASK)
    pack = hmx_pack.build(bundle, "q", max_tokens=3)
    validate(pack, "hmx_context_pack")
    assert pack["token_budget"]["used"] <= 3 and pack["entries"] == []  # not even a cut entry fits beside the marker
    assert {d["drop_reason"] for d in pack["dropped_entries"]} <= {"budget_exceeded", "stale"}


def test_each_drop_reason_the_engine_knows(fixed_store):
    c, clock = fixed_store
    old = c.write(cortex.Fact(statement="A100 spot is 1.40 USD/h", subject="acme", predicate="price"), frames=[GPU])
    clock.advance(60)
    c.write(cortex.Fact(statement="A100 spot is 1.20 USD/h", subject="acme", predicate="price"), frames=[GPU],
            supersedes=[old])
    same = [c.write(cortex.Fact(statement="acme is in Frankfurt", subject="acme", predicate="site"), frames=[GPU])
            for _ in range(2)]
    done = c.write(cortex.Goal(statement="reserve 10 h", status="completed"), frames=[GPU])
    unsure = c.write(cortex.Fact(statement="acme may add H200", subject="acme", predicate="stock"), frames=[GPU],
                     confidence=0.3)
    hidden = c.write(cortex.Fact(statement="acme's CEO likes golf", subject="acme", predicate="trivia"), frames=[GPU],
                     tags=["gossip"])
    c.write_many([cortex.Write(cortex.Fact(statement=f"offer {i}: {i}.10 USD/h in zone {i}", subject="acme",
                                           predicate="offer"), frames=[GPU]) for i in range(20)])
    bundle = c.context(**ASK, budget_tokens=4000)
    pack = hmx_pack.build(bundle, "q", max_tokens=120, min_confidence=0.5, priors={"suppressed_tags": ["gossip"]})
    validate(pack, "hmx_context_pack")
    reasons = {d["source_id"]: d["drop_reason"] for d in pack["dropped_entries"]}
    assert reasons[old] == "superseded"
    assert reasons[done] == "stale"
    assert reasons[unsure] == "low_confidence"
    assert reasons[hidden] == "low_relevance"
    assert [reasons.get(u, "kept") for u in same] in (["kept", "duplicate"], ["duplicate", "kept"])  # one stays
    assert "budget_exceeded" in reasons.values()
    assert set(reasons.values()) == set(hmx_pack.DROP_REASONS) - {"deprecated"}  # that one needs an artifact (below)
    assert pack["token_budget"]["dropped_count"] == len(pack["dropped_entries"])
    # A relevance threshold: everything below it goes as low_relevance.
    strict = hmx_pack.build(bundle, "q", min_relevance=0.99)
    assert strict["entries"] == []
    assert {d["drop_reason"] for d in strict["dropped_entries"]} == {"low_relevance", "superseded", "stale"}


@pytest.fixture
def fixed_store(tmp_path):
    clock = Clock()
    c = cortex.open(tmp_path / "fixed", actor="agent-ops-1", clock=clock, entropy=bytes)
    yield c, clock
    c.close()


def test_every_optional_field_is_filled_when_known(fixed_store):
    c, clock = fixed_store
    c.ingest_hmx([{
        "hmx_version": "HMX-1.0", "event_id": "evt-1", "event_type": "tool_call", "agent_id": "agent-ops-1",
        "tenant_id": "ten_acme", "session_id": "sess_abc123", "timestamp": "2025-03-01T11:00:00Z", "sequence": 1,
        "content": {"tool_name": "deploy", "input": "payments"}, "metadata": {},
    }])
    uris = populate(c)
    bundle = c.context(verb="delegate", objects={"tool": "deploy"}, now=NOW)
    pack = hmx_pack.synthesize(c, bundle, "deploy payments")
    validate(pack, "hmx_context_pack")
    assert set(SEED_REQUIRED) <= set(pack)
    assert pack["tenant_id"] == pack["agent_id"] == "agent-ops-1"
    assert pack["session_id"] == "sess_abc123"  # the newest HMX event entry's session
    assert pack["tags"] == ["billing", "deploy"]  # the entries' tags, without the hmx: tags the ingest wrote
    hints = pack["workflow_hints"]
    assert hints["suggested_next_steps"] == [{"description": "retry a 502 once after 5 s", "artifact_id": uris["pattern"],
                                              "confidence": 0.9, "tools": ["deploy"]}]
    assert hints["active_task_schema"] == uris["pattern"] and hints["total_steps"] == 1 and hints["blockers"] == []
    assert "decision_constraints" in pack and "fingerprint_priors" not in pack
    priors = {"section_weights": {"procedures": 2.0}, "suppressed_tags": [], "default_token_budget": 500}
    guided = hmx_pack.build(bundle, "q", priors=priors, tenant_id="t", agent_id="a", session_id="s", tags=["x"])
    validate(guided, "hmx_context_pack")
    assert guided["fingerprint_priors"] == priors
    assert guided["assembly_metadata"]["assembly_strategy"] == "fingerprint_guided"
    assert guided["metadata"]["section_weights"]["procedures"] == 2.0 * hmx_pack.DEFAULT_SECTION_WEIGHTS["procedures"]
    assert (guided["tenant_id"], guided["agent_id"], guided["session_id"], guided["tags"]) == ("t", "a", "s", ["x"])
    assert set(SEED_OPTIONAL) <= set(guided) | {"decision_constraints", "dropped_entries"}


def test_ranking_weights_use_the_seeds_names_and_retrieval_sources_the_seeds_sources(fixed_store):
    c, clock = fixed_store
    u = populate(c)
    c.link(u["fact"], "corroborates", u["capability"])
    bundle = c.context(**ASK)
    pack = hmx_pack.synthesize(c, bundle, "q")
    meta = pack["assembly_metadata"]
    assert set(meta["ranking_weights"]) == {"relevance", "recency", "provenance", "salience"}
    assert sum(meta["ranking_weights"].values()) == pytest.approx(1.0)
    w = bundle.weights
    assert pack["metadata"]["salience_weights"] == {"recency": w.recency, "access": w.access, "citation": w.citation,
                                                    "importance": w.importance}
    assert meta["retrieval_sources"] == ["episodic", "semantic", "graph"]
    by_uri = {e["source_id"]: e for e in pack["entries"]}
    assert by_uri[u["capability"]]["section"] == "evidence"  # a fact corroborates it
    assert meta["query_classification"]["keywords"] == []  # "q" has no word of three letters


def test_sections_keeps_only_the_sections_asked_for(store):
    populate(store)
    bundle = store.context(**ASK)
    pack = hmx_pack.build(bundle, "q", sections=["procedures", "constraints"])
    validate(pack, "hmx_context_pack")
    assert {e["section"] for e in pack["entries"]} == {"procedures", "constraints"}
    assert set(pack["token_budget"]["section_budgets"]) == {"constraints", "procedures"}
    with pytest.raises(cortex.ValidationError) as info:
        hmx_pack.build(bundle, sections=["procedures", "failures"])
    assert (info.value.field, info.value.rule) == ("sections[1]", "must be one of " + ", ".join(PRIORITY))


@pytest.mark.parametrize(("kwargs", "field", "rule"), [
    ({"max_tokens": -1}, "max_tokens", "must be a non-negative integer"),
    ({"section_weights": {"facts": -1}}, "section_weights.facts", "must be a finite number >= 0"),
    ({"section_weights": {"nope": 1}}, "section_weights.nope", "must name a section: " + ", ".join(PRIORITY)),
    ({"min_relevance": 2}, "min_relevance", "must be a number within [0, 1]"),
    ({"priors": {"section_weights": {"facts": "x"}}}, "priors.section_weights.facts", "must be a finite number >= 0"),
    ({"session_id": ""}, "session_id", "must be a non-empty string or None"),
    ({"tags": ["ops", None]}, "tags[1]", "must be a non-empty string"),
    ({"tags": "ops"}, "tags", "must be a list of strings"),
])
def test_bad_assembly_arguments_are_refused(store, kwargs, field, rule):
    populate(store)
    with pytest.raises(cortex.ValidationError) as info:
        hmx_pack.build(store.context(**ASK), "q", **kwargs)
    assert (info.value.field, info.value.rule) == (field, rule)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kinds=st.lists(st.sampled_from(["fact", "pattern", "constraint", "goal", "event"]), min_size=1, max_size=12),
    total=st.integers(0, 400),
    weights=st.dictionaries(st.sampled_from(["facts", "procedures", "constraints", "goals", "episodes"]),
                            st.floats(0, 5, allow_nan=False), max_size=5),
    wanted=st.one_of(st.none(), st.sets(st.sampled_from(PRIORITY), min_size=1)),
)
def test_any_pack_keeps_the_five_rules(tmp_path_factory, kinds, total, weights, wanted):
    make = {
        "fact": lambda i: cortex.Fact(statement=f"fact {i} " + "word " * (i * 7 % 40), subject="s", predicate="p"),
        "pattern": lambda i: cortex.Pattern(statement=f"pattern {i} " + "step " * (i * 5 % 30)),
        "constraint": lambda i: cortex.Constraint(statement=f"rule {i} " + "never " * (i % 9), strength="firm",
                                                  polarity="dont", source="learned"),
        "goal": lambda i: cortex.Goal(statement=f"goal {i}", status="active"),
        "event": lambda i: cortex.Event(kind="observation", outcome="success", summary=f"seen {i} " + "x " * (i % 20)),
    }
    with cortex.open(tmp_path_factory.mktemp("r"), actor="a", clock=Clock()) as c:
        c.write_many([cortex.Write(make[k](i), frames=[GPU]) for i, k in enumerate(kinds)])
        bundle = c.context(**ASK, budget_tokens=4000)
        pack = hmx_pack.synthesize(c, bundle, "q", max_tokens=total, section_weights=weights,
                                   sections=None if wanted is None else sorted(wanted))
        again = hmx_pack.synthesize(c, bundle, "q", max_tokens=total, section_weights=weights,
                                    sections=None if wanted is None else sorted(wanted))
        candidates = [m.uri for m in bundle.memories()] + [c.resolve_latest(i).uri for i in bundle.dropped_ids]
    validate(pack, "hmx_context_pack")
    assert canonical_json(pack) == canonical_json(again)
    budget = pack["token_budget"]
    assert budget["used"] == sum(e["token_estimate"] for e in pack["entries"]) <= total  # rule 1
    shares = budget["section_budgets"]
    if shares:
        assert sum(s["budget"] for s in shares.values()) == total  # rules 2-3: the whole budget is shared out
    for name, share in shares.items():
        assert share["used"] <= share["budget"]
    by_section = sections_of(pack)
    if total >= TRUNCATE_FLOOR * len(shares):  # rule 4 whenever the total holds a floor for each
        assert set(by_section) == set(shares)
    for entries in by_section.values():  # rule 5: only a section's first entry is ever cut
        assert all(not e["content"].endswith(TRUNCATED_MARKER) for e in entries[1:])
    assert budget["truncated"] == any(e["content"].endswith(TRUNCATED_MARKER) for e in pack["entries"])
    if wanted is not None:
        assert set(by_section) <= wanted
    else:  # every candidate is accounted for once: an entry, or a drop with one of the engine's reasons
        shown = [e["source_id"] for e in pack["entries"]] + [d["source_id"] for d in pack["dropped_entries"]]
        assert sorted(shown) == sorted(candidates)
        assert {d["drop_reason"] for d in pack["dropped_entries"]} <= set(hmx_pack.DROP_REASONS)
        assert budget["dropped_count"] == len(pack["dropped_entries"])


def call(tool: str, ok: bool = True) -> tuple[str, str, object]:
    return ("call", tool, ok)


WORKED = [  # docs/learning.md's worked example: five deploy sessions
    [call("checkout"), call("build"), call("test"), ("decide", "rollout", "canary"), call("deploy")],
    [call("checkout"), call("build"), call("test", False), call("clear_cache"), call("test"), ("decide", "rollout", "canary"),
     call("deploy")],
    [call("checkout"), call("lint"), call("build"), call("test"), ("decide", "rollout", "direct"), call("deploy", False)],
    [call("checkout"), call("build"), call("test", False), call("clear_cache"), call("test"), ("decide", "rollout", "canary"),
     call("deploy")],
    [call("checkout"), call("build"), call("test", False), call("clear_cache"), call("test"), ("decide", "rollout", "direct"),
     call("deploy", False)],
]


def test_compiled_artifacts_fill_procedures_constraints_and_the_workflow_hints(store):
    from learn_helpers import hmx_events

    store.ingest_hmx(hmx_events(WORKED))
    store.learn()
    bundle = store.context(verb="delegate", objects={"tool": "test"}, budget_tokens=4000)
    pack = hmx_pack.synthesize(store, bundle, "run the tests")
    validate(pack, "hmx_context_pack")
    artifacts = {m.uri: m.attributes["hmx_artifact"] for m in store.artifacts()}
    entries = [e for e in pack["entries"] if e["source_type"] == "artifact"]
    assert entries and {e["source_id"] for e in entries} <= set(artifacts)
    expected = {"task_schema": "procedures", "failure_playbook": "procedures", "decision_policy": "constraints",
                "causal_pattern": "evidence", "strategy_template": "workflow"}
    for e in entries:
        assert e["section"] == expected[artifacts[e["source_id"]]["artifact_type"]]
        assert e["provenance"]["origin"] == "compiler"
    assert "compiler" in pack["assembly_metadata"]["retrieval_sources"]
    schemas = [e for e in entries if artifacts[e["source_id"]]["artifact_type"] == "task_schema"]
    best = artifacts[min(schemas, key=lambda e: (-e["relevance_score"], e["token_estimate"], e["source_id"]))["source_id"]]
    hints = pack["workflow_hints"]
    assert hints["active_task_schema"] == best["artifact_id"]
    assert [s["description"] for s in hints["suggested_next_steps"]] == best["content"]["steps"][:10]
    assert hints["total_steps"] == len(best["content"]["steps"])
    policies = [a for uri, a in artifacts.items() if a["artifact_type"] == "decision_policy"
                and uri in {e["source_id"] for e in entries}]
    for policy in policies:
        constraint = next(d for d in pack["decision_constraints"] if d["artifact_id"] == policy["artifact_id"])
        assert (constraint["condition"], constraint["constraint"], constraint["override_allowed"]) == (
            policy["content"]["condition"], policy["content"]["recommendation"], True)


def test_a_deprecated_artifact_is_dropped_as_deprecated(store):
    from learn_helpers import hmx_events

    store.ingest_hmx(hmx_events([[call("a"), call("b"), call("c"), call("d")]] * 12, "y"))
    store.learn()
    store.ingest_hmx(hmx_events([[call("a"), call("b"), call("c"), call("d", False)]] * 60, "z"))
    report = store.learn()
    assert report.deprecated
    deprecated = next(m for m in store.artifacts("task_schema") if "hmx.status:deprecated" in m.tags)
    bundle = store.context(verb="delegate", objects={"tool": "d"}, budget_tokens=4000)
    assert deprecated.id in {m.id for m in bundle.memories()}
    pack = hmx_pack.build(bundle, "q")
    validate(pack, "hmx_context_pack")
    assert {d["source_id"]: d["drop_reason"] for d in pack["dropped_entries"]}[deprecated.uri] == "deprecated"
    assert deprecated.uri not in {e["source_id"] for e in pack["entries"]}


def test_the_bundles_own_export_takes_sections(store):
    populate(store)
    bundle = store.context(**ASK)
    pack = bundle.to_hmx_pack("q", sections=["goals", "core"])
    validate(pack, "hmx_context_pack")
    assert {e["section"] for e in pack["entries"]} == {"goals", "core"}
    assert pack == hmx_pack.build(bundle, "q", sections=["goals", "core"])
    assert bundle.to_hmx_pack("q") == hmx_pack.build(bundle, "q")  # without sections= as before
