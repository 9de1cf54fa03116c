"""Read views on PostgreSQL: a call's reads in one statement where it can, one
read-only REPEATABLE READ transaction where it must.

A `view()` block of `cortex.storage.postgres` is a `View`. Without a prefetch it is
what it always was: a REPEATABLE READ, READ ONLY transaction begun at its first read,
ended by COMMIT (see `View.end`). With one (`Storage.prefetch(Reads)`, made before the block's first
read: `context()` names its tier scans, its meta reads and the heads it will render),
the block's reads come from a single statement (`prefetch_statement`) sent outside
any transaction: one statement sees one committed state, so in the common case a
call is one round trip, with no BEGIN and no ROLLBACK. Its rows serve every read of
the block they cover (`Fetched`).

A point read the prefetch did not cover (the survivors' heads of a hot frame, whose
candidates are too many to join) is one more statement outside any transaction that
reads the journal head with the keys (`checked_get`); any other read (a scope's
records, an edge, a scan page) begins the transaction after all, and its first
statement reads the journal head again: every batch the engine writes
moves it (`cortex.engine`: each write appends a journal entry in the same batch), so
the same head means the same committed state, and the block goes on in the
transaction as if it had begun there. Another head means a writer committed in
between: `ViewMoved`, the call starts again (`cortex.engine.Engine.read`), and the
thread's next view takes no chance (`strict`: the prefetch runs inside the
transaction). The one batch that writes no journal entry, `rebuild()`'s repair of
derived keys, is many batches anyway, which a transaction could see half done too.

The prefetch statement (parameters `%s`; the parts present as the reads ask):

    WITH s AS (
        (SELECT 2 AS part, key, NULL::bytea AS k, value FROM cortex_kv
         WHERE actor = %s AND key >= %s [AND key < %s] ORDER BY key)         -- a scan
        UNION ALL
        (SELECT 3 AS part, key, key AS k, value FROM cortex_kv
         WHERE actor = %s AND key >= %s [AND key < %s] ORDER BY key DESC LIMIT n)  -- newest n
        ...)
    SELECT part, k, value FROM (
        SELECT part, key, k, value FROM s
        UNION ALL SELECT 0, key, key, value FROM cortex_kv WHERE actor = %s AND key = ANY(%s)
        UNION ALL SELECT 1, key, key, value FROM cortex_kv WHERE actor = %s AND key = ANY(ARRAY(
            SELECT DISTINCT %s || substr(value, 1, width) FROM s WHERE (SELECT count(*) FROM s) <= cap))
    ) AS u ORDER BY part, key

Part 0 holds the point reads, 1 the joined heads (none when the scans returned more
than `cap` rows), 2 and up one scan each. A forward scan's keys are not sent (its
readers want values); `ORDER BY part, key` sorts every part by key on the server, and
the client turns a backward part around. It uses only what PostgreSQL 15, CockroachDB
and YugabyteDB share: CTEs, UNION ALL, `ARRAY(subquery)`, `= ANY`, `substr` and `||`
on bytea.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import CorruptRecord, StoreError
from ..records import prefix_end
from . import Reads, ViewMoved
from .pgpool import Conn

T = TypeVar("T")

BEGIN_VIEW = "BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
_GET = "SELECT value FROM cortex_kv WHERE actor = %s AND key = %s"
_MULTI_GET = "SELECT key, value FROM cortex_kv WHERE actor = %s AND key = ANY(%s)"
_FIRST_PART = 2  # parts 0 and 1 are the point reads and the joined heads


@dataclass
class Fetched:
    """What a prefetch read: point reads (None: absent), the values of each scan, the
    first items of each backward scan with how many were asked for, and the joined
    heads (`joined_keys` the keys asked for; empty when the scans were too many)."""

    gets: dict[bytes, bytes | None] = field(default_factory=dict)
    scans: dict[bytes, list[bytes]] = field(default_factory=dict)
    newest: dict[bytes, tuple[int, list[tuple[bytes, bytes]]]] = field(default_factory=dict)
    joined: dict[bytes, bytes] = field(default_factory=dict)
    joined_keys: frozenset[bytes] = frozenset()

    def values_of(self, keys: list[bytes]) -> list[bytes | None] | None:
        """The values of `keys` when the prefetch read every one of them, else None."""
        found: list[bytes | None] = []
        for key in keys:
            if key in self.gets:
                found.append(self.gets[key])
            elif key in self.joined_keys:
                found.append(self.joined.get(key))
            else:
                return None
        return found


def end_of(prefix: bytes) -> bytes | None:
    """The smallest key above every key with `prefix`; None when there is none (a
    prefix of only 0xff bytes, or the empty prefix: every key)."""
    try:
        return prefix_end(prefix)
    except ValueError:
        return None


def prefetch_statement(actor: str, reads: Reads) -> tuple[str, list[Any]]:
    """The one statement of a prefetch and its parameters (see the module docstring)."""
    branches: list[str] = []
    params: list[Any] = []
    parts = [(prefix, None) for prefix in reads.scans] + [(prefix, n) for prefix, n in reads.newest]
    for i, (prefix, newest) in enumerate(parts):
        end = end_of(prefix)
        bound = "" if end is None else " AND key < %s"
        if newest is None:
            branches.append(f"(SELECT {i + _FIRST_PART} AS part, key, NULL::bytea AS k, value FROM cortex_kv "
                            f"WHERE actor = %s AND key >= %s{bound} ORDER BY key)")
        else:
            branches.append(f"(SELECT {i + _FIRST_PART} AS part, key, key AS k, value FROM cortex_kv "
                            f"WHERE actor = %s AND key >= %s{bound} ORDER BY key DESC LIMIT {int(newest)})")
        params += [actor, prefix] + ([] if end is None else [end])
    gets = "SELECT 0 AS part, key, key AS k, value FROM cortex_kv WHERE actor = %s AND key = ANY(%s)"
    if not branches:
        return f"SELECT part, k, value FROM ({gets}) AS u ORDER BY part, key", [actor, list(reads.gets)]
    sql = f"WITH s AS ({' UNION ALL '.join(branches)}) SELECT part, k, value FROM (SELECT part, key, k, value FROM s "
    sql += f"UNION ALL {gets}"
    params += [actor, list(reads.gets)]
    if reads.joined is not None:
        prefix, width, cap = reads.joined
        sql += (" UNION ALL SELECT 1, key, key, value FROM cortex_kv WHERE actor = %s AND key = ANY(ARRAY("
                f"SELECT DISTINCT %s || substr(value, 1, {int(width)}) FROM s "
                f"WHERE (SELECT count(*) FROM s) <= {int(cap)}))")
        params += [actor, prefix]
    return sql + ") AS u ORDER BY part, key", params


def parse_fetched(reads: Reads, rows: list[tuple[Any, ...]]) -> Fetched:
    """The rows of a prefetch statement as `Fetched`."""
    parts = [(prefix, None) for prefix in reads.scans] + [(prefix, n) for prefix, n in reads.newest]
    fetched = Fetched(gets=dict.fromkeys(reads.gets))
    items: list[list[tuple[bytes | None, bytes]]] = [[] for _ in parts]
    for part, key, value in rows:
        if part == 0:
            fetched.gets[bytes(key)] = bytes(value)
        elif part == 1:
            fetched.joined[bytes(key)] = bytes(value)
        else:
            items[part - _FIRST_PART].append((None if key is None else bytes(key), bytes(value)))
    scanned: list[bytes] = []
    for (prefix, newest), got in zip(parts, items):
        if newest is None:
            values = [value for _, value in got]
            fetched.scans[prefix] = values
        else:
            pairs = [(key, value) for key, value in reversed(got) if key is not None]
            fetched.newest[prefix] = (newest, pairs)
            values = [value for _, value in pairs]
        scanned += values
    if reads.joined is not None:
        prefix, width, cap = reads.joined
        if len(scanned) <= cap:
            fetched.joined_keys = frozenset(prefix + value[:width] for value in scanned)
        else:
            fetched.joined.clear()
    return fetched


class View:
    """The reads of one `view()` block (see the module docstring): its prefetch, and
    its transaction, begun at the first read the prefetch did not cover."""

    def __init__(self, pool: ConnectionPool[Conn], actor: str, fingerprint: bytes, strict: bool,
                 autocommit: Callable[[str, Callable[[Conn], Any]], Any]) -> None:
        self._pool = pool
        self._actor = actor
        self._fingerprint_key = fingerprint  # the key every batch writes (the journal head)
        self._strict = strict
        self._autocommit = autocommit  # a read outside any transaction (the storage's own)
        self._conn: Conn | None = None
        self._snapshot_taken = False
        self.fetched: Fetched | None = None
        self._seen: bytes | None = None  # the fingerprint the prefetch read
        self._checked = True  # False while the transaction must first check the fingerprint

    def prefetch(self, reads: Reads) -> None:
        """Make `reads` with one statement, unless the block has read already."""
        if self.fetched is not None or self._conn is not None:
            return
        if self._fingerprint_key not in reads.gets:
            reads = Reads((*reads.gets, self._fingerprint_key), reads.scans, reads.newest, reads.joined)
        sql, params = prefetch_statement(self._actor, reads)

        def run(conn: Conn) -> list[tuple[Any, ...]]:
            return conn.execute(sql, params, binary=True).fetchall()
        rows = self.read("prefetch", run) if self._strict else self._autocommit("prefetch", run)
        self.fetched = parse_fetched(reads, rows)
        self._seen = self.fetched.gets[self._fingerprint_key]
        self._checked = self._strict

    def checked_get(self, keys: list[bytes]) -> dict[bytes, bytes] | None:
        """Point reads after an autocommit prefetch, as one more autocommit statement
        that reads the journal head too: the same head, the same state as the
        prefetch's, with no transaction to begin and end (another head: `ViewMoved`).
        None when the view reads in its transaction instead."""
        if self.fetched is None or self._checked or self._conn is not None:
            return None
        asked = [*keys, self._fingerprint_key]

        def run(conn: Conn) -> dict[bytes, bytes]:
            rows = conn.execute(_MULTI_GET, (self._actor, asked), binary=True).fetchall()
            return {bytes(key): bytes(value) for key, value in rows}
        found: dict[bytes, bytes] = self._autocommit(f"multi_get of {len(keys)} keys", run)
        if found.get(self._fingerprint_key) != self._seen:
            raise ViewMoved("a write committed between the view's prefetch and its next read")
        if self._fingerprint_key not in keys:
            found.pop(self._fingerprint_key, None)
        return found

    def read(self, what: str, run: Callable[[Conn], T]) -> T:
        try:
            result = run(self._connection())
        except psycopg.Error as exc:
            if self._snapshot_taken and retryable(exc):
                raise failed(what, exc, "inside a read view, whose snapshot was lost with its connection "
                                        "(or cancelled by the standby's replay)") from None
            if not retryable(exc):
                raise failed(what, exc) from None
            first = exc
        else:
            self._snapshot_taken = True
            return result
        # No read of this view had succeeded, so there was no snapshot yet: a new
        # transaction on a fresh connection loses nothing.
        self.end()
        try:
            result = run(self._connection(live=True))
        except psycopg.Error as exc:
            raise failed(what, exc, f"after a retry on a fresh connection (first: {cause(first)})") from None
        self._snapshot_taken = True
        return result

    def _connection(self, live: bool = False) -> Conn:
        """The view's connection, begun on first use (`live`: one proven alive first);
        after a prefetch made outside it, checked to see what the prefetch saw."""
        if self._conn is None:
            conn = live_connection(self._pool) if live else self._pool.getconn()
            try:
                conn.execute(BEGIN_VIEW, prepare=False)
            except BaseException:
                self._pool.putconn(conn)
                raise
            self._conn = conn
            if not self._checked:
                row = conn.execute(_GET, (self._actor, self._fingerprint_key), binary=True).fetchone()
                if (None if row is None else bytes(row[0])) != self._seen:
                    raise ViewMoved("a write committed between the view's prefetch and its next read")
                self._checked = True
        return self._conn

    def end(self) -> None:
        """End the transaction, if one began: by COMMIT, which ends a read-only one as
        ROLLBACK would, but keeps the driver's prepared statements (psycopg forgets
        them all at a ROLLBACK, then sends DEALLOCATE ALL: a round trip more, and every
        statement prepared again five calls later)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if not conn.closed:
            try:
                conn.execute("COMMIT", prepare=False)
            except psycopg.Error:
                pass  # a broken connection: the pool drops it, the server rolls back
        self._pool.putconn(conn)


