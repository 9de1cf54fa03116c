"""An export is untrusted input: the root commits to content, the file is read once,
trust records come in only when asked, and a signature can be required
(docs/trust.md). One test per attack, each built as an attacker would: alter, then
re-seal the file (content hash and end digest made again)."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import cortex
from cortex import Fact
from cortex.errors import ImportRefused, ValidationError
from cortex.interop.limits import MAX_LINE_BYTES
from cortex.journal import chain
from cortex.records import content_hash, pack

from cortex.storage.rocksdb import open_rocksdb

ZERO = "0" * 64
# Every key of a store written by an earlier cortex (journal format 1): see tests/test_format_compat.py.
DATA = json.loads((Path(__file__).parent.parent / "data" / "store_v1.json").read_text())


def _restore(path: Path) -> None:
    storage = open_rocksdb(str(path), read_only=False, cache_mb=8, sync=False)
    try:
        storage.write({bytes.fromhex(k): bytes.fromhex(v) for k, v in DATA["keys"].items()})
    finally:
        storage.close()


def _store(path: Path) -> tuple[str, str]:
    """A small store; returns (its root, the URI of the fact an attacker alters)."""
    with cortex.open(path, actor="agent") as c:
        uri = c.write(Fact(statement="pay invoices from account 111", subject="ops", predicate="pays"))
        c.update(uri, Fact(statement="pay invoices from account 112", subject="ops", predicate="pays"))
        c.write(Fact(statement="the sky is blue", subject="sky", predicate="is"))
        return c.root(), uri


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _reseal(lines: list[dict], path: Path) -> None:
    """Write `lines` back with a new end line (count and digest over the others)."""
    body = [json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for obj in lines[:-1]]
    end = {"kind": "end", "lines": len(body), "sha256": hashlib.sha256(b"".join(body)).hexdigest()}
    path.write_bytes(b"".join(body) + json.dumps(end).encode() + b"\n")


def _alter_memory(lines: list[dict], old: str, new: str) -> int:
    """Change a version's text and recompute its content_hash; return the line number."""
    for number, obj in enumerate(lines, start=1):
        for v in obj.get("versions", []):
            if v["data"].get("statement") == old:
                v["data"]["statement"] = new
                record = [v["data"][k] for k in ("statement", "subject", "predicate", "object", "source", "as_of")]
                v["content_hash"] = content_hash(record).hex()
                return number
    raise AssertionError("no such text")


def test_a_resealed_altered_memory_is_refused_naming_its_line(tmp_path):
    _store(tmp_path / "a")
    with cortex.open(tmp_path / "a", actor="agent") as a:
        a.export_jsonl(tmp_path / "x.jsonl")
    lines = _lines(tmp_path / "x.jsonl")
    number = _alter_memory(lines, "pay invoices from account 112", "pay invoices from account 999")
    _reseal(lines, tmp_path / "x.jsonl")
    with cortex.open(tmp_path / "b", actor="agent") as b:
        with pytest.raises(ImportRefused) as err:
            b.import_jsonl(tmp_path / "x.jsonl")
        assert err.value.field == f"line {number}" and number != len(lines)
        assert "version 2 of memory" in str(err.value) and "the root does not commit to this content" in str(err.value)
        assert b.root() == ZERO and list(b.memories()) == []


def test_a_fully_rechained_export_gets_another_root(tmp_path):
    """Altering the journal's content hash too, re-chaining it and moving the header's
    root makes an importable file, but not one with the source's root."""
    root, _ = _store(tmp_path / "a")
    with cortex.open(tmp_path / "a", actor="agent") as a:
        a.export_jsonl(tmp_path / "x.jsonl")
    lines = _lines(tmp_path / "x.jsonl")
    _alter_memory(lines, "pay invoices from account 112", "pay invoices from account 999")
    altered = content_hash(["pay invoices from account 999", "ops", "pays", None, None, None])
    running = bytes(32)
    for obj in lines:
        if obj["kind"] != "journal":
            continue
        if obj["entry_kind"] == "update":
            obj["payload"]["content"] = {"$hex": altered.hex()}
        payload = {k: (bytes.fromhex(v["$hex"]) if isinstance(v, dict) else v) for k, v in obj["payload"].items()}
        raw = pack({"seq": obj["seq"], "kind": obj["entry_kind"], "at": obj["at"], "payload": payload})
        running = chain(running, raw)
        obj["root"] = running.hex()
    lines[0]["root"] = running.hex()
    _reseal(lines, tmp_path / "x.jsonl")
    with cortex.open(tmp_path / "b", actor="agent") as b:
        b.import_jsonl(tmp_path / "x.jsonl")
        assert b.verify() == []
        assert b.root() != root


