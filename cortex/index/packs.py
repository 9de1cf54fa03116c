"""Packed frames: the entries of a large frame prefix copied into a few large values,
so the first read of a hot object costs a few large reads instead of one per entry.

A `context()` call on an object the handle has not read yet scans the object's frame
entries one by one. rocksdict hands each value over as its own Python object (about
0.25 µs an entry, plus 0.1 µs to join them), so a 60,000-entry frame cost ~20 ms on
its first touch. `optimize()` (`cortex.upkeep.optimize`) copies the entries of every
frame prefix of at least `MIN_ROWS` entries into chunks of up to `CHUNK_ROWS` rows,
stored by column: a chunk decodes into the columns `context()` works on without a
copy, and a 60,000-entry prefix reads in one value. The entries stay where they are
and remain the source of truth (scopes, `find()`, `verify()` and `rebuild()` read
them); a pack is a copy that reads faster, and nothing but this module reads it.

Keys (`tail` is a frame prefix less `idx/frame/`: verb, kind, 16-byte ref hash):

    idx/pack/dir/<tail>            -> the last packed id (16 bytes), rows (u32), chunks (u32), FORMAT (u8)
    idx/pack/rows/<tail><n u32>    -> up to CHUNK_ROWS rows by id, column after column
    idx/pack/dirty/<tail><id16>    -> b"" (the entry of this id changed after packing)

The invariant, stated once: for a packed prefix P whose last packed id is B, take the
rows of its chunks; drop each row whose id has a dirty marker under P; add the entry
stored under P for each marked id, where there is one; then append every entry
stored under P with an id after B. The result is exactly the entries stored under P,
in id order.

* The writer keeps it through `mark()`: `Engine.write` (the only way a batch reaches
  storage) adds a dirty marker to every batch that puts or deletes an entry P + id
  with id <= B. New memories get ids after every packed one, so ingest adds none;
  updates, tombstones, edge re-flags and imports of old ids do.
* `optimize()` rewrites a prefix's chunks and drops its markers in one batch; the
  handle learns the new bounds from that batch (`observe()`).
* A follower reloads the bounds when it catches up (`load()`).
* A pack of another `FORMAT` (written by another version of cortex) is not loaded:
  reads scan its entries, `verify()` names it, and `optimize()` packs it again.
* Backends whose reads see other processes' commits without a refresh (PostgreSQL)
  get no packs: their handles could not keep the bounds current, so the engine makes
  none for them and `migrate()` does not copy pack keys.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

import numpy as np

from ..errors import CorruptRecord
from ..records import ID_SIZE, INDEX_DTYPE, INDEX_VALUE_SIZE, index_value_sound
from ..storage import Batch, Storage, scan_keys
from ..columns import FIELDS, Columns, applied, last_id, same, start_after, unsound
from . import frame
from .entry import scan_rows

PREFIX = b"idx/pack/"
DIR_PREFIX = PREFIX + b"dir/"
ROWS_PREFIX = PREFIX + b"rows/"
DIRTY_PREFIX = PREFIX + b"dirty/"

# Prefixes with fewer entries are scanned entry by entry (4,096 entries: ~1.4 ms).
MIN_ROWS = 4096
# At most 4 MB a value; 60,000 rows (the hottest frame of a 10M store) fit in one.
CHUNK_ROWS = 65536

TAIL_SIZE = frame.PREFIX_SIZE - len(frame.PREFIX)
_DIR_VALUE_SIZE = ID_SIZE + 9
# The layout of chunks below; a pack of another format reads as damage (run optimize()).
FORMAT = 1


def tail_of(prefix: bytes) -> bytes:
    """The part of a frame prefix that names it under `idx/pack/`."""
    return prefix[len(frame.PREFIX):]


def prefix_of(tail: bytes) -> bytes:
    return frame.PREFIX + tail


def dir_key(tail: bytes) -> bytes:
    return DIR_PREFIX + tail


def rows_key(tail: bytes, n: int) -> bytes:
    return ROWS_PREFIX + tail + n.to_bytes(4, "big")


def dirty_key(tail: bytes, raw_id: bytes) -> bytes:
    return DIRTY_PREFIX + tail + raw_id


# A chunk of n rows holds each field in turn, n little-endian values of the field's
# type (63 bytes a row, as in an index value), the widest fields first: every column
# then starts at a multiple of its item size, and numpy runs slower on unaligned arrays.
_COLUMN_TYPES = tuple(sorted(((name, INDEX_DTYPE[name].newbyteorder("<")) for name in FIELDS),
                             key=lambda field: -field[1].itemsize))
_NATIVE_TYPES = {name: INDEX_DTYPE[name].newbyteorder("=") for name in FIELDS}


def encode_chunk(cols: Columns) -> bytes:
    return b"".join(cols[name].astype(kind, copy=False).tobytes() for name, kind in _COLUMN_TYPES)


def decode_chunk(key: bytes, value: bytes) -> Columns:
    """The columns of a chunk: read-only views of `value` where the machine is
    little-endian, copies elsewhere; `CorruptRecord` on a bad size."""
    count, rest = divmod(len(value), INDEX_VALUE_SIZE)
    if rest or not count:
        raise CorruptRecord(key, "bad pack chunk size")
    cols, at = {}, 0
    for name, kind in _COLUMN_TYPES:
        cols[name] = np.frombuffer(value, dtype=kind, count=count, offset=at).astype(_NATIVE_TYPES[name], copy=False)
        at += count * kind.itemsize
    return Columns(cols)


def encode_dir(bound: bytes, rows: int, chunks: int) -> bytes:
    return bound + rows.to_bytes(4, "big") + chunks.to_bytes(4, "big") + bytes([FORMAT])


def decode_dir(key: bytes, value: bytes) -> tuple[bytes, int, int]:
    """(last packed id, rows, chunks) of a directory value; `CorruptRecord` if malformed."""
    if len(key) != len(DIR_PREFIX) + TAIL_SIZE or len(value) != _DIR_VALUE_SIZE:
        raise CorruptRecord(key, "bad pack directory entry")
    rows, chunks = int.from_bytes(value[16:20], "big"), int.from_bytes(value[20:24], "big")
    if value[24] != FORMAT:
        raise CorruptRecord(key, f"pack format {value[24]}, not {FORMAT}: run optimize()")
    if not 0 < chunks <= rows:
        raise CorruptRecord(key, "bad pack directory entry (rows and chunks disagree)")
    return value[:ID_SIZE], rows, chunks


class FramePacks:
    """The packed prefixes of a handle's view and their last packed ids (the module
    docstring says how they are kept current)."""

    def __init__(self) -> None:
        self._bounds: dict[bytes, bytes] = {}  # tail -> last packed id
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._bounds)

    def __contains__(self, prefix: bytes) -> bool:
        return tail_of(prefix) in self._bounds

    def load(self, storage: Storage) -> None:
        """Read the directory of the current view (a store has a few hundred entries),
        leaving out entries of another format."""
        bounds = {key[len(DIR_PREFIX):]: value[:ID_SIZE] for key, value in storage.scan_items(DIR_PREFIX) if _current(value)}
        with self._lock:
            self._bounds = bounds

    def mark(self, puts: Batch) -> Batch:
        """`puts` with a dirty marker for each entry it writes or deletes inside a pack."""
        if not self._bounds:
            return puts
        marks: dict[bytes, bytes | None] = {}
        start, stop = len(frame.PREFIX), frame.PREFIX_SIZE
        with self._lock:
            for key in puts:
                if len(key) == frame.KEY_SIZE and key.startswith(frame.PREFIX):
                    bound = self._bounds.get(key[start:stop])
                    if bound is not None and key[stop:] <= bound:
                        marks[DIRTY_PREFIX + key[start:]] = b""
        return {**puts, **marks} if marks else puts

    def observe(self, puts: Batch) -> None:
        """Learn the packs a written batch made or dropped."""
        # Most batches (every write_many) hold no directory key: one search of the keys
        # joined in C says so for ~0.2 µs a memory, where the loop below costs ~2 µs.
        # (It can say yes wrongly, when the prefix spans two keys; never no wrongly.)
        if DIR_PREFIX not in b"".join(puts):
            return
        with self._lock:
            for key, value in puts.items():
                if key.startswith(DIR_PREFIX):
                    tail = key[len(DIR_PREFIX):]
                    if value is None or not _current(value):
                        self._bounds.pop(tail, None)
                    else:
                        self._bounds[tail] = value[:ID_SIZE]


def _current(dir_value: bytes) -> bool:
    """Whether a directory value is of this version's format."""
    return len(dir_value) == _DIR_VALUE_SIZE and dir_value[-1] == FORMAT


