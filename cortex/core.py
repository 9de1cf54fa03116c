"""`cortex.open()` and the `Cortex` handle: the write path, the read path, and the
store's upkeep (`verify`, `rebuild`).

Every public call validates all of its input before it takes the lock, then builds
one batch of puts and deletes (canonical records, derived index entries, salience,
journal entries, journal head) and writes it atomically. A rejected call writes
nothing, so the root is unchanged.

Concurrency: one writer process per store (RocksDB's lock). Inside a process a
readers-writer lock serialises writes and lets reads run together, and every read
that needs a consistent view of several keys (a `context()` scans indexes, then
reads records) holds the read side for its whole duration. rocksdict snapshots
cannot isolate scans (ROCKSDB-NOTES trap 2), so this lock is the guarantee. A
`mode="r"` handle is a RocksDB secondary instance: its view moves only when it
catches up with the writer, which it does under the write side of its own lock.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from . import index, workers
from .index import by_type, entry
from .errors import (
    ActorMismatch,
    CorruptRecord,
    MemoryTombstoned,
    NotFound,
    ReadOnlyStore,
    StoreClosed,
    StoreError,
    StoreLocked,
    TypeMismatch,
    ValidationError,
)
from .forms import DEFAULT_ENCODING, Tokenizer, build_forms, check_forms
from .ids import IdGenerator, URI, decode_id, encode_id, format_uri, parse_uri
from .journal import JournalHead, append
from .memory import Memory, ViewCache
from .model import (
    MAX_IMPORTANCE,
    Frame,
    MemoryData,
    MemoryType,
    check_choice,
    check_data,
    check_datetime,
    check_frames,
    check_int,
    check_number,
    check_tags,
    check_text,
    is_pinned,
    to_micros,
)
from .salience import score as salience
from .salience.score import DEFAULT_WEIGHTS, Score, Weights
from .store import (
    HEAD_PREFIX,
    KV,
    META_ACTOR,
    META_JOURNAL,
    META_SCHEMA,
    META_TOKENIZER,
    META_CLOCK_HIGH,
    META_WEIGHTS,
    SCHEMA_VERSION,
    Head,
    Version,
    content_hash,
    head_key,
    salience_key,
    unpack,
    version_key,
    V_DATA,
    V_HASH,
)
from .workers import FormsPool

MAX_SOURCE_BYTES = 256
MAX_REASON_BYTES = 1024
_KNOWN_OPTIONS = {"entropy", "cache_mb", "ingest_helper"}
_MAX_REOPENS = 5  # fresh secondary instances a refresh() tries while the writer keeps flushing


def _system_clock() -> datetime:
    return datetime.now(timezone.utc)


# ---------------------------------------------------------------------------
# Write requests


@dataclass(frozen=True, slots=True)
class Write:
    """One memory to write, with the same fields as `Cortex.write()`'s arguments.

    Validates on construction. `expires_at`: after that instant the memory no
    longer appears in `context()` (it still resolves).
    """

    data: MemoryData
    frames: tuple[Frame, ...] = ()
    tags: tuple[str, ...] = ()
    importance: int = 0
    confidence: float = 1.0
    source: str = "user_input"
    expires_at: datetime | None = None
    forms: dict[str, str] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        check_data(self.data)
        object.__setattr__(self, "frames", check_frames(self.frames))
        object.__setattr__(self, "tags", check_tags(self.tags))
        check_int("importance", self.importance, lo=0, hi=MAX_IMPORTANCE)
        object.__setattr__(self, "confidence", check_number("confidence", self.confidence, lo=0.0, hi=1.0))
        check_text("source", self.source, required=True, max_bytes=MAX_SOURCE_BYTES)
        object.__setattr__(self, "expires_at", check_datetime("expires_at", self.expires_at))
        object.__setattr__(self, "forms", check_forms(self.forms))


# ---------------------------------------------------------------------------
# Readers-writer lock


class _RWLock:
    """Many readers or one writer; a waiting writer holds back new readers."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._waiting_writers:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._waiting_writers += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._waiting_writers -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


# ---------------------------------------------------------------------------
# open()


