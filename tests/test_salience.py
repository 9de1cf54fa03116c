"""Salience feedback and learned weights: docs/context.md (`attest`, the salience record,
learned weights), with the docs/architecture.md rules that bind them (attest is journaled, changes the
root, rewrites index values in the same batch, and `rebuild()` replays it).

Every test runs on a real RocksDB store in a temporary directory, with a clock that
stands still unless advanced, so every expected number is computed exactly.
"""

from __future__ import annotations

import math
import random
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cortex
from conftest import FakeClock, open_store
from cortex import Constraint, Fact, Frame, Goal, Preference
from cortex.ids import encode_id
from cortex.index import DERIVED_PREFIXES
from cortex.salience import DEFAULT_WEIGHTS, score_of
from cortex.records import META_WEIGHTS, SALIENCE_PREFIX

SAL_START = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)
SAL_DAY = 86400.0
SAL_RECENCY_US = 90 * 86400 * 1_000_000


def sal_open(path, clock, *, seed: int = 11, mode: str = "rw") -> cortex.Cortex:
    return open_store(Path(path), clock, mode=mode, entropy=random.Random(seed).randbytes)


@pytest.fixture
def sal_clock() -> FakeClock:
    return FakeClock(SAL_START)


@pytest.fixture
def sal_store(tmp_path, sal_clock):
    c = sal_open(tmp_path / "s", sal_clock)
    try:
        yield c
    finally:
        c.close()


def sal_fact(i: int) -> Fact:
    return Fact(statement=f"statement {i}", subject=f"subject{i}", predicate="is")


def sal_weights_tuple(w: cortex.Weights) -> tuple[float, float, float, float]:
    return (w.recency, w.access, w.citation, w.importance)


