"""The full export: a whole store as JSON Lines, and its import (docs/interop.md).

    c.export_jsonl("agent.jsonl")          # any store, any backend
    fresh.import_jsonl("agent.jsonl")      # an empty store of the same actor

The file, one JSON object a line, in this order (format version 2; version 1 files,
which lack `journal_format`, still import):

1. header: `{"kind": "header", "format": "cortex-export", "version": 2, "actor",
   "schema", "tokenizer", "journal_format", "root", "counts": {kind: lines}}`;
2. `memory` lines, in id order: `{"kind": "memory", "id", "type", "frames":
   [[verb, kind, ref]], "tags", "importance", "created", "updated", "expires",
   "tombstone": null | {"at", "reason"}, "versions": [{"version", "data": {field:
   value}, "created", "created_by", "confidence", "source", "forms": {"short",
   "medium"}, "tokens": {"short", "medium", "full"}, "content_hash"}]}` (and, for a
   version with provenance, `"provenance": {"occurred_at": µs or null, "session",
   "sequence", "origin": [event_id, message_id, tenant, agent] or null,
   "attributes": canonical JSON text or null}`, written only then) — every
   version, oldest first (the head's copy of the current version is the last one),
   and `"salience": {"last_used", "access_count", "citations", "importance",
   "pinned"}`, the memory's salience record. An erased memory has no line: the
   journal's `erase` entry stands for it;
3. a `weights` line when feedback has moved them: `{"kind": "weights", "recency",
   "access", "citation", "importance"}`;
4. `record` lines for every other stored record that is not derived from the ones
   above (trusted keys, revocations, edges, as later features add them):
   `{"kind": "record", "key": hex, "value": hex}`;
5. `journal` lines, in sequence order: `{"kind": "journal", "seq", "entry_kind",
   "at", "payload", "root"}`, `root` being the running root after the entry;
6. a trailer: `{"kind": "end", "lines": n, "sha256": hex}` over every line before it,
   with `"signature": {"key": hex, "sig": hex}` when exported with `sign_with=`.

Times are integers, microseconds since the Unix epoch (exact). Byte strings inside
journal payloads (memory ids, content hashes) are written `{"$hex": "..."}`; data
values are the stored record values (datetimes as microseconds, lists for tuples).
Index entries, `meta/journal` and `meta/clock_high` are not written: import derives
them (edges between memories and their index flags from the journal's link and
unlink entries).

Import reads its input once, copying it to a private temporary file that its second
pass reads (a pipe that serves other bytes the second time changes nothing), and
checks the whole file before it writes anything: JSON and shape of every line (each
at most `MAX_LINE_BYTES`), each version's content hash recomputed from its data, the
journal's hash chain against the header's root and, in journal format 2, every
version's content against the hash the journal wrote for it (`export_seal`, naming
the line that differs), the trailer's line count, digest and signature, and the
actor. A trust, untrust or revocation record (a `meta/trust/` or `meta/revoked/`
record line, or such a journal entry) is refused unless the caller passes
`trust_records=True`: an export must not plant the keys that sign scopes. Then it
writes in batches of `BATCH_KEYS` keys, the journal head last. While it runs,
`meta/import` names the file's root and digest: `verify()` reports an interrupted
import, and running the same import again completes it (every put is idempotent).
The result has the exported store's `root()` and journal format and verifies clean;
exporting it again gives the same bytes.

Both directions stream: memory use is bounded by one memory's versions and one
batch, whatever the store's size.

Length: over the ~600 lines a module keeps to, on purpose: the export and the import are
one format, written and read in one place: each check of the import mirrors a line the
export writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from ..edges import derived_after_import
from ..engine import Engine
from ..errors import CortexError, ImportRefused, ValidationError
from ..ids import decode_id, encode_id
from ..index import entries as index_entries
from ..index import natural_key
from ..index.lexical import META_LEXICAL
from ..journal import CONTENT_KINDS, ERASE_KIND, chain
from ..model import DATA_CLASSES, MemoryType, ObjKind, Verb, field_names
from ..records import (
    ALL_PREFIXES,
    HEAD_PREFIX,
    INDEX_PREFIX,
    JOURNAL_PREFIX,
    META_ACTOR,
    META_CACHE_EPOCH,
    META_CLOCK_HIGH,
    META_IMPORT,
    META_JOURNAL,
    META_JOURNAL_FORMAT,
    META_PREFIX,
    META_STORE_ID,
    META_SCHEMA,
    META_TOKENIZER,
    META_WEIGHTS,
    JOURNAL_FORMATS,
    REVOKED_PREFIX,
    ROOT_SIZE,
    SALIENCE_PREFIX,
    SCHEMA_VERSION,
    TRUST_PREFIX,
    VERSION_LENGTH,
    VERSION_PREFIX,
    V_PROV,
    Entry,
    Head,
    JournalHead,
    Version,
    content_hash,
    decode_score,
    decode_weights,
    encode_clock_high,
    encode_score,
    encode_weights,
    head_key,
    head_shape_ok,
    journal_key,
    journal_value,
    pack,
    salience_key,
    split_journal_value,
    unpack,
    unpack_head,
    version_key,
    version_shape_ok,
)
from ..salience.score import Score
from ..scope import private_key
from . import export_seal
from .limits import MAX_LINE_BYTES

FORMAT = "cortex-export"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1: no journal_format in the header (format 1)
BATCH_KEYS = 20_000
# Journal entries that trust a key or revoke a scope: imported only when asked.
TRUST_KINDS = ("trust", "untrust", "revoke")

# Keys written from the lines above, or derived on import: never a `record` line.
# (The cache epoch and the store id belong to this copy of the store, not to its memories.)
_COVERED_META = {META_ACTOR, META_SCHEMA, META_TOKENIZER, META_JOURNAL, META_CLOCK_HIGH, META_WEIGHTS, META_IMPORT,
                 META_CACHE_EPOCH, META_JOURNAL_FORMAT, META_LEXICAL, META_STORE_ID}
_COVERED_PREFIXES = (INDEX_PREFIX, HEAD_PREFIX, VERSION_PREFIX, JOURNAL_PREFIX, SALIENCE_PREFIX)
_KINDS_ORDER = ("memory", "weights", "record", "journal")
# The keys of a version line's `provenance`, in stored record order (`cortex.provenance`).
_PROVENANCE_KEYS = ("occurred_at", "session", "sequence", "origin", "attributes")


# ---------------------------------------------------------------------------
# Plain values <-> JSON


def _to_json(value: Any) -> Any:
    """A decoded msgpack value as JSON (bytes tagged, so they come back as bytes)."""
    if isinstance(value, bytes):
        return {"$hex": value.hex()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    return value


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$hex"} and isinstance(value["$hex"], str):
            return bytes.fromhex(value["$hex"])
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"


# ---------------------------------------------------------------------------
# Export


def export_jsonl(e: Engine, path: str | os.PathLike[str], *, sign_with: object = None) -> dict[str, int]:
    """Write the whole store to `path` (see the module docstring); return the line
    counts per kind. Runs on one consistent view (writers wait until it is done).
    `sign_with`: an Ed25519 private key (or its raw 32 bytes) that signs the end
    line's digest, so that `import_jsonl(..., signed_by=its public key)` accepts the
    file only as it was written."""
    e.check_open()
    target = os.fspath(path)
    if sign_with is not None:
        private_key(sign_with, "sign_with")
    return e.read(lambda: _export(e, target, sign_with))


def _export(e: Engine, target: str, sign_with: object) -> dict[str, int]:
    journal, _ = e.view_state()
    counts = {kind: 0 for kind in _KINDS_ORDER}
    counts["memory"] = sum(1 for _ in e.storage.scan_items(HEAD_PREFIX))
    counts["weights"] = int(e.storage.get(META_WEIGHTS) is not None)
    counts["record"] = sum(1 for _ in _other_records(e))
    counts["journal"] = journal.seq
    header = {
        "kind": "header", "format": FORMAT, "version": FORMAT_VERSION, "actor": e.actor, "schema": SCHEMA_VERSION,
        "tokenizer": e.tokenizer.name, "journal_format": journal.format, "root": journal.root.hex(), "counts": counts,
    }
    digest = hashlib.sha256()
    lines = 0
    tmp = target + ".partial"
    with open(tmp, "wb") as out:
        for obj in _export_lines(e, header):
            raw = _line(obj)
            if len(raw) > MAX_LINE_BYTES:
                out.close()
                os.unlink(tmp)
                raise CortexError(f"cannot export: line {lines + 1} ({obj['kind']} {obj.get('id', '')}) would be {len(raw)} bytes, "
                                  f"more than an import reads ({MAX_LINE_BYTES})")
            out.write(raw)
            digest.update(raw)
            lines += 1
        end: dict[str, Any] = {"kind": "end", "lines": lines, "sha256": digest.hexdigest()}
        if sign_with is not None:
            end["signature"] = export_seal.sign(sign_with, digest.hexdigest(), lines)
        out.write(_line(end))
    os.replace(tmp, target)
    return counts


def _export_lines(e: Engine, header: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield header
    for key, raw in e.storage.scan_items(HEAD_PREFIX):
        yield _memory_line(e, key, raw)
    weights = e.storage.get(META_WEIGHTS)
    if weights is not None:
        recency, access_w, citation, importance_w = decode_weights(weights)
        yield {"kind": "weights", "recency": recency, "access": access_w, "citation": citation, "importance": importance_w}
    for key, raw in _other_records(e):
        yield {"kind": "record", "key": key.hex(), "value": raw.hex()}
    for key, value in e.storage.scan_items(JOURNAL_PREFIX):
        root, entry_bytes = split_journal_value(value)
        entry = Entry.decode(key, entry_bytes)
        yield {"kind": "journal", "seq": entry.seq, "entry_kind": entry.kind, "at": entry.at,
               "payload": _to_json(entry.payload), "root": root.hex()}


def _other_records(e: Engine) -> Iterator[tuple[bytes, bytes]]:
    """Stored records no other line kind covers: unknown `meta/` keys and every
    top-level prefix beyond the core ones (in key order)."""
    for prefix in sorted(ALL_PREFIXES):
        if prefix in _COVERED_PREFIXES:
            continue
        for key, raw in e.storage.scan_items(prefix):
            if prefix == META_PREFIX and key in _COVERED_META:
                continue
            yield key, raw


def _memory_line(e: Engine, key: bytes, raw: bytes) -> dict[str, Any]:
    raw_id = key[len(HEAD_PREFIX):]
    head = Head.decode(key, raw)
    names = field_names(DATA_CLASSES[head.type])
    versions = []
    for number in range(1, head.version + 1):
        vkey = version_key(raw_id, number)
        vraw = e.storage.get(vkey)
        if vraw is None:
            raise CortexError(f"cannot export: version {number} of {encode_id(raw_id)} is missing (run verify())")
        rec = unpack(vkey, vraw)
        if not version_shape_ok(rec, int(head.type)):
            raise CortexError(f"cannot export: version {number} of {encode_id(raw_id)} is damaged (run verify())")
        data, created, created_by, confidence, source, forms, tokens, digest = rec[:VERSION_LENGTH]
        line = {
            "version": number, "data": dict(zip(names, data, strict=True)), "created": created, "created_by": created_by,
            "confidence": confidence, "source": source, "forms": {"short": forms[0], "medium": forms[1]},
            "tokens": {"short": tokens[0], "medium": tokens[1], "full": tokens[2]}, "content_hash": digest.hex(),
        }
        if len(rec) > V_PROV:
            line["provenance"] = dict(zip(_PROVENANCE_KEYS, rec[V_PROV], strict=True))
        versions.append(line)
    return {
        "kind": "memory", "id": encode_id(raw_id), "type": head.type.type_name,
        "frames": [[f.verb.name.lower(), f.kind.name.lower(), f.ref] for f in head.frames],
        "tags": list(head.tags), "importance": head.importance, "created": head.created, "updated": head.updated,
        "expires": head.expires,
        "tombstone": None if head.tombstone is None else {"at": head.tombstone[0], "reason": head.tombstone[1]},
        "versions": versions,
        "salience": _salience_of(e, raw_id),
    }


def _salience_of(e: Engine, raw_id: bytes) -> dict[str, Any]:
    key = salience_key(raw_id)
    raw = e.storage.get(key)
    if raw is None:
        raise CortexError(f"cannot export: the salience record of {encode_id(raw_id)} is missing (run rebuild())")
    last_used, access, citations, importance, pinned = decode_score(key, raw)
    return {"last_used": last_used, "access_count": access, "citations": citations, "importance": importance, "pinned": pinned}


# ---------------------------------------------------------------------------
# Import


def import_jsonl(e: Engine, path: str | os.PathLike[str], *, trust_records: bool = False,
                 signed_by: object = None) -> dict[str, int]:
    """Import an export into this store (empty, same actor); return the line counts
    per kind. Nothing is written unless the whole file checks out (see the module
    docstring). `trust_records=True` imports the trusted keys and revocations the
    export holds (refused otherwise); `signed_by`: an Ed25519 public key or several,
    one of which must have signed the file (`export_jsonl(..., sign_with=)`)."""
    e.check_writable()
    source = os.fspath(path)
    if not isinstance(trust_records, bool):
        raise ValidationError("trust_records", "must be a bool", trust_records)
    signers = export_seal.signer_keys(signed_by)
    with tempfile.TemporaryFile(prefix="cortex-import-") as spool, e.lock.write():
        e.check_open()
        header, digest = _check_file(e, source, spool, trust_records, signers)
        marker = (header["root"] + ":" + digest).encode()
        resuming = e.storage.get(META_IMPORT) == marker
        if e.journal.seq and not resuming:
            raise ImportRefused("path", "the store is not empty: import into a new store of the same actor", source)
        fmt = header.get("journal_format", 1)
        spool.seek(0)
        _write_all(e, spool, marker, fmt)
        e.journal = JournalHead.decode(e.storage.get(META_JOURNAL), fmt)
        high = e.storage.get(META_CLOCK_HIGH)
        e.clock_high = int.from_bytes(high, "big") if high else 0
        last = e.storage.last_key(HEAD_PREFIX)
        if last is not None:
            e.ids.observe(last[len(HEAD_PREFIX):])
    counts: dict[str, int] = header["counts"]
    return counts


def _open_source(source: str) -> IO[bytes]:
    try:
        return open(source, "rb")
    except OSError as exc:
        raise ImportRefused("path", f"cannot be read ({exc.strerror})", source) from None


def _lines(handle: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """Numbered lines, each read no further than `MAX_LINE_BYTES`: a longer one is refused."""
    number = 0
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise ImportRefused(f"line {number}", f"is longer than {MAX_LINE_BYTES} bytes, the most an import reads")
        yield number, raw


def _parse(number: int, raw: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise ImportRefused(f"line {number}", "is not JSON") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
        raise ImportRefused(f"line {number}", "must be a JSON object with a kind")
    return obj


_TRUST_REFUSED = "holds a trust record (a trusted key or a revoked scope): pass trust_records=True to import them"


def _check_file(e: Engine, source: str, spool: IO[bytes], trust_records: bool,
                signers: frozenset[bytes] | None) -> tuple[dict[str, Any], str]:
    """Read the whole file once, copying it to `spool` and checking everything;
    return the header and digest."""
    digest = hashlib.sha256()
    header: dict[str, Any] | None = None
    expected = "header"
    seen: dict[str, int] = {kind: 0 for kind in _KINDS_ORDER}
    root = bytes(ROOT_SIZE)
    seq = 0
    ended = False
    previous_id = b""
    ledger = export_seal.ContentLedger()
    with _open_source(source) as handle:
        for number, raw in _lines(handle):
            spool.write(raw)
            if ended:
                raise ImportRefused(f"line {number}", "follows the end line")
            obj = _parse(number, raw)
            kind = obj["kind"]
            if kind == "end":
                if header is not None and header.get("journal_format", 1) >= 2:
                    ledger.check()
                if obj.get("lines") != number - 1 or obj.get("sha256") != digest.hexdigest():
                    raise ImportRefused(f"line {number}", "the end line's count or digest does not match the lines before it (altered file)")
                export_seal.check_signature(obj, number, digest.hexdigest(), signers)
                ended = True
                continue
            digest.update(raw)
            if number == 1:
                header = _check_header(e, obj)
                continue
            if kind not in _KINDS_ORDER:
                raise ImportRefused(f"line {number}", f"unknown kind {kind!r}")
            if _KINDS_ORDER.index(kind) < _KINDS_ORDER.index(expected if expected != "header" else "memory"):
                raise ImportRefused(f"line {number}", f"{kind} line out of order")
            expected = kind
            seen[kind] += 1
            try:
                if kind == "memory":
                    raw_id = decode_id(obj["id"])
                    if raw_id <= previous_id:
                        raise ValueError("memory ids must ascend")
                    previous_id = raw_id
                    _, contents = _memory_puts(obj)
                    for version, content in enumerate(contents, start=1):
                        ledger.memory_version(raw_id, version, content, number)
                elif kind == "weights":
                    _weights_put(obj)
                elif kind == "record":
                    key, _ = _record_put(obj)
                    if key.startswith((TRUST_PREFIX, REVOKED_PREFIX)) and not trust_records:
                        raise ImportRefused(f"line {number}", _TRUST_REFUSED)
                else:
                    seq += 1
                    entry, entry_bytes, stored_root = _journal_parts(obj, seq)
                    root = chain(root, entry_bytes)
                    if root != stored_root:
                        raise ValueError("the journal's hash chain breaks here")
                    if entry.kind in TRUST_KINDS and not trust_records:
                        raise ImportRefused(f"line {number}", _TRUST_REFUSED)
                    _note_content(ledger, entry, number)
            except ImportRefused:
                raise
            except (CortexError, ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError) as exc:
                raise ImportRefused(f"line {number}", f"bad {kind} line: {exc}") from None
    if header is None:
        raise ImportRefused("path", "is empty", source)
    if not ended:
        raise ImportRefused("path", "ends without its end line (truncated file)", source)
    if seen != header["counts"]:
        raise ImportRefused("line 1", f"counts {header['counts']} but the file holds {seen}")
    if root.hex() != header["root"]:
        raise ImportRefused("line 1", "the journal does not end at the header's root")
    spool.flush()
    return header, digest.hexdigest()


def _note_content(ledger: export_seal.ContentLedger, entry: Entry, line: int) -> None:
    """What a journal entry says about content: the hash of a version it writes, or
    the erasure of a memory's."""
    p = entry.payload
    if entry.kind in CONTENT_KINDS and isinstance(p.get("content"), bytes) and isinstance(p.get("id"), bytes):
        ledger.journal_version(p["id"], p["version"], p["content"], line)
    elif entry.kind == ERASE_KIND and isinstance(p.get("id"), bytes):
        ledger.erased(p["id"])


