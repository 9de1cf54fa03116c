"""Hot objects (the hot-frames issue): the cache of decoded frame entries and the
partial ranking of the trim give exactly the bundle of a full scan and a full sort.

`context()` keeps the decoded entries of frame prefixes per handle
(`cortex.cache.hot`) and the newest entries it read under outcomes-tier prefixes
(`cortex.cache.newest`), and ranks only the best candidates when it trims. None of
them may change an answer: on random stores built to have hot objects shared by several
queried objects, score ties, expiring and tombstoned memories, superseded and
contradicting ones, learned weights and writes between calls, every bundle equals
the bundle of the same call with no cache, and its trim equals the trim docs/context.md
states, recomputed here from the bundle's own scores and token counts.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import cortex
import cortex.cache.hot as hot_module
import cortex.columns as columns_module
import cortex.context.bounded as bounded_module
import cortex.context.call as call_module
import cortex.context.rank as rank_module
import cortex.upkeep as upkeep
from cortex import Constraint, EdgeType, Event, Fact, Frame, Goal, Tuning
from cortex.cache import HotFrames, JoinedCalls
from cortex.index import frame as frame_module
from cortex.model import ObjKind, Verb
from cortex.salience.score import Weights

from conftest import START, FakeClock, open_store

NOW = START + timedelta(days=30)
_JOINED_BELOW_ROWS = Tuning().joined_below_rows  # the default, which some tests change
OBJECTS = [("service", "gpu"), ("model", "acme"), ("agent", "eu")]


def _memory(rng: random.Random, n: int) -> cortex.model.MemoryData:
    kind = rng.choice(("fact", "fact", "event", "event", "goal", "constraint"))
    if kind == "event":
        return Event(kind="dispatch", outcome=rng.choice(("success", "failure")), summary=f"event {n}" + " x" * rng.randint(0, 20))
    if kind == "goal":
        return Goal(statement=f"goal {n}", status=rng.choice(("active", "paused")))
    if kind == "constraint":
        return Constraint(statement=f"rule {n}", strength=rng.choice(("hard", "soft")), polarity="dont", source="learned")
    return Fact(statement=f"fact {n}" + " y" * rng.randint(0, 30), subject="s", predicate=f"p{n % 3}")


def _frames(rng: random.Random) -> list[Frame]:
    """One to three of the three objects (so they share memories), mostly under one verb."""
    chosen = rng.sample(OBJECTS, rng.randint(1, 3))
    return [Frame(rng.choice(("acquire", "acquire", "deliver")), kind, ref) for kind, ref in chosen]


def _write_some(c: cortex.Cortex, clock: FakeClock, rng: random.Random, count: int, uris: list[str]) -> None:
    """Writes, edits, uses, tombstones and edges, in a random mix."""
    for _ in range(count):
        # 0: the same instant, so score ties; days apart, so recency tells memories
        # apart, until two days before NOW.
        clock.now = min(clock.now + timedelta(minutes=rng.choice((0, 0, 1, 90, 24 * 60))), NOW - timedelta(days=2))
        roll = rng.random()
        live = [u for u in uris if not c.resolve(u).tombstoned]
        if roll < 0.55 or len(live) < 4:
            expires = NOW + timedelta(days=rng.choice((-1, 1))) if rng.random() < 0.15 else None
            uris.append(c.write(_memory(rng, len(uris)), frames=_frames(rng), importance=rng.choice((3, 5, 5, 6, 9)), expires_at=expires))
        elif roll < 0.65:
            c.attest(rng.sample(live, 2), rng.choice(("success", "success", "failure")), "factual_error")
        elif roll < 0.72:
            c.update_head(rng.choice(live), importance=rng.choice((0, 5, 10)))
        elif roll < 0.78:
            c.tombstone(rng.choice(live), "gone")
        elif roll < 0.9:
            a, b = rng.sample(live, 2)
            try:
                c.link(a, rng.choice((EdgeType.SUPERSEDES, EdgeType.CONTRADICTS)), b)
            except cortex.SupersedesCycle:
                pass
        else:
            new = c.write(_memory(rng, len(uris)), frames=_frames(rng), supersedes=[rng.choice(live)])
            uris.append(new)


def _query(rng: random.Random) -> dict:
    objects = dict(rng.sample(OBJECTS, rng.randint(1, 3)))
    # Calls at different times on the same cached rows: bounds kept from a call serve
    # later ones only (`cortex.context.bounded.part_groups`).
    query = {"verb": rng.choice(("acquire", "deliver")), "objects": objects, "now": NOW + timedelta(hours=rng.choice((-720, -30, 0, 0, 30, 720))),
             "budget_tokens": rng.choice((1, 40, 120, 300, 4000)), "form": rng.choice(("short", "medium", "full")),
             "outcome_limit": rng.choice((0, 1, 5)), "include_superseded": rng.random() < 0.25}
    if rng.random() < 0.3:
        query["include_tiers"] = rng.sample(["pinned", "outcomes", "frame_relevant"], rng.randint(1, 3))
    return query


def _everything(b: cortex.Bundle) -> dict:
    """Every part of a bundle, in the order the bundle holds it."""
    return {
        "json": b.to_json(), "scores": list(b.scores.items()), "tokens": list(b.tokens.items()),
        "rendered": list(b.rendered.items()), "dropped": list(b.dropped_ids), "superseded": list(b.superseded_ids),
        "superseded_scores": list(b.superseded_scores.items()),
    }


def _design_trim(b: cortex.Bundle, reachable_size: int = 64) -> tuple[list[str], list[str], int]:
    """docs/context.md step 6 on the bundle's own scores and tokens: drop the lowest
    (score, id) while over budget, keeping one. Returns the survivors' ids (as a
    set, sorted), the 64 best dropped (best first) and the token total."""
    order = sorted(b.scores, key=lambda i: (b.scores[i], i))
    total, dropped = sum(b.tokens.values()), 0
    while total > b.request["budget_tokens"] and dropped < len(order) - 1:
        total -= b.tokens[order[dropped]]
        dropped += 1
    return sorted(order[dropped:]), order[:dropped][::-1][:reachable_size], total


class _CountedBounded(bounded_module.BoundedRanker):
    """`BoundedRanker`, counting the calls that ranked with it, the groups they left unscored
    and the plain rows they left unscored in the groups they opened."""

    calls = 0
    unscored = 0
    tail_rows = 0

    def top(self, m: int):
        ranked = super().top(m)
        _CountedBounded.calls += 1
        _CountedBounded.unscored += len(self._groups) - self._next
        _CountedBounded.tail_rows += sum(len(tail.group.plain.rows) - tail.scored for tail in self._tails)
        return ranked


# Seeds on which a fault in the bounded ranking (`BoundedRanker`) showed, each fault
# tried alone: rows left out not ranked last, bounds that ignore access and
# citations, groups scored from the lowest bound up, ties with the next group's
# bound taken as enough. Hypothesis's draws may miss them; these run every time.
@example(seed=0, ranking=(256, 64), sort_dedup_rows=0, gather_share=8, bounded_from=1, always_bound=True, joined_below=4096)
@example(seed=23, ranking=(16, 3), sort_dedup_rows=0, gather_share=8, bounded_from=3, always_bound=True, joined_below=4096)
@example(seed=4, ranking=(16, 3), sort_dedup_rows=0, gather_share=8, bounded_from=3, always_bound=True, joined_below=4096)
@example(seed=8, ranking=(16, 3), sort_dedup_rows=0, gather_share=8, bounded_from=3, always_bound=True, joined_below=4096)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), ranking=st.sampled_from([(1, 2), (3, 5), (2, 64), (16, 3), (256, 64)]),
       sort_dedup_rows=st.sampled_from([0, 2048]), gather_share=st.sampled_from([0, 8]),
       bounded_from=st.sampled_from([1, 1, 3, 1 << 40]), always_bound=st.booleans(), joined_below=st.sampled_from([0, 16, 4096]))
def test_cached_and_partially_ranked_bundles_equal_a_full_scan_and_sort(tmp_path_factory, seed, ranking, sort_dedup_rows, gather_share, bounded_from,
                                                                        always_bound, joined_below):
    # Rank few rows first and (in some examples) keep a short reachable list, so that
    # small stores take every path of the trim: widening the ranking, and stopping
    # with rows left unranked; dedup by search between blocks as hot objects do; and
    # frame-tier parts scored importance by importance, best bound first, from any
    # size (1) or from a few rows (3: small parts scored whole beside them), where the
    # bounds promise to leave most rows unscored or (`always_bound`) wherever they can;
    # and calls kept with their frame's cached columns from any size (0) or from a few
    # rows (16), as a hot frame's calls are (4,096).
    _check_with_knobs(tmp_path_factory, seed, ranking, sort_dedup_rows, gather_share, bounded_from, always_bound, joined_below)


def _check_with_knobs(tmp_path_factory, seed: int, ranking: tuple[int, int], sort_dedup_rows: int, gather_share: int,
                      bounded_from: int, always_bound: bool, joined_below: int = _JOINED_BELOW_ROWS) -> int:
    """`_check_against_full_scan` with the composer's `Tuning` as drawn, the column
    store's thresholds set, and `BoundedRanker` counting its calls, then put back;
    returns what the check returns."""
    tuning = Tuning(first_ranked=ranking[0], reachable_uris=ranking[1], sort_dedup_rows=sort_dedup_rows, bounded_from=bounded_from,
                    always_bound=always_bound, joined_below_rows=joined_below)
    saved = (call_module.BoundedRanker, columns_module._RUNS_FROM, columns_module._GATHER_SHARE)
    call_module.BoundedRanker = _CountedBounded
    try:
        return _check_against_full_scan(tmp_path_factory, random.Random(seed), tuning, gather_share)
    finally:
        (call_module.BoundedRanker, columns_module._RUNS_FROM, columns_module._GATHER_SHARE) = saved


def test_the_bounded_ranking_runs_and_leaves_groups_unscored(tmp_path_factory):
    """The comparison above, on a store where frames are bounded wherever they can be:
    bounded calls ran, and their bounds let them stop before scoring every group, or
    every row of the groups they scored (so the property test compares a bounded
    ranking, not a full one by another road)."""
    _CountedBounded.calls = _CountedBounded.unscored = 0
    _check_with_knobs(tmp_path_factory, 0, (16, 3), 0, 8, 3, True)  # rank 16 rows first: a small store then stops early
    assert _CountedBounded.calls > 0 and _CountedBounded.unscored > 0
    # Ranking one row first, calls stop with plain rows of the groups they opened unscored.
    _CountedBounded.tail_rows = 0
    _check_with_knobs(tmp_path_factory, 0, (1, 2), 0, 8, 1, True)
    assert _CountedBounded.tail_rows > 0


def _fast_paths(engine, on: bool, tuning: Tuning = Tuning(), gather_share: int = 0) -> None:
    """Set the composer's fast paths: as `tuning` says (the tests' tunings take a
    partial ranking, dedup by search and frame-tier parts scored by bounds at sizes
    where the defaults would not), with lazy joins and takes by runs of rows at any
    size and small takes gathered from the parts of a join (every take, with
    `gather_share` 0); or (off) a ranking of every row scored, dedup by one sort,
    and numpy's plain concatenate and gather."""
    never = 1 << 40
    engine.tuning = tuning if on else Tuning(first_ranked=never, reachable_uris=tuning.reachable_uris, sort_dedup_rows=never,
                                             bounded_from=never, joined_below_rows=tuning.joined_below_rows)
    columns_module._RUNS_FROM = 0 if on else never
    columns_module._GATHER_SHARE = gather_share if on else never


