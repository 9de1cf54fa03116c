"""Every stored byte format, in one place: the canonical key layout and the records.

A newcomer finds here what each key holds and how its bytes are laid out; the
derived index keys are laid out in `cortex.index` (one module per index), and all
of them hold the index value defined below. Keys are fixed-width byte strings with
big-endian integers, so byte order is the order the scans need.

| key                       | holds                                                         |
|---------------------------|---------------------------------------------------------------|
| `m/<id16>`                | head: the current version, denormalised (`Head`)               |
| `mv/<id16><ver8>`         | an immutable version (`Version`)                               |
| `j/<seq8>`                | journal entry: running root (32 bytes) + entry (`Entry`)       |
| `sal/<id16>`              | salience record (`encode_score`)                               |
| `idx/...`                 | index entries, each holding an index value (`encode_index_value`) |
| `idx/edge_out/`, `idx/edge_in/` | edges between memories, both directions (`EdgeRecord`; `cortex.index.edge`) |
| `meta/actor`, `meta/tokenizer`, `meta/schema` | settings, UTF-8 text                       |
| `meta/journal`            | journal head: seq8 + root32 (`JournalHead`)                   |
| `meta/journal_format`     | the journal format, ASCII digits (absent: format 1; see `cortex.journal`) |
| `meta/weights`            | learned salience weights (`encode_weights`)                    |
| `meta/clock_high`         | u64: the latest `at` of any journal entry (derived)            |
| `meta/import`             | present only while an import runs (`cortex.interop.jsonl`)     |
| `meta/store_id`           | 16 random bytes naming this store (scopes are granted for it)  |
| `meta/trust/<name>`       | a trusted scope signer: Ed25519 key + when (`encode_trust`; derived) |
| `meta/revoked/<scope_id32>` | a revoked scope: when (`encode_revoked`; derived)            |

Invariants kept by the code that uses these formats:

* Canonical keys are `m/`, `mv/`, `j/` and `meta/journal` (and the settings);
  everything else can be recreated from them (`rebuild()`). The trust and
  revocation records are the journal's trust / untrust / revoke entries folded
  (`cortex.scope.Grants`).
* Every change is one atomic batch: a crash leaves all of it or none of it.
* An index entry's value is rewritten in the same batch as any change to the
  fields it carries (`cortex.index.entries` decides which entries a memory has).

Records are msgpack arrays (2.4 µs to decode against 5.8 µs as maps); positions in
them are the named offsets `H_*` and `V_*`. Heads decode into tuples
(`unpack_head`), every other record into lists. Every field of a stored head is decoded
by one function in `HEAD_FIELDS`, used both by `Head.decode` (the write path and
upkeep) and by the lazy `cortex.memory.Memory` (the read path).

Length: over the ~600 lines a module keeps to, on purpose: every key layout and record
format in one module, so that each is stated once.
"""

from __future__ import annotations

import hashlib
import struct
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

import msgpack
import numpy as np

from .errors import CorruptRecord
from .model import DATA_CLASSES, MAX_IMPORTANCE, Frame, MemoryData, MemoryType, ObjKind, Verb, field_names, stored_frame, to_micros
from .provenance import Provenance, record_ok

SCHEMA_VERSION = 1

# ---------------------------------------------------------------------------
# Canonical keys

HEAD_PREFIX = b"m/"
VERSION_PREFIX = b"mv/"
JOURNAL_PREFIX = b"j/"
SALIENCE_PREFIX = b"sal/"
META_PREFIX = b"meta/"
INDEX_PREFIX = b"idx/"

META_ACTOR = b"meta/actor"
META_TOKENIZER = b"meta/tokenizer"
META_SCHEMA = b"meta/schema"
META_JOURNAL = b"meta/journal"
META_JOURNAL_FORMAT = b"meta/journal_format"
META_WEIGHTS = b"meta/weights"
META_CLOCK_HIGH = b"meta/clock_high"
META_IMPORT = b"meta/import"  # while an import runs: the file's root and digest
# Moved by every batch that changes what followers' caches may hold (see
# `Engine.write`): the store's write history, not its memories, so exports leave it
# out (`migrate()` copies it, last).
META_CACHE_EPOCH = b"meta/cache_epoch"
# 16 random bytes made when the store is created (or, for a store made before,
# when a writer first opens it): the store a scope is granted for (docs/scopes.md).
META_STORE_ID = b"meta/store_id"
TRUST_PREFIX = b"meta/trust/"  # + the trusted name, UTF-8
REVOKED_PREFIX = b"meta/revoked/"  # + the scope id, 32 bytes

