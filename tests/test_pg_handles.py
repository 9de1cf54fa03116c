"""Handles that cost nothing to open on PostgreSQL (docs/postgresql.md, "Pools"): every
handle of a process on one DSN shares one connection pool, a reader of an actor the
process knows opens without sending a statement, and a writer's open is the lease's
one statement. Statements are counted in the server's own log."""

from __future__ import annotations

import multiprocessing
import uuid

import psycopg
import pytest

import cortex
from cortex import Fact, Frame
from cortex.storage import pgpool

pytest_plugins = ["pgfixture"]  # pg_dsn, pg_actor, pg_server (a no-op once tests/conftest.py lists it)

GPU = Frame("acquire", "service", "gpu")


def logged(dsn: str) -> tuple[str, str]:
    """(a DSN whose statements the server logs under a name of their own, the name)."""
    name = "count-" + uuid.uuid4().hex[:12]
    return f"{dsn}?application_name={name}&options=-c%20log_statement%3Dall", name


def fill(dsn: str, actor: str) -> None:
    with cortex.open(dsn, actor=actor) as c:
        c.write(Fact(statement="gpu quota is 8", subject="gpu", predicate="quota"), frames=[GPU])


def test_a_reader_of_a_known_actor_opens_without_a_statement(pg_dsn, pg_actor, pg_server) -> None:
    dsn, name = logged(pg_dsn)
    fill(dsn, pg_actor)
    with cortex.open(dsn, actor=pg_actor, mode="r") as c:
        assert c.find(type="Fact", limit=10)[0].data.statement == "gpu quota is 8"
    before = len(pg_server.statements(name))
    for _ in range(5):
        with cortex.open(dsn, actor=pg_actor, mode="r") as c:
            pass
    assert pg_server.statements(name)[before:] == []


def test_a_reader_of_an_unknown_actor_checks_with_one_statement(pg_dsn, pg_actor, pg_server) -> None:
    fill(pg_dsn, pg_actor)
    dsn, name = logged(pg_dsn)
    with cortex.open(dsn, actor=pg_actor, mode="r"):
        assert len(pg_server.statements(name)) == 1
    with pytest.raises(cortex.NotFound, match="no cortex store for actor"):
        cortex.open(dsn, actor=pg_actor + "-missing", mode="r")
    assert len(pg_server.statements(name)) == 2


def test_a_writer_opens_with_the_lease_statement_alone(pg_dsn, pg_actor, pg_server) -> None:
    fill(pg_dsn, pg_actor)
    dsn, name = logged(pg_dsn)
    cortex.open(dsn, actor=pg_actor + "-other").close()  # the process has checked the tables
    before = len(pg_server.statements(name))
    c = cortex.open(dsn, actor=pg_actor)
    try:
        opened = pg_server.statements(name)[before:]
        assert len(opened) == 1 and "INSERT INTO cortex_lease" in opened[0]
        # What the open read is what the engine needs: the next write goes on from it.
        uri = c.write(Fact(statement="gpu quota is 16", subject="gpu", predicate="quota"), frames=[GPU])
        assert c.resolve(uri).data.statement == "gpu quota is 16"
    finally:
        c.close()
    with cortex.open(pg_dsn, actor=pg_actor, mode="r") as r:
        assert sorted(m.data.statement for m in r.find(type="Fact", limit=10)) == ["gpu quota is 16", "gpu quota is 8"]
        assert r.verify() == []


def server_connections(dsn: str, name: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)).fetchone()
    assert row is not None
    return int(row[0])


def test_handles_on_one_dsn_share_one_pool(pg_dsn, pg_actor) -> None:
    dsn, name = logged(pg_dsn)
    actors = [f"{pg_actor}-{i}" for i in range(30)]
    for actor in actors[:3]:
        fill(dsn, actor)
    handles = [cortex.open(dsn, actor=actor) for actor in actors[3:15]]
    handles += [cortex.open(dsn, actor=actor, mode="r") for actor in actors[:3] for _ in range(6)]
    try:
        for c in handles:
            c.context(verb="acquire", objects={"service": "gpu"})
        assert server_connections(pg_dsn, name) <= pgpool.POOL_SIZE
    finally:
        for c in handles:
            c.close()
    # Closed, the pool stays for the next handle: opening one connects nothing new.
    open_now = server_connections(pg_dsn, name)
    with cortex.open(dsn, actor=actors[0], mode="r") as c:
        c.context(verb="acquire", objects={"service": "gpu"})
        assert server_connections(pg_dsn, name) == open_now


def _child(dsn: str, actor: str, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    with cortex.open(dsn, actor=actor, mode="r") as c:
        out.put([m.data.statement for m in c.find(type="Fact", limit=10)])


def test_a_forked_child_opens_stores_on_a_pool_of_its_own(pg_dsn, pg_actor) -> None:
    fill(pg_dsn, pg_actor)
    with cortex.open(pg_dsn, actor=pg_actor, mode="r") as parent:
        out: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()  # type: ignore[type-arg]
        child = multiprocessing.get_context("fork").Process(target=_child, args=(pg_dsn, pg_actor, out))
        child.start()
        assert out.get(timeout=60) == ["gpu quota is 8"]
        child.join(60)
        assert child.exitcode == 0
        assert [m.data.statement for m in parent.find(type="Fact", limit=10)] == ["gpu quota is 8"]  # the parent's pool still works
