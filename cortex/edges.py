"""Edges: typed relations between memories (docs/edges.md).

    new = c.write(Fact(statement="GPU lease is 2.10 USD/h", ...), supersedes=[old])
    c.link(report_a, "contradicts", report_b)
    c.edges(old, direction="in")      # [Edge(src=<new id>, type=SUPERSEDES, dst=<old id>, ...)]
    c.unlink(new, "supersedes", old, reason="the old price is back")

An edge goes from `src` to `dst` and has a type (`cortex.EdgeType`, a closed set of
fourteen, one byte each), a weight in [0, 1] (default 1.0), the time it was linked,
and a tombstone once unlinked. A memory is named by its 26-character id, the URI of
any of its versions, or its URI without `#version` (`cortex.ids.parse_ref`).

* `link` needs both ends to exist (tombstoned ones too: `NotFound` otherwise),
  refuses a self-edge (`SelfEdge`) and a `supersedes` edge that would close a cycle
  of live `supersedes` edges (`SupersedesCycle`). It is idempotent: linking a live
  edge again with the same weight writes nothing (another weight is refused: unlink
  it first); linking an unlinked edge makes it live again, with the new weight and
  time.
* `unlink` tombstones a live edge (the edge and the reason stay in the journal; an
  unlinked edge still lists with `include_tombstoned=True`); unlinking an unlinked
  edge writes nothing; an edge never linked raises `NotFound`.
* `edges(uri, direction, types)` lists a memory's edges, outgoing, incoming or
  both, ordered by (type, src id, dst id): a total order, since there is at most one
  edge of a type between two memories.
* `write(..., supersedes=[uri, ...])` (and `Write(..., supersedes=...)`) links the
  new memory to each in the same batch as the write, weight 1.0.

What the reads do with them: a memory with a live incoming `supersedes` edge from a
live memory is stale, and `context()` and `find()` leave it out unless
`include_superseded=True` (it still resolves); tombstoning the superseding memory or
unlinking the edge brings it back. `Bundle.conflicts` pairs the candidates linked
by a live `contradicts` edge. Both work from two flag bits in the index values
(`cortex.index.edge`), set in the same batch as the edge or tombstone that changes
them, so neither costs a read per candidate.

Every link and unlink is one journal entry (`link {src, type, dst, weight}`,
`unlink {src, type, dst, reason}`); a `write(..., supersedes=...)` journals its
links after its writes. Edges move no salience record.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from . import index
from .engine import Engine
from .errors import NotFound, SelfEdge, SupersedesCycle, ValidationError, shown
from . import scoped
from .ids import Ref, encode_id, parse_ref
from .index.edge import SUPERSEDES, NOTHING_PENDING, Pending, Triple, flags_of, is_live, scan_in, scan_out
from .journal import EDGE_KINDS, append, fold_edge
from .model import Edge, EdgeType, check_number, check_text, from_micros, to_micros
from .records import JOURNAL_PREFIX, EdgeRecord, Entry, Head, JournalHead, head_key, split_journal_value
from .scope import SignedScope, check_signed
from .scoped import Granted

DIRECTIONS = ("out", "in", "both")
MAX_REASON_BYTES = 1024
BATCH_KEYS = 20_000


def _edge(triple: Triple, record: EdgeRecord) -> Edge:
    src, edge_type, dst = triple
    return Edge(encode_id(src), EdgeType(edge_type), encode_id(dst), record.weight, from_micros(record.created), not record.live)


def _memory_id(value: object, field_name: str) -> tuple[bytes, Ref]:
    """The id a call names (`cortex.ids.parse_ref`), and the whole reference (its
    type and version, if a URI gave them, are checked against the head under the lock)."""
    ref = parse_ref(value, field_name)
    return ref.id, ref


def _existing(e: Engine, raw_id: bytes, ref: Ref, field_name: str, value: object) -> None:
    """`NotFound` unless the memory exists (with the URI's type and version, if given)."""
    try:
        e.head_for(ref)
    except NotFound:
        raise NotFound(f"{field_name}: no memory {shown(value)}") from None


def _edge_type(value: object) -> int:
    return int(EdgeType.parse(value))


# ---------------------------------------------------------------------------
# link, unlink, edges


def link(e: Engine, src: str, edge_type: EdgeType | str, dst: str, weight: float = 1.0) -> Edge:
    """Link `src` to `dst` (see the module docstring); return the live edge."""
    e.check_writable()
    src_id, src_ref = _memory_id(src, "src")
    dst_id, dst_ref = _memory_id(dst, "dst")
    code = _edge_type(edge_type)
    checked_weight = check_number("weight", weight, lo=0.0, hi=1.0)
    if src_id == dst_id:
        raise SelfEdge("dst", "must name another memory than src (no self-edges)", dst)
    triple = (src_id, code, dst_id)
    with e.lock.write():
        e.check_open()
        _existing(e, src_id, src_ref, "src", src)
        _existing(e, dst_id, dst_ref, "dst", dst)
        current = index.edge.stored(e.storage, triple)
        if current is not None and current.live:
            if current.weight != checked_weight:
                raise ValidationError("weight", f"the live edge has weight {current.weight}; unlink it first to change it", weight)
            return _edge(triple, current)
        if code == SUPERSEDES and _supersedes_path(e, dst_id, src_id):
            raise SupersedesCycle("dst", "already supersedes src, directly or through other memories (a supersedes cycle)", dst)
        now = to_micros(e.now())
        record = EdgeRecord(checked_weight, now)
        payload = {"src": src_id, "type": code, "dst": dst_id, "weight": checked_weight}
        puts: dict[bytes, bytes | None] = {}
        journal = stage(e, puts, e.journal, now, Pending(edges={triple: record}), [("link", payload)])
        e.apply(puts, journal, now)
    return _edge(triple, record)


def link_many(e: Engine, links: Sequence[tuple[bytes, EdgeType, bytes]]) -> int:
    """Link many edges (raw ids, weight 1.0) in one atomic batch, one journal entry
    each, skipping those already live; return how many were linked. Both ends of
    each must exist (`NotFound`, nothing written); `supersedes` edges go through
    `link()` (its cycle check)."""
    e.check_writable()
    with e.lock.write():
        e.check_open()
        now = to_micros(e.now())
        pending = Pending()
        entries: list[tuple[str, dict[str, Any]]] = []
        for src, code, dst in links:
            if code == SUPERSEDES or src == dst:
                raise ValidationError("links", "link_many takes no supersedes edges and no self-edges", encode_id(src))
            triple = (src, int(code), dst)
            if triple in pending.edges:
                continue
            current = index.edge.stored(e.storage, triple)
            if current is not None and current.live:
                continue
            for raw_id in (src, dst):
                if e.storage.get(head_key(raw_id)) is None:
                    raise NotFound(f"no memory {encode_id(raw_id)}")
            pending.edges[triple] = EdgeRecord(1.0, now)
            entries.append(("link", {"src": src, "type": int(code), "dst": dst, "weight": 1.0}))
        if entries:
            puts: dict[bytes, bytes | None] = {}
            journal = stage(e, puts, e.journal, now, pending, entries)
            e.apply(puts, journal, now)
    return len(entries)


def unlink(e: Engine, src: str, edge_type: EdgeType | str, dst: str, reason: str) -> None:
    """Tombstone the edge from `src` to `dst` of that type (see the module docstring)."""
    e.check_writable()
    src_id, src_ref = _memory_id(src, "src")
    dst_id, dst_ref = _memory_id(dst, "dst")
    code = _edge_type(edge_type)
    check_text("reason", reason, required=True, max_bytes=MAX_REASON_BYTES)
    triple = (src_id, code, dst_id)
    with e.lock.write():
        e.check_open()
        _existing(e, src_id, src_ref, "src", src)
        _existing(e, dst_id, dst_ref, "dst", dst)
        current = index.edge.stored(e.storage, triple)
        if current is None:
            raise NotFound(f"no {EdgeType(code).name.lower()} edge from {encode_id(src_id)} to {encode_id(dst_id)}")
        if not current.live:
            return
        now = to_micros(e.now())
        record = current._replace(tombstone=(now, reason))
        payload = {"src": src_id, "type": code, "dst": dst_id, "reason": reason}
        puts: dict[bytes, bytes | None] = {}
        journal = stage(e, puts, e.journal, now, Pending(edges={triple: record}), [("unlink", payload)])
        e.apply(puts, journal, now)


def edges(e: Engine, uri: str, direction: str = "out", types: Iterable[EdgeType | str] | None = None,
          include_tombstoned: bool = False, scope: SignedScope | None = None) -> list[Edge]:
    """The edges of a memory: `direction` "out" (it is the src), "in" (the dst) or
    "both"; `types` None for every type, else a collection of `EdgeType` members or
    their names; unlinked edges only with `include_tombstoned=True`. Ordered by
    (type, src id, dst id).

    With `scope`: a memory outside it raises the `NotFound` a missing one does (same
    message, same work, counted as a violation, as `resolve()`), and only edges whose
    other end is in scope are listed."""
    e.check_open()
    raw_id, ref = _memory_id(uri, "uri")
    if not isinstance(direction, str) or direction not in DIRECTIONS:
        raise ValidationError("direction", 'must be "out", "in" or "both"', direction)
    if types is None:
        codes: Sequence[int | None] = [None]
    else:
        if isinstance(types, (str, bytes, EdgeType)) or not isinstance(types, Iterable):
            raise ValidationError("types", "must be a collection of edge types (or None for all)", types)
        codes = sorted({int(EdgeType.parse(t, "types")) for t in types})
    if not isinstance(include_tombstoned, bool):
        raise ValidationError("include_tombstoned", "must be a bool", include_tombstoned)
    signed = None if scope is None else check_signed(scope)

    def read(granted: Granted | None) -> list[Edge]:
        if granted is None:
            _existing(e, raw_id, ref, "uri", uri)
        else:
            memory = granted.head(raw_id)
            if memory is None or (ref.type is not None and memory.type != ref.type) or (ref.version is not None and ref.version > memory.version):
                raise granted.refuse(NotFound(f"uri: no memory {ref}"), "edges", str(ref))
        found: list[tuple[Triple, EdgeRecord]] = []
        for code in codes:
            if direction != "in":
                found += scan_out(e.storage, raw_id, code)
            if direction != "out":
                found += scan_in(e.storage, raw_id, code)
        found.sort(key=lambda item: (item[0][1], item[0][0], item[0][2]))
        listed = [(triple, record) for triple, record in found if include_tombstoned or record.live]
        if granted is not None:
            listed = [(t, r) for t, r in listed if granted.head(t[2] if t[0] == raw_id else t[0]) is not None]
        return [_edge(triple, record) for triple, record in listed]

    return scoped.read(e, signed, read)


def _supersedes_path(e: Engine, start: bytes, goal: bytes) -> bool:
    """Whether live `supersedes` edges lead from `start` to `goal`."""
    seen = {start}
    todo = [start]
    while todo:
        for (_, _, dst), record in scan_out(e.storage, todo.pop(), SUPERSEDES):
            if record.live and dst not in seen:
                if dst == goal:
                    return True
                seen.add(dst)
                todo.append(dst)
    return False


# ---------------------------------------------------------------------------
# Batches: the write path's hooks (write lock held)


def stage(e: Engine, puts: dict[bytes, bytes | None], journal: JournalHead, now: int, pending: Pending,
          entries: list[tuple[str, dict[str, Any]]]) -> JournalHead:
    """Add a batch's edge changes to `puts`: both keys of every pending edge, the
    journal entries, and the index values of every memory whose edge flags they
    change. Returns the new journal head."""
    for (src, code, dst), record in pending.edges.items():
        puts.update(index.edge.entries(src, code, dst, record))
    for kind, payload in entries:
        journal = append(puts, journal, kind, now, payload)
    puts.update(reflag(e, pending))
    return journal


def reflag(e: Engine, pending: Pending) -> dict[bytes, bytes]:
    """The index entries, with their new flags, of every memory whose edge flags the
    pending changes alter (the others are left as they are)."""
    puts: dict[bytes, bytes] = {}
    for raw_id in sorted(pending.affected(e.storage) - pending.written):
        old, new = flags_of(e.storage, raw_id), flags_of(e.storage, raw_id, pending)
        if old == new:
            continue
        key = head_key(raw_id)
        raw = e.storage.get(key)
        if raw is None:
            continue  # an edge to a memory that is gone: verify() reports the damage
        puts.update(index.entries(raw_id, Head.decode(key, raw), e.score_record(raw_id), new))
    return puts


def supersede(e: Engine, puts: dict[bytes, bytes | None], journal: JournalHead, now: int,
              links: list[tuple[bytes, tuple[str, ...]]], written: set[bytes]) -> JournalHead:
    """`write_many`'s `supersedes`: link each new memory (id) to the memories its
    URIs name, in the batch being built; `NotFound` (nothing written) if one is
    missing. Returns the new journal head."""
    pending = Pending(written=written)
    entries: list[tuple[str, dict[str, Any]]] = []
    for src, targets in links:
        for i, target in enumerate(targets):
            dst, ref = _memory_id(target, f"supersedes[{i}]")
            _existing(e, dst, ref, f"supersedes[{i}]", target)
            triple = (src, SUPERSEDES, dst)
            if triple not in pending.edges:
                pending.edges[triple] = EdgeRecord(1.0, now)
                entries.append(("link", {"src": src, "type": SUPERSEDES, "dst": dst, "weight": 1.0}))
    if not entries:
        return journal
    return stage(e, puts, journal, now, pending, entries)


def after_tombstone(e: Engine, raw_id: bytes) -> dict[bytes, bytes]:
    """`tombstone`'s hook: the index entries of the memories that a tombstoned memory
    superseded, which are no longer stale."""
    return reflag(e, Pending(tombstoned={raw_id}))


def check_supersedes(values: object) -> tuple[str, ...]:
    """`Write(supersedes=...)`: a collection of URIs or ids, checked for form here
    (existence is checked by the write); duplicates removed, order kept."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValidationError("supersedes", "must be a list of URIs", values)
    out: list[str] = []
    for i, value in enumerate(values):
        if i >= 256:
            raise ValidationError("supersedes", "names at most 256 memories", values)
        _memory_id(value, f"supersedes[{i}]")
        if value not in out:
            out.append(value)
    return tuple(out)


# ---------------------------------------------------------------------------
# A whole store: after an import


def derived_after_import(e: Engine) -> Iterator[dict[bytes, bytes | None]]:
    """Batches of every edge key and every edge-flagged index entry of a store whose
    journal and memories were just imported (`cortex.interop.jsonl`): the journal's
    link and unlink entries folded, then the flags they imply. Memory use grows with
    the number of edges, not of memories."""
    folded: dict[bytes, dict[tuple[int, bytes], EdgeRecord]] = {}
    for key, value in e.storage.scan_items(JOURNAL_PREFIX):
        entry = Entry.decode(key, split_journal_value(value)[1])
        if entry.kind in EDGE_KINDS:
            fold_edge(folded.setdefault(entry.payload["src"], {}), entry)
    flat = (((src, code, dst), record) for src, out in folded.items() for (code, dst), record in out.items())
    flags, keys = index.edge.derive(flat, lambda raw_id: is_live(e.storage, raw_id, NOTHING_PENDING))
    batch: dict[bytes, bytes | None] = dict(keys)
    for raw_id in sorted(flags):
        key = head_key(raw_id)
        raw = e.storage.get(key)
        if raw is not None:
            batch.update(index.entries(raw_id, Head.decode(key, raw), e.score_record(raw_id), flags[raw_id]))
        if len(batch) >= BATCH_KEYS:
            yield batch
            batch = {}
    if batch:
        yield batch


__all__ = ["Edge", "EdgeType", "link", "unlink", "edges"]
