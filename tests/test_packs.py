"""Packed frames (`cortex.index.packs`, `Cortex.optimize()`): a hot object's frame
entries copied into a few large values, read on a handle's first call on it.

A pack may change no answer. On random stores built to have hot objects shared by
several queried objects, score ties, expiring and tombstoned memories, superseded
and contradicting ones, learned weights, and writes after packing (which leave dirty
markers), every bundle read through the packs equals the bundle of a plain scan of
the entries, and the packs read back exactly the stored entries. `verify()` names a
damaged pack, `rebuild()` makes it again, a follower reads the packs of its view,
and PostgreSQL keeps none.
"""

from __future__ import annotations

import random
import time
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cortex
from cortex import Fact, Frame, Write, upkeep
from cortex.errors import CorruptRecord
from cortex.index import frame, packs
from cortex.columns import Columns
from cortex.cache import HotFrames
from cortex.columns import FIELDS, same
from cortex.ids import parse_uri

from conftest import FakeClock, open_store
from test_hot_frames import NOW, _everything, _query, _write_some

pytest_plugins = ["pgfixture"]  # pg_dsn, pg_actor (a no-op once tests/conftest.py lists it)

GPU = Frame("acquire", "service", "gpu")
GPU_DELIVER = Frame("deliver", "service", "gpu")
ASK = {"verb": "acquire", "objects": {"service": "gpu"}, "now": NOW, "budget_tokens": 120}


def _prefix(f: Frame) -> bytes:
    return frame.prefix(f.verb, f.kind, f.ref)


def _gpu_prefix() -> bytes:
    return _prefix(GPU)


def _stored(c: cortex.Cortex, prefix: bytes) -> Columns:
    return Columns.decode(c._engine.storage.scan_values(prefix), FIELDS)


def _pack_keys(c: cortex.Cortex) -> list[bytes]:
    return [key for key, _ in c._engine.storage.scan_items(packs.PREFIX)]


def _facts(c: cortex.Cortex, n: int, frames: tuple[Frame, ...] = (GPU,), start: int = 0) -> list[str]:
    return c.write_many([Write(Fact(statement=f"fact {start + i}" + " y" * (i % 7), subject="s", predicate=f"p{i % 3}"),
                               frames=frames, importance=i % 11) for i in range(n)])


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch):
    """Chunks of 4 rows, so that small stores have packs of several chunks."""
    monkeypatch.setattr(packs, "CHUNK_ROWS", 4)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), min_rows=st.sampled_from([1, 3, 6]), chunk_rows=st.sampled_from([1, 3, 4, 1024]))
def test_bundles_read_through_packs_equal_a_scan_of_the_entries(tmp_path_factory, seed, min_rows, chunk_rows):
    rng = random.Random(seed)
    saved = packs.CHUNK_ROWS
    packs.CHUNK_ROWS = chunk_rows
    try:
        clock = FakeClock()
        with open_store(tmp_path_factory.mktemp("packs") / "s", clock) as c:
            engine = c._engine
            uris: list[str] = []
            cache = HotFrames(min_rows=1)
            _write_some(c, clock, rng, rng.randint(30, 100), uris)
            root = c.root()
            upkeep.optimize(engine, min_rows=min_rows)
            assert c.root() == root and len(engine.packs) > 0
            read_through = 0
            for _ in range(3):
                assert packs.check(engine.storage) == []
                for _ in range(6):
                    query = _query(rng)
                    engine.hot = None  # this call reads the packs, never a cached frame
                    before = engine.index_entries_read
                    packed = c.context(**query)
                    read_through += engine.index_entries_read - before
                    engine.hot = cache  # this one keeps what it read from packs, and follows later writes
                    cached = c.context(**query)
                    engine.hot, with_packs, engine.packs = None, engine.packs, packs.FramePacks()  # none: plain scans
                    scanned = c.context(**query)
                    engine.packs = with_packs
                    assert _everything(packed) == _everything(scanned), query
                    assert _everything(cached) == _everything(scanned), query
                engine.hot = cache
                _write_some(c, clock, rng, rng.randint(1, 30), uris)  # dirty markers for what changed inside packs
                if rng.random() < 0.3:
                    upkeep.optimize(engine, min_rows=min_rows)  # repack: markers go, chunks are rewritten
            for tail in packs.packed_tails(engine.storage):
                prefix = packs.prefix_of(tail)
                assert same(packs.read(engine.storage, prefix), _stored(c, prefix))
            assert read_through > 0
            assert c.verify() == []
    finally:
        packs.CHUNK_ROWS = saved