# Every top-level prefix a store holds, in key order (a whole-store scan reads these).
ALL_PREFIXES = (INDEX_PREFIX, HEAD_PREFIX, META_PREFIX, VERSION_PREFIX, JOURNAL_PREFIX, SALIENCE_PREFIX)

ID_SIZE = 16


def head_key(raw_id: bytes) -> bytes:
    return HEAD_PREFIX + raw_id


def head_keys(raw_ids: list[bytes]) -> list[bytes]:
    return [HEAD_PREFIX + raw_id for raw_id in raw_ids]


def version_key(raw_id: bytes, version: int) -> bytes:
    return VERSION_PREFIX + raw_id + version.to_bytes(8, "big")


def journal_key(seq: int) -> bytes:
    return JOURNAL_PREFIX + seq.to_bytes(8, "big")


def salience_key(raw_id: bytes) -> bytes:
    return SALIENCE_PREFIX + raw_id


def trust_key(name: str) -> bytes:
    return TRUST_PREFIX + name.encode("utf-8")


def revoked_key(scope_id: bytes) -> bytes:
    return REVOKED_PREFIX + scope_id


def prefix_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key that starts with `prefix`."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        raise ValueError("a prefix of only 0xff bytes has no end")
    return stripped[:-1] + bytes([stripped[-1] + 1])


# ---------------------------------------------------------------------------
# msgpack

_packers = threading.local()


def pack(value: Any) -> bytes:
    """msgpack bytes of `value`. One reusable `Packer` per thread: building one per
    call (what `msgpack.packb` does) costs a third of a small record's packing."""
    try:
        packer = _packers.packer
    except AttributeError:
        packer = _packers.packer = msgpack.Packer(use_bin_type=True)
    return packer.pack(value)  # type: ignore[no-any-return]


def unpack(key: bytes, raw: bytes, use_list: bool = True) -> Any:
    """msgpack-decode a stored value; `CorruptRecord` naming the key if it fails.
    `use_list=False` decodes arrays into tuples (`unpack_head`)."""
    try:
        return msgpack.unpackb(raw, raw=False, strict_map_key=False, use_list=use_list)
    except Exception as exc:  # msgpack raises several unrelated types
        raise CorruptRecord(key, f"undecodable msgpack ({type(exc).__name__})") from None


def unpack_head(key: bytes, raw: bytes) -> tuple[Any, ...]:
    """Decode a stored head with tuples where `unpack` makes lists (the shape is then
    checked by `head_shape_ok`).

    Why tuples: a handle keeps tens of thousands of decoded heads in its caches
    (`cortex.memory.CurrentHeads`). Python's garbage collector walks every list on
    each full collection, and a head decodes into about ten of them, while a tuple
    that holds only strings, numbers and such tuples is left out of the walk once a
    collection has seen that (one collection per level of nesting). With 19,000
    cached heads a full collection took 155 ms with lists and 25-37 ms with tuples."""
    return unpack(key, raw, use_list=False)  # type: ignore[no-any-return]


def is_int(value: Any, lo: int = -(2**63), hi: int = 2**63) -> bool:
    """An int (not a bool) with lo <= value < hi: the check every stored-record rule uses."""
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value < hi


# ---------------------------------------------------------------------------
# Frames and data as stored


def frames_record(frames: Iterable[Frame]) -> list[list[Any]]:
    """Frames as stored: `[verb, kind, ref]` lists."""
    return [[int(f.verb), int(f.kind), f.ref] for f in frames]


def decode_frames(raw: Sequence[Sequence[Any]], validate: bool = False) -> tuple[Frame, ...]:
    return tuple(Frame(Verb(v), ObjKind(k), ref) if validate else stored_frame(v, k, ref) for v, k, ref in raw)


def decode_data(mtype: int, raw: Sequence[Any], validate: bool = False) -> MemoryData:
    """The data of a record of type code `mtype`; KeyError for an unknown code."""
    return DATA_CLASSES[mtype].from_record(raw, validate)  # type: ignore[index]  # an IntEnum key is found by its int


