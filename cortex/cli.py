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

Adding a command is one decorated function below: it opens the store with `_open()`
and prints with `_emit()` or `_echo_json()`; errors need no handling of their own.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import traceback
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, TextIO, TypeVar

import click

import cortex
from cortex import (
    Belief,
    Capability,
    Constraint,
    Event,
    Fact,
    Frame,
    Goal,
    Identity,
    Pattern,
    Preference,
    Write,
)
from cortex.interop import hmx_pack
from cortex.interop.memory_json import memory_from_json

from .bench.progress import progress

F = TypeVar("F", bound=Callable[..., Any])

# Memories `cortex write` hands to one `write_many` (each batch is atomic).
WRITE_BATCH = 1000
# `cortex find` without --limit or --budget.
DEFAULT_FIND_LIMIT = 20


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
    """Open an existing store: `mode="r"` for reads, `"rw"` for writes."""
    return cortex.open(store, actor=_actor(store, actor), mode="rw" if write else "r")


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
@click.version_option(cortex.__version__, "--version", "-V", prog_name="cortex", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="On an error, print the traceback too.")
def cli(debug: bool) -> None:
    """cortex: an embedded memory engine for AI agents.

    Exit status: 0 success, 1 a check found problems (verify, rebuild), 2 bad input
    or usage (one line on standard error: cortex: <ErrorClass>: <message>).
    """


# ---------------------------------------------------------------------------
# Store life: init, write, attest, tombstone, rebuild, optimize


@cli.command(short_help="Create an empty store.", epilog=_epilog("cortex init ./store --actor agent-ops-1"))
@_store_argument
@click.option("--actor", required=True, metavar="ACTOR", help="The agent the store belongs to.")
def init(store: str, actor: str) -> int:
    """Create an empty store at STORE (a new or empty folder) for ACTOR.

    A store that already exists for ACTOR is left as it is.
    """
    exists = not _is_dsn(store) and _holds_store(store)
    with cortex.open(store, actor=actor):
        pass
    click.echo(f"{'store exists' if exists else 'created store'} at {store} (actor {actor})")
    return 0


def _holds_store(store: str) -> bool:
    try:
        cortex.store_actor(store)
    except cortex.NotFound:
        return False
    return True


@cli.command(short_help="Write memories given as JSON or JSON Lines.", epilog=_epilog(
    "cortex write ./store fact.json",
    "cortex write ./store memories.jsonl",
    """echo '{"type": "Fact", "data": {"statement": "A100 spot is 1.40 USD/h", "subject": "acme", "predicate": "price"}}' | cortex write ./store""",
))
@_store_argument
@click.argument("file", type=click.File("r", encoding="utf-8"), default="-")
@_actor_option
def write(store: str, file: TextIO, actor: str | None) -> int:
    """Write memories given as JSON: one object (FILE, or standard input when FILE is
    - or left out), a JSON list of objects, or JSON Lines (one object a line).

    \b
    A memory: {"type": "Fact", "data": {field: value},
               "frames": [{"verb": "acquire", "kind": "service", "ref": "gpu"}],
               "tags": [], "importance": 0, "confidence": 1.0,
               "source": "user_input", "expires_at": "2026-01-01T00:00:00Z"}
    (only "type" and "data" are required).

    The whole input is checked before anything is written (a bad line writes
    nothing); then memories are written in atomic batches of 1,000. Prints the URI
    of each memory written, in input order.
    """
    owner = _actor(store, actor)
    items = list(_read_memories(file))  # all checked before the store is opened for writing
    with cortex.open(store, actor=owner) as c:
        with progress("writing", len(items)) as advance:
            for start in range(0, len(items), WRITE_BATCH):
                batch = items[start : start + WRITE_BATCH]
                for uri in c.write_many(batch):
                    click.echo(uri)
                advance(len(batch))
    return 0


