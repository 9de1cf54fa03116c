"""The MCP server (cortex.integrations.mcp), end to end with the SDK's own client:
in process (`Client(server)`) and over real stdio against
`python -m cortex.integrations.mcp` in a subprocess. Results are checked against the
library's own calls on the same store."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.types import CallToolResult  # noqa: E402

import cortex  # noqa: E402
from cortex.integrations.mcp import FORMS, KINDS, TIERS, VERBS, build_server  # noqa: E402
from cortex.interop.memory_json import TYPE_NAMES, memory_to_json  # noqa: E402

from integration_helpers import ACTOR, GPU, TickClock, open_store, seed  # noqa: E402

ALL_TOOLS = {"context", "resolve", "remember", "update", "supersede", "link", "find", "recall", "attest", "forget"}
READ_TOOLS = {"context", "resolve", "find", "recall"}
REPO = Path(__file__).resolve().parents[2]


def run(session: Callable[[Client], Awaitable[None]], server: Any) -> None:
    """Open an MCP client on `server` (an MCPServer or stdio parameters) and run `session`."""
    async def main() -> None:
        async with Client(server) as client:
            await session(client)
    asyncio.run(main())


def stdio(store: Path, *extra: str) -> StdioServerParameters:
    """The `cortex mcp` command (as `python -m cortex mcp`, the same entry point)."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "cortex", "mcp", str(store), *extra],
        env={"PYTHONPATH": str(REPO)},
    )


def text(result: CallToolResult) -> str:
    assert len(result.content) == 1
    return result.content[0].text  # type: ignore[union-attr]


def without_latency(markdown: str) -> str:
    """A bundle's Markdown without its footer, whose latency differs between calls."""
    lines = markdown.splitlines()
    assert lines[-1].startswith("_form=")
    return "\n".join(lines[:-1])


def ok(result: CallToolResult) -> CallToolResult:
    assert not result.is_error, text(result)
    return result


# ---------------------------------------------------------------------------
# In process


def test_tools_and_their_schemas(tmp_path):
    with open_store(tmp_path / "s") as c:
        async def session(client: Client) -> None:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == ALL_TOOLS
            ctx = tools["context"].input_schema["properties"]
            assert ctx["verb"]["anyOf"][0]["enum"] == list(VERBS) == [v.name.lower() for v in cortex.Verb]
            assert list(ctx["objects"]["properties"]) == list(KINDS) == [k.name.lower() for k in cortex.ObjKind]
            assert ctx["objects"]["additionalProperties"] is False
            assert ctx["form"]["enum"] == list(FORMS) == ["short", "medium", "full"]
            assert ctx["include_tiers"]["anyOf"][0]["items"]["enum"] == list(TIERS) == ["pinned", "outcomes", "frame_relevant"]
            assert ctx["budget_tokens"]["type"] == "integer"
            assert tools["context"].input_schema.get("required", []) == []
            remember = tools["remember"].input_schema
            assert remember["required"] == ["type", "data"]
            assert remember["properties"]["type"]["enum"] == list(TYPE_NAMES) == [t.type_name for t in cortex.MemoryType]
            frame = remember["properties"]["frames"]["items"]
            assert frame["properties"]["verb"]["enum"] == list(VERBS)
            assert frame["properties"]["kind"]["enum"] == list(KINDS)
            assert frame["required"] == ["verb", "kind", "ref"]
            assert "Fact: statement, subject, predicate" in remember["properties"]["data"]["description"]
            find = tools["find"].input_schema["properties"]
            assert find["type"]["anyOf"][0]["enum"] == list(TYPE_NAMES)
            assert find["form"]["enum"] == list(FORMS)
            assert tools["attest"].input_schema["properties"]["outcome"]["enum"] == ["success", "failure"]
            assert tools["attest"].input_schema["required"] == ["cited", "outcome"]
            assert tools["forget"].input_schema["required"] == ["uri", "reason"]
            assert tools["resolve"].input_schema["required"] == ["uri"]
            assert all(tools[name].annotations.read_only_hint for name in READ_TOOLS)
            assert tools["forget"].annotations.destructive_hint is True
            resources = (await client.list_resources()).resources
            assert [str(r.uri) for r in resources] == ["cortex://pinned"]
        run(session, build_server(c, read_only=False))


