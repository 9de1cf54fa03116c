"""The decoded frame entries of hot objects (and the pinned tier), kept in step with
every write of a handle.

A `context()` call on an object with tens of thousands of memories spent most of its
time reading and decoding that object's frame entries from storage (about 0.3 µs an
entry), and a call on a small one a tenth of its time, once other work had taken
the CPU's caches, in the seek that starts its scan. `HotFrames` keeps the decoded
columns of the frame prefixes a handle has read, in two pools: prefixes of fewer
than `SMALL_ROWS` entries when read within `SMALL_BUDGET` rows, larger ones within
`MAX_ROWS`; each prefix counts `ENTRY_ROWS` more than it holds, and each pool drops
its least recently used first. (In one pool, the thousands of small prefixes a
query mix reads took a share of the budget from the large ones, whose reads cost
the most.) A call on a cached prefix reads no index entry from storage. The
pinned tier, which every call reads, is kept too.

The invariant, stated once: a cached prefix holds exactly the index values stored
under it in the handle's current view, one row per key, in key order (so by id).

* The writer keeps it by passing every batch it writes through `observe()`
  (`Engine.write` is the only way a batch reaches storage). A change is recorded as
  pending and applied on the next `lookup()`, under this cache's own lock.
* A follower's view moves only in `Engine.refresh()`. When the writer has only
  added memories since the last view (its cache epoch did not move, see
  `Engine.write`), every entry stored under a cached prefix is still there with
  its value, and the new ones have ids after every old one: `refresh()` calls
  `appended()`, and each cached prefix reads the entries after its last row at its
  next `lookup()`. After any other change it calls `drop()`.
* Backends whose reads see other processes' commits without a refresh
  (PostgreSQL) get no cache: the engine does not make one for them.

The arrays a lookup returns are never changed afterwards: pending updates are
applied at the first lookup after a write to copies of the columns they change
(`applied`), and every change gives the prefix a new `Columns` object. So a bundle
that reads its candidates' columns on first access, after later writes (its
scores and dropped ids when its call ranked a few groups, its superseded
memories), reads them as they were at its call, and the `Facts` a call reads of
the old columns (kept with them: `Columns.facts`) never describe the new rows.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ..columns import FIELDS, Columns, applied, last_id, same, start_after, unsound
from ..index import frame, pinned
from ..records import ID_SIZE
from ..storage import Storage
from .lru import SizedLru

# A prefix smaller than this is scanned on each call, larger ones are cached: by
# default every one (tests raise it to see the cache fill).
MIN_ROWS = 0
# A row is 63 bytes (the fields of an index value, native-endian): 1M rows are 63 MB.
MAX_ROWS = 1_000_000
# Prefixes read with fewer rows than this are kept in a pool of their own, of this
# many rows (with `ENTRY_ROWS` each: at most ~4,000 prefixes, ~16 MB).
SMALL_ROWS = 512
SMALL_BUDGET = 262_144
# What a cached prefix costs beyond its rows, in rows: its arrays, their dict and
# its cache entry take about 4 KB, so at most ~15,000 small prefixes are kept.
ENTRY_ROWS = 64

PREFIX_SIZE, KEY_SIZE = frame.PREFIX_SIZE, frame.KEY_SIZE
# A pinned-tier key is its prefix and an id.
PINNED_KEY_SIZE = len(pinned.PREFIX) + ID_SIZE


class _Entry:
    __slots__ = ("cols", "pending", "generation")

    def __init__(self, cols: Columns, generation: int) -> None:
        self.cols = cols
        self.pending: dict[bytes, bytes | None] = {}  # id -> its new value (None: deleted)
        self.generation = generation  # the cache's generation its rows were last read in


def _size(cached: _Entry) -> int:
    """What a cached prefix counts against its pool's budget, in rows."""
    return len(cached.cols) + ENTRY_ROWS