def _read_memories(stream: TextIO) -> Iterator[Write]:
    """Memories from JSON text: JSON Lines when the first non-blank line is a whole
    JSON object, else one JSON document (an object or a list of objects). A problem
    raises `ValidationError` naming the line (JSON Lines) or item and the field."""
    lines = iter(stream)
    number = 0
    for number, first in enumerate(lines, 1):
        if first.strip():
            break
    else:
        raise cortex.ValidationError("input", "is empty: give a memory as JSON, or JSON Lines")
    try:
        value = json.loads(first)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):  # not a line of JSON Lines: the input is one document
        document = first + "".join(lines)
        try:
            value = json.loads(document)
        except json.JSONDecodeError as exc:
            raise cortex.ValidationError("input", f"is neither JSON nor JSON Lines: {exc.msg} at line {exc.lineno + number - 1}, column {exc.colno}") from None
        objects = value if isinstance(value, list) else [value]
        for i, obj in enumerate(objects):
            yield _memory(obj, f"[{i}]" if isinstance(value, list) else "")
        return
    yield _memory(value, f"line {number}")
    for number, line in enumerate(lines, number + 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise cortex.ValidationError(f"line {number}", f"is not JSON: {exc.msg} (column {exc.colno})") from None
        yield _memory(value, f"line {number}")


def _memory(obj: object, where: str) -> Write:
    """`memory_from_json(obj)`, its error's field prefixed with `where` (a line or item)."""
    try:
        return memory_from_json(obj)
    except cortex.ValidationError as exc:
        if not where:
            raise
        raise type(exc)(f"{where}: {exc.field}", exc.rule, exc.value) from None


@cli.command(short_help="Feedback on memories an answer relied on.", epilog=_epilog(
    "cortex attest ./store cortex://Fact/01J...#1 --outcome success",
    "cortex attest ./store cortex://Fact/01J...#1 --outcome failure --reason factual_error",
))
@_store_argument
@click.argument("uris", nargs=-1, required=True, metavar="URI...")
@click.option("--outcome", type=click.Choice(["success", "failure"]), required=True,
              help="success: each memory gains a citation and an access (a use); failure: see --reason.")
@click.option("--reason", help=f"Free text. On failure, {cortex.FACTUAL_ERROR} or {cortex.WRONG_ASSUMPTION} take a citation away.")
@_actor_option
def attest(store: str, uris: tuple[str, ...], outcome: str, reason: str | None, actor: str | None) -> int:
    """Tell the store which memories an answer relied on, and how it went. The
    store's salience weights learn from it."""
    with _open(store, actor, write=True) as c:
        c.attest(list(uris), outcome, reason)
    click.echo(f"attested {len(uris)} {'memory' if len(uris) == 1 else 'memories'}: {outcome}")
    if outcome == "failure" and reason not in (cortex.FACTUAL_ERROR, cortex.WRONG_ASSUMPTION):
        click.echo(f"note: no citation taken away; only the reasons {cortex.FACTUAL_ERROR} and {cortex.WRONG_ASSUMPTION} do", err=True)
    return 0


@cli.command(short_help="Soft-delete a memory.", epilog=_epilog('cortex tombstone ./store cortex://Fact/01J...#1 --reason "price changed"'))
@_store_argument
@click.argument("uri")
@click.option("--reason", required=True, help="Why (kept with the memory).")
@_actor_option
def tombstone(store: str, uri: str, reason: str, actor: str | None) -> int:
    """Soft-delete a memory: it leaves every tier and query but still resolves."""
    with _open(store, actor, write=True) as c:
        c.tombstone(uri, reason)
    click.echo(f"tombstoned {uri}")
    return 0


@cli.command(short_help="Recreate the derived keys (exit 1 on damage left).", epilog=_epilog("cortex rebuild ./store"))
@_store_argument
@_actor_option
@_json_option
def rebuild(store: str, actor: str | None, as_json: bool) -> int:
    """Recreate every derived key (indexes, salience, weights) from the canonical
    records and the journal. Exit 1 when damage to canonical records is left."""
    with _open(store, actor, write=True) as c:
        damage = c.rebuild()
    return _report_problems(damage, as_json, "damage", f"rebuilt; {len(damage)} problem(s) left in canonical records")


@cli.command(short_help="Pack hot objects' frame entries and compact the store.", epilog=_epilog("cortex optimize ./store"))
@_store_argument
@_actor_option
@_json_option
def optimize(store: str, actor: str | None, as_json: bool) -> int:
    """Pack the frame entries of every hot object (a verb and object filed under by
    thousands of memories) into a few large values, so the first context() on it
    reads them at once, then merge the store's newest files into the levels below,
    so every scan seeks fewer of them. Run it after a bulk load or now and then;
    answers never change, and nothing is journaled (the root stays the same)."""
    with _open(store, actor, write=True) as c:
        done = c.optimize()
    if as_json:
        _echo_json(done)
    else:
        packed, rows = done["packed"], done["rows"]
        click.echo(f"packed {packed:,} frame {'prefix' if packed == 1 else 'prefixes'} ({rows:,} {'entry' if rows == 1 else 'entries'})")
    return 0


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


# ---------------------------------------------------------------------------
# Reads: context, resolve, find, stats, verify


@dataclass(frozen=True)
class _PackArgs:
    """What the interop formats of `cortex context` take besides the bundle."""

    intent: str | None
    query_context: str | None
    edges: tuple[cortex.Edge, ...] = ()  # between the bundle's memories (for --format hmx)


def _contextpack(bundle: cortex.Bundle, args: _PackArgs) -> str:
    assert args.intent is not None, "context() checks --intent first"
    return json.dumps(bundle.to_context_pack(intent=args.intent), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# `cortex context --format NAME`: how a bundle is printed.
CONTEXT_FORMATS: dict[str, Callable[[cortex.Bundle, _PackArgs], str]] = {
    "markdown": lambda b, a: b.to_markdown(),
    "json": lambda b, a: b.to_json() + "\n",
    "hmx": lambda b, a: json.dumps(b.to_hmx_pack(query_context=a.query_context, edges=a.edges), indent=2, sort_keys=True, ensure_ascii=False) + "\n",
    "ledger": lambda b, a: json.dumps(b.ledger(), indent=2, sort_keys=True, ensure_ascii=False) + "\n",
    "contextpack": _contextpack,
}


def _objects(pairs: tuple[str, ...]) -> dict[str, str]:
    """`KIND=REF` pairs as the `objects` of `context()`: one ref per kind."""
    objects: dict[str, str] = {}
    for pair in pairs:
        kind, sep, ref = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"takes KIND=REF, got {pair!r}", param_hint="--object")
        if kind in objects:
            raise click.BadParameter(f"kind {kind!r} given twice; a task names one ref per kind", param_hint="--object")
        objects[kind] = ref
    return objects


@cli.command(short_help="The context bundle for a task.", epilog=_epilog(
    "cortex context ./store --verb acquire --object service=gpu_inference",
    "cortex context ./store --verb acquire --object service=gpu_inference --budget 800 --form short --json",
    "cortex context ./store --verb acquire --object service=gpu --now 2025-06-01T12:00:00Z --format ledger",
    "cortex context ./store                  # no verb: the pinned tier only",
))
@_store_argument
@click.option("--verb", type=VERB, help="What the agent is about to do (see Verbs below).")
@click.option("--object", "objects", type=OBJECT, multiple=True, metavar="KIND=REF",
              help="An object of the task, repeatable (one ref per kind; see Object kinds below).")
@click.option("--budget", type=click.IntRange(min=0), default=0, help="Token budget (0: 3000; at most 4000).")
@click.option("--form", type=click.Choice(FORMS), default="medium", show_default=True, help="How each memory is rendered.")
@click.option("--tier", "tiers", type=click.Choice(TIERS), multiple=True, help="A tier to include, repeatable (default: all).")
@click.option("--outcome-limit", type=click.IntRange(min=0), default=0, help="Newest outcomes kept (0: 3).")
@click.option("--now", help="The instant to score at, ISO 8601 with a timezone (default: now), for output that can be reproduced.")
@click.option("--format", "fmt", type=click.Choice(list(CONTEXT_FORMATS)), default="markdown", show_default=True,
              help="markdown; json (Bundle.to_json()); hmx (HMX-1.0 Context Pack); ledger (the replay record); "
                   "contextpack (ContextPackV2, needs --intent).")
@click.option("--intent", help="The task in words, for --format contextpack.")
@click.option("--query-context", help="The query, for --format hmx.")
@_actor_option
@_json_option
def context(store: str, verb: str | None, objects: tuple[str, ...], budget: int, form: str, tiers: tuple[str, ...],
            outcome_limit: int, now: str | None, fmt: str, intent: str | None, query_context: str | None,
            actor: str | None, as_json: bool) -> int:
    """Print the context bundle for a task: the memories that matter for VERB on the
    objects, ranked by salience and trimmed to the token budget.

    \b
    Tiers, in the order printed:
      Pinned          always there: identities, hard constraints, active goals
      Frame-relevant  memories filed under the verb and an object
      Outcomes        the newest outcomes (Events) of the verb on the objects
      Reachable       what did not fit the budget: URIs to resolve later
    """
    if as_json and fmt not in ("markdown", "json"):
        raise click.BadParameter(f"--json and --format {fmt} disagree; give one", param_hint="--json")
    fmt = "json" if as_json else fmt
    if fmt == "contextpack" and intent is None:
        raise click.BadParameter("--format contextpack needs --intent", param_hint="--intent")
    asked = _objects(objects)
    if asked and verb is None:
        raise click.BadParameter("needs --verb: without a verb only the pinned tier runs", param_hint="--object")
    options: dict[str, Any] = {"verb": verb, "objects": asked, "budget_tokens": budget, "form": form,
                               "outcome_limit": outcome_limit, "now": _parse_time(now, "--now")}
    if tiers:
        options["include_tiers"] = list(tiers)
    with _open(store, actor) as c:
        bundle = c.context(**options)
        edges = tuple(hmx_pack.edges_among(c, bundle)) if fmt == "hmx" else ()
    click.echo(CONTEXT_FORMATS[fmt](bundle, _PackArgs(intent, query_context, edges)), nl=False)
    return 0


@cli.command(short_help="One memory, by URI or id.", epilog=_epilog("cortex resolve ./store cortex://Fact/01J...#1", "cortex resolve ./store 01J... --form short --json"))
@_store_argument
@click.argument("ref", metavar="URI|ID")
@click.option("--form", type=click.Choice(FORMS), default="full", show_default=True, help="How to render the memory.")
@_actor_option
@_json_option
def resolve(store: str, ref: str, form: str, actor: str | None, as_json: bool) -> int:
    """Print one memory: the version a URI names (old versions and tombstoned
    memories too), or the current version of an id."""
    with _open(store, actor) as c:
        memory = c.resolve(ref) if ref.startswith("cortex://") else c.resolve_latest(ref)
        text = memory.form(form)
    if as_json:
        _echo_json(memory.to_dict())
    else:
        state = ", tombstoned" if memory.tombstoned else ""
        click.echo(f"{memory.uri} ({memory.type.type_name}, version {memory.version}{state})")
        click.echo(text)
    return 0


def _datetime_fields() -> frozenset[str]:
    """The data fields that hold a datetime, in any type (as ISO 8601 text in --where)."""
    names = set()
    for member in cortex.MemoryType:
        cls = getattr(cortex, member.type_name)
        for name, hint in typing.get_type_hints(cls).items():
            if hint is datetime or datetime in typing.get_args(hint):
                names.add(name)
    return frozenset(names)


def _where(text: str | None) -> Any:
    """`--where` JSON as a `find()` clause, ISO 8601 text in a datetime field read as a time."""
    if text is None:
        return None
    try:
        clause = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"is not JSON: {exc.msg} (column {exc.colno})", param_hint="--where") from None
    times = _datetime_fields()

    def value(field: object, v: Any) -> Any:
        if field in times and isinstance(v, str):
            return _parse_time(v, "--where")
        if field in times and isinstance(v, list):
            return [value(field, item) for item in v]
        return v

    def walk(node: Any, depth: int = 0) -> Any:
        if depth > 64:
            return node  # find() refuses it, naming the depth
        if isinstance(node, dict):
            return {k: value(k, v) for k, v in node.items()}
        if isinstance(node, list) and node and node[0] in ("and", "or", "not"):
            return [node[0], *(walk(p, depth + 1) for p in node[1:])]
        if isinstance(node, list) and len(node) == 3:
            return [node[0], node[1], value(node[1], node[2])]
        return node

    return walk(clause)


