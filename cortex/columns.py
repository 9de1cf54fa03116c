"""The column store: decoded index values as native-endian column arrays (`Columns`),
joined lazily (`_Joined`), taken by runs of rows (`Rows`), with what a call checks
of every row kept with them (`Facts`) and a typed per-frame state (`FrameState`).

Every index entry holds the same fixed-width value (laid out in `cortex.records`),
so a scan is decoded with one `numpy.frombuffer` and scored without reading any
memory. The hot-frame cache (`cortex.cache.hot`) keeps these columns from call to
call; `applied` brings them up to date with written changes, copy on write.

Invariant: the arrays of a `Columns` are never changed once made (`applied` changes
copies and returns a new one), so everything kept with them stays true.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .records import INDEX_DTYPE, TYPE_CODE_MAX, TYPE_CODE_MIN, decode_index_values

DTYPE = INDEX_DTYPE
FIELDS: tuple[str, ...] = tuple(DTYPE.names or ())
TYPE_MIN, TYPE_MAX = TYPE_CODE_MIN, TYPE_CODE_MAX

def unsound(rows: np.ndarray | Columns) -> bool:
    """Whether any decoded row has an unknown type or no version (bulk check)."""
    return bool(len(rows["type"])) and bool(((rows["type"] < TYPE_MIN) | (rows["type"] > TYPE_MAX) | (rows["version"] == 0)).any())



def id_keys(id_hi: np.ndarray, id_lo: np.ndarray) -> np.ndarray:
    """Ids of decoded index rows as 16-byte strings (sortable, comparable: NumPy
    orders `S16` values bytewise, which for big-endian (hi, lo) is id order)."""
    pairs = np.empty((len(id_hi), 2), dtype=">u8")
    pairs[:, 0] = id_hi
    pairs[:, 1] = id_lo
    return pairs.view("S16").ravel()


def ids_of(rows: np.ndarray) -> list[bytes]:
    """The 16-byte ids of decoded rows, in row order (whatever their byte order:
    numpy operations such as concatenate may turn rows native-endian)."""
    raw = id_keys(rows["id_hi"], rows["id_lo"]).tobytes()
    return [raw[i : i + 16] for i in range(0, len(raw), 16)]


def last_id(cols: Columns) -> bytes:
    """The 16-byte id of the last row (`.tobytes()`, not `bytes()` of an `S16` item:
    that drops trailing zero bytes)."""
    return id_keys(cols["id_hi"][-1:], cols["id_lo"][-1:]).tobytes()


def start_after(prefix: bytes, raw_id: bytes) -> bytes:
    """Where a scan of `prefix` starts for the entries with ids after `raw_id`: a key
    is the prefix and a 16-byte id, so `raw_id`'s key and one zero byte sorts after
    that key and before the key of any later id."""
    return prefix + raw_id + b"\x00"


# A boolean take of at least `_RUNS_FROM` rows gathers by slices when its kept rows
# form at most `_MAX_RUNS` runs; a concat of at least `_RUNS_FROM` rows joins lazily.
# Below that, numpy's plain gather and concatenate cost less than the bookkeeping.
_MAX_RUNS = 16
_RUNS_FROM = 4096
# A lazy concat asked to (`small_joined`) joins runs of parts of fewer than
# `_SMALL_PART` rows at once.
_SMALL_PART = 1024
# A take of fewer than one row in `_GATHER_SHARE` of a lazy concat gathers its rows
# from the parts (`_Joined.gather`); a larger one joins the column first.
_GATHER_SHARE = 8


def _runs(mask: np.ndarray) -> list[tuple[int, int]] | None:
    """The runs of True in `mask` as (start, stop) pairs, or None when there are more
    than `_MAX_RUNS` of them (or none at all)."""
    if not len(mask):
        return None
    edges = np.flatnonzero(mask[1:] != mask[:-1]) + 1
    if len(edges) > 2 * _MAX_RUNS:
        return None
    bounds = [0, *edges.tolist(), len(mask)]
    runs = [(start, stop) for start, stop in zip(bounds, bounds[1:]) if mask[start]]
    return runs if runs else None


@dataclass(frozen=True, slots=True)
class Rows:
    """The rows a boolean mask keeps: their indexes, and the same rows as (start,
    stop) runs when the mask is long and keeps them in a few runs (a hot frame less
    the handful of rows an earlier tier holds). `Columns.take` keeps one, and
    `apply` gathers a base column at its rows."""

    picked: np.ndarray
    runs: list[tuple[int, int]] | None

    @staticmethod
    def of(mask: np.ndarray) -> Rows:
        return Rows(np.flatnonzero(mask), _runs(mask) if len(mask) >= _RUNS_FROM else None)

    def apply(self, array: np.ndarray) -> np.ndarray:
        """`array` (one value per row of the mask) at these rows, in new memory."""
        if self.runs is None:
            taken: np.ndarray = array[self.picked]
            return taken
        return np.concatenate([array[start:stop] for start, stop in self.runs])


_T = TypeVar("_T")

# `Facts.min_expires` when no row expires (an expiry is a u64 of microseconds).
NO_EXPIRY = 1 << 64


@dataclass(frozen=True, slots=True)
class Facts:
    """What `context()` checks of every row, gathered in one pass over each column.

    A hot frame's cached columns are the same from call to call, so these are kept
    with them (`Columns.facts`): a call then checks tens of thousands of rows by
    reading four numbers."""

    sound: bool  # no row has an unknown type or no version (the negation of `unsound`)
    max_created: int  # the latest creation time of any row (0 for no rows)
    min_expires: int  # the earliest nonzero expiry, or NO_EXPIRY: all rows live before it
    flags: int  # every row's flags ORed together

    @staticmethod
    def of(cols: Columns) -> Facts:
        if not len(cols):
            return Facts(True, 0, NO_EXPIRY, 0)
        # An expiry of 0 means none; minus one it wraps to the largest u64, so the
        # least of (expires - 1) is one less than the earliest real expiry.
        least = int((cols["expires"] - np.uint64(1)).min()) + 1
        return Facts(not unsound(cols), int(cols["created"].max()), least, int(np.bitwise_or.reduce(cols["flags"])))

    @staticmethod
    def join(parts: list[Facts]) -> Facts:
        return Facts(all(f.sound for f in parts), max(f.max_created for f in parts),
                     min(f.min_expires for f in parts), functools.reduce(operator.or_, (f.flags for f in parts), 0))



class FrameState:
    """What calls keep of one set of columns beyond values derived from its rows
    alone (`Columns.derived`): `refreshed`, set by the hot-frame cache when writes or
    new entries made these columns anew (a writer's own cached frame is new columns
    after each of its writes); `called`, once a call has ranked them; `bounds`, the
    composer's last bounds of their rows (`cortex.context.bounded.PartGroups`)."""

    __slots__ = ("refreshed", "called", "bounds")

    def __init__(self) -> None:
        self.refreshed = False
        self.called = False
        self.bounds: object | None = None


