"""Readers on a PostgreSQL streaming hot standby (docs/postgresql.md, "Standbys"): a
primary and a standby made with `pg_basebackup -R` run on loopback (tests/pgserver.py);
a writer on the primary hands out tokens (`Cortex.last_token`), and a reader on the
standby waits for one with `refresh(until=...)`, then answers as the primary does."""

from __future__ import annotations

import random
import threading
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

import cortex
from cortex import Event, Fact, Frame, Goal, Identity, Write
from cortex.bench.fleet import FleetOptions, actor_name, run_fleet, summary
from pgfixture import start_replicated

pytest_plugins = ["pgfixture"]  # pg_replicated, pg_actor (a no-op once tests/conftest.py lists it)

NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)
GPU = Frame("acquire", "service", "gpu")
VENDOR = Frame("negotiate", "agent", "vendor-x")
WAIT = 60.0  # seconds a test lets the standby take to replay (it takes milliseconds)


def fill(c: cortex.Cortex) -> None:
    c.write(Identity(name="agent-7", roles=["ops"]))
    fact = c.write(Fact(statement="gpu quota is 8", subject="gpu", predicate="quota"), frames=[GPU], importance=3)
    c.update(fact, Fact(statement="gpu quota is 16", subject="gpu", predicate="quota"))
    c.write(Goal(statement="ship the report", status="active"), frames=[GPU])
    c.write_many([Write(Event(kind="payment", outcome="success", counterparty="vendor-x", cost=("usd", 2.5 + i)),
                        frames=[GPU, VENDOR], tags=["spend"]) for i in range(12)])
    c.write_many([Write(Fact(statement=f"vendor {i} quoted {i} usd", subject=f"v{i}", predicate="quote"),
                        frames=[GPU], tags=["quotes"]) for i in range(40)])


def answers(c: cortex.Cortex) -> tuple[object, ...]:
    """What a reader relies on, as comparable values."""
    bundles = tuple(c.context(verb=verb, objects=objects, now=NOW).to_json()
                    for verb, objects in (("acquire", {"service": "gpu"}), ("negotiate", {"agent": "vendor-x"}), (None, {})))
    found = tuple(m.uri for m in c.find(type="Fact", limit=100))
    resolved = tuple(c.resolve(uri).data for uri in found)
    return c.root(), bundles, found, resolved, tuple(m.uri for m in c.memories())


def test_reads_on_the_standby_agree_with_the_primary(pg_replicated, pg_actor) -> None:
    primary, standby = pg_replicated.primary.dsn, pg_replicated.standby.dsn
    with cortex.open(primary, actor=pg_actor) as w:
        fill(w)
        token = w.last_token
    with _standby_reader(standby, pg_actor, token) as r, cortex.open(primary, actor=pg_actor, mode="r") as p:
        assert r.last_token == token
        assert answers(r) == answers(p)
        assert r.verify() == []
        assert r.replica_lag() == 0.0 and p.replica_lag() == 0.0


def _standby_reader(dsn: str, actor: str, token: str) -> cortex.Cortex:
    """A reader on the standby once it holds `token` (the store may not be there yet
    when the standby has not replayed its creation: opening is tried again)."""
    deadline = datetime.now(timezone.utc) + timedelta(seconds=WAIT)
    while True:
        try:
            r = cortex.open(dsn, actor=actor, mode="r")
            break
        except cortex.NotFound:
            if datetime.now(timezone.utc) > deadline:
                raise
    r.refresh(until=token, timeout=WAIT)
    return r