@cli.command(short_help="A bounded query by type and/or tags.", epilog=_epilog(
    "cortex find ./store --type Goal --where '[\"eq\", \"status\", \"active\"]'",
    "cortex find ./store --tag style --where '{\"polarity\": \"prefer\"}' --budget 800 --form short",
    "cortex find ./store --type Fact --where '[\"gte\", \"as_of\", \"2025-01-01T00:00:00Z\"]' --json",
))
@_store_argument
@click.option("--type", "type_", type=TYPE, help="A memory type (see Memory types below).")
@click.option("--tag", "tags", multiple=True, help="A tag, repeatable (memories with every tag).")
@click.option("--where", help='A predicate as JSON: ["op", "field", value] with op eq, ne, lt, lte, gt, gte, in; '
                              '["and"|"or", p, ...]; ["not", p]; or {"field": value, ...}.')
@click.option("--order-by", type=click.Choice(["salience", "created", "-created"]), default="salience", show_default=True,
              help="Result order (ties by id).")
@click.option("--limit", type=click.IntRange(min=1), help=f"At most this many (default {DEFAULT_FIND_LIMIT} without --budget).")
@click.option("--budget", type=click.IntRange(min=1), help="At most this many tokens (in --form).")
@click.option("--form", type=click.Choice(FORMS), default="medium", show_default=True, help="How each memory is rendered.")
@click.option("--include-tombstoned", is_flag=True, help="Tombstoned memories too.")
@click.option("--late-binding", is_flag=True, help="Count an access (a use) of each result: opens the store for writing.")
@_actor_option
@_json_option
def find(store: str, type_: str | None, tags: tuple[str, ...], where: str | None, order_by: str, limit: int | None,
         budget: int | None, form: str, include_tombstoned: bool, late_binding: bool, actor: str | None, as_json: bool) -> int:
    """A bounded query over one memory type and/or a set of tags."""
    if limit is None and budget is None:
        limit = DEFAULT_FIND_LIMIT
    with _open(store, actor, write=late_binding) as c:
        found = c.find(type=type_, tags=list(tags), where=_where(where), order_by=order_by, limit=limit,
                       budget_tokens=budget, form=form, include_tombstoned=include_tombstoned, late_binding=late_binding)
        rendered = [m.form(form) for m in found]
    if as_json:
        _echo_json([m.to_dict() for m in found])
    else:
        for memory, text in zip(found, rendered):
            click.echo(_bullet(memory.uri, text))
    return 0