class Columns:
    """Decoded index values as native-endian column arrays.

    Filtering a 63-byte structured array copies every row (about 60 ns a row);
    filtering columns copies only the fields in use, so the context() path decodes
    once into columns and works on those. `take()` copies nothing at first: it keeps
    the row indexes, and a column is gathered the first time it is read (a hot call
    filters tens of thousands of rows, then reads a few columns of them).

    A mask that keeps a few long runs of rows (a hot frame less the handful of
    memories an earlier tier holds) is gathered as those runs, slice by slice: about
    a sixth of the cost of gathering 60,000 rows by index.
    """

    __slots__ = ("_base", "_rows", "_runs", "_got", "_facts", "_totals", "_derived", "_ids", "_split", "_state")

    def __init__(self, data: Mapping[str, np.ndarray], rows: np.ndarray | None = None,
                 runs: list[tuple[int, int]] | None = None) -> None:
        # A dict, or a `_Joined` of parts (told apart by `type(...) is`: `_Joined` is a
        # Mapping, and an isinstance check against it costs ~0.5 µs).
        self._base = data
        self._rows = rows  # indexes into the base columns, or None for all of them
        self._runs = runs  # the same rows as (start, stop) slices of the base, when few
        self._got: Mapping[str, np.ndarray] = data if rows is None else {}
        # Invariant: the arrays of a Columns are never changed (`applied`
        # changes copies and returns a new one), so the facts, totals, derived values
        # and ids kept below stay true, and a lazy join reads its parts as they were.
        self._facts: Facts | None = None
        self._totals: dict[str, int] | None = None  # `total()` by column
        self._derived: dict[Hashable, Any] | None = None  # `derived()` by key
        self._ids: list[bytes] | None = None  # `ids()`, kept: every call reads the pinned tier's
        self._split: list[tuple[int, np.ndarray, np.ndarray]] | None = None  # `_Joined.split` of the rows
        self._state: FrameState | None = None  # `state()`

    @staticmethod
    def decode(values: list[bytes], names: tuple[str, ...]) -> Columns:
        return Columns.of_rows(decode_index_values(values), names)

    @staticmethod
    def of_rows(rows: np.ndarray, names: tuple[str, ...]) -> Columns:
        """Decoded rows (`DTYPE`, any byte order) as native-endian columns."""
        return Columns({name: rows[name].astype(rows.dtype[name].newbyteorder("=")) for name in names})

    @property
    def data(self) -> dict[str, np.ndarray]:
        """Every column, gathered."""
        return {name: self[name] for name in self._base}

    def materialized(self) -> Columns:
        """The same rows in plain arrays of their own (what a cache keeps: read without
        a gather, and no take or join holding the arrays it was made from alive)."""
        return self if self._rows is None and isinstance(self._base, dict) else Columns(self.data)

    def __len__(self) -> int:
        if self._rows is not None:
            return len(self._rows)
        return self._base.rows if type(self._base) is _Joined else len(self._base["id_hi"])

    def facts(self) -> Facts:
        """The `Facts` of these rows (computed once; a joined set's from its parts')."""
        if self._facts is None:
            parts = self.parts()
            self._facts = Facts.of(self) if parts[0] is self else Facts.join([part.facts() for part in parts])
        return self._facts

    def total(self, name: str) -> int:
        """The sum of column `name` over the rows (computed once; a joined set's from
        its parts': a hot frame's token count is read, not summed, call after call)."""
        if self._totals is None:
            self._totals = {}
        total = self._totals.get(name)
        if total is None:
            base = self._base
            if self._rows is None and type(base) is _Joined:
                total = sum(base.part_totals(name))
            else:
                total = int(self[name].sum(dtype=np.int64))
            self._totals[name] = total
        return total

    def derived(self, key: Hashable, make: Callable[[Columns], _T]) -> _T:
        """`make(self)`, computed once per `key` (`make` must depend on the rows alone):
        what calls on a hot frame's cached columns keep of them besides `facts` and
        `total`, such as `cortex.context.bounded`'s greatest fields and groups."""
        if self._derived is None:
            self._derived = {}
        if key not in self._derived:
            self._derived[key] = make(self)
        value: _T = self._derived[key]
        return value

    def state(self) -> FrameState:
        """The mutable state calls keep with these columns (made on first use)."""
        if self._state is None:
            self._state = FrameState()
        return self._state

    def known(self, key: Hashable) -> bool:
        """Whether `derived(key, ...)` has been computed for these rows."""
        return self._derived is not None and key in self._derived

    def parts(self) -> list[Columns]:
        """The sets of columns these rows are the concatenation of, in order: the parts
        of a lazy concat (`concat`), or this set alone."""
        if self._rows is None and type(self._base) is _Joined:
            return list(self._base.parts)
        return [self]

    def __getitem__(self, name: str) -> np.ndarray:
        got = self._got.get(name)
        if got is None:
            rows = self._rows
            if rows is None:  # every column is in `_got`: an unknown name raises KeyError
                return self._base[name]
            if self._runs is None and type(self._base) is _Joined and len(rows) * _GATHER_SHARE < self._base.rows:
                if self._split is None:
                    self._split = self._base.split(rows)
                got = self._base.gather(name, self._split, len(rows))
            elif self._runs is None:
                got = self._base[name][rows]
            elif type(self._base) is _Joined:
                got = self._base.runs(name, self._runs)
            else:
                got = Rows(rows, self._runs).apply(self._base[name])
            assert isinstance(self._got, dict)
            self._got[name] = got
        return got

    @staticmethod
    def concat(parts: list[Columns], small_joined: bool = False) -> Columns:
        """The rows of every part, in order, in new arrays (never a part's own). From
        `_RUNS_FROM` rows on, a column is joined when first read, and a take of the
        result gathers its columns from the parts directly (`_Joined`). With
        `small_joined`, consecutive parts of fewer than `_SMALL_PART` rows are joined
        at once into one part: for a join that serves many calls (a hot call's pinned
        and outcomes rows: one part to score and gather from, not two), not for one
        call (the copy costs it more than the part it saves)."""
        if sum(len(part) for part in parts) < _RUNS_FROM:
            names = tuple(parts[0]._base)
            return Columns({name: np.concatenate([part[name] for part in parts]) for name in names})
        if not small_joined:
            return Columns(_Joined(parts))
        joined: list[Columns] = []
        small: list[Columns] = []  # a run of small parts, fewer than `_RUNS_FROM` rows in all
        for part in parts:
            if small and (len(part) >= _SMALL_PART or sum(map(len, small)) + len(part) >= _RUNS_FROM):
                joined.append(small[0] if len(small) == 1 else Columns.concat(small))
                small = []
            (small if len(part) < _SMALL_PART else joined).append(part)
        if small:
            joined.append(small[0] if len(small) == 1 else Columns.concat(small))
        return Columns(_Joined(joined))

    def slice(self, start: int, stop: int) -> Columns:
        """Rows start..stop (views of the base columns when nothing was taken; a
        part's own rows when they lie in one part of a concat)."""
        if self._rows is None:
            if type(self._base) is _Joined:
                return self._base.slice(start, stop)
            if start == 0 and stop >= len(self):
                return self
            return Columns({name: column[start:stop] for name, column in self._base.items()})
        return Columns(self._base, self._rows[start:stop])

    def take(self, selector: np.ndarray | Rows) -> Columns:
        """The rows a boolean mask, an index array or a `Rows` selects."""
        if not isinstance(selector, Rows):
            selector = Rows.of(selector) if selector.dtype == bool else Rows(selector, None)
        if self._rows is not None:
            return Columns(self._base, self._rows[selector.picked])
        return Columns(self._base, selector.picked, selector.runs)

    def ids(self) -> list[bytes]:
        """The 16-byte ids of the rows, in row order (computed once; do not change the list)."""
        if self._ids is None:
            self._ids = ids_of(self)  # type: ignore[arg-type]
        return self._ids


