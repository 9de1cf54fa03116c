"""Scanning index entries in bulk: decoded columns, soundness checks, damage reports.

Every index entry holds the same fixed-width value (laid out in `cortex.records`),
so a scan is decoded with one `numpy.frombuffer` and scored without reading any
memory. Invariant: an entry's value is rewritten in the same batch as any change to
the fields it carries (`cortex.index.entries`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CorruptRecord
from ..records import (
    FLAG_PINNED,
    FLAG_TOMBSTONED,
    INDEX_DTYPE,
    TYPE_CODE_MAX,
    TYPE_CODE_MIN,
    TOKEN_FIELDS,
    created_bytes,
    decode_index_values,
    encode_index_value,
    expires_of,
    index_value_sound,
    version_of,
)

if TYPE_CHECKING:
    from ..storage import Storage

__all__ = [
    "FLAG_PINNED", "FLAG_TOMBSTONED", "DTYPE", "TOKEN_FIELDS", "Columns", "created_bytes", "decode_many", "encode",
    "expires_of", "first_bad", "ids_of", "is_sound", "scan_rows", "unsound", "version_of",
]

DTYPE = INDEX_DTYPE
encode = encode_index_value
decode_many = decode_index_values
is_sound = index_value_sound

TYPE_MIN, TYPE_MAX = TYPE_CODE_MIN, TYPE_CODE_MAX


def first_bad(kv: Storage, prefixes: list[bytes], detail: str, otherwise: bytes | None = None) -> CorruptRecord:
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


def scan_rows(kv: Storage, prefix: bytes, key_of: Callable[[bytes], bytes]) -> np.ndarray:
    """Every value under `prefix`, decoded and checked; `CorruptRecord` names a bad one."""
    try:
        rows = decode_many(kv.scan_values(prefix, key_of))
    except ValueError as exc:
        raise first_bad(kv, [prefix], str(exc)) from None
    if unsound(rows):
        raise first_bad(kv, [prefix], "type or version out of range")
    return rows


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
    once into columns and works on those. `take()` copies nothing at first: it keeps
    the row indexes, and a column is gathered the first time it is read (a hot call
    filters tens of thousands of rows, then reads a few columns of them).
    """

    __slots__ = ("_base", "_rows", "_got")

    def __init__(self, data: dict[str, np.ndarray], rows: np.ndarray | None = None) -> None:
        self._base = data
        self._rows = rows  # indexes into the base columns, or None for all of them
        self._got: dict[str, np.ndarray] = data if rows is None else {}

    @staticmethod
    def decode(values: list[bytes], names: tuple[str, ...]) -> Columns:
        rows = decode_many(values)
        return Columns({name: rows[name].astype(rows.dtype[name].newbyteorder("=")) for name in names})

    @property
    def data(self) -> dict[str, np.ndarray]:
        """Every column, gathered."""
        for name in self._base:
            self[name]
        return self._got

    def materialized(self) -> Columns:
        """The same rows in arrays of their own (what may be changed in place)."""
        return self if self._rows is None else Columns(dict(self.data))

    def __len__(self) -> int:
        return len(self._base["id_hi"]) if self._rows is None else len(self._rows)

    def __getitem__(self, name: str) -> np.ndarray:
        got = self._got.get(name)
        if got is None:
            got = self._got[name] = self._base[name][self._rows]
        return got

    @staticmethod
    def concat(parts: list[Columns]) -> Columns:
        """The rows of every part, in order, in new arrays (never a part's own)."""
        names = tuple(parts[0]._base)
        return Columns({name: np.concatenate([part[name] for part in parts]) for name in names})

    def slice(self, start: int, stop: int) -> Columns:
        """Rows start..stop (views of the base columns when nothing was taken)."""
        if self._rows is None:
            return Columns({name: column[start:stop] for name, column in self._base.items()})
        return Columns(self._base, self._rows[start:stop])

    def take(self, selector: np.ndarray) -> Columns:
        """The rows a boolean mask or an index array selects."""
        picked = np.flatnonzero(selector) if selector.dtype == bool else selector
        return Columns(self._base, picked if self._rows is None else self._rows[picked])

    def ids(self) -> list[bytes]:
        return ids_of(self)  # type: ignore[arg-type]