class HotFrames:
    """Decoded columns of hot frame prefixes (see the module docstring)."""

    def __init__(self, min_rows: int = MIN_ROWS, max_rows: int = MAX_ROWS, small_budget: int = SMALL_BUDGET) -> None:
        self.min_rows = min_rows
        self.max_rows = max_rows
        # Each prefix counted at its rows and `ENTRY_ROWS` (`_size`).
        self._large: SizedLru[bytes, _Entry] = SizedLru(max_rows)
        self._small: SizedLru[bytes, _Entry] = SizedLru(small_budget)
        self._lock = threading.Lock()
        # Moved by `appended()`: an entry of an older generation may lack new rows.
        self._generation = 0
        # Entries read from storage to bring cached prefixes up to date (followers).
        self.entries_read = 0

    def __len__(self) -> int:
        return len(self._large) + len(self._small)

    @property
    def rows(self) -> int:
        """The rows held by both pools, with `ENTRY_ROWS` for each prefix."""
        return self._large.total + self._small.total

    def prefixes(self) -> list[bytes]:
        with self._lock:
            return sorted([*self._large, *self._small])

    def _find(self, prefix: bytes, touch: bool) -> tuple[SizedLru[bytes, _Entry], _Entry] | None:
        for pool in (self._large, self._small):
            cached = pool.get(prefix, touch)
            if cached is not None:
                return pool, cached
        return None

    def lookup(self, prefix: bytes, storage: Storage) -> Columns | None:
        """The columns of `prefix` when cached, with any pending writes applied and,
        after `appended()`, the entries after its last row read from `storage`
        (None when those prove unsound: the caller's own scan then names them)."""
        with self._lock:
            found = self._find(prefix, touch=True)
            if found is None:
                return None
            pool, cached = found
            before, kept = len(cached.cols), cached.cols
            if cached.generation != self._generation and not self._read_tail(prefix, pool, cached, storage):
                return None
            if cached.pending:
                cached.cols = applied(cached.cols, cached.pending).materialized()
                cached.pending = {}
            if cached.cols is not kept:
                cached.cols.state().refreshed = True
            if len(cached.cols) != before:
                pool.put(prefix, cached, _size(cached))
            return cached.cols

    def store(self, prefix: bytes, cols: Columns, always: bool = False) -> None:
        """Keep the columns just read under `prefix` (all fields, in key order) if the
        prefix is large enough to be worth it, or `always`."""
        if (len(cols) < self.min_rows and not always) or len(cols) + ENTRY_ROWS > self.max_rows:
            return
        with self._lock:
            self._large.pop(prefix)
            self._small.pop(prefix)
            cached = _Entry(cols.materialized(), self._generation)
            small = len(cols) < SMALL_ROWS and _size(cached) <= self._small.budget
            (self._small if small else self._large).put(prefix, cached, _size(cached))

    def observe(self, puts: Mapping[bytes, bytes | None]) -> None:
        """Record the changes a written batch makes to cached prefixes."""
        if not self._large and not self._small:
            return
        with self._lock:
            for key, value in puts.items():
                prefix = frame_prefix_of(key)
                if prefix is None:
                    continue
                found = self._find(prefix, touch=False)
                if found is not None:
                    found[1].pending[key[len(prefix):]] = value

    def appended(self) -> None:
        """The view moved by added memories alone (see the module docstring): each
        cached prefix reads the entries after its last row at its next lookup."""
        with self._lock:
            self._generation += 1

    def drop(self) -> None:
        with self._lock:
            self._large.clear()
            self._small.clear()

    def verify(self, storage: Storage) -> list[tuple[bytes, str]]:
        """Each cached prefix whose columns differ from the entries stored under it."""
        problems = []
        for prefix in self.prefixes():
            cached = self.lookup(prefix, storage)
            try:
                stored = Columns.decode(storage.scan_values(prefix), FIELDS)
            except ValueError:  # a value of the wrong size: the index checks name it
                stored = None
            if cached is not None and (stored is None or not same(cached, stored)):
                problems.append((prefix, "this handle's cache of the entries under it differs from the stored entries"))
        return problems

    def _read_tail(self, prefix: bytes, pool: SizedLru[bytes, _Entry], cached: _Entry, storage: Storage) -> bool:
        """Append to `cached` the entries stored under `prefix` after its last row
        (lock held; the caller counts the new rows). False, with the prefix dropped,
        when they decode unsound."""
        cols = cached.cols
        start = start_after(prefix, last_id(cols)) if len(cols) else None
        values = [value for _, value in storage.scan_items(prefix, start)]
        self.entries_read += len(values)
        cached.generation = self._generation
        if values:
            try:
                new = Columns.decode(values, FIELDS)
            except ValueError:
                new = None
            if new is None or unsound(new):
                pool.pop(prefix)
                return False
            cached.cols = Columns.concat([cols, new]).materialized()
        return True


def frame_prefix_of(key: bytes) -> bytes | None:
    """The prefix a frame or pinned-tier entry's key lies under (None: another key)."""
    if len(key) == KEY_SIZE:
        return key[:PREFIX_SIZE]
    if len(key) == PINNED_KEY_SIZE and key.startswith(pinned.PREFIX):
        return key[: len(pinned.PREFIX)]
    return None
