"""The journal and the OverallRoot hash chain.

Every write appends entries `{seq, kind, at, payload}` under `j/<seq8>` in the same
batch as the write, and moves the journal head `meta/journal` (seq8 + root32) with
it. The root is a hash chain over the encoded entries:

    root_0 = 32 zero bytes
    root_n = sha256(b"cortex.journal.v1" + root_{n-1} + entry_bytes_n)

so the root names the whole history: any write changes it, a read never does.

Journal formats. A store records its journal format under `meta/journal_format`
(absent in stores of format 1); the chain is computed the same way in both:

* format 1: a write or update entry names the memory, its type, version, frames
  and tags, but not its content;
* format 2: every write and update entry also carries
  `content`, the SHA-256 of the data record it writes (`cortex.records.content_hash`),
  so the root commits to every byte of content: a store rebuilt from an export has
  the same root only if its content is the same. An `erase` entry keeps the hashes of
  what it removed (`cortex.erasure`).

A store keeps its format: stores of format 1 open, write, verify, export and
migrate as they did (their new entries stay in format 1); new stores are made in
format 2. docs/trust.md tells how to move a store to format 2.
Each `j/<seq8>` value is `root_n` (32 bytes) followed by the entry's msgpack bytes
(`cortex.records`): with the running root stored beside every entry, `verify()`
can name the entry that was altered instead of only saying that the chain no
longer ends at the root.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .model import MAX_IMPORTANCE, EdgeType
from .records import META_JOURNAL, ROOT_SIZE, EdgeRecord, Entry, JournalHead, encode_entry, is_int, journal_key, journal_value

DOMAIN = b"cortex.journal.v1"
ZERO_ROOT = bytes(ROOT_SIZE)
# Entry kinds that write a version: in format 2 they carry its content hash.
CONTENT_KINDS = ("write", "update")


def chain(prev_root: bytes, entry_bytes: bytes) -> bytes:
    return hashlib.sha256(DOMAIN + prev_root + entry_bytes).digest()


def with_content(head: JournalHead, payload: dict[str, Any], digest: bytes) -> dict[str, Any]:
    """A write or update payload for the journal `head` is in: with the content hash
    of the version it writes from format 2 on."""
    if head.format >= 2:
        payload["content"] = digest
    return payload


def append(puts: dict[bytes, bytes | None], head: JournalHead, kind: str, at: int, payload: dict[str, Any]) -> JournalHead:
    """Add one entry and the new journal head to a pending batch; return the new head."""
    seq = head.seq + 1
    raw = encode_entry(seq, kind, at, payload)
    new_head = JournalHead(seq, chain(head.root, raw), head.format)
    puts[journal_key(seq)] = journal_value(new_head.root, raw)
    puts[META_JOURNAL] = new_head.encode()
    return new_head


# ---------------------------------------------------------------------------
# What the journal says about each memory: checks for verify()

# Entries about memories (they move salience records), and about scopes: a trusted
# signer, one no longer trusted, a revoked scope, a scope violation (cortex.scope).
MEMORY_KINDS = ("write", "update", "update_head", "tombstone", "attest", "access")
SCOPE_KINDS = ("trust", "untrust", "revoke", "violation")
# Entries about edges between memories (cortex.edges): they move no salience record.
EDGE_KINDS = ("link", "unlink")
# The erasure of a memory's content (`cortex.erasure`): it moves no salience record.
ERASE_KIND = "erase"
KINDS = MEMORY_KINDS + SCOPE_KINDS + EDGE_KINDS + (ERASE_KIND,)
VIOLATIONS = ("resolve", "budget")


def _is_int(v: Any, lo: int = 0, hi: int = 2**63) -> bool:
    return is_int(v, lo, hi)


def _is_id(v: Any) -> bool:
    return isinstance(v, bytes) and len(v) == 16


def _is_ids(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(_is_id(i) for i in v)


def _is_texts(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(t, str) for t in v)


def _is_frames(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(f, list) and len(f) == 3 and _is_int(f[0], 1, 11) and _is_int(f[1], 1, 13) and isinstance(f[2], str) for f in v
    )


def _is_hash(v: Any) -> bool:
    return isinstance(v, bytes) and len(v) == 32


def _is_content(p: dict[str, Any]) -> bool:
    return "content" not in p or _is_hash(p["content"])


def _is_edge(p: dict[str, Any]) -> bool:
    return _is_id(p.get("src")) and _is_id(p.get("dst")) and p["src"] != p["dst"] and _is_int(p.get("type"), 1, len(EdgeType) + 1)


_PAYLOAD_RULES: dict[str, Any] = {
    "write": lambda p: _is_id(p.get("id")) and _is_int(p.get("type"), 1, 10) and p.get("version") == 1
    and _is_int(p.get("importance"), 0, MAX_IMPORTANCE + 1) and isinstance(p.get("pinned"), bool) and _is_frames(p.get("frames"))
    and _is_texts(p.get("tags")) and (p.get("expires") is None or _is_int(p.get("expires"))) and _is_content(p)
    and ("key" not in p or isinstance(p["key"], str)),
    "update": lambda p: _is_id(p.get("id")) and _is_int(p.get("version"), 2, 2**32) and isinstance(p.get("pinned"), bool)
    and _is_content(p),
    "update_head": lambda p: _is_id(p.get("id")) and (p.get("importance") is None or _is_int(p.get("importance"), 0, MAX_IMPORTANCE + 1))
    and ("tags" not in p or _is_texts(p["tags"])) and ("frames" not in p or _is_frames(p["frames"])),
    "tombstone": lambda p: _is_id(p.get("id")) and isinstance(p.get("reason"), str),
    "attest": lambda p: _is_ids(p.get("ids")) and p.get("outcome") in ("success", "failure")
    and (p.get("reason") is None or isinstance(p.get("reason"), str)),
    "access": lambda p: _is_ids(p.get("ids")),
    "trust": lambda p: isinstance(p.get("name"), str) and isinstance(p.get("key"), bytes) and len(p["key"]) == 32,
    "untrust": lambda p: isinstance(p.get("name"), str),
    "revoke": lambda p: isinstance(p.get("scope"), bytes) and len(p["scope"]) == 32,
    "violation": lambda p: isinstance(p.get("scope"), bytes) and len(p["scope"]) == 32 and p.get("what") in VIOLATIONS
    and isinstance(p.get("detail"), str) and _is_int(p.get("held_back")),
    "link": lambda p: _is_edge(p) and type(p.get("weight")) is float and 0.0 <= p["weight"] <= 1.0,
    "unlink": lambda p: _is_edge(p) and isinstance(p.get("reason"), str),
    "erase": lambda p: _is_id(p.get("id")) and isinstance(p.get("reason"), str) and isinstance(p.get("by"), str)
    and isinstance(p.get("versions"), list) and bool(p["versions"]) and all(_is_hash(h) for h in p["versions"]),
}


def entry_problem(entry: Entry, expected_seq: int, format: int) -> str | None:
    """Why a decoded entry cannot be one the write path of a store of journal
    `format` wrote, or None."""
    if entry.seq != expected_seq:
        return f"sequence {entry.seq!r}, expected {expected_seq}"
    if not _is_int(entry.at):
        return "time is not a non-negative integer"
    if entry.kind not in KINDS:
        return "unknown kind"
    if not isinstance(entry.payload, dict) or not _PAYLOAD_RULES[entry.kind](entry.payload):
        return f"malformed {entry.kind} payload"
    if entry.kind in CONTENT_KINDS and ("content" in entry.payload) != (format >= 2):
        return f"{entry.kind} payload {'without' if format >= 2 else 'with'} a content hash in a journal of format {format}"
    return None


@dataclass
class HeadFacts:
    """What the journal implies about a memory's head: verify() compares the two."""

    type: int
    version: int
    created: int
    updated: int
    importance: int
    tags: list[str]
    frames: list[list[Any]]
    expires: int | None
    tombstoned: bool = False
    erased: bool = False  # its content was erased (`cortex.erasure`): no head, no versions
    version_times: list[int] = field(default_factory=list)  # when each version was written
    contents: list[bytes] = field(default_factory=list)  # each version's content hash (format 2)
    edges: dict[tuple[int, bytes], EdgeRecord] = field(default_factory=dict)  # outgoing, by (type, dst)
    key: str | None = None  # the natural key it was written with (`write(key=)`)