@cli.command(short_help="What the store holds.", epilog=_epilog("cortex stats ./store", "cortex stats ./store --json"))
@_store_argument
@_actor_option
@_json_option
def stats(store: str, actor: str | None, as_json: bool) -> int:
    """What the store holds: live and tombstoned memories, live memories by type,
    the journal's length and root."""
    with _open(store, actor) as c:
        numbers = c.stats()
    if as_json:
        _echo_json(numbers)
        return 0
    by_type = ", ".join(f"{name} {count}" for name, count in numbers["by_type"].items())
    for label, value in (
        ("store", numbers["path"]),
        ("actor", numbers["actor"]),
        ("memories", f"{numbers['memories']} live, {numbers['tombstoned']} tombstoned"),
        ("by type", by_type),
        ("journal", f"{numbers['journal_seq']} entries, root {numbers['root']}"),
        ("format", f"schema {numbers['schema_version']}, tokenizer {numbers['tokenizer']}"),
    ):
        click.echo(f"{label:<9} {value}")
    return 0


@cli.command(short_help="Check the whole store (exit 1 on problems).", epilog=_epilog("cortex verify ./store", "cortex verify ./store --json"))
@_store_argument
@_actor_option
@_json_option
def verify(store: str, actor: str | None, as_json: bool) -> int:
    """Check the whole store (journal chain, records, indexes, salience). Prints one
    line per problem; exit 1 when there is any."""
    with _open(store, actor) as c:
        problems = c.verify()
    return _report_problems(problems, as_json, "problems", f"{len(problems)} problem(s)")


