"""`CortexStore` (cortex.integrations.langgraph), a LangGraph `BaseStore` over cortex.

The differential tests run the same random batches against `CortexStore`, LangGraph's
`InMemoryStore` and its `SqliteStore` (sync) / `AsyncSqliteStore` (async) and compare:
gets exactly; searches by their full match sets, with `CortexStore`'s page checked
against its documented order (newest `updated_at` first, ties by namespace, key);
namespace listings exactly against the SQL store (`InMemoryStore` also lists emptied
namespaces). The other tests pin the documented choices: value round trips, sizes,
namespace rules, TTL, batch semantics, visibility in `context()`, an agent's graph.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")
sqlite_store = pytest.importorskip("langgraph.store.sqlite")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from langgraph.store.base import (  # noqa: E402
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore  # noqa: E402
from langgraph.store.sqlite import SqliteStore  # noqa: E402
from langgraph.store.sqlite.aio import AsyncSqliteStore  # noqa: E402

import cortex  # noqa: E402
from cortex.integrations.langgraph import (  # noqa: E402
    MAX_JSON_BYTES,
    STORE_TAG,
    CortexStore,
    item_tag,
    namespace_frame,
    namespace_path,
    namespace_ref,
    namespace_tag,
)

from integration_helpers import ACTOR, TickClock, open_store  # noqa: E402

# ---------------------------------------------------------------------------
# Random batches

NAMESPACES = [("a",), ("a", "b"), ("a", "c"), ("b",), ("a", "b", "c"), ("b", "a")]
KEYS = ["k1", "k2", "k3"]
PREFIXES = [(), ("a",), ("a", "b"), ("b",), ("c",), ("a", "b", "c")]
OPERATORS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]

json_leaf = (st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1)
             | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                          max_leaves=6)
number = st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False)
values = st.fixed_dictionaries(
    {"n": number, "s": st.sampled_from("xyz"), "t": st.lists(st.sampled_from("pq"), max_size=2),
     "m": st.fixed_dictionaries({"k": st.sampled_from("xy")})},
    optional={"extra": json_value},
)
compare_n = st.builds(lambda op, v: {"n": {op: v}}, st.sampled_from(OPERATORS), number)
equal_s = st.builds(lambda s: {"s": s}, st.sampled_from("xyz"))
filters = st.one_of(
    st.none(),
    equal_s,
    st.builds(lambda op, s: {"s": {op: s}}, st.sampled_from(["$eq", "$ne"]), st.sampled_from("xyz")),
    compare_n,
    st.builds(lambda t: {"t": t}, st.lists(st.sampled_from("pq"), max_size=2)),
    st.builds(lambda k: {"m": {"k": k}}, st.sampled_from("xy")),  # a nested dict: SqliteStore cannot
    st.builds(lambda a, b: {**a, **b}, compare_n, equal_s),
)
namespace = st.sampled_from(NAMESPACES)
key = st.sampled_from(KEYS)
conditions = st.tuples(
    st.none() | st.sampled_from([("a",), ("a", "*"), ("b",), ("*", "b")]).map(lambda p: MatchCondition("prefix", p)),
    st.none() | st.sampled_from([("b",), ("c",), ("*", "c"), ("a",)]).map(lambda p: MatchCondition("suffix", p)),
).map(lambda pair: tuple(c for c in pair if c is not None))
ops = st.one_of(
    st.builds(lambda ns, k, v: PutOp(ns, k, v), namespace, key, values),
    st.builds(lambda ns, k, v: PutOp(ns, k, v), namespace, key, values),
    st.builds(lambda ns, k: PutOp(ns, k, None), namespace, key),
    st.builds(lambda ns, k: GetOp(ns, k), namespace, key),
    st.builds(lambda p, f, limit, offset: SearchOp(p, f, limit, offset), st.sampled_from(PREFIXES), filters,
              st.integers(1, 6), st.integers(0, 3)),
    st.builds(lambda c, depth, limit, offset: ListNamespacesOp(c, depth, limit, offset), conditions,
              st.none() | st.integers(1, 3), st.integers(1, 8), st.integers(0, 3)),
)
batches = st.lists(st.lists(ops, min_size=1, max_size=5), min_size=1, max_size=6)


def exact(value: Any) -> str:
    """A value's JSON with its key order and number types, for exact comparisons (1 != 1.0)."""
    return json.dumps(value)