def content_hash(record: list[Any]) -> bytes:
    """sha256 of a data record (`MemoryData.to_record()`)."""
    return hashlib.sha256(pack(record)).digest()


# ---------------------------------------------------------------------------
# Head and version records

(H_TYPE, H_VERSION, H_CREATED, H_UPDATED, H_FRAMES, H_TAGS, H_IMPORTANCE, H_TOMBSTONE,
 H_EXPIRES, H_DATA, H_CONFIDENCE, H_SOURCE, H_FORMS, H_TOKENS, H_PROV) = range(15)
HEAD_LENGTH = 14
(V_DATA, V_CREATED, V_CREATED_BY, V_CONFIDENCE, V_SOURCE, V_FORMS, V_TOKENS, V_HASH, V_PROV) = range(9)
VERSION_LENGTH = 8
# A memory with provenance (`cortex.provenance`) has one more element at the end of
# its head and of its version records: `H_PROV` / `V_PROV`. Without it the records
# are exactly those stores held before provenance existed.
HEAD_LENGTHS = (HEAD_LENGTH, HEAD_LENGTH + 1)
VERSION_LENGTHS = (VERSION_LENGTH, VERSION_LENGTH + 1)

_MAX_MICROS = to_micros(datetime(9999, 12, 31, tzinfo=timezone.utc))
_TYPE_CODES = frozenset(int(t) for t in MemoryType)
TYPE_CODE_MIN, TYPE_CODE_MAX = min(_TYPE_CODES), max(_TYPE_CODES)
_DATA_LENGTHS = {int(t): len(field_names(cls)) for t, cls in DATA_CLASSES.items()}


def _is_time(value: Any) -> bool:
    """Microseconds since the epoch that a datetime can hold."""
    return type(value) is int and 0 <= value <= _MAX_MICROS


def _texts(value: Any, count: int) -> bool:
    return isinstance(value, list) and len(value) == count and all(isinstance(v, str) for v in value)


def _ints(value: Any, count: int) -> bool:
    return isinstance(value, list) and len(value) == count and all(is_int(v) and 0 <= v < 2**32 for v in value)


def head_shape_ok(rec: Any) -> bool:
    """Whether a head decoded by `unpack_head` has the shape the write path stores. Every read
    of a head runs this, so it is written out flat (4x faster than with helpers);
    field values are then checked as they decode (`HEAD_FIELDS`)."""
    try:
        if type(rec) is not tuple or len(rec) not in HEAD_LENGTHS:
            return False
        mtype, version, created, updated, frames, tags, importance, tomb, expires, data, conf, source, forms, tokens = rec[:HEAD_LENGTH]
        if len(rec) > H_PROV and not record_ok(rec[H_PROV]):
            return False
        if type(mtype) is not int or type(data) is not tuple or _DATA_LENGTHS.get(mtype) != len(data):
            return False
        if type(version) is not int or not 1 <= version < 2**32 or type(importance) is not int or not 0 <= importance <= MAX_IMPORTANCE:
            return False
        if not (_is_time(created) and _is_time(updated) and (expires is None or _is_time(expires))):
            return False
        if type(conf) is not float or not 0.0 <= conf <= 1.0 or type(source) is not str:
            return False
        if tomb is not None and (type(tomb) is not tuple or len(tomb) != 2):
            return False
        if type(frames) is not tuple or type(tags) is not tuple:
            return False
        for frame in frames:
            if type(frame) is not tuple or len(frame) != 3:
                return False
        for tag in tags:
            if type(tag) is not str:
                return False
        if type(forms) is not tuple or len(forms) != 2 or type(forms[0]) is not str or type(forms[1]) is not str:
            return False
        if type(tokens) is not tuple or len(tokens) != 3:
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
            isinstance(rec, list) and len(rec) in VERSION_LENGTHS
            and is_int(mtype) and mtype in _TYPE_CODES and isinstance(rec[V_DATA], list) and len(rec[V_DATA]) == _DATA_LENGTHS[mtype]
            and _is_time(rec[V_CREATED]) and isinstance(rec[V_CREATED_BY], str)
            and isinstance(rec[V_CONFIDENCE], float) and 0.0 <= rec[V_CONFIDENCE] <= 1.0
            and isinstance(rec[V_SOURCE], str) and _texts(rec[V_FORMS], 2) and _ints(rec[V_TOKENS], 3)
            and isinstance(rec[V_HASH], bytes) and len(rec[V_HASH]) == 32
            and (len(rec) == VERSION_LENGTH or record_ok(rec[V_PROV]))
        )
    except Exception:
        return False


