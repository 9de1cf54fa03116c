"""Point reads: resolve (scoped or not), resolve_latest, memories, salience, stats,
and grant (signs a scope with a trusted key; reads only)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .engine import Engine
from .errors import CorruptRecord, NotFound, ValidationError
from .ids import decode_id, parse_uri
from .index import by_type, entry, natural_key
from .memory import Memory
from .model import MemoryType
from .model import to_micros
from .records import HEAD_PREFIX, SCHEMA_VERSION, V_DATA, V_HASH, content_hash, head_key, unpack, unpack_head, version_key
from .salience.score import Score
from .scope import Refusal, Scope, SignedScope, check_signed, memory_frames, private_key, public_key_bytes, sign, trusted_keys, verify
from .writes import report_violation


def stored(e: Engine, raw_id: bytes) -> Memory | None:
    """The current version of a memory, or None."""
    key = head_key(raw_id)
    raw = e.storage.get(key)
    return None if raw is None else Memory.stored(raw_id, unpack_head(key, raw))


def resolve(e: Engine, uri: str, scope: SignedScope | None = None) -> Memory:
    """The memory version a URI names (old versions and tombstoned memories too).

    With `scope`: verified first; a memory outside it raises the `NotFound` a missing
    id raises (same class, same message), and every `NotFound` under a scope counts as
    a violation of it (so not even the violation log tells the two apart)."""
    e.check_open()
    if isinstance(uri, str) and uri.startswith(natural_key.REF_PREFIX):
        uri = e.read(lambda: by_key(e, uri))
    ref = parse_uri(uri)
    signed = None if scope is None else check_signed(scope)
    clock_now = to_micros(e.now()) if signed is not None else 0

    def read() -> Memory:
        digest: bytes | None = None
        if signed is not None:
            journal, _ = e.view_state()
            digest = verify(e.storage, signed, e.actor, clock_now, clock_now, e.scopes, (journal.seq, journal.root))
        try:
            return unscoped()
        except NotFound as missing:
            if digest is None:
                raise
            raise Refusal(missing, digest, "resolve", str(ref)) from None

    def unscoped() -> Memory:
        memory = stored(e, ref.id)
        if memory is None or memory.type != ref.type or ref.version > memory.version:
            raise NotFound(f"no memory {ref}")
        if signed is not None and not signed.scope.admits(ref.id, int(memory.type), memory.tags, memory_frames(memory.frames)):
            raise NotFound(f"no memory {ref}")
        if ref.version == memory.version:
            return memory
        key = version_key(ref.id, ref.version)
        raw = e.storage.get(key)
        if raw is None:
            raise CorruptRecord(key, "missing version record")
        record = unpack(key, raw)
        older = Memory.stored(ref.id, memory._head, ref.version, record)
        if content_hash(record[V_DATA]) != record[V_HASH]:
            raise CorruptRecord(key, "content hash mismatch")
        return older

    if signed is None:
        return e.read(read)
    try:
        return e.read(read, catch_up=True)
    except Refusal as refusal:
        report_violation(e, refusal)
        raise refusal.error from None


def by_key(e: Engine, ref: str) -> str:
    """The URI of the current version of the memory `key:<Type>/<key>` names
    (`cortex.index.natural_key`); `NotFound` when no memory has that key."""
    mtype, name = natural_key.parse_ref(ref)
    raw = e.storage.get(natural_key.key(mtype, name))
    found = None if raw is None else natural_key.decode(raw)
    memory = None if found is None or found[1] != name else stored(e, found[0])
    if memory is None:
        raise NotFound(f"no {mtype.type_name} has the key {name!r}")
    return memory.uri


def resolve_latest(e: Engine, id: str) -> Memory:
    """The current version of the memory with this id (26-character ULID)."""
    e.check_open()
    raw_id = decode_id(id)
    memory = e.read(lambda: stored(e, raw_id))
    if memory is None:
        raise NotFound(f"no memory {id}")
    return memory


def memories(e: Engine, include_tombstoned: bool = False) -> Iterator[Memory]:
    """Every memory's current version, in id (= creation) order."""
    e.check_open()
    for key, raw in e.storage.scan_items(HEAD_PREFIX):
        memory = Memory.stored(key[len(HEAD_PREFIX):], unpack_head(key, raw))
        if include_tombstoned or not memory.tombstoned:
            yield memory


def salience(e: Engine, id: str) -> Score:
    """The salience record of a memory, by id or URI."""
    e.check_open()
    raw_id = parse_uri(id).id if isinstance(id, str) and id.startswith("cortex://") else decode_id(id)

    def read() -> Score:
        if e.storage.get(head_key(raw_id)) is None:
            raise NotFound(f"no memory {id}")
        return e.score_record(raw_id)

    return e.read(read)


def stats(e: Engine) -> dict[str, Any]:
    """What the store holds: `memories` (live: not tombstoned), `tombstoned`,
    `by_type` (live memories per type name, for each type that has any, in type
    order, so it sums to `memories`), `journal_seq` (journal entries), `journal_format` (1: the
    root does not commit to content; 2: it does, see docs/trust.md), `root`, and the handle's `path`,
    `actor`, `mode`, `tokenizer` and `schema_version`. Scans the type index (about
    0.3 µs per memory)."""
    e.check_open()

    def read() -> dict[str, Any]:
        journal, _ = e.view_state()
        rows = entry.scan_rows(e.storage, by_type.PREFIX, by_type.key_of)
        dead = (rows["flags"] & entry.FLAG_TOMBSTONED) != 0
        tombstoned = int(dead.sum())
        live_types = rows["type"][~dead]
        counts = {member.type_name: int((live_types == int(member)).sum()) for member in MemoryType}
        by_kind = {name: count for name, count in counts.items() if count}
        return {
            "path": e.location,
            "actor": e.actor,
            "mode": e.mode,
            "memories": int(len(rows)) - tombstoned,
            "tombstoned": tombstoned,
            "by_type": by_kind,
            "journal_seq": journal.seq,
            "journal_format": e.journal.format,
            "root": journal.root.hex(),
            "tokenizer": e.tokenizer.name,
            "schema_version": SCHEMA_VERSION,
        }

    return e.read(read)


def grant(e: Engine, scope: Scope, key: object) -> SignedScope:
    """Sign `scope` with `key` (an Ed25519 private key whose public key this store
    trusts; the signer is recorded by its trusted name). The scope must be for this
    store (`granted_by` is its actor) and not expired by the store clock."""
    e.check_open()
    if not isinstance(scope, Scope):
        raise ValidationError("scope", f"must be a cortex.Scope, not {type(scope).__name__}", scope)
    signing_key = private_key(key)
    public = public_key_bytes(signing_key.public_key())
    if scope.granted_by != e.actor:
        raise ValidationError("scope.granted_by", f"must be this store's actor {e.actor!r}", scope.granted_by)
    if to_micros(scope.expires_at) <= to_micros(e.now()):
        raise ValidationError("scope.expires_at", "is already past", scope.expires_at)
    trusted = e.read(lambda: trusted_keys(e.storage), catch_up=True)
    name = next((n for n, k in trusted.items() if k == public), None)
    if name is None:
        raise ValidationError("private_key", "its public key is not trusted by this store; trust() it first")
    return sign(scope, signing_key, name)


def trusted(e: Engine) -> dict[str, bytes]:
    """Every trusted key by name (`Cortex.trust`), in name order: the raw 32 bytes of
    each Ed25519 public key."""
    e.check_open()
    return e.read(lambda: trusted_keys(e.storage), catch_up=True)
