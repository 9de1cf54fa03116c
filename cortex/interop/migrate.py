"""`migrate()`: copy one actor's store to another backend, byte for byte, and check it.

    cortex.migrate("agent-store", "postgresql://cortex@db:5432/fleet")       # RocksDB -> PostgreSQL
    cortex.migrate("postgresql://cortex@db:5432/fleet", "copy", actor="a1")  # and back

Keys and values are the same bytes on every backend (`cortex.records`), so a
migration copies every stored key as it is, derived keys included: nothing is decoded
or recomputed, and the copy answers every read exactly as the source does. (Packed
frames, `cortex.index.packs`, are the one exception: a backend that keeps none, as
PostgreSQL, gets the entries they copy and not the packs.)

How it runs:

1. The source is opened as a reader (`mode="r"`: it may run beside the source's
   writer) and everything is read inside one view of it, so the copy is one committed
   state even while that writer goes on writing (a RocksDB follower stays at its
   last catch-up; PostgreSQL reads one REPEATABLE READ transaction).
2. The destination is opened as the writer and must be empty (no key besides the
   settings `open()` writes). Keys are written in batches of `BATCH_KEYS`, prefix by
   prefix, in key order: memory use is one batch, whatever the store's size.
3. The journal head (`meta/journal`), which carries `root()`, goes in the last
   batch. Until then `meta/import` names the source's root: `verify()` reports the
   unfinished copy, `root()` is still the empty store's, and running the same
   migration again (the source at the same root) completes it (every put is
   idempotent).
4. The destination is opened afresh and must have the source's root and a clean
   `verify()`; otherwise `StoreError` says what differs.

The actor: a RocksDB store knows its own; a PostgreSQL database holds many, so a
migration from one needs `actor`. The destination gets the same actor.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from .. import upkeep
from ..engine import Engine, Options, stored_actor
from ..index import packs
from ..index.lexical import META_LEXICAL
from ..errors import StoreError, ValidationError
from ..records import (
    ALL_PREFIXES,
    META_ACTOR,
    META_CACHE_EPOCH,
    META_IMPORT,
    META_JOURNAL,
    META_JOURNAL_FORMAT,
    META_SCHEMA,
    META_STORE_ID,
    META_TOKENIZER,
    JournalHead,
)
from ..storage import is_dsn

BATCH_KEYS = 5_000  # keys per write batch: one PostgreSQL transaction, or one RocksDB WriteBatch
# What open() writes into a new store. The store id is copied over the new store's:
# a migration moves a store, so the scopes granted for it keep working (an export
# and import makes a new store, with an id of its own).
_SETTINGS = frozenset({META_ACTOR, META_SCHEMA, META_TOKENIZER, META_CACHE_EPOCH, META_JOURNAL_FORMAT, META_LEXICAL, META_STORE_ID})
# Copied last, in the batch that ends the copy (the import marker is the copy's own):
# every batch before it moves the destination's cache epoch (`Engine.write`). The
# journal format is the source's (absent in a store of format 1), whatever the new
# destination was made in.
_LAST = frozenset({META_JOURNAL, META_IMPORT, META_CACHE_EPOCH, META_JOURNAL_FORMAT})
_MARKER = b"migrate "  # + the source's root in hex: the value of meta/import while a migration runs

Progress = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class Migration:
    """What `migrate()` copied: the actor, the number of keys and the root (hex)."""

    actor: str
    keys: int
    root: str


def migrate(src: str | os.PathLike[str], dst: str | os.PathLike[str], *, actor: str | None = None,
            progress: Progress | None = None) -> Migration:
    """Copy the store at `src` (a RocksDB directory or a PostgreSQL DSN) into the empty
    store at `dst` (either kind); see the module docstring. `actor` names the store
    (needed when `src` is a PostgreSQL DSN; checked against a RocksDB store's own).
    `progress(n)` is called after each batch with the number of keys it wrote."""
    source = _location("src", src)
    target = _location("dst", dst)
    if progress is not None and not callable(progress):
        raise ValidationError("progress", "must be a callable taking the number of keys written", progress)
    if actor is None:
        if is_dsn(source):
            raise ValidationError("actor", "must be given: a PostgreSQL database holds many actors", actor)
        actor = stored_actor(source)
    if _same(source, target):
        raise ValidationError("dst", "must be another store than src", target)
    reader = Engine.open(Options(location=source, actor=actor, mode="r", cache_mb=64))
    try:
        if reader.storage.get(META_IMPORT) is not None:
            raise ValidationError("src", "holds an unfinished import or migration: complete it first", source)
        writer = Engine.open(Options(location=target, actor=actor, mode="rw", cache_mb=64))
        try:
            keys, root = reader.read(lambda: _copy(reader, writer, progress))
        finally:
            writer.close()
    finally:
        reader.close()
    _check(target, actor, root)
    return Migration(actor=actor, keys=keys, root=root.hex())


def _location(field: str, value: object) -> str:
    if not isinstance(value, (str, os.PathLike)) or not isinstance(os.fspath(value), str) or not os.fspath(value):
        raise ValidationError(field, "must be a directory path or a postgresql:// connection string", value)
    text: str = os.fspath(value)
    return text


def _same(a: str, b: str) -> bool:
    if is_dsn(a) or is_dsn(b):
        return a == b
    return os.path.realpath(a) == os.path.realpath(b)


def _copy(reader: Engine, writer: Engine, progress: Progress | None) -> tuple[int, bytes]:
    """Every key of the reader's view into the (empty) writer; returns the number of
    keys and the root copied. Runs inside the reader's view."""
    head, _ = reader.view_state()
    marker = _MARKER + head.root.hex().encode()
    with writer.lock.write():
        _check_empty(writer, marker)
        batch: dict[bytes, bytes | None] = {META_IMPORT: marker}
        copied = 0

        def flush() -> None:
            nonlocal copied
            writer.write(batch)
            written = sum(1 for key in batch if key != META_IMPORT)
            copied += written
            batch.clear()
            if progress is not None:
                progress(written)

        for prefix in sorted(ALL_PREFIXES):
            for key, value in reader.storage.scan_items(prefix):
                if key in _LAST or (writer.packs is None and key.startswith(packs.PREFIX)):
                    continue
                batch[key] = value
                if len(batch) >= BATCH_KEYS:
                    flush()
        last = {key: reader.storage.get(key) for key in (META_JOURNAL, META_CACHE_EPOCH)}
        batch.update({key: value for key, value in last.items() if value is not None})
        batch[META_JOURNAL_FORMAT] = reader.storage.get(META_JOURNAL_FORMAT)
        # A source made before the lexical index has none to copy: the copy's open
        # (`_check`) builds it once the store's own marker is gone.
        if reader.storage.get(META_LEXICAL) is None:
            batch[META_LEXICAL] = None
        batch[META_IMPORT] = None
        flush()
    return copied, JournalHead.decode(last[META_JOURNAL]).root


def _check_empty(writer: Engine, marker: bytes) -> None:
    """Refuse a destination that holds anything but the settings of a new store,
    unless what it holds is an unfinished migration of the same source state."""
    if writer.storage.get(META_IMPORT) == marker:
        return
    for prefix in sorted(ALL_PREFIXES):
        for key, _ in writer.storage.scan_items(prefix):
            if key not in _SETTINGS:
                raise ValidationError("dst", "must be an empty store (it holds memories or records): "
                                      "migrate into a new store", writer.location)


def _check(target: str, actor: str, root: bytes) -> None:
    """Open the copy afresh: it must have the source's root and verify clean."""
    copy = Engine.open(Options(location=target, actor=actor, mode="rw", cache_mb=64))
    try:
        got = copy.journal.root
        if got != root:
            raise StoreError(f"migrate: {target} has root {got.hex()} after the copy, not the source's {root.hex()}")
        problems = upkeep.verify(copy)
    finally:
        copy.close()
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise StoreError(f"migrate: the copy at {target} does not verify clean ({len(problems)} problems: {shown}); "
                         "the source's own damage is copied as it is: run verify() on the source")