def _check_against_full_scan(tmp_path_factory, rng: random.Random, tuning: Tuning, gather_share: int) -> int:
    """Calls with the fast paths and caches on, each against the same call with them
    off (the full scan), on a random store as writes go on; returns the most frame
    prefixes that kept a large call's candidates at once (`JoinedCalls.framed`)."""
    reachable_size = tuning.reachable_uris
    clock = FakeClock()
    with open_store(tmp_path_factory.mktemp("hot") / "s", clock) as c:
        uris: list[str] = []
        _write_some(c, clock, rng, rng.randint(20, 120), uris)
        engine = c._engine
        cache, heads, newest, joins = HotFrames(min_rows=1), engine.heads, engine.newest, engine.joins
        newest_kept = joins_kept = frames_kept = 0
        for round_ in range(3):
            for _ in range(6):
                query = _query(rng)
                _weigh(engine, rng)
                engine.hot, engine.heads, engine.newest, engine.joins = cache, heads, newest, joins
                _fast_paths(engine, True, tuning, gather_share)
                cached = c.context(**query)
                if round_ == 1:  # the same call again: it takes what the first one kept
                    again = c.context(**query)
                    assert _everything(again) == _everything(cached), query
                newest_kept, joins_kept, frames_kept = max(newest_kept, len(newest)), max(joins_kept, len(joins)), max(frames_kept, joins.framed_count())
                engine.hot = engine.heads = engine.newest = engine.joins = None
                _fast_paths(engine, False, tuning)
                scanned = c.context(**query)
                assert _everything(cached) == _everything(scanned), query
                survivors, reachable, total = _design_trim(scanned, reachable_size)
                assert sorted(m.id for m in scanned.memories()) == survivors
                assert [u.rsplit("/", 1)[1].split("#")[0] for u in scanned.reachable_uris] == reachable
                assert scanned.total_tokens == total and scanned.trimmed == len(scanned.scores) - len(survivors)
                assert list(scanned.dropped_ids) == sorted(set(scanned.scores) - set(survivors), key=lambda i: (-scanned.scores[i], _neg(i)))
                if rng.random() < 0.5:  # new memories alone: cached prefixes gain rows at their end
                    engine.hot, engine.heads, engine.newest, engine.joins = cache, heads, newest, joins
                    vars(engine).pop("weights", None)
                    for _ in range(rng.randint(1, 3)):
                        clock.now = min(clock.now + timedelta(hours=rng.choice((0, 1, 30))), NOW - timedelta(days=2))
                        uris.append(c.write(_memory(rng, len(uris)), frames=_frames(rng), importance=rng.choice((4, 5, 6))))
            engine.hot, engine.heads, engine.newest, engine.joins = cache, heads, newest, joins
            vars(engine).pop("weights", None)
            _write_some(c, clock, rng, rng.randint(1, 30), uris)  # the caches follow these writes
        assert len(cache) > 0 and len(heads) > 0 and newest_kept > 0
        # Calls keep what they joined in the handle's pool below `joined_below_rows`
        # candidates (every call on these small stores, at the default), or under their
        # frame where one frame holds most of their rows (a store may have none such).
        assert joins_kept + frames_kept > 0 or tuning.joined_below_rows != _JOINED_BELOW_ROWS
        return frames_kept


def _weigh(engine, rng: random.Random) -> None:
    """The store's learned weights, or (for both calls of a pair) weights where
    access and citations count as much as recency and importance, or more."""
    vars(engine).pop("weights", None)
    if rng.random() < 0.5:
        weights = Weights(*(rng.choice((0.0, 0.1, 0.5, 1.0)) for _ in range(3)), 1.0)
        engine.weights = lambda: weights


def _neg(memory_id: str) -> tuple[int, ...]:
    return tuple(-ord(ch) for ch in memory_id)


