"""The two backends hold the same bytes (docs/postgresql.md: "Keys and values are the same bytes
on every backend"): a RocksDB store and a PostgreSQL store given the same calls, the
same clock and the same entropy hold the same keys and values and the same `root()`,
and answer reads the same."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cortex
from cortex import Constraint, Event, Fact, Frame, Goal, Identity, Preference, Write
from cortex.records import META_STORE_ID

pytest_plugins = ["pgfixture"]  # pg_dsn, pg_actor (a no-op once tests/conftest.py lists it)

T0 = datetime(2025, 3, 1, tzinfo=timezone.utc)
GPU = Frame("acquire", "service", "gpu")
VENDOR = Frame("negotiate", "agent", "vendor-x")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def open_pair(tmp_path, dsn: str, actor: str) -> tuple[cortex.Cortex, cortex.Cortex, Clock]:
    """A RocksDB store and a PostgreSQL store of `actor` on one clock, with the same ids."""
    clock = Clock()
    rocks = cortex.open(tmp_path / "rocks", actor=actor, clock=clock, entropy=random.Random(3).randbytes)
    pg = cortex.open(dsn, actor=actor, clock=clock, entropy=random.Random(3).randbytes)
    return rocks, pg, clock


def same_calls(stores: tuple[cortex.Cortex, ...], clock: Clock) -> None:
    """A bit of every write: versions, head changes, tombstones, feedback, a batch."""
    def each(call):
        results = {call(s) for s in stores}
        assert len(results) == 1, results  # the same URI from both
        return results.pop()

    me = each(lambda s: s.write(Identity(name="agent-7", roles=["ops"])))
    fact = each(lambda s: s.write(Fact(statement="gpu quota is 8", subject="gpu", predicate="quota"),
                                  frames=[GPU], tags=["infra"], importance=4))
    clock.now += timedelta(minutes=5)
    each(lambda s: s.update(fact, Fact(statement="gpu quota is 16", subject="gpu", predicate="quota")))
    pay = each(lambda s: s.write(Event(kind="payment", outcome="success", counterparty="vendor-x", cost=("usd", 2.5)),
                                 frames=[GPU, VENDOR], tags=["spend"]))
    goal = each(lambda s: s.write(Goal(statement="ship the report", status="active"), frames=[GPU]))
    clock.now += timedelta(hours=1)
    each(lambda s: s.update(goal, Goal(statement="ship the report", status="completed")))
    tone = each(lambda s: s.write(Preference(topic="tone", polarity="prefer", strength=0.8), tags=["style"]))
    each(lambda s: s.update_head(tone, tags=["style", "voice"], frames=[VENDOR], importance=7))
    each(lambda s: s.write(Constraint(statement="never pay above 5 usd", strength="hard", polarity="dont",
                                      source="user_declared"), frames=[GPU]))
    clock.now += timedelta(days=1)
    batch = each(lambda s: tuple(s.write_many([Write(Fact(statement=f"vendor {i} quoted {i} usd", subject=f"v{i}",
                                                          predicate="quote"), frames=[GPU], tags=["quotes"])
                                               for i in range(20)])))
    each(lambda s: s.attest([fact, pay, batch[3]], "success"))
    each(lambda s: s.attest([batch[4]], "failure", cortex.FACTUAL_ERROR))
    each(lambda s: s.tombstone(batch[5], "withdrawn"))
    each(lambda s: s.tombstone(me, "renamed"))


def same_records(a: cortex.Cortex, b: cortex.Cortex) -> bool:
    """The two stores hold the same records, except their ids: two stores, two ids."""
    items = [dict(c._engine.storage.all_items()) for c in (a, b)]
    ids = [stored.pop(META_STORE_ID) for stored in items]
    assert len(ids[0]) == len(ids[1]) == 16 and ids[0] != ids[1]
    return items[0] == items[1]


def test_same_calls_give_the_same_bytes_and_root(tmp_path, pg_dsn, pg_actor) -> None:
    rocks, pg, clock = open_pair(tmp_path, pg_dsn, pg_actor)
    try:
        same_calls((rocks, pg), clock)
        assert same_records(rocks, pg)
        assert rocks.root() == pg.root() != "0" * 64
        ask = {"verb": "acquire", "objects": {"service": "gpu"}, "budget_tokens": 400, "now": clock.now}
        assert rocks.context(**ask).to_json() == pg.context(**ask).to_json()
        assert [m.to_dict() for m in rocks.find(tags=["quotes"], limit=50)] == \
               [m.to_dict() for m in pg.find(tags=["quotes"], limit=50)]
        assert rocks.stats() | {"path": ""} == pg.stats() | {"path": ""}
        assert rocks.verify() == pg.verify() == []
    finally:
        rocks.close()
        pg.close()


_ops = st.lists(st.tuples(st.sampled_from(["write", "update", "head", "tombstone", "attest", "batch"]),
                          st.integers(0, 1000), st.integers(0, 300)), min_size=1, max_size=25)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops)
def test_random_calls_give_the_same_bytes_and_root(tmp_path_factory, pg_dsn, pg_actor, ops) -> None:
    example = tmp_path_factory.mktemp("eq")
    actor = f"{pg_actor}/{example.name}"
    rocks, pg, clock = open_pair(example, pg_dsn, actor)
    try:
        uris: list[str] = []
        for op, pick, seconds in ops:
            clock.now += timedelta(seconds=seconds)
            live = [u for u in uris if not rocks.resolve(u).tombstoned]
            target = live[pick % len(live)] if live else None
            answers = []
            for s in (rocks, pg):
                if op == "write" or target is None:
                    got = [s.write(Fact(statement=f"s{pick}", subject="x", predicate="p"), frames=[GPU], importance=pick % 11)]
                elif op == "batch":
                    got = s.write_many([Write(Fact(statement=f"b{pick}.{i}", subject="x", predicate="p"), tags=[f"t{i % 3}"])
                                        for i in range(pick % 7 + 1)])
                elif op == "update":
                    got = [s.update(target, Fact(statement=f"u{pick}", subject="x", predicate="p"))]
                elif op == "head":
                    s.update_head(target, importance=pick % 11, tags=[f"t{pick % 3}"])
                    got = []
                elif op == "tombstone":
                    s.tombstone(target, f"r{pick}")
                    got = []
                else:
                    s.attest([target], "success" if pick % 2 else "failure", cortex.WRONG_ASSUMPTION)
                    got = []
                answers.append(got)
            assert answers[0] == answers[1]
            uris += [u for u in answers[0] if u.endswith("#1")]
        assert same_records(rocks, pg)
        assert rocks.root() == pg.root()
    finally:
        rocks.close()
        pg.close()