def item_of(item: Item | None) -> tuple[tuple[str, ...], str, str] | None:
    return None if item is None else (tuple(item.namespace), item.key, exact(item.value))


def sql_can(op: Any) -> bool:
    """Whether SqliteStore takes this op (it has no nested-dict filters)."""
    return not (isinstance(op, SearchOp) and op.filter and any(
        isinstance(v, dict) and not any(k.startswith("$") for k in v) for v in op.filter.values()))


def widened(op: Any) -> Any:
    """A search op that returns every match (the reference stores' full match sets)."""
    return SearchOp(op.namespace_prefix, op.filter, 10**6, 0) if isinstance(op, SearchOp) else op


class Differential:
    """Runs batches on CortexStore and the two references, and checks the results."""

    def __init__(self) -> None:
        self.updated: dict[tuple[tuple[str, ...], str], int] = {}  # live key -> batch of its last put

    def plan(self, batch: list[Any]) -> tuple[list[Any], list[Any]]:
        reference = [widened(op) for op in batch]
        sql = [op if sql_can(op) else SearchOp(op.namespace_prefix, None, 1, 0) for op in reference]
        return reference, sql

    def check(self, number: int, batch: list[Any], mine: list[Any], memory: list[Any], sql: list[Any]) -> None:
        assert len(mine) == len(memory) == len(sql) == len(batch)
        for op, got, ref, sql_got in zip(batch, mine, memory, sql):
            if isinstance(op, PutOp):
                assert got is None and ref is None and sql_got is None
            elif isinstance(op, GetOp):
                assert item_of(got) == item_of(ref) == item_of(sql_got), op
            elif isinstance(op, SearchOp):
                matches = [item_of(i) for i in ref]
                if sql_can(op):
                    assert sorted(item_of(i) for i in sql_got) == sorted(matches), op  # type: ignore[type-var]
                ordered = sorted(matches, key=lambda m: (-self.updated[(m[0], m[1])], m[0], m[1]))  # type: ignore[index]
                assert [item_of(i) for i in got] == ordered[op.offset: op.offset + op.limit], op
                assert all(i.score is None for i in got)
            else:
                assert got == sql_got, op
        for op in batch:
            if isinstance(op, PutOp):
                if op.value is None:
                    self.updated.pop((op.namespace, op.key), None)
                else:
                    self.updated[(op.namespace, op.key)] = number


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches)
def test_differential_sync(sequence):
    with tempfile.TemporaryDirectory() as tmp, SqliteStore.from_conn_string(":memory:") as sql:
        sql.setup()
        memory = InMemoryStore()
        with CortexStore(str(Path(tmp) / "s"), actor=ACTOR, clock=TickClock()) as mine:
            diff = Differential()
            for number, batch in enumerate(sequence):
                reference, sql_ops = diff.plan(batch)
                diff.check(number, batch, mine.batch(batch), memory.batch(reference), sql.batch(sql_ops))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches)
def test_differential_async(sequence):
    async def main(tmp: str) -> None:
        async with AsyncSqliteStore.from_conn_string(":memory:") as sql:
            await sql.setup()
            memory = InMemoryStore()
            with CortexStore(str(Path(tmp) / "s"), actor=ACTOR, clock=TickClock()) as mine:
                diff = Differential()
                for number, batch in enumerate(sequence):
                    reference, sql_ops = diff.plan(batch)
                    diff.check(number, batch, await mine.abatch(batch), await memory.abatch(reference), await sql.abatch(sql_ops))

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(tmp))


# ---------------------------------------------------------------------------
# Values, sizes, namespaces


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.text(max_size=6), st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)))
def test_values_round_trip_exactly_and_survive_a_reopen(value):
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "s")
        with CortexStore(path, actor=ACTOR) as store:
            store.put(("values",), "v", value)
            assert exact(store.get(("values",), "v").value) == exact(value)
        with CortexStore(path, actor=ACTOR) as store:
            assert exact(store.get(("values",), "v").value) == exact(value)
            assert [exact(i.value) for i in store.search(("values",))] == [exact(value)]