def open(
    path: str | os.PathLike[str],
    *,
    actor: str,
    mode: str = "rw",
    clock: Callable[[], datetime] | None = None,
    sync: bool = False,
    **options: Any,
) -> Cortex:
    """Open (mode "rw", creating it if missing) or follow (mode "r") the store at `path`.

    `actor` names the agent that owns the store; opening a store under another actor
    raises `ActorMismatch`. `clock` returns an aware UTC datetime (default: the
    system clock). `sync=True` fsyncs every write (survives power loss; the default
    survives a killed process). Options: `entropy` (a callable like `os.urandom`
    that supplies the random bits of new ids, for reproducible stores) and
    `cache_mb` (block cache size, default 1024) and `ingest_helper` (default False:
    True starts a helper process that renders and counts the forms of `write_many`
    batches of 256 memories or more, see `cortex.workers`; about 1.2x bulk ingest
    on two cores).

    A second `mode="rw"` open of a store raises `StoreLocked`. `mode="r"` runs
    beside a writer (in this or another process) as a RocksDB secondary instance
    and sees new writes after `refresh()` or at the next `context()`.
    """
    check_text("actor", actor, required=True, max_bytes=256)
    if mode not in ("rw", "r"):
        raise ValidationError("mode", 'must be "rw" or "r"', mode)
    if clock is not None and not callable(clock):
        raise ValidationError("clock", "must be a callable returning an aware datetime", clock)
    if not isinstance(sync, bool):
        raise ValidationError("sync", "must be a bool", sync)
    unknown = set(options) - _KNOWN_OPTIONS
    if unknown:
        raise ValidationError(sorted(unknown)[0], f"unknown option; known: {', '.join(sorted(_KNOWN_OPTIONS))}")
    entropy = options.get("entropy")
    if entropy is not None and not callable(entropy):
        raise ValidationError("entropy", "must be a callable like os.urandom", entropy)
    cache_mb = options.get("cache_mb", 1024)
    check_int("cache_mb", cache_mb, lo=1, hi=1 << 20)
    ingest_helper = options.get("ingest_helper", False)
    if not isinstance(ingest_helper, bool):
        raise ValidationError("ingest_helper", "must be a bool", ingest_helper)
    if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str):
        raise ValidationError("path", "must be a str or a path-like object naming a directory", path)
    path = os.fspath(path)
    check_text("path", path, required=True, max_bytes=4096)
    if "\x00" in path:
        raise ValidationError("path", "must not contain NUL characters", path)
    return Cortex(path, actor=actor, mode=mode, clock=clock or _system_clock, sync=sync, entropy=entropy, cache_mb=cache_mb,
                  ingest_helper=ingest_helper)


def _open_kv(path: str, mode: str, cache_mb: int, sync: bool) -> tuple[KV, str | None]:
    secondary = None
    try:
        if mode == "r":
            if not os.path.exists(os.path.join(path, "CURRENT")):
                raise NotFound(f"no cortex store at {path!r}")
            secondary = tempfile.mkdtemp(prefix="cortex-secondary-")
            return KV(path, read_only_secondary=secondary, cache_bytes=cache_mb << 20), secondary
        return KV(path, cache_bytes=cache_mb << 20, sync=sync), None
    except NotFound:
        raise
    except Exception as exc:
        if secondary:
            shutil.rmtree(secondary, ignore_errors=True)
        if "lock" in str(exc).lower():
            raise StoreLocked(
                f"store {path!r} is open for writing by another process or handle; "
                'open it with mode="r" to read beside the writer'
            ) from None
        raise StoreError(f"cannot open store {path!r}: {exc}") from None