def read(storage: Storage, prefix: bytes) -> Columns:
    """Every entry under a packed `prefix`, as columns of every field in id order (the
    invariant in the module docstring); `CorruptRecord` names a damaged pack."""
    tail = tail_of(prefix)
    dkey = dir_key(tail)
    raw = storage.get(dkey)
    if raw is None:
        raise CorruptRecord(dkey, "missing pack directory entry")
    bound, count, chunks = decode_dir(dkey, raw)
    # A multi-get of the chunks the directory names: a bulk iterator over values of
    # megabytes read them up to twice as slowly.
    values = [value for value in storage.multi_get([rows_key(tail, n) for n in range(chunks)]) if value is not None]
    if len(values) != chunks or sum(map(len, values)) != count * INDEX_VALUE_SIZE:
        raise CorruptRecord(dkey, "pack chunks disagree with the directory")
    chunk_cols = [decode_chunk(rows_key(tail, n), value) for n, value in enumerate(values)]
    cols = chunk_cols[0] if len(chunk_cols) == 1 else Columns.concat(chunk_cols)
    if unsound(cols) or not _increasing(cols) or last_id(cols) != bound:
        raise CorruptRecord(rows_key(tail, 0), "bad pack rows")
    marked = [key[-ID_SIZE:] for key in scan_keys(storage, DIRTY_PREFIX + tail)]
    marked = [raw_id for raw_id in marked if raw_id <= bound]
    if marked:
        keys = [prefix + raw_id for raw_id in marked]
        current = storage.multi_get(keys)
        cols = applied(cols, {raw_id: _checked(key, value) for raw_id, key, value in zip(marked, keys, current)})
    newer = [value for key, value in storage.scan_items(prefix, start_after(prefix, bound)) if _checked(key, value)]
    if newer:
        cols = Columns.concat([cols, Columns.decode(newer, FIELDS)])
    return cols


