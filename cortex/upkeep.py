"""Upkeep of a store: `verify()`, `rebuild()` and `optimize()`.

Both fold the whole journal (`replay_journal`) into what the canonical records
imply: every memory's salience record, the learned weights, the latest write time,
the facts every head must agree with, and the trusted scope signers and revoked
scopes (`cortex.scope.Grants`). `verify()` compares that, and every
derived key, with what is stored; `rebuild()` writes it. `optimize()` packs the
entries of large frame prefixes (`cortex.index.packs`), which `verify()` checks
against the entries and `rebuild()` recreates.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import NamedTuple

from . import index, learn
from .engine import Engine
from .errors import CorruptRecord
from .ids import encode_id
from .journal import EDGE_KINDS, ERASE_KIND, SCOPE_KINDS, HeadFacts, chain, entry_problem, note
from .salience import score as salience
from .salience.score import DEFAULT_WEIGHTS, Score, Weights
from .scope import GRANT_PREFIXES, Grants
from .index import lexical, packs
from .storage import scan_keys
from .records import (
    HEAD_PREFIX,
    JOURNAL_PREFIX,
    META_CACHE_EPOCH,
    META_CLOCK_HIGH,
    META_IMPORT,
    META_JOURNAL,
    META_PREFIX,
    META_WEIGHTS,
    SALIENCE_PREFIX,
    ID_SIZE,
    VERSION_PREFIX,
    Entry,
    Head,
    JournalHead,
    Version,
    content_hash,
    decode_cache_epoch,
    encode_cache_epoch,
    encode_clock_high,
    salience_key,
    split_journal_value,
    version_key,
)


class Replay(NamedTuple):
    """What folding the whole journal gives."""

    head: JournalHead  # the chain's head, recomputed
    scores: dict[bytes, Score]  # every memory's salience record
    weights: Weights | None  # learned weights; None if no feedback was ever given
    facts: dict[bytes, HeadFacts]  # what the journal implies about every head
    high: int  # the latest `at` of any entry
    grants: Grants  # trusted scope signers and revoked scopes


def replay_journal(e: Engine, problems: list[str] | None = None) -> Replay:
    """Fold the whole journal (see `Replay`). With `problems`, malformed entries
    are reported there and skipped; without, they raise `CorruptRecord`."""
    scores: dict[bytes, Score] = {}
    facts: dict[bytes, HeadFacts] = {}
    weights: Weights | None = None
    grants = Grants()
    high = 0
    fmt = e.journal.format
    head = JournalHead(0, bytes(32), fmt)
    stored_prev = head.root
    for key, value in e.storage.scan_items(JOURNAL_PREFIX):
        stored_root, raw = split_journal_value(value)
        expected_seq = head.seq + 1
        head = JournalHead(expected_seq, chain(head.root, raw), fmt)
        try:
            item = Entry.decode(key, raw)
            problem = entry_problem(item, expected_seq, fmt)
        except (CorruptRecord, KeyError, TypeError) as exc:
            problem = f"undecodable ({type(exc).__name__})"
        if problem is None and chain(stored_prev, raw) != stored_root:
            problem = "does not match the hash chain (altered)"
        stored_prev = stored_root
        if problem is None and item.kind in SCOPE_KINDS:
            grants.note(item)
            high = max(high, item.at)
            continue
        if problem is None and (item.kind in EDGE_KINDS or item.kind == ERASE_KIND):
            note(facts, item)  # into the source's facts: edges and erasures move no salience record
            high = max(high, item.at)
            continue
        if problem is None:
            try:
                before = {i: scores.get(i) for i in salience.touched_ids(item.payload)}
                learned, after = salience.step(weights or DEFAULT_WEIGHTS, before, item.kind, item.at, item.payload)
            except (AssertionError, AttributeError, ValueError, KeyError, TypeError) as exc:
                problem = f"cannot be replayed ({type(exc).__name__})"
        if problem is not None:
            if problems is None:
                raise CorruptRecord(key, f"bad journal entry: {problem}")
            problems.append(f"{_show(key)}: bad journal entry: {problem}")
            continue
        scores.update(after)
        note(facts, item)
        high = max(high, item.at)
        if item.kind == "attest":
            weights = learned
    return Replay(head, scores, weights, facts, high, grants)

def expected_derived(e: Engine, scores: dict[bytes, Score], facts: dict[bytes, HeadFacts], problems: list[str]) -> dict[bytes, bytes]:
    """Every derived key the canonical records imply; canonical damage goes to
    `problems` (heads that do not decode or disagree with the journal or their
    current version, versions that are missing or fail their content hash)."""
    expected: dict[bytes, bytes] = {}
    edge_flags, edge_keys = index.edge.derive(
        (((src, code, dst), record) for src, fact in facts.items() for (code, dst), record in fact.edges.items()),
        lambda raw_id: raw_id in facts and not facts[raw_id].tombstoned,
    )
    expected.update(edge_keys)
    expected.update(_natural_keys(facts))
    words = lexical.Changes()
    stored_versions = _versions_by_id(e)
    next(stored_versions)  # to its first `yield`
    for key, raw in e.storage.scan_items(HEAD_PREFIX):
        raw_id = key[len(HEAD_PREFIX):]
        of_head = stored_versions.send(raw_id)
        try:
            head = Head.decode(key, raw, validate=True)
        except CorruptRecord as exc:
            problems.append(f"{_show(key)}: {exc.detail}")
            continue
        score, fact = scores.get(raw_id), facts.get(raw_id)
        if score is None or fact is None:
            problems.append(f"{_show(key)}: memory has no journal entry")
            continue
        if fact.erased:
            problems.append(f"{_show(key)}: the memory was erased but its head is still stored")
            continue
        mismatch = _head_mismatch(head, fact)
        versions: dict[int, Version] = {}
        for number in range(1, head.version + 1):
            vkey = version_key(raw_id, number)
            vraw = of_head.get(vkey)
            if vraw is None:
                problems.append(f"{_show(vkey)}: missing version {number} of {encode_id(raw_id)}")
                continue
            try:
                version = Version.decode(vkey, vraw, head.type, validate=True)
            except CorruptRecord as exc:
                problems.append(f"{_show(vkey)}: {exc.detail}")
                continue
            if version.content_hash != content_hash(version.data.to_record()):
                problems.append(f"{_show(vkey)}: content hash mismatch")
                continue
            wrong = _version_mismatch(e, fact, number, version)
            if wrong:
                problems.append(f"{_show(vkey)}: version disagrees with {wrong}")
                continue
            versions[number] = version
        current = versions.get(head.version)
        if current is not None:
            # A memory's confidence and source never change: every older version holds
            # the current one's.
            for number, older in sorted(versions.items()):
                if (older.confidence, older.source) != (current.confidence, current.source):
                    problems.append(f"{_show(version_key(raw_id, number))}: version disagrees with its current version (confidence or source)")
            if not mismatch:
                mismatch = _head_mismatch_version(head, current)
                if mismatch:
                    mismatch += f" {_show(version_key(raw_id, head.version))}"
        if mismatch:
            problems.append(f"{_show(key)}: head disagrees with {mismatch}")
            continue
        expected[salience_key(raw_id)] = score.encode()
        expected.update(index.entries(raw_id, head, score, edge_flags.get(raw_id, 0)))
        expected.update(words.add(raw_id, head))
    expected.update(words.records())
    return expected

def _versions_by_id(e: Engine) -> Generator[dict[bytes, bytes], bytes, None]:
    """The stored versions of the memory whose id is sent in, {key: value}, from one
    scan of every version key: ids must be sent in ascending order (the order of the
    head scan), and the scan moves along with them. One streamed scan instead of a
    read per version: on PostgreSQL each read is a round trip (a 1M-memory store took
    minutes to verify), on RocksDB the same rows read in order."""
    items = e.storage.scan_items(VERSION_PREFIX)
    pending = next(items, None)
    found: dict[bytes, bytes] = {}
    start = len(VERSION_PREFIX)
    while True:
        raw_id = yield found
        found = {}
        while pending is not None and pending[0][start:start + ID_SIZE] < raw_id:
            pending = next(items, None)
        while pending is not None and pending[0][start:start + ID_SIZE] == raw_id:
            found[pending[0]] = pending[1]
            pending = next(items, None)


def _natural_keys(facts: dict[bytes, HeadFacts]) -> dict[bytes, bytes]:
    """The natural key entries the journal implies: each (type, key) names the memory
    written last with it (facts are in journal order; see `cortex.index.natural_key`)."""
    named = {(fact.type, fact.key): raw_id for raw_id, fact in facts.items() if fact.key is not None}
    return {index.natural_key.key(mtype, name): index.natural_key.value(raw_id, name) for (mtype, name), raw_id in named.items()}


def verify(e: Engine) -> list[str]:
    """Check the whole store; return one line per problem (empty when sound).

    Checks the journal chain against the stored root, that every head has all
    its versions and every record decodes, and that the derived keys (index
    entries, salience records, trusted signers and revocations) are exactly what
    the canonical keys imply, and that every learned artifact's numbers are a
    recount of its events (`cortex.learn.check`).
    """
    e.check_open()
    problems: list[str] = []
    try:
        _verify_into(e, problems)
        problems.extend(learn.check(e))  # learned artifacts against a recount of their events
    except CorruptRecord as exc:
        # RocksDB found a damaged block (a checksum mismatch) under a scan or read:
        # the checks that needed it could not run.
        problems.append(f"{_show(exc.key)}: unreadable ({exc.detail}); checks that needed it did not run")
    return problems


def _verify_packs(e: Engine, problems: list[str]) -> None:
    """Packed frames against the entries they copy (`cortex.index.packs`); a backend
    without packs must hold no pack key."""
    if e.packs is None:
        problems.extend(f"{_show(key)}: pack key on a backend without packs" for key in scan_keys(e.storage, packs.PREFIX))
        return
    problems.extend(f"{_show(key)}: {problem}" for key, problem in packs.check(e.storage))


def _verify_caches(e: Engine, problems: list[str]) -> None:
    """The handle's caches that mirror stored keys (`cortex.cache`) against storage."""
    problems.extend(f"{_show(key)}: {problem}" for key, problem in e.caches.verify(e.storage))


