"""Index entries in bulk: the fixed-width value every index entry holds, soundness
checks and damage reports.

Every index entry holds the same fixed-width value (laid out in `cortex.records`),
so a scan is decoded with one `numpy.frombuffer` (into `cortex.columns.Columns`
where a call works on it) and scored without reading any memory. Invariant: an
entry's value is rewritten in the same batch as any change to the fields it
carries (`cortex.index.entries`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..columns import DTYPE, id_keys, ids_of, last_id, start_after, unsound
from ..errors import CorruptRecord
from ..records import (
    FLAG_PINNED,
    FLAG_TOMBSTONED,
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
    "FLAG_PINNED", "FLAG_TOMBSTONED", "DTYPE", "TOKEN_FIELDS", "created_bytes", "decode_many", "encode",
    "expires_of", "first_bad", "id_keys", "ids_of", "is_sound", "last_id", "scan_rows", "start_after", "unsound", "version_of",
]

encode = encode_index_value
decode_many = decode_index_values
is_sound = index_value_sound


def first_bad(kv: Storage, prefixes: list[bytes], detail: str, otherwise: bytes | None = None) -> CorruptRecord:
    """The error naming the first unsound entry under `prefixes` (the slow path, taken
    only after a bulk check failed: it reads the keys too), or else the key
    `otherwise` (the record the check was about)."""
    for prefix in prefixes:
        for key, value in kv.scan_items(prefix):
            if not is_sound(key, value):
                return CorruptRecord(key, f"bad index value ({detail})")
    return CorruptRecord(otherwise or (prefixes[0] if prefixes else b"idx/"), detail)


def scan_rows(kv: Storage, prefix: bytes, key_of: Callable[[bytes], bytes] | None) -> np.ndarray:
    """Every value under `prefix`, decoded and checked; `CorruptRecord` names a bad one."""
    try:
        rows = decode_many(kv.scan_values(prefix, key_of))
    except ValueError as exc:
        raise first_bad(kv, [prefix], str(exc)) from None
    if unsound(rows):
        raise first_bad(kv, [prefix], "type or version out of range")
    return rows
