"""Evaluating a scope over index values and memories.

Evaluating a scope inside `context()` costs little: index values carry each
candidate's id and type, so type and id criteria are a vectorised mask; tag and
frame criteria become id sets by scanning only the tag buckets and frame prefixes
the scope names (once per scope and handle: `ScopeState`), moved forward from the
journal entries written since (a write or an update_head carries the memory's exact
tags and frames). A call on an unchanged store pays a mask over its candidates.

Hash collisions can only hide memories, never show extra ones: bucket keys hold
64-bit tag hashes and 128-bit ref hashes, so a memory that only an include tag or
frame admits is confirmed on its head (its exact tags and frames) the first time it
is a candidate, and the verdict is kept until the journal changes that memory; an
exclude bucket is used as scanned (a collision there only excludes more).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from ..errors import CortexError
from ..index import by_tag, frame
from ..index.entry import id_keys
from ..model import Frame
from ..records import H_FRAMES, H_TAGS, IV_TYPE, JOURNAL_PREFIX, Entry, head_keys, journal_key, split_journal_value, unpack_head
from ..storage import Storage
from .values import Scope, Selector


class IdSet:
    """A set of 16-byte ids with a vectorised membership test for decoded index rows.

    Ids are kept as their two big-endian halves, sorted by the low half (64 random
    bits of a ULID): a lookup is one numeric `searchsorted` on the low halves and a
    compare of both halves. Should two ids of the set share a low half (possible with
    injected entropy), the test falls back to comparing the 16 bytes as strings."""

    __slots__ = ("size", "_lo", "_hi", "_strings")

    def __init__(self, ids: Iterable[bytes]) -> None:
        joined = b"".join(sorted(ids))
        pairs = np.frombuffer(joined, dtype=">u8").reshape(-1, 2).astype(np.uint64) if joined else np.empty((0, 2), np.uint64)
        order = np.argsort(pairs[:, 1], kind="stable")
        self.size = len(pairs)
        self._lo, self._hi = pairs[order, 1], pairs[order, 0]
        unique = self.size < 2 or bool((self._lo[1:] != self._lo[:-1]).all())
        self._strings = None if unique else np.frombuffer(joined, dtype="S16")

    def contains(self, id_hi: np.ndarray, id_lo: np.ndarray) -> np.ndarray:
        if not self.size or not len(id_lo):
            return np.zeros(len(id_lo), dtype=bool)
        if self._strings is not None:
            keys = id_keys(id_hi, id_lo)
            pos = np.minimum(np.searchsorted(self._strings, keys), self.size - 1)
            by_string: np.ndarray = self._strings[pos] == keys
            return by_string
        pos = np.minimum(np.searchsorted(self._lo, id_lo), self.size - 1)
        found: np.ndarray = (self._lo[pos] == id_lo) & (self._hi[pos] == id_hi)
        return found


class _Side:
    """One selector's criteria as lookups over index rows: a table by type code, and
    sorted `IdSet`s of its own ids, of the ids in its tag buckets and of those in its
    frame prefixes (bucket keys hold hashes: these are supersets)."""

    def __init__(self, selector: Selector, tag_ids: Iterable[bytes], frame_ids: Iterable[bytes]) -> None:
        self.selector = selector
        self.all = selector.match == "all"
        # A lookup table costs ~100x less than np.isin on a call's few hundred rows.
        self.by_type = np.zeros(256, dtype=bool)
        self.by_type[list(selector._type_codes)] = True
        self.tag_ids = frozenset(tag_ids) if selector.tags else frozenset()
        self.frame_ids = frozenset(frame_ids) if selector.frames else frozenset()
        self.ids = IdSet(selector._raw_ids)
        self.tags = IdSet(self.tag_ids)
        self.frames = IdSet(self.frame_ids)
        self.labelled = bool(selector.tags or selector.frames)

    def exact(self, id_hi: np.ndarray, id_lo: np.ndarray, codes: np.ndarray) -> np.ndarray | None:
        """Rows its type and id criteria match (None: it has neither), combined by
        its `match`."""
        parts = []
        if self.selector.types:
            parts.append(self.by_type[codes])
        if self.selector.ids:
            parts.append(self.ids.contains(id_hi, id_lo))
        return _combine(parts, self.all)

    def labels(self, id_hi: np.ndarray, id_lo: np.ndarray) -> np.ndarray | None:
        """Rows its tag buckets and frame prefixes hold (None: it names neither)."""
        parts = []
        if self.selector.tags:
            parts.append(self.tags.contains(id_hi, id_lo))
        if self.selector.frames:
            parts.append(self.frames.contains(id_hi, id_lo))
        return _combine(parts, self.all)

    def exact_one(self, raw_id: bytes, type_code: int) -> bool | None:
        parts = []
        if self.selector.types:
            parts.append(bool(self.by_type[type_code]))
        if self.selector.ids:
            parts.append(raw_id in self.selector._raw_ids)
        return None if not parts else (all(parts) if self.all else any(parts))

    def labels_one(self, raw_id: bytes) -> bool | None:
        parts = []
        if self.selector.tags:
            parts.append(raw_id in self.tag_ids)
        if self.selector.frames:
            parts.append(raw_id in self.frame_ids)
        return None if not parts else (all(parts) if self.all else any(parts))


def _combine(parts: list[np.ndarray], every: bool) -> np.ndarray | None:
    if not parts:
        return None
    out = parts[0].copy()
    for part in parts[1:]:
        if every:
            out &= part
        else:
            out |= part
    return out


class Evaluator:
    """A scope compiled against the store at one journal state.

    Type and id criteria are exact lookups (`_Side`). The tag and frame criteria
    give *possible* members (the ids in the scope's tag buckets and frame prefixes,
    whose keys hold hashes): on the include side a possible member is confirmed on
    its head (its exact tags and frames, `Selector.matches_labels`) the first time it
    is a candidate, and the verdict is kept (`verdicts`, and as `IdSet` generations
    for the vectorised path) until a journal entry changes that memory's tags or
    frames; on the exclude side the buckets are used as scanned (a collision only
    excludes more). Criteria combine by each selector's `match`: any of them, or
    every non-empty one. So a scope costs a scan of its buckets once per handle, one
    head read per possible member that ever shows up as a candidate, and a mask per
    call.
    """

    GENERATIONS = 8  # verdict IdSets kept before they are merged into one

    def __init__(self, scope: Scope, sets: _Sets) -> None:
        self.scope = scope
        self.include = _Side(scope.include, sets.include_tags, sets.include_frames)
        self.exclude = _Side(scope.exclude, sets.exclude_tags, sets.exclude_frames)
        self.verdicts = sets.verdicts  # shared with the _Sets that made this evaluator; changed under `lock`
        self.lock = threading.Lock()
        self._ok: list[IdSet] = []
        self._no: list[IdSet] = []
        self._pending: dict[bytes, bool] = {}
        self._merge()

    def _merge(self) -> None:
        self._ok = [IdSet(i for i, v in self.verdicts.items() if v)]
        self._no = [IdSet(i for i, v in self.verdicts.items() if not v)]
        self._pending.clear()

    def _flush(self) -> None:
        """Verdicts found one at a time (`admits_value`) into a generation (lock held)."""
        if self._pending:
            if len(self._ok) >= self.GENERATIONS:
                self._merge()
                return
            self._ok.append(IdSet(i for i, v in self._pending.items() if v))
            self._no.append(IdSet(i for i, v in self._pending.items() if not v))
            self._pending.clear()

    def _confirm(self, storage: Storage, ids: list[bytes]) -> dict[bytes, bool]:
        """Exact verdicts (do the tags and frames of the head satisfy `include`'s?)
        for possible members; recorded (lock held)."""
        keys = head_keys(ids)
        found: dict[bytes, bool] = {}
        selector = self.scope.include
        for raw_id, key, raw in zip(ids, keys, storage.multi_get(keys)):
            verdict = False
            if raw is not None:
                rec = unpack_head(key, raw)
                if type(rec) is tuple and len(rec) > max(H_TAGS, H_FRAMES) and type(rec[H_TAGS]) is tuple and type(rec[H_FRAMES]) is tuple:
                    frames = [(f[0], f[1], f[2]) for f in rec[H_FRAMES] if type(f) is tuple and len(f) == 3]
                    verdict = selector.matches_labels(rec[H_TAGS], frames)
            found[raw_id] = verdict
        self.verdicts.update(found)
        return found

    def mask(self, storage: Storage, id_hi: np.ndarray, id_lo: np.ndarray, types: np.ndarray) -> np.ndarray:
        """In-scope mask of decoded index rows (call inside `Engine.read`)."""
        codes = types.astype(np.uint8, copy=False)
        include = self.include
        exact = include.exact(id_hi, id_lo, codes)
        labels = include.labels(id_hi, id_lo)
        inside: np.ndarray
        if labels is None:
            inside = np.zeros(len(id_lo), dtype=bool) if exact is None else exact
        elif include.all:
            need = labels if exact is None else labels & exact
            inside = self._confirmed(storage, need, id_hi, id_lo) if need.any() else need
        else:
            inside = np.zeros(len(id_lo), dtype=bool) if exact is None else exact
            need = labels & ~inside
            if need.any():
                inside |= self._confirmed(storage, need, id_hi, id_lo)
        excluded = _combine([m for m in (self.exclude.exact(id_hi, id_lo, codes), self.exclude.labels(id_hi, id_lo)) if m is not None],
                            self.exclude.all)
        if excluded is not None:
            inside &= ~excluded
        return inside

    def _confirmed(self, storage: Storage, need: np.ndarray, id_hi: np.ndarray, id_lo: np.ndarray) -> np.ndarray:
        """Of the rows in `need`, those whose head confirms them (reading the heads of
        those without a verdict yet)."""
        with self.lock:
            self._flush()
            ok = np.zeros(len(need), dtype=bool)
            known = np.zeros(len(need), dtype=bool)
            for generation in self._ok:
                ok |= generation.contains(id_hi, id_lo)
            for generation in self._no:
                known |= generation.contains(id_hi, id_lo)
            unknown = need & ~ok & ~known
            if unknown.any():
                rows = np.flatnonzero(unknown)
                keys = id_keys(id_hi[rows], id_lo[rows]).tobytes()
                ids = [keys[i : i + 16] for i in range(0, len(keys), 16)]
                found = self._confirm(storage, ids)
                self._pending.update(found)
                self._flush()
                ok[rows] = [found[i] for i in ids]
            result: np.ndarray = need & ok
            return result

    def may_admit_type(self, type_code: int) -> bool:
        """Whether any memory of this type can be in scope (False: none can)."""
        include, exclude = self.scope.include, self.scope.exclude
        if include.is_empty():
            return False
        if exclude.types and self.exclude.by_type[type_code] and (exclude.match == "any" or not (exclude.ids or exclude.tags or exclude.frames)):
            return False
        if include.match == "all":
            return not include.types or bool(self.include.by_type[type_code])
        return bool(self.include.by_type[type_code]) or bool(include.ids) or self.include.labelled

    def admits_value(self, storage: Storage, value: bytes) -> bool:
        """Whether one index value's memory is in scope (call inside `Engine.read`)."""
        raw_id, type_code = value[:16], value[IV_TYPE]
        excluded = [v for v in (self.exclude.exact_one(raw_id, type_code), self.exclude.labels_one(raw_id)) if v is not None]
        if excluded and (all(excluded) if self.exclude.all else any(excluded)):
            return False
        exact, labels = self.include.exact_one(raw_id, type_code), self.include.labels_one(raw_id)
        if self.include.all:
            if exact is False or labels is False or (exact is None and labels is None):
                return False
            if labels is None:
                return True
        else:
            if exact:
                return True
            if not labels:
                return False
        with self.lock:
            verdict = self.verdicts.get(raw_id)
            if verdict is None:
                verdict = self._confirm(storage, [raw_id])[raw_id]
                self._pending[raw_id] = verdict
            return verdict


@dataclass
class _Sets:
    """A scope's id sets as of one journal state (`seq`, `root`): per side, the ids
    in its tag buckets and frame prefixes, and the include side's exact verdicts."""

    seq: int
    root: bytes
    include_tags: set[bytes]
    include_frames: set[bytes]
    exclude_tags: set[bytes]
    exclude_frames: set[bytes]
    verdicts: dict[bytes, bool]
    evaluator: Evaluator | None = None

    def refresh(self, scope: Scope) -> Evaluator:
        self.evaluator = Evaluator(scope, self)
        return self.evaluator


def _build(storage: Storage, scope: Scope, seq: int, root: bytes) -> _Sets:
    """Scan the tag buckets and frame prefixes the scope names (bounded by its size)."""

    def tag_ids(selector: Selector) -> set[bytes]:
        ids: set[bytes] = set()
        for tag in selector.tags:
            prefix = by_tag.prefix(tag)
            ids.update(v[:16] for v in storage.scan_values(prefix, by_tag.key_of(prefix)))
        return ids

    def frame_ids(selector: Selector) -> set[bytes]:
        ids: set[bytes] = set()
        for f in selector.frames:
            prefix = frame.prefix(f.verb, f.kind, f.ref)
            ids.update(v[:16] for v in storage.scan_values(prefix, frame.key_of(prefix)))
        return ids

    sets = _Sets(seq, root, tag_ids(scope.include), frame_ids(scope.include), tag_ids(scope.exclude), frame_ids(scope.exclude), {})
    sets.refresh(scope)
    return sets


# Past this many journal entries since a scope's sets were built, build them again
# instead of reading the entries.
MAX_PATCH_ENTRIES = 20_000


def _patch(storage: Storage, scope: Scope, sets: _Sets, seq: int, root: bytes) -> bool:
    """Move `sets` forward to journal state (seq, root) from the entries written
    since: a write or an update_head carries the memory's exact tags and frames (its
    verdict is dropped, to be confirmed again). False when it cannot (the caller
    builds again)."""
    if seq - sets.seq > MAX_PATCH_ENTRIES:
        return False
    changed = False
    last_root = sets.root
    count = 0
    verdicts = dict(sets.verdicts)  # the current evaluator may still be reading its own
    for key, value in storage.scan_items(JOURNAL_PREFIX, start=journal_key(sets.seq + 1)):
        count += 1
        if count > seq - sets.seq:
            break
        last_root, raw = split_journal_value(value)
        try:
            entry = Entry.decode(key, raw)
            payload = entry.payload
            if entry.kind not in ("write", "update_head"):
                continue
            raw_id = payload["id"]
            tags, frames = payload.get("tags"), payload.get("frames")
            sides = ((scope.include, sets.include_tags, sets.include_frames), (scope.exclude, sets.exclude_tags, sets.exclude_frames))
            for selector, tag_set, frame_set in sides:
                if tags is not None:
                    changed |= _set_member(tag_set, raw_id, any(t in selector._tag_set for t in tags))
                if frames is not None:
                    changed |= _set_member(frame_set, raw_id, any((f[0], f[1], f[2]) in selector._frame_keys for f in frames))
            if (tags is not None or frames is not None) and verdicts.pop(raw_id, None) is not None:
                changed = True
        except (CortexError, KeyError, TypeError, IndexError, ValueError):
            return False
    if count != seq - sets.seq or last_root != root:
        return False
    sets.seq, sets.root = seq, root
    if changed:
        sets.verdicts = verdicts
        sets.refresh(scope)
    return True


def _set_member(ids: set[bytes], raw_id: bytes, member: bool) -> bool:
    if member == (raw_id in ids):
        return False
    if member:
        ids.add(raw_id)
    else:
        ids.discard(raw_id)
    return True


def memory_frames(frames: Iterable[Frame]) -> Iterator[tuple[int, int, str]]:
    return ((int(f.verb), int(f.kind), f.ref) for f in frames)