def _checked(key: bytes, value: bytes | None) -> bytes | None:
    """An entry's value (None: no entry), after the checks every stored entry passes."""
    if value is not None and not index_value_sound(key, value):
        raise CorruptRecord(key, "bad index value")
    return value


def _increasing(cols: Columns) -> bool:
    """Whether the rows' ids rise strictly."""
    hi, lo = cols["id_hi"], cols["id_lo"]
    return bool(((hi[1:] > hi[:-1]) | ((hi[1:] == hi[:-1]) & (lo[1:] > lo[:-1]))).all())


# ---------------------------------------------------------------------------
# Making packs (`cortex.upkeep.optimize` and `rebuild`)


def large_prefixes(storage: Storage, min_rows: int) -> list[bytes]:
    """The frame prefixes holding at least `min_rows` entries, in key order (one scan
    of every frame key)."""
    found: list[bytes] = []
    current, count = b"", 0
    for key in scan_keys(storage, frame.PREFIX):
        prefix = key[: frame.PREFIX_SIZE]
        if prefix != current:
            if count >= min_rows:
                found.append(current)
            current, count = prefix, 0
        count += 1
    if count >= min_rows:
        found.append(current)
    return found


def packed_tails(storage: Storage) -> list[bytes]:
    """Every tail any pack key names (directory, chunks or markers), in order."""
    tails: set[bytes] = set()
    for sub in (DIR_PREFIX, ROWS_PREFIX, DIRTY_PREFIX):
        tails.update(key[len(sub): len(sub) + TAIL_SIZE] for key in scan_keys(storage, sub))
    return sorted(tails)