def test_every_tool_matches_the_library(tmp_path):
    with open_store(tmp_path / "s", clock=TickClock()) as c:
        uris = seed(c)

        async def session(client: Client) -> None:
            # context: the bundle's Markdown and the URIs per tier, as the library composes them.
            args = {"verb": "acquire", "objects": {"service": "gpu_inference"}, "budget_tokens": 60, "form": "short"}
            result = ok(await client.call_tool("context", args))
            bundle = c.context(**args)
            assert without_latency(text(result)) == without_latency(bundle.to_markdown())
            assert result.structured_content == {
                "pinned": [m.uri for m in bundle.pinned],
                "outcomes": [m.uri for m in bundle.outcomes],
                "frame_relevant": [m.uri for m in bundle.frame_relevant],
                "reachable_uris": list(bundle.reachable_uris),
                "total_tokens": bundle.total_tokens,
                "trimmed": bundle.trimmed,
            }
            assert result.structured_content["pinned"] == [uris["identity"], uris["constraint"]]
            assert result.structured_content["outcomes"] == [uris["event"]]
            only_pinned = ok(await client.call_tool("context", {}))
            assert only_pinned.structured_content["frame_relevant"] == []
            tiers = ok(await client.call_tool("context", {**args, "include_tiers": ["outcomes"]}))
            assert tiers.structured_content["pinned"] == [] and tiers.structured_content["outcomes"] == [uris["event"]]

            # resolve: the full form as text, the memory as structured content.
            result = ok(await client.call_tool("resolve", {"uri": uris["fact"]}))
            memory = c.resolve(uris["fact"])
            assert text(result) == memory.form("full")
            assert result.structured_content == {
                **memory_to_json(memory), "uri": memory.uri, "id": memory.id, "version": 1,
                "created_at": memory.created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "updated_at": memory.updated_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "tombstoned": False,
            }
            assert result.structured_content["frames"] == [{"verb": "acquire", "kind": "service", "ref": "gpu_inference"}]

            # remember: written as the library's own write would, found by context.
            result = ok(await client.call_tool("remember", {
                "type": "Fact",
                "data": {"statement": "H100 spot is 2.10 USD/h", "subject": "acme-cloud", "predicate": "price",
                         "as_of": "2025-01-02T00:00:00Z"},
                "frames": [{"verb": "acquire", "kind": "service", "ref": "gpu_inference"}],
                "tags": ["pricing"], "importance": 4,
            }))
            new = text(result)
            assert result.structured_content == {"uri": new}
            stored = c.resolve(new)
            assert stored.data == cortex.Fact(statement="H100 spot is 2.10 USD/h", subject="acme-cloud", predicate="price",
                                              as_of=c.resolve(new).data.as_of)
            assert stored.data.as_of.isoformat() == "2025-01-02T00:00:00+00:00"
            assert stored.frames == (GPU,) and stored.tags == ("pricing",) and stored.importance == 4
            assert new in [m.uri for m in c.context(verb="acquire", objects={"service": "gpu_inference"}).frame_relevant]

            # find: the library's query, one line per memory.
            result = ok(await client.call_tool("find", {"tags": ["pricing"], "limit": 5, "form": "short", "where": ["eq", "subject", "acme-cloud"]}))
            found = c.find(tags=["pricing"], limit=5, form="short", where=("eq", "subject", "acme-cloud"))
            assert [r["uri"] for r in result.structured_content["results"]] == [m.uri for m in found]
            assert len(found) == 2
            assert text(result) == "".join(f"- {m.uri} — {m.forms['short']}\n" for m in found)
            result = ok(await client.call_tool("find", {"type": "Goal", "limit": 3}))
            assert result.structured_content == {"results": []} and text(result) == "(none)\n"
            result = ok(await client.call_tool("find", {"type": "Preference", "where": {"topic": "tone"}, "budget_tokens": 100}))
            assert [r["uri"] for r in result.structured_content["results"]] == [uris["preference"]]

            # attest: the store's salience moves as after the library's attest.
            before = c.salience(uris["fact"])
            ok(await client.call_tool("attest", {"cited": [uris["fact"], new], "outcome": "success"}))
            after = c.salience(uris["fact"])
            assert after.citations == before.citations + 1 and after.access_count == before.access_count + 1
            ok(await client.call_tool("attest", {"cited": [new], "outcome": "failure", "reason": "factual_error"}))
            assert c.salience(new).citations == 0

            # forget: a tombstone; the memory still resolves.
            result = ok(await client.call_tool("forget", {"uri": new, "reason": "price changed"}))
            assert result.structured_content == {"uri": new, "tombstoned": True}
            assert c.resolve(new).tombstoned
            assert new not in [m.uri for m in c.context(verb="acquire", objects={"service": "gpu_inference"}).frame_relevant]
            assert ok(await client.call_tool("resolve", {"uri": new})).structured_content["tombstoned"] is True

            # the pinned resource: the pinned tier's Markdown.
            contents = (await client.read_resource("cortex://pinned")).contents
            assert len(contents) == 1 and contents[0].mime_type == "text/markdown"
            pinned = c.context(include_tiers=["pinned"], budget_tokens=4000)
            assert without_latency(contents[0].text) == without_latency(pinned.to_markdown())
            assert uris["identity"] in contents[0].text and uris["constraint"] in contents[0].text
        run(session, build_server(c, read_only=False))