def _tombstone(raw: tuple[Any, ...] | None) -> tuple[int, str] | None:
    return (raw[0], raw[1]) if raw else None


# How each head field decodes from its stored value: the one decoder of a head,
# used by `Head.decode` and by `cortex.memory.Memory` alike.
HEAD_FIELDS: dict[str, tuple[int, Callable[[tuple[Any, ...]], Any]]] = {
    "type": (H_TYPE, lambda rec: MemoryType(rec[H_TYPE])),
    "version": (H_VERSION, lambda rec: rec[H_VERSION]),
    "created": (H_CREATED, lambda rec: rec[H_CREATED]),
    "updated": (H_UPDATED, lambda rec: rec[H_UPDATED]),
    "frames": (H_FRAMES, lambda rec: decode_frames(rec[H_FRAMES])),
    "tags": (H_TAGS, lambda rec: tuple(rec[H_TAGS])),
    "importance": (H_IMPORTANCE, lambda rec: rec[H_IMPORTANCE]),
    "tombstone": (H_TOMBSTONE, lambda rec: _tombstone(rec[H_TOMBSTONE])),
    "expires": (H_EXPIRES, lambda rec: rec[H_EXPIRES]),
    "data": (H_DATA, lambda rec: decode_data(rec[H_TYPE], rec[H_DATA])),
    "confidence": (H_CONFIDENCE, lambda rec: rec[H_CONFIDENCE]),
    "source": (H_SOURCE, lambda rec: rec[H_SOURCE]),
    "forms": (H_FORMS, lambda rec: (rec[H_FORMS][0], rec[H_FORMS][1])),
    "tokens": (H_TOKENS, lambda rec: (rec[H_TOKENS][0], rec[H_TOKENS][1], rec[H_TOKENS][2])),
    "prov": (H_PROV, lambda rec: head_provenance(rec)),
}


def head_provenance(rec: Sequence[Any]) -> Provenance | None:
    """The provenance a decoded head holds (None when it has none)."""
    return Provenance.from_record(rec[H_PROV]) if len(rec) > H_PROV else None


def version_provenance(rec: Sequence[Any]) -> Provenance | None:
    """The provenance a decoded version record holds (None when it has none)."""
    return Provenance.from_record(rec[V_PROV]) if len(rec) > V_PROV else None



class Head(NamedTuple):
    """The mutable head of a memory, with a copy of its current version.

    (A NamedTuple rather than a frozen dataclass: it is built for every record a
    read decodes, and a tuple builds several times faster; changes use `_replace`.)

    `created` is when version 1 was written and `updated` when the current version
    was, both in microseconds since the epoch; `tombstone` is `(at, reason)` or None;
    `prov` the current version's provenance (`cortex.provenance`) or None.
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
    prov: Provenance | None = None

    def encode(self, record: list[Any] | None = None, frames: list[list[Any]] | None = None) -> bytes:
        """The stored bytes. `record` is `data.to_record()` and `frames` the
        `frames_record()`, when the caller has them already."""
        fields = [
            int(self.type), self.version, self.created, self.updated,
            frames_record(self.frames) if frames is None else frames,
            list(self.tags), self.importance,
            list(self.tombstone) if self.tombstone else None,
            self.expires,
            self.data.to_record() if record is None else record,
            self.confidence, self.source, list(self.forms), list(self.tokens),
        ]
        if self.prov is not None:
            fields.append(self.prov.record())
        return pack(fields)

    @property
    def occurred(self) -> int:
        """When the memory happened, µs: its provenance's `occurred_at`, else `created`."""
        prov = self.prov
        if prov is None or prov.occurred_at is None:
            return self.created
        return to_micros(prov.occurred_at)

    @staticmethod
    def decode(key: bytes, raw: bytes, validate: bool = False) -> Head:
        """Decode a stored head; `validate` runs the data class rules again (verify())."""
        rec = unpack_head(key, raw)
        if not head_shape_ok(rec):
            raise CorruptRecord(key, "bad head record")
        try:
            values = {name: decode(rec) for name, (_, decode) in HEAD_FIELDS.items()}
            if validate:
                values["frames"] = decode_frames(rec[H_FRAMES], True)
                values["data"] = decode_data(rec[H_TYPE], rec[H_DATA], True)
            return Head(**values)
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
    prov: Provenance | None = None

    def encode(self, record: list[Any] | None = None) -> bytes:
        fields = [
            self.data.to_record() if record is None else record,
            self.created, self.created_by, self.confidence, self.source,
            list(self.forms), list(self.tokens), self.content_hash,
        ]
        if self.prov is not None:
            fields.append(self.prov.record())
        return pack(fields)

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
                prov=version_provenance(rec),
            )
        except Exception as exc:
            raise CorruptRecord(key, f"bad version record ({type(exc).__name__}: {exc})") from None


