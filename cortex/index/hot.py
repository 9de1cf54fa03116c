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
  next `lookup()`. After any other change it calls `clear()`.
* Backends whose reads see other processes' commits without a refresh
  (PostgreSQL) get no cache: the engine does not make one for them.

A prefix's entry also keeps what the last call of `JOINED_BELOW_ROWS` candidates or
more made of its blocks with these very columns (`keep_joined`: the joined
candidates and which rows of the frame the other tiers hold), so that a hot object
asked about again does not join again; new columns start with none.

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

import numpy as np

from ..records import ID_SIZE
from ..storage import Storage
from . import frame, pinned
from .entry import DTYPE, Columns, id_keys, last_id, start_after, unsound
from .lru import SizedLru

# What `lookup` marks the columns with (`Columns.derived`) when writes or new entries
# made them anew: a writer's own cached frame is new columns after each of its writes.
REFRESHED = "refreshed"
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

# A frame key is its prefix (namespace, verb, kind, 16-byte ref hash) and an id.
PREFIX_SIZE = len(frame.PREFIX) + 2 + 16
KEY_SIZE = PREFIX_SIZE + ID_SIZE
# A pinned-tier key is its prefix and an id.
PINNED_KEY_SIZE = len(pinned.PREFIX) + ID_SIZE

FIELDS: tuple[str, ...] = tuple(DTYPE.names or ())


class _Entry:
    __slots__ = ("cols", "pending", "generation", "joined")

    def __init__(self, cols: Columns, generation: int) -> None:
        self.cols = cols
        self.pending: dict[bytes, bytes | None] = {}  # id -> its new value (None: deleted)
        self.generation = generation  # the cache's generation its rows were last read in
        # (key, value): what the last large call on `cols` made of its blocks (`keep_joined`).
        self.joined: tuple[tuple[object, ...], object] | None = None


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
                cached.cols.derived(REFRESHED, lambda _: True)
                cached.joined = None
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

    def joined(self, prefix: bytes, key: tuple[object, ...]) -> object | None:
        """What the last large call on `prefix`'s cached columns made of the blocks in
        `key` (`keep_joined`), or None: a call on other blocks came since. The key
        holds the very columns the call read, so columns that changed since never match."""
        with self._lock:
            found = self._find(prefix, touch=False)
            if found is None or found[1].joined is None:
                return None
            kept_key, value = found[1].joined
            return value if kept_key == key else None

    def keep_joined(self, prefix: bytes, cols: Columns, key: tuple[object, ...], value: object) -> None:
        """Keep with `prefix`'s cached columns, while they are `cols`, what a call of
        `JOINED_BELOW_ROWS` candidates or more made of the blocks in `key` (one call a
        prefix: the last). It goes with the columns: when a change or the budget drops
        them. It is not counted in the budget: tiers, pinned flags and the columns a
        call reads whole (each form's tokens) take ~16 bytes a row, and the ids ~60
        more once a caller reads a bundle's scores."""
        with self._lock:
            found = self._find(prefix, touch=False)
            if found is not None and found[1].cols is cols:
                found[1].joined = (key, value)

    def observe(self, puts: Mapping[bytes, bytes | None]) -> None:
        """Record the changes a written batch makes to cached prefixes."""
        if not self._large and not self._small:
            return
        with self._lock:
            for key, value in puts.items():
                if len(key) == KEY_SIZE:
                    prefix_size = PREFIX_SIZE
                elif len(key) == PINNED_KEY_SIZE and key.startswith(pinned.PREFIX):
                    prefix_size = len(pinned.PREFIX)
                else:
                    continue
                found = self._find(key[:prefix_size], touch=False)
                if found is not None:
                    found[1].pending[key[prefix_size:]] = value

    def appended(self) -> None:
        """The view moved by added memories alone (see the module docstring): each
        cached prefix reads the entries after its last row at its next lookup."""
        with self._lock:
            self._generation += 1

    def clear(self) -> None:
        with self._lock:
            self._large.clear()
            self._small.clear()

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


def same(a: Columns, b: Columns) -> bool:
    """Whether two sets of columns hold the same rows in the same order."""
    return len(a) == len(b) and all(np.array_equal(a[name], b[name]) for name in FIELDS)


# Up to this many ids sharing `hi` with several reference rows, `locate` searches
# each in its own run.
_SEARCHED_ONE_BY_ONE = 8


