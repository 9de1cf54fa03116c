"""Recall by content where a user reaches it: `cortex find --near`, the MCP `recall`
tool over real stdio with the SDK's client. Each answer is checked against the
library's own `find(near=...)` on the same store."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

import cortex  # noqa: E402
from cortex.cli import main  # noqa: E402

from integration_helpers import ACTOR, open_store  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _seed(path: Path) -> dict[str, str]:
    with open_store(path) as c:
        return {
            "postgres": c.write(cortex.Fact(statement="Postgres runs the billing database", subject="billing", predicate="uses"),
                                tags=["infra"]),
            "pasta": c.write(cortex.Fact(statement="The users love pasta and Italian food", subject="users", predicate="like")),
            "italian": c.write(cortex.Preference(topic="food", polarity="prefer", rationale="Italian restaurants near the office")),
            "mysql": c.write(cortex.Belief(statement="billing will move to MySQL", stance="suspect")),
        }


def test_cli_find_near_ranks_by_relevance_with_a_budget_and_json(tmp_path, capsys):
    path = tmp_path / "s"
    uris = _seed(path)
    assert main(["find", str(path), "--near", "italian food?"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == [uris["italian"], uris["pasta"]]
    assert main(["find", str(path), "--near", "italian food", "--budget", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    with open_store(path, mode="r") as r:
        hits = r.find(near="italian food", budget_tokens=1)
    assert [(row["uri"], row["relevance"]) for row in rows] == [(m.uri, hits.relevance[m.id]) for m in hits]
    assert len(rows) == 1
    assert main(["find", str(path), "--near", "the of and"]) == 2
    assert capsys.readouterr().err.startswith("cortex: ValidationError: near: holds no word")


def test_mcp_recall_over_stdio_matches_the_library(tmp_path):
    path = tmp_path / "s"
    uris = _seed(path)
    with open_store(path, mode="r") as r:
        want = r.find(near="billing database", budget_tokens=60)
        want_types = r.find(near="billing", budget_tokens=1000, type=["Belief"])

    async def session(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        schema = tools["recall"].input_schema
        assert schema["required"] == ["query"]
        assert schema["properties"]["types"]["anyOf"][0]["items"]["enum"][:2] == ["Identity", "Fact"]
        assert tools["recall"].annotations.read_only_hint
        got = await client.call_tool("recall", {"query": "billing database", "budget_tokens": 60})
        assert not got.is_error
        results = got.structured_content["results"]
        assert [(x["uri"], x["relevance"]) for x in results] == [(m.uri, want.relevance[m.id]) for m in want]
        assert results[0]["uri"] == uris["postgres"]
        assert got.content[0].text.startswith(f"- {uris['postgres']} (relevance ")
        typed = await client.call_tool("recall", {"query": "billing", "types": ["Belief"]})
        assert [x["uri"] for x in typed.structured_content["results"]] == [m.uri for m in want_types] == [uris["mysql"]]
        bad = await client.call_tool("recall", {"query": "the and of"})
        assert bad.is_error and bad.structured_content["field"] == "near"
        none = await client.call_tool("recall", {"query": "zeppelin"})
        assert none.structured_content == {"results": [], "total_tokens": 0} and none.content[0].text == "(none)\n"

    async def run() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "cortex", "mcp", str(path), "--read-only"],
                                       env={"PYTHONPATH": str(REPO)})
        async with Client(params) as client:
            await session(client)
    asyncio.run(run())
    assert ACTOR
