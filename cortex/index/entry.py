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

import numpy as np

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


def id_pair(value: bytes) -> tuple[int, int]:
    """(id_hi, id_lo) of one value: the form the composer's id sets use."""
    return int.from_bytes(value[:8], "big"), int.from_bytes(value[8:16], "big")


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

    @staticmethod
    def concat(parts: list[Columns], names: tuple[str, ...]) -> Columns:
        if not parts:
            return Columns({name: np.empty(0, dtype=DTYPE[name].newbyteorder("=")) for name in names})
        return Columns({name: np.concatenate([p.data[name] for p in parts]) for name in names})

    def __len__(self) -> int:
        return len(self.data["id_hi"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[name]

    def take(self, selector: np.ndarray) -> Columns:
        """The rows a boolean mask or an index array selects."""
        return Columns({name: column[selector] for name, column in self.data.items()})

    def ids(self) -> list[bytes]:
        return ids_of(self)  # type: ignore[arg-type]