def _verify_weights(e: Engine, problems: list[str]) -> None:
    """The handle's copy of the learned weights (`Engine.weights`) against the stored
    ones."""
    kept = e.kept_weights
    if kept is None:
        return
    try:
        stored = e.stored_weights()
    except CorruptRecord:  # the check against the journal names it
        stored = None
    if stored != kept:
        problems.append("meta/weights: this handle's copy of the weights differs from the stored weights")


def _verify_into(e: Engine, problems: list[str]) -> None:
    # One view for the whole check: on PostgreSQL one REPEATABLE READ transaction, so
    # a writer writing meanwhile cannot make the journal and the records disagree.
    with e.lock.read(), e.storage.view():
        head, scores, weights, facts, high, grants = replay_journal(e, problems)
        try:
            stored = JournalHead.decode(e.storage.get(META_JOURNAL), e.journal.format)
        except CorruptRecord as exc:
            problems.append(f"meta/journal: {exc.detail}")
            stored = head
        if stored != head:
            problems.append(f"meta/journal: stored head seq={stored.seq} root={stored.root.hex()} but the journal gives seq={head.seq} root={head.root.hex()}")
        expected = expected_derived(e, scores, facts, problems)
        expected.update(grants.records())
        for raw_id, fact in facts.items():
            if fact.erased:
                problems.extend(f"{_show(key)}: the memory was erased but this version is still stored"
                                for key in scan_keys(e.storage, VERSION_PREFIX + raw_id))
        for prefix in (*index.DERIVED_PREFIXES, SALIENCE_PREFIX, *GRANT_PREFIXES):
            for key, value in e.storage.scan_items(prefix):
                want = expected.pop(key, None)
                if want is None:
                    problems.append(f"{_show(key)}: entry points at no live record")
                elif want != value:
                    problems.append(f"{_show(key)}: {index.edge.flag_problem(want, value) or 'stale or corrupt value'}")
        for key in sorted(expected):
            problems.append(f"{_show(key)}: missing entry")
        _verify_packs(e, problems)
        _verify_caches(e, problems)
        _verify_weights(e, problems)
        if e.storage.get(META_CLOCK_HIGH) != (encode_clock_high(high) if head.seq else None):
            problems.append("meta/clock_high: differs from the journal's latest time")
        if e.storage.get(META_IMPORT) is not None:
            problems.append("meta/import: an import did not finish; run the same import again to complete it")
        if e.storage.get(lexical.META_LEXICAL) != lexical.SETTINGS.encode():
            problems.append("meta/lexical: the lexical index was not built by this cortex's analyzer (rebuild() builds it)")
        if _damaged_epoch(e):
            problems.append("meta/cache_epoch: must be 8 bytes (the next write or rebuild() replaces it)")
        stored_weights = e.storage.get(META_WEIGHTS)
        if stored_weights != (None if weights is None else weights.encode()):
            problems.append("meta/weights: stored weights differ from the journal's feedback")


