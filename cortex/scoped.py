"""The scoped-read protocol, written once for every read that takes `scope=`.

    signed = check_signed(scope)                      # before the read: a bad value writes nothing
    return scoped.read(e, signed, lambda granted: body(granted))

1. Verify the scope once per call, in the call's view: signed under a key the store
   trusts now, not revoked, unexpired, for this store's actor and id
   (`cortex.scope.verify`).
2. `granted.budget(requested)` caps a budget at the scope's cap (over it:
   `BudgetExceeded`).
3. Refuse: `raise granted.refuse(error, what, detail)` leaves the read.
4. Report: after the read, a refusal is counted as a violation of the scope
   (journaled on a "rw" handle, logged on an "r" one, within the rate limit:
   `cortex.writes.report_violation`); then its error is raised.

`Granted` also holds what the reads need to answer without an existence oracle
(docs/scopes.md): `head()` reads a memory at the same cost whether it is missing or
out of scope, `members()` enumerates the scope's own memories (so a scoped `find()`
never scans a tag bucket or a type index of the whole store), and `stale()` says
which memories an in-scope memory supersedes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np

from .engine import Engine
from .errors import CortexError
from .index import by_tag, by_type, entry
from .index.edge import SUPERSEDES, scan_in
from .memory import Memory
from .model import Fact, Frame, MemoryType, to_micros
from .records import FLAG_TOMBSTONED, H_CREATED, H_FRAMES, H_TAGS, H_TOMBSTONE, H_TYPE, META_STORE_ID, Head, head_key, head_keys, unpack_head
from .scope import Evaluator, Refusal, SignedScope, capped_budget, check_signed, verify
from .storage import Reads

__all__ = ["Granted", "check_signed", "read"]

T = TypeVar("T")

# What a missing memory's head is decoded from under a scope, so that a missing id
# and an out-of-scope one cost the same work (a decode and a scope test) before both
# raise the same `NotFound`.
_DECOY = Head(MemoryType.FACT, 1, 0, 0, (Frame("find", "service", "decoy"),), ("decoy",), 0, None, None,
              Fact(statement="decoy", subject="decoy", predicate="decoy"), 1.0, "user_input", ("decoy", "decoy"),
              (1, 1, 1)).encode()


class Granted:
    """A scope verified in one read's view (`read()` makes it)."""

    __slots__ = ("e", "signed", "digest", "seq", "root", "_evaluator")

    def __init__(self, e: Engine, signed: SignedScope, digest: bytes, seq: int, root: bytes) -> None:
        self.e = e
        self.signed = signed
        self.digest = digest
        self.seq = seq
        self.root = root
        self._evaluator: Evaluator | None = None

    def evaluator(self) -> Evaluator:
        """The scope evaluated at this view's journal state (kept by the handle)."""
        if self._evaluator is None:
            self._evaluator = self.e.scopes.evaluator(self.e.storage, self.signed, self.seq, self.root)
        return self._evaluator

    def budget(self, requested: int, unset: int = 0) -> int:
        """`requested` within the scope's cap (`unset`: the cap); over it refuses."""
        return capped_budget(self.signed, self.digest, requested, unset)

    def refuse(self, error: CortexError, what: str, detail: str) -> Refusal:
        """The refusal to raise: `read()` counts the violation, then raises `error`."""
        return Refusal(error, self.digest, what, detail)

    def admits(self, raw_id: bytes, memory: Memory) -> bool:
        """Whether a memory (its current head) is in scope: the exact test."""
        return self.signed.scope.admits(raw_id, int(memory.type), memory.tags, ((int(f.verb), int(f.kind), f.ref) for f in memory.frames))

    def _admits_record(self, raw_id: bytes, rec: tuple[object, ...]) -> bool:
        try:
            frames = [(f[0], f[1], f[2]) for f in rec[H_FRAMES]]  # type: ignore[attr-defined]
            return self.signed.scope.admits(raw_id, rec[H_TYPE], rec[H_TAGS], frames)  # type: ignore[arg-type]
        except (TypeError, IndexError, KeyError):
            return False

    def head(self, raw_id: bytes) -> Memory | None:
        """The current version of a memory if it is in scope, else None. A missing
        memory costs what an out-of-scope one does: one point read, one decode, one
        scope test (of a decoy head), and the same answer."""
        key = head_key(raw_id)
        raw = self.e.storage.get(key)
        rec = unpack_head(key, _DECOY if raw is None else raw)
        inside = self._admits_record(raw_id, rec)
        if raw is None or not inside:
            return None
        return Memory.stored(raw_id, rec)

    def members(self) -> np.ndarray:
        """Index rows of every memory in scope (tombstoned ones too), in id order.

        Enumerated from what the scope names (its types' type index, its tags'
        buckets, its frames' and its ids' memories), never from what a query names:
        the work depends on the scope and the store, not on which out-of-scope
        memories a query would match. Kept by the handle for this journal state."""
        kept = self.e.scopes.members(self.signed.scope_id, (self.seq, self.root))
        if kept is not None:
            return kept
        rows = _in_scope(self, _named_rows(self))
        self.e.scopes.keep_members(self.signed.scope_id, (self.seq, self.root), rows)
        return rows

    def stale(self, raw_ids: Iterable[bytes]) -> set[bytes]:
        """Of these (in-scope) memories, those a live in-scope memory supersedes. A
        memory superseded only by out-of-scope memories is not stale under the scope:
        its superseder must not show, not even as the memory it hides."""
        out: set[bytes] = set()
        for raw_id in raw_ids:
            for (src, _, _), record in scan_in(self.e.storage, raw_id, SUPERSEDES):
                if not record.live:
                    continue
                superseder = self.head(src)
                if superseder is not None and not superseder.tombstoned:
                    out.add(raw_id)
                    break
        return out