class Cortex:
    """An open store. Use `cortex.open()`; close with `close()` or a `with` block."""

    def __init__(self, path: str, *, actor: str, mode: str, clock: Callable[[], datetime], sync: bool, entropy: Callable[[int], bytes] | None, cache_mb: int, ingest_helper: bool = False) -> None:
        self.path = path
        self._ingest_helper = ingest_helper and mode == "rw"
        self._views = ViewCache()
        self._pool: FormsPool | None = None
        self.actor = actor
        self.mode = mode
        self._clock = clock
        self._lock = _RWLock()
        self._cache_mb = cache_mb
        self._files_seen: tuple[Any, ...] = self._files_signature() if mode == "r" and os.path.isdir(path) else ()
        self._kv, self._secondary = _open_kv(path, mode, cache_mb, sync)
        last_head = self._kv.last_key(HEAD_PREFIX)
        self._ids = IdGenerator(entropy, last_head[len(HEAD_PREFIX):] if last_head else None)
        self._closed = False
        try:
            self._check_or_init_meta()
        except BaseException:
            self.close()
            raise
        self._tokenizer = Tokenizer(self._meta_text(META_TOKENIZER) or DEFAULT_ENCODING)
        self._journal = JournalHead.decode(self._kv.get(META_JOURNAL))
        self._clock_high = self._read_clock_high()
        # In mode "r": the latest time any write of the current view was made at.
        # A view holding a memory created later is torn (see context.compose).
        self._journal_at: int | None = None
        if mode == "r":
            self._load_view()

    def _meta_text(self, key: bytes) -> str | None:
        raw = self._kv.get(key)
        return None if raw is None else raw.decode("utf-8")

    def _check_or_init_meta(self) -> None:
        stored = self._meta_text(META_ACTOR)
        if stored is None:
            if self.mode == "r":
                raise NotFound(f"{self.path!r} is not a cortex store")
            self._kv.write({META_ACTOR: self.actor.encode(), META_TOKENIZER: DEFAULT_ENCODING.encode(), META_SCHEMA: str(SCHEMA_VERSION).encode()})
        elif stored != self.actor:
            raise ActorMismatch(f"store {self.path!r} belongs to actor {stored!r}, not {self.actor!r}")
        else:
            schema = self._meta_text(META_SCHEMA)
            if schema != str(SCHEMA_VERSION):
                raise StoreError(f"store {self.path!r} has schema version {schema}; this cortex reads version {SCHEMA_VERSION}")

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Close the store. Idempotent; later calls raise `StoreClosed`."""
        if self._closed:
            return
        with self._lock.write():
            self._closed = True
            self._kv.close()
            if self._pool is not None:
                self._pool.close()
        if self._secondary:
            shutil.rmtree(self._secondary, ignore_errors=True)

    def __enter__(self) -> Cortex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.mode != "rw":
            raise ReadOnlyStore('this store was opened with mode="r"; writes need mode="rw"')

    def _now(self) -> datetime:
        now = check_datetime("clock()", self._clock())
        if now is None:
            raise ValidationError("clock()", "must return an aware datetime")
        return now

    # -- catching up (mode "r") ------------------------------------------------

    def _files_signature(self) -> tuple[Any, ...]:
        """Names, sizes and times of the writer's WAL and MANIFEST files: when they
        have not changed, the writer has committed nothing new."""
        sig = []
        with os.scandir(self.path) as it:
            for e in it:
                if e.name.endswith(".log") or e.name.startswith("MANIFEST") or e.name == "CURRENT":
                    try:
                        st = e.stat()
                    except FileNotFoundError:
                        continue  # the writer removed an obsolete WAL meanwhile
                    sig.append((e.name, st.st_size, st.st_mtime_ns))
        return tuple(sorted(sig))

    def refresh(self, reopen: bool = False) -> None:
        """Catch up with the writer (mode "r"); a no-op in mode "rw".

        A secondary instance follows plain WAL appends with a catch-up. When the
        writer has flushed (its MANIFEST or its set of WAL files changed) the
        instance is replaced by a fresh one instead: RocksDB 9.8 secondaries can
        keep a view that lacks writes made around a flush, even after further
        catch-ups, while a fresh instance reads the writer's current files from
        scratch (~20 ms at 1M). `reopen=True` forces that; `context()` does it by
        itself when it finds its view torn.
        """
        self._check_open()
        if self.mode == "r":
            with self._lock.write():
                reopen = reopen or _flush_happened(self._files_seen, self._files_signature())
                for _ in range(_MAX_REOPENS):
                    seen = self._files_signature()  # before: a write during catch-up shows next time
                    if reopen:
                        self._reopen_secondary()
                    else:
                        self._kv.catch_up()
                    # A flush that began while we read may have left this view torn.
                    reopen = _flush_happened(seen, self._files_signature())
                    if not reopen:
                        break
                self._files_seen = seen
                self._load_view()

    def _load_view(self) -> None:
        """Read the journal head of a (new) mode "r" view and the latest write time
        (None, and no torn-view check on it, for a store written before it was kept)."""
        self._journal = JournalHead.decode(self._kv.get(META_JOURNAL))
        self._journal_at = self._read_clock_high() if self._kv.get(META_CLOCK_HIGH) is not None or not self._journal.seq else None

    def _read_clock_high(self) -> int:
        raw = self._kv.get(META_CLOCK_HIGH)
        if raw is not None and len(raw) != 8:
            raise CorruptRecord(META_CLOCK_HIGH, "must be 8 bytes")
        return int.from_bytes(raw, "big") if raw else 0

    def _stamp(self, puts: dict[bytes, bytes | None], now: int) -> int:
        """Record in a pending batch that a write happened at `now`; the new high."""
        high = max(self._clock_high, now)
        puts[META_CLOCK_HIGH] = high.to_bytes(8, "big")
        return high

    def _reopen_secondary(self) -> None:
        old, old_dir = self._kv, self._secondary
        self._kv, self._secondary = _open_kv(self.path, "r", self._cache_mb, False)
        old.close()
        if old_dir:
            shutil.rmtree(old_dir, ignore_errors=True)

    def _forms_pool(self, batch_size: int) -> FormsPool | None:
        """The forms helper for a batch this large (None: work inline), started on first need."""
        if not self._ingest_helper or batch_size < workers.MIN_BATCH:
            return None
        if self._pool is None:
            self._pool = FormsPool(self._tokenizer.name)
        return self._pool

    def _catch_up_if_changed(self) -> None:
        if self.mode == "r" and self._files_signature() != self._files_seen:
            self.refresh()

    # -- write path ------------------------------------------------------------

    def write(
        self,
        data: MemoryData,
        *,
        frames: Iterable[Frame] = (),
        tags: Iterable[str] = (),
        importance: int = 0,
        confidence: float = 1.0,
        source: str = "user_input",
        expires_at: datetime | None = None,
        forms: dict[str, str] | None = None,
    ) -> str:
        """Write a new memory; return the URI of its version 1."""
        item = Write(data, frames, tags, importance, confidence, source, expires_at, forms)  # type: ignore[arg-type]
        return self.write_many([item])[0]

    def write_many(self, items: Iterable[Write]) -> list[str]:
        """Write many memories in one atomic batch; URIs in item order.

        The clock is read once: every item gets the same `created_at`, and ids
        ascend in item order.
        """
        self._check_writable()
        if isinstance(items, (str, bytes, Write)) or not isinstance(items, Iterable):
            raise ValidationError("items", "must be an iterable of cortex.Write", items)
        batch = list(items)
        for i, item in enumerate(batch):
            if not isinstance(item, Write):
                raise ValidationError(f"items[{i}]", f"must be a cortex.Write, not {type(item).__name__}", item)
        if not batch:
            return []
        records = [w.data.to_record() for w in batch]
        pool = self._forms_pool(len(batch))
        if pool is not None:
            chunks = pool.count([(w.data, record, w.forms) for w, record in zip(batch, records)])
        else:
            chunks = iter([build_forms(self._tokenizer, [(w.data, w.forms) for w in batch])])
        with self._lock.write():
            self._check_open()
            now = to_micros(self._now())
            raw_ids = self._ids.next_many(now // 1000, len(batch))
            puts: dict[bytes, bytes | None] = {}
            journal = self._journal
            uris = []
            for raw_id, item, record, form in zip(raw_ids, batch, records, itertools.chain.from_iterable(chunks)):
                data = item.data
                forms = (form.short, form.medium)
                tokens = (form.short_tokens, form.medium_tokens, form.full_tokens)
                expires = to_micros(item.expires_at) if item.expires_at else None
                head = Head(
                    type=data.TYPE, version=1, created=now, updated=now, frames=item.frames, tags=item.tags,
                    importance=item.importance, tombstone=None, expires=expires, data=data,
                    confidence=item.confidence, source=item.source, forms=forms, tokens=tokens,
                )
                version = Version(data, now, self.actor, item.confidence, item.source, forms, tokens, content_hash(record))
                frames = [[int(f.verb), int(f.kind), f.ref] for f in item.frames]
                payload = {
                    "id": raw_id, "type": int(data.TYPE), "version": 1, "importance": item.importance, "pinned": is_pinned(data),
                    "frames": frames, "tags": list(item.tags), "expires": expires,
                }
                score = salience.apply(None, "write", now, payload)
                puts[head_key(raw_id)] = head.encode(record, frames)
                puts[version_key(raw_id, 1)] = version.encode(record)
                puts[salience_key(raw_id)] = score.encode()
                puts.update(index.entries(raw_id, head, score))
                journal = append(puts, journal, "write", now, payload)
                uris.append(format_uri(data.TYPE, raw_id, 1))
            high = self._stamp(puts, now)
            self._kv.write(puts)
            self._journal, self._clock_high = journal, high
        return uris

    def update(self, uri: str, data: MemoryData) -> str:
        """Write a new version of a memory (same id, same type); return its URI."""
        self._check_writable()
        ref = parse_uri(uri)
        check_data(data)
        form = build_forms(self._tokenizer, [(data, None)])[0]
        with self._lock.write():
            raw_id, old = self._live_head(ref)
            if data.TYPE != old.type:
                raise TypeMismatch("data", f"must be a {old.type.type_name} like the memory; got {type(data).__name__}", data)
            now = to_micros(self._now())
            number = old.version + 1
            head = Head(
                type=old.type, version=number, created=old.created, updated=now, frames=old.frames,
                tags=old.tags, importance=old.importance, tombstone=None, expires=old.expires, data=data,
                confidence=old.confidence, source=old.source, forms=(form.short, form.medium),
                tokens=(form.short_tokens, form.medium_tokens, form.full_tokens),
            )
            version = Version(data, now, self.actor, old.confidence, old.source, head.forms, head.tokens, content_hash(data.to_record()))
            payload = {"id": raw_id, "version": number, "pinned": is_pinned(data)}
            self._commit("update", now, payload, {raw_id: (old, head)}, {version_key(raw_id, number): version.encode()})
        return str(URI(head.type, raw_id, number))

    def update_head(self, uri: str, *, tags: Iterable[str] | None = None, frames: Iterable[Frame] | None = None, importance: int | None = None) -> None:
        """Change a memory's tags, frames or importance without a new version."""
        self._check_writable()
        ref = parse_uri(uri)
        if tags is None and frames is None and importance is None:
            raise ValidationError("update_head", "name at least one of tags, frames, importance")
        new_tags = None if tags is None else check_tags(tags)
        new_frames = None if frames is None else check_frames(frames)
        if importance is not None:
            check_int("importance", importance, lo=0, hi=MAX_IMPORTANCE)
        with self._lock.write():
            raw_id, old = self._live_head(ref)
            now = to_micros(self._now())
            head = Head(
                type=old.type, version=old.version, created=old.created, updated=old.updated,
                frames=old.frames if new_frames is None else new_frames,
                tags=old.tags if new_tags is None else new_tags,
                importance=old.importance if importance is None else importance,
                tombstone=None, expires=old.expires, data=old.data, confidence=old.confidence,
                source=old.source, forms=old.forms, tokens=old.tokens,
            )
            payload: dict[str, Any] = {"id": raw_id, "importance": importance}
            if new_tags is not None:
                payload["tags"] = list(new_tags)
            if new_frames is not None:
                payload["frames"] = [[int(f.verb), int(f.kind), f.ref] for f in new_frames]
            self._commit("update_head", now, payload, {raw_id: (old, head)})

    def tombstone(self, uri: str, reason: str) -> None:
        """Soft-delete a memory: it leaves every tier but stays resolvable. Idempotent:
        tombstoning a tombstoned memory writes nothing."""
        self._check_writable()
        ref = parse_uri(uri)
        check_text("reason", reason, required=True, max_bytes=MAX_REASON_BYTES)
        with self._lock.write():
            raw_id, old = self._head_for(ref)
            if old.tombstone is not None:
                return
            now = to_micros(self._now())
            head = Head(
                type=old.type, version=old.version, created=old.created, updated=old.updated, frames=old.frames,
                tags=old.tags, importance=old.importance, tombstone=(now, reason), expires=old.expires,
                data=old.data, confidence=old.confidence, source=old.source, forms=old.forms, tokens=old.tokens,
            )
            self._commit("tombstone", now, {"id": raw_id, "reason": reason}, {raw_id: (old, head)})

    def _commit(self, kind: str, now: int, payload: dict[str, Any], heads: dict[bytes, tuple[Head, Head]], extra: dict[bytes, bytes] | None = None) -> None:
        """Write one journal entry's change (write lock held): the new heads, their
        salience records and index diffs, learned weights, and the journal head."""
        old_scores = {raw_id: self._score_record(raw_id) for raw_id in heads}
        weights_before = self._weights_locked()
        weights, scores = salience.step(weights_before, dict(old_scores), kind, now, payload)
        puts: dict[bytes, bytes | None] = {}
        for raw_id, (old, head) in heads.items():
            before = index.entries(raw_id, old, old_scores[raw_id])
            after = index.entries(raw_id, head, scores[raw_id])
            puts.update({key: None for key in before.keys() - after.keys()})
            puts.update({key: value for key, value in after.items() if before.get(key) != value})
            if head is not old:
                puts[head_key(raw_id)] = head.encode()
            puts[salience_key(raw_id)] = scores[raw_id].encode()
        if kind == "attest":
            puts[META_WEIGHTS] = weights.encode()
        if extra:
            puts.update(extra)
        journal = append(puts, self._journal, kind, now, payload)
        high = self._stamp(puts, now)
        self._kv.write(puts)
        self._journal, self._clock_high = journal, high

    def attest(self, cited: Iterable[str], outcome: str, reason: str | None = None) -> None:
        """Feedback on memories an agent relied on (DESIGN §5).

        `outcome` "success" adds a citation and an access to each cited memory;
        "failure" with reason "factual_error" or "wrong_assumption" takes a citation
        away (never below 0). Either way the store's weights learn from the cited
        memories' profile. Unknown or tombstoned memories raise and write nothing.
        """
        self._check_writable()
        if isinstance(cited, (str, bytes)) or not isinstance(cited, Iterable):
            raise ValidationError("cited", "must be a list of URIs", cited)
        refs = [parse_uri(uri, f"cited[{i}]") for i, uri in enumerate(cited)]
        if not refs:
            raise ValidationError("cited", "must name at least one memory", cited)
        check_choice("outcome", outcome, ("success", "failure"))
        check_text("reason", reason, max_bytes=MAX_REASON_BYTES)
        with self._lock.write():
            heads: dict[bytes, tuple[Head, Head]] = {}
            for ref in refs:
                raw_id, head = self._live_head(ref)
                heads.setdefault(raw_id, (head, head))
            now = to_micros(self._now())
            self._commit("attest", now, {"ids": list(heads), "outcome": outcome, "reason": reason}, heads)

    def _touch(self, raw_ids: list[bytes]) -> None:
        """Count an access of each memory (`find(late_binding=True)`); journaled."""
        with self._lock.write():
            heads = {}
            for raw_id in dict.fromkeys(raw_ids):
                raw = self._kv.get(head_key(raw_id))
                if raw is not None:
                    head = Head.decode(head_key(raw_id), raw)
                    heads[raw_id] = (head, head)
            if heads:
                self._commit("access", to_micros(self._now()), {"ids": list(heads)}, heads)

    def find(self, type: Any = None, tags: Iterable[str] = (), where: Any = None, order_by: str = "salience", limit: int | None = None, budget_tokens: int | None = None, form: str | None = None, include_tombstoned: bool = False, scope: Any = None, late_binding: bool = False) -> list[Memory]:
        """A bounded query over one type or a set of tags: see `cortex.query`."""
        from .query import find

        return find(self, type=type, tags=tags, where=where, order_by=order_by, limit=limit, budget_tokens=budget_tokens, form=form, include_tombstoned=include_tombstoned, scope=scope, late_binding=late_binding)

    # -- read path ---------------------------------------------------------------

    def _head_for(self, ref: URI) -> tuple[bytes, Head]:
        """The head named by a URI: the id must exist with that type and version."""
        key = head_key(ref.id)
        raw = self._kv.get(key)
        if raw is None:
            raise NotFound(f"no memory {encode_id(ref.id)}")
        head = Head.decode(key, raw)
        if head.type != ref.type or ref.version > head.version:
            raise NotFound(f"no memory {ref}")
        return ref.id, head

    def _live_head(self, ref: URI) -> tuple[bytes, Head]:
        raw_id, head = self._head_for(ref)
        if head.tombstone is not None:
            raise MemoryTombstoned(f"memory {encode_id(raw_id)} is tombstoned and cannot change")
        return raw_id, head

    def _score_record(self, raw_id: bytes) -> Score:
        key = salience_key(raw_id)
        raw = self._kv.get(key)
        if raw is None:
            raise CorruptRecord(key, "missing salience record")
        try:
            return Score.decode(raw)
        except Exception:
            raise CorruptRecord(key, "bad salience record") from None

    def resolve(self, uri: str) -> Memory:
        """The memory version a URI names (old versions and tombstoned memories too)."""
        self._check_open()
        ref = parse_uri(uri)
        with self._lock.read():
            memory = self._stored(ref.id)
            if memory is None or memory.type != ref.type or ref.version > memory.version:
                raise NotFound(f"no memory {ref}")
            if ref.version == memory.version:
                return memory
            key = version_key(ref.id, ref.version)
            raw = self._kv.get(key)
            if raw is None:
                raise CorruptRecord(key, "missing version record")
            record = unpack(key, raw)
            older = Memory.stored(ref.id, memory._head, ref.version, record)
            if content_hash(record[V_DATA]) != record[V_HASH]:
                raise CorruptRecord(key, "content hash mismatch")
            return older

    def resolve_latest(self, id: str) -> Memory:
        """The current version of the memory with this id (26-character ULID)."""
        self._check_open()
        raw_id = decode_id(id)
        with self._lock.read():
            memory = self._stored(raw_id)
        if memory is None:
            raise NotFound(f"no memory {id}")
        return memory

    def _stored(self, raw_id: bytes) -> Memory | None:
        key = head_key(raw_id)
        raw = self._kv.get(key)
        return None if raw is None else Memory.stored(raw_id, unpack(key, raw))

    def memories(self, include_tombstoned: bool = False) -> Iterator[Memory]:
        """Every memory's current version, in id (= creation) order."""
        self._check_open()
        for key, raw in self._kv.scan_items(HEAD_PREFIX):
            memory = Memory.stored(key[len(HEAD_PREFIX):], unpack(key, raw))
            if include_tombstoned or not memory.tombstoned:
                yield memory

    def salience(self, id: str) -> Score:
        """The salience record of a memory, by id or URI."""
        self._check_open()
        raw_id = parse_uri(id).id if isinstance(id, str) and id.startswith("cortex://") else decode_id(id)
        with self._lock.read():
            if self._kv.get(head_key(raw_id)) is None:
                raise NotFound(f"no memory {id}")
            return self._score_record(raw_id)

    def weights(self) -> Weights:
        """The store's salience weights (the defaults until feedback moves them)."""
        self._check_open()
        return self._weights_locked()

    def _weights_locked(self) -> Weights:
        raw = self._kv.get(META_WEIGHTS)
        if raw is None:
            return DEFAULT_WEIGHTS
        try:
            return Weights.decode(raw)
        except Exception:
            raise CorruptRecord(META_WEIGHTS, "bad weights record") from None

    def root(self) -> str:
        """The OverallRoot: hex of the journal's hash chain (64 zeros when empty)."""
        self._check_open()
        return self._journal.root.hex()

    def stats(self) -> dict[str, Any]:
        """Counts by type, live and tombstoned, journal length and root. Scans the type
        index (about 0.3 µs per memory)."""
        self._check_open()
        with self._lock.read():
            rows = entry.scan_rows(self._kv, by_type.PREFIX, by_type.key_of)
            tombstoned = int(((rows["flags"] & entry.FLAG_TOMBSTONED) != 0).sum())
            codes, counts = np.unique(rows["type"], return_counts=True)
            by_kind = {MemoryType(int(code)).type_name: int(count) for code, count in zip(codes, counts)}
            return {
                "path": self.path,
                "actor": self.actor,
                "mode": self.mode,
                "memories": int(len(rows)) - tombstoned,
                "tombstoned": tombstoned,
                "by_type": by_kind,
                "journal_seq": self._journal.seq,
                "root": self._journal.root.hex(),
                "tokenizer": self._tokenizer.name,
                "schema_version": SCHEMA_VERSION,
            }

    # -- upkeep ------------------------------------------------------------------

    def verify(self) -> list[str]:
        """Check the whole store; one line per problem (empty when sound). See `cortex.upkeep`."""
        from .upkeep import verify

        return verify(self)

    def rebuild(self) -> list[str]:
        """Recreate every derived key; return the canonical damage left. See `cortex.upkeep`."""
        from .upkeep import rebuild

        return rebuild(self)

    # -- context -----------------------------------------------------------------

    def context(self, opts: Any = None, **fields: Any) -> Any:
        """Compose the Bundle for a task: see `cortex.context` and DESIGN §6."""
        from .context import compose

        return compose(self, opts, fields)


def _flush_happened(before: tuple[Any, ...], after: tuple[Any, ...]) -> bool:
    """Whether the writer flushed between two file signatures: WAL files came or went,
    or the MANIFEST changed (plain writes only grow the current WAL)."""
    if {name for name, *_ in before} != {name for name, *_ in after}:
        return True
    return [e for e in before if not e[0].endswith(".log")] != [e for e in after if not e[0].endswith(".log")]


