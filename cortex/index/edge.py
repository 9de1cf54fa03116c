"""`idx/edge_out/<src16><type1><dst16>` and `idx/edge_in/<dst16><type1><src16>`: the
edges between memories, both directions, and the edge flags of index values.

Each edge has one key per direction, both holding its record
(`cortex.records.EdgeRecord`: weight, when it was linked, tombstone), so the edges
of a memory, out or in, are one prefix scan, in (type, other end) order. Unlinking
tombstones the record (history is kept); linking again makes it live again. Like
every `idx/` key they are derived: the journal's link and unlink entries fold into
them (`cortex.journal.fold_edge`), and `rebuild()` recreates them from it.

Two bits of every index value of a memory come from its edges (`cortex.records`):

* `FLAG_SUPERSEDED`: a live `supersedes` edge points at it from a live (not
  tombstoned) memory; `context()` and `find()` leave such a memory out with one
  vectorised mask, whatever the number of candidates.
* `FLAG_CONTRADICTED`: a live `contradicts` edge starts or ends at it (whatever the
  other end's state); `context()` looks up the edges of flagged candidates only.

`flags_of` computes them for one memory from the stored edges plus a batch's
pending changes (`Pending`), so a write sets them in the same batch as the edge or
the tombstone that changes them; `derive` computes them for a whole store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import CorruptRecord
from ..model import EdgeType
from ..records import (
    EDGE_FLAGS,
    FLAG_CONTRADICTED,
    FLAG_SUPERSEDED,
    H_TOMBSTONE,
    HEAD_LENGTHS,
    ID_SIZE,
    INDEX_VALUE_SIZE,
    IV_FLAGS,
    EdgeRecord,
    head_key,
    unpack,
)

if TYPE_CHECKING:
    from ..storage import Storage

OUT_PREFIX = b"idx/edge_out/"
IN_PREFIX = b"idx/edge_in/"
PREFIXES = (OUT_PREFIX, IN_PREFIX)

SUPERSEDES = int(EdgeType.SUPERSEDES)
CONTRADICTS = int(EdgeType.CONTRADICTS)

# An edge as the engine handles it: (src id16, type code, dst id16).
Triple = tuple[bytes, int, bytes]


def out_key(src: bytes, edge_type: int, dst: bytes) -> bytes:
    return OUT_PREFIX + src + bytes([edge_type]) + dst


def in_key(dst: bytes, edge_type: int, src: bytes) -> bytes:
    return IN_PREFIX + dst + bytes([edge_type]) + src


def out_prefix(src: bytes, edge_type: int | None = None) -> bytes:
    return OUT_PREFIX + src + (b"" if edge_type is None else bytes([edge_type]))


def in_prefix(dst: bytes, edge_type: int | None = None) -> bytes:
    return IN_PREFIX + dst + (b"" if edge_type is None else bytes([edge_type]))


def entries(src: bytes, edge_type: int, dst: bytes, record: EdgeRecord) -> dict[bytes, bytes]:
    """Both keys of an edge, with its record."""
    raw = record.encode()
    return {out_key(src, edge_type, dst): raw, in_key(dst, edge_type, src): raw}


def _split(key: bytes, prefix: bytes) -> tuple[bytes, int, bytes]:
    rest = key[len(prefix):]
    if len(rest) != 2 * ID_SIZE + 1:
        raise CorruptRecord(key, "bad edge key")
    return rest[:ID_SIZE], rest[ID_SIZE], rest[ID_SIZE + 1 :]


def scan_out(kv: Storage, src: bytes, edge_type: int | None = None) -> Iterator[tuple[Triple, EdgeRecord]]:
    """The stored edges from `src` (of one type, or all), in (type, dst) order."""
    for key, raw in kv.scan_items(out_prefix(src, edge_type)):
        a, t, b = _split(key, OUT_PREFIX)
        yield (a, t, b), EdgeRecord.decode(key, raw)


def scan_in(kv: Storage, dst: bytes, edge_type: int | None = None) -> Iterator[tuple[Triple, EdgeRecord]]:
    """The stored edges into `dst` (of one type, or all), in (type, src) order."""
    for key, raw in kv.scan_items(in_prefix(dst, edge_type)):
        b, t, a = _split(key, IN_PREFIX)
        yield (a, t, b), EdgeRecord.decode(key, raw)


def stored(kv: Storage, edge: Triple) -> EdgeRecord | None:
    key = out_key(*edge)
    raw = kv.get(key)
    return None if raw is None else EdgeRecord.decode(key, raw)


# ---------------------------------------------------------------------------
# Edge flags


@dataclass
class Pending:
    """What a batch changes that the flags must see before it is stored: edges linked
    or unlinked (their new records), memories it tombstones, memories it writes."""

    edges: dict[Triple, EdgeRecord] = field(default_factory=dict)
    tombstoned: set[bytes] = field(default_factory=set)
    written: set[bytes] = field(default_factory=set)

    def affected(self, kv: Storage) -> set[bytes]:
        """Every memory whose edge flags this batch may change: the ends of its
        `contradicts` edges, the targets of its `supersedes` edges, and the targets
        of the stored `supersedes` edges of the memories it tombstones."""
        out: set[bytes] = set()
        for src, edge_type, dst in self.edges:
            if edge_type == SUPERSEDES:
                out.add(dst)
            elif edge_type == CONTRADICTS:
                out.update((src, dst))
        for raw_id in self.tombstoned:
            out.update(dst for (_, _, dst), record in scan_out(kv, raw_id, SUPERSEDES) if record.live)
            out.update(dst for (src, t, dst) in self.edges if src == raw_id and t == SUPERSEDES)
        return out


NOTHING_PENDING = Pending()


def is_live(kv: Storage, raw_id: bytes, pending: Pending = NOTHING_PENDING) -> bool:
    """Whether a memory exists and is not tombstoned (a batch's changes included).
    Reads the head's tombstone field only."""
    if raw_id in pending.tombstoned:
        return False
    if raw_id in pending.written:
        return True
    key = head_key(raw_id)
    raw = kv.get(key)
    if raw is None:
        return False
    rec = unpack(key, raw)
    if not (isinstance(rec, list) and len(rec) in HEAD_LENGTHS):
        raise CorruptRecord(key, "bad head record")
    return rec[H_TOMBSTONE] is None


def flags_of(kv: Storage, raw_id: bytes, pending: Pending = NOTHING_PENDING) -> int:
    """The edge flags of a memory's index values: from its stored edges, with the
    batch's pending changes applied."""
    incoming = {edge: record for edge, record in scan_in(kv, raw_id)}
    contradicting = {edge: record for edge, record in scan_out(kv, raw_id, CONTRADICTS)}
    for edge, record in pending.edges.items():
        if edge[2] == raw_id:
            incoming[edge] = record
        elif edge[0] == raw_id and edge[1] == CONTRADICTS:
            contradicting[edge] = record
    flags = FLAG_CONTRADICTED if any(record.live for record in contradicting.values()) else 0
    for (src, edge_type, _), record in incoming.items():
        if not record.live:
            continue
        if edge_type == CONTRADICTS:
            flags |= FLAG_CONTRADICTED
        elif edge_type == SUPERSEDES and not flags & FLAG_SUPERSEDED and is_live(kv, src, pending):
            flags |= FLAG_SUPERSEDED
    return flags


def derive(edges: Iterable[tuple[Triple, EdgeRecord]], live: Callable[[bytes], bool]) -> tuple[dict[bytes, int], dict[bytes, bytes]]:
    """For a whole store: the edge flags of every memory that has any, and every
    edge key with its record. `live(id)` says whether a memory is live."""
    flags: dict[bytes, int] = {}
    keys: dict[bytes, bytes] = {}
    for (src, edge_type, dst), record in edges:
        keys.update(entries(src, edge_type, dst, record))
        if not record.live:
            continue
        if edge_type == CONTRADICTS:
            flags[src] = flags.get(src, 0) | FLAG_CONTRADICTED
            flags[dst] = flags.get(dst, 0) | FLAG_CONTRADICTED
        elif edge_type == SUPERSEDES and live(src):
            flags[dst] = flags.get(dst, 0) | FLAG_SUPERSEDED
    return flags, keys


_FLAG_NAMES = ((FLAG_SUPERSEDED, "superseded"), (FLAG_CONTRADICTED, "contradicted"))


def flag_problem(want: bytes, have: bytes) -> str | None:
    """When a stored index value differs from the expected one only in its edge
    flags: which flag disagrees with the edges, for `verify()`. None otherwise."""
    if len(want) != INDEX_VALUE_SIZE or len(have) != INDEX_VALUE_SIZE:
        return None
    diff = want[IV_FLAGS] ^ have[IV_FLAGS]
    if not diff or diff & ~EDGE_FLAGS or want[:IV_FLAGS] != have[:IV_FLAGS] or want[IV_FLAGS + 1 :] != have[IV_FLAGS + 1 :]:
        return None
    return "; ".join(
        f"{name} flag is {'set' if have[IV_FLAGS] & bit else 'clear'} but the edges say {'set' if want[IV_FLAGS] & bit else 'clear'}"
        for bit, name in _FLAG_NAMES if diff & bit
    )


def conflicts(kv: Storage, ids: list[bytes]) -> list[tuple[bytes, bytes]]:
    """The pairs (a, b), a < b, of `ids` linked by a live `contradicts` edge (either
    way), sorted. Reads only the outgoing `contradicts` edges of `ids` (callers pass
    the flagged ones): both ends of a pair are among them, so its source's scan finds
    it, and the incoming side need not be read."""
    among = set(ids)
    pairs: set[tuple[bytes, bytes]] = set()
    for raw_id in among:
        others = [dst for (_, _, dst), record in scan_out(kv, raw_id, CONTRADICTS) if record.live]
        pairs.update((min(raw_id, other), max(raw_id, other)) for other in others if other in among)
    return sorted(pairs)
