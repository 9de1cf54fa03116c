"""Read commands: context, resolve, find, stats, verify. Each opens the store with
`mode="r"`, so it runs beside a process writing to it."""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import click

import cortex
from cortex.context import Form
from cortex.facade import Order
from cortex.interop import hmx_pack

from .recall import print_synthesized
from ._common import (DEFAULT_FIND_LIMIT, FORMS, MAX_LIST, OBJECT, TIERS, TYPE, VERB, _actor_option, _bullet, _echo_json, _epilog,
                      _is_dsn, _json_option, _open, _parse_time, _report_problems, _store_argument, cli)


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
    "cortex context ./store --query \"deploy payments to staging\" --format hmx --budget 1500",
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
@click.option("--query", help="Recall by content instead of a task's frames: the HMX pack of the pinned tier and the "
                              "memories most relevant to this text, within --budget (needs --format hmx; docs/recall.md).")
@_actor_option
@_json_option
def context(store: str, verb: str | None, objects: tuple[str, ...], budget: int, form: str, tiers: tuple[str, ...],
            outcome_limit: int, now: str | None, fmt: str, intent: str | None, query_context: str | None,
            query: str | None, actor: str | None, as_json: bool) -> int:
    """Print the context bundle for a task: the memories that matter for VERB on the
    objects, ranked by salience and trimmed to the token budget.

    \b
    Tiers, in the order printed:
      Pinned          always there: identities, hard constraints, active goals
      Frame-relevant  memories filed under the verb and an object
      Outcomes        the newest outcomes (Events) of the verb on the objects
      Reachable       what did not fit the budget: URIs to resolve later
    """
    if query is not None:
        return print_synthesized(store, actor, query, budget, fmt, _parse_time(now, "--now"), {
            "--verb": verb is not None, "--object": bool(objects), "--tier": bool(tiers), "--json": as_json,
            "--query-context": query_context is not None})
    if as_json and fmt not in ("markdown", "json"):
        raise click.BadParameter(f"--json and --format {fmt} disagree; give one", param_hint="--json")
    fmt = "json" if as_json else fmt
    if query_context is not None and fmt != "hmx":
        raise click.BadParameter(f"is used by --format hmx only (the format is {fmt})", param_hint="--query-context")
    if intent is not None and fmt != "contextpack":
        raise click.BadParameter(f"is used by --format contextpack only (the format is {fmt})", param_hint="--intent")
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


@cli.command(short_help="One memory, by URI, id or natural key.", epilog=_epilog(
    "cortex resolve ./store cortex://Fact/01J...#1", "cortex resolve ./store 01J... --form short --json",
    "cortex resolve ./store key:Identity/self"))
@_store_argument
@click.argument("ref", metavar="URI|ID|key:TYPE/KEY")
@click.option("--form", type=click.Choice(FORMS), default="full", show_default=True, help="How to render the memory.")
@_actor_option
@_json_option
def resolve(store: str, ref: str, form: str, actor: str | None, as_json: bool) -> int:
    """Print one memory: the version a URI names (old versions and tombstoned
    memories too), or the current version of an id, of a URI without #version or of
    a natural key (key:TYPE/KEY, as written with "key" in the memory JSON)."""
    with _open(store, actor) as c:
        memory = c.resolve(ref)
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


