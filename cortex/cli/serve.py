"""Integrations: `cortex mcp`."""

from __future__ import annotations

import click

from ._common import cli


@cli.command(short_help="Serve the store to MCP hosts (stdio).", add_help_option=False,
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def mcp(args: tuple[str, ...]) -> int:
    """cortex mcp STORE [--actor A] [--read-only]: a Model Context Protocol server
    over stdio (needs the mcp extra). See --help."""
    from ..integrations.mcp import main as serve  # without the extra: MissingExtra, naming it
    return serve(list(args))