def test_optimize_packs_large_frames_and_changes_no_answer(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        _facts(c, 10)
        _facts(c, 3, frames=(GPU_DELIVER,), start=10)
        before, root = c.context(**ASK).to_json(), c.root()
        assert upkeep.optimize(c._engine, min_rows=5) == {"packed": 1, "rows": 10}
        assert c.root() == root
        tail = packs.tail_of(_gpu_prefix())
        assert _pack_keys(c) == [packs.dir_key(tail)] + [packs.rows_key(tail, n) for n in range(3)]  # 4 + 4 + 2 rows
        assert c.verify() == []
    with open_store(tmp_path / "s", clock) as again:  # a new handle reads the pack, not the entries
        assert again._engine.packs is not None and _gpu_prefix() in again._engine.packs
        assert again.context(**ASK).to_json() == before
        assert again.optimize() == {"packed": 1, "rows": 10}  # the public default packs what was packed before


def test_optimize_leaves_no_file_in_level0_and_changes_no_answer(tmp_path):
    """`optimize()` ends with the storage's `compact()`: on RocksDB the memtable and
    every level-0 file are merged into the levels below, so each scan a call makes
    seeks one file per level. The answers, the root and the stored bytes stay."""
    clock = FakeClock()

    def level0(c: cortex.Cortex) -> int:
        return int(c._engine.storage.db.property_int_value("rocksdb.num-files-at-level0"))

    with open_store(tmp_path / "s", clock) as c:
        for start in range(0, 40, 10):
            _facts(c, 10, start=start)
            c._engine.storage.flush()
        _facts(c, 3, frames=(GPU_DELIVER,), start=40)  # in the memtable
        before, root, stored = c.context(**ASK).to_json(), c.root(), c._engine.storage.all_items()
        assert level0(c) == 4
        assert c.optimize() == {"packed": 0, "rows": 0}
        assert level0(c) == 0
        assert c.context(**ASK).to_json() == before and c.root() == root and c.verify() == []
        assert c._engine.storage.all_items() == stored
    with open_store(tmp_path / "s", clock) as again:
        assert level0(again) == 0 and again.context(**ASK).to_json() == before


def test_a_chunk_decodes_into_aligned_views_of_its_value(tmp_path, monkeypatch):
    """A one-chunk pack is read without copying a row, and every column is aligned."""
    monkeypatch.setattr(packs, "CHUNK_ROWS", 1024)
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        _facts(c, 7)
        upkeep.optimize(c._engine, min_rows=5)
        got = packs.read(c._engine.storage, _gpu_prefix())
        assert same(got, _stored(c, _gpu_prefix()))
        for name in FIELDS:
            column = got[name]
            assert column.flags.aligned and not column.flags.owndata and column.dtype.isnative, name


def test_writes_mark_entries_inside_a_pack_and_optimize_clears_the_marks(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        uris = _facts(c, 9)
        upkeep.optimize(c._engine, min_rows=5)
        prefix, tail = _gpu_prefix(), packs.tail_of(_gpu_prefix())
        clock.advance(60)
        _facts(c, 3, start=9)  # newer ids: after the pack, no marker
        assert [key for key in _pack_keys(c) if key.startswith(packs.DIRTY_PREFIX)] == []
        c.update_head(uris[2], importance=10)
        c.tombstone(uris[5], "gone")
        marks = [key for key in _pack_keys(c) if key.startswith(packs.DIRTY_PREFIX)]
        assert marks == sorted(packs.dirty_key(tail, parse_uri(uris[i]).id) for i in (2, 5))
        got = packs.read(c._engine.storage, prefix)
        assert same(got, _stored(c, prefix)) and len(got) == 11  # 12 entries less the tombstoned one
        assert c.verify() == []
        assert upkeep.optimize(c._engine, min_rows=5) == {"packed": 1, "rows": 11}
        assert [key for key in _pack_keys(c) if key.startswith(packs.DIRTY_PREFIX)] == []
        assert _pack_keys(c)[1:] == [packs.rows_key(tail, n) for n in range(3)]  # 4 + 4 + 3 rows: the fourth chunk went
        assert c.verify() == []


def test_a_written_batch_teaches_its_pack_directories_whatever_else_it_holds():
    """A handle learns packs from the batches it writes (`FramePacks.observe`), which
    first searches the batch's keys joined together for the directory prefix (most
    batches hold none): a directory among a thousand other keys is learned, and so is
    its removal; the prefix spread over two keys is no directory."""
    prefix, tail = _gpu_prefix(), packs.tail_of(_gpu_prefix())
    value = packs.encode_dir(bytes(16), 5, 1)
    others: dict[bytes, bytes | None] = {b"m/" + i.to_bytes(16, "big"): b"x" for i in range(1000)}
    known = packs.FramePacks()
    known.observe(others)
    assert prefix not in known
    known.observe({**others, packs.dir_key(tail): value})
    assert prefix in known and len(known) == 1
    known.observe({**others, packs.dir_key(tail): None})
    assert prefix not in known
    half = len(packs.DIR_PREFIX) // 2
    spread = packs.FramePacks()
    spread.observe({b"m/" + packs.DIR_PREFIX[:half]: b"x", packs.DIR_PREFIX[half:] + tail: value})
    assert len(spread) == 0


def test_an_entry_older_than_the_pack_but_not_in_it_is_read_in_id_order(tmp_path):
    """An id at or before a pack's last id that the pack does not hold (as an import
    of old ids or a restored entry writes) is marked and read in its place."""
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        elsewhere = _facts(c, 1, frames=(GPU_DELIVER,))[0]
        clock.advance(60)
        _facts(c, 6)
        upkeep.optimize(c._engine, min_rows=5)
        engine, prefix = c._engine, _gpu_prefix()
        raw_id = parse_uri(elsewhere).id
        value = engine.storage.get(_prefix(GPU_DELIVER) + raw_id)
        assert value is not None
        engine.write({prefix + raw_id: value})
        assert engine.storage.get(packs.dirty_key(packs.tail_of(prefix), raw_id)) == b""
        got = packs.read(engine.storage, prefix)
        assert same(got, _stored(c, prefix)) and len(got) == 7 and got.ids()[0] == raw_id


def test_verify_names_a_damaged_pack_and_rebuild_makes_it_again(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        uris = _facts(c, 10)
        upkeep.optimize(c._engine, min_rows=5)
        engine, prefix = c._engine, _gpu_prefix()
        tail = packs.tail_of(prefix)
        want = c.context(**ASK).to_json()
        shown = f"idx/pack/dir/{tail.hex()}"
        chunk = engine.storage.get(packs.rows_key(tail, 1))
        assert chunk is not None

        # A row whose importance differs from its entry (the writer left no marker).
        cols = packs.decode_chunk(packs.rows_key(tail, 1), chunk).materialized()
        assert cols.ids()[1] == parse_uri(uris[5]).id
        cols = Columns({name: column.copy() for name, column in cols.data.items()})
        cols["importance"][1] ^= 1
        engine.storage.write({packs.rows_key(tail, 1): packs.encode_chunk(cols)})
        assert c.verify() == [f"{shown}: the pack differs from the entries under its prefix"]
        assert c.rebuild() == [] and c.verify() == []

        # A lost chunk: the pack no longer agrees with its directory, and a call on
        # the object fails closed instead of answering from part of it.
        engine.storage.write({packs.rows_key(tail, 1): None})
        assert c.verify() == [f"{shown}: pack chunks disagree with the directory"]
        engine.hot = None
        with pytest.raises(CorruptRecord):
            c.context(**ASK)
        assert c.rebuild() == [] and c.verify() == []
        assert c.context(**ASK).to_json() == want

        # A pack of another format.
        directory = engine.storage.get(packs.dir_key(tail))
        assert directory is not None and directory[-1] == packs.FORMAT
        engine.storage.write({packs.dir_key(tail): directory[:-1] + bytes([packs.FORMAT + 1])})
        assert c.verify() == [f"{shown}: pack format {packs.FORMAT + 1}, not {packs.FORMAT}: run optimize()"]
        with open_store(tmp_path / "s", clock, mode="r") as r:  # a handle that finds it reads the entries
            assert len(r._engine.packs) == 0 and r.context(**ASK).to_json() == want
        assert c.rebuild() == [] and c.verify() == []

        # A chunk past the directory's count.
        engine.storage.write({packs.rows_key(tail, 7): chunk})
        assert c.verify() == [f"idx/pack/rows/{tail.hex()}00000007: pack chunk beyond the directory's count"]
        assert c.rebuild() == [] and c.verify() == []

        # A marker past the last packed id, and chunks with no directory entry.
        engine.storage.write({packs.dirty_key(tail, b"\xff" * 16): b""})
        other = packs.tail_of(_prefix(GPU_DELIVER))
        engine.storage.write({packs.rows_key(other, 0): chunk})
        assert c.verify() == [f"idx/pack/dirty/{tail.hex()}{'ff' * 16}: dirty marker after the last packed id",
                              f"idx/pack/rows/{other.hex()}: pack keys without a directory entry"]
        assert c.rebuild() == [] and c.verify() == []
        assert [key for key in _pack_keys(c) if key.startswith(packs.DIR_PREFIX)] == [packs.dir_key(tail)]
        assert c.context(**ASK).to_json() == want


def test_a_follower_reads_the_packs_of_its_view(tmp_path):
    clock = FakeClock()
    path = tmp_path / "s"
    with open_store(path, clock) as w:
        uris = _facts(w, 8)
        with open_store(path, clock, mode="r") as r:
            assert len(r._engine.packs) == 0
            upkeep.optimize(w._engine, min_rows=5)
            r.refresh()
            assert _gpu_prefix() in r._engine.packs
            r._engine.hot = None
            assert r.context(**ASK).to_json() == w.context(**ASK).to_json()
            w.update_head(uris[0], importance=10)  # a marker the follower must honour
            r.refresh()
            assert r.context(**ASK).to_json() == w.context(**ASK).to_json()
            assert r.verify() == []


def test_postgresql_keeps_no_packs_and_migrate_leaves_them_behind(tmp_path, pg_dsn, pg_actor):
    clock = FakeClock()
    path = tmp_path / "rocks"
    with cortex.open(path, actor=pg_actor, clock=clock) as c:
        _facts(c, 10)
        upkeep.optimize(c._engine, min_rows=5)
        assert len(_pack_keys(c)) == 4
        want = c.context(**ASK).to_json()
    cortex.migrate(path, pg_dsn)
    with cortex.open(pg_dsn, actor=pg_actor, clock=clock) as pg:
        assert pg._engine.packs is None and _pack_keys(pg) == []
        assert pg.optimize() == {"packed": 0, "rows": 0}
        assert pg.context(**ASK).to_json() == want
        assert pg.verify() == []


def test_exports_leave_packs_out_and_a_rocksdb_copy_keeps_them(tmp_path):
    """Packs are derived keys: an export is the same file before and after
    `optimize()`, and a migration to another RocksDB store copies them, exact."""
    clock = FakeClock()
    path = tmp_path / "s"
    with open_store(path, clock) as c:
        uris = _facts(c, 10)
        c.export_jsonl(tmp_path / "before.jsonl")
        upkeep.optimize(c._engine, min_rows=5)
        c.export_jsonl(tmp_path / "after.jsonl")
        c.update_head(uris[3], importance=10)  # a dirty marker, copied with the pack
        want = c.context(**ASK).to_json()
    assert (tmp_path / "after.jsonl").read_bytes() == (tmp_path / "before.jsonl").read_bytes()
    cortex.migrate(path, tmp_path / "copy")
    with open_store(tmp_path / "copy", clock) as copy:
        assert _gpu_prefix() in copy._engine.packs and len(_pack_keys(copy)) == 5  # directory, 3 chunks, 1 marker
        copy._engine.hot = None
        assert copy.context(**ASK).to_json() == want
        assert copy.verify() == []


def test_readers_beside_a_writer_that_updates_and_repacks_never_see_a_torn_pack(tmp_path):
    """Reader threads call context() on a packed object while a writer thread changes
    its entries and repacks it: no call fails, every call sees one whole state, and the
    store verifies clean afterwards."""
    import threading

    clock = FakeClock()
    with open_store(tmp_path / "s", clock) as c:
        uris = _facts(c, 40)
        upkeep.optimize(c._engine, min_rows=5)
        c._engine.hot = None  # every call reads the pack
        live = {len(uris)}  # the counts of frame memories the writer has left behind, in turn
        errors: list[BaseException] = []
        calls: list[int] = []
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                try:
                    got = c.context(**ASK).candidates
                    assert got in live, got
                    calls.append(got)
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)
                    return

        readers = [threading.Thread(target=read) for _ in range(3)]
        for thread in readers:
            thread.start()
        rng = random.Random(3)
        for step in range(300):
            time.sleep(0.001)  # let the readers in between writes
            uri = rng.choice(uris)
            if step % 7 == 3 and len(uris) > 20:
                uris.remove(uri)
                live.add(len(uris))
                c.tombstone(uri, "gone")
            else:
                c.update_head(uri, importance=rng.randint(0, 10))
            if step % 10 == 9:
                upkeep.optimize(c._engine, min_rows=5)
        stop.set()
        for thread in readers:
            thread.join()
        assert errors == [] and len(calls) >= 30 and len(set(calls)) > 1
        assert c.verify() == [] and c.context(**ASK).candidates == len(uris)
        with_packs, c._engine.packs = c._engine.packs, packs.FramePacks()
        plain = c.context(**ASK).to_json()
        c._engine.packs = with_packs
        assert c.context(**ASK).to_json() == plain
