"""The command line's part of docs/trust.md: signed exports and fingerprints, the
trust records an import refuses unless asked, an import from a pipe, erase."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

import cortex
from cortex.cli import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def signed(tmp_path, capsys):
    """A store that trusts a key, exported signed with it; returns (export, public key hex)."""
    store, key = tmp_path / "a", tmp_path / "lead.key"
    assert run(capsys, "init", str(store), "--actor", "agent")[0] == 0
    with cortex.open(store, actor="agent") as c:
        c.write(cortex.Fact(statement="the sky is blue", subject="sky", predicate="is"))
    assert run(capsys, "trust", str(store), "lead", "--new-key", str(key))[0] == 0
    assert run(capsys, "export", str(store), str(tmp_path / "a.jsonl"), "--sign-with", str(key))[0] == 0
    public = json.loads((tmp_path / "a.jsonl").read_text().splitlines()[-1])["signature"]["key"]
    return tmp_path / "a.jsonl", public


def test_a_signed_export_imports_only_as_asked(tmp_path, capsys, signed):
    export, public = signed
    status, _, err = run(capsys, "import", str(tmp_path / "b"), str(export), "--signed-by", public)
    assert status == 2 and "trust_records=True" in err and not (tmp_path / "b").exists()
    status, _, err = run(capsys, "import", str(tmp_path / "b"), str(export), "--signed-by", "ab" * 32, "--trust-records")
    assert status == 2 and "not among signed_by" in err
    status, out, _ = run(capsys, "import", str(tmp_path / "b"), str(export), "--signed-by", public, "--trust-records")
    assert status == 0 and out.startswith("imported 1 memories")
    status, _, err = run(capsys, "import", str(tmp_path / "c"), str(export), "--signed-by", "zz")
    assert status == 2 and "--signed-by" in err


def test_import_from_a_pipe_reads_it_once(tmp_path, capsys, signed):
    export, _ = signed
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = export.read_bytes()

    def serve() -> None:
        with open(fifo, "wb") as out:
            out.write(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    status, out, err = run(capsys, "import", str(tmp_path / "b"), str(fifo), "--trust-records")
    thread.join(timeout=30)
    assert status == 0, err
    with cortex.open(tmp_path / "b", actor="agent", mode="r") as b:
        assert [m.data.statement for m in b.memories()] == ["the sky is blue"] and b.verify() == []


def test_erase_and_a_signed_fingerprint(tmp_path, capsys):
    store, key = tmp_path / "a", tmp_path / "lead.key"
    with cortex.open(store, actor="agent") as c:
        uri = c.write(cortex.Constraint(statement="never pay above 2 USD/h", strength="hard", polarity="dont",
                                        source="user_declared"))
        gone = c.write(cortex.Fact(statement="card k7Qz9XwP2mVb8RtY3nLc6HdJ4sFg1AeU", subject="u", predicate="p"))
    assert run(capsys, "erase", str(store), gone, "--reason", "asked to forget")[0] == 0
    status, _, err = run(capsys, "erase", str(store), gone, "--reason", "again")
    assert status == 2 and "NotFound" in err
    assert run(capsys, "trust", str(store), "lead", "--new-key", str(key))[0] == 0
    status, out, _ = run(capsys, "export-fingerprint", str(store), "--sign-with", str(key))
    envelope = json.loads(out)
    assert status == 0 and set(envelope["cortex_signature"]) == {"key", "sig"}
    with cortex.open(tmp_path / "b", actor="other") as b:
        b.trust(bytes.fromhex(envelope["cortex_signature"]["key"]), "lead")
        assert b.import_fingerprint(envelope) == 1
        assert [m.uri for m in b.context(verb=None).pinned] != [] and uri
    with cortex.open(store, actor="agent", mode="r") as c:
        assert c.verify() == [] and [m.uri for m in c.memories()] == [uri]


def test_verify_says_when_a_store_is_of_journal_format_1(tmp_path, capsys):
    data = json.loads((Path(__file__).parent / "data" / "store_v1.json").read_text())
    from cortex.storage.rocksdb import open_rocksdb

    storage = open_rocksdb(str(tmp_path / "old"), read_only=False, cache_mb=8, sync=False)
    try:
        storage.write({bytes.fromhex(k): bytes.fromhex(v) for k, v in data["keys"].items()})
    finally:
        storage.close()
    cortex.open(tmp_path / "old", actor=data["actor"]).close()  # a writer's open builds what this cortex derives
    assert run(capsys, "verify", str(tmp_path / "old")) == (
        0, "0 problem(s); journal format 1: the root does not commit to content (docs/trust.md)\n", "")
    status, out, _ = run(capsys, "stats", str(tmp_path / "old"), "--json")
    assert status == 0 and json.loads(out)["journal_format"] == 1