def _named_rows(granted: Granted) -> np.ndarray:
    """Index rows of the memories the include side names (a superset of the scope's
    members, de-duplicated, in id order)."""
    e, include = granted.e, granted.signed.scope.include
    evaluator = granted.evaluator()
    storage = e.storage
    parts: list[np.ndarray] = []
    by_id: set[bytes] = set()
    if include.match == "any":
        parts += [entry.scan_rows(storage, by_type.prefix(int(t)), by_type.key_of) for t in include.types]
        parts += [entry.scan_rows(storage, by_tag.prefix(tag), by_tag.key_of(by_tag.prefix(tag))) for tag in include.tags]
        by_id = set(include._raw_ids) | set(evaluator.include.frame_ids)
    elif include.ids:
        by_id = set(include._raw_ids)
    elif include.tags:
        tag = include.tags[0]
        parts.append(entry.scan_rows(storage, by_tag.prefix(tag), by_tag.key_of(by_tag.prefix(tag))))
    elif include.frames:
        by_id = set(evaluator.include.frame_ids)
    else:
        parts += [entry.scan_rows(storage, by_type.prefix(int(t)), by_type.key_of) for t in include.types]
    if by_id:
        parts.append(_rows_of(e, sorted(by_id)))
    if include.frames:
        # A tombstoned memory's frames are no longer indexed: its type index row
        # (kept, flagged) stands in, and `_in_scope` tests its head.
        types = include.types if include.match == "all" and include.types else tuple(MemoryType)
        for mtype in types:
            rows = entry.scan_rows(storage, by_type.prefix(int(mtype)), by_type.key_of)
            parts.append(rows[(rows["flags"] & FLAG_TOMBSTONED) != 0])
    if not parts:
        return np.empty(0, dtype=entry.DTYPE)
    rows = np.concatenate(parts) if len(parts) > 1 else parts[0]
    keys = entry.id_keys(rows["id_hi"], rows["id_lo"])
    _, first = np.unique(keys, return_index=True)
    picked: np.ndarray = rows[first]  # np.unique sorts: id order
    return picked


def _rows_of(e: Engine, raw_ids: list[bytes]) -> np.ndarray:
    """The type-index rows of these memories (those that exist)."""
    keys = head_keys(raw_ids)
    index_keys = []
    for raw_id, key, raw in zip(raw_ids, keys, e.storage.multi_get(keys)):
        if raw is not None:
            rec = unpack_head(key, raw)
            index_keys.append(by_type.key(rec[H_TYPE], rec[H_CREATED], raw_id))
    values = [v for v in e.storage.multi_get(index_keys) if v is not None]
    return entry.decode_many(values) if values else np.empty(0, dtype=entry.DTYPE)


def _in_scope(granted: Granted, rows: np.ndarray) -> np.ndarray:
    """The rows in scope: the evaluator's mask, and for tombstoned rows (whose frames
    are no longer indexed, on either side of the scope) the exact test on their heads."""
    e = granted.e
    keep = granted.evaluator().mask(e.storage, rows["id_hi"], rows["id_lo"], rows["type"])
    dead = np.flatnonzero((rows["flags"] & FLAG_TOMBSTONED) != 0)
    if len(dead):
        ids = entry.ids_of(rows[dead])
        keys = head_keys(ids)
        for row, raw_id, key, raw in zip(dead.tolist(), ids, keys, e.storage.multi_get(keys)):
            if raw is not None:
                rec = unpack_head(key, raw)
                keep[row] = rec[H_TOMBSTONE] is not None and granted._admits_record(raw_id, rec)
    kept: np.ndarray = rows[keep]
    return kept


def store_id(e: Engine) -> bytes | None:
    """The store's id: read at open, read again while a reader has none (a writer
    may have given an old store one since)."""
    if e.store_id is None:
        e.store_id = e.storage.get(META_STORE_ID)
    return e.store_id


def read(e: Engine, signed: SignedScope | None, body: Callable[[Granted | None], T], *, now: int | None = None,
         clock_now: int | None = None, catch_up: bool = False, reads: Reads | None = None) -> T:
    """Run `body` inside one `Engine.read`: unscoped (`signed` None, `body(None)`),
    or with the scope verified first, at the call's `now` (default: the store clock)
    and at the store clock (`clock_now`, when the caller read it already). A
    `Refusal` raised by the verification or by `body` is reported as a violation, and
    its error raised. `reads`: what `body` will read (`Engine.read`)."""
    if signed is None:
        return e.read(lambda: body(None), catch_up=catch_up, reads=reads)
    if clock_now is None:
        clock_now = to_micros(e.now())
    call_now = clock_now if now is None else now

    def locked() -> T:
        journal, _ = e.view_state()
        digest = verify(e.storage, signed, e.actor, call_now, clock_now, e.scopes, (journal.seq, journal.root))
        return body(Granted(e, signed, digest, journal.seq, journal.root))

    try:
        return e.read(locked, catch_up=True, reads=reads)
    except Refusal as refusal:
        from .writes import report_violation  # here: writes imports edges, which reads through this module

        report_violation(e, refusal)
        raise refusal.error from None
