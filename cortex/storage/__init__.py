"""The storage protocol: what the engine needs of an ordered key-value store.

The engine (`cortex.engine`) talks to storage only through `Storage`. Keys and
values are the same bytes on every backend (`cortex.records` defines them); a
backend only decides where they live. Two implement it:

* `cortex.storage.rocksdb`: a RocksDB directory (the embedded default), one writer
  process by RocksDB's lock, readers in other processes as secondary instances.
* `cortex.storage.postgres`: a PostgreSQL table shared by many actors (fleets).

What a backend promises, stated once here:

* `write()` applies all of a batch or none of it, and is durable when it returns
  (as durable as the backend is configured to be).
* Scans return keys in byte order, bounded to their prefix; a scan that stops on a
  damaged block raises `CorruptRecord` instead of ending early.
* Inside one `view()` block every read sees one committed state. (On RocksDB a
  handle's own writes are kept out by the engine's readers-writer lock, and a
  follower's state moves only on `catch_up()`; PostgreSQL runs the block as one
  read-only REPEATABLE READ transaction.)
* A writable storage owns the store: opening a second writer anywhere raises
  `StoreLocked`, and a writer that lost ownership cannot commit.
* Failures raise `StoreError` (or `CorruptRecord` naming the key for damage).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

# Values of a batch: bytes to put, None to delete.
Batch = Mapping[bytes, "bytes | None"]


@dataclass(frozen=True, slots=True)
class Reads:
    """The reads a view is about to make (`Storage.prefetch`): `gets`, point reads;
    `scans`, every value under each prefix (`scan_values`); `newest`, (prefix, n): the
    first n items of a backward scan of each prefix (`scan_items_backward`); and
    `joined`, (key prefix, width, at most): the keys `key prefix + value[:width]` of
    every value those scans return, when they return at most that many (the heads
    the index entries name, which `multi_get` then asks for)."""

    gets: tuple[bytes, ...] = ()
    scans: tuple[bytes, ...] = ()
    newest: tuple[tuple[bytes, int], ...] = ()
    joined: tuple[bytes, int, int] | None = None


class ViewMoved(Exception):
    """A view found the store changed between two of its reads (a backend that reads
    a view's first statement outside a transaction checks each later one against
    it): nothing read in it may be used, the call starts again (`Engine.read`)."""


class Storage(Protocol):
    """An ordered key-value store of bytes, as the engine uses it."""

    location: str  # what the user opened: a directory or a DSN (without password)
    read_only: bool  # a follower: writes are refused by the engine before they get here
    # True when reads see the latest commit without catch_up() (PostgreSQL): a
    # follower engine then reads the journal head inside each view instead of
    # keeping it from its last catch-up.
    live_reads: bool

    def get(self, key: bytes) -> bytes | None:
        """The value under `key`, or None."""
        ...

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """Values of many keys, in the order given (None where absent)."""
        ...

    def write(self, puts: Batch) -> None:
        """Apply puts and deletes (value None) atomically."""
        ...

    def scan_values(self, prefix: bytes, key_of: Callable[[bytes], bytes] | None = None) -> list[bytes]:
        """Values of every key with `prefix`, in key order. `key_of(value)` gives the
        key a value is stored under when the value says so (index values do); a
        backend may use it to check where a scan ended without reading keys."""
        ...

    def scan_items(self, prefix: bytes, start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of every key with `prefix` (from `start`, if given), in key order."""
        ...

    def scan_items_backward(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of every key with `prefix`, last key first."""
        ...

    def last_key(self, prefix: bytes) -> bytes | None:
        """The greatest key with `prefix`, or None."""
        ...

    def view(self) -> AbstractContextManager[None]:
        """A block in which every read sees one committed state."""
        ...

    def prefetch(self, reads: Reads) -> None:
        """(Inside a `view()`, before its first read) the reads the block is about to
        make. A backend that can make them in one round trip does, and serves the
        block's reads from what it fetched; the others do nothing. The block's reads
        return the same either way."""
        ...

    def writer_moved(self) -> bool:
        """(Followers) whether the writer may have committed since the last catch-up;
        cheap. A backend whose reads always see the latest commit returns False."""
        ...

    def catch_up(self, reopen: bool = False) -> bool:
        """(Followers) move the view to the writer's latest commit; `reopen` asks for
        a fresh view from scratch where the backend distinguishes the two. False
        when the view may be torn (the writer kept changing its files throughout):
        the engine then keeps nothing it builds on that view past the next one."""
        ...

    def compact(self) -> int:
        """(Writers) merge the files that each read would otherwise look through one
        by one, and return when they are merged; `optimize()` calls it last. Returns
        how many it merged (RocksDB: its level-0 files; PostgreSQL keeps one B-tree,
        which its own autovacuum tends, and merges none). Reads and writes may go on
        meanwhile."""
        ...

    def lag(self) -> float | None:
        """(Readers) seconds that what this storage reads is behind its source, as the
        server reports it (a PostgreSQL hot standby: how old the last commit it
        replayed is, while it has received more than it replayed; 0.0 when it has
        replayed everything or is the primary). None where the backend cannot tell."""
        ...

    def purge(self) -> None:
        """(Writers) make deleted values leave the store's files, after an erasure
        (`cortex.erasure`): RocksDB flushes and compacts its whole key range down to
        the last level, PostgreSQL vacuums the table. Slow on a large store."""
        ...

    def close(self) -> None:
        """Release the store (its lock or lease, files, connections). Idempotent."""
        ...


def scan_keys(storage: Storage, prefix: bytes) -> Iterator[bytes]:
    """Every key with `prefix`, in key order."""
    for key, _ in storage.scan_items(prefix):
        yield key


def is_dsn(location: str) -> bool:
    """Whether `cortex.open()` was given a PostgreSQL connection string."""
    return location.startswith(("postgresql://", "postgres://"))
