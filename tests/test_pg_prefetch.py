"""A call's reads in one statement on PostgreSQL (docs/postgresql.md, "Round trips"):
`Storage.prefetch` changes how many statements a view sends, never what its reads
return; a write that lands between the prefetch and a read it did not cover makes
the view start again; and `context()` on a store whose candidates are few is one
statement, counted in the server's log."""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cortex
from cortex import Event, Fact, Frame, Identity, Write
from cortex.index import prefetch
from cortex.records import META_JOURNAL
from cortex.storage import Reads, ViewMoved
from cortex.storage.postgres import open_postgres

pytest_plugins = ["pgfixture"]  # pg_dsn, pg_actor, pg_server (a no-op once tests/conftest.py lists it)

GPU = Frame("acquire", "service", "gpu")
KEYS = st.binary(min_size=1, max_size=3).map(lambda b: b"p" + b)


def logged(dsn: str) -> tuple[str, str]:
    name = "count-" + uuid.uuid4().hex[:12]
    return f"{dsn}?application_name={name}&options=-c%20log_statement%3Dall", name


def reads_of(storage, gets, scans, newest, head_width) -> list[object]:
    """Everything a view reads, in order."""
    out: list[object] = [storage.get(key) for key in gets]
    out += [storage.scan_values(prefix) for prefix in scans]
    for prefix, n in newest:
        items = storage.scan_items_backward(prefix)
        out.append([next(items, None) for _ in range(n + 3)])  # past the prefetched page too
    named = sorted({b"h" + value[:head_width] for prefix in scans for value in storage.scan_values(prefix)})
    out.append(storage.multi_get(named + [b"h-none"]))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.dictionaries(KEYS, st.binary(min_size=0, max_size=4), max_size=40),
       heads=st.dictionaries(st.binary(min_size=1, max_size=2).map(lambda b: b"h" + b), st.binary(max_size=3), max_size=10),
       gets=st.lists(KEYS, max_size=4), scans=st.lists(st.binary(max_size=2).map(lambda b: b"p" + b), max_size=3),
       newest=st.lists(st.tuples(st.binary(max_size=2).map(lambda b: b"p" + b), st.integers(1, 5)), max_size=3),
       cap=st.integers(0, 50))
def test_a_prefetched_view_reads_what_a_plain_view_reads(pg_dsn, pg_actor, rows, heads, gets, scans, newest, cap) -> None:
    actor = f"{pg_actor}-{uuid.uuid4().hex[:8]}"
    s = open_postgres(pg_dsn, actor=actor, read_only=False, sync=False)
    try:
        s.write({**rows, **heads, META_JOURNAL: b"j1"})
        width = 2
        with s.view():
            plain = reads_of(s, gets, scans, newest, width)
        with s.view():
            s.prefetch(Reads(gets=tuple(gets), scans=tuple(scans), newest=tuple(newest), joined=(b"h", width, cap)))
            fetched = reads_of(s, gets, scans, newest, width)
        assert fetched == plain
    finally:
        s.close()


def test_a_write_between_the_prefetch_and_a_later_read_moves_the_view(pg_dsn, pg_actor) -> None:
    w = open_postgres(pg_dsn, actor=pg_actor, read_only=False, sync=False)
    w.write({b"a": b"1", b"b": b"1", META_JOURNAL: b"j1"})
    r = open_postgres(pg_dsn, actor=pg_actor, read_only=True, sync=False)
    try:
        with pytest.raises(ViewMoved):
            with r.view():
                r.prefetch(Reads(gets=(b"a",)))
                assert r.get(b"a") == b"1"
                w.write({b"a": b"2", b"b": b"2", META_JOURNAL: b"j2"})
                r.get(b"b")  # not prefetched: the view finds the store moved
        # The next view of the thread fetches inside its transaction: it cannot move.
        with r.view():
            r.prefetch(Reads(gets=(b"a",)))
            w.write({b"a": b"3", b"b": b"3", META_JOURNAL: b"j3"})
            assert (r.get(b"a"), r.get(b"b")) == (b"2", b"2")
        # Without a write in between, the later read joins the prefetch's state.
        with r.view():
            r.prefetch(Reads(gets=(b"a",)))
            assert (r.get(b"a"), r.get(b"b")) == (b"3", b"3")
    finally:
        r.close()
        w.close()


def fill(c: cortex.Cortex, facts: int) -> None:
    c.write(Identity(name="agent-7", roles=["ops"]))
    c.write_many([Write(Event(kind="payment", outcome="success", counterparty="v", cost=("usd", 1.0 + i)), frames=[GPU])
                  for i in range(5)])
    c.write_many([Write(Fact(statement=f"vendor {i} quoted {i} usd", subject=f"v{i}", predicate="quote"), frames=[GPU])
                  for i in range(facts)])


def test_context_on_a_few_candidates_is_one_statement(pg_dsn, pg_actor, pg_server) -> None:
    dsn, name = logged(pg_dsn)
    with cortex.open(dsn, actor=pg_actor) as c:
        fill(c, 30)
    with cortex.open(dsn, actor=pg_actor, mode="r") as r:
        r.context(verb="acquire", objects={"service": "gpu"})
        before = len(pg_server.statements(name))
        bundle = r.context(verb="acquire", objects={"service": "gpu"})
        sent = pg_server.statements(name)[before:]
        assert len(sent) == 1 and "WITH s AS" in sent[0]
        assert bundle.candidates == 36 and len(bundle.memories()) == 36


def test_context_on_a_hot_object_reads_the_survivors_in_the_same_view(pg_dsn, pg_actor, pg_server, tmp_path) -> None:
    dsn, name = logged(pg_dsn)
    now = datetime(2025, 6, 1, tzinfo=timezone.utc)
    stores = (cortex.open(dsn, actor=pg_actor, clock=lambda: now, entropy=random.Random(3).randbytes),
              cortex.open(tmp_path / "r", actor=pg_actor, clock=lambda: now, entropy=random.Random(3).randbytes))
    for store in stores:
        with store:
            fill(store, prefetch.JOIN_AT_MOST + 50)
    with cortex.open(dsn, actor=pg_actor, mode="r") as r, cortex.open(tmp_path / "r", actor=pg_actor, mode="r") as local:
        before = len(pg_server.statements(name))
        bundle = r.context(verb="acquire", objects={"service": "gpu"}, budget_tokens=500, now=now)
        sent = pg_server.statements(name)[before:]
        # the prefetch; then the survivors' heads with the journal head, to check it
        assert len(sent) == 2 and "WITH s AS" in sent[0] and "key = ANY" in sent[1]
        assert bundle.candidates == prefetch.JOIN_AT_MOST + 56
        assert 0 < len(bundle.memories()) < bundle.candidates
        assert bundle.to_json() == local.context(verb="acquire", objects={"service": "gpu"}, budget_tokens=500,
                                                 now=now).to_json()

