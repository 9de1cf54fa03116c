"""The context ledger: the replay record of one context() call (docs/interop.md)."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest
from interop_helpers import GPU, NOW, open_store, populate, validate

import cortex
from cortex.interop import ledger

ASK = {"verb": "acquire", "objects": {"service": "gpu_inference"}, "now": NOW}


@pytest.fixture
def store(tmp_path):
    c = open_store(tmp_path / "s")
    yield c
    c.close()


def codes(record: dict) -> list[str]:
    return [w["code"] for w in record["warnings"]]


def test_the_snapshot_hash_recomputes_from_the_ledger_without_it(store):
    populate(store)
    record = ledger.build(store.context(**ASK))
    validate(record, "context_ledger")
    rest = {k: v for k, v in record.items() if k != "context_snapshot_hash"}
    body = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert record["context_snapshot_hash"] == "sha256:" + hashlib.sha256(body).hexdigest()
    assert ledger.verify(record)
    tampered = copy.deepcopy(record)
    tampered["selected"]["pinned"].reverse()
    assert not ledger.verify(tampered)
    assert not ledger.verify({**record, "context_snapshot_hash": "sha256:" + "0" * 64})


def test_two_calls_on_the_same_state_and_options_give_the_same_ledger(tmp_path):
    with open_store(tmp_path / "s") as c:
        populate(c)
        first = ledger.build(c.context(**ASK, budget_tokens=60))
        assert ledger.build(c.context(**ASK, budget_tokens=60)) == first
    with open_store(tmp_path / "s") as c:
        assert ledger.build(c.context(**ASK, budget_tokens=60)) == first
        later = ledger.build(c.context(**{**ASK, "now": NOW.replace(year=2026)}, budget_tokens=60))
    assert later["request"]["now"] == "2026-03-01T12:00:00.000000Z" and later["context_snapshot_hash"] != first["context_snapshot_hash"]


def test_the_ledger_records_the_call(store):
    populate(store)
    bundle = store.context(**ASK, budget_tokens=80, form="short")
    record = ledger.build(bundle)
    validate(record, "context_ledger")
    assert record["request"] == {
        "verb": "acquire", "objects": [["service", "gpu_inference"]], "budget_tokens": 80,
        "include_tiers": ["pinned", "outcomes", "frame_relevant"], "outcome_limit": 3, "form": "short",
        "now": "2025-03-01T12:00:00.000000Z",
    }
    assert record["selected"] == {
        "pinned": [m.id for m in bundle.pinned],
        "outcomes": [m.id for m in bundle.outcomes],
        "frame_relevant": [m.id for m in bundle.frame_relevant],
    }
    assert record["dropped"] == list(bundle.dropped_ids) and len(record["dropped"]) == bundle.trimmed > 0
    tokens = record["tokens"]
    assert tokens["pinned"] == sum(m.tokens["short"] for m in bundle.pinned)
    assert tokens["total"] == tokens["pinned"] + tokens["outcomes"] + tokens["frame_relevant"] == bundle.total_tokens <= 80
    assert record["budget"] == 80 and record["root"] == store.root()
    assert record["warnings"] == [{"code": "budget_hit", "message": f"{bundle.trimmed} of {bundle.candidates} candidates trimmed to fit 80 tokens"}]


def test_a_comfortable_call_has_no_warnings(store):
    populate(store)
    assert ledger.build(store.context(**ASK))["warnings"] == []


def test_a_pinned_memory_alone_over_the_budget(store):
    store.write(cortex.Identity(name="agent-ops-1 " * 10))
    record = ledger.build(store.context(**ASK, budget_tokens=5))
    assert codes(record) == ["pinned_over_budget", "min_one_kept"]
    assert record["tokens"]["total"] > 5 and record["dropped"] == []


def test_pinned_over_budget_counts_trimmed_pinned_memories_when_told(store):
    for i in range(3):
        store.write(cortex.Constraint(statement=f"rule number {i} about spending", strength="hard", polarity="dont",
                                      source="user_declared"))
    bundle = store.context(**ASK, budget_tokens=20)
    assert bundle.trimmed == 2 and len(bundle.pinned) == 1
    pinned_tokens = sum(m.tokens["medium"] for m in store.memories())
    record = ledger.build(bundle, pinned_candidate_tokens=pinned_tokens)
    assert codes(record) == ["budget_hit", "pinned_over_budget"]
    assert record["warnings"][1]["message"] == f"the pinned tier alone needs {pinned_tokens} tokens, over the budget of 20"
    assert codes(ledger.build(bundle)) == ["budget_hit"]  # without the candidates' tokens only survivors count


def test_many_trimmed_and_pinned_only_calls(store):
    store.write_many([cortex.Write(cortex.Fact(statement=f"offer {i}", subject="acme", predicate="price"), frames=[GPU])
                      for i in range(100)])
    assert codes(ledger.build(store.context(**ASK, budget_tokens=10))) == ["budget_hit", "reachable_truncated"]
    assert codes(ledger.build(store.context(now=NOW))) == ["pinned_only", "no_candidates"]
    assert codes(ledger.build(store.context(now=NOW, include_tiers=["pinned"]))) == ["no_candidates"]


def test_verify_refuses_what_is_not_a_ledger():
    assert not ledger.verify({})
    assert not ledger.verify({"context_snapshot_hash": "sha256:x", "x": object()})
