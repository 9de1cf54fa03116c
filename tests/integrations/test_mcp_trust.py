"""The MCP server against a hostile client (docs/trust.md): `erase` only when the
server was started with --allow-erase, and malformed JSON-RPC over real stdio gets a
JSON-RPC error instead of a hang."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

import cortex  # noqa: E402
from cortex import Fact  # noqa: E402
from cortex.integrations.mcp import build_server  # noqa: E402

from integration_helpers import ACTOR, open_store  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _tools(server) -> dict:
    async def main() -> dict:
        async with Client(server) as client:
            return {t.name: t for t in (await client.list_tools()).tools}
    return asyncio.run(main())


def test_erase_is_offered_only_when_allowed(tmp_path):
    with open_store(tmp_path / "s") as c:
        uri = c.write(Fact(statement="card k7Qz9XwP2mVb8RtY3nLc6HdJ4sFg1AeU", subject="u", predicate="p"))
        assert "erase" not in _tools(build_server(c, read_only=False))
        server = build_server(c, read_only=False, allow_erase=True)
        tools = _tools(server)
        assert tools["erase"].annotations.destructive_hint is True
        assert tools["erase"].input_schema["required"] == ["uri", "reason"]
        with pytest.raises(cortex.ValidationError, match="allow_erase"):
            build_server(c, read_only=True, allow_erase=True)

        async def main() -> None:
            async with Client(server) as client:
                refused = await client.call_tool("erase", {"uri": uri, "reason": ""})
                assert refused.is_error and "reason" in refused.content[0].text  # type: ignore[union-attr]
                done = await client.call_tool("erase", {"uri": uri, "reason": "the user asked"})
                assert not done.is_error and done.structured_content == {"uri": uri, "erased": True}
        asyncio.run(main())
        with pytest.raises(cortex.NotFound):
            c.resolve(uri)
        assert c.verify() == []


def _exchange(store: Path, lines: list[bytes], last_id: int, *extra: str) -> list[dict]:
    """Send raw lines to `cortex mcp` over stdio after the initialize handshake, read
    what it answers until the reply to `last_id` (a server that never answers is
    killed after two minutes, and the test fails), then close its stdin."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    sent = [json.dumps(init).encode(), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(), *lines]
    proc = subprocess.Popen([sys.executable, "-m", "cortex", "mcp", str(store), "--actor", ACTOR, *extra],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={"PYTHONPATH": str(REPO)})
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    answers: list[dict] = []
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"\n".join(sent) + b"\n")
        proc.stdin.flush()
        while not any(a.get("id") == last_id for a in answers):
            line = proc.stdout.readline()
            if not line:
                break
            answers.append(json.loads(line))
        proc.stdin.close()
        proc.wait()
    finally:
        watchdog.cancel()
    return answers


def test_malformed_json_rpc_gets_an_error_over_stdio(tmp_path):
    deep = b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    answers = _exchange(tmp_path / "s", [b"this is not json", deep, b'{"jsonrpc":"2.0","id":9,"method":"tools/list"}'], 9)
    errors = [a for a in answers if "error" in a]
    assert [e["error"]["code"] for e in errors] == [-32700, -32700]
    assert all(e["id"] is None for e in errors)
    listed = [a for a in answers if a.get("id") == 9]
    assert listed and "erase" not in {t["name"] for t in listed[0]["result"]["tools"]}


def test_allow_erase_over_stdio(tmp_path):
    answers = _exchange(tmp_path / "s", [b'{"jsonrpc":"2.0","id":3,"method":"tools/list"}'], 3, "--allow-erase")
    listed = [a for a in answers if a.get("id") == 3]
    assert "erase" in {t["name"] for t in listed[0]["result"]["tools"]}
