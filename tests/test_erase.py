"""`erase(memory, reason)`: the content leaves the store and its files; the root and
verify() still hold; exports carry the erasure and rebuild the same root
(docs/trust.md). Runs on PostgreSQL too (tests/test_backends_erase.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import cortex
from cortex import Event, Fact, Frame
from cortex.errors import NotFound, ReadOnlyStore, ValidationError

# Texts without repeats, so that RocksDB's block compression stores their first
# occurrence as it is (what a grep of the files can find).
SECRET = "k7Qz9XwP2mVb8RtY3nLc6HdJ4sFg1AeU"
SECRET2 = "Wm3Rx8Tq1Zp5Ny7Kb2Vd9Hc4Lf6Gs0Ja"


def _files_hold(folder: Path, text: str) -> list[str]:
    """The files holding `text`, as written or case-folded (the lexical index's terms)."""
    needles = (text.encode(), text.lower().encode())
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and any(n in p.read_bytes() for n in needles))


def _fill(c: cortex.Cortex) -> tuple[str, str]:
    keep = c.write(Fact(statement="the user prefers email", subject="user", predicate="prefers"),
                   frames=[Frame("acquire", "service", "pay")], tags=["billing"])
    uri = c.write(Fact(statement=f"the user paid with card {SECRET}", subject="user", predicate="paid"),
                  frames=[Frame("acquire", "service", "pay")], tags=["billing"], importance=5)
    c.update(uri, Fact(statement=f"the user paid with card {SECRET2}", subject="user", predicate="paid"))
    c.attest([uri], "success")
    return keep, uri


@pytest.mark.rocksdb_only("greps the RocksDB folder's files")
def test_erase_removes_the_text_from_the_files(tmp_path):
    with cortex.open(tmp_path / "s", actor="agent") as c:
        keep, uri = _fill(c)
        c._engine.storage.flush()  # the text is in the SST files, not only in the WAL
        assert _files_hold(tmp_path / "s", SECRET) and _files_hold(tmp_path / "s", SECRET2)
        c.erase(uri, "the user asked to forget their card")
        assert _files_hold(tmp_path / "s", SECRET) == [] and _files_hold(tmp_path / "s", SECRET2) == []
        assert c.verify() == []
    assert _files_hold(tmp_path / "s", SECRET) == []
    with cortex.open(tmp_path / "s", actor="agent") as c:
        assert c.verify() == [] and c.resolve(keep).data.statement == "the user prefers email"


def test_an_erased_memory_is_gone_and_the_store_verifies(tmp_path):
    with cortex.open(tmp_path / "s", actor="agent") as c:
        keep, uri = _fill(c)
        before = c.root()
        assert [m.id for m in c.find(near=f"paid with card {SECRET2}", limit=5)][:1] == [uri.split("/")[3].split("#")[0]]
        c.erase(uri.replace("#1", "#2"), "the user asked to forget their card")  # any version's URI names it
        assert c.root() != before and c.verify() == []
        for name in (uri, uri.replace("#1", "#2")):
            with pytest.raises(NotFound):
                c.resolve(name)
        with pytest.raises(NotFound):
            c.resolve_latest(uri.split("/")[3].split("#")[0])
        with pytest.raises(NotFound):
            c.erase(uri, "again")
        assert [m.uri for m in c.memories(include_tombstoned=True)] == [keep]
        assert [m.uri for m in c.find(tags=["billing"], limit=10, include_tombstoned=True)] == [keep]
        b = c.context(verb="acquire", objects={"service": "pay"}, budget_tokens=2000)
        assert [m.uri for m in b.frame_relevant] == [keep]
        assert SECRET not in b.to_markdown() and SECRET2 not in b.to_markdown()
        assert c.stats()["memories"] == 1
        assert [m.uri for m in c.find(near=f"paid with card {SECRET2}", limit=5)] == []  # its words left the lexical index
        # The journal keeps who, why and the hashes of what was erased.
        entry = c._engine.storage.get(c._engine.storage.last_key(b"j/"))
        assert b"the user asked to forget their card" in entry and b"agent" in entry
        root = c.root()
    with cortex.open(tmp_path / "s", actor="agent") as c:
        assert c.root() == root and c.verify() == []
        c.write(Fact(statement="after", subject="s", predicate="p"))
        assert c.verify() == []


def test_the_export_carries_the_erasure_and_rebuilds_the_same_root(tmp_path):
    with cortex.open(tmp_path / "s", actor="agent") as c:
        keep, uri = _fill(c)
        c.erase(uri, "forget the card")
        c.export_jsonl(tmp_path / "x.jsonl")
        root = c.root()
    text = (tmp_path / "x.jsonl").read_text()
    assert SECRET not in text and SECRET2 not in text and '"entry_kind":"erase"' in text
    with cortex.open(tmp_path / "t", actor="agent") as d:
        d.import_jsonl(tmp_path / "x.jsonl")
        assert d.root() == root and d.verify() == []
        with pytest.raises(NotFound):
            d.resolve(uri)
        d.export_jsonl(tmp_path / "y.jsonl")
    assert (tmp_path / "x.jsonl").read_bytes() == (tmp_path / "y.jsonl").read_bytes()


def test_erasing_a_superseding_memory_makes_the_old_one_current(tmp_path):
    with cortex.open(tmp_path / "s", actor="agent") as c:
        old = c.write(Event(kind="payment", outcome="success", summary="paid 10"), frames=[Frame("acquire", "service", "pay")])
        new = c.write_many([cortex.Write(Event(kind="payment", outcome="success", summary=f"paid with {SECRET}"),
                                         frames=[Frame("acquire", "service", "pay")], supersedes=[old])])[0]
        assert [m.uri for m in c.context(verb="acquire", objects={"service": "pay"}).outcomes] == [new]
        c.erase(new, "forget the card")
        assert [m.uri for m in c.context(verb="acquire", objects={"service": "pay"}).outcomes] == [old]
        assert c.verify() == []


def test_a_tombstoned_memory_can_be_erased(tmp_path):
    with cortex.open(tmp_path / "s", actor="agent") as c:
        _, uri = _fill(c)
        c.tombstone(uri, "wrong")
        c.erase(uri, "forget the card")
        assert c.verify() == [] and c.stats()["tombstoned"] == 0


def test_bad_erasures_write_nothing(tmp_path):
    with cortex.open(tmp_path / "s", actor="agent") as c:
        _, uri = _fill(c)
        root = c.root()
        for reason in ("", None, "x" * 2000):
            with pytest.raises(ValidationError, match="reason"):
                c.erase(uri, reason)  # type: ignore[arg-type]
        with pytest.raises(cortex.BadURI):
            c.erase("cortex://Nope/1", "x")
        with pytest.raises(NotFound):
            c.erase("cortex://Fact/01ARZ3NDEKTSV4RRFFQ69G5FAV#1", "x")
        assert c.root() == root and c.resolve(uri).data.statement.endswith(SECRET)
    with cortex.open(tmp_path / "s", actor="agent", mode="r") as r:
        with pytest.raises(ReadOnlyStore):
            r.erase(uri, "x")
