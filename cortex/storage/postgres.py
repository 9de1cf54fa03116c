"""The PostgreSQL backend: many actors' stores in one database, for fleets of agents.

Keys and values are the bytes `cortex.records` defines, exactly as on RocksDB; this
module only decides where they live and how a writer owns them. It needs psycopg 3 and
psycopg_pool (`pip install 'cortex-memory-engine[postgres]'`).

Connections: every handle of a process on one DSN shares one pool (`cortex.storage.pgpool`),
so opening a handle connects nothing once the process has connected; a reader of an
actor the process knows sends nothing at open, a writer one statement (the lease's,
which also reads what the engine reads at open). See docs/postgresql.md.

Tables (created by the first writer to open the database; a reader never creates them):

    cortex_kv     (actor text, key bytea, value bytea, PRIMARY KEY (actor, key))
    cortex_lease  (actor text PRIMARY KEY, holder text, expires_at timestamptz, token bigint)
    cortex_schema (name text PRIMARY KEY, version bigint)       -- one row: ('kv', 1)

Why this layout: the primary key `(actor, key)` is the only index. It keeps each
actor's keys together and in byte order (bytea compares as raw bytes, no collation),
so every scan of the engine is one range query on it: `actor = A AND key >= prefix
AND key < prefix_end(prefix) ORDER BY key`. A point read is one lookup in it. Citus can
distribute the table by `actor`; YugabyteDB hashes the first key column by default
(`actor HASH, key ASC`), which is the same split; CockroachDB keeps it range-ordered.

Behaviour:

* A batch (`write`) is one transaction whose first statement checks, and extends, the
  writer's lease: a conditional UPDATE that must hit the lease row with our holder and
  fencing token. A writer whose lease was taken over gets `StoreLocked` ("lease lost")
  and nothing of the batch is committed. The row lock that UPDATE takes also orders
  every write of an actor behind any other still in flight.
* One writer per actor: `open_postgres` takes the lease (a new row, or an expired one,
  whose token then goes up by one) or raises `StoreLocked` naming the holder. The
  statement that takes it also reads the keys the engine reads at open: they cannot
  change until this writer writes, since nobody else may while it holds the lease. A daemon
  thread renews it while the storage is open; `close()` expires it at once. No advisory
  locks (CockroachDB has none): the lease is a plain row.
* `view()` is one read-only REPEATABLE READ transaction on one connection, used by every
  read the calling thread makes inside the block; other reads are single autocommit
  statements on a pooled connection. Reads therefore always see the latest commit, so
  `writer_moved()` is False and `catch_up()` does nothing.
* Connection loss: a read outside a view is retried once on a fresh connection (the
  pool is checked first, so dead connections are dropped); inside a view only the
  first read is (before it, there is no snapshot to lose). The same for a read the
  server cancelled asking for a retry (SQLSTATE class 40: a hot standby cancels a
  query whose rows its replay must remove). A write is sent again only
  when it certainly did not commit: the connection was lost before COMMIT was sent
  (the server rolls back what its client left open), or the server said it rolled it
  back (SQLSTATE class 40: serialization failure, deadlock; CockroachDB asks clients to
  retry those). A write whose COMMIT got no answer is never sent again: it is resolved
  by reading the journal head (`meta/journal`, which every engine batch writes) back
  after taking the lease row's lock, which waits until the lost transaction has ended
  either way. The head holds the batch's value: it committed and `write` returns. It
  holds another and the lease is still ours (no other writer can have written since):
  `StoreError` saying the write did not happen. Otherwise `StoreError` saying the
  outcome is unknown.
* A killed writer's lease lapses after `lease_seconds` (10 s by default): until then
  a new writer for the actor gets `StoreLocked` saying until when. `cortex.open()`
  takes the lease times from the environment: `CORTEX_PG_LEASE_SECONDS` (how long a
  lease lasts without renewal) and `CORTEX_PG_RENEW_SECONDS` (how often the writer
  renews it; default a third of the lease, 3 s for the default lease). A longer lease
  rides out longer pauses of a writer (GC, a stopped VM) but keeps the actor locked
  longer after a crash; tests use short ones.
* `sync` is accepted for the protocol: a commit is as durable as the server makes it
  (`synchronous_commit`, on by default), which is the administrator's choice.
* Transaction control (BEGIN, COMMIT, ROLLBACK) is never prepared: nothing to gain,
  and the statement text then shows on the wire (the tests' fault proxy cuts there).
* Failures are `StoreError` naming the cause (or `CorruptRecord` when the server reports
  damaged data), never a raw psycopg exception.

Every SQL statement this module sends (each accepted by PostgreSQL 15, CockroachDB and
YugabyteDB; `%s` are parameters, `[...]` parts are present or not):

| statement | used for |
|---|---|
| `SELECT version FROM cortex_schema WHERE name = 'kv'` | a writer's first open in the process: is the schema there |
| `CREATE TABLE IF NOT EXISTS cortex_kv (actor text NOT NULL, key bytea NOT NULL, value bytea NOT NULL, PRIMARY KEY (actor, key))` | writer's first open |
| `CREATE TABLE IF NOT EXISTS cortex_lease (actor text PRIMARY KEY, holder text NOT NULL, expires_at timestamptz NOT NULL, token bigint NOT NULL)` | writer's first open |
| `CREATE TABLE IF NOT EXISTS cortex_schema (name text PRIMARY KEY, version bigint NOT NULL)` | writer's first open |
| `INSERT INTO cortex_schema (name, version) VALUES ('kv', 1) ON CONFLICT (name) DO NOTHING` | writer's first open |
| `SELECT s.version, k.part, k.key, k.value FROM cortex_schema AS s LEFT JOIN (SELECT 0 AS part, key, value FROM cortex_kv WHERE actor = %s AND key = ANY(%s) UNION ALL (SELECT 1, key, value FROM cortex_kv WHERE actor = %s ORDER BY key LIMIT 1)) AS k ON true WHERE s.name = 'kv'` | a reader's open of an actor this process does not know: schema version, the store's constant keys, does it exist |
| `WITH lease AS (INSERT INTO cortex_lease (actor, holder, expires_at, token) VALUES (%s, %s, now() + %s, 1) ON CONFLICT (actor) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, token = cortex_lease.token + 1 WHERE cortex_lease.expires_at <= now() RETURNING token) SELECT s.version, (SELECT token FROM lease), k.part, k.key, k.value FROM cortex_schema AS s LEFT JOIN (SELECT 0 AS part, key, value FROM cortex_kv WHERE actor = %s AND key = ANY(%s) UNION ALL (SELECT 1, key, value FROM cortex_kv WHERE actor = %s AND key >= %s AND key < %s ORDER BY key DESC LIMIT 1)) AS k ON true WHERE s.name = 'kv'` | a writer's open: take the lease and read the engine's opening state, in one statement |
| `SELECT holder, expires_at, token FROM cortex_lease WHERE actor = %s` | name the holder in `StoreLocked` |
| `UPDATE cortex_lease SET expires_at = now() + %s WHERE actor = %s AND holder = %s AND token = %s` | renew; first statement of every write |
| `UPDATE cortex_lease SET expires_at = now() WHERE actor = %s AND holder = %s AND token = %s` | `close()` releases the lease |
| `BEGIN` / `COMMIT` / `ROLLBACK` | a write batch |
| `BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY` | `view()` (ended by `COMMIT`, which keeps the driver's prepared statements) |
| `INSERT INTO cortex_kv (actor, key, value) VALUES (%s, %s, %s), ... ON CONFLICT (actor, key) DO UPDATE SET value = excluded.value` | the puts of a batch, up to 1,000 rows a statement |
| `DELETE FROM cortex_kv WHERE actor = %s AND key = ANY(%s)` | the deletes of a batch |
| `SELECT value FROM cortex_kv WHERE actor = %s AND key = %s` | `get` |
| `SELECT key, value FROM cortex_kv WHERE actor = %s AND key = ANY(%s)` | `multi_get` |
| `SELECT value FROM cortex_kv WHERE actor = %s AND key >= %s [AND key < %s] ORDER BY key` | `scan_values` |
| `SELECT key, value FROM cortex_kv WHERE actor = %s AND key >= %s (or >) [AND key < %s] ORDER BY key LIMIT 1000` | `scan_items`, page by page |
| `SELECT key, value FROM cortex_kv WHERE actor = %s AND key >= %s AND key < %s (or <) ORDER BY key DESC LIMIT n` | `scan_items_backward`, page by page (n = 16, 128, 1000, 1000, ...) |
| `SELECT key FROM cortex_kv WHERE actor = %s AND key >= %s [AND key < %s] ORDER BY key DESC LIMIT 1` | `last_key` |
| `SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0 WHEN pg_last_wal_receive_lsn() IS NOT NULL AND pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0 ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END` | `lag()`: PostgreSQL's own functions, the one statement the others may refuse (then the lag is None) |
| `SET LOCAL lock_timeout = '10s'` and `SELECT holder, token FROM cortex_lease WHERE actor = %s FOR UPDATE` | resolving a commit whose outcome is unknown |

Length: over the ~600 lines a module keeps to, on purpose: everything that knows SQL is
here, so the statements, the lease and the view they run under can be read together.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import CorruptRecord, NotFound, ReadOnlyStore, StoreError, StoreLocked, ValidationError
from ..records import META_JOURNAL, prefix_end
from . import Batch, Reads, ViewMoved, pgpool
from .pgpool import Conn
from .pgview import Fetched, View
from .pgview import cause as _cause
from .pgview import end_of as _end
from .pgview import failed as _failed
from .pgview import live_connection as _live_connection
from .pgview import lost as _lost
from .pgview import retryable as _retryable
from .pgview import rollback_quietly as _rollback_quietly

T = TypeVar("T")

SCHEMA_VERSION = 1
LEASE_SECONDS = 10.0  # how long a lease lasts without renewal
RENEW_SECONDS = 3.0  # how often the open writer renews it
LEASE_ENV = "CORTEX_PG_LEASE_SECONDS"  # environment variables that override the two above
RENEW_ENV = "CORTEX_PG_RENEW_SECONDS"
_RELEASE_TIMEOUT = 2.0  # seconds close() waits for a connection to release the lease
_PAGE = 1000  # rows per page of an item scan, and per INSERT statement of a batch
_FIRST_BACKWARD_PAGE = 16  # rows of a backward scan's first page (see scan_items_backward)
_TXN_ATTEMPTS = 3  # tries of a write that certainly did not commit (see _NotCommitted)

_DDL = (
    "CREATE TABLE IF NOT EXISTS cortex_kv (actor text NOT NULL, key bytea NOT NULL, "
    "value bytea NOT NULL, PRIMARY KEY (actor, key))",
    "CREATE TABLE IF NOT EXISTS cortex_lease (actor text PRIMARY KEY, holder text NOT NULL, "
    "expires_at timestamptz NOT NULL, token bigint NOT NULL)",
    "CREATE TABLE IF NOT EXISTS cortex_schema (name text PRIMARY KEY, version bigint NOT NULL)",
    f"INSERT INTO cortex_schema (name, version) VALUES ('kv', {SCHEMA_VERSION}) ON CONFLICT (name) DO NOTHING",
)
# A reader's open: the schema version, the constant keys asked for, and the actor's
# first key (is there a store), in one statement.
_OPEN_READER = (
    "SELECT s.version, k.part, k.key, k.value FROM cortex_schema AS s LEFT JOIN ("
    "SELECT 0 AS part, key, value FROM cortex_kv WHERE actor = %s AND key = ANY(%s) "
    "UNION ALL (SELECT 1, key, value FROM cortex_kv WHERE actor = %s ORDER BY key LIMIT 1)"
    ") AS k ON true WHERE s.name = 'kv'"
)
_TAKE_LEASE = (
    "INSERT INTO cortex_lease (actor, holder, expires_at, token) VALUES (%s, %s, now() + %s, 1) "
    "ON CONFLICT (actor) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, "
    "token = cortex_lease.token + 1 WHERE cortex_lease.expires_at <= now() RETURNING token"
)
# A writer's open: takes the lease and reads, in the same statement, the schema
# version, the keys asked for and the last key under a prefix.
_OPEN_WRITER = (
    f"WITH lease AS ({_TAKE_LEASE}) "
    "SELECT s.version, (SELECT token FROM lease), k.part, k.key, k.value FROM cortex_schema AS s LEFT JOIN ("
    "SELECT 0 AS part, key, value FROM cortex_kv WHERE actor = %s AND key = ANY(%s) "
    "UNION ALL (SELECT 1, key, value FROM cortex_kv WHERE actor = %s AND key >= %s AND key < %s "
    "ORDER BY key DESC LIMIT 1)"
    ") AS k ON true WHERE s.name = 'kv'"
)
_SCHEMA_VERSION = "SELECT version FROM cortex_schema WHERE name = 'kv'"
_LEASE_HOLDER = "SELECT holder, expires_at, token FROM cortex_lease WHERE actor = %s"
_RENEW_LEASE = "UPDATE cortex_lease SET expires_at = now() + %s WHERE actor = %s AND holder = %s AND token = %s"
_RELEASE_LEASE = "UPDATE cortex_lease SET expires_at = now() WHERE actor = %s AND holder = %s AND token = %s"
_LOCK_LEASE = "SELECT holder, token FROM cortex_lease WHERE actor = %s FOR UPDATE"
_DELETE = "DELETE FROM cortex_kv WHERE actor = %s AND key = ANY(%s)"
# PostgreSQL only (`lag()` reports None where it fails): how far a standby's replay is behind.
_REPLAY_LAG = (
    "SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0 "
    "WHEN pg_last_wal_receive_lsn() IS NOT NULL AND pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0 "
    "ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END"
)
_GET = "SELECT value FROM cortex_kv WHERE actor = %s AND key = %s"
_MULTI_GET = "SELECT key, value FROM cortex_kv WHERE actor = %s AND key = ANY(%s)"


def _upsert_sql(rows: int) -> str:
    values = ", ".join(["(%s, %s, %s)"] * rows)
    return (f"INSERT INTO cortex_kv (actor, key, value) VALUES {values} "
            "ON CONFLICT (actor, key) DO UPDATE SET value = excluded.value")


def _range_sql(columns: str, lower: str, upper: str | None, order: str, limit: int | None) -> str:
    """`SELECT columns` of one actor's keys between two bounds; `lower` and `upper` are
    the comparison operators (`>=`/`>`, `<`), `upper` None for no upper bound."""
    sql = f"SELECT {columns} FROM cortex_kv WHERE actor = %s AND key {lower} %s"
    if upper is not None:
        sql += f" AND key {upper} %s"
    sql += f" ORDER BY key {order}"
    if limit is not None:
        sql += f" LIMIT {limit}"
    return sql


def open_postgres(dsn: str, *, actor: str, read_only: bool, sync: bool,
                  lease_seconds: float | None = None, renew_seconds: float | None = None,
                  constants: Sequence[bytes] = (), preload: Sequence[bytes] = (),
                  preload_last: bytes | None = None) -> PostgresStorage:
    """Open `actor`'s store in the database at `dsn`, as its writer or as a reader.

    A writer creates the tables when the database has none (the first in this
    process to open the database checks) and takes the actor's lease
    (`StoreLocked` when another writer holds it). A reader writes nothing, and needs
    the actor's store to exist (`NotFound`). Lease times not given come from
    `CORTEX_PG_LEASE_SECONDS` / `CORTEX_PG_RENEW_SECONDS`, else the defaults.

    What the caller will read first can ride on the open's statement: `constants`,
    keys that never change once the store exists (kept for the process's later opens
    of the actor, so that opening a known actor's store as a reader sends nothing),
    and for a writer `preload` (keys) and `preload_last` (the last key under that
    prefix), served from what the open read until its first write: nobody else
    writes while it holds the lease.
    """
    if not isinstance(actor, str) or not actor:
        raise ValidationError("actor", "must be a non-empty string", actor)
    if lease_seconds is None:
        lease_seconds = _seconds_from_env(LEASE_ENV, LEASE_SECONDS)
    if renew_seconds is None:
        default = RENEW_SECONDS if lease_seconds == LEASE_SECONDS else lease_seconds / 3
        renew_seconds = _seconds_from_env(RENEW_ENV, default)
    if not 0 < renew_seconds < lease_seconds:
        raise ValidationError("renew_seconds", f"must be above 0 and below lease_seconds ({lease_seconds})",
                              renew_seconds)
    del sync  # durability is the server's setting (see the module docstring)
    return PostgresStorage(dsn, actor=actor, read_only=read_only, lease_seconds=lease_seconds,
                           renew_seconds=renew_seconds, constants=tuple(constants), preload=tuple(preload),
                           preload_last=preload_last)


# Every actor once without reading each one's rows: a loose index scan over the
# primary key (one index probe per actor), A to Z.
_LIST_ACTORS = (
    "WITH RECURSIVE a(actor) AS (SELECT min(actor) FROM cortex_kv UNION ALL "
    "SELECT (SELECT min(actor) FROM cortex_kv WHERE actor > a.actor) FROM a WHERE a.actor IS NOT NULL) "
    "SELECT actor FROM a WHERE actor IS NOT NULL"
)


def list_actors(dsn: str) -> list[str]:
    """The actors whose stores the database at `dsn` holds, A to Z (none when it
    has no cortex tables)."""
    kwargs: dict[str, Any] = {"autocommit": True}
    if "connect_timeout" not in pgpool.conninfo(dsn):
        kwargs["connect_timeout"] = pgpool.CONNECT_TIMEOUT
    try:
        with psycopg.connect(dsn, **kwargs) as conn:
            try:
                rows = conn.execute(_LIST_ACTORS).fetchall()
            except psycopg.errors.UndefinedTable:
                return []
    except psycopg.Error as exc:
        raise StoreError(f"cannot list the actors of {_without_password(dsn)}: {_cause(exc)}") from None
    return [str(row[0]) for row in rows]


def _seconds_from_env(name: str, default: float) -> float:
    """A positive number of seconds from environment variable `name`, or `default`."""
    text = os.environ.get(name)
    if text is None or not text.strip():
        return default
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < 1e6:  # NaN fails too
        raise ValidationError(name, "must be a number of seconds above 0 (environment variable)", text)
    return seconds


class PostgresStorage:
    """One actor's store in a PostgreSQL database: its writer, or a reader of it."""

    def __init__(self, dsn: str, *, actor: str, read_only: bool, lease_seconds: float,
                 renew_seconds: float, constants: tuple[bytes, ...] = (), preload: tuple[bytes, ...] = (),
                 preload_last: bytes | None = None) -> None:
        self.location = _without_password(dsn)
        self.read_only = read_only
        self.live_reads = True  # every read sees the latest commit (no catch-up)
        self.actor = actor
        self._dsn = dsn
        self._lease = timedelta(seconds=lease_seconds)
        self._holder = f"{socket.gethostname()}/pid {os.getpid()}/{secrets.token_hex(4)}"
        self._token = 0
        self._local = threading.local()  # .view: the calling thread's open _View
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._closed = False
        self._constant_keys = frozenset(constants)
        self._constants: dict[bytes, bytes | None] = {}  # (None: absent)
        # (writer) what the open read besides: key -> value (None: absent), and the
        # last key under `preload_last`; dropped at the first write.
        self._preloaded: dict[bytes, bytes | None] | None = None
        self._preload_last = preload_last
        self._last: bytes | None = None
        try:
            self._db, first = pgpool.acquire(dsn)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open {self.location} for actor {actor!r}: {_cause(exc)}") from None
        self._pool: ConnectionPool[Conn] = self._db.pool
        try:
            if read_only:
                self._open_reader(first)
            else:
                self._open_writer(first, preload)
        except psycopg.Error as exc:
            pgpool.release(dsn, self._db)
            raise StoreError(f"cannot open {self.location} for actor {actor!r}: {_cause(exc)}") from None
        except BaseException:
            pgpool.release(dsn, self._db)
            raise
        finally:
            if first is not None:
                first.close()
        if not read_only:
            self._renewer = threading.Thread(target=self._renew_loop, args=(renew_seconds,),
                                             name=f"cortex-lease-{actor}", daemon=True)
            self._renewer.start()

    # -- opening --------------------------------------------------------------------

    def _open_reader(self, first: Conn | None) -> None:
        """Check the store exists, with one statement, unless this process knows it."""
        with self._db.lock:
            known = self._db.known.get(self.actor)
        if known is not None and self._constant_keys <= known.keys():
            self._constants = known
            return
        keys = sorted(self._constant_keys)

        def run(conn: Conn) -> list[tuple[Any, ...]]:
            try:
                return conn.execute(_OPEN_READER, (self.actor, keys, self.actor), binary=True).fetchall()
            except psycopg.errors.UndefinedTable:
                raise NotFound(f"no cortex store in {self.location} (no cortex tables)") from None
        rows = run(first) if first is not None else self._read("open", run)
        self._check_version(rows[0][0] if rows else None)
        if all(row[2] is None for row in rows):
            raise NotFound(f"no cortex store for actor {self.actor!r} in {self.location}")
        found = {bytes(key): bytes(value) for _, part, key, value in rows if part == 0}
        self._constants = {key: found.get(key) for key in keys}
        self._remember_constants()

    def _open_writer(self, first: Conn | None, preload: tuple[bytes, ...]) -> None:
        """Take the lease, reading what the engine reads first in the same statement;
        create the tables first when the database has none."""
        keys = sorted(self._constant_keys | set(preload))
        last = self._preload_last or b"\x00"
        end = _end(last)
        if end is None:
            raise ValueError(f"preload_last must be a prefix with an end, not {last!r}")
        params = (self.actor, self._holder, self._lease, self.actor, keys, self.actor, last, end)
        conn = first if first is not None else self._pool.getconn()
        try:
            if not self._db.schema_checked:
                self._create_schema(conn)
                self._db.schema_checked = True
            rows = conn.execute(_OPEN_WRITER, params, binary=True).fetchall()
        finally:
            if first is None:
                self._pool.putconn(conn)
        self._check_version(rows[0][0] if rows else None)
        token = rows[0][1]
        if token is None:
            raise self._locked()
        self._token = int(token)
        found = {bytes(key): bytes(value) for _, _, part, key, value in rows if part == 0}
        self._constants = {key: found.get(key) for key in self._constant_keys}
        if any(value is not None for value in self._constants.values()):  # the store exists: keep them
            self._remember_constants()
        self._preloaded = {key: found.get(key) for key in preload}
        lasts = [bytes(key) for _, _, part, key, _ in rows if part == 1]
        self._last = lasts[0] if lasts else None

    def _remember_constants(self) -> None:
        with self._db.lock:
            self._db.known[self.actor] = self._constants

    def _schema_version(self, conn: Conn) -> int | None:
        """The schema version row, or None when the tables do not exist."""
        try:
            row = conn.execute(_SCHEMA_VERSION).fetchone()
        except psycopg.errors.UndefinedTable:
            return None
        return int(row[0]) if row else None

    def _create_schema(self, conn: Conn) -> None:
        version = self._schema_version(conn)
        if version is None:
            for statement in _DDL:
                try:
                    conn.execute(statement)
                except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable,
                        psycopg.errors.DuplicateObject):
                    # Another first writer created this table at the same moment
                    # (PostgreSQL's IF NOT EXISTS can still collide in its catalog):
                    # it exists now, so the statement is a no-op the second time.
                    conn.execute(statement)
            version = self._schema_version(conn)
        self._check_version(version)

    def _check_version(self, version: int | None) -> None:
        if version != SCHEMA_VERSION:
            raise StoreError(f"{self.location} holds cortex tables of schema version {version}; "
                             f"this cortex reads version {SCHEMA_VERSION}")

    def _locked(self) -> StoreLocked:
        with self._pool.connection() as conn:
            held = conn.execute(_LEASE_HOLDER, (self.actor,)).fetchone()
        holder, until = (held[0], held[1]) if held else ("another writer", None)
        shown = f" (its lease runs until {until:%Y-%m-%d %H:%M:%S %Z})" if until is not None else ""
        return StoreLocked(f"actor {self.actor!r} in {self.location} is open for writing by {holder}{shown}; "
                           'open it with mode="r" to read beside the writer')

    # -- the lease ------------------------------------------------------------------

    def _renew_loop(self, every: float) -> None:
        """Renew the lease until `close()`; a failed renewal is tried again next time
        (writes check the lease themselves, so a lost one cannot commit anyway)."""
        while not self._stop.wait(every):
            try:
                with self._pool.connection(timeout=every) as conn:
                    renewed = conn.execute(_RENEW_LEASE, (self._lease, self.actor, self._holder, self._token))
                    if renewed.rowcount != 1:
                        return  # taken over: the next write says so
            except psycopg.Error:
                continue

    def _lease_lost(self, conn: Conn) -> StoreLocked:
        held = conn.execute(_LEASE_HOLDER, (self.actor,)).fetchone()
        now = f"{held[0]} (token {held[2]})" if held else "nobody"
        return StoreLocked(f"lease lost: actor {self.actor!r} in {self.location} is now held by {now}, "
                           f"not by this handle (token {self._token}); nothing of this write was committed")

    # -- lifecycle ------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
            try:
                with self._pool.connection(timeout=_RELEASE_TIMEOUT) as conn:
                    conn.execute(_RELEASE_LEASE, (self.actor, self._holder, self._token))
            except psycopg.Error:
                pass  # the lease then lapses by itself
        self._preloaded = None
        pgpool.release(self._dsn, self._db)  # the pool stays for the next handle

    # -- reads ----------------------------------------------------------------------

    def _read(self, what: str, run: Callable[[Conn], T]) -> T:
        """Run `run(conn)` in the calling thread's view, or else on a pooled connection,
        retrying once on a fresh connection when the first one was lost."""
        view: View | None = getattr(self._local, "view", None)
        if view is not None:
            return view.read(what, run)
        return self._read_outside(what, run)

    def _read_outside(self, what: str, run: Callable[[Conn], T]) -> T:
        """Run `run(conn)` on a pooled connection in autocommit (one statement, one
        committed state), retrying once on a fresh connection when the first one was
        lost or the server asked for a retry."""
        try:
            with self._pool.connection() as conn:
                return run(conn)
        except psycopg.Error as exc:
            if not _retryable(exc):
                raise _failed(what, exc) from None
            first = exc
        try:
            conn = _live_connection(self._pool)
            try:
                return run(conn)
            finally:
                self._pool.putconn(conn)
        except psycopg.Error as exc:
            raise _failed(what, exc, f"after a retry on a fresh connection (first: {_cause(first)})") from None

    def get(self, key: bytes) -> bytes | None:
        if key in self._constants:
            return self._constants[key]
        preloaded = self._preloaded
        if preloaded is not None and key in preloaded:
            return preloaded[key]
        fetched = self._fetched()
        if fetched is not None and key in fetched.gets:
            return fetched.gets[key]
        view = self._view()
        checked = None if view is None else view.checked_get([key])
        if checked is not None:
            return checked.get(key)

        def run(conn: Conn) -> bytes | None:
            row = conn.execute(_GET, (self.actor, key), binary=True).fetchone()
            return bytes(row[0]) if row else None
        return self._read(f"get of {key!r}", run)

    def multi_get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        if not keys:
            return []
        fetched = self._fetched()
        if fetched is not None:
            values = fetched.values_of(list(keys))
            if values is not None:
                return values
        view = self._view()
        checked = None if view is None else view.checked_get(list(keys))
        if checked is not None:
            return [checked.get(key) for key in keys]

        def run(conn: Conn) -> dict[bytes, bytes]:
            rows = conn.execute(_MULTI_GET, (self.actor, list(keys)), binary=True).fetchall()
            return {bytes(key): bytes(value) for key, value in rows}
        found = self._read(f"multi_get of {len(keys)} keys from {keys[0]!r}", run)
        return [found.get(key) for key in keys]

    def write(self, puts: Batch) -> None:
        if self.read_only:
            raise ReadOnlyStore(f"actor {self.actor!r} in {self.location} was opened read-only")
        if not puts:
            return
        upserts = [(key, value) for key, value in puts.items() if value is not None]
        deletes = [key for key, value in puts.items() if value is None]
        self._preloaded = None  # from now on the store is what this writer writes
        for attempt in range(_TXN_ATTEMPTS):
            try:
                self._write_once(upserts, deletes, puts.get(META_JOURNAL))
                self._wrote_constants(puts)
                return
            except _NotCommitted as failed:
                if attempt == _TXN_ATTEMPTS - 1:
                    raise StoreError(f"write of {len(puts)} keys did not happen, tried {_TXN_ATTEMPTS} times "
                                     f"(last: {_cause(failed.cause)})") from None
                if failed.connection_lost:
                    self._pool.check()  # drop the connections that died with this one
                time.sleep(0.01 * (attempt + 1))

    def _wrote_constants(self, puts: Batch) -> None:
        """Keep the constant keys a committed batch wrote (the store's creation)."""
        written = {key: value for key, value in puts.items() if key in self._constant_keys and value is not None}
        if written:
            self._constants = {**self._constants, **written}
            self._remember_constants()

    def _write_once(self, upserts: list[tuple[bytes, bytes]], deletes: list[bytes], journal: bytes | None) -> None:
        """One try of a batch as one transaction; returns when it committed.

        Raises `_NotCommitted` when it certainly did not commit and may be tried again
        (the server rolled it back with SQLSTATE class 40, or the connection was lost
        before COMMIT was sent, so the server rolled it back), `StoreLocked` when the
        lease is lost, `StoreError` for any other failure."""
        count = len(upserts) + len(deletes)
        try:
            conn = self._pool.getconn()
        except psycopg.Error as exc:
            raise _failed(f"write of {count} keys", exc, "nothing was written") from None
        committing = False
        try:
            conn.execute("BEGIN", prepare=False)
            if conn.execute(_RENEW_LEASE, (self._lease, self.actor, self._holder, self._token)).rowcount != 1:
                lost = self._lease_lost(conn)
                conn.execute("ROLLBACK", prepare=False)
                raise lost
            for start in range(0, len(upserts), _PAGE):
                chunk = upserts[start:start + _PAGE]
                params: list[object] = []
                for key, value in chunk:
                    params += (self.actor, key, value)
                conn.execute(_upsert_sql(len(chunk)), params)
            if deletes:
                conn.execute(_DELETE, (self.actor, deletes))
            committing = True
            conn.execute("COMMIT", prepare=False)
        except psycopg.Error as exc:
            if (exc.sqlstate or "").startswith("40"):
                _rollback_quietly(conn)
                raise _NotCommitted(exc, connection_lost=False) from None
            if _lost(exc) and not committing:
                raise _NotCommitted(exc, connection_lost=True) from None
            if _lost(exc):
                self._resolve_unknown_commit(journal, count, exc)
                return
            _rollback_quietly(conn)
            raise _failed(f"write of {count} keys", exc, "nothing was written") from None
        finally:
            self._pool.putconn(conn)

    def _resolve_unknown_commit(self, journal: bytes | None, count: int, exc: psycopg.Error) -> None:
        """The connection died during COMMIT: find out whether the batch committed.

        Every write transaction updates the lease row first, so taking that row's lock
        waits until the lost transaction has ended, committed or not. Then the journal
        head says which: ours, it committed; another, and the lease still ours (so no
        other writer can have written since), it did not. Returns when it committed;
        raises `StoreError` otherwise, saying whether the write certainly did not happen."""
        unknown = f"write of {count} keys: the connection was lost during COMMIT ({_cause(exc)}) and "
        if journal is None:
            raise StoreError(unknown + "the batch carries no journal head to check: whether it committed is unknown")
        self._pool.check()
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SET LOCAL lock_timeout = '10s'")
                lease = conn.execute(_LOCK_LEASE, (self.actor,)).fetchone()
                row = conn.execute(_GET, (self.actor, META_JOURNAL), binary=True).fetchone()
        except psycopg.Error as again:
            raise StoreError(unknown + f"the journal head could not be read back ({_cause(again)}): "
                             "whether it committed is unknown") from None
        if row is not None and bytes(row[0]) == journal:
            return
        if lease is None or (lease[0], lease[1]) != (self._holder, self._token):
            raise StoreError(unknown + "another writer has taken the lease since: whether it committed is unknown")
        raise StoreError(f"write of {count} keys did not happen: the connection was lost during COMMIT "
                         f"({_cause(exc)}) and the journal head shows the batch was not committed")

    def scan_values(self, prefix: bytes, key_of: Callable[[bytes], bytes] | None = None) -> list[bytes]:
        """One range query (`key_of` is not needed: the server reports damage itself)."""
        fetched = self._fetched()
        if fetched is not None and prefix in fetched.scans:
            return list(fetched.scans[prefix])
        end = _end(prefix)
        sql = _range_sql("value", ">=", None if end is None else "<", "ASC", None)
        params = (self.actor, prefix) if end is None else (self.actor, prefix, end)

        def run(conn: Conn) -> list[bytes]:
            return [bytes(row[0]) for row in conn.execute(sql, params, binary=True).fetchall()]
        return self._read(f"scan of {prefix!r}", run)

    def scan_items(self, prefix: bytes, start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Pages of `_PAGE` rows, each one query from where the last one ended; inside
        a view all pages come from its snapshot."""
        end = _end(prefix)
        lower, bound = ">=", max(prefix, start) if start is not None else prefix
        while True:
            sql = _range_sql("key, value", lower, None if end is None else "<", "ASC", _PAGE)
            params = (self.actor, bound) if end is None else (self.actor, bound, end)
            page = self._read(f"scan of {prefix!r}", _fetch_items(sql, params))
            yield from page
            if len(page) < _PAGE:
                return
            lower, bound = ">", page[-1][0]

    def scan_items_backward(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Pages from the last key down: `_FIRST_BACKWARD_PAGE` rows, then eight times
        more each time up to `_PAGE`. Its reader (context()'s outcomes tier, newest
        first) usually stops after a few rows, so a first page of a thousand rows of
        a busy object would mostly be sent for nothing."""
        bound = _end(prefix)
        size = _FIRST_BACKWARD_PAGE
        fetched = self._fetched()
        if fetched is not None and prefix in fetched.newest:
            asked, page = fetched.newest[prefix]
            yield from page
            if len(page) < asked:
                return
            bound, size = page[-1][0], min(asked * 8, _PAGE)
        while True:
            sql = _range_sql("key, value", ">=", None if bound is None else "<", "DESC", size)
            params = (self.actor, prefix) if bound is None else (self.actor, prefix, bound)
            page = self._read(f"backward scan of {prefix!r}", _fetch_items(sql, params))
            yield from page
            if len(page) < size:
                return
            bound = page[-1][0]
            size = min(size * 8, _PAGE)

    def last_key(self, prefix: bytes) -> bytes | None:
        if self._preloaded is not None and prefix == self._preload_last:
            return self._last
        end = _end(prefix)
        sql = _range_sql("key", ">=", None if end is None else "<", "DESC", 1)
        params = (self.actor, prefix) if end is None else (self.actor, prefix, end)

        def run(conn: Conn) -> bytes | None:
            row = conn.execute(sql, params, binary=True).fetchone()
            return bytes(row[0]) if row else None
        return self._read(f"last key of {prefix!r}", run)

    @contextmanager
    def view(self) -> Iterator[None]:
        """One read-only view for the calling thread's reads in the block (a view
        opened inside another uses the outer one): a prefetch's one statement, and a
        REPEATABLE READ transaction for what it did not cover (`cortex.storage.pgview`).
        A view that found the store moved under its prefetch raises `ViewMoved`, and
        the thread's next view runs its prefetch inside the transaction."""
        if getattr(self._local, "view", None) is not None:
            yield
            return
        strict = getattr(self._local, "strict", False)
        view = View(self._pool, self.actor, META_JOURNAL, strict, self._read_outside)
        self._local.view = view
        try:
            yield
        except ViewMoved:
            self._local.strict = True
            raise
        else:
            if strict:
                self._local.strict = False
        finally:
            self._local.view = None
            view.end()

    def prefetch(self, reads: Reads) -> None:
        view: View | None = getattr(self._local, "view", None)
        if view is not None:
            view.prefetch(reads)

    def _view(self) -> View | None:
        """The calling thread's open view, if any."""
        view: View | None = getattr(self._local, "view", None)
        return view

    def _fetched(self) -> Fetched | None:
        view = self._view()
        return None if view is None else view.fetched

    def writer_moved(self) -> bool:
        return False

    def catch_up(self, reopen: bool = False) -> bool:
        return True  # every view() sees the latest commit: nothing to catch up

    def lag(self) -> float | None:
        """`now() - pg_last_xact_replay_timestamp()` on a standby that has received WAL
        it has not replayed yet; 0.0 on a primary or a standby that replayed all it
        received. These functions are PostgreSQL's own: on a server without them
        (CockroachDB, YugabyteDB) the lag is None."""
        def run(conn: Conn) -> float | None:
            row = conn.execute(_REPLAY_LAG).fetchone()
            return None if row is None or row[0] is None else max(0.0, float(row[0]))
        try:
            return self._read("replay lag", run)
        except StoreError:
            return None

    def compact(self) -> int:
        return 0  # one B-tree serves a range scan in one seek; autovacuum tends it

    def purge(self) -> None:
        """VACUUM the table, outside any transaction, so that the rows an erasure
        deleted leave it (docs/trust.md says what VACUUM does not scrub)."""
        try:
            with self._pool.connection() as conn:
                conn.execute("VACUUM cortex_kv")
        except psycopg.Error as exc:
            raise StoreError(f"cannot vacuum {self.location}: {_cause(exc)}") from None

    def all_items(self) -> dict[bytes, bytes]:
        """Every key and value of the actor's store (tests and tools; small stores)."""
        return dict(self.scan_items(b""))


class _NotCommitted(Exception):
    """A write transaction that certainly did not commit: safe to try again."""

    def __init__(self, cause: psycopg.Error, *, connection_lost: bool) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.connection_lost = connection_lost


def _fetch_items(sql: str, params: tuple[object, ...]) -> Callable[[Conn], list[tuple[bytes, bytes]]]:
    def run(conn: Conn) -> list[tuple[bytes, bytes]]:
        return [(bytes(key), bytes(value)) for key, value in conn.execute(sql, params, binary=True).fetchall()]
    return run


def _without_password(dsn: str) -> str:
    """The DSN as given, less any password (for `location` and messages)."""
    if "://" not in dsn:
        params = pgpool.conninfo(dsn)
        params.pop("password", None)
        return make_conninfo(**params)
    parts = urlsplit(dsn)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}@{host}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