# ---------------------------------------------------------------------------
# Salience records and learned weights

# A salience record: (last_used µs, access_count, citations, importance, pinned).
ScoreRecord = tuple[int, int, int, int, bool]
# Learned weights: (recency, access, citation, importance).
WeightsRecord = tuple[float, float, float, float]


def encode_score(record: ScoreRecord) -> bytes:
    return pack(list(record))


def decode_score(key: bytes, raw: bytes) -> ScoreRecord:
    """A stored salience record; `CorruptRecord` naming the key unless well-formed."""
    rec = unpack(key, raw)
    if not (isinstance(rec, list) and len(rec) == 5 and all(is_int(v, 0) for v in rec[:4]) and isinstance(rec[4], bool)):
        raise CorruptRecord(key, "bad salience record")
    return (rec[0], rec[1], rec[2], rec[3], rec[4])


def encode_weights(record: WeightsRecord) -> bytes:
    return pack(list(record))


def decode_weights(raw: bytes) -> WeightsRecord:
    """Stored weights; `CorruptRecord` unless four finite non-negative floats that sum above 0."""
    rec = unpack(META_WEIGHTS, raw)
    if not (isinstance(rec, list) and len(rec) == 4 and all(isinstance(v, float) and 0.0 <= v < float("inf") for v in rec) and sum(rec) > 0):
        raise CorruptRecord(META_WEIGHTS, "bad weights record")
    return (rec[0], rec[1], rec[2], rec[3])


# ---------------------------------------------------------------------------
# Trusted scope signers and revoked scopes (`cortex.scope`)

# `meta/trust/<name>`: [public key (32 bytes), trusted at (µs)].
# `meta/revoked/<scope_id>`: [revoked at (µs)].


def encode_trust(public_key: bytes, at: int) -> bytes:
    return pack([public_key, at])


def decode_trust(key: bytes, raw: bytes) -> tuple[bytes, int]:
    rec = unpack(key, raw)
    if not (isinstance(rec, list) and len(rec) == 2 and isinstance(rec[0], bytes) and len(rec[0]) == 32 and is_int(rec[1], 0)):
        raise CorruptRecord(key, "bad trust record")
    return rec[0], rec[1]


def encode_revoked(at: int) -> bytes:
    return pack([at])


def decode_revoked(key: bytes, raw: bytes) -> int:
    rec = unpack(key, raw)
    if not (isinstance(rec, list) and len(rec) == 1 and is_int(rec[0], 0)):
        raise CorruptRecord(key, "bad revocation record")
    return int(rec[0])


# ---------------------------------------------------------------------------
# Journal entries, the journal head and the clock high-water mark

ROOT_SIZE = 32

# Journal formats (`cortex.journal`): 1, the first; 2, whose write and update entries
# carry the content hash of the version they write. New stores are made in the
# newest; a store records its own under `meta/journal_format` (absent: 1).
JOURNAL_FORMATS = (1, 2)
NEW_JOURNAL_FORMAT = 2


def decode_journal_format(raw: bytes | None) -> int:
    """The journal format a store records; `CorruptRecord` for one this cortex does not know."""
    if raw is None:
        return 1
    if raw not in {str(f).encode() for f in JOURNAL_FORMATS}:
        raise CorruptRecord(META_JOURNAL_FORMAT, f"unknown journal format {raw[:16]!r}; this cortex reads formats {JOURNAL_FORMATS}")
    return int(raw)