# ---------------------------------------------------------------------------
# bench


@cli.command(short_help="Run the benchmark harness on a temporary store.", epilog=_epilog(
    "cortex bench --memories 10000 --queries 200",
    "cortex bench --memories 100000 --store ./bench-store --report report.json",
    "cortex bench --memories 100000 --store ./bench-store --hot-only --beside-writer --report hot.json",
))
@click.option("--memories", type=click.IntRange(min=1), default=100_000, show_default=True, help="Memories in the workload store.")
@click.option("--queries", type=click.IntRange(min=1), default=1000, show_default=True, help="context() calls timed.")
@click.option("--seed", type=click.IntRange(min=0), default=7, show_default=True, help="Workload seed.")
@click.option("--baseline-queries", type=click.IntRange(min=0), default=200, show_default=True,
              help="Queries the two baselines are compared on (0: skip; at most --queries).")
@click.option("--store", type=click.Path(file_okay=False), help="Build (or reuse) the workload store here, and keep it.")
@click.option("--keep", is_flag=True, help="Keep the temporary store and print its path.")
@click.option("--report", type=click.Path(dir_okay=False, writable=True), help="Write the JSON report here and print a summary.")
@click.option("--smoke", is_flag=True, help="A quick run that checks the harness works (one cold process, a few dozen writes).")
@click.option("--backend", type=click.Choice(["rocksdb", "postgresql"]), default="rocksdb", show_default=True,
              help="postgresql: copy the workload to --dsn and time it there beside RocksDB.")
@click.option("--dsn", metavar="DSN", help="The PostgreSQL database for --backend postgresql (postgresql://user@host:port/db).")
@click.option("--hot-only", is_flag=True,
              help="Only the query mix, the hot-frame figure and the scan counter (and --beside-writer): a quick run on an existing store.")
@click.option("--hot-rounds", type=click.IntRange(min=1), default=30, show_default=True,
              help="Rounds of the hot-frame figure (each calls every hot and every cold frame once).")
@click.option("--beside-writer", is_flag=True, help="Also time a reader beside a writer that ingests without pause (on a copy of the store).")
@click.option("--beside-seconds", type=click.FloatRange(min=0, min_open=True, max=600), default=10.0, show_default=True,
              help="How long --beside-writer measures.")
def bench(memories: int, queries: int, seed: int, baseline_queries: int, store: str | None, keep: bool, report: str | None,
          smoke: bool, backend: str, dsn: str | None, hot_only: bool, hot_rounds: int, beside_writer: bool, beside_seconds: float) -> int:
    """Run the benchmark harness: build a seeded workload store, then measure
    context() latency, the index entries each call reads, the workload's hottest
    frames against cold ones, a cold process, write and ingest throughput, resolve
    latency, disk use and the two baselines. --hot-only keeps the query mix, the
    hot-frame figure and the scan counter; --beside-writer adds a reader's latency
    beside a process that ingests without pause, on a copy of the store.

    The store goes to a temporary folder, removed at the end unless --keep (or
    --store DIR, which also reuses a store built there before). The JSON report goes
    to standard output, or to --report PATH with a summary on standard output.
    Nothing is written into the current folder.
    """
    from dataclasses import replace

    from .bench import backends, harness

    if backend == "postgresql" and not dsn:
        raise click.BadParameter("is required with --backend postgresql", param_hint="--dsn")
    if backend == "postgresql" and (hot_only or beside_writer):
        raise click.BadParameter("measures RocksDB stores only; leave it out with --backend postgresql",
                                 param_hint="--hot-only" if hot_only else "--beside-writer")
    shape = harness.RunOptions.smoke if smoke else harness.RunOptions
    options = replace(shape(memories, queries, seed, min(baseline_queries, queries)), hot_rounds=hot_rounds,
                      hot_only=hot_only, beside_writer_seconds=beside_seconds if beside_writer else 0.0)
    folder = None if store is not None else tempfile.mkdtemp(prefix="cortex-bench-")
    path = os.path.join(folder, "store") if folder is not None else str(store)
    try:
        result = backends.run_postgresql(options, dsn, path) if dsn and backend == "postgresql" else harness.run(options, path)
    finally:
        if folder is not None and not keep:
            shutil.rmtree(folder, ignore_errors=True)
    if folder is not None and keep:
        click.echo(f"store kept: {path}", err=True)
    if report is None:
        _echo_json(result)
        return 0
    with open(report, "w", encoding="utf-8") as out:
        out.write(json.dumps(result, indent=2, sort_keys=True) + "\n")
    click.echo(backends.summary(result) if backend == "postgresql" else harness.summary(result), nl=False)
    click.echo(f"report: {report}", err=True)
    return 0