def rollback_quietly(conn: Conn) -> None:
    if conn.closed:
        return
    try:
        conn.execute("ROLLBACK", prepare=False)
    except psycopg.Error:
        pass  # a broken connection: the pool drops it, the server rolls back


def lost(exc: psycopg.Error) -> bool:
    """Whether the connection was lost: the client-side failures that carry no
    SQLSTATE (the server never answered; a pool time-out aside), SQLSTATE class 08
    (connection exception) and 57P01-57P03 (the server ended the session)."""
    if isinstance(exc, PoolTimeout):
        return False
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def retryable(exc: psycopg.Error) -> bool:
    """Whether a read may be sent again on a fresh connection: the connection was
    lost, or the server cancelled it and asks for a retry (SQLSTATE class 40: on a
    hot standby, 40001 when replay needed what the read was looking at)."""
    return lost(exc) or (exc.sqlstate or "").startswith("40")


def cause(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:300]
    state = getattr(exc, "sqlstate", None)
    return f"{type(exc).__name__}{f' [{state}]' if state else ''}: {text}"


def failed(what: str, exc: psycopg.Error, note: str = "") -> Exception:
    """A psycopg failure as a cortex error naming what failed and why."""
    if isinstance(exc, (psycopg.errors.DataCorrupted, psycopg.errors.IndexCorrupted)):
        return CorruptRecord(what.encode(), f"PostgreSQL reports damaged data: {cause(exc)}")
    return StoreError(f"PostgreSQL {what} failed: {cause(exc)}{f'; {note}' if note else ''}")


def live_connection(pool: ConnectionPool[Conn]) -> Conn:
    """A pooled connection proven alive by a round trip: after a lost connection the
    pool may still hold others that died with it (a server restart, a dropped
    network path), and a retry must not land on one of those. Broken ones go back
    to the pool, which discards them."""
    for _ in range((pool.max_size or 1) + 1):
        conn = pool.getconn()
        try:
            ConnectionPool.check_connection(conn)
        except psycopg.Error:
            pool.putconn(conn)
            continue
        return conn
    return pool.getconn()
