"""An MCP server over a cortex store (docs/integrations.md), on the official `mcp` SDK 2.x.

    python -m cortex.integrations.mcp STORE [--actor A] [--read-only | --allow-erase] [--scope FILE]
    cortex mcp STORE [--actor A] [--read-only | --allow-erase] [--scope FILE]   (the CLI calls `serve`)

The actor is read from the store when `--actor` is not given (it is needed to
create a new store).

It speaks the Model Context Protocol over stdio, so an agent host (Claude Desktop,
Cursor, any MCP client) can give a model the store's memories. Tools:

* `context(verb, objects, budget_tokens, form, include_tiers)`: the memories that
  matter for a task, within a token budget: the Bundle's Markdown as text, and
  `{pinned, outcomes, frame_relevant, reachable_uris, total_tokens, trimmed}` as
  structured content (URIs per tier).
* `resolve(uri)`: one memory: its full form as text, the memory as structured content.
* `remember(type, data, frames, tags, importance, key, supersedes)`: write a memory
  (the JSON form of `cortex.interop.memory_json`); returns its URI. With `key`, a
  memory of that type and key already there is updated instead (an upsert).
* `update(uri, data)`: a new version of a memory with new data (same type).
* `supersede(old, data, frames, tags, importance)`: write the memory that replaces
  `old` (same type; its frames, tags and importance unless given) and link it
  `supersedes`, so `context` shows the new one only.
* `link(src, type, dst, weight)`: a typed edge between two memories.
* `find(type, tags, where, limit, budget_tokens, form)`: a bounded query.
* `recall(query, budget_tokens, types)`: memories by what they say, most relevant
  first, within a token budget (`cortex.integrations.mcp_recall`, docs/recall.md).
* `attest(cited, outcome, reason)`: feedback on memories the model relied on.
* `forget(uri, reason)`: tombstone a memory.
* `erase(uri, reason)`, only with `--allow-erase`: remove a memory's content for good
  (`Cortex.erase`, docs/trust.md). Off by default: a model that can erase can
  destroy what it cannot read back.

and a resource `cortex://pinned` with the pinned memories' Markdown. Every tool that
names a memory takes its URI, its URI without `#version` (the latest version) or its
26-character id. The input
schemas list the closed sets (verbs, object kinds, memory types, forms, tiers) as
enums so the model sees the valid values. A `cortex.CortexError` comes back as a tool
error result (`is_error`) whose text and structured content name the error class,
the field and the rule; the server keeps serving. Arguments that do not match a
tool's input schema come back the same way, one line naming each field
(`ValidationError: remember: importance: Input should be a valid integer`). With
`--read-only` the store is opened with `mode="r"` (beside a writer process) and only
`context`, `resolve`, `recall` and `find` are offered; each of them first catches up with the
writer, so the server sees every write the writer has acknowledged. With `--scope
FILE` (a token from `cortex grant`) the server is read-only too and every call
carries the scope: a sub-agent sees its slice of the store and nothing else
(`recall` is not offered under a scope).

Logs go to stderr; stdout carries the protocol alone. A line that is not a JSON-RPC
message gets a JSON-RPC error reply (`cortex.integrations.mcp_stdio`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Annotated, Any, cast

from cortex.errors import MissingExtra

try:
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import CallToolResult, TextContent, ToolAnnotations
    from pydantic import Field, ValidationError, WithJsonSchema
except ModuleNotFoundError as _missing:  # one line naming the extra, not a traceback
    raise MissingExtra("the MCP server", _missing.name or "mcp", "mcp") from None

import cortex
from cortex.context import Form as FormName
from cortex.context import TierName
from cortex.interop.memory_json import TYPE_NAMES, data_fields, iso, memory_from_json, memory_to_json

from .mcp_recall import recall_tool
from .mcp_stdio import run_stdio

__all__ = ["build_server", "serve", "main", "VERBS", "KINDS", "FORMS", "TIERS", "READ_TOOLS", "WRITE_TOOLS"]

VERBS: tuple[str, ...] = tuple(v.name.lower() for v in cortex.Verb)
KINDS: tuple[str, ...] = tuple(k.name.lower() for k in cortex.ObjKind)
FORMS: tuple[str, ...] = ("short", "medium", "full")
TIERS: tuple[str, ...] = tuple(t.value for t in cortex.Tier)
READ_TOOLS: tuple[str, ...] = ("context", "resolve", "find", "recall")
WRITE_TOOLS: tuple[str, ...] = ("remember", "update", "supersede", "link", "attest", "forget")
ERASE_TOOL = "erase"  # offered only when the server is started with --allow-erase
EDGE_TYPES: tuple[str, ...] = tuple(t.name.lower() for t in cortex.EdgeType)
PINNED_URI = "cortex://pinned"

_log = logging.getLogger("cortex.mcp")

# ---------------------------------------------------------------------------
# Input schemas: the closed sets as enums, so a model sees the valid values. The
# Python types below are what pydantic checks; cortex checks the rest and names
# the field when a value falls outside a set.

_NULL = {"type": "null"}
_VERB_SCHEMA = {
    "anyOf": [{"type": "string", "enum": list(VERBS)}, _NULL],
    "default": None,
    "description": "The task's verb; null returns the pinned memories only.",
}
_OBJECTS_SCHEMA = {
    "type": "object",
    "properties": {kind: {"type": "string"} for kind in KINDS},
    "additionalProperties": False,
    "default": {},
    "description": "The task's objects: object kind -> ref, e.g. {\"service\": \"gpu_inference\"}.",
}
_FORM_SCHEMA = {"type": "string", "enum": list(FORMS), "default": "medium", "description": "How much of each memory to render."}
_TIERS_SCHEMA = {
    "anyOf": [{"type": "array", "items": {"type": "string", "enum": list(TIERS)}, "minItems": 1}, _NULL],
    "default": None,
    "description": "The tiers to fill; null for all three.",
}
_TYPE_SCHEMA = {"type": "string", "enum": list(TYPE_NAMES), "description": "The memory type."}
_OPTIONAL_TYPE_SCHEMA = {"anyOf": [_TYPE_SCHEMA, _NULL], "default": None, "description": "A memory type to query."}
_DATA_SCHEMA = {
    "type": "object",
    "description": "The memory's fields (times as ISO 8601 text, lists as arrays). Fields by type: "
    + "; ".join(f"{name}: {', '.join(data_fields(name))}" for name in TYPE_NAMES),
}
_FRAMES_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "verb": {"type": "string", "enum": list(VERBS)},
            "kind": {"type": "string", "enum": list(KINDS)},
            "ref": {"type": "string", "minLength": 1},
        },
        "required": ["verb", "kind", "ref"],
        "additionalProperties": False,
    },
    "default": [],
    "description": "The tasks (verb, object kind, ref) this memory is relevant to.",
}
_WHERE_SCHEMA = {
    "anyOf": [{"type": "array"}, {"type": "object"}, _NULL],
    "default": None,
    "description": 'A predicate on data fields: ["eq", field, value] (ops eq, ne, lt, lte, gt, gte, in), '
    '["and", p, ...], ["or", p, ...], ["not", p], or an object {field: value, ...}.',
}
_OUTCOME_SCHEMA = {"type": "string", "enum": ["success", "failure"], "description": "How the task went."}


def _schema(schema: dict[str, Any]) -> WithJsonSchema:
    return WithJsonSchema(schema)


Verb = Annotated[str | None, _schema(_VERB_SCHEMA)]
Objects = Annotated[dict[str, str], _schema(_OBJECTS_SCHEMA)]
Form = Annotated[str, _schema(_FORM_SCHEMA)]
Tiers = Annotated[list[str] | None, _schema(_TIERS_SCHEMA)]
TypeName = Annotated[str, _schema(_TYPE_SCHEMA)]
OptionalTypeName = Annotated[str | None, _schema(_OPTIONAL_TYPE_SCHEMA)]
Data = Annotated[dict[str, Any], _schema(_DATA_SCHEMA)]
Frames = Annotated[list[dict[str, Any]], _schema(_FRAMES_SCHEMA)]
Where = Annotated[list[Any] | dict[str, Any] | None, _schema(_WHERE_SCHEMA)]
Outcome = Annotated[str, _schema(_OUTCOME_SCHEMA)]
Uri = Annotated[str, Field(description="A memory: its URI cortex://<Type>/<ULID>#<version>, the URI without #<version> "
                                       "(the latest version), its 26-character id, or key:<Type>/<key>.")]
EdgeTypeName = Annotated[str, _schema({"type": "string", "enum": list(EDGE_TYPES), "description": "The edge type."})]
Key = Annotated[str | None, Field(description="A natural key: a memory of this type with this key is updated, not duplicated.")]


# ---------------------------------------------------------------------------
# Results


def _result(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _error(exc: cortex.CortexError) -> CallToolResult:
    """A tool error result naming the error class, and the field and rule when the
    error has them (every `ValidationError` does)."""
    field = getattr(exc, "field", None)
    rule = getattr(exc, "rule", None)
    return CallToolResult(
        content=[TextContent(type="text", text=f"{type(exc).__name__}: {exc}")],
        structured_content={"error": type(exc).__name__, "field": field, "rule": rule, "message": str(exc)},
        is_error=True,
    )


def _schema_error(tool: str, exc: ValidationError) -> CallToolResult:
    """Arguments that fail a tool's input schema, as one line per field (not
    pydantic's multi-line text with a link), in the shape of `_error`."""
    problems = [(".".join(str(part) for part in err["loc"]) or "arguments", err["msg"]) for err in exc.errors()]
    field = ", ".join(dict.fromkeys(f for f, _ in problems))
    rule = "; ".join(f"{f}: {msg}" for f, msg in problems)
    return CallToolResult(
        content=[TextContent(type="text", text=f"ValidationError: {tool}: {rule}")],
        structured_content={"error": "ValidationError", "field": field, "rule": rule, "message": f"{tool}: {rule}"},
        is_error=True,
    )


