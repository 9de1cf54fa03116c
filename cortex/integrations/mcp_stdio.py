"""The stdio transport of `cortex mcp`, guarded against malformed JSON-RPC.

The SDK's stdio transport hands a line that is not a JSON-RPC message to the session
as an exception, which answers nothing: a client that sent it waits for ever. Here
each line is checked before the SDK sees it, and a bad one is answered at once on
the same wire, as JSON-RPC 2.0 asks:

* not JSON (a 100,000-deep nesting included: Python's parser refuses it): `-32700`
  Parse error, `id` null;
* JSON that is not a JSON-RPC message: `-32600` Invalid Request, with the message's
  `id` when it has a usable one;
* a line longer than `MAX_LINE_BYTES` (`cortex.interop.limits`): `-32600`, after
  reading no more than the bound of it (the rest of the line is skipped unread into
  memory).

Every other line goes to the SDK unchanged.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, jsonrpc_message_adapter

from ..interop.limits import MAX_LINE_BYTES

_CHUNK = 1 << 20  # how much of an overlong line's rest is read (and dropped) at a time


class _GuardedLines:
    """The lines of `source`, as the SDK's stdio transport reads them, with the bad
    ones answered on `replies` instead (see the module docstring)."""

    def __init__(self, source: BinaryIO) -> None:
        self._source = source
        self._replies: MemoryObjectSendStream[SessionMessage] | None = None
        self._ready = anyio.Event()

    def attach(self, replies: MemoryObjectSendStream[SessionMessage]) -> None:
        self._replies = replies
        self._ready.set()

    def __aiter__(self) -> _GuardedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            raw = await anyio.to_thread.run_sync(self._read)
            if raw is None:
                raise StopAsyncIteration
            if not raw.strip():
                continue
            error = _error_for(raw)
            if error is None:
                return raw.decode("utf-8")
            await self._reply(error)

    def _read(self) -> bytes | None:
        """One line (None at the end of input); an overlong one as far as the bound,
        its rest skipped."""
        line = self._source.readline(MAX_LINE_BYTES + 1)
        if not line:
            return None
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (rest := self._source.readline(_CHUNK)) and not rest.endswith(b"\n"):
                pass
        return line

    async def _reply(self, error: JSONRPCError) -> None:
        await self._ready.wait()
        assert self._replies is not None
        try:
            await self._replies.send(SessionMessage(error))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session has ended: nobody is left to answer


def _error_for(raw: bytes) -> JSONRPCError | None:
    """The JSON-RPC error that answers a line, or None when the SDK can take it."""
    if len(raw) > MAX_LINE_BYTES:
        return _error(None, INVALID_REQUEST, f"message longer than {MAX_LINE_BYTES} bytes")
    try:
        obj: Any = json.loads(raw)
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, "Parse error: not JSON")
    rid = obj.get("id") if isinstance(obj, dict) else None
    usable_id = rid if (type(rid) is int or type(rid) is str) else None
    try:
        jsonrpc_message_adapter.validate_json(raw, by_name=False)
    except Exception:  # pydantic's ValidationError and anything else it raises on odd input
        return _error(usable_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
    return None


def _error(rid: int | str | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message))


def run_stdio(server: MCPServer, source: BinaryIO) -> None:
    """Serve `server` over stdio (reading `source`, the process's stdin) until the
    input ends."""

    async def serve() -> None:
        lines = _GuardedLines(source)
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.attach(write_stream)
            # The SDK's own `run_stdio_async` runs its low-level server the same way.
            low = server._lowlevel_server
            await low.run(read_stream, write_stream, low.create_initialization_options())

    anyio.run(serve)