def test_import_reads_its_input_once(tmp_path):
    """A FIFO that serves the genuine export, then an altered one to a second reader:
    the import opens it once and imports the genuine content."""
    root, uri = _store(tmp_path / "a")
    with cortex.open(tmp_path / "a", actor="agent") as a:
        a.export_jsonl(tmp_path / "good.jsonl")
    good = (tmp_path / "good.jsonl").read_bytes()
    lines = _lines(tmp_path / "good.jsonl")
    _alter_memory(lines, "pay invoices from account 112", "pay invoices from account 999")
    _reseal(lines, tmp_path / "bad.jsonl")
    bad = (tmp_path / "bad.jsonl").read_bytes()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = threading.Event()
    served: list[str] = []

    def readers_open() -> bool:  # whether this process (the import) holds the FIFO open
        fds = Path("/proc/self/fd")
        return any(os.path.realpath(fds / name) == str(fifo.resolve()) for name in os.listdir(fds))

    def serve() -> None:
        with open(fifo, "wb") as out:  # blocks until the import opens it
            out.write(good)
        served.append("good")
        while readers_open() and not done.is_set():  # the first reader drains the pipe and closes it
            time.sleep(0.005)
        while not done.is_set():  # then serve the altered file to any second reader
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.005)
                continue
            os.set_blocking(fd, True)
            with os.fdopen(fd, "wb") as out:
                out.write(bad)
            served.append("bad")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with cortex.open(tmp_path / "b", actor="agent") as b:
        b.import_jsonl(fifo)
        done.set()
        thread.join(timeout=30)
        assert served == ["good"]
        assert b.root() == root and b.verify() == []
        assert b.resolve_latest(uri.split("/")[3].split("#")[0]).data.statement == "pay invoices from account 112"


def test_a_trust_record_is_imported_only_when_asked(tmp_path):
    key = Ed25519PrivateKey.generate()
    with cortex.open(tmp_path / "a", actor="agent") as a:
        a.write(Fact(statement="s", subject="s", predicate="p"))
        a.trust(key.public_key(), "lead")
        a.export_jsonl(tmp_path / "x.jsonl")
        root = a.root()
    with cortex.open(tmp_path / "b", actor="agent") as b:
        with pytest.raises(ImportRefused) as err:
            b.import_jsonl(tmp_path / "x.jsonl")
        assert "trust_records=True" in str(err.value) and err.value.field != "line 1"
        assert b.root() == ZERO
        with pytest.raises(ValidationError, match="trust_records"):
            b.import_jsonl(tmp_path / "x.jsonl", trust_records="yes")  # type: ignore[arg-type]
        b.import_jsonl(tmp_path / "x.jsonl", trust_records=True)
        assert b.root() == root and b.verify() == []