def test_values_that_are_not_json_are_refused_naming_their_path(tmp_path):
    with CortexStore(str(tmp_path / "s"), actor=ACTOR) as store:
        for value, field in [
            ({"a": (1, 2)}, 'value["a"]'),
            ({"a": [1, {"b": float("nan")}]}, 'value["a"][1]["b"]'),
            ({"when": __import__("datetime").date(2025, 1, 1)}, 'value["when"]'),
            ({"a": {1: "x"}}, 'value["a"]'),
            ({"s": "\ud800"}, 'value["s"]'),
            ({"big": "x" * MAX_JSON_BYTES}, "value"),
            ([1, 2], "value"),
        ]:
            with pytest.raises(cortex.ValidationError) as info:
                store.put(("ns",), "k", value)  # type: ignore[arg-type]
            assert info.value.field == field
        deep: dict[str, Any] = {}
        for _ in range(300):
            deep = {"d": deep}
        with pytest.raises(cortex.ValidationError, match="nests deeper"):
            store.put(("ns",), "k", deep)
        # The largest value that fits goes in and comes back.
        fits = {"big": "é" * ((MAX_JSON_BYTES - len('{"big":""}')) // 2)}
        store.put(("ns",), "k", fits)
        assert store.get(("ns",), "k").value == fits
        assert store.cortex.stats()["memories"] == 1


def test_long_and_odd_namespaces_and_keys(tmp_path):
    with CortexStore(str(tmp_path / "s"), actor=ACTOR) as store:
        long_label = "ü" * 300  # 600 bytes: the frame ref is cut and hashed
        deep = tuple(f"l{i}" for i in range(20))  # deeper than the tagged depth
        odd = ("a/b", "100%", "x y")
        cases = [((long_label,), "k"), (deep, "k"), (odd, "k"), (("ns",), ""), (("ns",), "  "), (("ns",), "k" * 5000),
                 (("ns",), "ключ/with.dots")]
        for i, (ns, k) in enumerate(cases):
            store.put(ns, k, {"i": i})
        for i, (ns, k) in enumerate(cases):
            assert store.get(ns, k).value == {"i": i}
            assert [(it.namespace, it.key) for it in store.search(ns)] == [(ns, k)] if ns != ("ns",) else True
        assert {it.key for it in store.search(("ns",))} == {"", "  ", "k" * 5000, "ключ/with.dots"}
        assert [it.value for it in store.search(deep[:17])] == [{"i": 1}]
        assert store.search(deep[:17] + ("other",)) == []
        assert store.search(("a",)) == []  # ("a/b", ...) is one label, not a prefix ("a",)
        assert len(namespace_ref((long_label,)).encode()) <= 256
        assert namespace_path(odd) == "a%2Fb/100%25/x y"
        assert store.list_namespaces(prefix=("l0", "l1"), max_depth=3) == [("l0", "l1", "l2")]
        # Too large: a clear error naming what is too large.
        with pytest.raises(cortex.ValidationError) as info:
            store.put(("x" * 17000,), "k", {})
        assert info.value.field == "namespace"
        with pytest.raises(cortex.ValidationError) as info:
            store.put(("ns",), "k" * 17000, {})
        assert info.value.field == "key"


def test_namespace_rules_are_langgraphs_also_for_raw_ops(tmp_path):
    with CortexStore(str(tmp_path / "s"), actor=ACTOR) as store:
        for bad in [("a.b",), ("",), ("a", 3)]:
            with pytest.raises(InvalidNamespaceError):
                store.put(bad, "k", {})  # type: ignore[arg-type]
            with pytest.raises(InvalidNamespaceError):
                store.batch([PutOp(bad, "k", {})])  # type: ignore[arg-type]
            with pytest.raises(InvalidNamespaceError):
                store.batch([GetOp(bad, "k")])  # type: ignore[arg-type]
        for bad in [(), ("langgraph", "x")]:
            with pytest.raises(InvalidNamespaceError):
                store.put(bad, "k", {})
            with pytest.raises(InvalidNamespaceError):
                store.batch([PutOp(bad, "k", {})])
        with pytest.raises(InvalidNamespaceError):
            store.search(("a.b",))
        with pytest.raises(InvalidNamespaceError):
            store.list_namespaces(prefix=("a.b",))
        with pytest.raises(InvalidNamespaceError):
            store.batch([GetOp("users", "k")])  # type: ignore[arg-type]
        # A bad op anywhere in a batch: nothing of the batch is written.
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(("ok",), "k", {"v": 1}), PutOp(("a.b",), "k", {})])
        with pytest.raises(cortex.ValidationError) as info:
            store.batch([PutOp(("ok",), "k", {"v": 1}), SearchOp(("ok",), limit=-1)])
        assert info.value.field == "limit"
        with pytest.raises(cortex.ValidationError) as info:
            store.batch([PutOp(("ok",), "k", {"v": 1}), "get"])  # type: ignore[list-item]
        assert info.value.field == "ops[1]"
        assert store.cortex.root() == "0" * 64


