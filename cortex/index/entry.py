"""The value stored under every index key: what scoring and trimming need.

Every index entry (`idx/type`, `idx/tag`, `idx/pinned`, `idx/frame`, `idx/actor_obj`)
holds the same fixed-width 63-byte value, so that a scan can be decoded in bulk with
one `numpy.frombuffer` and scored without reading any memory:

    id16 | type u8 | flags u8 | importance u8 | version u32 | created u64 |
    last_used u64 | expires u64 | access_count u32 | citations u32 |
    short_tokens u16 | medium_tokens u16 | full_tokens u32

Integers are big-endian; times are microseconds since the epoch (`expires` 0 =
never). `flags` bit 0 = pinned, bit 1 = tombstoned. Invariant: an entry's value is
rewritten in the same batch as any change to these fields (`cortex.index.entries`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CorruptRecord
from ..model import MemoryType

if TYPE_CHECKING:
    from ..store import KV

# The memory type codes an entry may hold.
TYPE_MIN, TYPE_MAX = int(min(MemoryType)), int(max(MemoryType))

FLAG_PINNED = 1
FLAG_TOMBSTONED = 2

_STRUCT = struct.Struct(">16sBBBIQQQIIHHI")
SIZE = _STRUCT.size

DTYPE = np.dtype(
    [
        ("id_hi", ">u8"),
        ("id_lo", ">u8"),
        ("type", "u1"),
        ("flags", "u1"),
        ("importance", "u1"),
        ("version", ">u4"),
        ("created", ">u8"),
        ("last_used", ">u8"),
        ("expires", ">u8"),
        ("access", ">u4"),
        ("citations", ">u4"),
        ("short_tokens", ">u2"),
        ("medium_tokens", ">u2"),
        ("full_tokens", ">u4"),
    ]
)
assert DTYPE.itemsize == SIZE

TOKEN_FIELDS = {"short": "short_tokens", "medium": "medium_tokens", "full": "full_tokens"}


def encode(
    raw_id: bytes,
    *,
    type: int,
    flags: int,
    importance: int,
    version: int,
    created: int,
    last_used: int,
    expires: int,
    access: int,
    citations: int,
    tokens: tuple[int, int, int],
) -> bytes:
    return _STRUCT.pack(
        raw_id, type, flags, importance, version, created, last_used, expires,
        min(access, 2**32 - 1), min(citations, 2**32 - 1),
        min(tokens[0], 2**16 - 1), min(tokens[1], 2**16 - 1), min(tokens[2], 2**32 - 1),
    )


_EXPIRES = struct.Struct(">Q")
_EXPIRES_OFFSET = DTYPE.fields["expires"][1]


def expires_of(value: bytes) -> int:
    """The `expires` field of one value, without decoding the rest."""
    return _EXPIRES.unpack_from(value, _EXPIRES_OFFSET)[0]


_CREATED_OFFSET = DTYPE.fields["created"][1]


def created_bytes(value: bytes) -> bytes:
    """The 8 big-endian bytes of `created` in a value (as index keys hold them)."""
    return value[_CREATED_OFFSET : _CREATED_OFFSET + 8]


def version_of(value: bytes) -> int:
    return int.from_bytes(value[19:23], "big")


def is_sound(key: bytes, value: bytes) -> bool:
    """Whether an index entry's value can be what the write path stored under `key`:
    the right size, the id that ends the key, a known type, a version."""
    return len(value) == SIZE and value[:16] == key[-16:] and TYPE_MIN <= value[16] <= TYPE_MAX and version_of(value) > 0


def first_bad(kv: KV, prefixes: list[bytes], detail: str, otherwise: bytes | None = None) -> CorruptRecord:
    """The error naming the first unsound entry under `prefixes` (the slow path, taken
    only after a bulk check failed: it reads the keys too), or else the key
    `otherwise` (the record the check was about)."""
    for prefix in prefixes:
        for key, value in kv.scan_items(prefix):
            if not is_sound(key, value):
                return CorruptRecord(key, f"bad index value ({detail})")
    return CorruptRecord(otherwise or (prefixes[0] if prefixes else b"idx/"), detail)


def unsound(rows: np.ndarray | Columns) -> bool:
    """Whether any decoded row has an unknown type or no version (bulk check)."""
    return bool(len(rows["type"])) and bool(((rows["type"] < TYPE_MIN) | (rows["type"] > TYPE_MAX) | (rows["version"] == 0)).any())


def scan_rows(kv: KV, prefix: bytes, key_of: Callable[[bytes], bytes]) -> np.ndarray:
    """Every value under `prefix`, decoded and checked; `CorruptRecord` names a bad one."""
    try:
        rows = decode_many(kv.scan_values(prefix, key_of))
    except ValueError as exc:
        raise first_bad(kv, [prefix], str(exc)) from None
    if unsound(rows):
        raise first_bad(kv, [prefix], "type or version out of range")
    return rows


def decode_many(values: list[bytes]) -> np.ndarray:
    """A structured array of many values (all `SIZE` bytes long)."""
    if not values:
        return np.empty(0, dtype=DTYPE)
    buf = b"".join(values)
    if len(buf) != SIZE * len(values):
        raise ValueError("index value of the wrong size")
    return np.frombuffer(buf, dtype=DTYPE)


def ids_of(rows: np.ndarray) -> list[bytes]:
    """The 16-byte ids of decoded rows, in row order (whatever their byte order:
    numpy operations such as concatenate may turn rows native-endian)."""
    pairs = np.empty((len(rows), 2), dtype=">u8")
    pairs[:, 0] = rows["id_hi"]
    pairs[:, 1] = rows["id_lo"]
    raw = pairs.tobytes()
    return [raw[i : i + 16] for i in range(0, len(raw), 16)]


class Columns:
    """Decoded index values as native-endian column arrays.

    Filtering a 63-byte structured array copies every row (about 60 ns a row);
    filtering columns copies only the fields in use, so the context() path decodes
    once into columns and works on those.
    """

    __slots__ = ("data",)

    def __init__(self, data: dict[str, np.ndarray]) -> None:
        self.data = data

    @staticmethod
    def decode(values: list[bytes], names: tuple[str, ...]) -> Columns:
        rows = decode_many(values)
        return Columns({name: rows[name].astype(rows.dtype[name].newbyteorder("=")) for name in names})

    def __len__(self) -> int:
        return len(self.data["id_hi"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[name]

    def take(self, selector: np.ndarray) -> Columns:
        """The rows a boolean mask or an index array selects."""
        return Columns({name: column[selector] for name, column in self.data.items()})

    def ids(self) -> list[bytes]:
        return ids_of(self)  # type: ignore[arg-type]
