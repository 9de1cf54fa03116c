"""The store: one RocksDB directory, its canonical keys and records.

This module owns the RocksDB handle (`KV`) and the layout of the canonical keys;
the derived index keys live in `cortex.index`. All keys are fixed-width byte strings
with big-endian integers, so byte order is the order scans need.

| key                       | holds                                                    |
|---------------------------|----------------------------------------------------------|
| `m/<id16>`                | head: the current version, denormalised (see `Head`)      |
| `mv/<id16><ver8>`         | an immutable version (see `Version`)                      |
| `j/<seq8>`                | journal entry (see `cortex.journal`)                      |
| `sal/<id16>`              | salience record (see `cortex.salience`)                   |
| `meta/<name>`             | settings, journal head (seq8 + root32), learned weights   |

The head carries a full copy of the current version's data and forms, so that a
`context()` survivor or a `resolve()` of the current version costs one read.

Invariants kept here:

* Canonical keys are `m/`, `mv/`, `j/` and `meta/journal`; everything else can be
  recreated from them (`Cortex.rebuild()`).
* Every change is one `WriteBatch`: a crash leaves all of it or none of it.
* A `ReadOptions` with an iterate bound stays referenced until its iterator is used
  up (ROCKSDB-NOTES trap 5): `scan_values` / `scan_items` hold it in their frame.
* rocksdict 0.3.29's `set_iterate_lower_bound` behaves as an upper bound, so
  backward scans stop on the prefix themselves instead of using a lower bound.
"""

from __future__ import annotations

import hashlib
import threading
from datetime import datetime, timezone
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import msgpack
from rocksdict import (
    AccessType,
    BlockBasedOptions,
    Cache,
    DBCompressionType,
    Options,
    Rdict,
    ReadOptions,
    WriteBatch,
    WriteOptions,
)

from .errors import CorruptRecord, StoreError
from .model import DATA_CLASSES, MAX_IMPORTANCE, Frame, MemoryData, MemoryType, ObjKind, Verb, field_names, stored_frame, to_micros

SCHEMA_VERSION = 1

HEAD_PREFIX = b"m/"
VERSION_PREFIX = b"mv/"
JOURNAL_PREFIX = b"j/"
SALIENCE_PREFIX = b"sal/"
META_PREFIX = b"meta/"

META_ACTOR = b"meta/actor"
META_TOKENIZER = b"meta/tokenizer"
META_SCHEMA = b"meta/schema"
META_JOURNAL = b"meta/journal"  # seq8 + root32: the journal head
META_WEIGHTS = b"meta/weights"
META_CLOCK_HIGH = b"meta/clock_high"  # u64: the latest `at` of any journal entry (derived)


def head_key(raw_id: bytes) -> bytes:
    return HEAD_PREFIX + raw_id


def version_key(raw_id: bytes, version: int) -> bytes:
    return VERSION_PREFIX + raw_id + version.to_bytes(8, "big")


def journal_key(seq: int) -> bytes:
    return JOURNAL_PREFIX + seq.to_bytes(8, "big")


def salience_key(raw_id: bytes) -> bytes:
    return SALIENCE_PREFIX + raw_id


def prefix_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key that starts with `prefix`."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        raise ValueError("a prefix of only 0xff bytes has no end")
    return stripped[:-1] + bytes([stripped[-1] + 1])


_packers = threading.local()


def pack(value: Any) -> bytes:
    """msgpack bytes of `value`. One reusable `Packer` per thread: building one per
    call (what `msgpack.packb` does) costs a third of a small record's packing."""
    try:
        packer = _packers.packer
    except AttributeError:
        packer = _packers.packer = msgpack.Packer(use_bin_type=True)
    return packer.pack(value)