def _check_header(e: Engine, obj: dict[str, Any]) -> dict[str, Any]:
    if obj.get("kind") != "header" or obj.get("format") != FORMAT:
        raise ImportRefused("line 1", f"must be a {FORMAT} header")
    if obj.get("version") not in READABLE_VERSIONS:
        raise ImportRefused("line 1", f"format version {obj.get('version')!r}; this cortex reads versions {READABLE_VERSIONS}")
    if obj.get("actor") != e.actor:
        raise ImportRefused("line 1", f"the export belongs to actor {obj.get('actor')!r}, not {e.actor!r}")
    if obj.get("schema") != SCHEMA_VERSION or obj.get("tokenizer") != e.tokenizer.name:
        raise ImportRefused("line 1", "schema version or tokenizer differs from this store's")
    fmt = obj.get("journal_format", 1) if obj["version"] >= 2 else None
    if obj["version"] >= 2 and (type(fmt) is not int or fmt not in JOURNAL_FORMATS):
        raise ImportRefused("line 1", f"journal_format must be one of {JOURNAL_FORMATS}")
    if obj["version"] < 2 and "journal_format" in obj:
        raise ImportRefused("line 1", "a version 1 export has no journal_format")
    counts = obj.get("counts")
    if not isinstance(counts, dict) or set(counts) != set(_KINDS_ORDER) or not all(isinstance(v, int) for v in counts.values()):
        raise ImportRefused("line 1", "counts must give a line count for each kind")
    if not isinstance(obj.get("root"), str) or len(obj["root"]) != 2 * ROOT_SIZE:
        raise ImportRefused("line 1", "root must be 64 hex digits")
    return obj


