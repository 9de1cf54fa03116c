"""One connection pool per PostgreSQL database per process, shared by every handle.

A worker that serves many agents opens an agent's store per task; when each handle
kept a pool of its own, every open paid for a new server connection (a backend
process forked on the server, ~5 ms on loopback) and the pool's threads. Here every
handle opened on the same connection string in this process draws from one pool,
made by the first of them:

* `acquire(dsn)` returns the `Database` for `dsn` (its pool made on first use: one
  connection made at once, so that a wrong DSN fails fast and names its cause, the
  rest as the pool needs them) and counts the handle; `release()` uncounts it.
* A pool keeps no connection open for its own sake (`min_size=0`): it opens them as
  handles ask and closes those idle for ten minutes, so a pool to a server that went
  away does not keep trying to reach it.
* A pool that no handle uses stays open for the next one (a worker opening a store
  per task then connects once), up to `IDLE_POOLS` of them: beyond that the pool
  idle longest is closed. `close_all()` closes every pool; it runs at exit.
* A forked child forgets its parent's pools without closing them (their
  connections are the parent's) and makes its own.
* `Database.known` keeps, per actor whose store this process has seen, the keys the
  engine never changes once a store exists (`cortex.storage.postgres` is told which),
  so a reader opening a known actor's store sends nothing at all.

The pool's size is `CORTEX_PG_POOL_SIZE` connections at most (default `POOL_SIZE`),
opened as needed: one per thread reading or writing at the same moment.
"""

from __future__ import annotations

import atexit
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool

from ..errors import StoreError, ValidationError

Conn = psycopg.Connection[TupleRow]

POOL_SIZE = 10  # connections at most in a database's pool
POOL_ENV = "CORTEX_PG_POOL_SIZE"  # the environment variable that overrides it
IDLE_POOLS = 2  # pools kept open with no handle on them
CONNECT_TIMEOUT = 10  # seconds to connect (unless the DSN says) or to wait for a pooled connection


@dataclass(eq=False)
class Database:
    """A database as this process reaches it: its pool and what it has learnt of it."""

    pool: ConnectionPool[Conn]
    kwargs: dict[str, Any]
    handles: int = 0
    schema_checked: bool = False  # the tables exist at the version this cortex reads
    # actor -> {key: value} of the keys named constant at open (see the module docstring)
    known: dict[str, dict[bytes, bytes | None]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_lock = threading.Lock()
_databases: dict[str, Database] = {}  # by DSN, as given
_idle: list[str] = []  # DSNs of pools with no handle, longest idle first


def acquire(dsn: str) -> tuple[Database, Conn | None]:
    """The `Database` of `dsn`, counted as used by one more handle. When its pool is
    made now, the connection made to check the DSN is returned too (the caller may
    use it for its first statement, then closes it); otherwise None."""
    with _lock:
        db = _databases.get(dsn)
        if db is not None:
            db.handles += 1
            if dsn in _idle:
                _idle.remove(dsn)
            return db, None
    kwargs: dict[str, Any] = {"autocommit": True}
    if "connect_timeout" not in conninfo(dsn):
        kwargs["connect_timeout"] = CONNECT_TIMEOUT
    conn = psycopg.connect(dsn, **kwargs)  # fails fast, with the server's reason
    try:
        pool: ConnectionPool[Conn] = ConnectionPool(
            dsn, kwargs=kwargs, min_size=0, max_size=pool_size(), open=True, name="cortex",
            timeout=CONNECT_TIMEOUT)
    except BaseException:
        conn.close()
        raise
    made = Database(pool, kwargs, handles=1)
    with _lock:
        db = _databases.setdefault(dsn, made)
        if db is not made:  # another thread made it meanwhile: use that one
            db.handles += 1
            if dsn in _idle:
                _idle.remove(dsn)
    if db is not made:
        made.pool.close()
    return db, conn


def release(dsn: str, db: Database) -> None:
    """One handle less on `db`; with none left it stays open, idle, up to `IDLE_POOLS`."""
    closing: list[Database] = []
    with _lock:
        db.handles -= 1
        if db.handles > 0 or _databases.get(dsn) is not db:
            return
        _idle.append(dsn)
        while len(_idle) > IDLE_POOLS:
            closing.append(_databases.pop(_idle.pop(0)))
    for old in closing:
        old.pool.close()


def close_all() -> None:
    """Close every pool of this process (handles still open then fail their next call)."""
    with _lock:
        closing = list(_databases.values())
        _databases.clear()
        _idle.clear()
    for db in closing:
        db.pool.close()


def _forget_after_fork() -> None:
    """(In a forked child) drop the parent's pools without touching their connections."""
    global _lock
    _lock = threading.Lock()
    _databases.clear()
    _idle.clear()


def pool_size() -> int:
    text = os.environ.get(POOL_ENV)
    if text is None or not text.strip():
        return POOL_SIZE
    try:
        size = int(text)
    except ValueError:
        size = 0
    if not 1 <= size <= 1000:
        raise ValidationError(POOL_ENV, "must be a whole number of connections within 1..1000 (environment variable)",
                              text)
    return size


def conninfo(dsn: str) -> dict[str, Any]:
    try:
        return conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise StoreError(f"not a valid PostgreSQL connection string: {' '.join(str(exc).split())[:300]}") from None


atexit.register(close_all)
os.register_at_fork(after_in_child=_forget_after_fork)
