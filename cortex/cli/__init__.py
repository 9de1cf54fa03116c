"""The `cortex` command line (also `python -m cortex`): one command per part of a
store's life.

    cortex init STORE --actor A          create an empty store
    cortex write STORE [FILE]            write memories given as JSON (one object, or JSON Lines)
    cortex context STORE --verb V --object KIND=REF ...   the context bundle for a task
    cortex resolve STORE URI|ID          one memory
    cortex find STORE --type T | --tag T ...              a bounded query
    cortex attest STORE URI... --outcome success|failure  feedback on memories relied on
    cortex tombstone STORE URI --reason R                 soft-delete a memory
    cortex stats STORE                   what the store holds
    cortex verify STORE                  check the whole store (exit 1 on problems)
    cortex rebuild STORE                 recreate the derived keys
    cortex optimize STORE                pack hot objects' frame entries, merge the newest files
    cortex learn STORE                   compile event traces into artifacts (docs/learning.md)
    cortex bench                         the benchmark harness on a temporary store
    cortex demo                          a small agent's store, explained

Conventions, the same for every command:

* `STORE` is a store folder or a PostgreSQL connection string. The actor is read from
  a folder's store when `--actor` is not given (a PostgreSQL database holds many
  actors: name one). Every command but `init` needs an existing store.
* Read commands (`context`, `resolve`, `find`, `stats`, `verify`) open the store with
  `mode="r"`, so they run beside a process that is writing to it, and take `--json`.
* Exit status: 0 success; 1 a check that found problems (`verify`, `rebuild`); 2 bad
  input or usage, or any other error, with one line `cortex: <ErrorClass>: <message>`
  on standard error (the traceback too with `cortex --debug ...`).

Adding a command is one decorated function in the module of its group (life, reads,
moving, learning, demo, bench, serve): it opens the store with `_common._open()` and prints with
`click.echo` or `_common._echo_json()`; errors need no handling of their own.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence

import click

import cortex

# The command groups, imported in the order `cortex --help` lists them (a store's life).
from . import life, graph, scopes, reads, learning, bench, demo, moving, serve  # noqa: F401 - each registers its commands
from ._common import cli

__all__ = ["cli", "main"]

# ---------------------------------------------------------------------------
# Entry point


def _one_line(text: str) -> str:
    return " ".join(text.split())


# The library's StoreLocked advice names the Python call; on the command line the
# read commands are the way to read beside a writer.
_LOCKED_HINT_PY = 'open it with mode="r" to read beside the writer'
_LOCKED_HINT_CLI = "read commands (context, resolve, find, list, stats, export) run beside it; write commands wait until it closes"


def _for_the_shell(exc: Exception) -> str:
    text = str(exc)
    return text.replace(_LOCKED_HINT_PY, _LOCKED_HINT_CLI) if isinstance(exc, cortex.StoreLocked) else text


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (see the module docstring)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        status = cli.main(args, prog_name="cortex", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx is not None else str(exc))
        return 0
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        click.echo(f"cortex: {type(exc).__name__}: {_one_line(exc.format_message())}{hint}", err=True)
        return 2
    except click.ClickException as exc:
        click.echo(f"cortex: {type(exc).__name__}: {_one_line(exc.format_message())}", err=True)
        return 2
    except (KeyboardInterrupt, click.Abort):
        click.echo("cortex: interrupted", err=True)
        return 130
    except BrokenPipeError:
        # The reader of standard output went away (`cortex find ... | head`): not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"cortex: {type(exc).__name__}: {_one_line(_for_the_shell(exc))}", err=True)
        return 2
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    sys.exit(main())