def sal_profile(record: cortex.Score, now: datetime) -> tuple[float, float, float, float]:
    """(R, A, C, D) of one salience record at `now`, straight from the formulas in docs/context.md."""
    age_us = max(0, (now - record.last_used) // timedelta(microseconds=1))
    r = math.exp(-age_us / SAL_RECENCY_US)
    a = min(1.0, math.log(1 + record.access_count) / math.log(1001))
    c = min(1.0, math.log(1 + record.citations) / math.log(1001))
    d = record.importance / 10
    return (r, a, c, d)


def sal_expected_weights(weights, records, now, outcome):
    """The learning rule of docs/context.md, by hand: profile = mean (R, A, C, D) of the cited records
    (as they were before the attest) normalised to sum 1; each weight moves toward it
    by 0.05 of the gap on success, away from it on failure (clamped at 0); then the
    weights are renormalised to sum 1."""
    profiles = [sal_profile(r, now) for r in records]
    mean = [sum(p[k] for p in profiles) / len(profiles) for k in range(4)]
    total = sum(mean)
    target = [m / total for m in mean]
    if outcome == "success":
        moved = [w + 0.05 * (p - w) for w, p in zip(weights, target)]
    else:
        moved = [max(0.0, w - 0.05 * (p - w)) for w, p in zip(weights, target)]
    norm = sum(moved)
    return tuple(m / norm for m in moved)


def sal_derived_snapshot(c: cortex.Cortex) -> dict[bytes, bytes]:
    out = {}
    for prefix in (*DERIVED_PREFIXES, SALIENCE_PREFIX):
        out.update(dict(c._engine.storage.scan_items(prefix)))
    return out


def sal_wipe_derived(c: cortex.Cortex) -> None:
    doomed = [META_WEIGHTS]
    for prefix in (*DERIVED_PREFIXES, SALIENCE_PREFIX):
        doomed.extend(k for k, _ in c._engine.storage.scan_items(prefix))
    for key in doomed:
        c._engine.storage.write({key: None})


def sal_unknown_uri(c: cortex.Cortex) -> str:
    raw = bytes(range(1, 17))
    assert all(m.id != encode_id(raw) for m in c.memories(include_tombstoned=True))
    return f"cortex://Fact/{encode_id(raw)}#1"


# ---------------------------------------------------------------------------
# write: the record a new memory starts with


def _mixed_batch() -> list[cortex.Write]:
    """Memories that share an importance but not a pinned tier, and the reverse."""
    return [
        cortex.Write(Constraint(statement="never pay above 2 USD/h", strength="hard", polarity="dont", source="user_declared"), importance=3),
        cortex.Write(Constraint(statement="prefer EU hosting", strength="soft", polarity="prefer", source="learned"), importance=3),
        cortex.Write(sal_fact(1), importance=3),
        cortex.Write(sal_fact(2), importance=7),
        cortex.Write(Goal(statement="ship the lease API", status="active"), importance=7),
        cortex.Write(Goal(statement="ship the lease API", status="paused"), importance=0),
    ]


def test_write_many_stores_the_records_that_writes_one_at_a_time_store(tmp_path, sal_clock):
    """write_many builds each distinct new record once per batch (memories written at one
    instant differ only in importance and pinned tier): its stored records equal, byte
    for byte, those of the same memories written one call each at that instant."""
    with sal_open(tmp_path / "many", sal_clock) as many, sal_open(tmp_path / "one", sal_clock) as one:
        many.write_many(_mixed_batch())
        for item in _mixed_batch():
            one.write(item.data, importance=item.importance)
        stored = [value for _, value in many._engine.storage.scan_items(SALIENCE_PREFIX)]
        assert stored == [value for _, value in one._engine.storage.scan_items(SALIENCE_PREFIX)]
        records = [many.salience(m.uri) for m in many.memories()]
        assert [(r.importance, r.pinned) for r in records] == [(3, True), (3, False), (3, False), (7, False), (7, True), (0, False)]
        assert {r.last_used for r in records} == {SAL_START} and {(r.access_count, r.citations) for r in records} == {(0, 0)}


# ---------------------------------------------------------------------------
# attest: what it does to the salience records


def test_attest_success_adds_one_citation_and_one_access(sal_store, sal_clock):
    c = sal_store
    a = c.write(sal_fact(1), importance=3)
    b = c.write(sal_fact(2), importance=3)
    before_a, before_b = c.salience(a), c.salience(b)
    assert (before_a.citations, before_a.access_count) == (0, 0)

    sal_clock.advance(60)
    c.attest([a], "success")
    after = c.salience(a)
    assert after.citations == 1
    assert after.access_count == 1
    assert after.importance == before_a.importance
    assert after.pinned == before_a.pinned
    assert c.salience(b) == before_b  # an uncited memory is untouched

    c.attest([a, b], "success")
    assert (c.salience(a).citations, c.salience(a).access_count) == (2, 2)
    assert (c.salience(b).citations, c.salience(b).access_count) == (1, 1)


def test_a_successful_attest_is_a_use_it_sets_last_used(sal_store, sal_clock):
    # docs/context.md: a citation is a use, so last_used moves to the attest time.
    c = sal_store
    uri = c.write(sal_fact(1), importance=3)
    written_at = c.salience(uri).last_used
    sal_clock.advance(10 * SAL_DAY)
    c.attest([uri], "success")
    assert c.salience(uri).last_used == sal_clock.now != written_at


@pytest.mark.parametrize("reason", [cortex.FACTUAL_ERROR, cortex.WRONG_ASSUMPTION, "timeout", None])
def test_a_failed_attest_is_not_a_use_last_used_stays(sal_store, sal_clock, reason):
    c = sal_store
    uri = c.write(sal_fact(1), importance=3)
    c.attest([uri], "success")
    used = c.salience(uri).last_used
    sal_clock.advance(10 * SAL_DAY)
    c.attest([uri], "failure", reason)
    assert c.salience(uri).last_used == used


def test_a_late_binding_find_is_a_use_it_sets_last_used(sal_store, sal_clock):
    c = sal_store
    found_uri = c.write(sal_fact(1), tags=["t"], importance=9)
    other_uri = c.write(sal_fact(2), tags=["t"], importance=0)
    before = c.salience(other_uri)
    sal_clock.advance(3 * SAL_DAY)
    [found] = c.find(tags=["t"], limit=1, late_binding=True)
    assert found.uri == found_uri
    record = c.salience(found_uri)
    assert (record.last_used, record.access_count) == (sal_clock.now, 1)
    assert c.salience(other_uri) == before  # not returned: untouched
    sal_clock.advance(SAL_DAY)
    c.find(tags=["t"], limit=1)  # a plain find is not a use
    assert c.salience(found_uri) == record
    assert c.verify() == []


def test_learning_reads_the_profile_from_before_the_bump(sal_store, sal_clock):
    # Two attests of a memory last used 90 days ago: the first learns from R = 1/e (its
    # record before the attest), the second from R = 1 (the first attest was a use).
    c = sal_store
    uri = c.write(sal_fact(1), importance=0)
    sal_clock.advance(90 * SAL_DAY)
    c.attest([uri], "success")
    p = [math.exp(-1), 0.0, 0.0, 0.0]
    w = [0.25, 0.15, 0.30, 0.20]
    moved = [wi + 0.05 * (pi / sum(p) - wi) for wi, pi in zip(w, p)]
    first = [m / sum(moved) for m in moved]
    assert sal_weights_tuple(c.weights()) == pytest.approx(first, abs=1e-12, rel=0)
    record = c.salience(uri)
    assert sal_profile(record, sal_clock.now)[0] == 1.0  # the attest was a use
    c.attest([uri], "success")
    expected = sal_expected_weights(first, [record], sal_clock.now, "success")
    assert sal_weights_tuple(c.weights()) == pytest.approx(expected, abs=1e-12, rel=0)


def test_the_citation_losing_reasons_are_exported():
    assert (cortex.FACTUAL_ERROR, cortex.WRONG_ASSUMPTION) == ("factual_error", "wrong_assumption")
    assert {"FACTUAL_ERROR", "WRONG_ASSUMPTION"} <= set(cortex.__all__)


@pytest.mark.parametrize("reason", ["factual_error", "wrong_assumption"])
def test_attest_failure_with_losing_reason_removes_a_citation_never_below_zero(sal_store, reason):
    c = sal_store
    uri = c.write(sal_fact(1))
    c.attest([uri], "success")
    c.attest([uri], "success")
    assert c.salience(uri).citations == 2
    access = c.salience(uri).access_count

    c.attest([uri], "failure", reason)
    assert c.salience(uri).citations == 1
    c.attest([uri], "failure", reason)
    assert c.salience(uri).citations == 0
    c.attest([uri], "failure", reason)  # already at 0: stays there
    assert c.salience(uri).citations == 0
    assert c.salience(uri).access_count == access  # failure takes citations only


@pytest.mark.parametrize("reason", [None, "timeout", "user changed their mind"])
def test_attest_failure_with_other_reason_leaves_citations_unchanged(sal_store, reason):
    c = sal_store
    uri = c.write(sal_fact(1))
    c.attest([uri], "success")
    before = c.salience(uri)
    c.attest([uri], "failure", reason)
    after = c.salience(uri)
    assert after.citations == before.citations == 1
    assert after.access_count == before.access_count


def test_attest_success_with_a_reason_still_counts(sal_store):
    # "a reason is accepted with either outcome and matters only on failure"
    c = sal_store
    uri = c.write(sal_fact(1))
    c.attest([uri], "success", "factual_error")
    assert c.salience(uri).citations == 1
    assert c.salience(uri).access_count == 1


def test_attest_same_memory_twice_in_one_call_counts_once(sal_store):
    c = sal_store
    uri = c.write(sal_fact(1))
    other = c.write(sal_fact(2))
    c.attest([uri, uri, other, uri], "success")
    assert (c.salience(uri).citations, c.salience(uri).access_count) == (1, 1)
    assert (c.salience(other).citations, c.salience(other).access_count) == (1, 1)

    # two versions of one memory are the same memory
    v2 = c.update(uri, Fact(statement="statement 1 revised", subject="subject1", predicate="is"))
    c.attest([uri, v2], "success")
    assert (c.salience(uri).citations, c.salience(uri).access_count) == (2, 2)


def test_attest_same_memory_twice_learns_like_once(tmp_path):
    # The weights learn from the cited memories; naming one twice must not weigh it double.
    clock_a, clock_b = FakeClock(), FakeClock()
    with sal_open(tmp_path / "a", clock_a) as a, sal_open(tmp_path / "b", clock_b) as b:
        for c, clock in ((a, clock_a), (b, clock_b)):
            c.write(sal_fact(1), importance=9)
            clock.advance(30 * SAL_DAY)
            c.write(sal_fact(2), importance=1)
        u1a, u2a = [m.uri for m in a.memories()]
        u1b, u2b = [m.uri for m in b.memories()]
        a.attest([u1a, u1a, u2a], "success")
        b.attest([u1b, u2b], "success")
        assert a.weights() == b.weights()


def test_attest_accepts_uris_of_old_versions(sal_store):
    c = sal_store
    v1 = c.write(sal_fact(1))
    v2 = c.update(v1, Fact(statement="second", subject="subject1", predicate="is"))
    c.update(v2, Fact(statement="third", subject="subject1", predicate="is"))
    c.attest([v1], "success")
    c.attest([v2], "success")
    assert c.salience(v1).citations == 2
    c.attest([v1], "failure", "wrong_assumption")
    assert c.salience(v1).citations == 1


# ---------------------------------------------------------------------------
# attest: rejected calls write nothing


def _sal_reject_cases():
    return [
        ("unknown id", lambda c, u: ([sal_unknown_uri(c)], "success", None), cortex.NotFound),
        ("unknown id beside a good one", lambda c, u: ([u["live"], sal_unknown_uri(c)], "success", None), cortex.NotFound),
        ("version not written yet", lambda c, u: ([u["live"][:-2] + "#9"], "success", None), cortex.NotFound),
        ("right id, wrong type", lambda c, u: ([u["live"].replace("cortex://Fact/", "cortex://Goal/")], "success", None), cortex.NotFound),
        ("tombstoned", lambda c, u: ([u["dead"]], "success", None), cortex.MemoryTombstoned),
        ("tombstoned beside a good one", lambda c, u: ([u["live"], u["dead"]], "failure", "factual_error"), cortex.MemoryTombstoned),
        ("not a uri", lambda c, u: (["not-a-uri"], "success", None), cortex.BadURI),
        ("bad ulid", lambda c, u: (["cortex://Fact/NOTAULID#1"], "success", None), cortex.BadURI),
        ("version 0", lambda c, u: ([u["live"][:-2] + "#0"], "success", None), cortex.BadURI),
        ("unknown type name", lambda c, u: ([u["live"].replace("cortex://Fact/", "cortex://Rumour/")], "success", None), cortex.BadURI),
        ("bad uri beside a good one", lambda c, u: ([u["live"], "cortex://Fact/"], "success", None), cortex.BadURI),
        ("outcome maybe", lambda c, u: ([u["live"]], "maybe", None), cortex.ValidationError),
        ("outcome None", lambda c, u: ([u["live"]], None, None), cortex.ValidationError),
        ("empty cited", lambda c, u: ([], "success", None), cortex.ValidationError),
        ("cited a bare string", lambda c, u: (u["live"], "success", None), cortex.ValidationError),
        ("reason not text", lambda c, u: ([u["live"]], "failure", 42), cortex.ValidationError),
    ]


@pytest.mark.parametrize("name,make,error", _sal_reject_cases(), ids=[case[0] for case in _sal_reject_cases()])
def test_rejected_attest_raises_and_writes_nothing(sal_store, sal_clock, name, make, error):
    c = sal_store
    uris = {"live": c.write(sal_fact(1), importance=4), "dead": c.write(sal_fact(2))}
    c.tombstone(uris["dead"], "obsolete")
    c.attest([uris["live"]], "success")  # so the weights are learned ones, not the defaults
    sal_clock.advance(3600)
    root, weights = c.root(), c.weights()
    records = {k: c.salience(u) for k, u in uris.items()}
    seq = c.stats()["journal_seq"]

    cited, outcome, reason = make(c, uris)
    with pytest.raises(error):
        c.attest(cited, outcome, reason)

    assert c.root() == root
    assert c.weights() == weights
    assert {k: c.salience(u) for k, u in uris.items()} == records
    assert c.stats()["journal_seq"] == seq
    assert c.verify() == []


def test_bad_uri_is_a_validation_error_and_not_found_a_lookup_error(sal_store):
    c = sal_store
    with pytest.raises(ValueError):
        c.attest(["nope"], "success")
    with pytest.raises(LookupError):
        c.attest([sal_unknown_uri(c)], "success")


def test_attest_on_read_only_handle_raises_read_only_store(tmp_path, sal_clock):
    path = tmp_path / "s"
    with sal_open(path, sal_clock) as writer:
        uri = writer.write(sal_fact(1))
        root, weights, record = writer.root(), writer.weights(), writer.salience(uri)
        reader = sal_open(path, sal_clock, mode="r")
        try:
            with pytest.raises(cortex.ReadOnlyStore):
                reader.attest([uri], "success")
            assert reader.root() == root
            assert reader.weights() == weights
        finally:
            reader.close()
        assert writer.root() == root
        assert writer.weights() == weights
        assert writer.salience(uri) == record


# ---------------------------------------------------------------------------
# attest and the root


@pytest.mark.parametrize("outcome,reason", [("success", None), ("failure", "factual_error"), ("failure", None), ("failure", "timeout")])
def test_every_attest_changes_the_root(sal_store, outcome, reason):
    c = sal_store
    uri = c.write(sal_fact(1))
    before = c.root()
    c.attest([uri], outcome, reason)
    after = c.root()
    assert after != before
    assert len(after) == 64
    c.attest([uri], outcome, reason)  # the same call again is a new journal entry
    assert c.root() not in (before, after)
    assert c.verify() == []


def test_attest_root_survives_reopen(tmp_path, sal_clock):
    path = tmp_path / "s"
    with sal_open(path, sal_clock) as c:
        uri = c.write(sal_fact(1), importance=5)
        c.attest([uri], "success")
        root, weights, record = c.root(), c.weights(), c.salience(uri)
    with sal_open(path, sal_clock, seed=99) as c:
        assert c.root() == root
        assert c.weights() == weights
        assert c.salience(uri) == record
        assert c.verify() == []


# ---------------------------------------------------------------------------
# learned weights


def test_weights_start_at_the_defaults(sal_store):
    c = sal_store
    assert c.weights() == DEFAULT_WEIGHTS
    assert sal_weights_tuple(c.weights()) == (0.25, 0.15, 0.30, 0.20)
    c.write(sal_fact(1), importance=7)  # writes do not learn
    assert c.weights() == DEFAULT_WEIGHTS
    assert isinstance(c.weights(), cortex.Weights)


def test_weights_after_attests_follow_the_rule_by_hand(sal_store, sal_clock):
    c = sal_store
    u1 = c.write(sal_fact(1), importance=8)
    sal_clock.advance(20 * SAL_DAY)
    u2 = c.write(Preference(topic="tone", polarity="prefer", strength=0.8), importance=2)
    sal_clock.advance(45 * SAL_DAY)
    u3 = c.write(Goal(statement="ship it", status="active"), importance=10)
    sal_clock.advance(5 * SAL_DAY + 17.25)

    expected = sal_weights_tuple(DEFAULT_WEIGHTS)
    steps = [
        ([u1, u2], "success", None, 3 * SAL_DAY),
        ([u3], "success", None, 0),
        ([u1, u2, u3], "failure", "factual_error", 11 * SAL_DAY + 0.5),
        ([u2], "failure", None, 100 * SAL_DAY),
        ([u1, u3], "success", "irrelevant", 1),
        ([u2, u3], "failure", "wrong_assumption", 2 * SAL_DAY),
    ]
    for cited, outcome, reason, advance in steps:
        sal_clock.advance(advance)
        records = [c.salience(u) for u in cited]  # the records BEFORE the attest
        expected = sal_expected_weights(expected, records, sal_clock.now, outcome)
        c.attest(cited, outcome, reason)
        got = sal_weights_tuple(c.weights())
        assert got == pytest.approx(expected, abs=1e-12, rel=0)
        assert sum(got) == pytest.approx(1.0, abs=1e-12)
        assert min(got) >= 0.0
    assert c.verify() == []


def test_first_attest_renormalises_the_default_weights(sal_store):
    c = sal_store
    uri = c.write(sal_fact(1), importance=5)
    record = c.salience(uri)
    c.attest([uri], "success")
    got = sal_weights_tuple(c.weights())
    assert sum(got) == pytest.approx(1.0, abs=1e-12)
    # profile of a fresh, unused memory of importance 5: R=1, A=0, C=0, D=0.5
    assert sal_profile(record, c._engine.clock()) == (1.0, 0.0, 0.0, 0.5)
    w = [0.25, 0.15, 0.30, 0.20]
    p = [2 / 3, 0.0, 0.0, 1 / 3]
    moved = [wi + 0.05 * (pi - wi) for wi, pi in zip(w, p)]
    assert got == pytest.approx(tuple(m / sum(moved) for m in moved), abs=1e-12, rel=0)


def test_repeated_failures_clamp_weights_at_zero(sal_store):
    # A fresh memory of importance 10 has the profile (R, A, C, D) = (1, 0, 0, 1) -> (0.5, 0, 0, 0.5).
    # Failures push recency and importance away from 0.5, i.e. down, until they clamp at 0.
    c = sal_store
    uri = c.write(sal_fact(1), importance=10)
    expected = sal_weights_tuple(DEFAULT_WEIGHTS)
    for _ in range(25):
        record = c.salience(uri)
        expected = sal_expected_weights(expected, [record], c._engine.clock(), "failure")
        c.attest([uri], "failure", "factual_error")
        got = sal_weights_tuple(c.weights())
        assert got == pytest.approx(expected, abs=1e-12, rel=0)
        assert min(got) >= 0.0
        assert sum(got) == pytest.approx(1.0, abs=1e-12)
    assert expected[0] == 0.0 and expected[3] == 0.0  # the clamp was reached
    assert got[0] == 0.0 and got[3] == 0.0
    assert got[1] > 0.0 and got[2] > 0.0
    assert c.verify() == []


def test_context_scores_use_the_learned_weights(sal_store, sal_clock):
    c = sal_store
    frame = Frame("analyze", "knowledge", "weights")
    uris = [c.write(sal_fact(i), frames=[frame], importance=i) for i in range(4)]
    sal_clock.advance(40 * SAL_DAY)
    c.attest(uris[:2], "success")
    c.attest(uris[1:3], "failure", "factual_error")
    weights = c.weights()
    assert weights != DEFAULT_WEIGHTS
    now = sal_clock.now + timedelta(days=3)
    b = c.context(verb="analyze", objects={"knowledge": "weights"}, now=now)
    for u in uris:
        m = c.resolve(u)
        assert b.scores[m.id] == pytest.approx(score_of(c.salience(u), now, weights), abs=1e-15)


def test_the_next_context_after_feedback_uses_the_new_weights_in_the_writer_and_a_follower(tmp_path, sal_clock):
    """A handle keeps the decoded weights from call to call (`Engine.weights`): the
    attest that changes them, and a follower's catch-up past that attest, make the
    next context() score with the new ones. `verify()` compares the handle's copy
    with what is stored."""
    path = tmp_path / "s"
    frame = Frame("analyze", "knowledge", "weights")
    query = {"verb": "analyze", "objects": {"knowledge": "weights"}}
    with sal_open(path, sal_clock) as c:
        uris = [c.write(sal_fact(i), frames=[frame], importance=i) for i in range(4)]
        sal_clock.advance(40 * SAL_DAY)
        now = sal_clock.now
        with sal_open(path, sal_clock, mode="r") as follower:
            before = [handle.context(**query, now=now).scores for handle in (c, follower)]
            c.attest(uris[:2], "success")
            learned = c.weights()
            assert learned != DEFAULT_WEIGHTS
            for handle, old in zip((c, follower), before):
                scores = handle.context(**query, now=now).scores
                for uri in uris[2:]:  # not cited: only the weights changed their scores
                    memory_id = handle.resolve(uri).id
                    assert scores[memory_id] == score_of(handle.salience(uri), now, learned)
                    assert scores[memory_id] != old[memory_id]
        c._engine.storage.write({META_WEIGHTS: None})  # damage behind the handle's back
        assert c.weights() == DEFAULT_WEIGHTS  # what is stored
        problems = c.verify()
        assert "meta/weights: stored weights differ from the journal's feedback" in problems
        keeps_copy = not c._engine.storage.live_reads  # a PostgreSQL handle reads them each time
        assert ("meta/weights: this handle's copy of the weights differs from the stored weights" in problems) == keeps_copy
        c.rebuild()
        assert c.verify() == [] and c.weights() == learned


# ---------------------------------------------------------------------------
# attest and context(): cited memories rise


def test_cited_memory_rises_above_identical_uncited_one_in_context(sal_store, sal_clock):
    c = sal_store
    frame = Frame("acquire", "service", "gpu_inference")
    data = Fact(statement="gpu quota is 8", subject="gpu", predicate="quota")
    other_uri = c.write(data, frames=[frame], tags=["ops"], importance=4)
    cited_uri = c.write(data, frames=[frame], tags=["ops"], importance=4)
    other, cited = c.resolve(other_uri), c.resolve(cited_uri)
    assert other.id < cited.id  # ties would favour the uncited one: only salience can lift it
    query = {"verb": "acquire", "objects": {"service": "gpu_inference"}}

    now = sal_clock.now
    b0 = c.context(**query, now=now)
    assert b0.scores[cited.id] == b0.scores[other.id]
    assert [m.id for m in b0.frame_relevant] == [other.id, cited.id]

    for _ in range(3):
        c.attest([cited_uri], "success")
    b1 = c.context(**query, now=now)
    assert b1.scores[cited.id] > b1.scores[other.id]
    assert [m.id for m in b1.frame_relevant] == [cited.id, other.id]
    # the index values were rewritten with the attest: context() sees the new record at once
    assert b1.scores[cited.id] == pytest.approx(score_of(c.salience(cited.id), now, c.weights()), abs=1e-15)
    assert b1.scores[other.id] == pytest.approx(score_of(c.salience(other.id), now, c.weights()), abs=1e-15)
    assert c.verify() == []

    for _ in range(3):
        c.attest([cited_uri], "failure", "factual_error")
    b2 = c.context(**query, now=now)
    assert c.salience(cited.id).citations == 0
    assert b2.scores[cited.id] < b1.scores[cited.id]
    assert b2.scores[cited.id] - b2.scores[other.id] < b1.scores[cited.id] - b1.scores[other.id]
    assert b2.scores[cited.id] == pytest.approx(score_of(c.salience(cited.id), now, c.weights()), abs=1e-15)
    assert c.verify() == []


def test_context_is_not_a_write_but_attest_is(sal_store):
    c = sal_store
    frame = Frame("build", "tool", "compiler")
    uri = c.write(sal_fact(1), frames=[frame])
    r0 = c.root()
    b = c.context(verb="build", objects={"tool": "compiler"})
    assert b.root == r0 == c.root()
    c.attest([uri], "success")
    assert c.root() != r0
    assert c.context(verb="build", objects={"tool": "compiler"}).root == c.root()


# ---------------------------------------------------------------------------
# journaling: rebuild() replays attest exactly


def test_rebuild_reproduces_weights_and_records_after_attests(sal_store, sal_clock):
    c = sal_store
    uris = [c.write(sal_fact(i), frames=[Frame("find", "knowledge", f"k{i % 2}")], tags=["t"], importance=i) for i in range(5)]
    c.write(Goal(statement="pinned goal", status="active"), importance=9)
    c.write(Constraint(statement="never x", strength="hard", polarity="dont", source="user_declared"))
    sal_clock.advance(SAL_DAY)
    c.attest(uris[:3], "success")
    c.attest([uris[4]], "failure", "factual_error")
    c.tombstone(uris[2], "gone")
    c.attest(uris[0:2], "failure", "wrong_assumption")
    weights = c.weights()
    records = {u: c.salience(u) for u in uris}
    derived = sal_derived_snapshot(c)
    root = c.root()

    sal_wipe_derived(c)
    assert c.weights() == DEFAULT_WEIGHTS
    assert c.verify() != []
    c.rebuild()
    assert c.weights() == weights
    assert {u: c.salience(u) for u in uris} == records
    assert sal_derived_snapshot(c) == derived
    assert c.root() == root
    assert c.verify() == []


# ---------------------------------------------------------------------------
# property: long random attest sequences


SAL_REASONS = [None, "factual_error", "wrong_assumption", "timeout"]

sal_attest_step = st.tuples(
    st.lists(st.integers(0, 5), min_size=1, max_size=6, unique=True),  # cited (indices)
    st.sampled_from(["success", "failure"]),
    st.sampled_from(SAL_REASONS),
    st.integers(0, 20 * 86400),  # clock advance before the attest, seconds
    st.booleans(),  # cite memory 0 through its old version-1 URI
)


@settings(max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    importances=st.lists(st.integers(0, 10), min_size=6, max_size=6),
    gaps=st.lists(st.integers(0, 30 * 86400), min_size=6, max_size=6),
    steps=st.lists(sal_attest_step, min_size=30, max_size=60),
)
def test_random_attest_sequences_keep_weights_normalised_and_replayable(importances, gaps, steps):
    clock = FakeClock()
    with tempfile.TemporaryDirectory() as tmp, sal_open(Path(tmp) / "s", clock) as c:
        uris = []
        for i, (importance, gap) in enumerate(zip(importances, gaps)):
            clock.advance(gap)
            data = Goal(statement=f"goal {i}", status="active") if i == 5 else sal_fact(i)
            uris.append(c.write(data, tags=["p"], frames=[Frame("find", "knowledge", "kb")], importance=importance))
        v2 = c.update(uris[0], Fact(statement="statement 0 v2", subject="subject0", predicate="is"))
        model = {u: [0, 0] for u in uris}  # citations, access_count
        expected = sal_weights_tuple(DEFAULT_WEIGHTS)
        assert c.weights() == DEFAULT_WEIGHTS

        for cited_idx, outcome, reason, advance, old_uri in steps:
            clock.advance(advance)
            cited = [uris[i] if (i != 0 or old_uri) else v2 for i in cited_idx]
            before = [c.salience(uris[i]) for i in cited_idx]
            expected = sal_expected_weights(expected, before, clock.now, outcome)
            root = c.root()
            c.attest(cited, outcome, reason)
            assert c.root() != root
            for i in cited_idx:
                m = model[uris[i]]
                if outcome == "success":
                    m[0] += 1
                    m[1] += 1
                elif reason in ("factual_error", "wrong_assumption"):
                    m[0] = max(0, m[0] - 1)
            got = sal_weights_tuple(c.weights())
            assert all(w >= 0.0 for w in got)
            assert sum(got) == pytest.approx(1.0, abs=1e-9)
            assert got == pytest.approx(expected, abs=1e-9, rel=0)

        for u in uris:
            record = c.salience(u)
            assert [record.citations, record.access_count] == model[u]
        assert c.verify() == []

        weights = c.weights()
        records = {u: c.salience(u) for u in uris}
        derived = sal_derived_snapshot(c)
        sal_wipe_derived(c)
        c.rebuild()
        assert c.weights() == weights
        assert {u: c.salience(u) for u in uris} == records
        assert sal_derived_snapshot(c) == derived
        assert c.verify() == []
