"""The MCP tools a newcomer missed: `update`, `supersede` and `link`; `remember` with a
natural key (an upsert) and `supersedes`; answers worded for one memory; the server's
version; arguments that fail the input schema reported in one line per field. Each
through the SDK's real client, in process."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

import cortex  # noqa: E402
from cortex.integrations.mcp import build_server  # noqa: E402

from integration_helpers import TickClock, open_store, seed  # noqa: E402
from test_mcp import ok, run, text  # noqa: E402

PG13 = {"statement": "acme runs Postgres 13", "subject": "acme", "predicate": "database"}
PG16 = {"statement": "acme runs Postgres 16", "subject": "acme", "predicate": "database"}
GPU = [{"verb": "acquire", "kind": "service", "ref": "gpu_inference"}]
CONTEXT = {"verb": "acquire", "objects": {"service": "gpu_inference"}}


def test_supersede_leaves_only_the_new_fact_in_context(tmp_path):
    with open_store(tmp_path / "s", clock=TickClock()) as c:
        seed(c)

        async def session(client: Client) -> None:
            old = text(ok(await client.call_tool("remember", {"type": "Fact", "data": PG13, "frames": GPU, "tags": ["db"]})))
            result = ok(await client.call_tool("supersede", {"old": old, "data": PG16}))
            new = result.structured_content["uri"]
            assert result.structured_content["supersedes"] == old
            bundle = ok(await client.call_tool("context", CONTEXT)).structured_content
            assert new in bundle["frame_relevant"] and old not in bundle["frame_relevant"]
            kept = ok(await client.call_tool("resolve", {"uri": new})).structured_content
            assert (kept["frames"], kept["tags"]) == (GPU, ["db"])  # the old one's, unless given
            assert ok(await client.call_tool("resolve", {"uri": old})).structured_content["tombstoned"] is False
        run(session, build_server(c, read_only=False))
        new = c.find(type="Fact", tags=["db"], limit=1)[0]
        assert [e.type for e in c.edges(new.uri)] == [cortex.EdgeType.SUPERSEDES]


def test_update_and_a_keyed_remember_make_new_versions_of_one_memory(tmp_path):
    with open_store(tmp_path / "s", clock=TickClock()) as c:
        async def session(client: Client) -> None:
            first = text(ok(await client.call_tool("remember", {"type": "Fact", "data": PG13, "key": "acme/db"})))
            again = text(ok(await client.call_tool("remember", {"type": "Fact", "data": PG13, "key": "acme/db"})))
            assert again == first  # equal data: nothing written
            v2 = text(ok(await client.call_tool("remember", {"type": "Fact", "data": PG16, "key": "acme/db"})))
            assert v2 == first.replace("#1", "#2")
            v3 = text(ok(await client.call_tool("update", {"uri": "key:Fact/acme/db", "data": PG13})))
            assert v3 == first.replace("#1", "#3")
            resolved = ok(await client.call_tool("resolve", {"uri": "key:Fact/acme/db"})).structured_content
            assert (resolved["uri"], resolved["data"]["statement"]) == (v3, "acme runs Postgres 13")
        run(session, build_server(c, read_only=False))
        assert c.stats()["memories"] == 1


def test_link_and_attest_wording(tmp_path):
    with open_store(tmp_path / "s", clock=TickClock()) as c:
        uris = seed(c)

        async def session(client: Client) -> None:
            linked = ok(await client.call_tool("link", {"src": uris["fact"], "type": "corroborates", "dst": uris["event"]}))
            assert linked.structured_content == {"src": uris["fact"].split("/")[-1].split("#")[0], "type": "corroborates",
                                                 "dst": uris["event"].split("/")[-1].split("#")[0], "weight": 1.0}
            one = ok(await client.call_tool("attest", {"cited": [uris["fact"]], "outcome": "success"}))
            assert text(one) == "attested 1 memory: success"
            two = ok(await client.call_tool("attest", {"cited": [uris["fact"], uris["event"]], "outcome": "success"}))
            assert text(two) == "attested 2 memories: success"
            bad = await client.call_tool("link", {"src": uris["fact"], "type": "likes", "dst": uris["event"]})
            assert bad.is_error and bad.structured_content["error"] == "InvalidEdgeType", text(bad)
        run(session, build_server(c, read_only=False))
        assert [e.type for e in c.edges(uris["fact"])] == [cortex.EdgeType.CORROBORATES]


def test_the_server_reports_cortex_s_version(tmp_path):
    with open_store(tmp_path / "s") as c:
        async def session(client: Client) -> None:
            info = client.initialize_result.server_info if hasattr(client, "initialize_result") else client.server_info
            assert (info.name, info.version) == ("cortex", cortex.__version__)
        run(session, build_server(c, read_only=False))


def test_schema_errors_are_one_line_naming_the_fields(tmp_path):
    with open_store(tmp_path / "s") as c:
        root = c.root()

        async def session(client: Client) -> None:
            result = await client.call_tool("remember", {"type": "Fact", "data": PG13, "importance": "high"})
            assert result.is_error
            assert text(result) == "ValidationError: remember: importance: Input should be a valid integer, unable to parse string as an integer"
            assert "\n" not in text(result) and "http" not in text(result)
            assert result.structured_content["field"] == "importance"
            both = await client.call_tool("context", {"budget_tokens": "lots", "form": 3})
            assert both.structured_content["field"] == "budget_tokens, form"
        run(session, build_server(c, read_only=False))
        assert c.root() == root