# ---------------------------------------------------------------------------
# Search and listing rules


def test_filter_rules(tmp_path):
    with CortexStore(str(tmp_path / "s"), actor=ACTOR, clock=TickClock()) as store:
        store.put(("f",), "a", {"n": 1, "flag": True, "s": "apple", "nest": {"x": 1, "y": 2}, "l": [1, 2], "dot.key": 5})
        store.put(("f",), "b", {"n": 2.5, "flag": 1, "s": "banana", "nest": {"x": 2}, "l": [1, 2, 3]})
        store.put(("f",), "c", {"n": "3", "s": None})

        def keys(flt: dict[str, Any]) -> list[str]:
            return sorted(i.key for i in store.search(("f",), filter=flt))

        assert keys({"n": {"$gt": 1}}) == ["b"]  # "3" is a string: it does not compare with a number
        assert keys({"n": {"$gte": 1, "$lt": 2.5}}) == ["a"]
        assert keys({"n": {"$eq": 1.0}}) == ["a"]  # 1 == 1.0
        assert keys({"n": {"$ne": 1}}) == ["b", "c"]
        assert keys({"s": {"$gt": "apple"}}) == ["b"]  # strings compare as strings; None does not compare
        assert keys({"flag": True}) == ["a"]  # a boolean is not the number 1
        assert keys({"flag": 1}) == ["b"]
        assert keys({"nest": {"x": 1}}) == ["a"]  # nested dicts match key by key
        assert keys({"nest": {"x": 2, "y": None}}) == ["b"]  # a missing field reads as None
        assert keys({"l": [1, 2]}) == ["a"]  # lists: same length, element by element
        assert keys({"missing": None}) == ["a", "b", "c"]
        assert keys({"missing": {"$gt": 0}}) == []
        assert keys({"dot.key": 5}) == ["a"]  # a filter key names a top-level field, dots included
        assert keys({"s": None}) == ["c"]
        for bad in [{"n": {"$in": [1]}}, {"n": {"$gt": 1, "x": 2}}, "n"]:
            with pytest.raises(cortex.ValidationError):
                store.search(("f",), filter=bad)  # type: ignore[arg-type]
        # A query that shares no word with any item leaves the order as it is (docs/recall.md).
        assert [i.key for i in store.search(("f",), query="fruit")] == [i.key for i in store.search(("f",))]


def test_search_order_limit_offset_and_created_at(tmp_path):
    clock = TickClock()
    with CortexStore(str(tmp_path / "s"), actor=ACTOR, clock=clock) as store:
        # One batch: one time; ties go by namespace, then key.
        store.batch([PutOp(("o", "y"), "a", {"v": 1}), PutOp(("o", "x"), "c", {"v": 1}), PutOp(("o", "x"), "b", {"v": 1})])
        store.put(("o",), "late", {"v": 2})
        first = store.get(("o", "x"), "c")
        store.put(("o", "x"), "c", {"v": 3})  # an update: newest now, created_at kept
        order = [(i.namespace, i.key) for i in store.search(("o",), limit=10)]
        assert order == [(("o", "x"), "c"), (("o",), "late"), (("o", "x"), "b"), (("o", "y"), "a")]
        assert [(i.namespace, i.key) for i in store.search(("o",), limit=2, offset=1)] == order[1:3]
        assert store.search(("o",), offset=4) == []
        again = store.get(("o", "x"), "c")
        assert again.created_at == first.created_at
        assert again.updated_at > first.updated_at
        assert again.value == {"v": 3}