@cli.command(short_help="A bounded query by type, tags or content.", epilog=_epilog(
    "cortex find ./store --type Goal --where '[\"eq\", \"status\", \"active\"]'",
    "cortex find ./store --near \"which database does billing use\" --budget 500",
    "cortex find ./store --tag style --where '{\"polarity\": \"prefer\"}' --budget 800 --form short",
    "cortex find ./store --type Fact --where '[\"gte\", \"as_of\", \"2025-01-01T00:00:00Z\"]' --json",
))
@_store_argument
@click.option("--type", "type_", type=TYPE, help="A memory type (see Memory types below).")
@click.option("--tag", "tags", multiple=True, help="A tag, repeatable (memories with every tag).")
@click.option("--near", help="Recall by content: rank by relevance to this text (docs/recall.md); no type or tag needed.")
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
def find(store: str, type_: str | None, tags: tuple[str, ...], near: str | None, where: str | None, order_by: str,
         limit: int | None, budget: int | None, form: str, include_tombstoned: bool, late_binding: bool, actor: str | None,
         as_json: bool) -> int:
    """A bounded query over one memory type and/or a set of tags; with --near, the
    memories most relevant to a text (with --json, each with its "relevance")."""
    if limit is None and budget is None:
        limit = DEFAULT_FIND_LIMIT
    with _open(store, actor, write=late_binding) as c:
        found = c.find(type=type_, tags=list(tags), where=_where(where), order_by=typing.cast(Order, order_by), limit=limit,
                       budget_tokens=budget, form=typing.cast(Form, form), include_tombstoned=include_tombstoned,
                       late_binding=late_binding, near=near)
        rendered = [m.form(form) for m in found]
    if as_json:
        relevance = getattr(found, "relevance", None)
        _echo_json([m.to_dict() if relevance is None else {**m.to_dict(), "relevance": relevance[m.id]} for m in found])
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
    line per problem; exit 1 when there is any. A store of journal format 1 is said
    to be one (its root does not commit to content: docs/trust.md)."""
    with _open(store, actor) as c:
        problems = c.verify()
        old = c.stats()["journal_format"] == 1
    summary = f"{len(problems)} problem(s)" + ("; journal format 1: the root does not commit to content (docs/trust.md)" if old else "")
    return _report_problems(problems, as_json, "problems", summary)


@cli.command("list", short_help="The newest memories, bounded, with filters.", epilog=_epilog(
    "cortex list ./store", "cortex list ./store --type Fact --limit 50", "cortex list ./store --tag pricing --include-tombstoned --json"))
@_store_argument
@click.option("--type", "types", type=TYPE, multiple=True, help="Only this type (repeatable; default: every type).")
@click.option("--tag", "tags", multiple=True, help="Only memories with this tag (repeatable: with every one).")
@click.option("--limit", type=click.IntRange(min=1, max=MAX_LIST), default=DEFAULT_FIND_LIMIT, show_default=True,
              help=f"At most this many (at most {MAX_LIST}).")
@click.option("--form", type=click.Choice(FORMS), default="short", show_default=True, help="How each memory is rendered.")
@click.option("--include-tombstoned", is_flag=True, help="Tombstoned memories too.")
@_actor_option
@_json_option
def list_(store: str, types: tuple[str, ...], tags: tuple[str, ...], limit: int, form: str, include_tombstoned: bool,
          actor: str | None, as_json: bool) -> int:
    """The newest memories first (ties by id), at most --limit: of every type, or of
    the given types and tags. One line each: `- <uri> — <text>`."""
    names = list(types) or [m.type_name for m in cortex.MemoryType]
    with _open(store, actor) as c:
        found: list[cortex.Memory] = []
        for name in dict.fromkeys(names):  # each type's newest, then the newest of all of them
            found += c.find(type=name, tags=list(tags), order_by="-created", limit=limit, include_tombstoned=include_tombstoned)
        found.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        found = found[:limit]
        rendered = [m.form(form) for m in found]
    if as_json:
        _echo_json([m.to_dict() for m in found])
    else:
        for memory, text in zip(found, rendered):
            click.echo(_bullet(memory.uri, text))
        if not found:
            click.echo("(no memories)")
    return 0


@cli.command(short_help="The frames that hold memories, with counts.", epilog=_epilog("cortex frames ./store", "cortex frames ./store --json"))
@_store_argument
@_actor_option
@_json_option
def frames(store: str, actor: str | None, as_json: bool) -> int:
    """Every frame (verb, object kind, ref) that live memories are filed under, with
    how many, most first (ties by name): the verbs and objects `context` can be
    asked for. Reads every memory once."""
    counts: dict[tuple[str, str, str], int] = {}
    with _open(store, actor) as c:
        for memory in c.memories():
            for f in memory.frames:
                key = (f.verb.name.lower(), f.kind.name.lower(), f.ref)
                counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if as_json:
        _echo_json([{"verb": v, "kind": k, "ref": r, "memories": n} for (v, k, r), n in ranked])
    else:
        for (verb, kind, ref), count in ranked:
            click.echo(f"{count:>7}  {verb} {kind}={ref}")
        if not ranked:
            click.echo("(no memory is filed under a frame)")
    return 0


@cli.command(short_help="The actors of a PostgreSQL database.", epilog=_epilog("cortex actors postgresql://cortex@db:5432/agents"))
@click.argument("dsn", metavar="DSN")
@_json_option
def actors(dsn: str, as_json: bool) -> int:
    """The actors whose stores a PostgreSQL database holds, A to Z (a RocksDB
    folder holds one: `cortex stats` names it)."""
    if not _is_dsn(dsn):
        raise click.BadParameter(f"{dsn!r} is not a PostgreSQL connection string; a folder's store has one actor "
                                 "(cortex stats names it)", param_hint="DSN")
    names = cortex.list_actors(dsn)
    if as_json:
        _echo_json(names)
    else:
        for name in names:
            click.echo(name)
        if not names:
            click.echo("(no stores)")
    return 0