def test_every_prefix_is_cached_once_read_and_reads_no_entries_after(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        c.write_many([cortex.Write(Fact(statement=f"f{i}", subject="s", predicate="p"), frames=(Frame("acquire", "service", "gpu"),))
                      for i in range(600)])
        c.write(Fact(statement="cold", subject="s", predicate="p"), frames=[Frame("acquire", "service", "tiny")])
        engine = c._engine
        ask = {"verb": "acquire", "objects": {"service": "gpu"}, "now": NOW}
        first = c.context(**ask)
        read = engine.index_entries_read
        again = c.context(**ask)
        assert engine.index_entries_read == read  # 600 frame entries, all from the cache; no pinned tier entries
        assert again.to_json() == first.to_json()
        for _ in range(2):
            c.context(verb="acquire", objects={"service": "tiny"}, now=NOW)
            assert engine.index_entries_read == read + 1  # a small prefix is read once too
        kept, engine.hot = engine.hot, HotFrames(min_rows=2)
        for n in (2, 3):
            c.context(verb="acquire", objects={"service": "tiny"}, now=NOW)
            assert engine.index_entries_read == read + n  # one smaller than `min_rows` is read each time
        engine.hot = kept
        new = c.write(Fact(statement="newest", subject="s", predicate="p"), frames=[Frame("acquire", "service", "gpu")], importance=10)
        after = c.context(**ask)
        assert engine.index_entries_read == read + 3 and after.candidates == 601
        assert new.rsplit("/", 1)[1].split("#")[0] in after.scores


def test_rebuild_and_import_move_the_cache_with_the_store(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        uris = c.write_many([cortex.Write(Fact(statement=f"f{i}", subject="s", predicate="p"), frames=(Frame("acquire", "service", "gpu"),))
                             for i in range(40)])
        c._engine.hot = HotFrames(min_rows=1)
        ask = {"verb": "acquire", "objects": {"service": "gpu"}, "now": NOW, "budget_tokens": 100}
        before = c.context(**ask).to_json()
        c.rebuild()
        assert c.context(**ask).to_json() == before
        c.tombstone(uris[0], "gone")
        c.rebuild()
        gone = c.context(**ask)
        c._engine.hot = None
        assert gone.to_json() == c.context(**ask).to_json() and gone.candidates == 39


# A follower's call on the object the follower tests below write to.
GPU_ASK = {"verb": "acquire", "objects": {"service": "gpu"}, "now": NOW, "budget_tokens": 4000}


def _facts(n: int, ref: str = "gpu", start: int = 0) -> list[cortex.Write]:
    return [cortex.Write(Fact(statement=f"f{i}", subject="s", predicate="p"), frames=(Frame("acquire", "service", ref),))
            for i in range(start, start + n)]


def test_a_follower_keeps_its_caches_across_new_memories_and_reads_only_the_new_entries(tmp_path):
    clock = FakeClock()
    path = tmp_path / "s"
    with open_store(path, clock) as w:
        w.write_many(_facts(600))
        with open_store(path, clock, mode="r") as r:
            engine = r._engine
            assert r.context(**GPU_ASK).candidates == 600
            heads = len(engine.heads)
            assert engine.hot.prefixes() and heads > 0
            w.write_many(_facts(5, start=600))
            w.write(Fact(statement="cold", subject="s", predicate="p"), frames=[Frame("acquire", "service", "tiny")])
            read = engine.index_entries_read
            after = r.context(**GPU_ASK)  # catches up: only the 5 new entries are read
            assert after.candidates == 605 and engine.index_entries_read == read + 5
            assert len(engine.heads) >= heads and r.verify() == []
            assert after.to_json() == w.context(**GPU_ASK).to_json()


def test_any_other_write_makes_a_follower_drop_its_caches(tmp_path):
    clock = FakeClock()
    path = tmp_path / "s"
    with open_store(path, clock) as w:
        uris = w.write_many(_facts(600))
        with open_store(path, clock, mode="r") as r:
            engine = r._engine
            for change in (lambda: w.update_head(uris[3], importance=9), lambda: w.tombstone(uris[4], "gone"),
                           lambda: w.attest([uris[5]], "success"), lambda: w.write(Fact(statement="new", subject="s", predicate="p"),
                                                                                  frames=[Frame("acquire", "service", "gpu")], supersedes=[uris[6]])):
                assert r.context(**GPU_ASK).candidates > 0 and engine.hot.prefixes() and len(engine.heads) > 0
                change()
                r.refresh()
                assert engine.hot.prefixes() == [] and len(engine.heads) == 0
                assert r.context(**GPU_ASK).to_json() == w.context(**GPU_ASK).to_json()
            r.context(**GPU_ASK)
            r.refresh(reopen=True)  # a fresh view asked for: nothing is kept
            assert engine.hot.prefixes() == [] and len(engine.heads) == 0


def test_a_view_that_may_be_torn_keeps_nothing_past_the_next_catch_up(tmp_path):
    """When a catch-up reports that the writer kept flushing through every attempt
    (`Storage.catch_up` returns False), the caches are dropped then, and what they
    took from that view is dropped at the next catch-up too."""
    clock = FakeClock()
    path = tmp_path / "s"
    with open_store(path, clock) as w:
        w.write_many(_facts(600))
        with open_store(path, clock, mode="r") as r:
            engine, storage = r._engine, r._engine.storage
            real, verdicts = storage.catch_up, iter([False, True, True])
            storage.catch_up = lambda reopen=False: real(reopen) and next(verdicts)  # the real catch-up; its verdict forced
            for n, kept in enumerate((False, False, True)):
                assert r.context(**GPU_ASK).candidates == 600 + n and engine.hot.prefixes() != []
                w.write_many(_facts(1, start=600 + n))
                r.refresh()
                assert (engine.hot.prefixes() != []) is kept
            assert r.context(**GPU_ASK).to_json() == w.context(**GPU_ASK).to_json()


def test_the_cache_epoch_moves_with_every_write_but_new_memories_and_packs(tmp_path):
    """`meta/cache_epoch`: set when the store is made, moved by every batch that could
    change what a follower's cache holds, left alone by new memories, `optimize()`,
    and a `rebuild()` of a sound store."""
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as w:
        def epoch() -> int:
            return int.from_bytes(w._engine.storage.get(b"meta/cache_epoch"), "big")

        assert epoch() == 0
        uris = w.write_many(_facts(5000))
        w.write(Fact(statement="one more", subject="s", predicate="p"))
        assert epoch() == 0
        assert w.optimize()["packed"] == 1 and epoch() == 0
        w.rebuild()
        assert epoch() == 0
        w.update_head(uris[0], importance=3)
        assert epoch() == 1
        w.write(Fact(statement="newer", subject="s", predicate="p"), supersedes=[uris[1]])
        assert epoch() == 2
        storage = w._engine.storage
        damaged, _ = next(storage.scan_items(b"sal/"))
        storage.write({damaged: None})  # lost behind the engine's back: rebuild() writes it again
        w.rebuild()
        assert storage.get(damaged) is not None and epoch() == 3


def test_a_store_made_before_the_cache_epoch_gets_one_at_its_next_write(tmp_path):
    """Followers of a store with no epoch keep nothing across a catch-up (an older
    writer would not move it); the first write of this version sets it."""
    clock = FakeClock()
    path = tmp_path / "s"
    with open_store(path, clock) as w:
        w.write_many(_facts(600))
        w._engine.storage.write({b"meta/cache_epoch": None})  # as a store made before it
    with open_store(path, clock) as w, open_store(path, clock, mode="r") as r:
        r.context(**GPU_ASK)
        w.write_many(_facts(3, start=600))
        assert w._engine.storage.get(b"meta/cache_epoch") == bytes(8)
        r.refresh()
        assert r._engine.hot.prefixes() == [] and r.context(**GPU_ASK).candidates == 603
        w.write_many(_facts(3, start=603))
        r.refresh()
        assert r._engine.hot.prefixes() != [] and r.context(**GPU_ASK).candidates == 606


def test_a_damaged_cache_epoch_is_named_by_verify_trusted_by_no_follower_and_replaced(tmp_path):
    clock = FakeClock()
    path = tmp_path / "s"
    with open_store(path, clock) as w:
        w.write_many(_facts(600))
        w._engine.storage.write({b"meta/cache_epoch": b"\x07"})  # damage
    with open_store(path, clock) as w, open_store(path, clock, mode="r") as r:
        assert w.verify() == ["meta/cache_epoch: must be 8 bytes (the next write or rebuild() replaces it)"]
        r.context(**GPU_ASK)
        assert w.rebuild() == [] and w.verify() == []
        r.refresh()
        assert r._engine.hot.prefixes() == []  # the view it left held no sound epoch
        r.context(**GPU_ASK)
        w.write_many(_facts(2, start=600))
        r.refresh()
        assert r._engine.hot.prefixes() != [] and r.context(**GPU_ASK).candidates == 602


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_a_follower_that_keeps_its_caches_answers_as_one_with_none(tmp_path_factory, seed):
    """A follower keeps its caches across catch-ups over new memories alone and drops
    them after anything else; either way it answers exactly as the same follower with
    no caches, whatever the writer did between: new memories (pinned, expiring,
    sharing objects, in batches that share a millisecond), edits, feedback,
    tombstones, edges, packs and rebuilds. `verify()` compares the kept caches with
    the stored keys."""
    rng = random.Random(seed)
    clock = FakeClock()
    path = tmp_path_factory.mktemp("follow") / "s"
    with open_store(path, clock) as w:
        uris: list[str] = []
        _write_some(w, clock, rng, rng.randint(10, 40), uris)
        with open_store(path, clock, mode="r") as r:
            engine = r._engine
            cache, heads, newest, joins = HotFrames(min_rows=1), engine.heads, engine.newest, engine.joins
            kept = 0
            for round_ in range(8):
                roll = 0.0 if round_ == 1 else rng.random()
                if roll < 0.6:
                    clock.now += timedelta(minutes=rng.choice((0, 1, 90)))
                    expires = [NOW + timedelta(days=rng.choice((-1, 1))) if rng.random() < 0.15 else None for _ in range(20)]
                    uris += w.write_many([cortex.Write(_memory(rng, len(uris) + i), frames=_frames(rng), importance=rng.choice((3, 5, 9)),
                                                       expires_at=expires[i]) for i in range(rng.randint(1, 20))])
                elif roll < 0.85:
                    _write_some(w, clock, rng, rng.randint(1, 5), uris)
                elif roll < 0.93:
                    upkeep.optimize(w._engine, min_rows=2)
                else:
                    w.rebuild()
                engine.hot, engine.heads, engine.newest, engine.joins = cache, heads, newest, joins
                had = len(cache)
                r.refresh()
                kept += had > 0 and len(cache) == had
                for _ in range(4):
                    query = _query(rng)
                    engine.hot, engine.heads, engine.newest, engine.joins = cache, heads, newest, joins
                    cached = r.context(**query)
                    engine.hot = engine.heads = engine.newest = engine.joins = None
                    plain = r.context(**query)
                    assert _everything(cached) == _everything(plain), query
                engine.hot, engine.heads, engine.newest, engine.joins = cache, heads, newest, joins
                assert r.verify() == []
            assert kept > 0


def test_survivors_come_from_the_current_heads_and_follow_every_change(tmp_path):
    """A warm call takes its survivors' views from the handle's current heads; an
    update, update_head or tombstone between calls shows in the next bundle, for
    the writer and (after its catch-up) a follower; `verify()` compares the views
    with the stored heads."""
    clock = FakeClock()
    path = tmp_path / "s"
    ask = {"verb": "acquire", "objects": {"service": "gpu"}, "now": NOW, "form": "short"}
    with open_store(path, clock) as w, open_store(path, clock, mode="r") as r:
        uris = w.write_many([cortex.Write(Fact(statement=f"fact {i}", subject="s", predicate="p"), frames=(Frame("acquire", "service", "gpu"),))
                             for i in range(5)])
        r.refresh()
        for c in (w, r):
            c.context(**ask)
            assert len(c._engine.heads) == 5
        changed = w.update(uris[0], Fact(statement="fact zero, corrected", subject="s", predicate="p"))
        w.update_head(uris[1], tags=["checked"])
        w.tombstone(uris[2], "gone")
        r.refresh()
        for c in (w, r):
            b = c.context(**ask)
            by_id = {m.id: m for m in b.memories()}
            zero, one = by_id[uris[0].rsplit("/", 1)[1].split("#")[0]], by_id[uris[1].rsplit("/", 1)[1].split("#")[0]]
            assert zero.uri == changed and b.rendered[zero.id] == "p(s)=fact zero, corrected"
            assert one.tags == ("checked",)
            assert len(b.memories()) == 4 and b.candidates == 4
            assert c.verify() == []
        key, memory = w._engine.heads.items()[0]
        w._engine.heads.put(key, w._engine.heads.items()[1][1])  # a view under another memory's key
        assert any("this handle's view of the head differs from the stored head" in line for line in w.verify())


@pytest.mark.parametrize("bounded", [False, True], ids=["scored-whole", "bounded"])
def test_a_bundle_stays_as_returned_when_a_later_write_rewrites_the_cached_rows(tmp_path, monkeypatch, bounded):
    """A bundle's superseded memories, and its candidates' tokens and scores (and,
    when its call ranked the frame group by group, the dropped ids), are read on
    first access; a write after the call that changes them (applied to the cached
    rows at the next lookup) must not show in a bundle returned before it. Joins
    are lazy at any size here, as a hot frame's are."""
    clock = FakeClock()
    ask = {"verb": "acquire", "objects": {"service": "gpu"}, "now": NOW, "form": "medium"}
    monkeypatch.setattr(columns_module, "_RUNS_FROM", 0)
    tuning = Tuning()
    if bounded:  # the frame's rows ranked by `BoundedRanker`, whose bundle scores every row when first asked
        tuning = Tuning(bounded_from=1, always_bound=True)
        monkeypatch.setattr(call_module, "BoundedRanker", _CountedBounded)
        monkeypatch.setattr(_CountedBounded, "calls", 0)
        ask["budget_tokens"] = 12  # two or three of the five survive
    with open_store(tmp_path / "s", clock, tuning=tuning) as c:
        uris = c.write_many([cortex.Write(Fact(statement=f"fact {i}", subject="s", predicate="p"), frames=(Frame("acquire", "service", "gpu"),),
                                          importance=5) for i in range(5)])
        c.write(Fact(statement="newer", subject="s", predicate="p"), frames=[Frame("acquire", "service", "gpu")], supersedes=[uris[0]])
        c._engine.hot = HotFrames(min_rows=1)
        c.context(**ask)  # caches the frame
        shown = c.context(**ask)
        kept = c.context(**ask)
        first = (dict(shown.superseded_scores), list(shown.superseded_uris), dict(shown.superseded_tokens),
                 dict(shown.tokens), dict(shown.scores), list(shown.dropped_ids))
        assert first[1] == [uris[0]] and len(first[3]) == 5
        assert (shown.trimmed > 0 and _CountedBounded.calls > 0) if bounded else shown.trimmed == 0
        clock.now += timedelta(days=1)
        c.update(uris[0], Fact(statement="fact zero, now much longer than it was before", subject="s", predicate="p"))
        c.update_head(uris[0], importance=10)
        c.update(uris[1], Fact(statement="fact one, now much longer than it was before", subject="s", predicate="p"))
        c.update_head(uris[2], importance=9)
        c.attest([uris[3]], "success")
        later = c.context(**ask)  # applies the writes to the cached rows
        assert list(later.superseded_uris) != first[1] and dict(later.superseded_scores) != first[0]
        assert dict(later.tokens) != first[3] and dict(later.scores) != first[4]
        assert (dict(kept.superseded_scores), list(kept.superseded_uris), dict(kept.superseded_tokens),
                dict(kept.tokens), dict(kept.scores), list(kept.dropped_ids)) == first


def test_the_cache_keeps_at_most_its_row_budget_least_recently_used_first(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        for ref in ("a", "b", "c"):
            c.write_many([cortex.Write(Fact(statement=f"{ref}{i}", subject="s", predicate="p"), frames=(Frame("acquire", "service", ref),))
                          for i in range(10)])
        # Room for the pinned tier's prefix (no rows) and two of the three frames, in
        # the pool of small prefixes.
        cache = c._engine.hot = HotFrames(min_rows=5, small_budget=3 * hot_module.ENTRY_ROWS + 25)
        for ref in ("a", "b", "a", "c"):
            c.context(verb="acquire", objects={"service": ref}, now=NOW)
        frames = [p for p in cache.prefixes() if p.startswith(b"idx/frame/")]
        assert len(frames) == 2 and b"idx/pinned/" in cache.prefixes()  # b was the least recently used when c came in
        read = c._engine.index_entries_read
        c.context(verb="acquire", objects={"service": "a"}, now=NOW)
        c.context(verb="acquire", objects={"service": "c"}, now=NOW)
        assert c._engine.index_entries_read == read
        c.context(verb="acquire", objects={"service": "b"}, now=NOW)
        assert c._engine.index_entries_read == read + 10


def test_small_prefixes_cannot_evict_a_large_one(tmp_path):
    """Prefixes read with fewer than `SMALL_ROWS` entries have a pool of their own:
    however many of them a mix reads, a large prefix stays within its own budget."""
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        c.write_many([cortex.Write(Fact(statement=f"g{i}", subject="s", predicate="p"), frames=(Frame("acquire", "service", "gpu"),))
                      for i in range(hot_module.SMALL_ROWS)])
        for ref in ("a", "b", "c"):
            c.write_many([cortex.Write(Fact(statement=f"{ref}{i}", subject="s", predicate="p"), frames=(Frame("acquire", "service", ref),))
                          for i in range(10)])
        room = hot_module.SMALL_ROWS + hot_module.ENTRY_ROWS
        cache = c._engine.hot = HotFrames(max_rows=room, small_budget=3 * hot_module.ENTRY_ROWS + 25)
        for ref in ("gpu", "a", "b", "c"):
            c.context(verb="acquire", objects={"service": ref}, now=NOW)
        assert cache.rows <= room + 3 * hot_module.ENTRY_ROWS + 25
        read = c._engine.index_entries_read
        c.context(verb="acquire", objects={"service": "gpu"}, now=NOW)
        c.context(verb="acquire", objects={"service": "c"}, now=NOW)
        assert c._engine.index_entries_read == read  # the large prefix and the newest small one
        c.context(verb="acquire", objects={"service": "a"}, now=NOW)
        assert c._engine.index_entries_read == read + 10  # the small pool had room for two
        # One pool of the same total room keeps the small prefixes and drops the large one.
        cache = c._engine.hot = HotFrames(max_rows=room + 3 * hot_module.ENTRY_ROWS + 25, small_budget=0)
        for ref in ("gpu", "a", "b", "c"):
            c.context(verb="acquire", objects={"service": ref}, now=NOW)
        read = c._engine.index_entries_read
        c.context(verb="acquire", objects={"service": "gpu"}, now=NOW)
        assert c._engine.index_entries_read == read + hot_module.SMALL_ROWS


def test_verify_compares_the_cache_with_the_stored_entries(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        c.write_many([cortex.Write(Fact(statement=f"f{i}", subject="s", predicate="p"), frames=(Frame("acquire", "service", "gpu"),))
                      for i in range(8)])
        cache = c._engine.hot = HotFrames(min_rows=1)
        c.context(verb="acquire", objects={"service": "gpu"}, now=NOW)
        assert c.verify() == []
        [prefix] = [p for p in cache.prefixes() if p.startswith(b"idx/frame/")]
        cols = cache.lookup(prefix, c._engine.storage)
        cols["importance"][0] += 1  # what a cache that missed a write would hold
        shown = "idx/frame/" + prefix[len(b"idx/frame/"):].hex()
        assert c.verify() == [f"{shown}: this handle's cache of the entries under it differs from the stored entries"]
        c.rebuild()
        assert c.verify() == [] and len(cache) == 0


@settings(max_examples=300, deadline=None)
@given(scores=st.lists(st.sampled_from([0.1, 0.25, 0.5, 0.5000000000000001, 0.7, 0.9]) | st.floats(0, 1), min_size=1, max_size=3000),
       m=st.integers(1, 400), seed=st.integers(0, 2**32 - 1))
def test_the_partial_ranking_is_the_head_of_the_full_ranking(scores, m, seed):
    """`rank.top` (a sampled cutoff, checked, else a partition) gives exactly the first `m`
    rows of the full (score, id) ranking, ties included, whatever the scores."""
    import numpy as np

    rng = np.random.default_rng(seed)
    s = np.array(scores, dtype=np.float64)
    hi = rng.integers(0, 4, len(s)).astype(np.uint64)  # few distinct: ties on hi too
    lo = rng.permutation(len(s)).astype(np.uint64)
    full = rank_module.ranking(s, hi, lo)
    ids = columns_module.Columns({"id_hi": hi, "id_lo": lo})
    assert rank_module.top(s, ids, m).tolist() == full[:m].tolist()


@settings(max_examples=50, deadline=None)
@given(counts=st.lists(st.integers(0, 5000), min_size=1, max_size=200), offset=st.integers(0, 7))
def test_the_count_share_table_agrees_with_the_formula_to_the_bit(counts, offset):
    import numpy as np

    from cortex.salience import score

    values = np.array([0] * offset + counts, dtype=np.uint32)[offset:]  # any alignment
    assert score._count_share(values).tobytes() == score._count_share_of(values).tobytes()
    assert score._count_share(np.arange(5000, dtype=np.uint32)).tobytes() == score._count_share_of(np.arange(5000, dtype=np.uint32)).tobytes()


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(-10**12, 10**14), st.integers(0, 20000), st.integers(0, 5000), st.integers(0, 10), st.booleans()),
        min_size=1, max_size=300,
    ),
    raw_weights=st.tuples(*[st.sampled_from([0.0, 1.0]) | st.floats(0.01, 1.0)] * 4).filter(lambda w: sum(w) > 0),
    counted=st.sampled_from([None, 0, 1, 2]),
    stamps=st.sampled_from(["<u8", ">u8"]),
    into=st.booleans(),
    sparse_from=st.sampled_from([0, 4096]),
)
def test_live_scores_equal_the_design_formula_to_the_bit(rows, raw_weights, counted, stamps, into, sparse_from):
    """docs/context.md's expression, written plainly, against the in-place `live_scores`
    (counts past the share table's end included): the same bits, pinned floor too.
    `counted` keeps that many rows' access and citation counts and zeroes the rest
    (the sparse sums, taken at any size with `sparse_from` 0), `stamps` is the stamps' byte order (a decoded structured
    array's fields are big-endian), `into` scores into an array given."""
    import numpy as np

    from cortex.salience import score

    now = 1_700_000_000_000_000
    ages, access, citations, importance, pinned = (np.array(col) for col in zip(*rows))
    if counted is not None:
        access[counted:] = 0
        citations[counted:] = 0
    last_used = (now - ages).astype(stamps)
    weights = score.Weights(*(w / sum(raw_weights) for w in raw_weights))
    out = np.full(len(rows), np.nan) if into else None
    saved, score._SPARSE_FROM = score._SPARSE_FROM, sparse_from  # 0: the sparse sums at any size
    try:
        got = score.live_scores(last_used, access.astype(np.uint32), citations.astype(np.uint32), importance.astype(np.uint8), pinned, now, weights, out)
    finally:
        score._SPARSE_FROM = saved
    assert out is None or got is out

    r = np.exp(-np.maximum(0, now - last_used.astype(np.int64)).astype(np.float64) / score.RECENCY_SCALE_US)
    a = np.minimum(1.0, np.log1p(access.astype(np.float64)) / np.log(1001))
    c = np.minimum(1.0, np.log1p(citations.astype(np.float64)) / np.log(1001))
    d = importance.astype(np.float64) / 10.0
    wr, wa, wc, wd = weights.as_tuple()
    plain = (wr * r + wa * a + wc * c + wd * d) / (wr + wa + wc + wd)
    want = np.where(pinned, np.maximum(plain, score.PINNED_FLOOR), plain)
    assert got.tobytes() == want.tobytes()
    profile = score.components(last_used, access.astype(np.uint32), citations.astype(np.uint32), importance.astype(np.uint8), now)
    assert [p.tobytes() for p in profile] == [x.tobytes() for x in (r, a, c, d)]


@settings(max_examples=120, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 60), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
    drop=st.sampled_from(["none", "few", "many"]),
    read_first=st.booleans(),
    runs_from=st.sampled_from([0, 50, 1 << 40]),
    gather_share=st.sampled_from([0, 8, 1 << 40]),
    small_part=st.sampled_from([None, 0, 20, 1024]),
)
def test_joined_and_taken_columns_hold_the_rows_numpy_would(sizes, seed, drop, read_first, runs_from, gather_share, small_part):
    """`Columns.concat` joins lazily (with `small_joined`, runs of small parts at once,
    under `_SMALL_PART` rows each; `small_part` None: without), a boolean take gathers by runs of rows when few (from `_RUNS_FROM`
    rows on), and a small take of a join gathers from its parts (under one row in
    `_GATHER_SHARE`): every column, length, slice and further take must equal plain
    numpy on the concatenated arrays, whichever column was read first."""
    saved = columns_module._RUNS_FROM, columns_module._GATHER_SHARE, columns_module._SMALL_PART
    columns_module._RUNS_FROM, columns_module._GATHER_SHARE, columns_module._SMALL_PART = runs_from, gather_share, small_part or 0
    try:
        _check_joined_and_taken(sizes, seed, drop, read_first, small_joined=small_part is not None)
    finally:
        columns_module._RUNS_FROM, columns_module._GATHER_SHARE, columns_module._SMALL_PART = saved