@dataclass(frozen=True, slots=True)
class JournalHead:
    """`meta/journal`: the last entry's sequence number and the running root, with the
    store's journal format (not stored here: `meta/journal_format`), which the next
    entry is chained and written in."""

    seq: int
    root: bytes
    format: int = 1

    def encode(self) -> bytes:
        return self.seq.to_bytes(8, "big") + self.root

    @staticmethod
    def decode(raw: bytes | None, format: int = 1) -> JournalHead:
        if raw is None:
            return JournalHead(0, bytes(ROOT_SIZE), format)
        if len(raw) != 8 + ROOT_SIZE:
            raise CorruptRecord(META_JOURNAL, f"journal head of {len(raw)} bytes, not {8 + ROOT_SIZE}")
        return JournalHead(int.from_bytes(raw[:8], "big"), raw[8:], format)


@dataclass(frozen=True, slots=True)
class Entry:
    """One journal entry `{seq, kind, at, payload}` (msgpack map)."""

    seq: int
    kind: str
    at: int
    payload: dict[str, Any]

    def encode(self) -> bytes:
        return encode_entry(self.seq, self.kind, self.at, self.payload)

    @staticmethod
    def decode(key: bytes, raw: bytes) -> Entry:
        """An entry from its msgpack bytes (a stored value without its root)."""
        rec = unpack(key, raw)
        return Entry(rec["seq"], rec["kind"], rec["at"], rec["payload"])


def encode_entry(seq: int, kind: str, at: int, payload: dict[str, Any]) -> bytes:
    """An entry's bytes from its fields (what `Entry.encode` gives, without building an
    `Entry`: the write path encodes one per memory)."""
    return pack({"seq": seq, "kind": kind, "at": at, "payload": payload})


def journal_value(root: bytes, entry_bytes: bytes) -> bytes:
    """A stored `j/` value: the root after this entry, then the entry's bytes."""
    return root + entry_bytes


def split_journal_value(value: bytes) -> tuple[bytes, bytes]:
    """A stored journal value as (root after this entry, entry bytes)."""
    return value[:ROOT_SIZE], value[ROOT_SIZE:]


def encode_clock_high(at: int) -> bytes:
    return at.to_bytes(8, "big")


def decode_clock_high(raw: bytes | None) -> int | None:
    if raw is None:
        return None
    if len(raw) != 8:
        raise CorruptRecord(META_CLOCK_HIGH, "must be 8 bytes")
    return int.from_bytes(raw, "big")


def encode_cache_epoch(epoch: int) -> bytes:
    return epoch.to_bytes(8, "big")


def decode_cache_epoch(raw: bytes | None) -> int | None:
    """The cache epoch, or None when there is none or it is damaged (`verify()` names
    that): followers then keep no cache across a catch-up, and the writer's next
    batch stores a sound one."""
    return int.from_bytes(raw, "big") if raw is not None and len(raw) == 8 else None


# ---------------------------------------------------------------------------
# The index value
#
# Every index entry holds the same fixed-width value, so that a scan can be decoded
# in bulk with one `numpy.frombuffer` and scored without reading any memory:
#
#     id16 | type u8 | flags u8 | importance u8 | version u32 | created u64 |
#     last_used u64 | expires u64 | access_count u32 | citations u32 |
#     short_tokens u16 | medium_tokens u16 | full_tokens u32
#
# Integers are big-endian; times are microseconds since the epoch (`expires` 0 =
# never). Counters saturate at their width.

FLAG_PINNED = 1
FLAG_TOMBSTONED = 2
# Set from the memory's edges (`cortex.index.edge.flags_of`); stores written before
# edges existed hold 0 here, which is what a memory without edges has.
FLAG_SUPERSEDED = 4  # a live `supersedes` edge from a live memory points at it
FLAG_CONTRADICTED = 8  # a live `contradicts` edge starts or ends at it
EDGE_FLAGS = FLAG_SUPERSEDED | FLAG_CONTRADICTED

_INDEX_STRUCT = struct.Struct(">16sBBBIQQQIIHHI")
INDEX_VALUE_SIZE = _INDEX_STRUCT.size

INDEX_DTYPE = np.dtype(
    [
        ("id_hi", ">u8"), ("id_lo", ">u8"), ("type", "u1"), ("flags", "u1"), ("importance", "u1"),
        ("version", ">u4"), ("created", ">u8"), ("last_used", ">u8"), ("expires", ">u8"),
        ("access", ">u4"), ("citations", ">u4"),
        ("short_tokens", ">u2"), ("medium_tokens", ">u2"), ("full_tokens", ">u4"),
    ]
)
assert INDEX_DTYPE.itemsize == INDEX_VALUE_SIZE