class _Joined(Mapping[str, np.ndarray]):
    """The columns of several `Columns` one after another, each joined on first read.

    A hot call joins a cached frame of tens of thousands of rows to a few rows of the
    other tiers, then drops a handful of rows. Joining every column up front wrote
    3.8 MB of new arrays per call (about 0.35 ms at 60,000 rows, mostly first touches
    of fresh memory); joined lazily, the columns read only after the drop are
    gathered once, straight from the parts, and the unread ones never.
    """

    def __init__(self, parts: list[Columns]) -> None:
        self.parts = tuple(parts)
        self._names = tuple(parts[0]._base)
        self._starts = [0]
        for part in parts:
            self._starts.append(self._starts[-1] + len(part))
        self.rows = self._starts[-1]
        self._joined: dict[str, np.ndarray] = {}

    def split(self, rows: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """`rows` (indexes into the joined rows) by the part they lie in: (the part's
        index, where its rows are in `rows`, their indexes in the part), for each part
        that holds any. Worked out once per take, for all the columns it reads."""
        which = np.searchsorted(np.array(self._starts[1:-1]), rows, side="right")
        split = []
        for index, first in enumerate(self._starts[:-1]):
            where = np.flatnonzero(which == index)
            if len(where):
                split.append((index, where, rows[where] - first))
        return split

    def gather(self, name: str, split: list[tuple[int, np.ndarray, np.ndarray]], count: int) -> np.ndarray:
        """Column `name` at the `count` rows `split` names (`split()`), without joining
        it: a hot call reads a few hundred rows of a frame of tens of thousands."""
        columns = [part[name] for part in self.parts]
        kind = np.result_type(*columns)
        if len(split) == 1:  # every row in one part, in order
            index, _, local = split[0]
            alone: np.ndarray = columns[index][local].astype(kind, copy=False)
            return alone
        got = np.empty(count, dtype=kind)
        for index, where, local in split:
            got[where] = columns[index][local]
        return got

    def part_totals(self, name: str) -> list[int]:
        """Each part's `total(name)`. A part that has none yet gets it from its slice
        of the joined column where the column is joined: that was just read whole,
        while a part's own column may have gone from the CPU's caches (a hot frame's
        token column, ~240 KB at 10M, sums in ~80 µs then, ~15 µs just after the
        join). The slice holds the part's values, as no Columns' arrays change."""
        joined = self._joined.get(name)
        if joined is not None:
            for part, start, stop in zip(self.parts, self._starts, self._starts[1:]):
                if part._totals is None:
                    part._totals = {}
                if name not in part._totals:
                    part._totals[name] = int(joined[start:stop].sum(dtype=np.int64))
        return [part.total(name) for part in self.parts]

    def __getitem__(self, name: str) -> np.ndarray:
        column = self._joined.get(name)
        if column is None:
            if name not in self._names:
                raise KeyError(name)
            column = self._joined[name] = np.concatenate([part[name] for part in self.parts])
        return column

    def get(self, name: str, default: np.ndarray | None = None) -> np.ndarray | None:  # type: ignore[override]
        """The joined column (Mapping's own `get` goes through a raised KeyError)."""
        return self[name] if name in self._names else default

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def runs(self, name: str, runs: list[tuple[int, int]]) -> np.ndarray:
        """Rows (start, stop) of every run of column `name`, in one new array."""
        joined = self._joined.get(name)
        if joined is not None:
            return np.concatenate([joined[start:stop] for start, stop in runs])
        pieces = []
        for start, stop in runs:
            for part, first, end in zip(self.parts, self._starts, self._starts[1:]):
                if first < stop and start < end:
                    pieces.append(part[name][max(start, first) - first : min(stop, end) - first])
        return np.concatenate(pieces)

    def slice(self, start: int, stop: int) -> Columns:
        for part, first, end in zip(self.parts, self._starts, self._starts[1:]):
            if first <= start and stop <= end:
                return part.slice(start - first, stop - first)
        return Columns({name: self[name][start:stop] for name in self._names})


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
    16-byte strings over the reference rows that span them (`id_keys`) when
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
    old one stand. How the hot-frame cache (`cortex.cache.hot`) and a pack's dirty
    markers (`cortex.index.packs`) are applied."""
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
