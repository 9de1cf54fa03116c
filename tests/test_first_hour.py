"""A newcomer's first hour, scripted: the command line driven from `init` through
writes with natural keys, context, list and frames, an update, a link, a
superseding write, a scope granted and served to a sub-agent over MCP, export and
import, with every exit code and the lines a user reads checked. The commands run
in-process through `cortex.cli.main` (the function both entry points call); the MCP
server runs as `python -m cortex mcp` in a subprocess, spoken to by the SDK's client.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import pytest

import cortex
from cortex.cli import main

pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
URI = r"cortex://(\w+)/([0-9A-Z]{26})#(\d+)"


class Shell:
    """Runs `cortex ARGS...` in-process; keeps the exit code, stdout and stderr."""

    def __init__(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
        self.capsys = capsys
        self.monkeypatch = monkeypatch

    def __call__(self, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
        if stdin is not None:
            import io

            self.monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        status = main(list(args))
        out, err = self.capsys.readouterr()
        return status, out, err

    def ok(self, *args: str, stdin: str | None = None) -> str:
        status, out, err = self(*args, stdin=stdin)
        assert (status, err) == (0, ""), (args, out, err)
        return out


def memory_json(type_name: str, data: dict[str, object], **extra: object) -> str:
    return json.dumps({"type": type_name, "data": data, **extra})


GPU = {"verb": "acquire", "kind": "service", "ref": "gpu_inference"}


def test_the_first_hour(tmp_path, capsys, monkeypatch):
    sh = Shell(capsys, monkeypatch)
    store = str(tmp_path / "store")

    # init; a second init of the same store says so
    assert sh.ok("init", store, "--actor", "agent-ops-1") == f"created store at {store} (actor agent-ops-1)\n"
    assert sh.ok("init", store, "--actor", "agent-ops-1") == f"store exists at {store} (actor agent-ops-1)\n"

    # write with natural keys, twice: one Identity, one Constraint, one Fact
    lines = "\n".join([
        memory_json("Identity", {"name": "agent-ops-1"}, key="self"),
        memory_json("Constraint", {"statement": "never pay more than 2 USD/h", "strength": "hard", "polarity": "dont",
                                   "source": "user_declared"}, key="max-price"),
        memory_json("Fact", {"statement": "A100 spot is 1.40 USD/h", "subject": "acme", "predicate": "price"},
                    frames=[GPU], key="acme/a100-spot", importance=5),
    ]) + "\n"
    first = sh.ok("write", store, stdin=lines).splitlines()
    assert [re.fullmatch(URI, u).group(1) for u in first] == ["Identity", "Constraint", "Fact"]
    assert sh.ok("write", store, stdin=lines).splitlines() == first  # nothing new, nothing changed
    fact = first[2]

    # a bad line writes nothing and names the line and the field
    status, out, err = sh("write", store, stdin=lines + '{"type": "Fact", "data": {"statment": "x"}}\n')
    assert (status, out) == (2, "")
    assert err.startswith("cortex: ValidationError: line 4: data.statment: unknown field")

    # an outcome, under the same frame
    event = sh.ok("write", store, stdin=memory_json(
        "Event", {"kind": "intent_failed", "outcome": "failure", "summary": "helm upgrade timed out",
                  "cost": ["USD", 0.5]}, frames=[GPU])).strip()

    # context: the pinned tier, the fact, the outcome with its summary
    out = sh.ok("context", store, "--verb", "acquire", "--object", "service=gpu_inference")
    short = sh.ok("context", store, "--verb", "acquire", "--object", "service=gpu_inference", "--form", "short")
    assert "## Pinned" in out and "[hard] never pay more than 2 USD/h" in out and "dont never" not in out
    assert f"- {fact} — price(acme)=A100 spot is 1.40 USD/h" in out
    assert f"- {event} — failure intent_failed cost=0.5 USD: helm upgrade timed out" in out
    assert f"- {event} — failure intent_failed cost=0.5 USD: helm upgrade timed out" in short

    # list (newest first) and frames (with counts)
    listed = sh.ok("list", store).splitlines()
    assert listed[0].startswith(f"- {event} — ") and len(listed) == 4
    assert sh.ok("frames", store) == "      2  acquire service=gpu_inference\n"
    assert sh.ok("stats", store, "--json").count('"Identity": 1') == 1

    # update by key: a new version of the same memory
    v2 = sh.ok("update", store, "key:Fact/acme/a100-spot",
               stdin='{"statement": "A100 spot is 1.55 USD/h", "subject": "acme", "predicate": "price"}').strip()
    assert v2 == fact.replace("#1", "#2")
    assert sh.ok("resolve", store, "key:Fact/acme/a100-spot") == f"{v2} (Fact, version 2)\nprice(acme)=A100 spot is 1.55 USD/h\n"

    # supersede: a new memory that replaces a belief, and a link between two memories
    belief = sh.ok("write", store, stdin=memory_json(
        "Belief", {"statement": "acme runs Postgres 13", "stance": "believe"}, frames=[GPU])).strip()
    newer = sh.ok("write", store, stdin=memory_json(
        "Belief", {"statement": "acme runs Postgres 16", "stance": "believe"}, frames=[GPU], supersedes=[belief])).strip()
    out = sh.ok("context", store, "--verb", "acquire", "--object", "service=gpu_inference")
    assert "Postgres 16" in out and "Postgres 13" not in out
    assert sh.ok("link", store, newer, "references", "key:Fact/acme/a100-spot").startswith("linked ")
    edges = sh.ok("edges", store, newer, "--direction", "out").splitlines()
    assert [e.split()[1] for e in edges] == ["supersedes", "references"]

    # a scope for a sub-agent: a key, a grant, the token served over MCP
    key_file = tmp_path / "parent.key"
    out = sh.ok("trust", store, "ops-parent", "--new-key", str(key_file))
    assert out.startswith(f"wrote the private key to {key_file} (keep it secret)\ntrusted ops-parent: public key ")
    assert key_file.stat().st_mode & 0o777 == 0o600
    token = tmp_path / "sub-7.scope"
    out = sh.ok("grant", store, "--key", str(key_file), "--to", "sub-7", "--type", "Fact", "--expires", "1h", "--out", str(token))
    scope_id = re.match(r"granted scope ([0-9a-f]{64}) to sub-7 until ", out).group(1)

    async def sub_agent(client: Client) -> None:
        assert {t.name for t in (await client.list_tools()).tools} == {"context", "resolve", "find"}
        result = await client.call_tool("context", {"verb": "acquire", "objects": {"service": "gpu_inference"}})
        assert not result.is_error
        assert result.structured_content["frame_relevant"] == [v2]  # Facts only: no Belief, no Event
        assert result.structured_content["pinned"] == []
        hidden = await client.call_tool("resolve", {"uri": newer})
        assert hidden.is_error and hidden.structured_content["error"] == "NotFound"

    server = StdioServerParameters(command=sys.executable, args=["-m", "cortex", "mcp", store, "--scope", str(token)],
                                   env={"PYTHONPATH": str(REPO)})

    async def run() -> None:
        async with Client(server) as client:
            await sub_agent(client)

    asyncio.run(run())
    assert sh.ok("revoke", store, str(token)) == f"revoked scope {scope_id}\n"

    # export, and import into a new store; a wrong --actor leaves nothing behind
    export = tmp_path / "agent.jsonl"
    out = sh.ok("export", store, str(export))
    assert re.fullmatch(r"exported 6 memories and \d+ journal entries to .*agent\.jsonl \(root [0-9a-f]{64}\)\n", out)
    root = out.rsplit("root ", 1)[1].rstrip(")\n")
    copy = tmp_path / "copy"
    status, out, err = sh("import", str(copy), str(export), "--actor", "someone-else")
    assert (status, out) == (2, "")
    assert err.startswith("cortex: ImportRefused: --actor: is 'someone-else' but ")
    assert not copy.exists()
    out = sh.ok("import", str(copy), str(export), "--trust-records")  # the key trusted above comes along
    assert out.startswith("imported 6 memories and ") and out.endswith(f"(root {root})\n")
    assert sh.ok("verify", str(copy)) == "0 problem(s)\n"
    # the copy keeps the keys: the same write is still an upsert there
    assert sh.ok("write", str(copy), stdin=memory_json("Identity", {"name": "agent-ops-1"}, key="self")).strip() == first[0]
    with cortex.open(copy) as c:
        assert c.root() == root and c.stats()["by_type"]["Identity"] == 1
