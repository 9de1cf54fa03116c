"""`ingest_helper=True`: a helper process renders and counts forms for large
`write_many` batches. What a user relies on: the store's bytes are exactly those of
an inline write, whatever the helper does (works, dies, is slow), and closing the
handle ends the helper."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cortex
from cortex.records import META_STORE_ID
from cortex import Belief, Constraint, Event, Fact, Frame, Goal, Identity, Pattern, Preference, Write
from cortex import workers
from cortex.forms import render_texts
from cortex.model import DATA_CLASSES

from conftest import FakeClock, open_store

LONG = "a very long statement about the vendor's hourly quote " * 40  # cut in both forms


def batch(start: int, count: int) -> list[Write]:
    """Writes of several types, with long text, non-ASCII text and caller forms."""
    out = []
    for i in range(start, start + count):
        if i % 7 == 0:
            data = Event(kind="payment", outcome="success", counterparty=f"vendor-{i}", cost=("USD", i / 4), summary=LONG)
        elif i % 7 == 1:
            data = Fact(statement=f"quote №{i} is {i % 97} € — cheaper", subject=f"vendor-{i}", predicate="price")
        elif i % 7 == 2:
            data = Goal(statement=f"ship release {i}", status="active", horizon_end=datetime(2026, 1, 2, tzinfo=timezone.utc))
        elif i % 7 == 3:
            data = Constraint(statement=f"never pay vendor {i} twice", strength="hard", polarity="avoid", source="user_declared")
        elif i % 7 == 4:
            data = Belief(statement=LONG, stance="doubt", evidence_for=("a", "b"))
        elif i % 7 == 5:
            data = Pattern(statement=f"vendor {i} answers fast", strength=0.25, coverage=i)
        else:
            data = Preference(topic=f"topic {i}", polarity="prefer", strength=0.5, rationale="🙂 cheaper")
        forms = {"short": f"own short {i}"} if i % 11 == 0 else ({"medium": LONG} if i % 13 == 0 else None)
        out.append(Write(data, frames=[Frame("acquire", "service", f"obj-{i % 5}")], tags=(f"t{i % 3}",), importance=i % 11, forms=forms))
    return out


def helper_of(store: cortex.Cortex) -> workers._Helper:
    pool = store._engine._pool
    assert pool is not None and pool._helper is not None
    return pool._helper


def wait_until_ready(store: cortex.Cortex, timeout: float = 60.0) -> None:
    helper = helper_of(store)
    deadline = time.monotonic() + timeout
    while not helper.usable():
        assert time.monotonic() < deadline, "the helper did not start"
        time.sleep(0.05)


def all_items(store: cortex.Cortex) -> dict[bytes, bytes]:
    """Every record but the store's id (random: two stores, two ids)."""
    items = dict(store._engine.storage.all_items())
    assert len(items.pop(META_STORE_ID)) == 16
    return items


def write_batches(store: cortex.Cortex, clock: FakeClock, sizes: list[int]) -> list[str]:
    uris, start = [], 0
    for size in sizes:
        uris += store.write_many(batch(start, size))
        start += size
        clock.advance(1)
    return uris


@contextlib.contextmanager
def twin_stores(tmp_path) -> Iterator[tuple[tuple[cortex.Cortex, FakeClock], tuple[cortex.Cortex, FakeClock]]]:
    """An inline store and one with the helper, each with the same first 300
    memories (the helped one counts them inline too: its helper is starting), and
    the helper ready. Yields (store, clock) for each."""
    inline_clock, helped_clock = FakeClock(), FakeClock()
    with open_store(tmp_path / "inline", clock=inline_clock) as inline, \
            open_store(tmp_path / "helped", clock=helped_clock, ingest_helper=True) as helped:
        write_batches(inline, inline_clock, [300])
        write_batches(helped, helped_clock, [300])
        wait_until_ready(helped)
        yield (inline, inline_clock), (helped, helped_clock)


def test_a_store_written_with_the_helper_is_byte_identical_to_an_inline_one(tmp_path):
    with twin_stores(tmp_path) as ((inline, inline_clock), (helped, helped_clock)):
        sizes = [700, 257, 1000]
        assert write_batches(helped, helped_clock, sizes) == write_batches(inline, inline_clock, sizes)
        assert helper_of(helped).answered > 0
        assert helped.root() == inline.root()
        assert all_items(helped) == all_items(inline)
        assert helped.verify() == []


def test_the_helper_gets_a_chunk_while_the_rest_of_the_batch_is_still_being_made(tmp_path):
    """`FormsPool.count` sends each chunk as soon as it is complete, so the helper
    works while `write_many` still makes the batch's other records."""
    with open_store(tmp_path / "s", ingest_helper=True) as store:
        store.write_many(batch(0, 300))
        wait_until_ready(store)
        pool, helper = store._engine._pool, helper_of(store)
        assert pool is not None
        items = [(w.data, w.data.to_record(), w.forms) for w in batch(300, 3 * workers.CHUNK)]
        first = helper.seq + 1
        sent_when_made: list[bool] = []

        def made() -> Iterator[workers._Item]:
            for i, item in enumerate(items):
                if i == workers.CHUNK + 1:  # the first chunk is complete, the second being made
                    sent_when_made.append(first in helper.wanted or first in helper.answers)
                yield item

        counted = [f for chunk in pool.count(made()) for f in chunk]
        assert sent_when_made == [True]
        assert counted == workers._count_here(store._engine.tokenizer.name, items)