def _damaged_epoch(e: Engine) -> bool:
    raw = e.storage.get(META_CACHE_EPOCH)
    return raw is not None and decode_cache_epoch(raw) is None


def rebuild(e: Engine) -> list[str]:
    """Recreate every derived key (indexes, salience, weights) from the canonical
    keys; return the damage to canonical records it could not repair (the lines
    `verify()` gives for them; empty when there is none).

    A memory whose head, or the journal entry that wrote it, cannot be read loses
    its derived keys: it can be neither scored nor found until its record is
    restored. Work is written in batches of 50,000 keys; an interrupted rebuild
    leaves the store no worse and can be run again.
    """
    e.check_writable()
    problems: list[str] = []
    with e.lock.write():
        # Packs copy entries this may change: drop them first, pack again at the end.
        packed = packs.packed_tails(e.storage)
        for tail in packed:
            e.write(dict.fromkeys(packs.stored_keys(e.storage, tail)), keeps_caches=True)
        head, scores, weights, facts, high, grants = replay_journal(e, problems)
        expected = expected_derived(e, scores, facts, problems)
        expected.update(grants.records())
        puts: dict[bytes, bytes | None] = {}
        for prefix in (*index.DERIVED_PREFIXES, SALIENCE_PREFIX, *GRANT_PREFIXES):
            for key, value in e.storage.scan_items(prefix):
                if key not in expected:
                    puts[key] = None
                elif expected[key] == value:
                    del expected[key]  # sound keys are not written again: followers keep their caches
        puts.update(expected)
        meta = {META_WEIGHTS: None if weights is None else weights.encode(),
                META_CLOCK_HIGH: encode_clock_high(high) if head.seq else None,
                lexical.META_LEXICAL: lexical.SETTINGS.encode()}
        if _damaged_epoch(e):
            meta[META_CACHE_EPOCH] = encode_cache_epoch(0)  # followers hold None for it: they keep nothing
        puts.update({key: value for key, value in meta.items() if e.storage.get(key) != value})
        keys = list(puts)
        for start in range(0, len(keys), 50_000):
            e.write({k: puts[k] for k in keys[start : start + 50_000]})
        if e.packs is not None:
            for tail in packed:
                e.write(packs.pack_batch(e.storage, packs.prefix_of(tail)), keeps_caches=True)
        e.drop_caches()  # the handle's caches are read again too, one `verify()` named included
    return problems


