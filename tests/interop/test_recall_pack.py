"""`synthesize(query, max_tokens, sections=None)`: an HMX-1.0 pack of the pinned tier and
the memories recalled by content, and `cortex context --query TEXT --format hmx`."""

from __future__ import annotations

import json

import pytest
from interop_helpers import NOW, open_store, validate

import cortex
from cortex import Constraint, Fact, Identity, Preference
from cortex.cli import main


@pytest.fixture
def store(tmp_path):
    c = open_store(tmp_path / "s")
    uris = {
        "me": c.write(Identity(name="agent-a")),
        "rule": c.write(Constraint(statement="never deploy on fridays", strength="hard", polarity="dont", source="user_declared")),
        "pipeline": c.write(Fact(statement="payments deploy via the blue-green pipeline", subject="payments", predicate="deploys")),
        "staging": c.write(Fact(statement="staging lives in eu-west", subject="staging", predicate="region")),
        "pasta": c.write(Preference(topic="food", polarity="prefer", rationale="pasta on fridays")),
    }
    yield c, uris
    c.close()


def test_synthesize_packs_the_pinned_tier_and_the_recalled_memories(store):
    c, uris = store
    pack = c.synthesize("deploy payments to staging", max_tokens=500, now=NOW)
    validate(pack, "hmx_context_pack")
    assert pack["query_context"] == "deploy payments to staging"
    assert [(e["section"], e["source_id"]) for e in pack["entries"]] == [
        ("core", uris["me"]), ("constraints", uris["rule"]), ("facts", uris["pipeline"]), ("facts", uris["staging"])]
    hits = c.find(near="deploy payments to staging", budget_tokens=500)
    assert uris["rule"] in [m.uri for m in hits]  # recalled too ("deploy"), but pinned: it stays in its section
    recalled = [m for m in hits if m.uri != uris["rule"]]
    best = hits.relevance[recalled[0].id]
    facts = [e for e in pack["entries"] if e["section"] == "facts"]
    assert [e["relevance_score"] for e in facts] == [hits.relevance[m.id] / best for m in recalled]
    assert pack["token_budget"]["total_budget"] == 500
    assert pack["created_at"] == "2025-03-01T12:00:00.000000Z"
    again = c.synthesize("deploy payments to staging", max_tokens=500, now=NOW)
    assert json.dumps(again, sort_keys=True) == json.dumps(pack, sort_keys=True)


def test_synthesize_keeps_only_the_sections_asked_and_refuses_bad_arguments(store):
    c, uris = store
    pack = c.synthesize("deploy payments", max_tokens=500, sections=["facts"], now=NOW)
    assert {e["section"] for e in pack["entries"]} == {"facts"}
    root = c.root()
    for bad, field in ((0, "max_tokens"), (True, "max_tokens"), ("500", "max_tokens")):
        with pytest.raises(cortex.ValidationError) as raised:
            c.synthesize("deploy", max_tokens=bad)  # type: ignore[arg-type]
        assert raised.value.field == field
    with pytest.raises(cortex.ValidationError) as raised:
        c.synthesize("the and of", max_tokens=500)
    assert raised.value.field == "near"
    with pytest.raises(cortex.ValidationError) as raised:
        c.synthesize("deploy", max_tokens=500, sections=["nope"])
    assert raised.value.field.startswith("sections")
    assert c.root() == root


def test_cli_context_query_prints_the_synthesized_pack(store, capsys):
    c, _ = store
    path = c.path
    want = c.synthesize("deploy payments to staging", max_tokens=800, now=NOW)
    c.close()
    assert main(["context", path, "--query", "deploy payments to staging", "--format", "hmx", "--budget", "800",
                 "--now", "2025-03-01T12:00:00Z"]) == 0
    assert json.loads(capsys.readouterr().out) == want
    assert main(["context", path, "--query", "deploy"]) == 2
    assert "--format hmx" in capsys.readouterr().err
    assert main(["context", path, "--query", "deploy", "--format", "hmx", "--verb", "acquire"]) == 2
    assert "--verb" in capsys.readouterr().err
