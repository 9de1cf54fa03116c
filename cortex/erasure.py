"""`erase(memory, reason)`: remove a memory's content from the store for good.

A tombstone hides a memory but keeps it: it still resolves, exports and sits in the
files. An erasure removes, in one batch, the memory's head, every version record
(data, short and medium forms, provenance), its salience record and every index
entry it had (type, tags, session, natural key, frames, pinned, Events'
actor-object entries, the lexical index's postings of its words),
and journals an `erase` entry: the memory's id, who erased it (the store's actor),
when (the entry's time), why (`reason`), and the content hash of every version
erased. The journal is never rewritten, so `root()` still verifies: in journal
format 2 the write and update entries already hold those hashes, and the erase
entry says that the versions they name are gone on purpose. `verify()` then checks
that no head or version of an erased memory is left, and an export carries the
erase entry (and no memory line): importing it gives the same root.

Last, the storage purges (`Storage.purge`): RocksDB flushes and compacts its whole
key range, so the erased bytes leave its files; PostgreSQL vacuums the table.

What stays: the memory's id and type, the frames and tags its journal entries named
(they are part of the chain the root commits to), the reasons given to tombstone or
attest, and its edges (ids only). docs/trust.md says so for users.
"""

from __future__ import annotations

from . import edges, index
from .engine import Engine
from .errors import CorruptRecord
from .ids import parse_ref
from .journal import ERASE_KIND, append
from .model import check_text, to_micros
from .records import VERSION_PREFIX, Version, head_key, salience_key, version_key

MAX_REASON_BYTES = 1024


def erase(e: Engine, uri: str, reason: str) -> None:
    """Erase the content of every version of the memory `uri` names (any version's
    URI, its URI without #version or its id: `cortex.ids.parse_ref`). `NotFound` when
    there is no such memory (erased ones included)."""
    e.check_writable()
    ref = parse_ref(uri)
    check_text("reason", reason, required=True, max_bytes=MAX_REASON_BYTES)
    with e.lock.write():
        e.check_open()
        raw_id, head = e.head_for(ref)
        hashes = []
        for number in range(1, head.version + 1):
            key = version_key(raw_id, number)
            raw = e.storage.get(key)
            if raw is None:
                raise CorruptRecord(key, f"missing version {number}: run verify()")
            hashes.append(Version.decode(key, raw, head.type).content_hash)
        score = e.score_record(raw_id)
        puts: dict[bytes, bytes | None] = dict.fromkeys(index.entries(raw_id, head, score, index.edge.flags_of(e.storage, raw_id)))
        # Anything else under the memory's version prefix goes too (nothing the
        # write path makes, but nothing of it may stay).
        puts.update(dict.fromkeys(key for key, _ in e.storage.scan_items(VERSION_PREFIX + raw_id)))
        puts.update({head_key(raw_id): None, salience_key(raw_id): None})
        # Its lexical index entries (`cortex.index.lexical`) go, and the frequencies
        # and totals they counted in move.
        words = index.lexical.Changes()
        words.change(puts, raw_id, head, None)
        words.finish(e.storage, puts)
        if head.tombstone is None:
            puts.update(edges.after_tombstone(e, raw_id))  # memories it superseded are no longer stale
        now = to_micros(e.now())
        payload = {"id": raw_id, "reason": reason, "by": e.actor, "versions": hashes}
        e.apply(puts, append(puts, e.journal, ERASE_KIND, now, payload), now)
    e.storage.purge()
