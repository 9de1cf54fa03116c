"""The lexical index: posting lists and the exact statistics BM25 needs.

Key layout and value formats (integers big-endian, terms UTF-8 from
`cortex.index.terms`, which never contain a NUL):

| key                               | value                                                    |
|-----------------------------------|----------------------------------------------------------|
| `idx/lx/p/<term>\\x00<id16>`       | posting: id16, tf u32, dl u32, type u8 (`POSTING_DTYPE`) |
| `idx/lx/d/<id16>`                 | document: id16, dl u32, type u8 (`DOC_DTYPE`)            |
| `idx/lx/f/<term>`                 | document frequency of the term: u64                      |
| `idx/lx/n`                        | corpus totals: documents u64, summed lengths u64         |
| `meta/lexical`                    | the analyzer's settings (`terms.SETTINGS`), UTF-8 text    |

`tf` is how often the term occurs in the memory and `dl` the memory's length in terms
(`terms.counts`). The corpus is every memory that is not tombstoned, current version:
a posting and a document key exist exactly for those, and the frequencies and totals
count exactly them (a frequency or total of zero is stored as no key). Expired and
superseded memories stay in the corpus; `find(near=...)` leaves them out of results.

Like every index entry these are derived keys, written in the same batch as the
change they follow (`Changes`), recreated by `rebuild()`, compared by `verify()`,
and left out of exports. `meta/lexical` says which analyzer built the index; a store
without it (made before this index existed) or with another analyzer's gets its index
built when a writer opens it (`build`).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CorruptRecord
from . import terms

from ..records import Head, head_key

if TYPE_CHECKING:
    from ..storage import Storage

PREFIX = b"idx/lx/"
POSTING_PREFIX = b"idx/lx/p/"
DOC_PREFIX = b"idx/lx/d/"
DF_PREFIX = b"idx/lx/f/"
TOTALS_KEY = b"idx/lx/n"
META_LEXICAL = b"meta/lexical"
SEP = b"\x00"
ID_SIZE = 16

POSTING_DTYPE = np.dtype([("id_hi", ">u8"), ("id_lo", ">u8"), ("tf", ">u4"), ("dl", ">u4"), ("type", "u1")])
DOC_DTYPE = np.dtype([("id_hi", ">u8"), ("id_lo", ">u8"), ("dl", ">u4"), ("type", "u1")])
SETTINGS = terms.SETTINGS
_TF = struct.Struct(">I")
_TAIL = struct.Struct(">IB")  # dl, type: the end of a posting, and of a document value
BUILD_BATCH = 20_000  # keys per batch when a whole index is built


@functools.lru_cache(maxsize=1 << 16)
def term_prefix(term: str) -> bytes:
    """The prefix of one term's posting list (cached: a writer encodes the same
    terms again and again)."""
    return POSTING_PREFIX + term.encode("utf-8") + SEP


def posting_key(term: str, raw_id: bytes) -> bytes:
    return term_prefix(term) + raw_id


def df_key(term: str) -> bytes:
    return DF_PREFIX + term.encode("utf-8")


def doc_key(raw_id: bytes) -> bytes:
    return DOC_PREFIX + raw_id


def posting_key_of(prefix: bytes) -> Callable[[bytes], bytes]:
    """The key of a posting under `prefix` (one term's), from its value."""
    return lambda value: prefix + value[:ID_SIZE]


def encode_posting(raw_id: bytes, tf: int, dl: int, type_code: int) -> bytes:
    return raw_id + tf.to_bytes(4, "big") + dl.to_bytes(4, "big") + bytes((type_code,))


def encode_doc(raw_id: bytes, dl: int, type_code: int) -> bytes:
    return raw_id + dl.to_bytes(4, "big") + bytes((type_code,))


def decode_count(raw: bytes | None) -> int:
    return 0 if raw is None else int.from_bytes(raw, "big")


def encode_totals(docs: int, length: int) -> bytes:
    return docs.to_bytes(8, "big") + length.to_bytes(8, "big")


def decode_totals(raw: bytes | None) -> tuple[int, int]:
    """(documents, summed lengths); (0, 0) when absent."""
    if raw is None:
        return 0, 0
    if len(raw) != 16:
        raise ValueError("lexical totals must be 16 bytes")
    return int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")


def is_indexed(head: Head | None) -> bool:
    return head is not None and head.tombstone is None


def entries(raw_id: bytes, head: Head | None) -> dict[bytes, bytes]:
    """The posting and document keys of a memory, with their values (none for a
    tombstoned or absent one)."""
    if head is None or not is_indexed(head):
        return {}
    freqs, dl = terms.counts(head.data.to_record(), head.tags)
    tail = _TAIL.pack(dl, int(head.type))
    out = {term_prefix(term) + raw_id: raw_id + _TF.pack(tf) + tail for term, tf in freqs.items()}
    out[doc_key(raw_id)] = raw_id + tail
    return out


def _term_of(key: bytes) -> bytes:
    return key[len(POSTING_PREFIX) : -(ID_SIZE + 1)]


class Changes:
    """The lexical part of one write batch: the postings that change, and the
    frequencies and totals they move (`finish` reads the stored ones and writes them
    back moved, in the same batch)."""

    def __init__(self) -> None:
        self.df: dict[bytes, int] = {}
        self.docs = 0
        self.length = 0

    def _count(self, key: bytes, value: bytes, sign: int) -> None:
        if key.startswith(DOC_PREFIX):
            self.docs += sign
            self.length += sign * int.from_bytes(value[ID_SIZE : ID_SIZE + 4], "big")
        else:
            term = _term_of(key)
            self.df[term] = self.df.get(term, 0) + sign

    def add(self, raw_id: bytes, head: Head) -> dict[bytes, bytes]:
        """The entries of a new memory (no earlier version to take out), counted."""
        new = entries(raw_id, head)
        if new:
            df = self.df
            cut = len(POSTING_PREFIX)
            for key in new:
                if key[:cut] == POSTING_PREFIX:
                    term = key[cut : -(ID_SIZE + 1)]
                    df[term] = df.get(term, 0) + 1
            self.docs += 1
            self.length += int.from_bytes(new[doc_key(raw_id)][ID_SIZE : ID_SIZE + 4], "big")
        return new

    def change(self, puts: dict[bytes, bytes | None], raw_id: bytes, old: Head | None, new: Head | None) -> None:
        """A memory whose head goes from `old` to `new` (either may be None)."""
        if old is not None and new is not None and old.data is new.data and old.tags == new.tags \
                and is_indexed(old) == is_indexed(new):
            return
        before, after = entries(raw_id, old), entries(raw_id, new)
        for key, value in before.items():
            if key not in after:
                puts[key] = None
                self._count(key, value, -1)
        for key, value in after.items():
            was = before.get(key)
            if was != value:
                puts[key] = value
                if was is not None:
                    self._count(key, was, -1)
                self._count(key, value, 1)

    def staged(self, puts: dict[bytes, bytes | None], raw_id: bytes, old: Head) -> None:
        """A memory whose new head a batch being built already holds (an upsert in
        `write_many`); nothing when the batch leaves its head as it was."""
        raw = puts.get(head_key(raw_id))
        if raw is not None:
            self.change(puts, raw_id, old, Head.decode(head_key(raw_id), raw))

    def finish(self, storage: Storage | None, puts: dict[bytes, bytes | None]) -> None:
        """Put the moved frequencies and totals into `puts`: from the stored ones, or
        from zero without `storage` (a whole index being derived)."""
        moved = sorted(term for term, delta in self.df.items() if delta)
        keys = [DF_PREFIX + term for term in moved]
        stored = storage.multi_get(keys) if storage is not None and keys else [None] * len(keys)
        for key, term, raw in zip(keys, moved, stored):
            count = decode_count(raw) + self.df[term]
            if count < 0:
                raise CorruptRecord(key, "lexical document frequency would go below zero: run rebuild()")
            puts[key] = count.to_bytes(8, "big") if count else None
        if self.docs or self.length or storage is None:
            docs, length = decode_totals(storage.get(TOTALS_KEY)) if storage is not None else (0, 0)
            docs, length = docs + self.docs, length + self.length
            puts[TOTALS_KEY] = encode_totals(docs, length) if docs else None
        self.df.clear()
        self.docs = self.length = 0

    def records(self) -> dict[bytes, bytes]:
        """The frequency and totals keys of a whole index derived from zero (the
        deletions that `finish` would put for zero counts left out)."""
        puts: dict[bytes, bytes | None] = {}
        self.finish(None, puts)
        return {key: value for key, value in puts.items() if value is not None}


def build(storage: Storage, heads: Iterator[tuple[bytes, Head]]) -> Iterator[dict[bytes, bytes | None]]:
    """Batches that replace the whole lexical index with the one `heads` imply (every
    memory's id and decoded head): the old keys deleted first, then the postings, then
    the frequencies, the totals and `meta/lexical` last, so an interrupted build
    leaves a store that builds again at the next writer open."""
    batch: dict[bytes, bytes | None] = {META_LEXICAL: None}
    for key, _ in storage.scan_items(PREFIX):
        batch[key] = None
        if len(batch) >= BUILD_BATCH:
            yield batch
            batch = {}
    changes = Changes()
    for raw_id, head in heads:
        if is_indexed(head):
            batch.update(changes.add(raw_id, head))
        if len(batch) >= BUILD_BATCH:
            yield batch
            batch = {}
    batch.update(changes.records())
    batch[META_LEXICAL] = terms.SETTINGS.encode()
    yield batch
