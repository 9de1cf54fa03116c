"""The engine: the state that the write path, `context()`, `find()` and upkeep share.

`Engine` holds one open store: its storage backend (`cortex.storage`), the
readers-writer lock, the journal head and the latest write time, the clock, the id
generator, the tokenizer, its caches (`cortex.cache`), the read path's thresholds
(`cortex.tuning`), the scope state and the forms helper. The operations live
in modules above it and take it as their first argument:

    cortex.writes   write, write_many, update, update_head, tombstone, attest
    cortex.reads    resolve, resolve_latest, memories, salience, stats
    cortex.context  context()
    cortex.query    find()
    cortex.upkeep   verify(), rebuild()

and `cortex.facade.Cortex` is the thin public handle over them.

Concurrency: one writer per store (the backend's lock or lease). Inside a process a
readers-writer lock serialises writes and lets reads run together; every read that
needs a consistent view of several keys holds the read side for its whole duration
and runs inside the backend's `view()`. A follower (`mode="r"`) moves its view only
in `refresh()`, under the write side of its own lock.

Length: over the ~600 lines a module keeps to, on purpose: the shared state of an open
store and the one write path every batch passes through (caches observe it, the journal
chains it); the operations themselves live in their own modules.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

from . import index, workers
from .cache import Caches, CurrentHeads, HotFrames, JoinedCalls, NewestEvents, UriMemo, ViewCache
from .errors import (
    ActorMismatch,
    CorruptRecord,
    MemoryTombstoned,
    MissingExtra,
    NotFound,
    ReadOnlyStore,
    StoreClosed,
    StoreError,
    ValidationError,
)
from .forms import DEFAULT_ENCODING, Tokenizer
from .ids import IdGenerator, Ref, encode_id, encode_ids
from .journal import append
from .memory import Memory
from .position import check_timeout, parse_token, wait_for
from .model import check_datetime, check_int, check_text
from .records import (
    HEAD_PREFIX,
    META_ACTOR,
    META_CACHE_EPOCH,
    META_CLOCK_HIGH,
    META_IMPORT,
    META_JOURNAL,
    META_JOURNAL_FORMAT,
    META_SCHEMA,
    META_STORE_ID,
    META_TOKENIZER,
    META_WEIGHTS,
    NEW_JOURNAL_FORMAT,
    SCHEMA_VERSION,
    Head,
    JournalHead,
    decode_cache_epoch,
    decode_journal_format,
    decode_clock_high,
    encode_cache_epoch,
    encode_clock_high,
    head_key,
    salience_key,
)
from .salience import score as salience
from .salience.score import DEFAULT_WEIGHTS, Score, Weights
from .scope import ScopeState
from .index import lexical
from .index.packs import FramePacks
from .storage import Batch, Reads, Storage, ViewMoved, is_dsn
from .tuning import DEFAULT_TUNING, Tuning
from .workers import FormsPool

Clock = Callable[[], datetime]
T = TypeVar("T")

# Catch-ups a follower tries before giving up on a torn view.
VIEW_RETRIES = 5
# What `Engine` reads when it opens a store: keys never changed once the store
# exists, and the writer's state (with the last head key, for new ids). A backend
# may fetch them with its open (`cortex.storage.postgres`: in the lease's statement).
OPEN_CONSTANTS = (META_ACTOR, META_SCHEMA, META_TOKENIZER, META_JOURNAL_FORMAT, META_STORE_ID)
OPEN_STATE = (META_JOURNAL, META_CLOCK_HIGH, META_CACHE_EPOCH, lexical.META_LEXICAL)


def system_clock() -> datetime:
    return datetime.now(timezone.utc)


class TornView(Exception):
    """A follower's view that mixes two committed states (RocksDB secondaries can show
    one for a moment around a writer's flush): the call catches up and tries again."""