TOKEN_FIELDS = {"short": "short_tokens", "medium": "medium_tokens", "full": "full_tokens"}


def _offset(name: str) -> int:
    return int(INDEX_DTYPE.fields[name][1])  # type: ignore[index]


# Named offsets into an index value.
IV_ID = slice(0, ID_SIZE)
IV_TYPE = _offset("type")
IV_FLAGS = _offset("flags")
IV_VERSION = slice(_offset("version"), _offset("version") + 4)
IV_CREATED = slice(_offset("created"), _offset("created") + 8)
IV_EXPIRES = _offset("expires")
_EXPIRES = struct.Struct(">Q")


def encode_index_value(
    raw_id: bytes, *, type: int, flags: int, importance: int, version: int, created: int,
    last_used: int, expires: int, access: int, citations: int, tokens: tuple[int, int, int],
) -> bytes:
    return _INDEX_STRUCT.pack(
        raw_id, type, flags, importance, version, created, last_used, expires,
        min(access, 2**32 - 1), min(citations, 2**32 - 1),
        min(tokens[0], 2**16 - 1), min(tokens[1], 2**16 - 1), min(tokens[2], 2**32 - 1),
    )


def id_of(value: bytes) -> bytes:
    return value[IV_ID]


def expires_of(value: bytes) -> int:
    """The `expires` field of one index value, without decoding the rest."""
    return int(_EXPIRES.unpack_from(value, IV_EXPIRES)[0])


def created_bytes(value: bytes) -> bytes:
    """The 8 big-endian bytes of `created` in an index value (as index keys hold them)."""
    return value[IV_CREATED]


def version_of(value: bytes) -> int:
    return int.from_bytes(value[IV_VERSION], "big")


def index_value_sound(key: bytes, value: bytes) -> bool:
    """Whether an index entry's value can be what the write path stored under `key`:
    the right size, the id that ends the key, a known type, a version."""
    return (len(value) == INDEX_VALUE_SIZE and value[IV_ID] == key[-ID_SIZE:]
            and TYPE_CODE_MIN <= value[IV_TYPE] <= TYPE_CODE_MAX and version_of(value) > 0)


def decode_index_values(values: list[bytes]) -> np.ndarray:
    """A structured array (`INDEX_DTYPE`) of many index values; ValueError on a bad size."""
    if not values:
        return np.empty(0, dtype=INDEX_DTYPE)
    buf = b"".join(values)
    if len(buf) != INDEX_VALUE_SIZE * len(values):
        raise ValueError("index value of the wrong size")
    return np.frombuffer(buf, dtype=INDEX_DTYPE)


# ---------------------------------------------------------------------------
# Edges between memories (`cortex.edges`; keys laid out in `cortex.index.edge`)
#
# An edge record is the msgpack array `[weight, created, tombstone]`: weight a float
# in [0, 1], created the µs time the edge was (last) linked, tombstone None or
# `[at µs, reason]` once unlinked. `idx/edge_out/` and `idx/edge_in/` hold the same
# bytes, so either direction reads an edge in one scan. Both are derived: the
# journal's link and unlink entries fold into them (`cortex.journal.fold_edge`).


class EdgeRecord(NamedTuple):
    weight: float
    created: int
    tombstone: tuple[int, str] | None = None

    @property
    def live(self) -> bool:
        return self.tombstone is None

    def encode(self) -> bytes:
        return pack([self.weight, self.created, None if self.tombstone is None else list(self.tombstone)])

    @staticmethod
    def decode(key: bytes, raw: bytes) -> EdgeRecord:
        """A stored edge record; `CorruptRecord` naming the key unless well-formed."""
        rec = unpack(key, raw)
        if not (isinstance(rec, list) and len(rec) == 3 and type(rec[0]) is float and 0.0 <= rec[0] <= 1.0 and _is_time(rec[1])):
            raise CorruptRecord(key, "bad edge record")
        tomb = rec[2]
        if tomb is None:
            return EdgeRecord(rec[0], rec[1])
        if not (isinstance(tomb, list) and len(tomb) == 2 and _is_time(tomb[0]) and isinstance(tomb[1], str)):
            raise CorruptRecord(key, "bad edge record")
        return EdgeRecord(rec[0], rec[1], (tomb[0], tomb[1]))
