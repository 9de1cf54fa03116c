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