def _memory_puts(obj: dict[str, Any]) -> tuple[dict[bytes, bytes], list[bytes]]:
    """Every key of a memory line (head, versions, salience record and index
    entries) and the content hash of each version, recomputed from its data
    (ValueError if malformed, or if a version's `content_hash` is not its data's)."""
    raw_id = decode_id(obj["id"])
    mtype = MemoryType.from_type_name(obj["type"])
    names = field_names(DATA_CLASSES[mtype])
    puts: dict[bytes, bytes] = {}
    versions = obj["versions"]
    if not isinstance(versions, list) or not versions:
        raise ValueError("a memory needs its versions")
    last: list[Any] = []
    contents: list[bytes] = []
    for number, v in enumerate(versions, start=1):
        if v["version"] != number or set(v["data"]) != set(names):
            raise ValueError(f"version {number} is malformed")
        rec = [[v["data"][name] for name in names], v["created"], v["created_by"], v["confidence"], v["source"],
               [v["forms"]["short"], v["forms"]["medium"]], [v["tokens"]["short"], v["tokens"]["medium"], v["tokens"]["full"]],
               bytes.fromhex(v["content_hash"])]
        if "provenance" in v:
            prov = v["provenance"]
            if not isinstance(prov, dict) or set(prov) != set(_PROVENANCE_KEYS):
                raise ValueError(f"version {number} has a malformed provenance")
            rec.append([prov[name] for name in _PROVENANCE_KEYS])
        if not version_shape_ok(rec, int(mtype)):
            raise ValueError(f"version {number} has the wrong shape")
        version = Version.decode(version_key(raw_id, number), pack(rec), mtype, validate=True)
        digest = content_hash(version.data.to_record())
        if digest != version.content_hash or digest != content_hash(rec[0]):
            raise ValueError(f"version {number}'s content_hash is not the hash of its data")
        contents.append(digest)
        puts[version_key(raw_id, number)] = version.encode(rec[0])
        last = rec
    tomb = obj["tombstone"]
    frames = [[int(Verb.parse(verb)), int(ObjKind.parse(kind)), ref] for verb, kind, ref in obj["frames"]]
    head = [int(mtype), len(versions), obj["created"], obj["updated"], frames, obj["tags"], obj["importance"],
            None if tomb is None else [tomb["at"], tomb["reason"]], obj["expires"], last[0], last[3], last[4], last[5], last[6],
            *last[V_PROV:]]
    raw_head = pack(head)
    if not head_shape_ok(unpack_head(head_key(raw_id), raw_head)):
        raise ValueError("the head has the wrong shape")
    decoded = Head.decode(head_key(raw_id), raw_head, validate=True)
    puts[head_key(raw_id)] = decoded.encode(head[9], frames)
    sal = obj["salience"]
    key = salience_key(raw_id)
    puts[key] = encode_score((sal["last_used"], sal["access_count"], sal["citations"], sal["importance"], sal["pinned"]))
    puts.update(index_entries(raw_id, decoded, Score.decode(puts[key], key)))
    return puts, contents