@dataclass(frozen=True, slots=True)
class Options:
    """Everything `cortex.open()` takes, validated."""

    location: str
    actor: str
    mode: str = "rw"
    clock: Clock = system_clock
    sync: bool = False
    entropy: Callable[[int], bytes] | None = None
    cache_mb: int = 1024
    ingest_helper: bool = False
    tuning: Tuning = DEFAULT_TUNING

    def __post_init__(self) -> None:
        check_text("actor", self.actor, required=True, max_bytes=256)
        if self.mode not in ("rw", "r"):
            raise ValidationError("mode", 'must be "rw" or "r"', self.mode)
        if not callable(self.clock):
            raise ValidationError("clock", "must be a callable returning an aware datetime", self.clock)
        if not isinstance(self.sync, bool):
            raise ValidationError("sync", "must be a bool", self.sync)
        if self.entropy is not None and not callable(self.entropy):
            raise ValidationError("entropy", "must be a callable like os.urandom", self.entropy)
        check_int("cache_mb", self.cache_mb, lo=1, hi=1 << 20)
        if not isinstance(self.ingest_helper, bool):
            raise ValidationError("ingest_helper", "must be a bool", self.ingest_helper)
        if not isinstance(self.tuning, Tuning):
            raise ValidationError("tuning", "must be a cortex.Tuning", self.tuning)
        check_text("path", self.location, required=True, max_bytes=4096)
        if "\x00" in self.location:
            raise ValidationError("path", "must not contain NUL characters", self.location)


class RWLock:
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


def open_storage(options: Options) -> Storage:
    """The backend for a location: a PostgreSQL DSN or a RocksDB directory."""
    read_only = options.mode == "r"
    if is_dsn(options.location):
        try:
            from .storage.postgres import open_postgres
        except ModuleNotFoundError as exc:
            raise MissingExtra("a PostgreSQL store", exc.name or "psycopg", "postgres") from None
        return open_postgres(options.location, actor=options.actor, read_only=read_only, sync=options.sync,
                             constants=OPEN_CONSTANTS, preload=OPEN_STATE, preload_last=HEAD_PREFIX)
    from .storage.rocksdb import open_rocksdb

    return open_rocksdb(options.location, read_only=read_only, cache_mb=options.cache_mb, sync=options.sync)


def stored_actor(location: str) -> str:
    """The actor a RocksDB store belongs to, read without knowing it (a follower
    open, one read, closed again). A PostgreSQL database holds many actors, so there
    the caller must name one."""
    if is_dsn(location):
        raise ValidationError("actor", "a PostgreSQL database holds many actors: name one", location)
    from .storage.rocksdb import open_rocksdb

    storage = open_rocksdb(location, read_only=True, cache_mb=8, sync=False)
    try:
        raw = storage.get(META_ACTOR)
    finally:
        storage.close()
    if raw is None:
        raise NotFound(f"{location!r} is not a cortex store")
    return raw.decode("utf-8", errors="replace")