def unpack(key: bytes, raw: bytes) -> Any:
    """msgpack-decode a stored value; `CorruptRecord` naming the key if it fails."""
    try:
        return msgpack.unpackb(raw, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types
        raise CorruptRecord(key, f"undecodable msgpack ({type(exc).__name__})") from None


# ---------------------------------------------------------------------------
# Records


# Positions in the stored head and version records (msgpack arrays). `Head` and
# `Version` below and the lazy `cortex.memory.Memory` read records through these.
(H_TYPE, H_VERSION, H_CREATED, H_UPDATED, H_FRAMES, H_TAGS, H_IMPORTANCE, H_TOMBSTONE,
 H_EXPIRES, H_DATA, H_CONFIDENCE, H_SOURCE, H_FORMS, H_TOKENS) = range(14)
(V_DATA, V_CREATED, V_CREATED_BY, V_CONFIDENCE, V_SOURCE, V_FORMS, V_TOKENS, V_HASH) = range(8)


def is_int(value: Any, lo: int = -(2**63), hi: int = 2**63) -> bool:
    """An int (not a bool) with lo <= value < hi: the check every stored-record rule uses."""
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value < hi


_MAX_MICROS = to_micros(datetime(9999, 12, 31, tzinfo=timezone.utc))


def _is_time(value: Any) -> bool:
    """Microseconds since the epoch that a datetime can hold."""
    return type(value) is int and 0 <= value <= _MAX_MICROS


def _is_unit(value: Any) -> bool:
    return isinstance(value, float) and 0.0 <= value <= 1.0


def _texts(value: Any, count: int | None = None) -> bool:
    return isinstance(value, list) and (count is None or len(value) == count) and all(isinstance(v, str) for v in value)


def _ints(value: Any, count: int) -> bool:
    return isinstance(value, list) and len(value) == count and all(is_int(v) and 0 <= v < 2**32 for v in value)


def _data_ok(mtype: Any, data: Any) -> bool:
    return (is_int(mtype) and mtype in _TYPE_CODES and isinstance(data, list)
            and len(data) == len(field_names(DATA_CLASSES[MemoryType(mtype)])))


def head_shape_ok(rec: Any) -> bool:
    """Whether a decoded head record has the shape the write path stores. Every read
    of a head runs this, so it is written out flat (4x faster than with helpers);
    field values are then checked as they decode (`cortex.memory`)."""
    try:
        if type(rec) is not list or len(rec) != 14:
            return False
        mtype, version, created, updated, frames, tags, importance, tomb, expires, data, conf, source, forms, tokens = rec
        if type(mtype) is not int or type(data) is not list or _DATA_LENGTHS.get(mtype) != len(data):
            return False
        if type(version) is not int or not 1 <= version < 2**32 or type(importance) is not int or not 0 <= importance <= MAX_IMPORTANCE:
            return False
        if not (_is_time(created) and _is_time(updated) and (expires is None or _is_time(expires))):
            return False
        if type(conf) is not float or not 0.0 <= conf <= 1.0 or type(source) is not str:
            return False
        if tomb is not None and (type(tomb) is not list or len(tomb) != 2):
            return False
        if type(frames) is not list or type(tags) is not list:
            return False
        for frame in frames:
            if type(frame) is not list or len(frame) != 3:
                return False
        for tag in tags:
            if type(tag) is not str:
                return False
        if type(forms) is not list or len(forms) != 2 or type(forms[0]) is not str or type(forms[1]) is not str:
            return False
        if type(tokens) is not list or len(tokens) != 3:
            return False
        for count in tokens:
            if type(count) is not int or not 0 <= count < 2**32:
                return False
        return True
    except Exception:
        return False


def version_shape_ok(rec: Any, mtype: Any) -> bool:
    try:
        return (
            isinstance(rec, list) and len(rec) == 8 and _data_ok(mtype, rec[V_DATA])
            and _is_time(rec[V_CREATED]) and isinstance(rec[V_CREATED_BY], str) and _is_unit(rec[V_CONFIDENCE])
            and isinstance(rec[V_SOURCE], str) and _texts(rec[V_FORMS], 2) and _ints(rec[V_TOKENS], 3)
            and isinstance(rec[V_HASH], bytes) and len(rec[V_HASH]) == 32
        )
    except Exception:
        return False


_TYPE_CODES = frozenset(int(t) for t in MemoryType)
_DATA_LENGTHS = {int(t): len(field_names(cls)) for t, cls in DATA_CLASSES.items()}


def decode_frames(raw: list[list[Any]], validate: bool = False) -> tuple[Frame, ...]:
    return tuple(Frame(Verb(v), ObjKind(k), ref) if validate else stored_frame(v, k, ref) for v, k, ref in raw)


def decode_data(mtype: int, raw: list[Any], validate: bool = False) -> MemoryData:
    return DATA_CLASSES[MemoryType(mtype)].from_record(raw, validate)


class Head(NamedTuple):
    """The mutable head of a memory, with a copy of its current version.

    (A NamedTuple rather than a frozen dataclass: it is built for every record a
    read decodes, and a tuple builds several times faster.)

    `created` is when version 1 was written and `updated` when the current version
    was, both in microseconds since the epoch; `tombstone` is `(at, reason)` or None.
    """

    type: MemoryType
    version: int
    created: int
    updated: int
    frames: tuple[Frame, ...]
    tags: tuple[str, ...]
    importance: int
    tombstone: tuple[int, str] | None
    expires: int | None
    data: MemoryData
    confidence: float
    source: str
    forms: tuple[str, str]
    tokens: tuple[int, int, int]

    def encode(self, record: list[Any] | None = None, frames: list[list[Any]] | None = None) -> bytes:
        """The stored bytes. `record` is `data.to_record()` and `frames` the frames as
        [verb, kind, ref] lists, when the caller has them."""
        return pack(
            [
                int(self.type),
                self.version,
                self.created,
                self.updated,
                [[int(f.verb), int(f.kind), f.ref] for f in self.frames] if frames is None else frames,
                list(self.tags),
                self.importance,
                list(self.tombstone) if self.tombstone else None,
                self.expires,
                self.data.to_record() if record is None else record,
                self.confidence,
                self.source,
                list(self.forms),
                list(self.tokens),
            ]
        )

    @staticmethod
    def decode(key: bytes, raw: bytes, validate: bool = False) -> Head:
        """Decode a stored head; `validate` runs the data class rules again (verify())."""
        rec = unpack(key, raw)
        if not head_shape_ok(rec):
            raise CorruptRecord(key, "bad head record")
        try:
            return Head(
                type=MemoryType(rec[H_TYPE]),
                version=rec[H_VERSION],
                created=rec[H_CREATED],
                updated=rec[H_UPDATED],
                frames=decode_frames(rec[H_FRAMES], validate),
                tags=tuple(rec[H_TAGS]),
                importance=rec[H_IMPORTANCE],
                tombstone=(rec[H_TOMBSTONE][0], rec[H_TOMBSTONE][1]) if rec[H_TOMBSTONE] else None,
                expires=rec[H_EXPIRES],
                data=decode_data(rec[H_TYPE], rec[H_DATA], validate),
                confidence=rec[H_CONFIDENCE],
                source=rec[H_SOURCE],
                forms=(rec[H_FORMS][0], rec[H_FORMS][1]),
                tokens=(rec[H_TOKENS][0], rec[H_TOKENS][1], rec[H_TOKENS][2]),
            )
        except CorruptRecord:
            raise
        except Exception as exc:
            raise CorruptRecord(key, f"bad head record ({type(exc).__name__}: {exc})") from None


class Version(NamedTuple):
    """One immutable version of a memory. `content_hash` is sha256 of the data record."""

    data: MemoryData
    created: int
    created_by: str
    confidence: float
    source: str
    forms: tuple[str, str]
    tokens: tuple[int, int, int]
    content_hash: bytes

    def encode(self, record: list[Any] | None = None) -> bytes:
        return pack(
            [
                self.data.to_record() if record is None else record,
                self.created,
                self.created_by,
                self.confidence,
                self.source,
                list(self.forms),
                list(self.tokens),
                self.content_hash,
            ]
        )

    @staticmethod
    def decode(key: bytes, raw: bytes, mtype: MemoryType, validate: bool = False) -> Version:
        rec = unpack(key, raw)
        if not version_shape_ok(rec, int(mtype)):
            raise CorruptRecord(key, "bad version record")
        try:
            return Version(
                data=decode_data(mtype, rec[V_DATA], validate),
                created=rec[V_CREATED],
                created_by=rec[V_CREATED_BY],
                confidence=rec[V_CONFIDENCE],
                source=rec[V_SOURCE],
                forms=(rec[V_FORMS][0], rec[V_FORMS][1]),
                tokens=(rec[V_TOKENS][0], rec[V_TOKENS][1], rec[V_TOKENS][2]),
                content_hash=rec[V_HASH],
            )
        except Exception as exc:
            raise CorruptRecord(key, f"bad version record ({type(exc).__name__}: {exc})") from None


def content_hash(record: list[Any]) -> bytes:
    """sha256 of a data record (`MemoryData.to_record()`)."""
    return hashlib.sha256(pack(record)).digest()


# ---------------------------------------------------------------------------
# The RocksDB handle


class KV:
    """A raw-mode rocksdict handle with the options that paid off (ROCKSDB-NOTES)."""

    def __init__(self, path: str, *, read_only_secondary: str | None = None, cache_bytes: int = 1 << 30, sync: bool = False) -> None:
        opts = Options(raw_mode=True)
        opts.create_if_missing(read_only_secondary is None)
        opts.set_compression_type(DBCompressionType.lz4())
        table = BlockBasedOptions()
        table.set_bloom_filter(10, False)
        table.set_block_cache(Cache(cache_bytes))
        opts.set_block_based_table_factory(table)
        if read_only_secondary is not None:
            opts.set_max_open_files(-1)  # required by secondary instances
            access = AccessType.secondary(read_only_secondary)
        else:
            access = AccessType.read_write()
        # Passing the options again for "default" makes a reopen use them instead of
        # the saved OPTIONS file (ROCKSDB-NOTES trap 1).
        self.db = Rdict(path, opts, column_families={"default": opts}, access_type=access)
        self._write_opts = WriteOptions()
        self._write_opts.sync = sync

    def close(self) -> None:
        self.db.close()

    def get(self, key: bytes) -> bytes | None:
        try:
            return self.db.get(key)
        except Exception as exc:
            raise _translated(key, exc) from None

    def multi_get(self, keys: list[bytes]) -> list[bytes | None]:
        try:
            return self.db.get(keys) if keys else []
        except Exception as exc:
            raise _translated(keys[0], exc) from None

    def write(self, puts: dict[bytes, bytes | None]) -> None:
        """Apply puts (value None = delete) as one atomic WriteBatch."""
        batch = WriteBatch(raw_mode=True)
        for key, value in puts.items():
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        try:
            self.db.write(batch, self._write_opts)
        except Exception as exc:
            raise _translated(next(iter(puts), b""), exc) from None

    def scan_values(self, prefix: bytes, key_of: Callable[[bytes], bytes] | None = None) -> list[bytes]:
        """Values of every key with `prefix`, in key order (consumed in C: a Python
        generator here cost more than the scan itself). `key_of(value)` gives the key
        a value is stored under, when the value says (index entries do): the scan
        then reads values only, 30% faster than reading the keys too."""
        ro = ReadOptions()
        ro.set_iterate_upper_bound(prefix_end(prefix))
        try:
            if key_of is not None:
                values = list(self.db.values(from_key=prefix, read_opt=ro))
                self._check_scan_end(prefix, key_of(values[-1]) if values else None)
                return values
            items = list(self.db.items(from_key=prefix, read_opt=ro))
        except CorruptRecord:
            raise
        except Exception as exc:
            raise _translated(prefix, exc) from None
        self._check_scan_end(prefix, items[-1][0] if items else None)
        return [value for _, value in items]

    def scan_items(self, prefix: bytes, start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        ro = ReadOptions()
        ro.set_iterate_upper_bound(prefix_end(prefix))
        last = None
        try:
            for last, value in self.db.items(from_key=start or prefix, read_opt=ro):
                yield last, value
        except Exception as exc:
            raise _translated(prefix, exc) from None
        self._check_scan_end(start or prefix, last)

    def scan_keys(self, prefix: bytes) -> Iterator[bytes]:
        for key, _ in self.scan_items(prefix):
            yield key

    def _check_scan_end(self, prefix: bytes, last: bytes | None) -> None:
        """Raise if a scan that ended after `last` ended on an error, not at its bound.

        rocksdict's bulk iterators stop quietly when RocksDB finds a corrupt block;
        the iterator's status says so but is not exposed. So one raw iterator seeks
        to where the scan stopped and steps once: on a corrupt block its status is an
        error. (Finding a key there is not one: a write may have landed since.) One
        seek per scan.
        """
        ro = ReadOptions()
        ro.set_iterate_upper_bound(prefix_end(prefix))
        try:
            it = self.db.iter(ro)
            if last is None:
                it.seek(prefix)
            else:
                it.seek(last)
                if it.valid():
                    it.next()
            it.status()
        except Exception as exc:
            raise _translated(last or prefix, exc) from None

    def scan_items_backward(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Items with `prefix`, last key first."""
        try:
            for key, value in self.db.items(backwards=True, from_key=prefix_end(prefix)):
                if not key.startswith(prefix):
                    if key < prefix:
                        return
                    continue  # from_key itself, when it exists, is past the prefix
                yield key, value
        except Exception as exc:
            raise _translated(prefix, exc) from None

    def last_key(self, prefix: bytes) -> bytes | None:
        """The greatest key with `prefix`, or None."""
        return next((key for key, _ in self.scan_items_backward(prefix)), None)

    def catch_up(self) -> None:
        try:
            self.db.try_catch_up_with_primary()
        except Exception as exc:
            raise _translated(b"", exc) from None


def _translated(key: bytes, exc: Exception) -> Exception:
    """A RocksDB failure as a cortex error: `CorruptRecord` (naming the key or prefix
    being read) when RocksDB found corruption (a checksum mismatch), else `StoreError`."""
    text = str(exc)
    if text.startswith("Corruption") or "checksum" in text.lower():
        return CorruptRecord(key, f"RocksDB reports corruption: {text[:300]}")
    return StoreError(f"RocksDB failed at {key!r}: {text[:300]}")