def _check_joined_and_taken(sizes: list[int], seed: int, drop: str, read_first: bool, small_joined: bool = False) -> None:
    import numpy as np

    from cortex.columns import Columns

    rng = np.random.default_rng(seed)
    arrays = [{"id_hi": rng.integers(0, 2**63, n, dtype=np.uint64), "importance": rng.integers(0, 11, n).astype(np.uint8)} for n in sizes]
    parts = [Columns(dict(a)) for a in arrays]
    if sizes[0] > 2:  # a part that is itself a take, as a cached frame after deletes is
        kept = rng.random(sizes[0]) < 0.7
        parts[0] = parts[0].take(kept)
        arrays[0] = {name: column[kept] for name, column in arrays[0].items()}
    joined = Columns.concat(parts, small_joined=small_joined)
    # Joining small parts at once: two side by side in a lazy join only where one run
    # would reach `_RUNS_FROM` rows. Without: the parts as they were.
    lengths = [len(part) for part in joined.parts()]
    if small_joined:
        assert all(a >= columns_module._SMALL_PART or b >= columns_module._SMALL_PART or a + b >= columns_module._RUNS_FROM
                   for a, b in zip(lengths, lengths[1:]))
    elif len(joined) >= columns_module._RUNS_FROM:
        assert lengths == [len(part) for part in parts]
    plain = {name: np.concatenate([a[name] for a in arrays]) for name in ("id_hi", "importance")}
    n = len(plain["id_hi"])
    mask = {"none": np.ones(n, dtype=bool), "many": rng.random(n) < 0.5}.get(drop, np.ones(n, dtype=bool))
    if drop == "few" and n:
        mask[rng.integers(0, n, 3)] = False
    if read_first:
        joined["importance"]
    taken = joined.take(mask)
    assert len(joined) == n and len(taken) == int(mask.sum())
    for name in ("id_hi", "importance"):
        assert taken[name].tolist() == plain[name][mask].tolist()
        assert joined.materialized()[name].tolist() == plain[name].tolist()
    start, stop = sorted(rng.integers(0, n + 1, 2).tolist())
    assert joined.slice(start, stop)["id_hi"].tolist() == plain["id_hi"][start:stop].tolist()
    again = rng.random(len(taken)) < 0.5
    assert taken.take(again)["importance"].tolist() == plain["importance"][mask][again].tolist()
    rows = rng.integers(0, n, rng.integers(0, 2 * n + 1)) if n else np.zeros(0, dtype=np.int64)  # any order, repeats
    assert joined.take(rows)["id_hi"].tolist() == plain["id_hi"][rows].tolist()
    if len(taken):
        some = rng.integers(0, len(taken), 5)
        assert taken.take(some)["id_hi"].tolist() == plain["id_hi"][mask][some].tolist()
    kept = columns_module.Rows.of(mask)
    assert kept.apply(plain["importance"]).tolist() == plain["importance"][mask].tolist()
    assert joined.take(kept)["importance"].tolist() == plain["importance"][mask].tolist()
    at = 0
    for part in joined.parts():  # a part's own rows, whole (the part itself) or not
        assert joined.slice(at, at + len(part))["importance"].tolist() == plain["importance"][at : at + len(part)].tolist()
        at += len(part)
    assert at == n


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=4), seed=st.integers(0, 2**32 - 1))
def test_the_facts_of_columns_are_those_of_their_rows_joined_or_not(sizes, seed):
    """`Columns.facts` (soundness, latest creation, earliest expiry, flags) of a set
    and of a lazy join of sets equal what the rows show, read plainly."""
    import numpy as np

    from cortex.columns import NO_EXPIRY, Columns
    from cortex.records import TYPE_CODE_MAX, TYPE_CODE_MIN

    rng = np.random.default_rng(seed)
    saved, columns_module._RUNS_FROM = columns_module._RUNS_FROM, 0  # every concat joins lazily
    try:
        arrays = [{
            "id_hi": np.arange(n, dtype=np.uint64),
            "type": rng.choice([0, 1, 4, 8, 200], n).astype(np.uint8),
            "version": rng.choice([0, 1, 2], n, p=[0.05, 0.8, 0.15]).astype(np.uint32),
            "created": rng.integers(0, 2**63, n, dtype=np.uint64),
            "expires": np.array([0, 0, 0, 1, 2**40, 2**64 - 1], dtype=np.uint64)[rng.integers(0, 6, n)],
            "flags": rng.choice([0, 0, 1, 4, 8], n).astype(np.uint8),
        } for n in sizes]
        parts = [Columns(dict(a)) for a in arrays]
        plain = {name: np.concatenate([a[name] for a in arrays]) for name in arrays[0]}
        for cols in (Columns(plain), Columns.concat(parts)):
            facts = cols.facts()
            known = (plain["type"] >= TYPE_CODE_MIN) & (plain["type"] <= TYPE_CODE_MAX)
            assert facts.sound == bool((known & (plain["version"] != 0)).all())
            assert facts.max_created == (int(plain["created"].max()) if len(plain["created"]) else 0)
            nonzero = plain["expires"][plain["expires"] != 0]
            assert facts.min_expires == (int(nonzero.min()) if len(nonzero) else NO_EXPIRY)
            assert facts.flags == int(np.bitwise_or.reduce(plain["flags"], initial=0))
            assert cols.facts() is facts  # computed once
    finally:
        columns_module._RUNS_FROM = saved


