"""Edges between memories (docs/edges.md): link / unlink / edges, the `supersedes` sugar
of write(), what context() and find() do with superseded and contradicting memories,
verify() and rebuild() over edges, and the full export's round trip."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cortex
from cortex import Edge, EdgeType, Event, Fact, Frame, Goal, Write
from cortex.ids import decode_id
from cortex.index import DERIVED_PREFIXES
from cortex.index import edge as edge_index
from cortex.index import frame as frame_index
from cortex.records import FLAG_SUPERSEDED, IV_FLAGS, META_WEIGHTS, SALIENCE_PREFIX

from conftest import START, FakeClock, open_store

GPU = Frame("acquire", "service", "gpu")
ASK = {"verb": "acquire", "objects": {"service": "gpu"}}
NOW = START + timedelta(days=1)


def fact(n: int, **kw: object) -> Fact:
    return Fact(statement=f"statement {n}", subject="gpu", predicate=f"p{n}", **kw)  # type: ignore[arg-type]


def ids_in(bundle: cortex.Bundle) -> set[str]:
    """Every id a bundle mentions as a candidate or a survivor."""
    reachable = {uri.rsplit("/", 1)[1].split("#")[0] for uri in bundle.reachable_uris}
    return {m.id for m in bundle.memories()} | set(bundle.scores) | set(bundle.tokens) | reachable | set(bundle.dropped_ids)


def rid(uri: str) -> str:
    return uri.rsplit("/", 1)[1].split("#")[0]


# ---------------------------------------------------------------------------
# The API


def test_edge_types_are_a_closed_stable_set():
    assert {t.name.lower(): int(t) for t in EdgeType} == {
        "derived_from": 1, "supersedes": 2, "references": 3, "contradicts": 4, "corroborates": 5, "consents_to": 6,
        "dispatched_to": 7, "attested_by": 8, "cited_in": 9, "tombstones": 10, "part_of": 11, "instance_of": 12,
        "caused_by": 13, "observed_by": 14,
    }
    assert {"Edge", "EdgeType", "InvalidEdgeType", "SelfEdge", "SupersedesCycle"} <= set(cortex.__all__)
    assert [f.name for f in dataclasses.fields(Edge)] == ["src", "type", "dst", "weight", "created_at", "tombstoned"]


def test_link_lists_both_directions_in_a_total_order_and_is_idempotent(store, clock):
    a, b, c = (store.write(fact(i)) for i in range(3))
    clock.advance(60)
    linked = store.link(b, "supersedes", a, weight=0.5)
    assert linked == Edge(rid(b), EdgeType.SUPERSEDES, rid(a), 0.5, START + timedelta(seconds=60), False)
    store.link(c, EdgeType.CONTRADICTS, a)
    store.link(rid(a), "references", rid(b))  # ids name memories too
    store.link(c, "references", a)
    assert store.edges(a) == [Edge(rid(a), EdgeType.REFERENCES, rid(b), 1.0, START + timedelta(seconds=60), False)]
    incoming = store.edges(a, direction="in")
    assert [(e.type, e.src) for e in incoming] == [(EdgeType.SUPERSEDES, rid(b)), (EdgeType.REFERENCES, rid(c)), (EdgeType.CONTRADICTS, rid(c))]
    both = store.edges(a, direction="both")
    assert [(int(e.type), e.src, e.dst) for e in both] == sorted((int(e.type), e.src, e.dst) for e in both) and len(both) == 4
    assert store.edges(a, direction="both", types=["contradicts", EdgeType.SUPERSEDES]) == [incoming[0], incoming[2]]
    root = store.root()
    assert store.link(b, "supersedes", a, weight=0.5) == linked
    assert store.root() == root
    with pytest.raises(cortex.ValidationError) as info:
        store.link(b, "supersedes", a, weight=0.9)
    assert info.value.field == "weight" and "unlink it first" in info.value.rule
    assert store.root() == root and store.verify() == []


def test_unlink_tombstones_keeps_history_and_a_new_link_revives(store, clock):
    a, b = store.write(fact(1)), store.write(fact(2))
    store.link(b, "supersedes", a)
    clock.advance(5)
    store.unlink(b, "supersedes", a, reason="wrong call")
    assert store.edges(a, direction="in") == []
    [gone] = store.edges(a, direction="in", include_tombstoned=True)
    assert gone.tombstoned and gone.created_at == START
    root = store.root()
    store.unlink(b, "supersedes", a, reason="again")  # already unlinked: nothing written
    assert store.root() == root
    clock.advance(5)
    back = store.link(b, "supersedes", a, weight=0.25)
    assert back == Edge(rid(b), EdgeType.SUPERSEDES, rid(a), 0.25, START + timedelta(seconds=10), False)
    assert store.edges(b) == [back] and store.verify() == []


@pytest.mark.parametrize("case", ["unknown type", "missing src", "missing dst", "self-edge", "cycle", "long cycle", "weight",
                                  "unlink unknown", "unlink missing type", "write supersedes missing", "bad uri"])
def test_refusals_are_cortex_errors_that_write_nothing(store, case):
    a, b, c = (store.write(fact(i)) for i in range(3))
    store.link(b, "supersedes", a)
    store.link(c, "supersedes", b)
    ghost = "cortex://Fact/01JAAAAAAAAAAAAAAAAAAAAAAA#1"
    root, count = store.root(), len(list(store.memories(include_tombstoned=True)))
    calls = {
        "unknown type": (lambda: store.link(a, "likes", b), cortex.InvalidEdgeType, "edge_type", "likes"),
        "missing src": (lambda: store.link(ghost, "references", a), cortex.NotFound, None, "no memory"),
        "missing dst": (lambda: store.link(a, "references", ghost), cortex.NotFound, None, "no memory"),
        "self-edge": (lambda: store.link(a, "references", a), cortex.SelfEdge, "dst", "self-edges"),
        "cycle": (lambda: store.link(a, "supersedes", b), cortex.SupersedesCycle, "dst", "cycle"),
        "long cycle": (lambda: store.link(a, "supersedes", c), cortex.SupersedesCycle, "dst", "cycle"),
        "weight": (lambda: store.link(a, "references", b, weight=1.5), cortex.ValidationError, "weight", "[0.0, 1.0]"),
        "unlink unknown": (lambda: store.unlink(a, "references", b, "x"), cortex.NotFound, None, "no references edge"),
        "unlink missing type": (lambda: store.unlink(b, "part_of", a, "x"), cortex.NotFound, None, "no part_of edge"),
        "write supersedes missing": (lambda: store.write(fact(9), supersedes=[a, ghost]), cortex.NotFound, None, "no memory"),
        "bad uri": (lambda: store.link("cortex://Fact/nope#1", "references", a), cortex.BadURI, "src", "cortex://"),
    }
    call, error, field, words = calls[case]
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, cortex.CortexError)
    assert words in (str(info.value) if field is None else info.value.rule)
    if field is not None:
        assert info.value.field == field
    assert store.root() == root and len(list(store.memories(include_tombstoned=True))) == count
    assert store.verify() == []


def test_write_supersedes_links_in_the_same_batch(store):
    old, older = store.write(fact(1), frames=[GPU]), store.write(fact(0), frames=[GPU])
    seq = store.stats()["journal_seq"]
    new = store.write(fact(2), frames=[GPU], supersedes=[old, older, old])
    assert store.stats()["journal_seq"] == seq + 3  # the write, then one link per memory it supersedes
    assert [(e.src, e.type, e.dst) for e in store.edges(new)] == sorted(
        [(rid(new), EdgeType.SUPERSEDES, rid(old)), (rid(new), EdgeType.SUPERSEDES, rid(older))], key=lambda t: t[2])
    assert [m.uri for m in store.context(**ASK).memories()] == [new]
    # In write_many, two items may supersede the same memory.
    [x, y] = store.write_many([Write(fact(3), frames=[GPU], supersedes=[new]), Write(fact(4), frames=[GPU], supersedes=[new])])
    assert {e.src for e in store.edges(new, direction="in")} == {rid(x), rid(y)}
    assert {m.uri for m in store.context(**ASK).memories()} == {x, y} and store.verify() == []
    with pytest.raises(cortex.ValidationError) as info:
        Write(fact(5), supersedes=old)
    assert info.value.field == "supersedes"


# ---------------------------------------------------------------------------
# context() and find()


def test_context_leaves_superseded_memories_out_until_unlinked_or_the_newer_is_tombstoned(store):
    old = store.write(fact(1), frames=[GPU], importance=9)
    filler = [store.write(fact(10 + i), frames=[GPU]) for i in range(5)]
    new = store.write(fact(2), frames=[GPU], supersedes=[old])
    b = store.context(**ASK, now=NOW, budget_tokens=1)
    assert rid(old) not in ids_in(b) and rid(new) in ids_in(b)
    assert list(b.superseded_ids) == [rid(old)] and b.to_dict()["superseded_ids"] == [rid(old)]
    assert b.candidates == len(filler) + 1 and b.trimmed == len(filler)
    assert store.resolve(old).uri == old  # a superseded memory still resolves
    wide = store.context(**ASK, now=NOW, include_superseded=True)
    assert rid(old) in wide.scores and list(wide.superseded_ids) == [] and wide.request["include_superseded"] is True
    # What the left-out memory would have scored and cost as a candidate, as its URI names it.
    wide_at_budget = store.context(**ASK, now=NOW, budget_tokens=1, include_superseded=True)
    assert list(b.superseded_uris) == [old]
    assert dict(b.superseded_scores) == {rid(old): wide_at_budget.scores[rid(old)]}
    assert dict(b.superseded_tokens) == {rid(old): wide_at_budget.tokens[rid(old)]}
    assert "include_superseded" not in b.request
    store.tombstone(new, "the new price was a typo")
    assert rid(old) in store.context(**ASK, now=NOW).scores and store.verify() == []
    again = store.write(fact(3), frames=[GPU], supersedes=[old])
    assert rid(old) not in store.context(**ASK, now=NOW).scores
    store.unlink(again, "supersedes", old, "back in force")
    assert rid(old) in store.context(**ASK, now=NOW).scores and store.verify() == []
    with pytest.raises(cortex.ValidationError) as info:
        store.context(**ASK, include_superseded="yes")
    assert info.value.field == "include_superseded"


def test_a_superseded_memory_leaves_every_tier_and_outcomes_fill_the_limit_without_it(store, clock):
    goal = store.write(Goal(statement="ship v1", status="active"))
    events = []
    for i in range(4):
        clock.advance(1)
        events.append(store.write(Event(kind="payment", outcome="success", summary=f"paid {i}"), frames=[GPU]))
    b = store.context(**ASK, outcome_limit=2, now=NOW)
    assert [m.uri for m in b.outcomes] == [events[3], events[2]] and [m.uri for m in b.pinned] == [goal]
    store.link(events[2], "supersedes", events[3])
    store.write(Goal(statement="ship v2", status="active"), supersedes=[goal])
    b = store.context(**ASK, outcome_limit=2, now=NOW)
    assert [m.uri for m in b.outcomes] == [events[2], events[1]]
    assert [m.data.statement for m in b.pinned] == ["ship v2"]
    assert rid(events[3]) not in ids_in(b) and rid(goal) not in ids_in(b)


def test_find_leaves_superseded_memories_out_unless_asked(store):
    old = store.write(fact(1), tags=["price"])
    new = store.write(fact(2), tags=["price"], supersedes=[old])
    assert [m.uri for m in store.find(type="Fact", limit=10)] == [new]
    assert [m.uri for m in store.find(tags=["price"], limit=10, order_by="created")] == [new]
    assert [m.uri for m in store.find(tags=["price"], limit=10, order_by="created", include_superseded=True)] == [old, new]
    with pytest.raises(cortex.ValidationError) as info:
        store.find(type="Fact", limit=1, include_superseded=1)
    assert info.value.field == "include_superseded"


def test_conflicts_pair_contradicting_candidates_in_json_and_markdown(store):
    a, b, c = (store.write(fact(i), frames=[GPU]) for i in range(3))
    outside = store.write(fact(9))  # no frame: never a candidate here
    store.link(c, "contradicts", a)
    store.link(a, "contradicts", c)  # both ways: still one pair
    store.link(b, "contradicts", outside)
    store.link(a, "corroborates", b)
    bundle = store.context(**ASK, now=NOW, budget_tokens=1, form="short")
    pair = (rid(a), rid(c))
    assert bundle.conflicts == [pair] and bundle.trimmed == 2
    assert json.loads(bundle.to_json())["conflicts"] == [list(pair)]
    uris = {m.id: m.uri for m in bundle.memories()} | {rid(u): u for u in bundle.reachable_uris}
    markdown = bundle.to_markdown()
    assert f"## Conflicts\n- {uris[pair[0]]} contradicts {uris[pair[1]]}\n\n## Reachable" in markdown
    store.unlink(c, "contradicts", a, "settled")
    assert store.context(**ASK, now=NOW).conflicts == [pair]
    store.unlink(a, "contradicts", c, "settled")
    quiet = store.context(**ASK, now=NOW)
    assert quiet.conflicts == [] and "## Conflicts" not in quiet.to_markdown()
    store.link(b, "contradicts", a)
    store.link(c, "contradicts", b)
    assert store.context(**ASK, now=NOW).conflicts == sorted([tuple(sorted((rid(a), rid(b)))), tuple(sorted((rid(b), rid(c))))])
    assert store.verify() == []


# ---------------------------------------------------------------------------
# verify() and rebuild()


def test_verify_names_a_flag_that_disagrees_with_the_edges_and_rebuild_repairs_it(store):
    old = store.write(fact(1), frames=[GPU])
    new = store.write(fact(2), frames=[GPU], supersedes=[old])
    kv = store._engine.storage
    key = frame_index.key(int(GPU.verb), int(GPU.kind), GPU.ref, raw(old))
    value = bytearray(kv.get(key))
    assert value[IV_FLAGS] & FLAG_SUPERSEDED
    value[IV_FLAGS] &= ~FLAG_SUPERSEDED
    kv.write({key: bytes(value)})
    problems = store.verify()
    assert problems == [f"idx/frame/{key[len(b'idx/frame/'):].hex()}: superseded flag is clear but the edges say set"]
    assert rid(old) in store.context(**ASK).scores  # the damaged flag is what context() trusts
    assert store.rebuild() == [] and store.verify() == []
    assert rid(old) not in store.context(**ASK).scores
    # An edge key that the journal does not hold is named too, and rebuild() drops it.
    stray = edge_index.out_key(bytes(16), 3, raw(old))
    kv.write({stray: kv.get(edge_index.out_key(raw(new), 2, raw(old)))})
    assert store.verify() == [f"idx/edge_out/{stray[len(b'idx/edge_out/'):].hex()}: entry points at no live record"]
    assert store.rebuild() == [] and store.verify() == []


def raw(uri: str) -> bytes:
    return decode_id(rid(uri))


# ---------------------------------------------------------------------------
# Properties over random stores with random edges

_OPS = st.lists(
    st.tuples(st.sampled_from(["link", "link", "link", "unlink", "tombstone"]), st.integers(0, 9), st.integers(0, 9),
              st.sampled_from(["supersedes", "supersedes", "contradicts", "references"])),
    max_size=25,
)


class Model:
    """What the store should hold: live edges and tombstoned memories."""

    def __init__(self) -> None:
        self.edges: set[tuple[str, str, str]] = set()
        self.dead: set[str] = set()

    def superseded(self) -> set[str]:
        return {d for s, t, d in self.edges if t == "supersedes" and s not in self.dead}

    def reaches(self, start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            here = todo.pop()
            for s, t, d in self.edges:
                if s == here and t == "supersedes" and d not in seen:
                    if d == goal:
                        return True
                    seen.add(d)
                    todo.append(d)
        return False


def _random_store(path, ops: list[tuple[str, int, int, str]]) -> tuple[cortex.Cortex, list[str], Model]:
    clock = FakeClock(tick=1)
    c = open_store(path, clock)
    uris = c.write_many([Write(fact(i), frames=[GPU] if i % 4 else [GPU, Frame("acquire", "model", "m")]) for i in range(9)])
    uris.append(c.write(Goal(statement="stay in budget", status="active")))
    model = Model()
    for op, i, j, kind in ops:
        src, dst = rid(uris[i]), rid(uris[j])
        root = c.root()
        if op == "tombstone":
            c.tombstone(uris[i], "random")
            model.dead.add(src)
        elif op == "unlink":
            if (src, kind, dst) in model.edges:
                c.unlink(uris[i], kind, uris[j], "random")
                model.edges.discard((src, kind, dst))
            elif any(e.dst == dst for e in c.edges(uris[i], types=[kind], include_tombstoned=True)):
                c.unlink(uris[i], kind, uris[j], "again")  # unlinked before: nothing written
                assert c.root() == root
            else:
                with pytest.raises(cortex.NotFound):
                    c.unlink(uris[i], kind, uris[j], "random")
                assert c.root() == root
        elif i == j:
            with pytest.raises(cortex.SelfEdge):
                c.link(uris[i], kind, uris[j])
            assert c.root() == root
        elif kind == "supersedes" and (src, kind, dst) not in model.edges and model.reaches(dst, src):
            with pytest.raises(cortex.SupersedesCycle):
                c.link(uris[i], kind, uris[j])
            assert c.root() == root
        else:
            c.link(uris[i], kind, uris[j])
            model.edges.add((src, kind, dst))
    return c, uris, model


def _bundles(c: cortex.Cortex, **extra: object) -> list[cortex.Bundle]:
    return [c.context(**ASK, now=NOW, budget_tokens=budget, **extra) for budget in (1, 60, 0)] + [
        c.context(verb="acquire", objects={"service": "gpu", "model": "m"}, now=NOW, **extra), c.context(now=NOW, **extra)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_random_stores_with_random_edges(tmp_path_factory, ops):
    c, uris, model = _random_store(tmp_path_factory.mktemp("edges") / "s", ops)
    with c:
        stale = model.superseded()
        for bundle in _bundles(c):
            assert not ids_in(bundle) & stale
            assert set(bundle.superseded_ids) <= stale and list(bundle.superseded_ids) == sorted(bundle.superseded_ids)
            candidates = set(bundle.scores)
            want = sorted({tuple(sorted((s, d))) for s, t, d in model.edges if t == "contradicts" and {s, d} <= candidates})
            assert bundle.conflicts == want
        for bundle in _bundles(c, include_superseded=True):
            live_framed = {rid(u) for u in uris[:9]} - model.dead
            if bundle.request["verb"] is not None and bundle.candidates > 0:
                assert live_framed <= set(bundle.scores)
        found = {m.id for m in c.find(type="Fact", limit=100)}
        assert found == {rid(u) for u in uris[:9]} - model.dead - stale
        assert c.verify() == []

        before = [b.to_json() for b in _bundles(c)]
        storage = c._engine.storage
        derived = [key for prefix in (*DERIVED_PREFIXES, SALIENCE_PREFIX) for key, _ in storage.scan_items(prefix)]
        storage.write({key: None for key in [*derived, META_WEIGHTS]})
        assert c.rebuild() == [] and c.verify() == []
        assert [b.to_json() for b in _bundles(c)] == before

        for s, t, d in sorted(model.edges):
            if t == "supersedes":
                c.unlink(f"{s}", t, d, "restore")
        restored = c.context(**ASK, now=NOW)
        assert set(restored.scores) == {rid(u) for u in uris} - model.dead  # the nine facts and the pinned goal
        assert list(restored.superseded_ids) == [] and c.verify() == []


# ---------------------------------------------------------------------------
# The full export


def test_edges_survive_export_import_export_byte_identically(tmp_path):
    ops = [("link", 2, 1, "supersedes"), ("link", 3, 2, "supersedes"), ("link", 4, 5, "contradicts"), ("link", 6, 7, "references"),
           ("unlink", 6, 7, "references"), ("tombstone", 3, 0, "supersedes"), ("link", 8, 4, "derived_from")]
    a, uris, model = _random_store(tmp_path / "a", ops)
    with a:
        a.export_jsonl(tmp_path / "a.jsonl")
        want = (a.root(), [b.to_json() for b in _bundles(a)], [a.edges(u, "both", include_tombstoned=True) for u in uris])
    assert rid(uris[1]) in model.superseded() and rid(uris[2]) not in model.superseded()
    lines = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert [line["entry_kind"] for line in lines if line["kind"] == "journal"].count("link") == 5
    assert not [line for line in lines if line["kind"] == "record"]  # edges travel as journal entries
    with open_store(tmp_path / "b") as b:
        b.import_jsonl(tmp_path / "a.jsonl")
        assert b.verify() == []
        assert (b.root(), [x.to_json() for x in _bundles(b)], [b.edges(u, "both", include_tombstoned=True) for u in uris]) == want
        b.export_jsonl(tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_a_store_without_edges_has_no_edge_flags(store):
    uri = store.write(fact(1), frames=[GPU])
    rows = {k: v for k, v in store._engine.storage.scan_items(b"idx/") if k.startswith(b"idx/frame/")}
    assert [v[IV_FLAGS] for v in rows.values()] == [0]
    assert store.edges(uri, "both") == []