@cli.command("bench-fleet", short_help="The fleet figure: many actors on PostgreSQL.", epilog=_epilog(
    "cortex bench-fleet --dsn postgresql://cortex@127.0.0.1:5432/fleet",
    "cortex bench-fleet --dsn postgresql://cortex@127.0.0.1:5432/fleet --actors 100 --workers 1,2 --seconds 5"))
@click.option("--dsn", required=True, metavar="DSN", help="The PostgreSQL database (loaded once, reused).")
@click.option("--actors", type=click.IntRange(min=1), default=1000, show_default=True, help="Actors in the database.")
@click.option("--memories", type=click.IntRange(min=1), default=1000, show_default=True, help="Memories per actor.")
@click.option("--workers", default="1,2,4", show_default=True, help="Worker process counts to measure, comma-separated.")
@click.option("--seconds", type=click.FloatRange(min=0.1), default=20.0, show_default=True, help="Seconds per worker count.")
@click.option("--warm-actors", type=click.IntRange(min=0), default=0, show_default=True,
              help="Stores each worker keeps open (0: open one per task).")
@click.option("--report", type=click.Path(dir_okay=False, writable=True), help="Write the JSON report here.")
def bench_fleet(dsn: str, actors: int, memories: int, workers: str, seconds: float, warm_actors: int, report: str | None) -> int:
    """N worker processes compose contexts for random actors of a many-actor
    PostgreSQL database, concurrently: contexts per second and p50/p99, for each N."""
    from .bench import fleet

    try:
        counts = tuple(int(n) for n in workers.split(","))
    except ValueError:
        raise click.BadParameter(f"must be whole numbers separated by commas, got {workers!r}", param_hint="--workers") from None
    if not counts or min(counts) < 1:
        raise click.BadParameter("must name at least one count of 1 or more", param_hint="--workers")
    result = fleet.run_fleet(dsn, fleet.FleetOptions(actors=actors, memories=memories, workers=counts, seconds=seconds,
                                                     warm_actors=warm_actors))
    if report is not None:
        with open(report, "w", encoding="utf-8") as out:
            out.write(json.dumps(result, indent=2, sort_keys=True) + "\n")
    click.echo(fleet.summary(result), nl=False)
    return 0


# ---------------------------------------------------------------------------
# demo

DEMO_ACTOR = "agent-ops-1"
DEMO_VERB = "acquire"
DEMO_OBJECTS = {"service": "gpu_inference"}


def _demo_memories(now: datetime) -> tuple[list[Write], list[Write]]:
    """The demo agent's memories: who it is, its rules and goal, what it learned about
    GPU providers; and the outcomes of five GPU leases, oldest first."""
    gpu = (Frame(DEMO_VERB, "service", "gpu_inference"),)
    leases = [
        Write(Event(kind="intent_completed" if outcome != "failure" else "intent_failed", outcome=outcome,
                    counterparty="acme-cloud", cost=("USD", round(1.2 + i / 10, 2)), summary=f"GPU lease #{i + 1}"),
              frames=gpu, importance=3)
        for i, outcome in enumerate(("success", "failure", "success", "partial", "success"))
    ]
    knowledge = [
        Write(Identity(name=DEMO_ACTOR, did="did:example:ops1", roles=("operator",))),
        Write(Constraint(statement="never pay more than 2 USD per GPU hour", strength="hard", polarity="dont", source="user_declared")),
        Write(Goal(statement="keep the inference fleet under budget", status="active", success_criteria=("cost < 500 USD/month",))),
        Write(Constraint(statement="providers in the EU", strength="soft", polarity="prefer", source="learned"), frames=gpu),
        Write(Preference(topic="tone", polarity="prefer", strength=0.8, rationale="short answers"), frames=gpu, importance=6, tags=("style",)),
        Write(Fact(statement="A100 spot price is 1.40 USD/h", subject="acme-cloud", predicate="price", as_of=now - timedelta(days=30)),
              frames=gpu, importance=5),
        Write(Fact(statement="H100 on-demand is 3.10 USD/h", subject="nimbus", predicate="price", as_of=now - timedelta(days=12)),
              frames=gpu, importance=4),
        Write(Belief(statement="acme-cloud is reliable at night", stance="suspect", evidence_for=("3 clean runs",)), frames=gpu),
        Write(Capability(subject="acme-cloud", capability="serve llama-70b", verified=True), frames=gpu),
        Write(Pattern(statement="spot capacity is scarce on Mondays", strength=0.6, coverage=4), frames=gpu),
    ]
    return knowledge, leases