def optimize(e: Engine, min_rows: int = packs.MIN_ROWS) -> dict[str, int]:
    """Pack the entries of every frame prefix holding at least `min_rows` of them, and
    repack the prefixes packed before (`cortex.index.packs`): afterwards the first
    `context()` on a hot object reads its frame in a few large reads. Returns
    `{"packed": prefixes now packed, "rows": entries they hold}`.

    One scan of every frame key finds the prefixes, then each is packed in a batch of
    its own under the write lock: readers wait for one prefix at most. Changes
    nothing a read returns, and writes no journal entry (`root()` is unchanged).
    Backends without packs (PostgreSQL, whose own B-tree serves a frame in one range
    scan) pack nothing and return zeros.

    Last, with no lock held, the storage compacts (`Storage.compact`): RocksDB merges
    its newest files, the packs just written among them, into the levels below, so
    that each scan a call makes seeks one file per level.
    """
    e.check_writable()
    packed = rows = 0
    if e.packs is not None:
        with e.lock.read():
            large = packs.large_prefixes(e.storage, min_rows)
            before = [packs.prefix_of(tail) for tail in packs.packed_tails(e.storage)]
        for prefix in sorted({*large, *before}):
            with e.lock.write():
                batch = packs.pack_batch(e.storage, prefix)
                e.write(batch, keeps_caches=True)
            count = packs.rows_in(batch, prefix)
            packed += count > 0
            rows += count
    e.storage.compact()
    return {"packed": packed, "rows": rows}