def test_the_partial_ranking_checks_its_sampled_cutoff():
    """Scores that only the sampled rows hold high: the sample's cutoff admits fewer
    rows than asked for, and the ranking must fall back to an exact partition."""
    import numpy as np

    for n, m in ((3000, 100), (60000, 256), (5000, 7)):
        step = max(1, n // (8 * m))
        s = np.zeros(n)
        s[::step] = np.linspace(0.5, 1.0, len(s[::step]))
        hi, lo = np.zeros(n, dtype=np.uint64), np.arange(n, dtype=np.uint64)
        ids = columns_module.Columns({"id_hi": hi, "id_lo": lo})
        assert rank_module.top(s, ids, m).tolist() == rank_module.ranking(s, hi, lo)[:m].tolist()


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(-10**12, 10**14), st.integers(0, 20000), st.integers(0, 5000), st.integers(0, 10)),
                  min_size=1, max_size=200),
    raw_weights=st.tuples(*[st.sampled_from([0.0, 1.0]) | st.floats(0.01, 1.0)] * 4).filter(lambda w: sum(w) > 0),
)
def test_a_group_bound_is_at_least_every_score_in_its_group(rows, raw_weights):
    """`upper_bounds` at a part's greatest last use, access and citation counts is at
    least the live score of each of its rows at the row's importance (stamps after
    the call's time included), whatever the weights: what lets `BoundedRanker` leave a
    group unscored."""
    import numpy as np

    from cortex.salience import score

    now = 1_700_000_000_000_000
    ages, access, citations, importance = (np.array(col) for col in zip(*rows))
    last_used = (now - ages).astype(np.uint64)
    access, citations, importance = access.astype(np.uint32), citations.astype(np.uint32), importance.astype(np.uint8)
    weights = score.Weights(*(w / sum(raw_weights) for w in raw_weights))
    scores = score.live_scores(last_used, access, citations, importance, np.zeros(len(rows), dtype=bool), now, weights)
    bounds = score.upper_bounds(int(last_used.max()), int(access.max()), int(citations.max()), np.arange(11, dtype=np.uint8), now, weights)
    assert (scores <= bounds[importance]).all()
    assert (bounds[:-1] <= bounds[1:]).all()  # a higher importance never bounds lower