@cli.command(short_help="A small agent's store, explained.", epilog=_epilog("cortex demo", "cortex demo --store ./demo-store", "cortex demo --budget 400"))
@click.option("--store", type=click.Path(file_okay=False), help="Write the demo store here and keep it (default: a temporary one).")
@click.option("--keep", is_flag=True, help="Keep the temporary store and say where it is.")
@click.option("--budget", type=click.IntRange(min=1), default=200, show_default=True, help="Token budget of the demo's context() call.")
def demo(store: str | None, keep: bool, budget: int) -> int:
    """Write a small agent's memories and walk through one context() call: the
    agent, the task, the budget, the bundle and its tiers, one reachable memory
    resolved, and what to try next."""
    folder = None if store is not None else tempfile.mkdtemp(prefix="cortex-demo-")
    path = os.path.join(folder, "store") if folder is not None else str(store)
    try:
        _run_demo(path, budget, kept=folder is None or keep)
    finally:
        if folder is not None and not keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


def _run_demo(path: str, budget: int, *, kept: bool) -> None:
    say = click.echo
    with cortex.open(path, actor=DEMO_ACTOR) as c:
        if c.stats()["memories"] == 0:
            knowledge, leases = _demo_memories(datetime.now(timezone.utc))
            c.write_many(knowledge)
            for lease in leases:  # one at a time, as they happened: the newest is the last
                c.write_many([lease])
        bundle = c.context(verb=DEMO_VERB, objects=DEMO_OBJECTS, budget_tokens=budget, form="medium")
        best_left_out = c.resolve(bundle.reachable_uris[0]) if bundle.reachable_uris else None
        held = c.stats()["memories"]
    where = path if kept else f"{path}  (temporary: removed when the demo ends; keep it with --keep or --store DIR)"
    say(f"""cortex demo: an agent's memory, and one call that reads it

The agent is {DEMO_ACTOR}, an operations agent that rents GPU capacity for an
inference fleet. Its store holds {held} memories written as it worked: who it is,
a hard spending rule, its goal, prices it saw, a preference, a belief, a
provider's capability, a pattern it learned, and the outcomes of five GPU leases.

Store: {where}

Before its next GPU lease the agent asks for its context, within {budget} tokens:

    c.context(verb="{DEMO_VERB}", objects={json.dumps(DEMO_OBJECTS)}, budget_tokens={budget}, form="medium")

It gets the bundle below. The tiers, in the order printed:
  Pinned          always there: who the agent is, hard constraints, active goals
  Frame-relevant  memories filed under this verb and object, best first
  Outcomes        the newest results of this action on this object
  Reachable       what did not fit the budget: URIs to resolve() when needed
""")
    say(bundle.to_markdown())
    if best_left_out is not None:
        say("The best memory left out, resolved in full when the agent needs it:\n")
        say(f'    c.resolve("{best_left_out.uri}")')
        say("    " + best_left_out.form("full").replace("\n", "\n    ") + "\n")
    else:
        say(f"Nothing was left out at {budget} tokens; `cortex demo --budget 60` shows the Reachable tier at work.\n")
    target = path if kept else "./demo-store"
    say("Next, try:" if kept else "Next: keep a store to explore with `cortex demo --store ./demo-store`, then try:")
    for command in (
        f"cortex context {target} --verb {DEMO_VERB} --object service=gpu_inference --budget 3000",
        f"cortex find {target} --type Event --order-by -created --limit 5",
        f"cortex stats {target}",
    ):
        say(f"    {command}")


# ---------------------------------------------------------------------------
# Moving memory: export, import, import-hmx, export-fingerprint, import-fingerprint, migrate


@cli.command(short_help="Write the whole store as JSON Lines.", epilog=_epilog("cortex export ./store agent.jsonl"))
@_store_argument
@click.argument("file", type=click.Path(dir_okay=False, writable=True))
@_actor_option
@_json_option
def export(store: str, file: str, actor: str | None, as_json: bool) -> int:
    """Write every memory with every version, salience, learned weights, trusted keys,
    revocations, edges and the journal to FILE (a documented, versioned JSON Lines
    format). Runs beside a writer: it reads one consistent view."""
    with _open(store, actor) as c:
        counts = c.export_jsonl(file)
        root = c.root()
    if as_json:
        _echo_json({"file": file, "lines": counts, "root": root})
    else:
        click.echo(f"exported {counts['memory']} memories and {counts['journal']} journal entries to {file} (root {root})")
    return 0


@cli.command("import", short_help="Rebuild a store from an export.", epilog=_epilog(
    "cortex import ./new-store agent.jsonl", "cortex import ./new-store agent.jsonl --actor agent-ops-1"))