def test_list_namespaces_lists_namespaces_with_live_items(tmp_path):
    with CortexStore(str(tmp_path / "s"), actor=ACTOR) as store:
        for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f")]:
            store.put(ns, "k", {})
        assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
        assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
        assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
        assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
        store.delete(("a", "c", "f"), "k")
        store.delete(("a", "c", "f"), "never-there")
        assert store.list_namespaces(prefix=("a", "c")) == []
        assert store.list_namespaces(max_depth=1) == [("a",)]
        with pytest.raises(cortex.ValidationError):
            store.list_namespaces(max_depth=0)


# ---------------------------------------------------------------------------
# Batches, crashes, read-only


def test_batch_reads_see_the_state_before_the_batch_and_puts_dedupe_last_wins(tmp_path):
    with CortexStore(str(tmp_path / "s"), actor=ACTOR) as store:
        store.put(("b",), "k", {"v": 0})
        results = store.batch([
            PutOp(("b",), "k", {"v": 1}),
            GetOp(("b",), "k"),
            PutOp(("b",), "k", {"v": 2}),
            PutOp(("b",), "new", {"v": 1}),
            SearchOp(("b",)),
            PutOp(("b",), "new", None),
            ListNamespacesOp(),
        ])
        assert results[1].value == {"v": 0}
        assert [i.key for i in results[4]] == ["k"]
        assert results[6] == [("b",)]
        assert [r for i, r in enumerate(results) if i in (0, 2, 3, 5)] == [None] * 4
        assert store.get(("b",), "k").value == {"v": 2}
        assert store.get(("b",), "new") is None
        # One live memory per item; replaced and deleted ones are tombstones that still resolve.
        live = store.cortex.find(tags=[STORE_TAG], limit=100)
        assert len(live) == 1
        assert store.cortex.find(tags=[item_tag(("b",), "k")], limit=10, include_tombstoned=True)[0].tombstoned in (True, False)
        assert len(store.cortex.find(tags=[item_tag(("b",), "k")], limit=10, include_tombstoned=True)) == 2


def test_a_crash_between_write_and_tombstone_leaves_the_newest_in_charge(tmp_path):
    with CortexStore(str(tmp_path / "s"), actor=ACTOR) as store:
        store.put(("c",), "k", {"v": 1})
        c = store.cortex
        (old,) = c.find(tags=[item_tag(("c",), "k")], limit=5)
        # What a crash after the new memory's write and before the old one's tombstone leaves:
        data = old.data
        newer = type(data)(**{**{f: getattr(data, f) for f in ("statement", "subject", "predicate", "object", "source", "as_of")},
                              "statement": '{"v":2}'})
        c.write(newer, frames=old.frames, tags=old.tags, source=old.source)
        assert store.get(("c",), "k").value == {"v": 2}
        assert [i.value for i in store.search(("c",))] == [{"v": 2}]
        store.put(("c",), "k", {"v": 3})
        assert [m.data.statement for m in c.find(tags=[item_tag(("c",), "k")], limit=5)] == ['{"v":3}']


def test_memories_that_are_not_items_are_ignored(tmp_path):
    with CortexStore(str(tmp_path / "s"), actor=ACTOR) as store:
        store.cortex.write(cortex.Fact(statement="not an item", subject="x", predicate="y"),
                           tags=[STORE_TAG, namespace_tag(("x",))])
        store.cortex.write(cortex.Fact(statement="{}", subject="x", predicate="y", object="not json", source="langgraph",
                                       as_of=TickClock()()), tags=[STORE_TAG])
        store.put(("x",), "k", {"ok": True})
        assert [i.key for i in store.search(())] == ["k"]
        assert store.list_namespaces() == [("x",)]