def test_signed_exports(tmp_path):
    root, _ = _store(tmp_path / "a")
    key, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    with cortex.open(tmp_path / "a", actor="agent") as a:
        a.export_jsonl(tmp_path / "signed.jsonl", sign_with=key)
        a.export_jsonl(tmp_path / "plain.jsonl")
        a.export_jsonl(tmp_path / "other.jsonl", sign_with=other)
    end = _lines(tmp_path / "signed.jsonl")[-1]
    assert end["signature"]["key"] == key.public_key().public_bytes_raw().hex()
    with cortex.open(tmp_path / "b", actor="agent") as b:
        with pytest.raises(ImportRefused, match="not signed"):
            b.import_jsonl(tmp_path / "plain.jsonl", signed_by=key.public_key())
        with pytest.raises(ImportRefused, match="not among signed_by"):
            b.import_jsonl(tmp_path / "other.jsonl", signed_by=[key.public_key()])
        # Re-sealed after an alteration that keeps the content check happy (a weight):
        # the digest changes, so the signature no longer verifies.
        lines = _lines(tmp_path / "signed.jsonl")
        lines[1]["salience"]["access_count"] += 1
        body = [json.dumps(o, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for o in lines[:-1]]
        lines[-1]["sha256"] = hashlib.sha256(b"".join(body)).hexdigest()
        (tmp_path / "resealed.jsonl").write_bytes(b"".join(body) + json.dumps(lines[-1]).encode() + b"\n")
        with pytest.raises(ImportRefused, match="signature does not verify"):
            b.import_jsonl(tmp_path / "resealed.jsonl")
        assert b.root() == ZERO
        b.import_jsonl(tmp_path / "signed.jsonl", signed_by=key.public_key().public_bytes_raw())
        assert b.root() == root


def test_an_overlong_line_is_refused_without_reading_it_whole(tmp_path):
    _store(tmp_path / "a")
    with cortex.open(tmp_path / "a", actor="agent") as a:
        a.export_jsonl(tmp_path / "x.jsonl")
    raw = (tmp_path / "x.jsonl").read_bytes().split(b"\n")
    raw.insert(1, b" " * (MAX_LINE_BYTES + 10))
    (tmp_path / "long.jsonl").write_bytes(b"\n".join(raw))
    with cortex.open(tmp_path / "b", actor="agent") as b:
        with pytest.raises(ImportRefused, match="longer than") as err:
            b.import_jsonl(tmp_path / "long.jsonl")
        assert err.value.field == "line 2"


def test_a_store_of_journal_format_1_opens_writes_verifies_exports_and_imports(tmp_path):
    _restore(tmp_path / "old")
    with cortex.open(tmp_path / "old", actor=DATA["actor"]) as c:
        assert c.stats()["journal_format"] == 1
        c.write(Fact(statement="after", subject="s", predicate="p"))
        assert c.verify() == []
        c.export_jsonl(tmp_path / "old.jsonl")
        root = c.root()
    assert _lines(tmp_path / "old.jsonl")[0]["journal_format"] == 1
    with cortex.open(tmp_path / "copy", actor=DATA["actor"]) as d:
        assert d.stats()["journal_format"] == 2
        d.import_jsonl(tmp_path / "old.jsonl")
        assert d.root() == root and d.verify() == [] and d.stats()["journal_format"] == 1
    with cortex.open(tmp_path / "copy", actor=DATA["actor"]) as d:
        assert d.stats()["journal_format"] == 1 and d.verify() == []
    migrated = cortex.migrate(tmp_path / "old", tmp_path / "moved")
    assert migrated.root == root
    with cortex.open(tmp_path / "moved", actor=DATA["actor"], mode="r") as m:
        assert m.stats()["journal_format"] == 1


def test_a_new_store_commits_to_content(tmp_path):
    """Format 2: the journal holds each version's content hash, and verify() names a
    version whose record was rewritten with a matching content hash."""
    _, uri = _store(tmp_path / "a")
    from cortex.ids import decode_id
    from cortex.records import unpack, version_key

    raw_id = decode_id(uri.split("/")[3].split("#")[0])
    storage = open_rocksdb(str(tmp_path / "a"), read_only=False, cache_mb=8, sync=False)
    try:
        key = version_key(raw_id, 1)
        rec = unpack(key, storage.get(key))
        rec[0][0] = "pay invoices from account 999"
        rec[7] = content_hash(rec[0])
        storage.write({key: pack(rec)})
    finally:
        storage.close()
    with cortex.open(tmp_path / "a", actor="agent") as c:
        assert c.stats()["journal_format"] == 2
        assert c.verify() == [f"mv/{key[3:].hex()}: version disagrees with the journal (content)"]
