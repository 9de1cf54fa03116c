"""The write path: write, write_many, update, update_head, tombstone, attest, and the
journaled scope records: trust, untrust, revoke and scope violations (docs/scopes.md).

Every call validates all of its input before it takes the write lock, then builds
one batch of puts and deletes (canonical records, derived index entries, salience,
journal entries, journal head) and writes it atomically (`Engine.apply`). A
rejected call writes nothing, so the root is unchanged.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import edges, index
from .engine import Engine
from .errors import TypeMismatch, ValidationError
from .forms import build_forms, check_forms
from .ids import URI, parse_ref
from .journal import append, with_content
from .provenance import Origin, Provenance
from .model import (
    MAX_IMPORTANCE,
    Frame,
    MemoryData,
    check_choice,
    check_data,
    check_datetime,
    check_frames,
    check_instances,
    check_int,
    check_number,
    check_tags,
    check_text,
    is_pinned,
    to_micros,
)
from .records import (
    Head,
    JournalHead,
    Version,
    content_hash,
    encode_revoked,
    encode_trust,
    frames_record,
    head_key,
    revoked_key,
    salience_key,
    trust_key,
    version_key,
)
from .salience import score as salience
from .salience.score import Score
from .scope import Refusal, check_name, is_revoked, log_violation, public_key_bytes, scope_id_bytes, trusted_keys

MAX_SOURCE_BYTES = 256
MAX_REASON_BYTES = 1024


@dataclass(frozen=True, slots=True, init=False)
class Write:
    """One memory to write, with the same fields as `Cortex.write()`'s arguments.

    Validates on construction (frames and tags become tuples, duplicates removed).
    `expires_at`: after that instant the memory no longer appears in `context()`
    (it still resolves). `supersedes`: URIs (or ids) of memories the new one
    replaces, linked in the same batch (`cortex.edges`). `occurred_at`, `session`,
    `sequence`, `origin` and `attributes`: the memory's provenance (`cortex.provenance`),
    each optional; `provenance` holds them validated (None when none is given). `key`: a natural
    key, unique per memory type: a write whose (type, key) names a memory already
    makes a new version of it instead of a new memory (see `upsert` below).
    """

    data: MemoryData
    frames: tuple[Frame, ...]
    tags: tuple[str, ...]
    importance: int
    confidence: float
    source: str
    expires_at: datetime | None
    forms: dict[str, str] | None = field(compare=False)
    supersedes: tuple[str, ...]
    provenance: Provenance | None
    key: str | None

    def __init__(self, data: MemoryData, frames: Iterable[Frame] = (), tags: Iterable[str] = (), importance: int = 0,
                 confidence: float = 1.0, source: str = "user_input", expires_at: datetime | None = None,
                 forms: dict[str, str] | None = None, supersedes: Iterable[str] = (), *, key: str | None = None,
                 occurred_at: datetime | None = None, session: str | None = None, sequence: int | None = None,
                 origin: Origin | None = None, attributes: Mapping[str, Any] | None = None) -> None:
        check_data(data)
        check_int("importance", importance, lo=0, hi=MAX_IMPORTANCE)
        check_text("source", source, required=True, max_bytes=MAX_SOURCE_BYTES)
        values = {
            "data": data,
            "frames": check_frames(frames),
            "tags": check_tags(tags),
            "importance": importance,
            "confidence": check_number("confidence", confidence, lo=0.0, hi=1.0),
            "source": source,
            "expires_at": check_datetime("expires_at", expires_at),
            "forms": check_forms(forms),
            "supersedes": edges.check_supersedes(supersedes),
            "provenance": Provenance.check(occurred_at=occurred_at, session=session, sequence=sequence, origin=origin,
                                           attributes=attributes),
            "key": None if key is None else index.natural_key.check(key),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)


def write_many(e: Engine, items: Iterable[Write]) -> list[str]:
    """Write many memories in one atomic batch; URIs in item order. The clock is read
    once: every item gets the same `created_at`, and ids ascend in item order. An
    item whose natural key names a memory already is an upsert of it (`upsert`)."""
    e.check_writable()
    batch = check_instances("items", items, Write, "must be an iterable of cortex.Write", refused=(Write,))
    if not batch:
        return []
    _check_keys_unique(batch)
    # Each record is made once, before the lock. With a helper, the pool queues each
    # chunk as soon as its records exist, so the helper starts while the rest are
    # made; `tee` keeps them for the loop below.
    to_count, kept = itertools.tee(w.data.to_record() for w in batch)
    pool = e.forms_pool(len(batch))
    if pool is not None:
        chunks = pool.count((w.data, record, w.forms) for w, record in zip(batch, to_count))
    else:
        chunks = iter([build_forms(e.tokenizer, [(w.data, w.forms) for w in batch])])
    records = list(kept)
    with e.lock.write():
        e.check_open()
        now = to_micros(e.now())
        named = {i: found for i, w in enumerate(batch) if w.key is not None and (found := _named(e, w)) is not None}
        new_ids = iter(e.ids.next_many(now // 1000, len(batch) - len(named)))
        puts: dict[bytes, bytes | None] = {}
        journal = e.journal
        new_records = salience.NewRecords(now)
        words = index.lexical.Changes()
        uris: list[str] = []
        raw_ids: list[bytes] = []
        for i, (item, record, form) in enumerate(zip(batch, records, itertools.chain.from_iterable(chunks))):
            if i in named:
                raw_id, old = named[i]
                journal, uri = upsert(e, puts, journal, now, raw_id, old, item, record, form)
                words.staged(puts, raw_id, old)
                uris.append(uri)
                raw_ids.append(raw_id)
                continue
            raw_id = next(new_ids)
            raw_ids.append(raw_id)
            data = item.data
            forms = (form.short, form.medium)
            tokens = (form.short_tokens, form.medium_tokens, form.full_tokens)
            expires = to_micros(item.expires_at) if item.expires_at else None
            head = Head(
                type=data.TYPE, version=1, created=now, updated=now, frames=item.frames, tags=item.tags,
                importance=item.importance, tombstone=None, expires=expires, data=data,
                confidence=item.confidence, source=item.source, forms=forms, tokens=tokens, prov=item.provenance,
            )
            digest = content_hash(record)
            version = Version(data, now, e.actor, item.confidence, item.source, forms, tokens, digest, item.provenance)
            frames = frames_record(item.frames)
            pinned = is_pinned(data)
            payload = with_content(journal, {
                "id": raw_id, "type": int(data.TYPE), "version": 1, "importance": item.importance, "pinned": pinned,
                "frames": frames, "tags": list(item.tags), "expires": expires,
            }, digest)
            if item.key is not None:
                payload["key"] = item.key
                puts[index.natural_key.key(data.TYPE, item.key)] = index.natural_key.value(raw_id, item.key)
            score, score_bytes = new_records[item.importance, pinned]
            puts[head_key(raw_id)] = head.encode(record, frames)
            puts[version_key(raw_id, 1)] = version.encode(record)
            puts[salience_key(raw_id)] = score_bytes
            puts.update(index.entries(raw_id, head, score))
            puts.update(words.add(raw_id, head))
            journal = append(puts, journal, "write", now, payload)
            uris.append(str(URI(data.TYPE, raw_id, 1)))
        words.finish(e.storage, puts)
        links = [(raw_id, item.supersedes) for raw_id, item in zip(raw_ids, batch) if item.supersedes]
        if links:
            journal = edges.supersede(e, puts, journal, now, links, {r for i, r in enumerate(raw_ids) if i not in named})
        # Links and upserts change memories written before; new memories alone keep the caches.
        e.apply(puts, journal, now, keeps_caches=not links and not named)
    return uris


def _check_keys_unique(batch: list[Write]) -> None:
    """One batch names a (type, key) at most once: two upserts of one memory in one
    batch would leave which one wins to the item order, silently."""
    first: dict[tuple[int, str], int] = {}
    for i, w in enumerate(batch):
        if w.key is None:
            continue
        j = first.setdefault((int(w.data.TYPE), w.key), i)
        if j != i:
            raise ValidationError(f"items[{i}].key", f"repeats the key of items[{j}] ({w.data.TYPE.type_name} {w.key!r}): "
                                  "a batch names each memory once", w.key)


def _named(e: Engine, item: Write) -> tuple[bytes, Head] | None:
    """The live memory an item's natural key names, or None (no such key, or the
    memory that had it is tombstoned: the new one takes the key over)."""
    assert item.key is not None
    raw = e.storage.get(index.natural_key.key(item.data.TYPE, item.key))
    if raw is None:
        return None
    raw_id, name = index.natural_key.decode(raw)
    if name != item.key:
        raise ValidationError("key", f"shares its stored hash with the key {name!r} of another "
                              f"{item.data.TYPE.type_name}: choose another key", item.key)
    stored = e.storage.get(head_key(raw_id))
    if stored is None:  # its content was erased: the key goes to the new memory
        return None
    head = Head.decode(head_key(raw_id), stored)
    return None if head.tombstone is not None else (raw_id, head)


def upsert(e: Engine, puts: dict[bytes, bytes | None], journal: JournalHead, now: int, raw_id: bytes, old: Head,
           item: Write, record: list[Any], form: Any) -> tuple[JournalHead, str]:
    """A keyed write to the memory its key names: a new version when the data
    differs (an `update` entry), new frames, tags or importance when those differ
    (an `update_head` entry), nothing when all are equal. Confidence, source, expiry
    and provenance stay the memory's, as with `update()`. Staged into
    the batch being built; returns the journal head and the URI of the memory's
    current version."""
    score = e.score_record(raw_id)
    head = old
    if item.data != old.data:
        number = old.version + 1
        head = old._replace(version=number, updated=now, data=item.data, forms=(form.short, form.medium),
                            tokens=(form.short_tokens, form.medium_tokens, form.full_tokens))
        digest = content_hash(record)
        version = Version(item.data, now, e.actor, old.confidence, old.source, head.forms, head.tokens, digest, old.prov)
        puts[version_key(raw_id, number)] = version.encode(record)
        payload = with_content(journal, {"id": raw_id, "version": number, "pinned": is_pinned(item.data)}, digest)
        journal, score = _stage(e, puts, journal, now, "update", payload, raw_id, old, head, score)
    if (item.frames, item.tags, item.importance) != (old.frames, old.tags, old.importance):
        before, head = head, head._replace(frames=item.frames, tags=item.tags, importance=item.importance)
        payload = {"id": raw_id, "importance": item.importance, "tags": list(item.tags), "frames": frames_record(item.frames)}
        journal, score = _stage(e, puts, journal, now, "update_head", payload, raw_id, before, head, score)
    return journal, str(URI(head.type, raw_id, head.version))


def _stage(e: Engine, puts: dict[bytes, bytes | None], journal: JournalHead, now: int, kind: str, payload: dict[str, Any],
           raw_id: bytes, old: Head, head: Head, score: Score) -> tuple[JournalHead, Score]:
    """`Engine.commit`'s work for one memory, added to a batch still being built."""
    _, after = salience.step(e.weights(), {raw_id: score}, kind, now, payload)
    edge_flags = index.edge.flags_of(e.storage, raw_id)
    before_entries = index.entries(raw_id, old, score, edge_flags)
    after_entries = index.entries(raw_id, head, after[raw_id], edge_flags)
    puts.update({k: None for k in before_entries.keys() - after_entries.keys()})
    puts.update({k: v for k, v in after_entries.items() if before_entries.get(k) != v})
    puts[head_key(raw_id)] = head.encode()
    puts[salience_key(raw_id)] = after[raw_id].encode()
    return append(puts, journal, kind, now, payload), after[raw_id]


