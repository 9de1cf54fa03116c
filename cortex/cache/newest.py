"""The newest entries under each outcomes-tier prefix a handle has read, kept in step
with every write of the handle.

The outcomes tier reads each (verb, ref) prefix of `idx/actor_obj/` backwards until
it has `outcome_limit` live Events, usually a handful of entries. The reading cost
little, the seek into every sorted run of the store that starts it did not: 6–25 µs
warm and 45–110 µs after other work had taken the CPU's caches (1M memories,
fourteenth pass of the hot-frames issue). `NewestEvents` keeps, per prefix, the
entries a call read, newest first, so the next call on the same prefix reads them
from memory and goes to storage only for entries past them.

The invariant, stated once: a cached prefix holds the first entries of a backward
scan of the prefix in the handle's current view, as (created, value) pairs in scan
order, and `complete` is true only when they are all of its entries.

* The writer keeps it by passing every batch it writes through `observe()`, which
  drops each prefix the batch puts or deletes a key under (`Engine.write` is the
  only way a batch reaches storage).
* A follower's view moves only in `Engine.refresh()`, which drops the cache: a new
  Event may sort anywhere under its prefix, since the key orders by creation time.
* Backends whose reads see other processes' commits without a refresh (PostgreSQL)
  get no cache: the engine does not make one for them.

Readers share a handle, so a call never changes a cached list: what it read past
one is kept as a new list (`_keep`), the longer of the two when calls race, both
being heads of the same scan. Calls hold the engine's read lock while they keep
what they read, and writes and catch-ups wait for it, so nothing read in one view
is kept into the next.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Mapping
from itertools import islice

from ..storage import Storage
from ..index import actor_obj
from .lru import SizedLru

# An entry key is its prefix (namespace, verb, 16-byte ref hash), a creation time and an id.
PREFIX_SIZE = len(actor_obj.PREFIX) + 1 + 16
# A prefix whose calls read more entries than this is not kept (a call reads past
# the newest `outcome_limit` only over expired, pinned, superseded or out-of-scope ones).
MAX_KEPT = 256
# At most this many entries over every prefix (about 150 bytes each with their
# pair and list slot: 20 MB), the least recently used prefix dropped first.
MAX_ENTRIES = 131_072

Item = tuple[int, bytes]


class _Kept:
    __slots__ = ("items", "complete")

    def __init__(self, items: list[Item], complete: bool) -> None:
        self.items = items  # never changed once kept (readers may be iterating it)
        self.complete = complete


class NewestEvents:
    """The newest entries of outcomes-tier prefixes (see the module docstring)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._kept: SizedLru[bytes, _Kept] = SizedLru(max_entries)  # each counted at its entries
        self._lock = threading.Lock()
        # Entries read from storage through `newest()` over the handle's life.
        self.entries_read = 0

    def __len__(self) -> int:
        return len(self._kept)

    def prefixes(self) -> list[bytes]:
        with self._lock:
            return sorted(self._kept)

    def cached(self, prefix: bytes) -> tuple[list[Item], bool] | None:
        """What is kept for `prefix`: its entries and whether they are all of them."""
        with self._lock:
            kept = self._kept.get(prefix, touch=False)
            return None if kept is None else (kept.items, kept.complete)

    def newest(self, prefix: bytes, storage: Storage) -> Generator[Item, None, None]:
        """The entries under `prefix` as (created, value), newest first: those kept,
        then (when they are not all) the rest from a backward scan. Close the iterator
        when done with it, inside the read that made it: closing keeps what it read."""
        with self._lock:
            kept = self._kept.get(prefix)
        items, complete = ([], False) if kept is None else (kept.items, kept.complete)
        yield from items
        if complete:
            return
        read = list(items)
        try:
            # The scan's first entries are the kept ones (the invariant): skip them.
            for item in islice(actor_obj.newest_first(storage, prefix), len(items), None):
                self.entries_read += 1
                read.append(item)
                yield item
            complete = True
        finally:
            if len(read) > len(items) or complete:  # (a kept list said "not all", or there was none)
                self._keep(prefix, read, complete)

    def observe(self, puts: Mapping[bytes, bytes | None]) -> None:
        """Drop every kept prefix a written batch puts or deletes a key under."""
        if not self._kept:
            return
        with self._lock:
            for key in puts:
                if key.startswith(actor_obj.PREFIX):
                    self._kept.pop(key[:PREFIX_SIZE])

    def drop(self) -> None:
        with self._lock:
            self._kept.clear()

    def verify(self, storage: Storage) -> list[tuple[bytes, str]]:
        """Each kept prefix whose entries are not the first of a backward scan of it
        (or not all of them, when it says so)."""
        problems = []
        for prefix in self.prefixes():
            cached = self.cached(prefix)
            if cached is None:
                continue
            items, complete = cached
            stored = list(islice(actor_obj.newest_first(storage, prefix), len(items) + 1))
            if stored[: len(items)] != items or (complete and len(stored) > len(items)):
                problems.append((prefix, "this handle's newest entries under it differ from the stored entries"))
        return problems

    def _keep(self, prefix: bytes, items: list[Item], complete: bool) -> None:
        with self._lock:
            old = self._kept.get(prefix, touch=False)
            if old is not None and (len(old.items), old.complete) >= (len(items), complete):
                return  # another call read as far in the same view
            self._kept.pop(prefix)
            if len(items) <= MAX_KEPT:
                self._kept.put(prefix, _Kept(items, complete), len(items))