class _Server(MCPServer):
    """The SDK's server, with schema errors reported as `_schema_error` says."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return _schema_error(name, exc.__cause__)
            raise


def _run(action: Callable[[], CallToolResult]) -> CallToolResult:
    """Run a tool body; a `CortexError` becomes a tool error result."""
    try:
        return action()
    except cortex.CortexError as exc:
        _log.info("tool call rejected: %s: %s", type(exc).__name__, exc)
        return _error(exc)


def memory_dict(memory: cortex.Memory) -> dict[str, Any]:
    """A memory as `resolve` returns it: its JSON form plus its identity and history."""
    out = memory_to_json(memory)
    out.update(
        uri=memory.uri,
        id=memory.id,
        version=memory.version,
        created_at=iso(memory.created_at),
        updated_at=iso(memory.updated_at),
        tombstoned=memory.tombstoned,
    )
    return out


# ---------------------------------------------------------------------------
# The server


def build_server(c: cortex.Cortex, read_only: bool, allow_erase: bool = False,
                 scope: cortex.SignedScope | None = None) -> MCPServer:
    """An `MCPServer` whose tools call the open store `c`.

    `read_only=True` offers only the read tools (`context`, `resolve`, `find`, `recall`); pass a
    store opened with `mode="r"` then. `allow_erase=True` (not with `read_only`) adds
    the `erase` tool. `scope`: every read carries it (a sub-agent's view; implies
    `read_only`, and `recall`, which takes no scope, is left out). The caller keeps
    ownership of `c`.
    """
    if read_only and allow_erase:
        raise cortex.ValidationError("allow_erase", "a read-only server cannot erase", allow_erase)
    if scope is not None and allow_erase:
        raise cortex.ValidationError("allow_erase", "a scoped server is read-only: it cannot erase", allow_erase)
    read_only = read_only or scope is not None
    server: MCPServer = _Server(
        "cortex",
        version=cortex.__version__,
        instructions=(
            "Memory for this agent. Call `context` at the start of a task with its verb and objects: "
            "it returns the memories that matter within a token budget, and URIs of the rest "
            "(`resolve` them when needed). "
            + ("" if read_only else "Use `remember` to store what you learn (with a `key` for a memory you will "
               "update later), `update` or `supersede` when a fact changed, `attest` to say which memories helped, "
               "and `forget` to retire a wrong one.")
        ),
        log_level="WARNING",
    )

    def catch_up() -> None:
        if c.mode == "r":
            c.refresh()

    def context(verb: Verb = None, objects: Objects = {}, budget_tokens: int = 0, form: Form = "medium",  # noqa: B006 - never mutated
                include_tiers: Tiers = None) -> CallToolResult:
        """The memories that matter for a task (verb + objects), ranked and trimmed to a token budget.

        Text: Markdown with the sections Pinned, Frame-relevant, Outcomes and Reachable.
        Structured: URIs per tier, reachable_uris (what did not fit), total_tokens, trimmed.
        """
        def body() -> CallToolResult:
            catch_up()
            bundle = c.context(verb=verb, objects=objects, budget_tokens=budget_tokens, form=cast(FormName, form),
                               include_tiers=cast("list[TierName] | None", include_tiers), scope=scope)
            return _result(bundle.to_markdown(), {
                "pinned": [m.uri for m in bundle.pinned],
                "outcomes": [m.uri for m in bundle.outcomes],
                "frame_relevant": [m.uri for m in bundle.frame_relevant],
                "reachable_uris": list(bundle.reachable_uris),
                "total_tokens": bundle.total_tokens,
                "trimmed": bundle.trimmed,
            })
        return _run(body)

    def resolve(uri: Uri) -> CallToolResult:
        """One memory by URI (older versions and tombstoned memories resolve too): its full text, and the memory as data."""
        def body() -> CallToolResult:
            catch_up()
            memory = c.resolve(uri, scope=scope)
            return _result(memory.form("full"), memory_dict(memory))
        return _run(body)

    def find(type: OptionalTypeName = None, tags: list[str] = [], where: Where = None,  # noqa: B006 - never mutated
             limit: int | None = None, budget_tokens: int | None = None, form: Form = "medium") -> CallToolResult:
        """A bounded query: memories of a type and/or carrying all the given tags, filtered by `where`.

        Give a type or at least one tag, and a limit or a budget_tokens. One line per memory: `- <uri> — <text>`.
        """
        def body() -> CallToolResult:
            catch_up()
            found = c.find(type=type, tags=tags, where=where, limit=limit, budget_tokens=budget_tokens, form=cast(FormName, form),
                           scope=scope)
            results = [{"uri": m.uri, "type": m.type.type_name, "text": m.form(form)} for m in found]
            text = "".join(f"- {r['uri']} — {r['text']}\n" for r in results) or "(none)\n"
            return _result(text, {"results": results})
        return _run(body)

    def remember(type: TypeName, data: Data, frames: Frames = [], tags: list[str] = [],  # noqa: B006 - never mutated
                 importance: Annotated[int, Field(description="0..10")] = 0, key: Key = None,
                 supersedes: list[str] = []) -> CallToolResult:  # noqa: B006 - never mutated
        """Write a memory; returns its URI. Frames say which tasks it matters to, so `context` finds it.

        With `key`, writing the same type and key again updates that memory (a new version) instead of adding one.
        `supersedes`: URIs of memories this one replaces (they leave `context`).
        """
        def body() -> CallToolResult:
            obj: dict[str, Any] = {"type": type, "data": data, "frames": frames, "tags": tags, "importance": importance,
                                   "supersedes": supersedes}
            if key is not None:
                obj["key"] = key
            uri = c.write_many([memory_from_json(obj)])[0]
            return _result(uri, {"uri": uri})
        return _run(body)

    def update(uri: Uri, data: Data) -> CallToolResult:
        """Write a new version of a memory (same type) with these data fields; returns the new version's URI."""
        def body() -> CallToolResult:
            memory = c.resolve(uri)
            new = c.update(memory.uri, memory_from_json({"type": memory.type.type_name, "data": data}).data)
            return _result(new, {"uri": new})
        return _run(body)

    def supersede(old: Uri, data: Data, frames: Frames | None = None, tags: list[str] | None = None,
                  importance: Annotated[int | None, Field(description="0..10")] = None) -> CallToolResult:
        """Replace a memory with a new one of the same type (e.g. "Postgres 16" replacing "Postgres 13").

        The new memory keeps the old one's frames, tags and importance unless given, and is linked `supersedes`
        to it: `context` then shows the new one only; the old one still resolves. Returns the new URI.
        """
        def body() -> CallToolResult:
            memory = c.resolve(old)
            kept_frames = [{"verb": f.verb.name.lower(), "kind": f.kind.name.lower(), "ref": f.ref} for f in memory.frames]
            obj = {"type": memory.type.type_name, "data": data, "frames": kept_frames if frames is None else frames,
                   "tags": list(memory.tags) if tags is None else tags,
                   "importance": memory.importance if importance is None else importance, "supersedes": [memory.uri]}
            uri = c.write_many([memory_from_json(obj)])[0]
            return _result(uri, {"uri": uri, "supersedes": memory.uri})
        return _run(body)

    def link(src: Uri, type: EdgeTypeName, dst: Uri,
             weight: Annotated[float, Field(description="0..1")] = 1.0) -> CallToolResult:
        """Link memory `src` to `dst` with a typed edge (supersedes, contradicts, derived_from, ...). Idempotent."""
        def body() -> CallToolResult:
            edge = c.link(c.resolve(src).uri, type, c.resolve(dst).uri, weight)
            text = f"linked {edge.src} {edge.type.name.lower()} {edge.dst}"
            return _result(text, {"src": edge.src, "type": edge.type.name.lower(), "dst": edge.dst, "weight": edge.weight})
        return _run(body)

    def attest(cited: list[str], outcome: Outcome, reason: str | None = None) -> CallToolResult:
        """Feedback: the memories (URIs or ids) a task relied on, and how it went.

        A failure with reason "factual_error" or "wrong_assumption" counts against the cited memories.
        """
        def body() -> CallToolResult:
            c.attest(cited, outcome, reason)
            count = len(cited)
            return _result(f"attested {count} {'memory' if count == 1 else 'memories'}: {outcome}", {"cited": list(cited), "outcome": outcome, "reason": reason})
        return _run(body)

    def forget(uri: Uri, reason: str) -> CallToolResult:
        """Tombstone a memory: it leaves every context and find, and still resolves."""
        def body() -> CallToolResult:
            c.tombstone(uri, reason)
            return _result(f"tombstoned {uri}", {"uri": uri, "tombstoned": True})
        return _run(body)

    def erase(uri: Uri, reason: str) -> CallToolResult:
        """Erase a memory for good: the content of every version leaves the store (it no longer resolves).

        Only for content that must not be kept (personal data, secrets); `forget` retires a wrong memory.
        """
        def body() -> CallToolResult:
            c.erase(uri, reason)
            return _result(f"erased {uri}", {"uri": uri, "erased": True})
        return _run(body)

    reads: list[Callable[..., CallToolResult]] = [context, resolve, find]
    if scope is None:
        reads.append(recall_tool(c, catch_up, _run, _result))
    writes: list[Callable[..., CallToolResult]] = [remember, update, supersede, link, attest, forget]
    if allow_erase:
        writes.append(erase)
    for tool in reads:
        server.add_tool(tool, annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    if not read_only:
        for tool in writes:
            server.add_tool(tool, annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=tool in (forget, erase), open_world_hint=False))

    @server.resource(PINNED_URI, name="pinned", mime_type="text/markdown",
                     description="The pinned memories (identity, hard constraints, active goals) as Markdown.")
    def pinned() -> str:
        catch_up()
        bundle = c.context(verb=None, include_tiers=["pinned"], budget_tokens=4000)
        text: str = bundle.to_markdown()
        return text

    return server