class Engine:
    """One open store and the state its operations share (see the module docstring).

    Built by `Engine.open()`, which releases the storage again if anything after
    opening it fails, so a failed open never leaves the store locked.
    """

    def __init__(self, options: Options, storage: Storage) -> None:
        self.options = options
        self.storage = storage
        self.location = options.location
        self.actor = options.actor
        self.mode = options.mode
        self.clock = options.clock
        self.lock = RWLock()
        self.tuning = options.tuning
        self.scopes = ScopeState()  # evaluated scopes, violation counts and their rate limit
        self.closed = False
        # Index entries `context()` has scanned from storage over the handle's life
        # (rows read from a pack count, reads from the hot-frame cache do not).
        self.entries_scanned = 0
        # The handle's caches (`cortex.cache`); those that mirror stored keys are
        # None where reads can see other processes' commits without a refresh.
        self.caches = Caches(storage.live_reads, options.cache_mb, options.tuning)
        # Packed frame prefixes and their bounds (`cortex.index.packs`), same rule.
        self.packs = None if storage.live_reads else FramePacks()
        self._last_weights: tuple[bytes, Weights] | None = None  # stored bytes -> decoded
        # The decoded weights of the current view (`weights()`); None: read them.
        self._weights: Weights | None = None
        self._pool: FormsPool | None = None
        self._check_or_init_meta()
        # The store's id (docs/scopes.md); None on a reader of a store made before ids
        # that no writer has opened since (`cortex.scoped` reads it again then).
        self.store_id: bytes | None = storage.get(META_STORE_ID)
        self.tokenizer = Tokenizer(self._meta_text(META_TOKENIZER) or DEFAULT_ENCODING)
        # A reader whose reads see the latest commit (PostgreSQL) reads the view's
        # state in each view (`view_state()`): nothing more to read now, so opening
        # it costs no round trip once the process knows the store.
        stateless = self.mode == "r" and storage.live_reads
        last_head = None if stateless else storage.last_key(HEAD_PREFIX)
        self.ids = IdGenerator(options.entropy, last_head[len(HEAD_PREFIX):] if last_head else None)
        self.journal = JournalHead.decode(None if stateless else storage.get(META_JOURNAL), self._journal_format())
        self.clock_high = (None if stateless else decode_clock_high(storage.get(META_CLOCK_HIGH))) or 0
        # Moved by every batch that is not only new memories (`write()`); followers
        # keep their caches across a catch-up that leaves it where it was.
        self.cache_epoch = None if stateless else decode_cache_epoch(storage.get(META_CACHE_EPOCH))
        # Followers: False when the last catch-up gave up on a writer that kept
        # flushing, so the view (and what the caches took from it) may be torn.
        self._view_whole = True
        if self.packs is not None:
            self.packs.load(storage)
        # Followers: the latest time any write of the current view was made at. A
        # view holding a memory created later is torn (see cortex.context).
        self.journal_at: int | None = None
        # Readers whose reads see the latest commit: the journal head of the latest
        # view (`position()`); None before the first.
        self.seen: JournalHead | None = None
        self.importing = False  # (followers) the view holds an unfinished import or migration
        if self.mode == "r":
            if not stateless:
                self._load_view()
        elif self.storage.get(lexical.META_LEXICAL) != lexical.SETTINGS.encode():
            self.build_lexical()

    def build_lexical(self) -> None:
        """Build the lexical index from the stored heads (`cortex.index.lexical`), in
        bounded batches: on a writer's open of a store made before the index existed
        or by another analyzer, and after an import. Heads that do not decode are
        left out (`verify()` names them)."""
        def heads() -> Iterator[tuple[bytes, Head]]:
            for key, raw in self.storage.scan_items(HEAD_PREFIX):
                try:
                    yield key[len(HEAD_PREFIX):], Head.decode(key, raw)
                except CorruptRecord:
                    continue
        for batch in lexical.build(self.storage, heads()):
            self.write(batch, keeps_caches=True)  # lexical keys only: no cache mirrors them

    # The caches by name (`cortex.cache`); tests swap them for handles of their own.

    @property
    def views(self) -> ViewCache:
        return self.caches.views

    @property
    def uris(self) -> UriMemo:
        return self.caches.uris

    @property
    def hot(self) -> HotFrames | None:
        return self.caches.hot

    @hot.setter
    def hot(self, cache: HotFrames | None) -> None:
        self.caches.hot = cache

    @property
    def newest(self) -> NewestEvents | None:
        return self.caches.newest

    @newest.setter
    def newest(self, cache: NewestEvents | None) -> None:
        self.caches.newest = cache

    @property
    def joins(self) -> JoinedCalls | None:
        return self.caches.joins

    @joins.setter
    def joins(self, cache: JoinedCalls | None) -> None:
        self.caches.joins = cache

    @property
    def heads(self) -> CurrentHeads | None:
        return self.caches.heads

    @heads.setter
    def heads(self, cache: CurrentHeads | None) -> None:
        self.caches.heads = cache

    @classmethod
    def open(cls, options: Options) -> Engine:
        storage = open_storage(options)
        try:
            return cls(options, storage)
        except BaseException:
            storage.close()
            raise

    def _meta_text(self, key: bytes) -> str | None:
        raw = self.storage.get(key)
        return None if raw is None else raw.decode("utf-8", errors="replace")

    def _check_or_init_meta(self) -> None:
        stored = self._meta_text(META_ACTOR)
        if stored is None:
            if self.mode == "r":
                raise NotFound(f"{self.location!r} is not a cortex store")
            self.storage.write({META_ACTOR: self.actor.encode(), META_TOKENIZER: DEFAULT_ENCODING.encode(),
                                META_SCHEMA: str(SCHEMA_VERSION).encode(), META_CACHE_EPOCH: encode_cache_epoch(0),
                                META_JOURNAL_FORMAT: str(NEW_JOURNAL_FORMAT).encode(),
                                lexical.META_LEXICAL: lexical.SETTINGS.encode(),
                                META_STORE_ID: os.urandom(16)})
        elif stored != self.actor:
            raise ActorMismatch(f"store {self.location!r} belongs to actor {stored!r}, not {self.actor!r}")
        else:
            schema = self._meta_text(META_SCHEMA)
            if schema != str(SCHEMA_VERSION):
                raise StoreError(f"store {self.location!r} has schema version {schema}; this cortex reads version {SCHEMA_VERSION}")
            if (self.mode == "rw" and self.storage.get(META_JOURNAL_FORMAT) is None
                    and JournalHead.decode(self.storage.get(META_JOURNAL)).seq == 0):
                # An empty store made before journal formats: nothing is chained yet,
                # so it takes the newest format.
                self.storage.write({META_JOURNAL_FORMAT: str(NEW_JOURNAL_FORMAT).encode()})
            if self.mode == "rw" and self.storage.get(META_STORE_ID) is None:
                # A store made before stores had ids gets one now, outside the
                # journal: the id names this copy of the store, not its content, so
                # `root()` stays what it was and a store rebuilt from an export gets
                # an id of its own.
                self.storage.write({META_STORE_ID: os.urandom(16)})

    def _journal_format(self) -> int:
        """The store's journal format (`cortex.journal`); `StoreError` for an unknown one."""
        try:
            return decode_journal_format(self.storage.get(META_JOURNAL_FORMAT))
        except CorruptRecord as exc:
            raise StoreError(f"store {self.location!r}: {exc.detail}") from None

    # -- lifecycle ---------------------------------------------------------------

    def close(self) -> None:
        """Close the store. Idempotent."""
        if self.closed:
            return
        with self.lock.write():
            self.closed = True
            self.drop_caches()
            try:
                self.storage.close()
            finally:
                if self._pool is not None:
                    self._pool.close()

    def check_open(self) -> None:
        if self.closed:
            raise StoreClosed("the store is closed")

    def check_writable(self) -> None:
        self.check_open()
        if self.mode != "rw":
            raise ReadOnlyStore('this store was opened with mode="r"; writes need mode="rw"')

    def now(self) -> datetime:
        now = check_datetime("clock()", self.clock())
        if now is None:
            raise ValidationError("clock()", "must return an aware datetime")
        return now

    def forms_pool(self, batch_size: int) -> FormsPool | None:
        """The forms helper for a batch this large (None: work inline), started on first need."""
        if not self.options.ingest_helper or self.mode != "rw" or batch_size < workers.MIN_BATCH:
            return None
        if self._pool is None:
            self._pool = FormsPool(self.tokenizer.name)
        return self._pool

    # -- following the writer (mode "r") -------------------------------------------

    def refresh(self, reopen: bool = False, torn: bool = False) -> None:
        """Catch up with the writer (followers); a no-op for the writer.

        The caches that mirror stored keys (`hot`, `heads`) are kept when the writer
        has only added memories since the last view: its cache epoch is where it
        was, and both views are whole. Otherwise, or when `reopen` asks for a fresh
        view or the current one proved `torn`, they are dropped."""
        self.check_open()
        if self.mode == "r":
            with self.lock.write():
                epoch, was_whole = self.cache_epoch, self._view_whole
                try:
                    whole = self.storage.catch_up(reopen)
                    self._load_view()
                    if self.packs is not None:
                        self.packs.load(self.storage)
                except BaseException:
                    self.drop_caches()
                    raise
                self._view_whole = whole
                self._weights = None  # feedback may have changed them: read them again
                if self.newest is not None:
                    self.newest.drop()  # a new Event may sort anywhere under its prefix
                kept = whole and was_whole and not (reopen or torn) and epoch is not None and epoch == self.cache_epoch
                if not kept:
                    self.drop_caches()
                elif self.hot is not None:
                    self.hot.appended()

    @property
    def index_entries_read(self) -> int:
        """Index entries `context()` has read from storage over the handle's life (the
        benchmark harness reports it per call): the scans, the outcomes tier's reads
        past what `newest` holds, and the new rows a follower's hot-frame cache read
        after a catch-up."""
        return (self.entries_scanned + (0 if self.hot is None else self.hot.entries_read)
                + (0 if self.newest is None else self.newest.entries_read))

    def drop_caches(self) -> None:
        """Forget what mirrors the stored keys (the view is moving or closing)."""
        self._weights = None
        self.caches.drop()

    def catch_up_if_changed(self) -> None:
        if self.mode == "r" and self.storage.writer_moved():
            self.refresh()

    def _load_view(self) -> None:
        """Read the journal head of a (new) follower view, its cache epoch and the
        latest write time (None, and no torn-view check on it, for a store written
        before it was kept). Where reads see the latest commit, `view_state()` reads
        the head in each view instead, and nothing is kept."""
        if self.storage.live_reads:
            return
        self.journal = JournalHead.decode(self.storage.get(META_JOURNAL), self._journal_format())
        self.importing = self.storage.get(META_IMPORT) is not None
        self.cache_epoch = decode_cache_epoch(self.storage.get(META_CACHE_EPOCH))
        high = decode_clock_high(self.storage.get(META_CLOCK_HIGH))
        self.journal_at = high if high is not None else (0 if not self.journal.seq else None)

    def view_state(self) -> tuple[JournalHead, int | None]:
        """The journal head of the current view and, for a follower, the latest write
        time it holds (the torn-view check's bound; None for the writer). Call inside
        `read()`."""
        if self.mode == "r" and self.storage.live_reads:
            raw_head, marker = self.storage.multi_get([META_JOURNAL, META_IMPORT])
            if marker is not None:
                raise self._importing()
            head = JournalHead.decode(raw_head, self.journal.format)
            self.seen = head
            return head, None
        if self.mode == "r" and self.importing:
            raise self._importing()
        return self.journal, self.journal_at

    def _importing(self) -> StoreError:
        """What a reader says while an import or migration writes the store: its
        keys arrive in many batches, so a read could see a store in part."""
        return StoreError(f"store {self.location!r}: an import or migration into it is in progress; "
                          "read it once that has finished (verify() names an import that was interrupted)")

    # -- commit positions (`cortex.position`) -------------------------------------

    def position(self) -> JournalHead:
        """The journal head this handle last knew: a writer's latest write; a reader's
        latest view (`view_state()`) or catch-up."""
        if self.mode == "r" and self.storage.live_reads and self.seen is not None:
            return self.seen
        return self.journal

    def wait_for(self, until: object, timeout: object) -> None:
        """Return once this handle's store holds the write the token `until` names:
        a reader looks again (PostgreSQL: reads the journal head, one statement; a
        RocksDB follower: catches up) until it does; `NotReplayed` after `timeout`
        seconds."""
        token = parse_token(until)
        seconds = check_timeout(timeout)
        self.check_open()

        def look() -> JournalHead:
            if self.mode == "r" and self.storage.live_reads:
                self.check_open()
                self.seen = JournalHead.decode(self.storage.get(META_JOURNAL), self.journal.format)
                return self.seen
            if self.mode == "r":
                self.refresh()
            return self.journal
        wait_for(token, seconds, look, self.storage.lag)

    def read(self, fn: Callable[[], T], catch_up: bool = False, reads: Reads | None = None) -> T:
        """Run `fn` on one consistent view: under the read lock, inside the backend's
        view; a follower whose view proves torn catches up and runs it again.
        `catch_up` first brings a follower up to the writer when its files changed
        (`context()` does; other reads see the view of the last catch-up). `reads`:
        what `fn` is about to read, for a backend to fetch at once (`Storage.prefetch`);
        a view that then finds the store moved under what it fetched (`ViewMoved`)
        runs `fn` again."""
        for attempt in range(VIEW_RETRIES + 1):
            if catch_up:
                self.catch_up_if_changed()
            try:
                with self.lock.read():
                    self.check_open()
                    if self.mode == "r" and self.importing:  # (where reads see the latest commit: `view_state`)
                        raise self._importing()
                    with self.storage.view():
                        if reads is not None:
                            self.storage.prefetch(reads)
                        return fn()
            except ViewMoved:
                if attempt == VIEW_RETRIES:
                    raise StoreError(f"the store kept moving under the view over {attempt + 1} tries") from None
            except TornView as torn:
                if attempt == VIEW_RETRIES:
                    raise StoreError(f"the reader's view of the store stayed inconsistent over {attempt + 1} catch-ups: {torn}") from None
                time.sleep(0.001 * (attempt + 1))
                self.refresh(reopen=attempt > 0, torn=True)
        raise AssertionError("unreachable")

    # -- reading records -------------------------------------------------------------

    def current_views(self, keys: list[bytes]) -> list[Memory | None]:
        """The views of the heads stored under `keys` (None where there is none):
        from `heads` where it has them, one multi-get for the rest. Call inside `read()`."""
        if self.heads is None:
            return [None if raw is None else self.views.view(key, raw) for key, raw in zip(keys, self.storage.multi_get(keys))]
        found = self.heads.get_many(keys)
        missing = [key for key, memory in zip(keys, found) if memory is None]
        if missing:
            texts = encode_ids([key[len(HEAD_PREFIX):] for key in missing])
            read = {key: (raw, text) for key, raw, text in zip(missing, self.storage.multi_get(missing), texts) if raw is not None}
            for i, key in enumerate(keys):
                if found[i] is None and key in read:
                    raw, text = read[key]
                    found[i] = memory = self.views.view(key, raw, text)
                    self.heads.put(key, memory)
        return found

    def head_for(self, ref: Ref) -> tuple[bytes, Head]:
        """The head a call named (`cortex.ids.parse_ref`): the id must exist, with the
        URI's type and version if it gave them."""
        key = head_key(ref.id)
        raw = self.storage.get(key)
        if raw is None:
            raise NotFound(f"no memory {encode_id(ref.id)}")
        head = Head.decode(key, raw)
        if (ref.type is not None and head.type != ref.type) or (ref.version is not None and ref.version > head.version):
            raise NotFound(f"no memory {ref}")
        return ref.id, head

    def live_head(self, ref: Ref) -> tuple[bytes, Head]:
        raw_id, head = self.head_for(ref)
        if head.tombstone is not None:
            raise MemoryTombstoned(f"memory {encode_id(raw_id)} is tombstoned and cannot change")
        return raw_id, head

    def score_record(self, raw_id: bytes) -> Score:
        key = salience_key(raw_id)
        raw = self.storage.get(key)
        if raw is None:
            raise CorruptRecord(key, "missing salience record")
        return Score.decode(raw, key)

    def weights(self) -> Weights:
        """The learned weights of the current view, as `context()` and feedback use
        them. Every call needs them and only feedback changes them, so a handle keeps
        them until a batch it writes holds them (`write()`) or its view moves
        (`refresh()`): reading them cost a warm call 10 µs, and 40-50 µs after other
        work had taken the CPU's caches. Where reads see other processes' commits
        (PostgreSQL) they are read each time. Call inside `read()` or under the write
        lock."""
        if self._weights is not None:
            return self._weights
        weights = self.stored_weights()
        if not self.storage.live_reads:
            self._weights = weights
        return weights

    @property
    def kept_weights(self) -> Weights | None:
        """The weights this handle keeps (None: none yet); `verify()` compares them."""
        return self._weights

    def stored_weights(self) -> Weights:
        """The weights stored in the current view, decoded again only when their bytes
        changed. Call inside `read()`."""
        raw = self.storage.get(META_WEIGHTS)
        if raw is None:
            return DEFAULT_WEIGHTS
        last = self._last_weights
        if last is not None and last[0] == raw:
            return last[1]
        weights = Weights.decode(raw)
        self._last_weights = (raw, weights)
        return weights

    # -- committing (write lock held) ------------------------------------------------

    def commit(self, kind: str, now: int, payload: dict[str, Any], heads: dict[bytes, tuple[Head, Head]],
               extra: dict[bytes, bytes] | None = None) -> None:
        """Write one journal entry's change: the new heads, their salience records
        and index diffs, learned weights, and the journal head, in one batch."""
        old_scores = {raw_id: self.score_record(raw_id) for raw_id in heads}
        weights, scores = salience.step(self.weights(), dict(old_scores), kind, now, payload)
        puts: dict[bytes, bytes | None] = {}
        words = lexical.Changes()
        for raw_id, (old, head) in heads.items():
            words.change(puts, raw_id, old, head)
            # Edge flags come from the edges and the other end's state, never from
            # a change to the memory itself (`extra` carries the others' changes).
            edge_flags = index.edge.flags_of(self.storage, raw_id)
            before = index.entries(raw_id, old, old_scores[raw_id], edge_flags)
            after = index.entries(raw_id, head, scores[raw_id], edge_flags)
            puts.update({key: None for key in before.keys() - after.keys()})
            puts.update({key: value for key, value in after.items() if before.get(key) != value})
            if head is not old:
                puts[head_key(raw_id)] = head.encode()
            puts[salience_key(raw_id)] = scores[raw_id].encode()
        words.finish(self.storage, puts)
        if kind == "attest":
            puts[META_WEIGHTS] = weights.encode()
        if extra:
            puts.update(extra)
        self.apply(puts, append(puts, self.journal, kind, now, payload), now)

    def apply(self, puts: dict[bytes, bytes | None], journal: JournalHead, now: int, keeps_caches: bool = False) -> None:
        """Stamp a batch whose journal entries are already in it with the latest write
        time, write it atomically (`keeps_caches` as in `write()`), and move the
        in-memory journal head."""
        high = max(self.clock_high, now)
        puts[META_CLOCK_HIGH] = encode_clock_high(high)
        self.write(puts, keeps_caches)
        self.journal, self.clock_high = journal, high

    def write(self, puts: Batch, keeps_caches: bool = False) -> None:
        """Write a batch atomically: the only way a batch reaches storage, so the
        caches that mirror stored keys see every change (`cortex.cache`; all are
        dropped if the write fails) and packed frames get their dirty markers
        (`cortex.index.packs`).

        `keeps_caches`: the caller vouches that every key a cache mirrors (heads,
        frame and pinned entries) keeps its value or is new, under an id after
        every stored one: the batch adds memories (`IdGenerator` makes their ids
        so) or changes packs alone (a follower reloads them at each catch-up).
        Every other batch moves the cache epoch, and a follower that sees it move
        drops its caches (`refresh()`). A batch that sets the epoch itself keeps
        that value (`migrate()` copies the source's in its last batch)."""
        epoch = self.cache_epoch
        if META_CACHE_EPOCH in puts:
            epoch = decode_cache_epoch(puts[META_CACHE_EPOCH])
        elif not keeps_caches or epoch is None:  # (a store made before the epoch gets one)
            epoch = 0 if epoch is None else epoch + 1
            puts = {**puts, META_CACHE_EPOCH: encode_cache_epoch(epoch)}
        if self.packs is not None:
            puts = self.packs.mark(puts)
        try:
            self.storage.write(puts)
        except BaseException:
            self.caches.drop()  # the batch may or may not be stored
            raise
        finally:
            if META_WEIGHTS in puts:
                self._weights = None
        self.cache_epoch = epoch
        self.caches.observe(puts)
        if self.packs is not None:
            self.packs.observe(puts)