BAD_CALLS = [
    ("context", {"verb": "fly"}, "InvalidVerb", "verb"),
    ("context", {"verb": "acquire", "objects": {"planet": "mars"}}, "InvalidObjKind", "objects"),
    ("context", {"verb": "acquire", "objects": {"service": ""}}, "EmptyObjRef", "objects['service']"),
    ("context", {"budget_tokens": -5}, "ValidationError", "budget_tokens"),
    ("context", {"include_tiers": []}, "NoTiersIncluded", "include_tiers"),
    ("context", {"form": "huge"}, "ValidationError", "form"),
    ("resolve", {"uri": "cortex://nope"}, "BadURI", "uri"),
    ("resolve", {"uri": "cortex://Fact/01JAAAAAAAAAAAAAAAAAAAAAAA#1"}, "NotFound", None),
    ("remember", {"type": "Fact", "data": {"subject": "s", "predicate": "p"}}, "ValidationError", "data.statement"),
    ("remember", {"type": "Fakt", "data": {}}, "ValidationError", "type"),
    ("remember", {"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"},
                  "frames": [{"verb": "acquire", "kind": "planet", "ref": "x"}]}, "InvalidObjKind", "frames[0].kind"),
    ("remember", {"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}, "importance": 99},
     "ValidationError", "importance"),
    ("find", {"type": "Fact"}, "Unbounded", "find"),
    ("find", {"limit": 3}, "TooBroad", "find"),
    ("find", {"type": "Fact", "limit": 3, "where": ["eq", "colour", "red"]}, "ValidationError", "where"),
    ("attest", {"cited": [], "outcome": "success"}, "ValidationError", "cited"),
    ("attest", {"cited": ["cortex://Fact/01JAAAAAAAAAAAAAAAAAAAAAAA#1"], "outcome": "meh"}, "ValidationError", "outcome"),
    ("forget", {"uri": "cortex://Fact/01JAAAAAAAAAAAAAAAAAAAAAAA#1", "reason": "x"}, "NotFound", None),
    ("forget", {"uri": "x", "reason": "x"}, "BadURI", "uri"),
]


def test_bad_arguments_are_tool_errors_and_the_server_lives_on(tmp_path):
    with open_store(tmp_path / "s", clock=TickClock()) as c:
        uris = seed(c)
        root = c.root()

        async def session(client: Client) -> None:
            for tool, args, error, field in BAD_CALLS:
                result = await client.call_tool(tool, args)
                assert result.is_error, (tool, args)
                assert result.structured_content["error"] == error, (tool, args, text(result))
                assert result.structured_content["field"] == field
                assert text(result).startswith(f"{error}: ")
                if field is not None:
                    assert text(result).startswith(f"{error}: {field}: ")
            # Arguments of the wrong JSON type are refused by the schema check, naming the argument.
            for tool, args, name in [("context", {"budget_tokens": "lots"}, "budget_tokens"),
                                     ("remember", {"type": "Fact"}, "data"),
                                     ("attest", {"cited": "x", "outcome": "success"}, "cited")]:
                result = await client.call_tool(tool, args)
                assert result.is_error and name in text(result)
            # Nothing was written, and the next call works.
            assert c.root() == root
            result = ok(await client.call_tool("resolve", {"uri": uris["fact"]}))
            assert result.structured_content["uri"] == uris["fact"]
        run(session, build_server(c, read_only=False))


def test_read_only_server_offers_the_read_tools_only(tmp_path):
    with open_store(tmp_path / "s") as writer:
        uris = seed(writer)
        with open_store(tmp_path / "s", mode="r") as reader:
            async def session(client: Client) -> None:
                assert {t.name for t in (await client.list_tools()).tools} == READ_TOOLS
                result = await client.call_tool("remember", {"type": "Fact", "data": {}})
                assert result.is_error and "remember" in text(result)
                assert ok(await client.call_tool("resolve", {"uri": uris["fact"]})).structured_content["uri"] == uris["fact"]
            run(session, build_server(reader, read_only=True))