def test_read_only_store_beside_the_writer(tmp_path):
    path = tmp_path / "s"
    with CortexStore(str(path), actor=ACTOR) as writer, open_store(path, mode="r") as handle:
        reader = CortexStore(handle)
        assert reader.get(("r",), "k") is None
        writer.put(("r",), "k", {"v": 1}, ttl=5)
        assert reader.get(("r",), "k").value == {"v": 1}  # caught up; no TTL refresh from a reader
        writer.put(("r",), "k", {"v": 2})
        assert [i.value for i in reader.search(("r",))] == [{"v": 2}]
        with pytest.raises(cortex.ReadOnlyStore):
            reader.put(("r",), "k2", {})


def test_construction(tmp_path):
    with pytest.raises(cortex.ValidationError) as info:
        CortexStore(str(tmp_path / "s"))  # a new store needs its actor
    assert info.value.field == "actor"
    with CortexStore(str(tmp_path / "s"), actor=ACTOR) as store:
        store.put(("c",), "k", {"v": 1})
    with CortexStore(tmp_path / "s") as store:  # an existing one tells its own
        assert store.cortex.actor == ACTOR and store.get(("c",), "k").value == {"v": 1}
    with open_store(tmp_path / "s") as c:
        with pytest.raises(cortex.ActorMismatch):
            CortexStore(c, actor="someone-else")
        store = CortexStore(c, actor=ACTOR)
        store.close()  # the caller owns `c`: it stays open
        store.put(("still",), "open", {})
        assert c.stats()["memories"] == 2
    with pytest.raises(cortex.ValidationError):
        CortexStore(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# TTL


def test_ttl_expiry_refresh_on_read_and_sweep(tmp_path):
    clock = TickClock()
    with open_store(tmp_path / "s", clock=clock) as c:
        store = CortexStore(c, clock=clock, ttl={"refresh_on_read": True})
        assert store.supports_ttl
        store.put(("t",), "short", {"v": 1}, ttl=1)
        store.put(("t",), "long", {"v": 2}, ttl=10)
        store.put(("t",), "forever", {"v": 3})
        created = store.get(("t",), "short", refresh_ttl=False)
        clock.advance(timedelta(seconds=45))
        assert store.get(("t",), "short").value == {"v": 1}  # read at 45 s: expiry moves to 1:45
        clock.advance(timedelta(seconds=45))
        refreshed = store.get(("t",), "short", refresh_ttl=False)  # at 1:30, alive thanks to the refresh
        assert refreshed.value == {"v": 1}
        assert (refreshed.created_at, refreshed.updated_at) == (created.created_at, created.updated_at)
        clock.advance(timedelta(seconds=30))  # 2:00: expired
        assert store.get(("t",), "short") is None
        assert sorted(i.key for i in store.search(("t",))) == ["forever", "long"]
        ref = namespace_ref(("t",))
        assert len(c.context(verb="find", objects={"knowledge": ref}).frame_relevant) == 2
        clock.advance(timedelta(minutes=10))
        assert [i.key for i in store.search(("t",))] == ["forever"]
        assert store.list_namespaces() == [("t",)]
        assert store.sweep_ttl() == 2
        assert store.sweep_ttl() == 0
        # An expired key put again starts afresh.
        store.put(("t",), "short", {"v": 4})
        assert store.get(("t",), "short").created_at > created.created_at
        with pytest.raises(cortex.ValidationError):
            store.put(("t",), "bad", {}, ttl=0)


def test_ttl_config_default_and_no_refresh(tmp_path):
    clock = TickClock()
    with open_store(tmp_path / "s", clock=clock) as c:
        store = CortexStore(c, clock=clock, ttl={"default_ttl": 1, "refresh_on_read": False})
        store.put(("d",), "k", {"v": 1})
        clock.advance(timedelta(seconds=50))
        assert store.get(("d",), "k").value == {"v": 1}  # no refresh by default
        clock.advance(timedelta(seconds=20))
        assert store.get(("d",), "k") is None
        store.put(("d",), "k2", {"v": 1}, ttl=None)  # None: no expiry
        clock.advance(timedelta(days=400))
        assert store.get(("d",), "k2").value == {"v": 1}


# ---------------------------------------------------------------------------
# Visible to context(), and an agent's graph


def test_items_are_memories_that_context_finds(tmp_path):
    clock = TickClock()
    with open_store(tmp_path / "s", clock=clock) as c:
        store = CortexStore(c, clock=clock)
        store.put(("users", "alice"), "food", {"likes": "pizza", "since": 2021})
        store.put(("users", "bob"), "food", {"likes": "salad"})
        bundle = c.context(verb="find", objects={"knowledge": namespace_ref(("users", "alice"))}, form="medium")
        (memory,) = bundle.frame_relevant
        assert memory.type == cortex.MemoryType.FACT
        assert bundle.rendered[memory.id] == 'food(users/alice)={"likes":"pizza","since":2021} — source=langgraph'
        assert memory.frames == (namespace_frame(("users", "alice")),)
        assert memory.frames[0] == cortex.Frame("find", "knowledge", "users/alice")
        assert set(memory.tags) == {STORE_TAG, item_tag(("users", "alice"), "food"), namespace_tag(("users",)),
                                    namespace_tag(("users", "alice"))}
        assert memory.data.subject == "users/alice" and memory.data.predicate == "food"
        assert memory.source == "langgraph"
        item = store.get(("users", "alice"), "food")
        assert item.updated_at == item.created_at == memory.created_at
        store.delete(("users", "alice"), "food")
        assert c.context(verb="find", objects={"knowledge": "users/alice"}).frame_relevant == []


def test_an_agent_graph_remembers_across_threads(tmp_path):
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    class State(TypedDict):
        user: str
        said: str
        recalled: list[str]

    def remember(state: State, runtime: Runtime) -> dict[str, Any]:
        if state["said"]:
            memories = runtime.store.search(("memories", state["user"]), limit=100)
            runtime.store.put(("memories", state["user"]), f"m{len(memories)}", {"text": state["said"]})
        return {}

    def recall(state: State, runtime: Runtime) -> dict[str, Any]:
        items = runtime.store.search(("memories", state["user"]), limit=100)
        return {"recalled": sorted(i.value["text"] for i in items)}

    async def aremember(state: State, runtime: Runtime) -> dict[str, Any]:
        memories = await runtime.store.asearch(("memories", state["user"]), limit=100)
        await runtime.store.aput(("memories", state["user"]), f"m{len(memories)}", {"text": state["said"]})
        return {}

    def graph(first: Any) -> Any:
        builder = StateGraph(State)
        builder.add_node("remember", first)
        builder.add_node("recall", recall)
        builder.add_edge(START, "remember")
        builder.add_edge("remember", "recall")
        builder.add_edge("recall", END)
        return builder

    path = str(tmp_path / "s")
    with CortexStore(path, actor=ACTOR) as store:
        app = graph(remember).compile(store=store)
        assert app.invoke({"user": "alice", "said": "likes pizza", "recalled": []})["recalled"] == ["likes pizza"]
        assert app.invoke({"user": "alice", "said": "is vegetarian", "recalled": []})["recalled"] == ["is vegetarian", "likes pizza"]
        assert app.invoke({"user": "bob", "said": "", "recalled": []})["recalled"] == []
        async_app = graph(aremember).compile(store=store)
        out = asyncio.run(async_app.ainvoke({"user": "alice", "said": "lives in Lyon", "recalled": []}))
        assert out["recalled"] == ["is vegetarian", "likes pizza", "lives in Lyon"]
    # A later process (a reopened store) remembers, and so does the agent's context().
    with CortexStore(path, actor=ACTOR) as store:
        assert sorted(i.value["text"] for i in store.search(("memories", "alice"))) == ["is vegetarian", "likes pizza", "lives in Lyon"]
        bundle = store.cortex.context(verb="find", objects={"knowledge": "memories/alice"})
        assert len(bundle.frame_relevant) == 3
