"""Integrations: `cortex mcp`."""

from __future__ import annotations

import click

from ._common import _epilog, _store_argument, cli


@cli.command(short_help="Serve the store to MCP hosts (stdio).", epilog=_epilog(
    "cortex mcp ./store", "cortex mcp ./store --read-only", "cortex mcp ./store --scope sub-7.scope",
    "cortex mcp ./new-store --actor agent-ops-1      # creates the store"))
@_store_argument
@click.option("--actor", metavar="ACTOR", help="The store's actor (default: read from the store; required to create one).")
@click.option("--read-only", is_flag=True, help='Open with mode="r" (beside a writer): only context, resolve and find.')
@click.option("--allow-erase", is_flag=True, help="Also offer the erase tool, which removes a memory's content for good.")
@click.option("--scope", "scope_file", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Serve a sub-agent its slice: a token from `cortex grant` (read-only; every call carries it).")
def mcp(store: str, actor: str | None, read_only: bool, allow_erase: bool, scope_file: str | None) -> int:
    """Serve the store to an MCP host (Claude Desktop, Cursor, any MCP client) over
    standard input and output; logs go to standard error. Tools: context, resolve,
    find, recall, and (not read-only) remember, update, supersede, link, attest,
    forget (and erase with --allow-erase). Needs the mcp extra."""
    from ..integrations.mcp import serve  # without the extra: MissingExtra, naming it

    if read_only and allow_erase:
        raise click.BadParameter("needs a writable store: leave out --read-only", param_hint="--allow-erase")
    serve(store, actor=actor, read_only=read_only, allow_erase=allow_erase, scope_file=scope_file)
    return 0