def update(e: Engine, uri: str, data: MemoryData, *, provenance: Provenance | None = None) -> str:
    """Write a new version of a memory (same id, same type); return its URI. The new
    version keeps the provenance of the one it replaces unless `provenance` is given
    (`cortex.learn` gives a compiled artifact's new payload this way)."""
    e.check_writable()
    ref = parse_ref(uri)
    check_data(data)
    form = build_forms(e.tokenizer, [(data, None)])[0]
    with e.lock.write():
        raw_id, old = e.live_head(ref)
        if data.TYPE != old.type:
            raise TypeMismatch("data", f"must be a {old.type.type_name} like the memory; got {type(data).__name__}", data)
        now = to_micros(e.now())
        number = old.version + 1
        prov = old.prov if provenance is None else provenance
        head = old._replace(version=number, updated=now, data=data, forms=(form.short, form.medium),
                            tokens=(form.short_tokens, form.medium_tokens, form.full_tokens), prov=prov)
        digest = content_hash(data.to_record())
        version = Version(data, now, e.actor, old.confidence, old.source, head.forms, head.tokens, digest, prov)
        payload = with_content(e.journal, {"id": raw_id, "version": number, "pinned": is_pinned(data)}, digest)
        e.commit("update", now, payload, {raw_id: (old, head)}, {version_key(raw_id, number): version.encode()})
    return str(URI(head.type, raw_id, number))


