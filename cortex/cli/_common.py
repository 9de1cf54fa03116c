"""What every command of the command line shares: the group, the help text of the
closed sets, the common options, opening a store and printing."""

from __future__ import annotations

import json
import os
import shutil
import typing
from contextlib import contextmanager
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

import click

import cortex
from cortex.errors import DISTRIBUTION

F = TypeVar("F", bound=Callable[..., Any])

# Memories `cortex write` hands to one `write_many` (each batch is atomic).
WRITE_BATCH = 1000
# `cortex find` without --limit or --budget.
DEFAULT_FIND_LIMIT = 20
# `cortex list --limit`: the most it prints (each type's newest are read, then merged).
MAX_LIST = 1000


# ---------------------------------------------------------------------------
# Help text: the closed sets, generated from the code


def _names(members: Iterable[Any]) -> str:
    return ", ".join(m.name.lower() for m in members)


VERBS = _names(cortex.Verb)
KINDS = _names(cortex.ObjKind)
TYPES = ", ".join(m.type_name for m in cortex.MemoryType)
TIERS = [t.value for t in cortex.Tier]
FORMS = ["short", "medium", "full"]


def _paragraph(label: str, text: str, width: int = 78) -> str:
    """`label: text` wrapped to `width`, further lines indented."""
    import textwrap

    return textwrap.fill(text, width, initial_indent=f"{label}: ", subsequent_indent="  ")


# Click rewraps help paragraphs unless they start with "\b"; these are laid out here.
VOCABULARY = "\b\n" + "\n".join((
    _paragraph("Verbs", VERBS),
    _paragraph("Object kinds", KINDS),
    _paragraph("Memory types", TYPES),
))


def _epilog(*examples: str) -> str:
    """The end of a command's --help: examples, then the verbs, kinds and types."""
    return "\b\nExamples:\n" + "\n".join(f"  {e}" for e in examples) + "\n\n" + VOCABULARY


if typing.TYPE_CHECKING:
    _ParamType = click.ParamType[str]  # generic in click's stubs
else:
    _ParamType = click.ParamType


class _Name(_ParamType):
    """A name from a closed set, passed through as given (cortex validates it and names
    the valid ones); the set only feeds shell completion."""

    def __init__(self, name: str, choices: Sequence[str]) -> None:
        self.name = name
        self.choices = choices

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        return [CompletionItem(c) for c in self.choices if c.startswith(incomplete)]


VERB = _Name("verb", [v.name.lower() for v in cortex.Verb])
TYPE = _Name("type", [m.type_name for m in cortex.MemoryType])
OBJECT = _Name("kind=ref", [f"{k.name.lower()}=" for k in cortex.ObjKind])


# ---------------------------------------------------------------------------
# Shared options and helpers


def _store_argument(f: F) -> F:
    return click.argument("store", metavar="STORE")(f)


def _actor_option(f: F) -> F:
    return click.option("--actor", metavar="ACTOR", help="The store's actor (default: read from the store).")(f)


def _json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(f)


def _is_dsn(store: str) -> bool:
    """A PostgreSQL connection string, as `cortex.open()` takes it."""
    return store.startswith(("postgresql://", "postgres://"))


def _actor(store: str, actor: str | None) -> str:
    """The actor to open an existing store with: `actor`, or the one the store belongs
    to. A folder must already hold a store (`NotFound` otherwise)."""
    if not _is_dsn(store):
        stored = cortex.store_actor(store)
        return stored if actor is None else actor  # another one: open() raises ActorMismatch
    if actor is None:
        raise click.BadParameter("is required for a PostgreSQL store (it holds many actors)", param_hint="--actor")
    return actor


def _open(store: str, actor: str | None, *, write: bool = False) -> cortex.Cortex:
    """Open an existing store: `mode="r"` for reads, `"rw"` for writes. A writer's
    open of a PostgreSQL actor that has no store yet would create one: only `init`
    may, so a typo in --actor is `NotFound` here, not a new empty store."""
    owner = _actor(store, actor)
    if write and _is_dsn(store):
        try:
            cortex.open(store, actor=owner, mode="r").close()
        except cortex.NotFound as exc:
            raise cortex.NotFound(f"{exc}; `cortex init STORE --actor {owner}` creates one") from None
    return cortex.open(store, actor=owner, mode="rw" if write else "r")


@contextmanager
def _removed_on_failure(store: str) -> Iterator[None]:
    """Run a command that may create the store folder `store`: when it fails, a
    folder it created (or filled, when it was empty) is removed, so a retry starts
    from nothing instead of an empty store of the wrong actor."""
    existed = os.path.exists(store)
    was_empty = existed and os.path.isdir(store) and not os.listdir(store)
    try:
        yield
    except BaseException:
        if not _is_dsn(store) and (not existed or was_empty):
            if existed:
                for name in os.listdir(store):
                    path = os.path.join(store, name)
                    if os.path.isdir(path):
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        os.remove(path)
            else:
                shutil.rmtree(store, ignore_errors=True)
        raise


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


def _bullet(uri: str, text: str) -> str:
    """`- <uri> — <text>`, further lines indented under the bullet (as Bundle.to_markdown)."""
    return f"- {uri} — {text}".replace("\n", "\n  ")


def _parse_time(text: str | None, option: str) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        value = None
    if value is None or value.utcoffset() is None:
        raise click.BadParameter(f"must be ISO 8601 with a timezone, such as 2025-01-31T12:00:00Z; got {text!r}", param_hint=option)
    return value


# ---------------------------------------------------------------------------
# The group


class _Group(click.Group):
    """Lists its commands in the order they are defined (a store's life), not A to Z."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    no_args_is_help=True,
    epilog=_epilog(
        "cortex demo",
        "cortex init ./store --actor agent-ops-1",
        "cortex write ./store memories.jsonl",
        "cortex context ./store --verb acquire --object service=gpu_inference",
    ) + "\n\n\b\nShell completion (bash; zsh and fish alike with zsh_source, fish_source):\n"
        '  eval "$(_CORTEX_COMPLETE=bash_source cortex)"',
)
@click.version_option(cortex.__version__, "--version", "-V", prog_name="cortex",
                      message=f"%(prog)s %(version)s (pip install {DISTRIBUTION})")
@click.option("--debug", is_flag=True, help="On an error, print the traceback too.")
def cli(debug: bool) -> None:
    """cortex: an embedded memory engine for AI agents.

    Exit status: 0 success, 1 a check found problems (verify, rebuild), 2 bad input
    or usage (one line on standard error: cortex: <ErrorClass>: <message>).
    """



def _report_problems(lines: list[str], as_json: bool, key: str, summary: str) -> int:
    """Print a check's problem lines and a summary (or `{key: lines}` as JSON); the
    exit status: 1 when there is any."""
    if as_json:
        _echo_json({key: lines})
    else:
        for line in lines:
            click.echo(line)
        click.echo(summary)
    return 1 if lines else 0