def locate(hi: np.ndarray, lo: np.ndarray, ref_hi: np.ndarray, ref_lo: np.ndarray) -> np.ndarray:
    """For each id (hi[i], lo[i]): its row in the reference ids, which are sorted by
    (hi, lo) and distinct, or -1 when absent.

    One search on `hi` settles the ids whose `hi` no reference row shares, or one
    row only. The rest (ids made in the same millisecond share `hi`: a `write_many`
    batch makes a thousand such) are searched by `lo` in their own run of reference
    rows (which the sort by (hi, lo) orders by `lo`) when they are a few, and as
    16-byte strings over the reference rows that span them (`entry.id_keys`) when
    they are more: one search each costs less than making strings of a span of tens
    of thousands of rows, but not for hundreds of ids.
    """
    rows = np.full(len(hi), -1, dtype=np.int64)
    if not len(hi) or not len(ref_hi):
        return rows
    at = np.searchsorted(ref_hi, hi, side="left")
    safe = np.minimum(at, len(ref_hi) - 1)
    same_hi = ref_hi[safe] == hi
    exact = same_hi & (ref_lo[safe] == lo)
    rows[exact] = safe[exact]
    shared = np.flatnonzero(same_hi & ~exact)
    if len(shared):
        stops = np.searchsorted(ref_hi, hi[shared], side="right")
        if int((stops - at[shared]).max()) == 1:
            return rows  # each of them shares `hi` with one reference row only: absent
        if len(shared) <= _SEARCHED_ONE_BY_ONE:
            for row, first, end in zip(shared.tolist(), at[shared].tolist(), stops.tolist()):
                found = first + int(np.searchsorted(ref_lo[first:end], lo[row]))
                if found < end and ref_lo[found] == lo[row]:
                    rows[row] = found
            return rows
        start, stop = int(at[shared].min()), int(stops.max())
        ref, ids = id_keys(ref_hi[start:stop], ref_lo[start:stop]), id_keys(hi[shared], lo[shared])
        found = np.minimum(np.searchsorted(ref, ids), len(ref) - 1)
        match = ref[found] == ids
        rows[shared[match]] = start + found[match]
    return rows


def applied(cols: Columns, pending: dict[bytes, bytes | None]) -> Columns:
    """`cols` after the pending changes (id -> its new index value, None: deleted):
    values rewritten in copies of the columns they change, rows deleted and inserted,
    key order kept; always a new `Columns` when anything changed, so no facts of the
    old one stand. Also how a pack's dirty markers are applied (`cortex.index.packs`)."""
    ids = np.frombuffer(b"".join(pending), dtype=">u8").reshape(-1, 2)
    rows = locate(ids[:, 0].astype(np.uint64), ids[:, 1].astype(np.uint64), cols["id_hi"], cols["id_lo"])
    values = list(pending.values())
    update = [i for i, (row, value) in enumerate(zip(rows.tolist(), values)) if row >= 0 and value is not None]
    if update:
        new = Columns.decode([values[i] for i in update], FIELDS)  # type: ignore[misc]
        at = rows[update]
        # Copy on write: a column the changes rewrite is copied first, so no array an
        # earlier lookup returned ever changes (module docstring); the rest are shared.
        changed: dict[str, np.ndarray] = {}
        for name in FIELDS:
            if not np.array_equal(cols[name][at], new[name]):
                column = changed[name] = cols[name].copy()
                column[at] = new[name]
        cols = Columns({name: changed.get(name, cols[name]) for name in FIELDS})
    deleted = [row for row, value in zip(rows.tolist(), values) if row >= 0 and value is None]
    inserted = [value for row, value in zip(rows.tolist(), values) if row < 0 and value is not None]
    if not deleted and not inserted:
        return cols
    if deleted:
        keep = np.ones(len(cols), dtype=bool)
        keep[deleted] = False
        cols = cols.take(keep)
    if inserted:
        new = Columns.decode(inserted, FIELDS)
        new = new.take(np.lexsort((new["id_lo"], new["id_hi"])))
        appended = not len(cols) or (int(cols["id_hi"][-1]), int(cols["id_lo"][-1])) < (int(new["id_hi"][0]), int(new["id_lo"][0]))
        cols = Columns.concat([cols, new])
        if not appended:  # new ids are the newest, so this is rare (an import, a clock set back)
            cols = cols.take(np.lexsort((cols["id_lo"], cols["id_hi"])))
    return cols


# At most this many bytes over the calls `JoinedCalls` keeps, as its callers count
# them (what an entry holds, and the blocks its key keeps alive), and calls of fewer
# than `JOINED_BELOW_ROWS` candidates only. A larger call (a hot frame's, joined
# lazily: `cortex.index.entry`) keeps what it made with the frame's cached columns
# instead (`HotFrames.keep_joined`): in this pool, at 10M memories, the ten hot
# frames' entries (7.7 MB counted each) pushed out one another and every small
# call's, and both kinds of call came out slower.
JOINED_BYTES = 64 << 20
JOINED_BELOW_ROWS = 4096


class JoinedCalls:
    """What `context()` made of the blocks of its recent calls (the joined candidates,
    their tiers and which copies of an id go), keyed by the blocks themselves.

    A call on the same objects as an earlier one, in the same view, gets the same
    blocks: the very `Columns` objects this module's cache returned (a cached
    prefix gets a new object at every change) and the same index values of the
    outcomes tier. Joining them again gives the same rows, so a call whose key is
    here takes them from here. The key holds its blocks, so no object id is reused
    while an entry stands. Values are never changed once kept (the caller makes
    their arrays read-only).
    """

    def __init__(self, max_bytes: int = JOINED_BYTES) -> None:
        self.max_bytes = max_bytes
        self._calls: SizedLru[tuple[object, ...], object] = SizedLru(max_bytes)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._calls)

    def get(self, key: tuple[object, ...]) -> object | None:
        with self._lock:
            return self._calls.get(key)

    def put(self, key: tuple[object, ...], value: object, size: int) -> None:
        """Keep `value` under `key`, counting `size` bytes (dropping the least recently
        used entries while over `max_bytes`)."""
        if size > self.max_bytes:
            return
        with self._lock:
            self._calls.put(key, value, size)

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()