def _weights_put(obj: dict[str, Any]) -> tuple[bytes, bytes]:
    raw = encode_weights((obj["recency"], obj["access"], obj["citation"], obj["importance"]))
    decode_weights(raw)
    return META_WEIGHTS, raw


def _record_put(obj: dict[str, Any]) -> tuple[bytes, bytes]:
    key, value = bytes.fromhex(obj["key"]), bytes.fromhex(obj["value"])
    if any(key.startswith(p) for p in _COVERED_PREFIXES) or key in _COVERED_META or not any(key.startswith(p) for p in ALL_PREFIXES):
        raise ValueError("a record line may not hold that key")
    return key, value


def _journal_parts(obj: dict[str, Any], seq: int) -> tuple[Entry, bytes, bytes]:
    if obj["seq"] != seq:
        raise ValueError(f"sequence {obj['seq']!r}, expected {seq}")
    if not isinstance(obj["entry_kind"], str) or not isinstance(obj["at"], int) or not isinstance(obj["payload"], dict):
        raise ValueError("a journal line needs entry_kind, at and payload")
    entry = Entry(seq, obj["entry_kind"], obj["at"], _from_json(obj["payload"]))
    root = bytes.fromhex(obj["root"])
    if len(root) != ROOT_SIZE:
        raise ValueError("root must be 64 hex digits")
    return entry, entry.encode(), root


