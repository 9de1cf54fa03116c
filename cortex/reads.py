"""Point reads: resolve (scoped or not), resolve_latest, memories, salience, stats,
and grant (signs a scope with a trusted key; reads only)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from .engine import Engine
from .errors import CorruptRecord, NotFound, ValidationError
from . import scoped
from .ids import Ref, parse_ref
from .index import by_type, entry, natural_key
from .memory import Memory
from .model import MemoryType
from .model import to_micros
from .records import HEAD_PREFIX, SCHEMA_VERSION, V_DATA, V_HASH, content_hash, head_key, head_keys, unpack, unpack_head, version_key
from .salience.score import Score
from .scope import Scope, SignedScope, check_signed, private_key, public_key_bytes, sign, trusted_keys
from .scoped import Granted


def stored(e: Engine, raw_id: bytes) -> Memory | None:
    """The current version of a memory, or None."""
    key = head_key(raw_id)
    raw = e.storage.get(key)
    return None if raw is None else Memory.stored(raw_id, unpack_head(key, raw))


def resolve(e: Engine, uri: str, scope: SignedScope | None = None) -> Memory:
    """The memory version a call names (`cortex.ids.parse_ref`): a version's URI, or
    the latest version for an id or a URI without `#version`; old versions and
    tombstoned memories too.

    With `scope`: verified first; a memory outside it raises the `NotFound` a missing
    id raises (same class, same message, same work: `cortex.scoped.Granted.head`),
    and every `NotFound` under a scope counts as a violation of it (so not even the
    violation log tells the two apart)."""
    e.check_open()
    keyed = isinstance(uri, str) and uri.startswith(natural_key.REF_PREFIX)
    if keyed:
        natural_key.parse_ref(uri)  # its form, before anything is read
    ref = None if keyed else parse_ref(uri)
    signed = None if scope is None else check_signed(scope)

    def read(granted: Granted | None) -> Memory:
        target = ref
        if target is None:  # a natural key: under a scope, a key nobody has reads as a hidden one
            target = parse_ref(by_key(e, uri)) if granted is None else Ref(_key_id(e, uri), None, None)
        memory = stored(e, target.id) if granted is None else granted.head(target.id)
        try:
            return _version(e, target, memory)
        except NotFound as missing:
            if granted is None:
                raise
            named = uri if keyed else str(ref)
            raise granted.refuse(NotFound(f"no memory {named}") if keyed else missing, "resolve", named) from None

    return scoped.read(e, signed, read)


_NO_ID = bytes(16)  # the id no memory has (ids start with their creation time)


def _key_id(e: Engine, ref: str) -> bytes:
    """The id of the memory a natural key names, or `_NO_ID` (read at the same cost)."""
    mtype, name = natural_key.parse_ref(ref)
    raw = e.storage.get(natural_key.key(mtype, name))
    found = None if raw is None else natural_key.decode(raw)
    return _NO_ID if found is None or found[1] != name else found[0]


def _version(e: Engine, ref: Ref, memory: Memory | None) -> Memory:
    """The version `ref` names of `memory` (its current head), or `NotFound`."""
    if memory is None or (ref.type is not None and memory.type != ref.type) or (ref.version is not None and ref.version > memory.version):
        raise NotFound(f"no memory {ref}")
    if ref.version is None or ref.version == memory.version:
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
    """The current version of the memory a call names (id or URI, any version)."""
    e.check_open()
    ref = parse_ref(id, "id")
    memory = e.read(lambda: stored(e, ref.id))
    if memory is None or (ref.type is not None and memory.type != ref.type):
        raise NotFound(f"no memory {ref}")
    return memory


def memories(e: Engine, include_tombstoned: bool = False, scope: SignedScope | None = None) -> Iterator[Memory]:
    """Every memory's current version, in id (= creation) order. With `scope`, the
    memories in it (verified once, read in one view)."""
    e.check_open()
    if not isinstance(include_tombstoned, bool):
        raise ValidationError("include_tombstoned", "must be a bool", include_tombstoned)
    if scope is not None:
        signed = check_signed(scope)
        return iter(scoped.read(e, signed, lambda granted: _members(e, granted, include_tombstoned)))
    return _every(e, include_tombstoned)


def _every(e: Engine, include_tombstoned: bool) -> Iterator[Memory]:
    for key, raw in e.storage.scan_items(HEAD_PREFIX):
        memory = Memory.stored(key[len(HEAD_PREFIX):], unpack_head(key, raw))
        if include_tombstoned or not memory.tombstoned:
            yield memory


def _members(e: Engine, granted: Granted | None, include_tombstoned: bool) -> list[Memory]:
    assert granted is not None
    rows = granted.members()
    if not include_tombstoned:
        rows = rows[(rows["flags"] & entry.FLAG_TOMBSTONED) == 0]
    ids = entry.ids_of(rows)
    keys = head_keys(ids)
    return [Memory.stored(raw_id, unpack_head(key, raw)) for raw_id, key, raw in zip(ids, keys, e.storage.multi_get(keys)) if raw is not None]


def salience(e: Engine, id: str, scope: SignedScope | None = None) -> Score:
    """The salience record of a memory, by id or URI. With `scope`, a memory outside
    it raises the `NotFound` a missing one does (as `resolve()`)."""
    e.check_open()
    ref = parse_ref(id, "id")
    signed = None if scope is None else check_signed(scope)

    def read(granted: Granted | None) -> Score:
        if granted is None:
            memory = stored(e, ref.id)
        else:
            memory = granted.head(ref.id)
        if memory is None or (ref.type is not None and memory.type != ref.type) or (ref.version is not None and ref.version > memory.version):
            missing = NotFound(f"no memory {ref}")
            raise missing if granted is None else granted.refuse(missing, "salience", str(ref))
        return e.score_record(ref.id)

    return scoped.read(e, signed, read)


def stats(e: Engine, scope: SignedScope | None = None) -> dict[str, Any]:
    """What the store holds: `memories` (live: not tombstoned), `tombstoned`,
    `by_type` (live memories per type name, for each type that has any, in type
    order, so it sums to `memories`), `journal_seq` (journal entries), `journal_format` (1: the
    root does not commit to content; 2: it does, see docs/trust.md), `root`, and the handle's `path`,
    `actor`, `mode`, `tokenizer` and `schema_version`. Scans the type index (about
    0.3 µs per memory).

    With `scope`: the counts are of the memories in scope, and `journal_seq` and
    `root` are left out (they move with every write, in scope or not)."""
    e.check_open()
    signed = None if scope is None else check_signed(scope)

    def read(granted: Granted | None) -> dict[str, Any]:
        journal, _ = e.view_state()
        rows = entry.scan_rows(e.storage, by_type.PREFIX, by_type.key_of) if granted is None else granted.members()
        dead = (rows["flags"] & entry.FLAG_TOMBSTONED) != 0
        tombstoned = int(dead.sum())
        live_types = rows["type"][~dead]
        counts = {member.type_name: int((live_types == int(member)).sum()) for member in MemoryType}
        by_kind = {name: count for name, count in counts.items() if count}
        answer = {
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
        if granted is not None:
            del answer["journal_seq"], answer["root"]
        return answer

    return scoped.read(e, signed, read)


def grant(e: Engine, scope: Scope, key: object) -> SignedScope:
    """Sign `scope` with `key` (an Ed25519 private key whose public key this store
    trusts; the signer is recorded by its trusted name). The scope must be for this
    store (`granted_by` is its actor; its `store_id`, when given, this store's id)
    and not expired by the store clock. The signed scope names this store's id, so
    no other store accepts it, even one of the same actor trusting the same key."""
    e.check_open()
    if not isinstance(scope, Scope):
        raise ValidationError("scope", f"must be a cortex.Scope, not {type(scope).__name__}", scope)
    signing_key = private_key(key)
    public = public_key_bytes(signing_key.public_key())
    if scope.granted_by != e.actor:
        raise ValidationError("scope.granted_by", f"must be this store's actor {e.actor!r}", scope.granted_by)
    if to_micros(scope.expires_at) <= to_micros(e.now()):
        raise ValidationError("scope.expires_at", "is already past", scope.expires_at)
    trusted, own_id = e.read(lambda: (trusted_keys(e.storage), scoped.store_id(e)), catch_up=True)
    if own_id is None:
        raise ValidationError("scope", 'this store has no id yet (it was made before stores had one): open it once with mode="rw"')
    if scope.store_id not in (None, own_id.hex()):
        raise ValidationError("scope.store_id", f"must be this store's id {own_id.hex()} (or None)", scope.store_id)
    name = next((n for n, k in trusted.items() if k == public), None)
    if name is None:
        raise ValidationError("private_key", "its public key is not trusted by this store; trust() it first")
    bound = replace(scope, store_id=own_id.hex())
    return sign(bound, signing_key, name)


def trusted(e: Engine) -> dict[str, bytes]:
    """Every trusted key by name (`Cortex.trust`), in name order: the raw 32 bytes of
    each Ed25519 public key."""
    e.check_open()
    return e.read(lambda: trusted_keys(e.storage), catch_up=True)