def update_head(e: Engine, uri: str, *, tags: Iterable[str] | None = None, frames: Iterable[Frame] | None = None,
                importance: int | None = None) -> None:
    """Change a memory's tags, frames or importance without a new version."""
    e.check_writable()
    ref = parse_ref(uri)
    if tags is None and frames is None and importance is None:
        raise ValidationError("update_head", "name at least one of tags, frames, importance")
    new_tags = None if tags is None else check_tags(tags)
    new_frames = None if frames is None else check_frames(frames)
    if importance is not None:
        check_int("importance", importance, lo=0, hi=MAX_IMPORTANCE)
    with e.lock.write():
        raw_id, old = e.live_head(ref)
        now = to_micros(e.now())
        head = old._replace(
            frames=old.frames if new_frames is None else new_frames,
            tags=old.tags if new_tags is None else new_tags,
            importance=old.importance if importance is None else importance,
        )
        payload: dict[str, Any] = {"id": raw_id, "importance": importance}
        if new_tags is not None:
            payload["tags"] = list(new_tags)
        if new_frames is not None:
            payload["frames"] = frames_record(new_frames)
        e.commit("update_head", now, payload, {raw_id: (old, head)})


def tombstone(e: Engine, uri: str, reason: str) -> None:
    """Soft-delete a memory: it leaves every tier but stays resolvable. Idempotent:
    tombstoning a tombstoned memory writes nothing."""
    e.check_writable()
    ref = parse_ref(uri)
    check_text("reason", reason, required=True, max_bytes=MAX_REASON_BYTES)
    with e.lock.write():
        raw_id, old = e.head_for(ref)
        if old.tombstone is not None:
            return
        now = to_micros(e.now())
        head = old._replace(tombstone=(now, reason))
        e.commit("tombstone", now, {"id": raw_id, "reason": reason}, {raw_id: (old, head)}, edges.after_tombstone(e, raw_id))