def _head_mismatch(head: Head, fact: HeadFacts) -> str | None:
    """The first head field that differs from what the journal implies, or None."""
    checks = (
        ("type", int(head.type), fact.type), ("version", head.version, fact.version),
        ("created", head.created, fact.created), ("updated", head.updated, fact.updated),
        ("importance", head.importance, fact.importance), ("tags", list(head.tags), fact.tags),
        ("frames", [[int(f.verb), int(f.kind), f.ref] for f in head.frames], fact.frames),
        ("expires", head.expires, fact.expires), ("tombstone", head.tombstone is not None, fact.tombstoned),
    )
    return next((f"the journal ({name})" for name, have, want in checks if have != want), None)


def _version_mismatch(e: Engine, fact: HeadFacts, number: int, version: Version) -> str | None:
    """The first field of a version record that differs from its recomputation: when
    it was written (the journal), by whom (the store's actor), and the token counts
    of its stored short and medium text. (The form texts themselves and the full
    form's count follow the templates of the cortex that wrote them, so they are
    checked only against the head, for the current version.)"""
    times = fact.version_times
    checks: tuple[tuple[str, Callable[[], object], object], ...] = (
        ("the journal (created)", lambda: version.created, times[number - 1] if number <= len(times) else None),
        ("the store (created_by)", lambda: version.created_by, e.actor),
        ("the journal (content)", lambda: version.content_hash if fact.contents else None,
         fact.contents[number - 1] if number <= len(fact.contents) else None),
        ("its short text (tokens)", lambda: e.tokenizer.count(version.forms[0]), version.tokens[0]),
        ("its medium text (tokens)", lambda: e.tokenizer.count(version.forms[1]), version.tokens[1]),
    )
    return next((name for name, have, want in checks if have() != want), None)


def _head_mismatch_version(head: Head, version: Version) -> str | None:
    """The first copied field that differs between a head and its current version."""
    checks = (
        ("data", head.data, version.data), ("forms", head.forms, version.forms), ("tokens", head.tokens, version.tokens),
        ("confidence", head.confidence, version.confidence), ("source", head.source, version.source),
        ("provenance", head.prov, version.prov),
    )
    return next((f"its current version ({name})" for name, have, want in checks if have != want), None)


_KEY_NAMES = (packs.DIR_PREFIX, packs.ROWS_PREFIX, packs.DIRTY_PREFIX, *index.DERIVED_PREFIXES, SALIENCE_PREFIX, VERSION_PREFIX, HEAD_PREFIX, JOURNAL_PREFIX, *GRANT_PREFIXES, META_PREFIX)


def _show(key: bytes) -> str:
    """A stored key as `prefix` + hex of the rest, for problem reports."""
    for name in _KEY_NAMES:
        if key.startswith(name):
            return name.decode() + key[len(name):].hex()
    return key.hex()
