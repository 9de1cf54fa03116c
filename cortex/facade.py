"""The public facade: `cortex.open()` and the `Cortex` handle.

`Cortex` holds an `Engine` (`cortex.engine`) and forwards each public call to the
module that implements it; it adds nothing but the signatures and their docs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Never

from . import context as _context
from . import edges as _edges
from . import erasure as _erasure
from . import learn as _learn
from . import query as _query
from . import recall as _recall
from . import reads as _reads
from . import upkeep as _upkeep
from . import writes as _writes
from .context import Bundle, ContextOpts, Form, TierName
from .interop import jsonl as _jsonl
from .interop import migrate as _migrate
from .interop import recall_pack as _recall_pack
from .interop.migrate import Migration
from .engine import Engine, Options, stored_actor, system_clock
from .storage import is_dsn
from .errors import MissingExtra, NotFound, ValidationError
from .learn import LearnParams, LearnReport
from .position import token_of
from .memory import Memory
from .model import Edge
from .model import EdgeType, Frame, MemoryData, Tier, Verb
from .provenance import Origin
from .salience.score import Score, Weights
from .scope import Scope, SignedScope
from .tuning import Tuning
from .view import BundleView, DataType, Order, Where, register
from .writes import Write

__all__ = ["open", "migrate", "Cortex", "store_actor", "Where", "Order"]

class _AsInOpts:
    """The default of each `context()` keyword: the value `opts` has (or, without
    `opts`, `ContextOpts`'s default). A keyword given explicitly wins."""

    def __repr__(self) -> str:
        return "<as in opts>"


_AS_IN_OPTS: Any = _AsInOpts()


class _InteropExports:
    """The bundle formats of `cortex.interop`, imported when a bundle first exports
    (`cortex.view`: how `Bundle`'s export methods reach them)."""

    def hmx_pack(self, bundle: BundleView, query_context: str | Mapping[str, Any] | None, edges: Iterable[Edge],
                 sections: Sequence[str] | None = None) -> dict[str, Any]:
        from .interop import hmx_pack

        return hmx_pack.build(bundle, query_context, edges=edges, sections=sections)

    def context_pack(self, bundle: BundleView, intent: str) -> dict[str, Any]:
        from .interop import context_pack

        return context_pack.build(bundle, intent)

    def ledger(self, bundle: BundleView) -> dict[str, Any]:
        from .interop import ledger

        return ledger.build(bundle)


register(_InteropExports())


def store_actor(path: str | os.PathLike[str]) -> str:
    """The actor the store at `path` (a directory) belongs to, for tools that open
    stores they did not create (`NotFound` if there is none)."""
    if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str):
        raise ValidationError("path", "must be a str or a path-like object naming a directory", path)
    return stored_actor(os.fspath(path))


def open(
    path: str | os.PathLike[str],
    *,
    actor: str | None = None,
    mode: str = "rw",
    clock: Callable[[], datetime] | None = None,
    sync: bool = False,
    entropy: Callable[[int], bytes] | None = None,
    cache_mb: int = 1024,
    ingest_helper: bool = False,
    tuning: Tuning | None = None,
) -> Cortex:
    """Open (mode "rw", creating it if missing) or follow (mode "r") the store at `path`.

    `path` is a directory (RocksDB, the embedded default) or a PostgreSQL connection
    string `postgresql://user@host:port/db` (many actors share one database).
    `actor` names the agent that owns the store; opening a store under another actor
    raises `ActorMismatch`. Left out, it is read from the store at `path` (as
    `store_actor()`): creating a store, or opening a PostgreSQL database (which holds
    many actors), needs it named (`ValidationError` otherwise). `clock` returns an aware UTC datetime (default: the
    system clock). `sync=True` fsyncs every write (survives power loss; the default
    survives a killed process). `entropy` (a callable like `os.urandom`) supplies the
    random bits of new ids, for reproducible stores. `cache_mb` sizes RocksDB's
    block cache and the handle's cache of decoded memories (32 per MB, ~2.6 KB
    each: `cortex.cache.CurrentHeads`). `ingest_helper=True` starts a helper
    process that renders and counts the forms of `write_many` batches of 256
    memories or more (see `cortex.workers`; about 1.2x bulk ingest on two cores).
    `tuning`: the read path's thresholds (`cortex.Tuning`; they choose between
    ways that give the same answers, so the defaults serve every store).

    A second writer raises `StoreLocked`. `mode="r"` runs beside a writer (in this or
    another process) and sees new writes after `refresh()` or at the next read.
    A writer creates the store in a folder that does not exist or is empty, and
    refuses (`NotAStore`) a non-empty folder that holds no store.
    """
    if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str):
        raise ValidationError("path", "must be a str or a path-like object naming a directory", path)
    if actor is None:
        actor = _existing_actor(os.fspath(path), mode)
    options = Options(
        location=os.fspath(path), actor=actor, mode=mode, clock=system_clock if clock is None else clock, sync=sync,
        entropy=entropy, cache_mb=cache_mb, ingest_helper=ingest_helper, tuning=Tuning() if tuning is None else tuning,
    )
    return Cortex(Engine.open(options))