@settings(max_examples=150, deadline=None)
@given(
    ages=st.lists(st.integers(-10**12, 10**14) | st.sampled_from([0, 1, 10**9, 10**9 + 1]), min_size=2, max_size=300),
    importance=st.integers(0, 10),
    raw_weights=st.tuples(*[st.sampled_from([0.0, 1.0]) | st.floats(0.01, 1.0)] * 4).filter(lambda w: sum(w) > 0),
)
def test_no_plain_row_scores_above_raised_of_an_earlier_one(ages, importance, raw_weights):
    """The rows of a group with no access and no citation (`bounded.Group.plain`),
    latest last use first: no row scores above `raised` of any earlier row's score
    (stamps after the call's time included), whatever the weights. What lets
    `BoundedRanker` leave the rest of a group unscored after any of its rows."""
    import numpy as np

    from cortex.columns import Columns
    from cortex.salience import score

    now = 1_700_000_000_000_000
    n = len(ages)
    part = Columns({
        "last_used": (now - np.array(ages)).astype(np.uint64), "access": np.zeros(n, dtype=np.uint32),
        "citations": np.zeros(n, dtype=np.uint32), "importance": np.full(n, importance, dtype=np.uint8),
        "id_hi": np.arange(n, dtype=np.uint64), "id_lo": np.zeros(n, dtype=np.uint64),
    })
    weights = score.Weights(*(w / sum(raw_weights) for w in raw_weights))
    plain = bounded_module.Group.of(part, importance).plain
    assert len(plain.rows) == n and (np.diff(plain.last_used.astype(np.int64)) <= 0).all()
    values = plain.scores(0, n, now, weights)
    assert (values == score.live_scores(part["last_used"], part["access"], part["citations"], part["importance"],
                                        np.zeros(n, dtype=bool), now, weights)[plain.rows]).all()
    assert all(values[i + 1:].max() <= score.raised(float(values[i])) for i in range(n - 1))