# ---------------------------------------------------------------------------
# Command line


def serve(store: str, *, actor: str | None = None, read_only: bool = False, allow_erase: bool = False,
          scope_file: str | None = None) -> None:
    """Open the store and serve it over stdio until the client closes stdin (the
    actor is read from the store when not given). `scope_file`: a token from
    `cortex grant`; the server is then read-only and every call carries the scope,
    checked once before serving. A `CortexError` (no store, a bad token) is raised
    before anything is served."""
    scope = None
    if scope_file is not None:
        try:
            raw = Path(scope_file).read_bytes()
        except OSError as exc:
            raise cortex.ValidationError("--scope", f"cannot be read ({exc.strerror})", scope_file) from None
        scope = cortex.SignedScope.from_bytes(raw)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")
    with cortex.open(store, actor=actor, mode="r" if read_only or scope is not None else "rw") as c:
        if scope is not None:
            c.context(verb=None, scope=scope)  # a token altered, expired, revoked or untrusted fails here, once
        run_stdio(build_server(c, read_only=read_only, allow_erase=allow_erase, scope=scope), sys.stdin.buffer)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m cortex.integrations.mcp",
        description="Serve a cortex store to MCP clients over stdio (logs on stderr).",
    )
    parser.add_argument("store", help="the store directory")
    parser.add_argument("--actor", help="the actor the store belongs to (default: read from the store; "
                        "required to create a new one)")
    parser.add_argument("--read-only", action="store_true",
                        help='open the store with mode="r" (beside a writer) and offer only context, resolve and find')
    parser.add_argument("--allow-erase", action="store_true",
                        help="also offer the erase tool, which removes a memory's content for good")
    parser.add_argument("--scope", metavar="FILE", help="serve only the slice a scope token (from cortex grant) allows")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until the client closes stdin. Exit 0, or 2 when the store
    cannot be opened (one line `cortex: <Error>: <message>` on stderr)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.read_only and args.allow_erase:
        parser.error("--allow-erase needs a writable store: leave out --read-only")
    try:
        serve(args.store, actor=args.actor, read_only=args.read_only, allow_erase=args.allow_erase, scope_file=args.scope)
    except cortex.CortexError as exc:
        print(f"cortex: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