def _natural_key_put(obj: dict[str, Any]) -> dict[bytes, bytes]:
    """The natural key entry a `write` journal line implies (`cortex.index.natural_key`):
    lines come in journal order, so the memory written last with a key keeps it."""
    payload = obj["payload"]
    if obj["entry_kind"] != "write" or not isinstance(payload.get("key"), str):
        return {}
    raw_id = _from_json(payload["id"])
    return {natural_key.key(payload["type"], payload["key"]): natural_key.value(raw_id, payload["key"])}


def _write_all(e: Engine, spool: IO[bytes], marker: bytes, fmt: int) -> None:
    """The second pass, over the spooled copy the first pass checked: write every
    line's keys in bounded batches, the journal head, the journal format (and the
    end of `meta/import`) in the last one."""
    batch: dict[bytes, bytes | None] = {META_IMPORT: marker}
    high = 0
    root = bytes(ROOT_SIZE)
    seq = 0

    def flush() -> None:
        if batch:
            e.write(dict(batch))
            batch.clear()

    for number, raw in _lines(spool):
        obj = _parse(number, raw)
        kind = obj["kind"]
        if kind in ("header", "end"):
            continue
        if kind == "memory":
            batch.update(_memory_puts(obj)[0])
        elif kind == "weights":
            key, value = _weights_put(obj)
            batch[key] = value
        elif kind == "record":
            key, value = _record_put(obj)
            batch[key] = value
        else:
            seq += 1
            _, entry_bytes, stored_root = _journal_parts(obj, seq)
            root = chain(root, entry_bytes)
            batch[journal_key(seq)] = journal_value(stored_root, entry_bytes)
            batch.update(_natural_key_put(obj))
            high = max(high, obj["at"])
        if len(batch) >= BATCH_KEYS:
            flush()
    flush()
    for puts in derived_after_import(e):  # edges and their flags, from the journal just written
        e.write(puts)
    e.build_lexical()
    batch[META_JOURNAL] = JournalHead(seq, root).encode()
    batch[META_JOURNAL_FORMAT] = str(fmt).encode()
    if seq:
        batch[META_CLOCK_HIGH] = encode_clock_high(high)
    batch[META_IMPORT] = None
    flush()