def note(facts: dict[bytes, HeadFacts], entry: Entry) -> None:
    """Fold one (well-formed) entry into the per-memory facts."""
    p = entry.payload
    if entry.kind in EDGE_KINDS:
        src = facts.get(p["src"])
        if src is not None:
            fold_edge(src.edges, entry)
        return
    if entry.kind == "write":
        facts[p["id"]] = HeadFacts(p["type"], 1, entry.at, entry.at, p["importance"], p["tags"], p["frames"], p["expires"],
                                   version_times=[entry.at], contents=[p["content"]] if "content" in p else [], key=p.get("key"))
        return
    f = facts.get(p.get("id", b""))
    if f is None:
        return
    if entry.kind == "update":
        f.version, f.updated = p["version"], entry.at
        f.version_times.append(entry.at)
        if "content" in p:
            f.contents.append(p["content"])
    elif entry.kind == "update_head":
        if p.get("importance") is not None:
            f.importance = p["importance"]
        f.tags = p.get("tags", f.tags)
        f.frames = p.get("frames", f.frames)
    elif entry.kind == "tombstone":
        f.tombstoned = True
    elif entry.kind == ERASE_KIND:
        f.tombstoned = f.erased = True


def fold_edge(out: dict[tuple[int, bytes], EdgeRecord], entry: Entry) -> None:
    """Fold one (well-formed) link or unlink entry into a memory's outgoing edges,
    keyed by (type, dst): a link makes the edge live (again) with its weight and
    time; an unlink tombstones a live edge."""
    p = entry.payload
    key = (p["type"], p["dst"])
    if entry.kind == "link":
        out[key] = EdgeRecord(p["weight"], entry.at)
    elif (edge := out.get(key)) is not None and edge.live:
        out[key] = edge._replace(tombstone=(entry.at, p["reason"]))
