"""One rule for naming a memory: every call that names an existing memory (the Python
API, the command line, the MCP tools) accepts its 26-character id, the URI of any of
its versions, or its URI without `#version` (the latest version), read by one function
(`cortex.ids.parse_ref`). And `cortex export STORE -` writes to standard output."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

import cortex
from cortex import Fact, Frame, Preference
from cortex.ids import Ref, parse_ref
from conftest import FakeClock, open_store

GPU = Frame("acquire", "service", "gpu")
REPO = Path(__file__).resolve().parents[1]


def fact(text: str) -> Fact:
    return Fact(statement=text, subject="acme", predicate="price")


def spellings(uri: str) -> dict[str, str]:
    """The three ways to name the memory whose version-1 URI is `uri`."""
    latest = uri.split("#")[0]
    return {"id": latest.rsplit("/", 1)[1], "uri": uri, "latest": latest}


def test_parse_ref_reads_the_three_spellings_and_refuses_the_rest():
    uri = "cortex://Fact/01JABCDEFGHJKMNPQRSTVWXYZ0#3"
    raw = parse_ref(uri).id
    assert parse_ref(uri) == Ref(raw, cortex.MemoryType.FACT, 3)
    assert parse_ref(uri.split("#")[0]) == Ref(raw, cortex.MemoryType.FACT, None)
    assert parse_ref("01JABCDEFGHJKMNPQRSTVWXYZ0") == Ref(raw, None, None)
    assert str(parse_ref(uri)) == uri and str(parse_ref(uri.split("#")[0])) == uri.split("#")[0]
    for bad in ("cortex://Fact/01JABCDEFGHJKMNPQRSTVWXYZ0#0", "cortex://Fact/01JABCDEFGHJKMNPQRSTVWXYZ0#", "cortex://Nope/01JABCDEFGHJKMNPQRSTVWXYZ0",
                "cortex://Fact/01JABCDEFGHJKMNPQRSTVWXYZ0#latest", "01JABCDEFGHJKMNPQRSTVWXYZ", "", 7, None):
        with pytest.raises(cortex.BadURI) as err:
            parse_ref(bad, "src")
        assert err.value.field == "src"


def test_every_python_call_that_names_a_memory_takes_each_spelling(tmp_path):
    with open_store(tmp_path / "s", clock=FakeClock(tick=1)) as c:
        for kind, name in spellings(c.write(fact("v1"), frames=[GPU])).items():
            other = c.write(fact(f"other {kind}"))
            first = c.write(fact(f"{kind} v1"), frames=[GPU])
            names = spellings(first)
            assert c.resolve(names[kind]).uri == first
            second = c.update(names[kind], fact(f"{kind} v2"))
            assert second == first.replace("#1", "#2")
            expected_version = 1 if kind == "uri" else 2  # a version's URI names that version
            assert c.resolve(names[kind]).version == expected_version
            assert c.resolve_latest(names[kind]).version == 2
            c.update_head(names[kind], tags=[kind])
            assert c.resolve(second).tags == (kind,)
            c.attest([names[kind]], "success")
            assert c.salience(names[kind]).citations == 1
            c.link(names[kind], "references", spellings(other)[kind])
            assert [e.dst for e in c.edges(names[kind])] == [spellings(other)["id"]]
            c.unlink(names[kind], "references", spellings(other)[kind], reason="test")
            assert c.edges(names[kind]) == []
            c.tombstone(names[kind], "done")
            assert c.resolve(second).tombstoned
        one = c.write(fact("typed"))
        with pytest.raises(cortex.NotFound):
            c.resolve(spellings(one)["latest"].replace("/Fact/", "/Goal/"))  # the type a URI names must be the memory's


def test_the_command_line_takes_each_spelling_and_exports_to_stdout(tmp_path):
    with cortex.open(tmp_path / "s", actor="agent-cli") as c:
        uris = [c.write(fact(f"fact {i}"), frames=[GPU]) for i in range(3)]
        c.update(uris[0], fact("fact 0 again"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cortex", *args], capture_output=True, text=True, timeout=180)

    names = spellings(uris[0])
    for kind in ("id", "latest"):
        done = run("resolve", str(tmp_path / "s"), names[kind], "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["version"] == 2
    assert json.loads(run("resolve", str(tmp_path / "s"), names["uri"], "--json").stdout)["version"] == 1
    assert run("attest", str(tmp_path / "s"), spellings(uris[1])["id"], "--outcome", "success").returncode == 0
    assert run("tombstone", str(tmp_path / "s"), spellings(uris[2])["latest"], "--reason", "gone").returncode == 0
    with cortex.open(tmp_path / "s", actor="agent-cli", mode="r") as c:
        assert c.salience(uris[1]).citations == 1 and c.resolve(uris[2]).tombstoned
        root = c.root()
    piped = subprocess.run([sys.executable, "-m", "cortex", "export", str(tmp_path / "s"), "-"], capture_output=True, timeout=180)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr.decode().startswith("exported 3 memories")
    run("export", str(tmp_path / "s"), str(tmp_path / "file.jsonl"))
    assert piped.stdout == (tmp_path / "file.jsonl").read_bytes()  # the same bytes as an export to a file
    assert json.loads(piped.stdout.splitlines()[0])["root"] == root
    assert not list(tmp_path.glob("*.partial"))


def test_the_mcp_tools_take_each_spelling(tmp_path):
    pytest.importorskip("mcp")
    from mcp import Client

    from cortex.integrations.mcp import build_server

    with open_store(tmp_path / "s", clock=FakeClock(tick=1)) as c:
        first = c.write(Preference(topic="tone", polarity="prefer"), frames=[GPU])
        second = c.update(first, Preference(topic="tone", polarity="avoid"))
        names = spellings(first)

        async def session(client: Client) -> None:
            for kind, version in (("id", 2), ("latest", 2), ("uri", 1)):
                result = await client.call_tool("resolve", {"uri": names[kind]})
                assert not result.is_error, result.content
                assert result.structured_content["version"] == version
            assert not (await client.call_tool("attest", {"cited": [names["id"], names["latest"]], "outcome": "success"})).is_error
            assert c.salience(second).citations == 1  # two spellings of one memory: cited once
            assert not (await client.call_tool("forget", {"uri": names["id"], "reason": "gone"})).is_error

        async def main() -> None:
            async with Client(build_server(c, read_only=False)) as client:
                await session(client)

        asyncio.run(main())
        assert c.resolve(second).tombstoned