def test_items_that_fail_midway_leave_the_helper_ready_for_the_next_batch(tmp_path):
    with twin_stores(tmp_path) as ((inline, inline_clock), (helped, helped_clock)):
        pool, helper = helped._engine._pool, helper_of(helped)
        assert pool is not None
        items = [(w.data, w.data.to_record(), w.forms) for w in batch(300, 3 * workers.CHUNK)]

        def failing() -> Iterator[workers._Item]:
            yield from items[: 2 * workers.CHUNK + 1]
            raise RuntimeError("the caller's items failed")

        with pytest.raises(RuntimeError, match="items failed"):
            pool.count(failing())
        assert not helper.unsent and not helper.wanted
        assert write_batches(helped, helped_clock, [400]) == write_batches(inline, inline_clock, [400])
        assert all_items(helped) == all_items(inline)
        assert helped._engine._pool._helper is helper and not helper.dead


def test_batches_below_the_threshold_never_start_a_helper(tmp_path):
    with open_store(tmp_path / "s", ingest_helper=True) as store:
        store.write_many(batch(0, workers.MIN_BATCH - 1))
        assert store._engine._pool is None


def test_a_helper_that_dies_is_replaced_by_inline_work(tmp_path):
    with twin_stores(tmp_path) as ((inline, inline_clock), (helped, helped_clock)):
        proc = helper_of(helped).proc
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert write_batches(helped, helped_clock, [600, 400]) == write_batches(inline, inline_clock, [600, 400])
        assert helped._engine._pool is not None and helped._engine._pool._helper is None  # inline from now on
        assert all_items(helped) == all_items(inline)


def test_a_helper_that_answers_garbage_is_not_trusted(tmp_path, monkeypatch):
    with twin_stores(tmp_path) as ((inline, inline_clock), (helped, helped_clock)):
        real = workers._forms_of
        monkeypatch.setattr(workers, "_forms_of", lambda answer, size: real(answer[:-1], size))  # one form short
        assert write_batches(helped, helped_clock, [500]) == write_batches(inline, inline_clock, [500])
        assert helped._engine._pool is not None and helped._engine._pool._helper is None
        assert all_items(helped) == all_items(inline)


def test_closing_the_handle_ends_the_helper(tmp_path):
    store = open_store(tmp_path / "s", ingest_helper=True)
    store.write_many(batch(0, 300))
    proc = helper_of(store).proc
    store.close()
    assert proc.poll() is not None


def test_a_reader_never_starts_a_helper(tmp_path):
    with open_store(tmp_path / "s") as writer:
        writer.write(Fact(statement="s", subject="a", predicate="p"))
    with open_store(tmp_path / "s", mode="r", ingest_helper=True) as reader:
        assert reader._engine.forms_pool(10_000) is None


@pytest.mark.parametrize("value", [1, "yes", None])
def test_ingest_helper_must_be_a_bool(tmp_path, value):
    with pytest.raises(cortex.ValidationError) as err:
        open_store(tmp_path / "s", ingest_helper=value)
    assert err.value.field == "ingest_helper"
    assert not (tmp_path / "s").exists()


# The helper renders from the data rebuilt from its record; that must be the text
# the writer would render from the data itself.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80).filter(lambda t: t.strip())
WHEN = st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9000, 1, 1), timezones=st.just(timezone.utc))
DATA = st.one_of(
    st.builds(Fact, statement=TEXT, subject=TEXT, predicate=TEXT, object=st.none() | TEXT, source=st.none() | TEXT, as_of=st.none() | WHEN),
    st.builds(Identity, name=TEXT, did=st.none() | TEXT, roles=st.lists(TEXT, max_size=3).map(tuple)),
    st.builds(Event, kind=st.sampled_from(["payment", "dispatch", "observation"]), outcome=st.sampled_from(["success", "failure", "partial"]), counterparty=st.none() | TEXT,
              cost=st.none() | st.tuples(st.sampled_from(["USD", "EUR"]), st.floats(min_value=0, max_value=1e9)),
              summary=st.none() | TEXT, duration=st.none() | st.floats(min_value=0, max_value=1e6)),
    st.builds(Goal, statement=TEXT, status=st.sampled_from(["active", "paused", "completed"]), horizon_end=st.none() | WHEN),
    st.builds(Preference, topic=TEXT, polarity=st.sampled_from(["prefer", "avoid"]), strength=st.floats(min_value=0, max_value=1),
              rationale=st.none() | TEXT),
)


@settings(max_examples=200, deadline=None)
@given(data=DATA)
def test_rendering_from_the_record_gives_the_same_text(data):
    rebuilt = DATA_CLASSES[data.TYPE].from_record(data.to_record(), validate=False)
    assert render_texts(rebuilt, None) == render_texts(data, None)