def attest(e: Engine, cited: Iterable[str], outcome: str, reason: str | None = None) -> None:
    """Feedback on memories an agent relied on (docs/context.md); see `Cortex.attest`."""
    e.check_writable()
    if isinstance(cited, (str, bytes)) or not isinstance(cited, Iterable):
        raise ValidationError("cited", "must be a list of URIs", cited)
    refs = [parse_ref(uri, f"cited[{i}]") for i, uri in enumerate(cited)]
    if not refs:
        raise ValidationError("cited", "must name at least one memory", cited)
    check_choice("outcome", outcome, ("success", "failure"))
    check_text("reason", reason, max_bytes=MAX_REASON_BYTES)
    with e.lock.write():
        heads: dict[bytes, tuple[Head, Head]] = {}
        for ref in refs:
            raw_id, head = e.live_head(ref)
            heads.setdefault(raw_id, (head, head))
        now = to_micros(e.now())
        # "use": a successful attest sets last_used (entries without the mark predate it).
        e.commit("attest", now, {"ids": list(heads), "outcome": outcome, "reason": reason, "use": True}, heads)


def touch(e: Engine, raw_ids: list[bytes]) -> None:
    """Count an access of each memory (`find(late_binding=True)`); journaled."""
    with e.lock.write():
        heads = {}
        for raw_id in dict.fromkeys(raw_ids):
            raw = e.storage.get(head_key(raw_id))
            if raw is not None:
                head = Head.decode(head_key(raw_id), raw)
                heads[raw_id] = (head, head)
        if heads:
            e.commit("access", to_micros(e.now()), {"ids": list(heads), "use": True}, heads)


