"""Moving memory: export, import, import-hmx, export-fingerprint, import-fingerprint,
migrate."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import click

import cortex

from ..bench.progress import progress
from ._common import _removed_on_failure, _actor_option, _echo_json, _epilog, _json_option, _open, _store_argument, cli
from .scopes import _read_hex

# A key file holds an Ed25519 private key as 64 hexadecimal digits (`cortex trust --new-key`).
_SIGN_WITH = click.option("--sign-with", "sign_with", type=click.Path(exists=True, dir_okay=False), metavar="KEYFILE",
                          help="Sign it with this Ed25519 private key (a `cortex trust --new-key` file; docs/trust.md).")

@cli.command(short_help="Write the whole store as JSON Lines.", epilog=_epilog("cortex export ./store agent.jsonl",
                                                                              "cortex export ./store - | gzip > agent.jsonl.gz"))
@_store_argument
@click.argument("file", type=click.Path(dir_okay=False, writable=True, allow_dash=True))
@_SIGN_WITH
@_actor_option
@_json_option
def export(store: str, file: str, sign_with: str | None, actor: str | None, as_json: bool) -> int:
    """Write every memory with every version, salience, learned weights, trusted keys,
    revocations, edges and the journal to FILE (a documented, versioned JSON Lines
    format), or to standard output for `-` (the summary then goes to standard
    error). Runs beside a writer: it reads one consistent view."""
    key = None if sign_with is None else _read_hex(sign_with, "private key", "--sign-with")
    with _open(store, actor) as c:
        counts = _export_to_stdout(c, key) if file == "-" else c.export_jsonl(file, sign_with=key)
        root = c.root()
    summary = {"file": file, "lines": counts, "root": root}
    if file == "-":
        click.echo(json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False) if as_json else
                   f"exported {counts['memory']} memories and {counts['journal']} journal entries to - (root {root})", err=True)
    elif as_json:
        _echo_json(summary)
    else:
        click.echo(f"exported {counts['memory']} memories and {counts['journal']} journal entries to {file} (root {root})")
    return 0


def _export_to_stdout(c: cortex.Cortex, key: bytes | None) -> dict[str, int]:
    """`export STORE -`: the export is made whole in a private temporary folder (the
    export writes a file and renames it when complete), then copied to standard
    output, so a reader of the pipe never sees a partial export followed by an error."""
    with tempfile.TemporaryDirectory(prefix="cortex-export-") as folder:
        path = os.path.join(folder, "export.jsonl")
        counts = c.export_jsonl(path, sign_with=key)
        stdout = sys.stdout.buffer
        with Path(path).open("rb") as source:
            while chunk := source.read(1 << 20):
                stdout.write(chunk)
        stdout.flush()
    return counts


@cli.command("import", short_help="Rebuild a store from an export.", epilog=_epilog(
    "cortex import ./new-store agent.jsonl", "cortex import ./new-store agent.jsonl --actor agent-ops-1"))
@_store_argument
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--actor", metavar="ACTOR", help="The actor (default: the export's).")
@click.option("--trust-records", is_flag=True, help="Also import the export's trusted keys and revocations (refused otherwise).")
@click.option("--signed-by", "signed_by", multiple=True, metavar="HEX",
              help="Require a signature by this Ed25519 public key (64 hexadecimal digits; repeat for several).")
@_json_option
def import_(store: str, file: str, actor: str | None, trust_records: bool, signed_by: tuple[str, ...], as_json: bool) -> int:
    """Import FILE (from `cortex export`) into an empty store of the same actor,
    created when missing. The whole file is checked before anything is written; an
    interrupted import is completed by running it again. An import that fails
    leaves no new store behind. A FILE that is not a regular file (a pipe) is read
    once, into a private temporary file."""
    keys = [_hex_key(text) for text in signed_by] or None
    with _regular(file) as path:
        exported = _export_actor(path)
        if actor is not None and actor != exported:
            raise cortex.ImportRefused("--actor", f"is {actor!r} but {file} is an export of {exported!r}: "
                                       "an import keeps its actor (leave --actor out)", actor)
        with _removed_on_failure(store), cortex.open(store, actor=exported) as c:
            counts = c.import_jsonl(path, trust_records=trust_records, signed_by=keys)
            root = c.root()
    if as_json:
        _echo_json({"file": file, "lines": counts, "root": root})
    else:
        click.echo(f"imported {counts['memory']} memories and {counts['journal']} journal entries (root {root})")
    return 0


def _hex_key(text: str) -> bytes:
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise click.BadParameter(f"{text!r} is not an Ed25519 public key (64 hexadecimal digits)", param_hint="--signed-by")
    return raw


@contextlib.contextmanager
def _regular(file: str) -> Iterator[str]:
    """`file` itself when it is a regular file, else (a pipe, a device) a private
    copy of what it serves, read once: the import reads its header for the actor
    and then the whole file."""
    if os.path.isfile(file):
        yield file
        return
    with tempfile.TemporaryDirectory(prefix="cortex-import-") as folder:
        copy = os.path.join(folder, "import.jsonl")
        with open(file, "rb") as source, open(copy, "wb") as out:
            while chunk := source.read(1 << 20):
                out.write(chunk)
        yield copy


def _export_actor(file: str) -> str:
    """The actor named in an export's header line."""
    with open(file, encoding="utf-8") as handle:
        first = handle.readline(1 << 20)
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
@_SIGN_WITH
@_actor_option
def export_fingerprint(store: str, tier: str, sign_with: str | None, actor: str | None) -> int:
    """Print the store's HMX-1.0 fingerprint envelope as JSON (deterministic). A
    store that trusts the signing key imports it as it is; unsigned, it is imported
    as untrusted (docs/trust.md)."""
    key = None if sign_with is None else _read_hex(sign_with, "private key", "--sign-with")
    with _open(store, actor) as c:
        _echo_json(c.export_fingerprint(tier, sign_with=key))
    return 0


@cli.command("import-fingerprint", short_help="Import an HMX-1.0 fingerprint envelope.", epilog=_epilog(
    "cortex import-fingerprint ./store fingerprint.json"))
@_store_argument
@click.argument("file", type=click.File("r", encoding="utf-8"), default="-")
@_actor_option
def import_fingerprint(store: str, file: TextIO, actor: str | None) -> int:
    """Import a fingerprint envelope (FILE, or standard input): both hashes are
    checked first; additive; the same fingerprint twice is a no-op. Says how many
    memories were written in all, by type: the artifacts, and the Event that
    records the import."""
    text = file.read()
    with _open(store, actor, write=True) as c:
        before = c.stats()["by_type"]
        artifacts = c.import_fingerprint(text)
        after = c.stats()["by_type"]
    added = {name: after.get(name, 0) - before.get(name, 0) for name in after if after.get(name, 0) != before.get(name, 0)}
    total = sum(added.values())
    if total == 0:
        click.echo("nothing written: this fingerprint was imported before")
        return 0
    by_type = ", ".join(f"{name} {count}" for name, count in added.items())
    click.echo(f"imported {artifacts} {'artifact' if artifacts == 1 else 'artifacts'}: {total} "
               f"{'memory' if total == 1 else 'memories'} written ({by_type}; an Event records the import)")
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
