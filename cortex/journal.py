"""The journal and the OverallRoot hash chain.

Every write appends entries `{seq, kind, at, payload}` under `j/<seq8>` in the same
batch as the write, and moves the journal head `meta/journal` (seq8 + root32) with
it. The root is a hash chain over the encoded entries:

    root_0 = 32 zero bytes
    root_n = sha256(b"cortex.journal.v1" + root_{n-1} + entry_bytes_n)

so the root names the whole history: any write changes it, a read never does.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .store import META_JOURNAL, journal_key, pack, unpack

DOMAIN = b"cortex.journal.v1"
ZERO_ROOT = bytes(32)


def chain(prev_root: bytes, entry_bytes: bytes) -> bytes:
    return hashlib.sha256(DOMAIN + prev_root + entry_bytes).digest()


@dataclass(frozen=True, slots=True)
class JournalHead:
    seq: int
    root: bytes

    def encode(self) -> bytes:
        return self.seq.to_bytes(8, "big") + self.root

    @staticmethod
    def decode(raw: bytes | None) -> JournalHead:
        if raw is None:
            return JournalHead(0, ZERO_ROOT)
        return JournalHead(int.from_bytes(raw[:8], "big"), raw[8:40])


@dataclass(frozen=True, slots=True)
class Entry:
    seq: int
    kind: str
    at: int
    payload: dict[str, Any]

    def encode(self) -> bytes:
        return pack({"seq": self.seq, "kind": self.kind, "at": self.at, "payload": self.payload})

    @staticmethod
    def decode(key: bytes, raw: bytes) -> Entry:
        rec = unpack(key, raw)
        return Entry(rec["seq"], rec["kind"], rec["at"], rec["payload"])


def append(puts: dict[bytes, bytes | None], head: JournalHead, kind: str, at: int, payload: dict[str, Any]) -> JournalHead:
    """Add one entry and the new journal head to a pending batch; return the new head."""
    entry = Entry(head.seq + 1, kind, at, payload)
    raw = entry.encode()
    new_head = JournalHead(entry.seq, chain(head.root, raw))
    puts[journal_key(entry.seq)] = raw
    puts[META_JOURNAL] = new_head.encode()
    return new_head