def replay(standby_dsn: str, pause: bool) -> None:
    with psycopg.connect(standby_dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()" if pause else "SELECT pg_wal_replay_resume()")


def test_refresh_until_waits_for_the_standby_and_times_out_cleanly(pg_replicated, pg_actor) -> None:
    primary, standby = pg_replicated.primary.dsn, pg_replicated.standby.dsn
    w = cortex.open(primary, actor=pg_actor)
    try:
        fill(w)
        r = _standby_reader(standby, pg_actor, w.last_token)
        with r:
            before = answers(r)
            replay(standby, pause=True)
            try:
                uri = w.write(Fact(statement="gpu quota is 32", subject="gpu", predicate="quota"), frames=[GPU])
                token = w.last_token
                with pytest.raises(cortex.NotReplayed, match=r"holds journal entry \d+, not yet \d+") as raised:
                    r.refresh(until=token, timeout=0.2)
                assert token.split(".")[0] in str(raised.value)
                assert answers(r) == before  # still answers from what it has replayed
                with pytest.raises(cortex.NotFound):
                    r.resolve(uri)
            finally:
                replay(standby, pause=False)
            r.refresh(until=token, timeout=WAIT)
            assert r.resolve(uri).data.statement == "gpu quota is 32"
            assert r.last_token == token
            r.refresh(until=token, timeout=0)  # a position already held returns at once
    finally:
        w.close()


@pytest.mark.parametrize("until, field", [("42", "until"), ("x.0123456789abcdef", "until"), (42, "until"),
                                          ("1.0123456789abcdeg", "until")])
def test_refresh_until_refuses_what_is_not_a_token(pg_replicated, pg_actor, until, field) -> None:
    with cortex.open(pg_replicated.primary.dsn, actor=pg_actor) as w:
        w.write(Fact(statement="x", subject="s", predicate="p"))
        with pytest.raises(cortex.ValidationError) as raised:
            w.refresh(until=until, timeout=1)
        assert raised.value.field == field
        for timeout in (-1, float("nan"), "1", True):
            with pytest.raises(cortex.ValidationError, match="timeout"):
                w.refresh(until=w.last_token, timeout=timeout)


def test_a_token_of_another_history_is_refused(pg_replicated, pg_actor) -> None:
    with cortex.open(pg_replicated.primary.dsn, actor=pg_actor) as w:
        w.write(Fact(statement="x", subject="s", predicate="p"))
        seq, root = w.last_token.split(".")
        other = f"{seq}.{'0' * 16 if root != '0' * 16 else '1' * 16}"
        with pytest.raises(cortex.StoreError, match="another write at journal entry"):
            w.refresh(until=other, timeout=1)


def test_a_follower_on_rocksdb_waits_for_a_token_too(tmp_path) -> None:
    with cortex.open(tmp_path / "s", actor="a") as w:
        w.write(Fact(statement="x", subject="s", predicate="p"))
        with cortex.open(tmp_path / "s", actor="a", mode="r") as r:
            uri = w.write(Fact(statement="y", subject="s", predicate="p"))
            r.refresh(until=w.last_token, timeout=WAIT)
            assert r.resolve(uri).data.statement == "y"
            assert r.last_token == w.last_token and r.replica_lag() is None


def seq_of(token: str) -> int:
    return int(token.split(".")[0])


def test_a_killed_primary_loses_no_acknowledged_write_and_the_standby_keeps_answering(pg_actor) -> None:
    pair = start_replicated()
    try:
        acknowledged: list[tuple[str, str]] = []  # (uri, token) of every write() that returned
        failures: list[BaseException] = []
        w = cortex.open(pair.primary.dsn, actor=pg_actor)
        started = threading.Event()

        def writing() -> None:
            rng = random.Random(5)
            try:
                for i in range(100_000):
                    uri = w.write(Fact(statement=f"reading {i} is {rng.randint(0, 99)}", subject=f"s{i % 7}",
                                       predicate="reading"), frames=[GPU])
                    acknowledged.append((uri, w.last_token))
                    if i == 20:
                        started.set()
            except cortex.CortexError as exc:
                failures.append(exc)
            finally:
                started.set()
        writer = threading.Thread(target=writing)
        writer.start()
        assert started.wait(WAIT)
        r = _standby_reader(pair.standby.dsn, pg_actor, acknowledged[0][1])
        pair.primary.kill()
        writer.join(WAIT)
        assert not writer.is_alive() and failures, "the writer noticed its server was gone"
        w.close()
        # The standby keeps answering, from a state the primary acknowledged: every
        # write acknowledged at or before its position, and nothing the writer did not
        # write (but the one write whose acknowledgement the kill may have cut).
        with r:
            held = r.root()
            seq = seq_of(r.last_token)
            assert seq >= seq_of(acknowledged[0][1])
            shown = {m.uri for m in r.find(type="Fact", limit=200_000)}
            assert {uri for uri, token in acknowledged if seq_of(token) <= seq} <= shown
            assert len(shown - {uri for uri, _ in acknowledged}) <= 1
            assert r.context(verb="acquire", objects={"service": "gpu"}, now=NOW).candidates > 0
            assert r.verify() == []
            assert r.root() == held
        # Back up, the primary has every acknowledged write, and the standby catches up.
        pair.primary.restart()
        with cortex.open(pair.primary.dsn, actor=pg_actor, mode="r") as p:
            for uri, _ in acknowledged:
                p.resolve(uri)
            assert p.verify() == []
        with cortex.open(pair.standby.dsn, actor=pg_actor, mode="r") as s:
            s.refresh(until=acknowledged[-1][1], timeout=WAIT)
            assert {uri for uri, _ in acknowledged} <= {m.uri for m in s.find(type="Fact", limit=200_000)}
    finally:
        pair.stop()


def test_the_fleet_figure_reads_from_a_standby_once_it_replayed_the_load(pg_replicated) -> None:
    primary, standby = pg_replicated.primary.dsn, pg_replicated.standby.dsn
    with psycopg.connect(primary, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS fleet_standby")
        conn.execute("CREATE DATABASE fleet_standby")
    primary, standby = (dsn.rsplit("/", 1)[0] + "/fleet_standby" for dsn in (primary, standby))
    options = FleetOptions(actors=3, memories=30, workers=(1,), seconds=0.3)
    report = run_fleet(primary, options, progress=False, read_dsn=standby)
    assert report["read_from"] == standby.split("@")[-1] and report["replay_wait_s"] >= 0
    assert report["runs"][0]["contexts"] > 0
    for index in range(3):  # the standby holds every actor's store, as the primary does
        with cortex.open(primary, actor=actor_name(index), mode="r") as p, \
                cortex.open(standby, actor=actor_name(index), mode="r") as s:
            assert s.root() == p.root()
    assert "a standby" in summary(report)