# ---------------------------------------------------------------------------
# Over stdio, in a subprocess


def test_stdio_end_to_end(tmp_path):
    path = tmp_path / "s"
    with open_store(path) as c:
        uris = seed(c)

    async def session(client: Client) -> None:
        assert {t.name for t in (await client.list_tools()).tools} == ALL_TOOLS
        result = ok(await client.call_tool("context", {"verb": "acquire", "objects": {"service": "gpu_inference"}}))
        assert result.structured_content["outcomes"] == [uris["event"]]
        assert set(result.structured_content["frame_relevant"]) == {uris["fact"], uris["preference"]}
        new = text(ok(await client.call_tool("remember", {
            "type": "Goal", "data": {"statement": "renew the GPU lease", "status": "active"}, "tags": ["ops"]})))
        assert ok(await client.call_tool("resolve", {"uri": new})).structured_content["data"]["statement"] == "renew the GPU lease"
        found = ok(await client.call_tool("find", {"tags": ["ops"], "limit": 2}))
        assert [r["uri"] for r in found.structured_content["results"]] == [new]
        ok(await client.call_tool("attest", {"cited": [uris["fact"]], "outcome": "success"}))
        bad = await client.call_tool("context", {"verb": "fly"})
        assert bad.is_error and bad.structured_content["field"] == "verb"
        ok(await client.call_tool("forget", {"uri": uris["preference"], "reason": "stale"}))
        pinned = (await client.read_resource("cortex://pinned")).contents[0].text
        assert new in pinned and uris["identity"] in pinned

    run(session, stdio(path, "--actor", ACTOR))
    # What the server acknowledged is in the store after it exits.
    with open_store(path) as c:
        assert c.salience(uris["fact"]).citations == 1
        assert c.resolve(uris["preference"]).tombstoned
        goals = c.find(type="Goal", tags=["ops"], limit=5)
        assert [m.data.statement for m in goals] == ["renew the GPU lease"]


def test_stdio_read_only_server_beside_a_writer_process_sees_acknowledged_writes(tmp_path):
    path = tmp_path / "s"
    with open_store(path) as writer:  # this test process is the writer
        uris = seed(writer)

        async def session(client: Client) -> None:
            assert {t.name for t in (await client.list_tools()).tools} == READ_TOOLS
            result = ok(await client.call_tool("resolve", {"uri": uris["fact"]}))
            assert result.structured_content["tombstoned"] is False
            for round in range(3):
                # A write the writer has acknowledged (write returned) is visible to the next call.
                uri = writer.write(cortex.Fact(statement=f"quote #{round}", subject="acme-cloud", predicate="quote"),
                                   frames=[GPU], tags=["quotes"])
                assert ok(await client.call_tool("resolve", {"uri": uri})).structured_content["data"]["statement"] == f"quote #{round}"
                found = ok(await client.call_tool("find", {"tags": ["quotes"], "limit": 10, "form": "short"}))
                assert len(found.structured_content["results"]) == round + 1
                ctx = ok(await client.call_tool("context", {"verb": "acquire", "objects": {"service": "gpu_inference"}}))
                assert uri in ctx.structured_content["frame_relevant"]
            writer.tombstone(uris["fact"], "superseded")
            assert ok(await client.call_tool("resolve", {"uri": uris["fact"]})).structured_content["tombstoned"] is True
            refused = await client.call_tool("forget", {"uri": uris["event"], "reason": "x"})
            assert refused.is_error

        run(session, stdio(path, "--read-only"))
        assert not writer.resolve(uris["event"]).tombstoned


def test_command_line_keeps_stdout_for_the_protocol(tmp_path):
    path = tmp_path / "s"
    with open_store(path) as c:
        seed(c)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "cortex.integrations.mcp", str(path)]
    # A client that says one thing and hangs up: the answer is JSON-RPC, and stdout holds nothing else.
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    done = subprocess.run([*command, "--actor", ACTOR], input=json.dumps(hello) + "\n", capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    answer = json.loads(lines[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "cortex"
    # A store that cannot be opened: exit 2, one line on stderr, nothing on stdout.
    done = subprocess.run([*command, "--actor", "someone-else"], input="", capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("cortex: ActorMismatch: ") and done.stderr.count("\n") == 1
    # Without --actor the store's own actor is used (the read-only stdio test runs so); a store
    # that does not exist has none to tell.
    done = subprocess.run([sys.executable, "-m", "cortex.integrations.mcp", str(tmp_path / "none"), "--read-only"],
                          input="", capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("cortex: NotFound: ") and done.stdout == ""