# ---------------------------------------------------------------------------
# Scope records: journaled, so followers see them after catching up and rebuild()
# recreates them (their keys are derived: see cortex.records and cortex.scope.Grants).


def _journal_only(e: Engine, kind: str, payload: dict[str, Any], puts: dict[bytes, bytes | None], now: int) -> None:
    """Write one journal entry that changes no memory, with `puts` (write lock held)."""
    e.apply(puts, append(puts, e.journal, kind, now, payload), now)


def trust(e: Engine, public_key: object, name: str) -> None:
    """Trust an Ed25519 key to sign scopes, under `name`. Trusting the same key under
    the same name again writes nothing; a name or a key already trusted otherwise is
    refused (untrust it first)."""
    e.check_writable()
    raw_key = public_key_bytes(public_key)
    name = check_name(name)
    with e.lock.write():
        e.check_open()
        current = trusted_keys(e.storage)
        if current.get(name) == raw_key:
            return
        if name in current:
            raise ValidationError("name", f"already names another key; untrust({name!r}) first", name)
        other = next((n for n, k in current.items() if k == raw_key), None)
        if other is not None:
            raise ValidationError("public_key", f"is already trusted as {other!r}", public_key)
        now = to_micros(e.now())
        _journal_only(e, "trust", {"name": name, "key": raw_key}, {trust_key(name): encode_trust(raw_key, now)}, now)


def untrust(e: Engine, name: str) -> None:
    """Stop trusting the key named `name`: every scope it signed is refused from now on."""
    e.check_writable()
    name = check_name(name)
    with e.lock.write():
        e.check_open()
        if name not in trusted_keys(e.storage):
            raise ValidationError("name", "no trusted key has this name", name)
        now = to_micros(e.now())
        _journal_only(e, "untrust", {"name": name}, {trust_key(name): None}, now)


def revoke(e: Engine, scope_id: object) -> None:
    """Revoke a scope (its id, or the SignedScope): refused from now on. Idempotent."""
    e.check_writable()
    digest = scope_id_bytes(scope_id)
    with e.lock.write():
        e.check_open()
        if is_revoked(e.storage, digest):
            return
        now = to_micros(e.now())
        _journal_only(e, "revoke", {"scope": digest}, {revoked_key(digest): encode_revoked(now)}, now)


def report_violation(e: Engine, refusal: Refusal) -> None:
    """Count a scope violation; within the rate limit, journal it (mode "rw") or log
    it to the `cortex.scope` logger (mode "r"). Called after the read that found it."""
    scope_id = refusal.scope_id.hex()
    now = to_micros(e.now())
    allowed, held_back = e.scopes.count(scope_id, now)
    if not allowed:
        return
    if e.mode != "rw":
        log_violation(scope_id, refusal.what, refusal.detail, held_back)
        return
    payload = {"scope": refusal.scope_id, "what": refusal.what, "detail": refusal.detail[:MAX_REASON_BYTES], "held_back": held_back}
    with e.lock.write():
        e.check_open()
        _journal_only(e, "violation", payload, {}, now)