# Draws on which a fault showed, each fault tried alone: rows with citations (with an
# access) taken as plain, tails bounded below their last scored row.
@example(seed=0, sizes=(0, 1, 296), stamps=3, counted_share=0.01, going_share=0.0, raw_weights=(0.4, 0.2, 0.2, 0.2), asked=[2])
@example(seed=0, sizes=(0, 1, 80), stamps=3, counted_share=0.1, going_share=0.0, raw_weights=(0.4, 0.2, 0.2, 0.2), asked=[1])
@example(seed=0, sizes=(0, 1, 39), stamps=3, counted_share=0.0, going_share=0.0, raw_weights=(0.35, 0.0, 0.0, 0.65), asked=[1])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    sizes=st.tuples(st.integers(0, 40), st.integers(1, 3000), st.integers(0, 3000)),
    stamps=st.sampled_from([3, 50, 10**6]),
    counted_share=st.sampled_from([0.0, 0.01, 0.1, 0.5, 1.0]),
    going_share=st.sampled_from([0.0, 0.002, 0.3]),
    raw_weights=st.sampled_from([(0.35, 0.0, 0.0, 0.65), (0.4, 0.2, 0.2, 0.2), (0.5, 0.25, 0.25, 0.0), (0.0, 0.0, 0.0, 1.0),
                                 (1.0, 0.0, 0.0, 0.0), (0.0, 0.5, 0.5, 0.0)]),
    asked=st.lists(st.integers(1, 7000), min_size=1, max_size=4),
)
def test_the_bounded_ranking_is_the_head_of_the_ranking_of_every_score(seed, sizes, stamps, counted_share, going_share, raw_weights, asked):
    """`BoundedRanker.top(m)` for growing `m` (as the trim asks) gives the `m` best rows by
    (score, id) of every row scored, with their scores, on candidates of a small part
    scored whole (some of it pinned) and one or two large parts scored group by group
    and row by row: last uses with many ties or few, some rows or all with an access
    or a citation, rows dropped, weights that leave importance, recency or both out."""
    import numpy as np

    from cortex.columns import Columns

    rng = np.random.default_rng(seed)
    now, day = 1_700_000_000_000_000, 86_400_000_000

    ids = iter(rng.permutation(sum(sizes)).tolist())  # no two rows share an id (copies go before ranking)

    def part(n: int) -> Columns:
        return Columns({
            "last_used": (now - rng.integers(0, stamps, n) * (392 * day // stamps)).astype(np.uint64),
            "access": (rng.integers(1, 50, n) * (rng.random(n) < counted_share)).astype(np.uint32),
            "citations": (rng.integers(1, 9, n) * (rng.random(n) < counted_share)).astype(np.uint32),
            "importance": rng.integers(0, 11, n).astype(np.uint8),
            "id_hi": rng.integers(0, 4, n).astype(np.uint64), "id_lo": np.array([next(ids) for _ in range(n)], dtype=np.uint64),
        })

    saved = columns_module._RUNS_FROM
    columns_module._RUNS_FROM = 0  # the join keeps its parts
    always = Tuning(always_bound=True)
    try:
        cols = Columns.concat([part(n) for n in sizes])
        parts = cols.parts()
        weights = Weights(*raw_weights)
        pinned = np.zeros(len(cols), dtype=bool)
        pinned[: sizes[0]] = rng.random(sizes[0]) < 0.5
        going = np.flatnonzero(rng.random(len(cols)) < going_share)
        starts = np.cumsum([0, *sizes[:-1]])
        bounded = [(int(start), p, bounded_module.part_groups(p, now, weights, always)) for start, p in zip(starts[1:], parts[1:]) if len(p)]
        every = rank_module.ranked_scores(cols, pinned, now, weights, going)
        ranking = bounded_module.BoundedRanker(cols, pinned, bounded, now, weights, going)
        count = len(cols) - len(going)  # the trim asks for no more
        for m in sorted(min(m, count) for m in asked if count):
            top = ranking.top(m)
            assert top.tolist() == rank_module.top(every, cols, m).tolist()
            assert (ranking.scores()[top] == every[top]).all()
    finally:
        columns_module._RUNS_FROM = saved


def test_groups_are_bounded_only_where_opening_them_costs_less_than_scoring_every_row():
    """`bounded.worth_bounding` on a 60,000-row part, importances 0-10 in equal shares and
    last uses over a year: yes under weights like those the harness's stores learn
    (importance 0.65: one group to open) and under the default weights (docs/context.md) (a few),
    no with no weight on importance, where the groups' bounds all lie above what the
    best rows must score, nor on a third of the part under the default weights; and
    not on the first call on columns that writes made anew."""
    import numpy as np

    from cortex.columns import Columns
    from cortex.salience.score import DEFAULT_WEIGHTS

    rng = np.random.default_rng(7)
    n, now, day = 60_000, 1_700_000_000_000_000, 86_400_000_000
    part = Columns({
        "last_used": (now - rng.integers(27 * day, 392 * day, n)).astype(np.uint64),
        "access": (rng.random(n) < 0.003).astype(np.uint32), "citations": np.zeros(n, dtype=np.uint32),
        "importance": rng.integers(0, 11, n).astype(np.uint8),
        "id_hi": np.arange(n, dtype=np.uint64), "id_lo": np.zeros(n, dtype=np.uint64),
    })
    def worth(weights: Weights) -> bool:
        return bounded_module.worth_bounding(part, now, weights, Tuning())

    assert worth(Weights(0.35, 0.0, 0.0, 0.65))
    assert worth(DEFAULT_WEIGHTS)
    assert not worth(Weights(0.5, 0.25, 0.25, 0.0))
    assert not bounded_module.worth_bounding(part.slice(0, n // 3), now, DEFAULT_WEIGHTS, Tuning())
    # Columns that writes made anew (a writer's cached frame after a write): the first
    # call scores every row and computes nothing; the next one decides, and its groups
    # serve later calls with the same weights, not earlier ones or other weights.
    learned = Weights(0.35, 0.0, 0.0, 0.65)
    fresh = Columns(part.data)
    fresh.state().refreshed = True
    assert bounded_module.part_groups(fresh, now, learned, Tuning()) is None and not fresh.known("maxima")
    groups = bounded_module.part_groups(fresh, now, learned, Tuning())
    assert groups is not None and [importance for _, importance in groups[:3]] == [10, 9, 8]
    assert bounded_module.part_groups(fresh, now + 3_600_000_000, learned, Tuning()) is groups
    assert bounded_module.part_groups(fresh, now - 1, learned, Tuning()) is not groups
    assert bounded_module.part_groups(fresh, now, Weights(0.5, 0.25, 0.25, 0.0), Tuning()) is None


@settings(max_examples=200, deadline=None)
@given(ref=st.sets(st.tuples(st.sampled_from([0, 1, 7, 2**63, 2**64 - 1]), st.sampled_from([0, 1, 255, 256, 2**8 * 3, 2**63, 2**64 - 1])
                             | st.integers(0, 2**64 - 1)), max_size=60),
       asked=st.lists(st.tuples(st.sampled_from([0, 1, 7, 2**63, 2**64 - 1, 5]), st.sampled_from([0, 1, 255, 256, 2**63, 2**64 - 1])), max_size=30),
       picked=st.lists(st.integers(0, 59), max_size=30), one_by_one=st.sampled_from([0, 8, 1 << 40]))
def test_locate_finds_each_id_in_a_block_ordered_by_id(ref, asked, picked, one_by_one):
    """Ids that share their high half (a `write_many` batch's ids share it) and low
    halves that end in zero bytes are found exactly, and absent ids are -1, searched
    in their own runs (`one_by_one` of them at most) or as strings."""
    import numpy as np

    ordered = sorted(ref)
    where = {pair: row for row, pair in enumerate(ordered)}
    queries = asked + [ordered[i] for i in picked if i < len(ordered)]
    column = lambda pairs, i: np.array([pair[i] for pair in pairs], dtype=np.uint64)  # noqa: E731
    saved, columns_module._SEARCHED_ONE_BY_ONE = columns_module._SEARCHED_ONE_BY_ONE, one_by_one
    try:
        rows = columns_module.locate(column(queries, 0), column(queries, 1), column(ordered, 0), column(ordered, 1))
    finally:
        columns_module._SEARCHED_ONE_BY_ONE = saved
    assert rows.tolist() == [where.get(pair, -1) for pair in queries]


def test_a_hot_call_keeps_its_candidates_with_its_frame(tmp_path):
    """A call of `Tuning.joined_below_rows` candidates or more keeps what it made of
    its blocks under its frame prefix in `JoinedCalls` (not in the pool of small
    calls): the next call on the same blocks takes it from there and answers the
    same, a write elsewhere leaves it, a call on other blocks with the same frame
    replaces it, and a write to the frame drops it (its columns are new)."""
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        c.write_many(_facts(20) + _facts(5000, ref="big", start=20))
        engine = c._engine
        big = {**GPU_ASK, "objects": {"service": "big"}, "budget_tokens": 300}
        prefix = frame_module.prefix(Verb.ACQUIRE, ObjKind.SERVICE, "big")

        def kept_with_frame():
            framed = engine.joins.framed(prefix)
            return engine.hot._find(prefix, touch=False)[1].cols, (None if framed is None else framed[1])

        first = c.context(**big)
        cols, kept = kept_with_frame()
        assert kept is not None and len(engine.joins) == 0 and not kept.tiers.flags.writeable
        assert c.context(**big).to_json() == first.to_json() and kept_with_frame() == (cols, kept)
        c.write(Fact(statement="elsewhere", subject="s", predicate="p"), frames=[Frame("acquire", "service", "gpu")])
        again = c.context(**big)
        assert {**again.to_dict(), "root": first.root} == first.to_dict() and kept_with_frame() == (cols, kept)
        frame_only = c.context(**{**big, "include_tiers": ["frame_relevant"]})  # other blocks, the same frame
        assert frame_only.candidates == 5000 and kept_with_frame()[0] is cols and kept_with_frame()[1] is not kept
        c.write(Fact(statement="newest", subject="s", predicate="p"), frames=[Frame("acquire", "service", "big")])
        assert engine.joins.framed(prefix) is None
        after = c.context(**big)
        new_cols, new_kept = kept_with_frame()
        assert after.candidates == 5001 and new_cols is not cols and new_kept is not None and new_kept.cols is not kept.cols


def test_a_call_on_the_same_blocks_takes_its_candidates_from_the_handle(tmp_path):
    """`JoinedCalls`: a second call on the same objects in the same view joins nothing
    again and answers the same; a write to one of its objects gives a new block, so
    the next call joins afresh and shows the write; the kept arrays are read-only;
    the byte budget drops the least recently used call first."""
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        c.write_many(_facts(20) + _facts(5000, ref="big", start=20))
        engine = c._engine
        ask = {**GPU_ASK, "budget_tokens": 300}
        big = {**GPU_ASK, "objects": {"service": "big"}, "budget_tokens": 300}
        first = c.context(**ask)
        c.context(**big)
        assert len(engine.joins) == 1  # 5,000 candidates: joined (lazily) each time
        [small_key] = list(engine.joins._calls)
        kept = engine.joins.get(small_key)
        assert c.context(**ask).to_json() == first.to_json() and len(engine.joins) == 1
        assert not kept.tiers.flags.writeable and not kept.pinned.flags.writeable
        assert c.context(**big).candidates == 5000 and len(engine.joins) == 1
        new = c.write(Fact(statement="newest", subject="s", predicate="p"), frames=[Frame("acquire", "service", "gpu")], importance=10)
        after = c.context(**ask)
        assert after.candidates == 21 and new.rsplit("/", 1)[1].split("#")[0] in after.scores
        assert len(engine.joins) == 2  # the old call's entry stands until the budget drops it
        engine.joins = JoinedCalls(max_bytes=1)
        c.context(**ask)
        assert len(engine.joins) == 0  # a call larger than the budget is not kept
        engine.joins = JoinedCalls(max_bytes=21 * Tuning().row_bytes + 10)
        c.context(**ask)
        c.context(**{**ask, "budget_tokens": 100})  # the same blocks: the same entry
        [key] = list(engine.joins._calls)
        c.context(**{**ask, "include_tiers": ["frame_relevant"]})  # 21 rows more: the first goes
        assert len(engine.joins) == 1 and list(engine.joins._calls) != [key]
