"""A store written by an earlier cortex (schema version 1, before the engine was
restructured) opens, verifies clean, answers as it did, and takes new writes.

`tests/data/store_v1.json` holds every key and value of such a store (written by
commit ecc12f3 with a fixed clock and entropy: writes of all nine types, an update,
custom forms, expiring memories, update_head, attests of both outcomes, a
late-binding find, a tombstone), its root and one context() bundle.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import cortex
from cortex import Fact
from cortex.storage.rocksdb import open_rocksdb

DATA = json.loads((Path(__file__).parent / "data" / "store_v1.json").read_text())
NOW = datetime(2025, 1, 2, tzinfo=timezone.utc)


def _restore(path: Path) -> None:
    storage = open_rocksdb(str(path), read_only=False, cache_mb=8, sync=False)
    try:
        storage.write({bytes.fromhex(k): bytes.fromhex(v) for k, v in DATA["keys"].items()})
    finally:
        storage.close()


def test_an_older_store_opens_verifies_and_answers_as_it_did(tmp_path):
    _restore(tmp_path / "old")
    with cortex.open(tmp_path / "old", actor=DATA["actor"]) as c:
        assert c.verify() == []
        assert c.root() == DATA["root"]
        before = json.loads(DATA["context"])
        after = json.loads(c.context(verb="acquire", objects={"service": "gpu"}, now=NOW).to_json())
        for field in ("pinned", "frame_relevant", "outcomes"):
            assert [m["uri"] for m in after[field]] == [m["uri"] for m in before[field]]
        for field in ("rendered", "scores", "tokens", "reachable_uris", "total_tokens", "trimmed", "candidates", "root"):
            assert after[field] == before[field], field
        assert c.rebuild() == [] and c.verify() == [] and c.root() == DATA["root"]
        assert all(c._engine.storage.get(bytes.fromhex(k)) == bytes.fromhex(v) for k, v in DATA["keys"].items())
        uri = c.write(Fact(statement="written after the upgrade", subject="s", predicate="p"))
        assert c.resolve(uri).data.statement == "written after the upgrade"
        assert c.verify() == []


def _restore_single_family(path: Path) -> None:
    """The same store as older cortex laid it out in RocksDB: every key in the one
    "default" column family (stores made before the record families existed)."""
    from rocksdict import Options, Rdict

    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    db = Rdict(str(path), opts)
    try:
        for k, v in DATA["keys"].items():
            db[bytes.fromhex(k)] = bytes.fromhex(v)
    finally:
        db.close()


def test_a_single_family_store_is_read_and_written_as_it_is_and_migrates_into_families(tmp_path):
    from rocksdict import Rdict

    old = tmp_path / "old"
    _restore_single_family(old)
    with cortex.open(old, actor=DATA["actor"]) as c:
        assert not c._engine.storage.split
        assert c.verify() == [] and c.root() == DATA["root"]
        after = json.loads(c.context(verb="acquire", objects={"service": "gpu"}, now=NOW).to_json())
        assert after["root"] == json.loads(DATA["context"])["root"]
        uri = c.write(Fact(statement="written to a single-family store", subject="s", predicate="p"))
        with cortex.open(old, actor=DATA["actor"], mode="r") as follower:
            assert follower.resolve(uri).data.statement == "written to a single-family store"
        root = c.root()
    assert Rdict.list_cf(str(old)) == ["default"]  # nothing converted it

    new = tmp_path / "new"
    cortex.migrate(old, new)
    assert sorted(Rdict.list_cf(str(new))) == ["default", "heads", "versions"]
    with cortex.open(new, actor=DATA["actor"]) as c:
        assert c._engine.storage.split
        assert c.verify() == [] and c.root() == root
        assert c.resolve(uri).data.statement == "written to a single-family store"