def pack_batch(storage: Storage, prefix: bytes) -> dict[bytes, bytes | None]:
    """The batch that (re)packs `prefix` from its stored entries: new chunks and
    directory entry, and deletes of its markers and of chunks it no longer has. A
    prefix without entries loses its pack; a damaged entry raises `CorruptRecord`
    naming it, and nothing is packed. Run under the engine's write lock."""
    tail = tail_of(prefix)
    puts: dict[bytes, bytes | None] = dict.fromkeys(stored_keys(storage, tail))
    rows = scan_rows(storage, prefix, frame.key_of(prefix))
    if not len(rows):
        return puts
    cols = Columns.of_rows(rows, FIELDS)
    chunks = [encode_chunk(cols.slice(i, i + CHUNK_ROWS)) for i in range(0, len(cols), CHUNK_ROWS)]
    for n, chunk in enumerate(chunks):
        puts[rows_key(tail, n)] = chunk
    puts[dir_key(tail)] = encode_dir(last_id(cols), len(cols), len(chunks))
    return puts


def rows_in(batch: Mapping[bytes, bytes | None], prefix: bytes) -> int:
    """The rows a `pack_batch` batch packs (0 when it drops the pack)."""
    value = batch.get(dir_key(tail_of(prefix)))
    return 0 if value is None else int.from_bytes(value[ID_SIZE : ID_SIZE + 4], "big")


def stored_keys(storage: Storage, tail: bytes) -> list[bytes]:
    """Every pack key stored for `tail`: directory entry, chunks and markers."""
    keys = [dir_key(tail)] if storage.get(dir_key(tail)) is not None else []
    for sub in (ROWS_PREFIX, DIRTY_PREFIX):
        keys += scan_keys(storage, sub + tail)
    return keys


def check(storage: Storage) -> list[tuple[bytes, str]]:
    """(key, problem) for every pack that breaks the invariant or is malformed."""
    problems: list[tuple[bytes, str]] = []
    bounds, chunks, malformed = {}, {}, set()
    for key, value in storage.scan_items(DIR_PREFIX):
        tail = key[len(DIR_PREFIX):]
        try:
            bounds[tail], _, chunks[tail] = decode_dir(key, value)
        except CorruptRecord as exc:
            problems.append((key, exc.detail))
            malformed.add(tail)
    for tail in packed_tails(storage):
        prefix = prefix_of(tail)
        if tail not in bounds:
            if tail not in malformed:
                problems.append((ROWS_PREFIX + tail, "pack keys without a directory entry"))
            continue
        try:
            packed = read(storage, prefix)
            stored = Columns.decode(storage.scan_values(prefix), FIELDS)
        except (CorruptRecord, ValueError) as exc:
            problems.append((dir_key(tail), getattr(exc, "detail", str(exc))))
            continue
        if not same(packed, stored):
            problems.append((dir_key(tail), "the pack differs from the entries under its prefix"))
        extra = [key for key in scan_keys(storage, ROWS_PREFIX + tail) if int.from_bytes(key[-4:], "big") >= chunks[tail]]
        if extra:
            problems.append((extra[0], "pack chunk beyond the directory's count"))
        stray = [key for key in scan_keys(storage, DIRTY_PREFIX + tail) if key[-ID_SIZE:] > bounds[tail]]
        if stray:
            problems.append((stray[0], "dirty marker after the last packed id"))
    return problems
