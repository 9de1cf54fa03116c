"""Commands of a store's life: init, write, attest, tombstone, erase, rebuild, optimize."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TextIO

import click

import cortex
from cortex import Write
from cortex.interop.memory_json import memory_from_json

from ..bench.progress import progress
from ._common import WRITE_BATCH, _actor, _actor_option, _epilog, _is_dsn, _json_option, _open, _report_problems, _store_argument, _echo_json, cli



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
    with _open(store, owner, write=True) as c:
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
            raise cortex.ValidationError("input", f"is neither JSON nor JSON Lines: {_where_json_failed(document, exc, number)}") from None
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


def _where_json_failed(document: str, exc: json.JSONDecodeError, first_line: int) -> str:
    """`msg at line L, column C` of a JSON error, lines counted from `first_line`;
    an error past the last character (an unterminated object) is placed there, not
    on the empty line after a trailing newline."""
    end = len(document.rstrip())
    if exc.pos < end:
        return f"{exc.msg} at line {exc.lineno + first_line - 1}, column {exc.colno}"
    body = document[:end]
    line = body.count("\n") + first_line
    column = end - body.rfind("\n")
    return f"it ends before the JSON does ({exc.msg}) at line {line}, column {column}"


def _memory(obj: object, where: str) -> Write:
    """`memory_from_json(obj)`, its error's field prefixed with `where` (a line or item)."""
    try:
        return memory_from_json(obj)
    except cortex.ValidationError as exc:
        if not where:
            raise
        raise type(exc)(f"{where}: {exc.field}", exc.rule, exc.value) from None


@cli.command(short_help="Write a new version of a memory.", epilog=_epilog(
    "cortex update ./store key:Fact/acme/a100-spot data.json",
    """echo '{"statement": "A100 spot is 1.55 USD/h", "subject": "acme", "predicate": "price"}' | cortex update ./store cortex://Fact/01J...#1"""))
@_store_argument
@click.argument("ref", metavar="URI|ID|key:TYPE/KEY")
@click.argument("file", type=click.File("r", encoding="utf-8"), default="-")
@_actor_option
def update(store: str, ref: str, file: TextIO, actor: str | None) -> int:
    """Write a new version of a memory (same id and type) whose data is the JSON
    object in FILE (or standard input): the data fields only, as in the "data" of
    the memory JSON. Prints the new version's URI."""
    text = file.read()
    owner = _actor(store, actor)
    with cortex.open(store, actor=owner, mode="r") as reader:  # the memory's type, to read the data as
        memory = reader.resolve(ref)
    try:
        fields = json.loads(text)
    except json.JSONDecodeError as exc:
        raise cortex.ValidationError("data", f"is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    data = memory_from_json({"type": memory.type.type_name, "data": fields}).data
    with _open(store, owner, write=True) as c:
        click.echo(c.update(memory.uri, data))
    return 0


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


@cli.command(short_help="Remove a memory's content for good.", epilog=_epilog(
    'cortex erase ./store cortex://Fact/01J...#1 --reason "the user asked to forget their card"'))
@_store_argument
@click.argument("uri")
@click.option("--reason", required=True, help="Why (kept in the journal with who and when).")
@_actor_option
def erase(store: str, uri: str, reason: str, actor: str | None) -> int:
    """Erase a memory: the content of every version leaves the store and its files;
    the journal keeps who, when, why and the hashes of what was erased (docs/trust.md)."""
    with _open(store, actor, write=True) as c:
        c.erase(uri, reason)
    click.echo(f"erased {uri}")
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