def list_actors(dsn: str) -> list[str]:
    """The actors whose stores the PostgreSQL database at `dsn` holds, A to Z (a
    RocksDB folder holds one store: `store_actor()` names its actor)."""
    if not isinstance(dsn, str) or not is_dsn(dsn):
        raise ValidationError("dsn", "must be a PostgreSQL connection string (postgresql://user@host:port/db)", dsn)
    try:
        from .storage.postgres import list_actors as listed
    except ModuleNotFoundError as exc:
        raise MissingExtra("a PostgreSQL store", exc.name or "psycopg", "postgres") from None
    return listed(dsn)


def _existing_actor(location: str, mode: str) -> str:
    """`open()` without an actor: the one the store at `location` belongs to (a
    reader of a missing store gets the `NotFound` it would get with an actor)."""
    if is_dsn(location):
        raise ValidationError("actor", "is required for a PostgreSQL store: a database holds many actors, name one", None)
    try:
        return stored_actor(location)
    except NotFound:
        if mode == "r":
            raise
        raise ValidationError("actor", f"is required to create a store: {location} holds no store to read it from", None) from None


def migrate(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    actor: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Migration:
    """Copy the store at `src` into the empty store at `dst`, between backends in
    either direction (a RocksDB directory, a PostgreSQL DSN), and check the copy.

    Streams in bounded batches from one consistent view of `src` (which may stay open
    for writing meanwhile); refuses a `dst` that holds anything; ends with `dst`
    opened afresh, holding `src`'s `root()` and verifying clean (`StoreError`
    otherwise). `actor` is needed when `src` is a PostgreSQL DSN (a database holds
    many actors). `progress(n)` is called after each batch with the keys it wrote.
    An interrupted migration is named by `dst.verify()` and completed by running it
    again. See `cortex.interop.migrate`.
    """
    return _migrate.migrate(src, dst, actor=actor, progress=progress)


class Cortex:
    """An open store. Use `cortex.open()`; close with `close()` or a `with` block."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @property
    def path(self) -> str:
        """The directory or connection string the store was opened at."""
        return self._engine.location

    @property
    def actor(self) -> str:
        return self._engine.actor

    @property
    def mode(self) -> str:
        return self._engine.mode

    # -- lifecycle -------------------------------------------------------------

    def close(self) -> None:
        """Close the store. Idempotent; later calls raise `StoreClosed`."""
        self._engine.close()

    def __enter__(self) -> Cortex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def refresh(self, reopen: bool = False, *, until: str | None = None, timeout: float = 10.0) -> None:
        """Catch up with the writer (mode "r"); a no-op in mode "rw". `reopen=True`
        asks for a fresh view from scratch (RocksDB: a new secondary instance) and
        drops the handle's caches, which a catch-up over new memories alone keeps.

        `until`: a token from `last_token` (of any handle on this store: the writer in
        another process, say). Returns as soon as what this handle reads holds that
        write (a PostgreSQL standby has replayed it, a RocksDB follower sees it),
        looking again every few milliseconds, and raises `NotReplayed` when `timeout`
        seconds pass first: read-your-writes across a fleet. See `cortex.position`."""
        if until is not None:
            self._engine.wait_for(until, timeout)
            return
        self._engine.refresh(reopen)

    @property
    def last_token(self) -> str:
        """The commit position this handle knows, as a token for `refresh(until=...)`:
        a writer's latest acknowledged write (taken right after a write returns, it
        names that write or a later one); a reader's latest `context()`, `root()` or
        `refresh()`. A short string, `"<journal entry>.<root digits>"`."""
        self._engine.check_open()
        return token_of(self._engine.position())

    def replica_lag(self) -> float | None:
        """Seconds that what this handle reads is behind, as the server reports it: on
        a PostgreSQL hot standby, how old its last replayed commit is while it has
        received more than it replayed (0.0 once it has replayed everything, and on a
        primary); None where the backend cannot tell (RocksDB, CockroachDB)."""
        self._engine.check_open()
        return self._engine.storage.lag()

    # -- writes ----------------------------------------------------------------

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
        supersedes: Iterable[str] = (),
        key: str | None = None,
        occurred_at: datetime | None = None,
        session: str | None = None,
        sequence: int | None = None,
        origin: Origin | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> str:
        """Write a new memory; return the URI of its version 1. `supersedes`: URIs of
        memories it replaces, linked in the same batch (`link(new, "supersedes", old)`).
        `occurred_at`, `session`, `sequence`, `origin`, `attributes`: its provenance,
        each optional (`cortex.provenance`).

        `key`: a natural key, unique per memory type (at most 256 UTF-8 bytes). When
        a live memory of this type already has it, the write is an upsert of that
        memory: a new version if the data differs, new frames, tags or importance
        if those do, nothing if all are equal; the URI returned is then its current
        version's. `resolve("key:<Type>/<key>")` finds it."""
        item = Write(data, frames, tags, importance, confidence, source, expires_at, forms, supersedes,
                     key=key, occurred_at=occurred_at, session=session, sequence=sequence, origin=origin, attributes=attributes)
        return _writes.write_many(self._engine, [item])[0]

    def write_many(self, items: Iterable[Write]) -> list[str]:
        """Write many memories in one atomic batch; URIs in item order. The clock is
        read once: every item gets the same `created_at`, and ids ascend in item order."""
        return _writes.write_many(self._engine, items)

    def update(self, uri: str, data: MemoryData) -> str:
        """Write a new version of a memory (same id, same type); return its URI."""
        return _writes.update(self._engine, uri, data)

    def update_head(self, uri: str, *, tags: Iterable[str] | None = None, frames: Iterable[Frame] | None = None,
                    importance: int | None = None) -> None:
        """Change a memory's tags, frames or importance without a new version."""
        _writes.update_head(self._engine, uri, tags=tags, frames=frames, importance=importance)

    def tombstone(self, uri: str, reason: str) -> None:
        """Soft-delete a memory: it leaves every tier but stays resolvable. Idempotent."""
        _writes.tombstone(self._engine, uri, reason)

    def erase(self, uri: str, reason: str) -> None:
        """Remove the content of every version of a memory from the store for good
        (data, forms, provenance, index entries), journal who erased it, when, why and
        the hashes of what was erased, and purge the storage so the bytes leave its
        files. `root()` and `verify()` still hold; the memory no longer resolves.
        See docs/trust.md."""
        _erasure.erase(self._engine, uri, reason)

    def attest(self, cited: Iterable[str], outcome: str, reason: str | None = None) -> None:
        """Feedback on memories an agent relied on (docs/context.md).

        `outcome` "success" adds a citation and an access to each cited memory;
        "failure" with reason "factual_error" or "wrong_assumption" takes a citation
        away (never below 0). Either way the store's weights learn from the cited
        memories' profile. Unknown or tombstoned memories raise and write nothing.
        """
        _writes.attest(self._engine, cited, outcome, reason)

    # -- reads -----------------------------------------------------------------

    def context(
        self,
        opts: ContextOpts | None = None,
        *,
        verb: Verb | str | None = _AS_IN_OPTS,
        objects: Mapping[str, str] = _AS_IN_OPTS,
        budget_tokens: int = _AS_IN_OPTS,
        include_tiers: Collection[Tier | TierName] | None = _AS_IN_OPTS,
        outcome_limit: int = _AS_IN_OPTS,
        form: Form = _AS_IN_OPTS,
        scope: SignedScope | None = _AS_IN_OPTS,
        now: datetime | None = _AS_IN_OPTS,
        include_superseded: bool = _AS_IN_OPTS,
        **unknown: Never,
    ) -> Bundle:
        """Compose the Bundle for a task: see `cortex.context` and `ContextOpts` (what
        each option means and its default). `opts` gives the options as one value;
        each keyword given explicitly replaces its field. A keyword that is not an
        option is a type error, and raises `ValidationError` naming it."""
        given = {
            "verb": verb, "objects": objects, "budget_tokens": budget_tokens, "include_tiers": include_tiers,
            "outcome_limit": outcome_limit, "form": form, "scope": scope, "now": now,
            "include_superseded": include_superseded,
        }
        overrides: dict[str, Any] = {name: value for name, value in given.items() if value is not _AS_IN_OPTS}
        overrides.update(unknown)
        return _context.compose(self._engine, opts, overrides)

    def find(self, type: DataType | Sequence[DataType] | None = None, tags: Iterable[str] = (), where: Where | None = None,
             order_by: Order = "salience", limit: int | None = None, budget_tokens: int | None = None,
             form: Form | None = None, include_tombstoned: bool = False, scope: SignedScope | None = None,
             late_binding: bool = False, include_superseded: bool = False, session: str | None = None,
             near: str | None = None) -> list[Memory]:
        """A bounded query over one type, a set of tags or a trace session: see `cortex.query`. With
        `near="text"`, recall by content: ranked by relevance, no type or tag needed,
        and the result is a `cortex.Recalled` list (see `cortex.recall`)."""
        if near is not None:
            if session is not None:
                raise ValidationError("session", "find(near=...) does not take a session; filter with type, tags or where", session)
            if order_by != "salience":
                raise ValidationError("order_by", "find(near=...) ranks by relevance; leave order_by out", order_by)
            return _recall.find_near(self._engine, near=near, type=type, tags=tags, where=where, limit=limit,
                                     budget_tokens=budget_tokens, form=form, include_tombstoned=include_tombstoned,
                                     scope=scope, late_binding=late_binding, include_superseded=include_superseded)
        return _query.find(self._engine, type=type, tags=tags, where=where, order_by=order_by, limit=limit,
                           budget_tokens=budget_tokens, form=form, include_tombstoned=include_tombstoned,
                           scope=scope, late_binding=late_binding, include_superseded=include_superseded,
                           session=session)

    def synthesize(self, query: str, max_tokens: int, sections: Sequence[str] | None = None,
                   now: datetime | None = None) -> dict[str, Any]:
        """An HMX-1.0 Context Pack for a query text: the pinned tier and the memories
        recalled by content (`find(near=query, budget_tokens=max_tokens)`), within
        `max_tokens` by seed 000's section rules; `sections` keeps only those sections.
        See `cortex.interop.recall_pack` and docs/recall.md."""
        max_tokens = _recall_pack.check_max_tokens(max_tokens)
        hits = _recall.find_near(self._engine, near=query, type=None, tags=(), where=None, limit=None,
                                 budget_tokens=max_tokens, form="medium", include_tombstoned=False, scope=None,
                                 late_binding=False, include_superseded=False)
        pinned = self.context(verb=None, include_tiers=["pinned"], form="medium", now=now,
                              budget_tokens=min(max_tokens, _recall_pack.MAX_CONTEXT_BUDGET))
        return _recall_pack.synthesize(self, pinned, hits, hits.relevance, query, max_tokens, sections)

    def resolve(self, uri: str, scope: SignedScope | None = None) -> Memory:
        """The memory a call names: a version's URI (old versions and tombstoned
        memories too), or the latest version for its 26-character id or its URI
        without `#version` (every call that names a memory reads it so). With `scope`,
        a memory outside it raises `NotFound` as a missing one does, at the same cost."""
        return _reads.resolve(self._engine, uri, scope)

    def resolve_latest(self, id: str) -> Memory:
        """The current version of a memory (its id, or a URI of any version)."""
        return _reads.resolve_latest(self._engine, id)

    def memories(self, include_tombstoned: bool = False, scope: SignedScope | None = None) -> Iterator[Memory]:
        """Every memory's current version, in id (= creation) order; with `scope`,
        those in it."""
        return _reads.memories(self._engine, include_tombstoned, scope)

    def salience(self, id: str, scope: SignedScope | None = None) -> Score:
        """The salience record of a memory, by id or URI. With `scope`, a memory
        outside it raises `NotFound` as a missing one does."""
        return _reads.salience(self._engine, id, scope)

    def weights(self) -> Weights:
        """The store's salience weights (the defaults until feedback moves them)."""
        self._engine.check_open()
        return self._engine.read(self._engine.stored_weights)

    def root(self) -> str:
        """The OverallRoot: hex of the journal's hash chain (64 zeros when empty)."""
        self._engine.check_open()
        return self._engine.read(lambda: self._engine.view_state()[0].root.hex())

    def stats(self, scope: SignedScope | None = None) -> dict[str, Any]:
        """Counts by type, live and tombstoned, journal length and root. With `scope`,
        the counts of the memories in it, without journal length and root."""
        return _reads.stats(self._engine, scope)

    # -- edges (docs/edges.md) -------------------------------------------------------

    def link(self, src: str, edge_type: EdgeType | str, dst: str, weight: float = 1.0) -> Edge:
        """Link memory `src` to `dst` with a typed edge (`EdgeType` or its name, e.g.
        "supersedes"); weight in [0, 1]. Idempotent; both ends must exist; no
        self-edges and no supersedes cycles. Journaled. See `cortex.edges`."""
        return _edges.link(self._engine, src, edge_type, dst, weight)

    def unlink(self, src: str, edge_type: EdgeType | str, dst: str, reason: str) -> None:
        """Tombstone an edge (kept in history; linking it again revives it). Journaled."""
        _edges.unlink(self._engine, src, edge_type, dst, reason)

    def edges(self, uri: str, direction: str = "out", types: Iterable[EdgeType | str] | None = None,
              include_tombstoned: bool = False, scope: SignedScope | None = None) -> list[Edge]:
        """A memory's edges: direction "out", "in" or "both"; `types` None for all.
        Ordered by (type, src id, dst id). With `scope`, the memory must be in it
        (`NotFound` as for a missing one) and only edges to memories in it are listed."""
        return _edges.edges(self._engine, uri, direction, types, include_tombstoned, scope)

    # -- interop (docs/interop.md) ---------------------------------------------------------

    def ingest_hmx(self, events: Iterable[Mapping[str, Any]] | str | os.PathLike[str]) -> list[str]:
        """Ingest HMX-1.0 events (dicts, or a JSON Lines file) as memories; idempotent
        by `event_id`. See `cortex.interop.hmx_events` for the mapping."""
        from .interop import hmx_events

        return hmx_events.ingest(self, events)

    def export_fingerprint(self, tier: str = "full", *, sign_with: Any = None) -> dict[str, Any]:
        """This store as an HMX-1.0 fingerprint envelope ("full", "compact" or "minimal");
        `sign_with`: an Ed25519 private key that signs it (docs/trust.md)."""
        from .interop import fingerprint

        return fingerprint.export(self, tier, sign_with=sign_with)

    def import_fingerprint(self, envelope: Mapping[str, Any] | str | bytes) -> int:
        """Import a fingerprint envelope (additive; its hashes are checked first; the
        same fingerprint twice is a no-op); return the memories written. Unless a key
        this store trusts signed it, it writes no pinned or hard memory and is capped
        in count and size (docs/trust.md)."""
        from .interop import fingerprint

        return fingerprint.import_(self, envelope)

    # -- moving a whole store ------------------------------------------------------

    def export_jsonl(self, path: str | os.PathLike[str], *, sign_with: Any = None) -> dict[str, int]:
        """Write the whole store to `path` as JSON Lines (format in `cortex.interop.jsonl`);
        return the line counts per kind. `sign_with`: an Ed25519 private key that signs
        the file (docs/trust.md)."""
        return _jsonl.export_jsonl(self._engine, path, sign_with=sign_with)

    def import_jsonl(self, path: str | os.PathLike[str], *, trust_records: bool = False,
                     signed_by: Any = None) -> dict[str, int]:
        """Import an `export_jsonl()` file into this store (empty, same actor). The
        whole file is read once and checked before anything is written (content
        against the root included); an interrupted import is completed by running it
        again. `trust_records=True` also imports the export's trusted keys and
        revocations (refused otherwise); `signed_by`: one Ed25519 public key or
        several, one of which must have signed the file."""
        return _jsonl.import_jsonl(self._engine, path, trust_records=trust_records, signed_by=signed_by)

    # -- scopes (docs/scopes.md) -------------------------------------------------------

    def trust(self, public_key: Any, name: str) -> None:
        """Trust an Ed25519 public key (an `Ed25519PublicKey` or its raw 32 bytes) to
        sign scopes for this store, under `name`. Journaled."""
        _writes.trust(self._engine, public_key, name)

    def untrust(self, name: str) -> None:
        """Stop trusting the key named `name`: scopes it signed are refused from now on. Journaled."""
        _writes.untrust(self._engine, name)

    def grant(self, scope: Scope, private_key: Any) -> SignedScope:
        """Sign `scope` with an Ed25519 private key whose public key this store trusts."""
        return _reads.grant(self._engine, scope, private_key)

    def revoke(self, scope_id: str | SignedScope) -> None:
        """Revoke a scope (its `scope_id` or the SignedScope): refused from now on, by
        this handle and by `mode="r"` readers once they catch up. Journaled; idempotent."""
        _writes.revoke(self._engine, scope_id)

    def scope_violations(self) -> dict[str, int]:
        """Scope violations this handle counted since it was opened, by scope id
        (those the rate limit kept out of the journal or the log included)."""
        return self._engine.scopes.violation_counts()

    # -- learning (docs/learning.md) -------------------------------------------------

    def learn(self, *, full: bool = False, params: LearnParams | None = None) -> LearnReport:
        """Compile the store's event traces into HMX-A artifacts (Pattern memories):
        incrementally from the watermark, or every event again with `full=True`.
        Deterministic, zero model calls. See `cortex.learn` and docs/learning.md."""
        return _learn.learn(self._engine, full=full, params=_learn.DEFAULT if params is None else params)

    def artifacts(self, type: str | None = None, status: str | None = None) -> list[Memory]:
        """The learned artifact memories (of one artifact type, in one status), by artifact id."""
        self._engine.check_open()
        return self._engine.read(lambda: _learn.artifacts(self._engine, type, status))

    def trusted_keys(self) -> dict[str, bytes]:
        """The keys this store trusts (`trust()`), by name: raw Ed25519 public keys."""
        return _reads.trusted(self._engine)

    def learn_params(self) -> dict[str, Any] | None:
        """The thresholds of the store's last `learn()` (None before the first)."""
        self._engine.check_open()
        params = self._engine.read(lambda: _learn.params_of(self._engine))
        return None if params is None else params.to_dict()

    def artifact_forms(self, type: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
        """The learned artifacts as HMX-A JSON forms (`cortex.learn.artifacts.schema()`)."""
        return [_learn.hmx_form(m) for m in self.artifacts(type, status)]

    # -- upkeep ----------------------------------------------------------------

    def verify(self) -> list[str]:
        """Check the whole store; one line per problem (empty when sound). See `cortex.upkeep`."""
        return _upkeep.verify(self._engine)

    def rebuild(self) -> list[str]:
        """Recreate every derived key; return the canonical damage left. See `cortex.upkeep`."""
        return _upkeep.rebuild(self._engine)

    def optimize(self) -> dict[str, int]:
        """Pack the frame entries of hot objects so a handle's first `context()` on one
        reads a few large values instead of one per memory, then compact the store's
        newest files so every scan seeks fewer of them (like SQLite's `PRAGMA
        optimize`, run it after a bulk load or now and then; answers never change).
        Returns `{"packed": frame prefixes packed, "rows": entries they hold}`. See
        `cortex.upkeep.optimize`."""
        return _upkeep.optimize(self._engine)
