"""A reader refuses, clearly, while an import or a migration writes its store
(docs/trust.md): the keys arrive in many batches, and a read in between would
answer from part of a store. Runs on PostgreSQL too
(tests/test_backends_import_in_progress.py)."""

from __future__ import annotations

import pytest

import cortex
from cortex import Fact, Frame
from cortex.errors import StoreError
from cortex.interop import jsonl

GPU = Frame("acquire", "service", "gpu")


def test_a_reader_refuses_while_an_import_runs(tmp_path, monkeypatch):
    with cortex.open(tmp_path / "a", actor="agent") as a:
        a.write_many([cortex.Write(Fact(statement=f"f{i}", subject="s", predicate="p"), frames=[GPU]) for i in range(30)])
        a.export_jsonl(tmp_path / "a.jsonl")
        root = a.root()
    with cortex.open(tmp_path / "b", actor="agent") as b:
        def cut(e):  # the import stops before its last batch, as a killed one would
            raise OSError("killed")
            yield {}

        monkeypatch.setattr(jsonl, "BATCH_KEYS", 10)
        monkeypatch.setattr(jsonl, "derived_after_import", cut)
        with pytest.raises(OSError):
            b.import_jsonl(tmp_path / "a.jsonl")
        monkeypatch.undo()
        with cortex.open(tmp_path / "b", actor="agent", mode="r") as r:
            for read in (lambda: r.context(verb="acquire", objects={"service": "gpu"}), lambda: r.stats(), lambda: r.root(),
                         lambda: r.find(type="Fact", limit=5)):
                with pytest.raises(StoreError, match="an import or migration into it is in progress"):
                    read()
            assert any(line.startswith("meta/import") for line in r.verify())  # verify() still names it
            b.import_jsonl(tmp_path / "a.jsonl")  # completed by running it again
            r.refresh()
            assert r.root() == root and len(r.find(type="Fact", limit=50)) == 30