@_store_argument
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--actor", metavar="ACTOR", help="The actor (default: the export's).")
@_json_option
def import_(store: str, file: str, actor: str | None, as_json: bool) -> int:
    """Import FILE (from `cortex export`) into an empty store of the same actor,
    created when missing. The whole file is checked before anything is written; an
    interrupted import is completed by running it again."""
    with cortex.open(store, actor=actor or _export_actor(file)) as c:
        counts = c.import_jsonl(file)
        root = c.root()
    if as_json:
        _echo_json({"file": file, "lines": counts, "root": root})
    else:
        click.echo(f"imported {counts['memory']} memories and {counts['journal']} journal entries (root {root})")
    return 0


def _export_actor(file: str) -> str:
    """The actor named in an export's header line."""
    with open(file, encoding="utf-8") as handle:
        first = handle.readline()
    try:
        actor = json.loads(first).get("actor")
    except (ValueError, AttributeError):
        actor = None
    if not isinstance(actor, str):
        raise click.BadParameter("is not a cortex export (no header line naming its actor)", param_hint="FILE")
    return actor


@cli.command("import-hmx", short_help="Ingest HMX-1.0 events (JSON Lines).", epilog=_epilog("cortex import-hmx ./store events.jsonl"))
@_store_argument
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@_actor_option
@_json_option
def import_hmx(store: str, file: str, actor: str | None, as_json: bool) -> int:
    """Ingest a JSON Lines file of HMX-1.0 events as memories. Idempotent by
    event_id; one bad event writes nothing and names its line and field."""
    with _open(store, actor, write=True) as c:
        before = c.root()
        uris = c.ingest_hmx(file)
        changed = c.root() != before
    if as_json:
        _echo_json({"uris": uris, "changed": changed})
    else:
        click.echo(f"{len(uris)} event(s) in {file}, one memory each; "
                   + ("new ones written" if changed else "all already ingested: nothing written"))
    return 0


@cli.command("export-fingerprint", short_help="Print the store's HMX-1.0 fingerprint.", epilog=_epilog(
    "cortex export-fingerprint ./store > fingerprint.json", "cortex export-fingerprint ./store --tier compact"))
@_store_argument
@click.option("--tier", type=click.Choice(["full", "compact", "minimal"]), default="full", show_default=True,
              help="How much the fingerprint carries (each tier has a size limit).")
@_actor_option
def export_fingerprint(store: str, tier: str, actor: str | None) -> int:
    """Print the store's HMX-1.0 fingerprint envelope as JSON (deterministic)."""
    with _open(store, actor) as c:
        _echo_json(c.export_fingerprint(tier))
    return 0


@cli.command("import-fingerprint", short_help="Import an HMX-1.0 fingerprint envelope.", epilog=_epilog(
    "cortex import-fingerprint ./store fingerprint.json"))
@_store_argument
@click.argument("file", type=click.File("r", encoding="utf-8"), default="-")
@_actor_option
def import_fingerprint(store: str, file: TextIO, actor: str | None) -> int:
    """Import a fingerprint envelope (FILE, or standard input): both hashes are
    checked first; additive; the same fingerprint twice is a no-op."""
    text = file.read()
    with _open(store, actor, write=True) as c:
        written = c.import_fingerprint(text)
    click.echo(f"imported {written} {'memory' if written == 1 else 'memories'}")
    return 0


@cli.command(short_help="Copy a store to another backend.", epilog=_epilog(
    "cortex migrate ./store postgresql://cortex@db:5432/agents",
    "cortex migrate postgresql://cortex@db:5432/agents ./copy --actor agent-ops-1"))
@click.argument("src", metavar="SRC")
@click.argument("dst", metavar="DST")
@click.option("--actor", metavar="ACTOR", help="The actor (required when SRC is a PostgreSQL database).")
@_json_option
def migrate(src: str, dst: str, actor: str | None, as_json: bool) -> int:
    """Copy the store at SRC into the empty store at DST, between a RocksDB directory
    and a PostgreSQL database in either direction, streaming, and check the copy
    (same root, verify clean)."""
    with progress("copying keys", None) as advance:
        done = cortex.migrate(src, dst, actor=actor, progress=advance)
    if as_json:
        _echo_json({"actor": done.actor, "keys": done.keys, "root": done.root})
    else:
        click.echo(f"migrated {done.keys} keys of {done.actor}; root {done.root} checked")
    return 0


# ---------------------------------------------------------------------------
# Integrations: mcp


@cli.command(short_help="Serve the store to MCP hosts (stdio).", add_help_option=False,
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def mcp(args: tuple[str, ...]) -> int:
    """cortex mcp STORE [--actor A] [--read-only]: a Model Context Protocol server
    over stdio (needs the extra: pip install 'cortex[mcp]'). See --help."""
    try:
        from .integrations.mcp import main as serve
    except ImportError as exc:
        raise click.UsageError(f"the MCP server needs the mcp extra: pip install 'cortex[mcp]' ({exc})") from None
    return serve(list(args))


# ---------------------------------------------------------------------------
# Entry point


def _one_line(text: str) -> str:
    return " ".join(text.split())


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
        click.echo(f"cortex: {type(exc).__name__}: {_one_line(str(exc))}", err=True)
        return 2
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    sys.exit(main())
