"""Comparison baselines for `context()`: the same answers, computed the slow ways.

Two baselines run beside `Cortex.context()` on the same store, the same queries and
the same `now`, and must give the same answer (asserted before anything is timed):

* `original_context(c, **query)`: the original Cortex algorithm over our own RocksDB
  store (`c._engine.storage`), without the index-value shortcut. The pinned tier is found by
  scanning `idx/type/` for Identity, Goal and Constraint and reading and decoding
  every one of those heads; outcome and frame candidates come from index *keys*
  only, and every candidate's head and `sal/` record is read with its own get and
  decoded before it is scored, one `score_of()` call per candidate.
* `SqliteStore`: the same algorithm on stdlib `sqlite3`, which is what most embedded
  agent-memory libraries sit on. `load_from(c)` copies the store into tables with the
  indexes a competent user would create (see `SCHEMA`); `context(**query)` gathers the
  candidates with indexed SQL joins (scoring columns only), scores them in Python with
  `score_of()` per candidate (`scoring="loop"`, as specified) or with one
  `live_scores()` call over the fetched columns (`scoring="bulk"`, what a numpy user
  would write; same floats to the bit), trims and orders them exactly as cortex
  does, then fetches only the survivors' rows.

Both follow docs/context.md step by step: dedup priority Pinned > Outcomes > FrameRelevant;
tombstoned and expired candidates dropped; the pinned floor for members of an included
pinned tier; global trim of the lowest (score, id) while over budget, keeping one;
dropped memories as `reachable_uris` (at most 64) best first; Pinned and
FrameRelevant ordered by score desc then id asc, Outcomes by created desc, score desc,
id asc. Options are normalised by cortex's own `cortex.context.plan.plan` (so 0 -> default budget, the
4000 cap, tier names, validation are identical). Survivors come back as `Memory`
objects with their rendered text, as in a `Bundle`; `scores` / `tokens` cover every
scored candidate (lazy, keyed by id text, as in cortex).

`compare(c, queries, now)` checks that all of them agree on every query, then times
them (one untimed warm pass, then one timed pass, taking turns query by query) and
returns p50 / p99 and each baseline's p50 as a ratio to cortex's. It then times
cortex and the two lean SQLite variants again, each running the whole query list
alone (`"alone"`): taking turns, each call starts with CPU caches the previous
implementation filled, which at 100k doubled cortex's median (0.48 -> 0.97 ms).

Length: over the ~600 lines a module keeps to, on purpose: four side-by-side
implementations of one algorithm, kept in one file so that they can be read against each
other and against the composer.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

from cortex.context import MAX_REACHABLE_URIS, Bundle, ContextOpts
from cortex.context.bundle import IdMap
from cortex.context.plan import Plan
from cortex.context.plan import plan as plan_options
from cortex.forms import render_full
from cortex.ids import encode_id
from cortex.index import actor_obj, by_type, frame
from cortex.memory import Memory
from cortex.model import DATA_CLASSES, Frame, MemoryType, ObjKind, Tier, Verb, from_micros, is_pinned, to_micros
from cortex.salience.score import Score, Weights, live_scores, score_of
from cortex.records import Head, head_key, pack, salience_key, unpack, unpack_head
from cortex.storage import scan_keys

try:  # the read path's cheap constructors, where this cortex has them
    from cortex.model import stored_frame as _frame
except ImportError:  # pragma: no cover
    def _frame(verb: int, kind: int, ref: str) -> Frame:
        return Frame(Verb(verb), ObjKind(kind), ref)

_UNVALIDATED = "validate" in inspect.signature(DATA_CLASSES[MemoryType.FACT].from_record).parameters


def _data_of(mtype: MemoryType, record: list[Any]) -> Any:
    """A stored data record decoded as cortex's read path does (no re-validation when
    this cortex supports it: the records were validated when written)."""
    cls = DATA_CLASSES[mtype]
    return cls.from_record(record, False) if _UNVALIDATED else cls.from_record(record)


PINNED = 0
OUTCOMES = 1
FRAME_RELEVANT = 2
_PINNED_TYPES = (MemoryType.IDENTITY, MemoryType.GOAL, MemoryType.CONSTRAINT)


# ---------------------------------------------------------------------------
# The result (the parts of a Bundle the comparison needs)


def Result(**fields: Any) -> Bundle:
    """What a baseline returns: a `cortex.Bundle` with the same fields as cortex's
    (no latency, no root: the comparison leaves them out)."""
    return Bundle(**{"latency_ms": 0.0, "root": "", **fields})


def answer(result: Any) -> dict[str, Any]:
    """The comparable part of a `Bundle`: ids per tier (in order), the
    reachable URIs (the best of the dropped first), the token total, the trim and candidate counts
    and the rendered text of the survivors."""
    return {
        "pinned": [m.id for m in result.pinned],
        "outcomes": [m.id for m in result.outcomes],
        "frame_relevant": [m.id for m in result.frame_relevant],
        "reachable_uris": list(result.reachable_uris),
        "total_tokens": result.total_tokens,
        "trimmed": result.trimmed,
        "candidates": result.candidates,
        "rendered": dict(result.rendered),
    }


def _plan_of(query: Mapping[str, Any]) -> Plan:
    return plan_options(ContextOpts(**query), lambda: datetime.now(timezone.utc))


@dataclass(slots=True)
class _Cand:
    """One scored candidate. `key` sorts like the id (16 raw bytes or the 26-char
    text: Crockford base32 keeps byte order); `row` is whatever the implementation
    needs to build the survivor's `Memory` later."""

    key: Any
    tier: int
    score: float
    tokens: int
    created: int
    uri: str
    row: Any


def _trim_and_order(cands: list[_Cand], budget: int) -> tuple[list[list[_Cand]], list[str], int, int]:
    """docs/context.md steps 6 and 8: drop the lowest (score, id) while the token total is
    over the budget (always keeping one), then order the survivors per tier."""
    by_rank = sorted(cands, key=lambda x: (x.score, x.key))
    total = sum(x.tokens for x in cands)
    dropped = 0
    while total > budget and len(by_rank) - dropped > 1:
        total -= by_rank[dropped].tokens
        dropped += 1
    reachable = [x.uri for x in by_rank[:dropped][::-1][:MAX_REACHABLE_URIS]]  # best of the dropped first
    tiers: list[list[_Cand]] = [[], [], []]
    for x in by_rank[dropped:]:
        tiers[x.tier].append(x)
    tiers[PINNED].sort(key=lambda x: (-x.score, x.key))
    tiers[OUTCOMES].sort(key=lambda x: (-x.created, -x.score, x.key))
    tiers[FRAME_RELEVANT].sort(key=lambda x: (-x.score, x.key))
    return tiers, reachable, total, dropped


def _rendered(memory: Memory, form: str) -> str:
    return render_full(memory.data) if form == "full" else memory.forms[form]


def _live(expires: int | None, now: int) -> bool:
    return not expires or expires > now


# ---------------------------------------------------------------------------
# 1. The original algorithm, over our RocksDB store


def original_context(c: Any, **query: Any) -> Bundle:
    """`c.context(**query)` computed the original way (see the module docstring):
    pinned by a type-index scan and a decode of every Identity / Goal / Constraint
    head; every outcome and frame candidate's head and `sal/` record read with its
    own get and decoded before scoring; one `score_of()` per candidate."""
    plan = _plan_of(query)
    c._engine.check_open()
    bundle: Bundle = c._engine.read(lambda: _original_locked(c, plan))
    return bundle


def _original_locked(c: Any, plan: Plan) -> Bundle:
    kv = c._engine.storage
    weights = c._engine.weights()
    now_dt = from_micros(plan.now)
    token_index = ("short", "medium", "full").index(plan.form)
    cands: list[_Cand] = []
    seen: set[bytes] = set()
    records: dict[bytes, bytes] = {}  # raw heads: survivors become Memory views

    def candidate(raw_id: bytes, head: Head, tier: int) -> None:
        sal_key = salience_key(raw_id)
        raw = kv.get(sal_key)
        if raw is None:
            raise AssertionError(f"missing {sal_key!r}")
        rec = Score.decode(raw)
        if tier == PINNED:
            rec = Score(rec.last_used, rec.access_count, rec.citations, rec.importance, True)
        score = score_of(rec, now_dt, weights, pinned_floor=tier == PINNED)
        uri = f"cortex://{head.type.type_name}/{encode_id(raw_id)}#{head.version}"
        cands.append(_Cand(raw_id, tier, score, head.tokens[token_index], head.created, uri, head))
        seen.add(raw_id)

    def load(raw_id: bytes) -> Head:
        key = head_key(raw_id)
        raw = kv.get(key)
        if raw is None:
            raise AssertionError(f"index entry without a head: {key!r}")
        records[raw_id] = raw
        return Head.decode(key, raw)

    verb = plan.verb
    tiered = verb is not None and bool(plan.objects)
    if Tier.PINNED in plan.tiers:
        for mtype in _PINNED_TYPES:
            for key in scan_keys(kv, by_type.prefix(mtype)):
                raw_id = key[-16:]
                head = load(raw_id)
                if head.tombstone is None and is_pinned(head.data) and _live(head.expires, plan.now):
                    candidate(raw_id, head, PINNED)

    if verb is not None and tiered and Tier.OUTCOMES in plan.tiers:
        keys: list[tuple[int, bytes]] = []
        for ref in sorted({ref for _, ref in plan.objects}):
            keys.extend((actor_obj.created_of(k), k[-16:]) for k in scan_keys(kv, actor_obj.prefix(verb, ref)))
        keys.sort(key=lambda k: -k[0])  # newest first
        chosen: dict[bytes, Head] = {}
        cutoff = None
        for created, raw_id in keys:
            if cutoff is not None and created < cutoff:
                break
            if raw_id in chosen or raw_id in seen:
                continue
            head = load(raw_id)
            if head.tombstone is not None or not _live(head.expires, plan.now):
                continue
            chosen[raw_id] = head
            if cutoff is None and len(chosen) >= plan.outcome_limit:
                cutoff = created
        for raw_id, head in sorted(chosen.items(), key=lambda kv_: (-kv_[1].created, kv_[0]))[: plan.outcome_limit]:
            candidate(raw_id, head, OUTCOMES)

    if verb is not None and tiered and Tier.FRAME_RELEVANT in plan.tiers:
        ids: dict[bytes, None] = {}
        for kind, ref in plan.objects:
            for key in scan_keys(kv, frame.prefix(verb, kind, ref)):
                ids[key[-16:]] = None
        for raw_id in ids:
            if raw_id in seen:
                continue
            head = load(raw_id)
            if head.tombstone is None and _live(head.expires, plan.now):
                candidate(raw_id, head, FRAME_RELEVANT)

    tiers, reachable, total, dropped = _trim_and_order(cands, plan.budget)
    out: list[list[Memory]] = [[], [], []]
    rendered: dict[str, str] = {}
    for t, members in enumerate(tiers):
        for x in members:
            memory = Memory.stored(x.key, unpack_head(head_key(x.key), records[x.key]))
            rendered[memory.id] = _rendered(memory, plan.form)
            out[t].append(memory)
    raw_ids = [x.key for x in cands]
    return Result(
        pinned=out[PINNED], outcomes=out[OUTCOMES], frame_relevant=out[FRAME_RELEVANT],
        rendered=rendered,
        scores=IdMap(len(cands), lambda: raw_ids, lambda: [x.score for x in cands]),
        tokens=IdMap(len(cands), lambda: raw_ids, lambda: [x.tokens for x in cands]),
        reachable_uris=reachable, total_tokens=total, trimmed=dropped, candidates=len(cands), form=plan.form,
    )


# ---------------------------------------------------------------------------
# 2. The same algorithm on SQLite


SCHEMA = """
CREATE TABLE memories (
    id            TEXT PRIMARY KEY,      -- 26-character ULID (sorts like the 16 bytes)
    type          INTEGER NOT NULL,
    version       INTEGER NOT NULL,
    created       INTEGER NOT NULL,      -- microseconds since the epoch (version 1)
    updated       INTEGER NOT NULL,      -- microseconds (current version)
    tombstoned    INTEGER NOT NULL,      -- 0 / 1
    expires       INTEGER NOT NULL,      -- microseconds, 0 = never
    importance    INTEGER NOT NULL,
    confidence    REAL NOT NULL,
    source        TEXT NOT NULL,
    pinned        INTEGER NOT NULL,      -- pinned-tier member: live Identity, hard Constraint, active Goal
    frames        TEXT NOT NULL,         -- JSON [[verb, kind, ref], ...]
    tags          TEXT NOT NULL,         -- JSON [tag, ...]
    data          BLOB NOT NULL,         -- msgpack of the typed record
    short         TEXT NOT NULL,
    medium        TEXT NOT NULL,
    short_tokens  INTEGER NOT NULL,
    medium_tokens INTEGER NOT NULL,
    full_tokens   INTEGER NOT NULL
);
CREATE INDEX memories_pinned ON memories(id) WHERE pinned = 1;

CREATE TABLE frames (
    verb INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    ref  TEXT NOT NULL,
    id   TEXT NOT NULL REFERENCES memories(id)
);
CREATE INDEX frames_by_object ON frames(verb, kind, ref, id);   -- frame-relevant tier (covering)
CREATE INDEX frames_by_verb_ref ON frames(verb, ref, id);       -- outcomes tier (kind plays no part)

CREATE TABLE salience (
    id         TEXT PRIMARY KEY REFERENCES memories(id),
    last_used  INTEGER NOT NULL,         -- microseconds
    access     INTEGER NOT NULL,
    citations  INTEGER NOT NULL,
    importance INTEGER NOT NULL,
    pinned     INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
"""

_SCORING_COLUMNS = (
    "m.id, m.type, m.version, m.created, m.short_tokens, m.medium_tokens, m.full_tokens, "
    "s.last_used, s.access, s.citations, s.importance"
)
_LIVE = "m.tombstoned = 0 AND (m.expires = 0 OR m.expires > :now)"

PINNED_SQL = f"""
SELECT {_SCORING_COLUMNS}
FROM memories m JOIN salience s ON s.id = m.id
WHERE m.pinned = 1 AND {_LIVE}
"""

FRAME_SQL = f"""
SELECT {_SCORING_COLUMNS}
FROM frames f JOIN memories m ON m.id = f.id JOIN salience s ON s.id = f.id
WHERE f.verb = :verb AND f.kind = :kind AND f.ref = :ref AND {_LIVE}
"""


def _outcomes_sql(refs: int, exclude_pinned: bool) -> str:
    marks = ", ".join(f":ref{i}" for i in range(refs))
    return f"""
SELECT DISTINCT {_SCORING_COLUMNS}
FROM frames f JOIN memories m ON m.id = f.id JOIN salience s ON s.id = f.id
WHERE f.verb = :verb AND f.ref IN ({marks}) AND m.type = {int(MemoryType.EVENT)} AND {_LIVE}
  {"AND m.pinned = 0" if exclude_pinned else ""}
ORDER BY m.created DESC, m.id ASC
LIMIT :limit
"""


_SURVIVOR_COLUMNS = "id, type, version, created, updated, expires, importance, confidence, source, frames, tags, data, short, medium, short_tokens, medium_tokens, full_tokens"


class SqliteStore:
    """A copy of a cortex store in SQLite (a file database in a temporary directory,
    WAL mode), and `context()` on it. Use `load_from(c)` once, then `context(**query)`
    as often as needed; `close()` deletes the file."""

    def __init__(self, path: str | None = None, *, cache_mb: int = 1024, scoring: str = "loop") -> None:
        self.scoring = scoring
        self._tmpdir = None
        if path is None:
            self._tmpdir = tempfile.mkdtemp(prefix="cortex-sqlite-baseline-")
            path = os.path.join(self._tmpdir, "memories.sqlite3")
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute(f"PRAGMA cache_size = -{cache_mb * 1024}")  # like cortex's 1 GB block cache
        self.db.execute(f"PRAGMA mmap_size = {cache_mb << 20}")
        self.db.execute("PRAGMA temp_store = MEMORY")
        self.weights: Weights | None = None
        self._outcome_sql: dict[tuple[int, bool], str] = {}

    def close(self) -> None:
        self.db.close()
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- loading ---------------------------------------------------------------

    def load_from(self, c: Any, *, batch: int = 5000) -> int:
        """Copy every memory (tombstoned ones too) and its salience record, and the
        store's weights; build the indexes and ANALYZE. Returns the memory count."""
        db = self.db
        db.executescript(SCHEMA)
        db.execute("BEGIN")
        memories: list[tuple[Any, ...]] = []
        frames: list[tuple[int, int, str, str]] = []
        sal: list[tuple[str, int, int, int, int, int]] = []
        count = 0

        def flush() -> None:
            db.executemany(f"INSERT INTO memories VALUES ({', '.join('?' * 19)})", memories)
            db.executemany("INSERT INTO frames VALUES (?, ?, ?, ?)", frames)
            db.executemany("INSERT INTO salience VALUES (?, ?, ?, ?, ?, ?)", sal)
            memories.clear()
            frames.clear()
            sal.clear()

        for m in c.memories(include_tombstoned=True):
            live = not m.tombstoned
            memories.append((
                m.id, int(m.type), m.version, to_micros(m.created_at), to_micros(m.updated_at),
                int(m.tombstoned), to_micros(m.expires_at) if m.expires_at else 0, m.importance,
                m.confidence, m.source, int(live and is_pinned(m.data)),
                json.dumps([[int(f.verb), int(f.kind), f.ref] for f in m.frames]), json.dumps(list(m.tags)),
                pack(m.data.to_record()), m.forms["short"], m.forms["medium"],
                m.tokens["short"], m.tokens["medium"], m.tokens["full"],
            ))
            frames.extend((int(f.verb), int(f.kind), f.ref, m.id) for f in m.frames)
            s = c.salience(m.id)
            sal.append((m.id, to_micros(s.last_used), s.access_count, s.citations, s.importance, int(s.pinned)))
            count += 1
            if len(memories) >= batch:
                flush()
        flush()
        w = c.weights()
        db.execute("INSERT INTO meta VALUES ('weights', ?)", (json.dumps(list(w.as_tuple())),))
        db.execute("COMMIT")
        db.execute("ANALYZE")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.weights = w
        return count

    # -- context() ---------------------------------------------------------------

    def context(self, *, scoring: str | None = None, **query: Any) -> Bundle:
        """`Cortex.context(**query)` on the SQLite copy (same options, same answer).

        `scoring` (default: the store's `scoring`): "loop" calls `score_of()` once per
        candidate, as the original algorithm does; "bulk" scores all candidates with
        one `live_scores()` call over arrays of the fetched columns (the function
        `score_of` goes through, so the scores are the same to the bit)."""
        scoring = scoring or self.scoring
        if scoring not in ("original", "loop", "bulk"):
            raise ValueError(f"scoring must be 'original', 'loop' or 'bulk', not {scoring!r}")
        plan = _plan_of(query)
        weights = self.weights
        if weights is None:
            weights = self.weights = Weights(*json.loads(self.db.execute("SELECT value FROM meta WHERE name = 'weights'").fetchone()[0]))
        token_col = 4 + ("short", "medium", "full").index(plan.form)
        found: list[tuple[tuple[Any, ...], int]] = []
        seen: set[str] = set()

        def add(rows: Iterable[tuple[Any, ...]], tier: int) -> None:
            for row in rows:
                if row[0] not in seen:
                    seen.add(row[0])
                    found.append((row, tier))

        db = self.db
        db.execute("BEGIN")  # one read snapshot for the whole call
        try:
            verb = plan.verb
            tiered = verb is not None and bool(plan.objects)
            if Tier.PINNED in plan.tiers:
                add(db.execute(PINNED_SQL, {"now": plan.now}), PINNED)
            if verb is not None and tiered and Tier.OUTCOMES in plan.tiers:
                refs = sorted({ref for _, ref in plan.objects})
                exclude = Tier.PINNED in plan.tiers
                sql = self._outcome_sql.get((len(refs), exclude))
                if sql is None:
                    sql = self._outcome_sql[(len(refs), exclude)] = _outcomes_sql(len(refs), exclude)
                params: dict[str, int | str] = {"verb": int(verb), "now": plan.now, "limit": plan.outcome_limit}
                params.update({f"ref{i}": ref for i, ref in enumerate(refs)})
                add(db.execute(sql, params), OUTCOMES)
            if verb is not None and tiered and Tier.FRAME_RELEVANT in plan.tiers:
                for kind, ref in plan.objects:
                    add(db.execute(FRAME_SQL, {"verb": int(verb), "kind": int(kind), "ref": ref, "now": plan.now}), FRAME_RELEVANT)

            loaded: dict[str, Memory] = {}
            if scoring == "original":
                # The original algorithm: every candidate's full row is loaded and
                # decoded before scoring, not only the survivors'.
                ids = [row[0] for row, _ in found]
                for i in range(0, len(ids), 500):
                    chunk = ids[i : i + 500]
                    sql = f"SELECT {_SURVIVOR_COLUMNS} FROM memories WHERE id IN ({', '.join('?' * len(chunk))})"
                    for row in db.execute(sql, chunk):
                        loaded[row[0]] = _memory_of(row, f"cortex://{MemoryType(row[1]).type_name}/{row[0]}#{row[2]}")
            if scoring in ("original", "loop"):
                now_dt = from_micros(plan.now)
                scores = [
                    score_of(Score(from_micros(row[7]), row[8], row[9], row[10], tier == PINNED), now_dt, weights, pinned_floor=tier == PINNED)
                    for row, tier in found
                ]
            else:
                cols = np.array([row[7:11] for row, _ in found], dtype=np.int64).reshape(-1, 4)
                pinned = np.array([tier == PINNED for _, tier in found], dtype=bool)
                scores = live_scores(cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3], pinned, plan.now, weights).tolist()
            cands = [
                _Cand(row[0], tier, score, row[token_col], row[3], f"cortex://{MemoryType(row[1]).type_name}/{row[0]}#{row[2]}", None)
                for (row, tier), score in zip(found, scores)
            ]

            tiers, reachable, total, dropped = _trim_and_order(cands, plan.budget)
            keep = [x.key for members in tiers for x in members]
            rows: dict[str, tuple[Any, ...]] = {}
            for i in range(0, len(keep) if not loaded else 0, 500):
                chunk = keep[i : i + 500]
                sql = f"SELECT {_SURVIVOR_COLUMNS} FROM memories WHERE id IN ({', '.join('?' * len(chunk))})"
                rows.update((row[0], row) for row in db.execute(sql, chunk))
        finally:
            db.execute("COMMIT")

        out: list[list[Memory]] = [[], [], []]
        rendered: dict[str, str] = {}
        for t, members in enumerate(tiers):
            for x in members:
                memory = loaded[x.key] if loaded else _memory_of(rows[x.key], x.uri)
                rendered[memory.id] = _rendered(memory, plan.form)
                out[t].append(memory)
        return Result(
            pinned=out[PINNED], outcomes=out[OUTCOMES], frame_relevant=out[FRAME_RELEVANT],
            rendered=rendered,
            scores={x.key: x.score for x in cands},
            tokens={x.key: x.tokens for x in cands},
            reachable_uris=reachable, total_tokens=total, trimmed=dropped, candidates=len(cands), form=plan.form,
        )


def _memory_of(row: tuple[Any, ...], uri: str) -> Memory:
    (mid, mtype, version, created, updated, expires, importance, confidence, source,
     frames, tags, data, short, medium, short_t, medium_t, full_t) = row
    mtype = MemoryType(mtype)
    return Memory(
        id=mid, uri=uri, type=mtype,
        data=_data_of(mtype, unpack(b"sqlite:" + mid.encode(), data)),
        version=version,
        frames=tuple(_frame(v, k, ref) for v, k, ref in json.loads(frames)),
        tags=tuple(json.loads(tags)),
        importance=importance, confidence=confidence, source=source,
        created_at=from_micros(created), updated_at=from_micros(updated),
        tombstoned=False,
        forms={"short": short, "medium": medium},
        tokens={"short": short_t, "medium": medium_t, "full": full_t},
        expires_at=from_micros(expires) if expires else None,
    )


# ---------------------------------------------------------------------------
# 3. The comparison


def implementations(c: Any, sqlite: SqliteStore) -> dict[str, Any]:
    """name -> callable(**query) for cortex and each baseline."""
    return {
        "cortex": c.context,
        "original": lambda **q: original_context(c, **q),
        "sqlite": lambda **q: sqlite.context(scoring="original", **q),
        "sqlite_lean": lambda **q: sqlite.context(scoring="loop", **q),
        "sqlite_bulk": lambda **q: sqlite.context(scoring="bulk", **q),
    }


def check_agreement(c: Any, sqlite: SqliteStore, queries: list[dict[str, Any]], now: datetime) -> list[int]:
    """Raise AssertionError naming the first query on which a baseline disagrees with
    cortex (ids per tier in order, reachable URIs, token total, trim and candidate
    counts, rendered text of the survivors). Returns the candidate count per query."""
    impls = implementations(c, sqlite)
    candidates = []
    for i, query in enumerate(queries):
        q = {**query, "now": now}
        want = answer(impls["cortex"](**q))
        candidates.append(want["candidates"])
        for name, fn in impls.items():
            if name == "cortex":
                continue
            got = answer(fn(**q))
            if got != want:
                diff = sorted(k for k in want if want[k] != got[k])
                raise AssertionError(
                    f"{name} disagrees with cortex on query {i} {query!r} (now={now.isoformat()}): differing {diff}; "
                    f"cortex {_brief(want, diff)} vs {name} {_brief(got, diff)}"
                )
    return candidates


def _brief(ans: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    return {k: ans[k] for k in keys if k != "rendered"}


def _times(impls: dict[str, Any], queries: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per-query milliseconds of each implementation. The implementations take turns
    on each query (the order rotating from query to query), so that a load change on
    a busy machine hits them all alike instead of whichever pass was running."""
    names = list(impls)
    out: dict[str, list[float]] = {name: [] for name in names}
    for i, q in enumerate(queries):
        for j in range(len(names)):
            name = names[(i + j) % len(names)]
            fn = impls[name]
            t = time.perf_counter()
            fn(**q)
            out[name].append((time.perf_counter() - t) * 1000.0)
    return out


# The implementations `compare` also times alone, a whole pass each: cortex and
# SQLite running cortex's own design (the two slow baselines would add minutes).
ALONE = ("cortex", "sqlite_lean", "sqlite_bulk")


def _times_alone(impls: dict[str, Any], queries: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per-query milliseconds of each implementation running the whole query list on
    its own, as one process serving one agent would: two rounds, the order of the
    passes reversed in the second. Taking turns query by query (`_times`) makes
    every call start with caches another implementation just filled; this measures
    each with its own."""
    names = list(impls)
    out: dict[str, list[float]] = {name: [] for name in names}
    for order in (names, names[::-1]):
        for name in order:
            fn = impls[name]
            for q in queries:
                t = time.perf_counter()
                fn(**q)
                out[name].append((time.perf_counter() - t) * 1000.0)
    return out


def _summary(times: list[float]) -> dict[str, float]:
    a = np.array(times)
    return {"p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)), "mean_ms": float(a.mean())}


def compare(c: Any, queries: list[dict[str, Any]], now: datetime, *, sqlite: SqliteStore | None = None) -> dict[str, Any]:
    """Cortex vs the original algorithm vs SQLite on `queries` at a fixed `now`.

    Loads a `SqliteStore` from `c` unless one is passed (a passed one is left open),
    asserts that all implementations agree on every query (`check_agreement`; an
    AssertionError names the query), then runs one untimed warm pass and one timed
    pass over all queries, the implementations taking turns on each query. Returns::

        {"cortex": {"p50_ms", "p99_ms", "mean_ms"}, "original": {...}, "sqlite": {...},
         "sqlite_bulk": {...},
         "ratio_original": original p50 / cortex p50,
         "ratio_sqlite": sqlite p50 / cortex p50,
         "ratio_sqlite_bulk": sqlite_bulk p50 / cortex p50,
         "alone": {"cortex", "sqlite_lean", "sqlite_bulk": {...},
                   "ratio_sqlite_lean", "ratio_sqlite_bulk"} (`_times_alone`),
         "queries": len(queries), "candidates": {"p50", "p99", "max"} (scored per call),
         "sqlite_load_s": seconds (only when it loaded one)}

    "sqlite" is the original algorithm on SQLite (baseline 2 of the benchmark issue):
    every candidate's full row is loaded and decoded, then scored with one
    `score_of()` each. "sqlite_lean" is what a careful SQLite user would write
    instead: fetch only the scoring columns, score per candidate, read the
    survivors' rows after the trim; "sqlite_bulk" is that with one `live_scores()`
    call per query, i.e. cortex's own design on SQLite.
    """
    own = sqlite is None
    report: dict[str, Any] = {"queries": len(queries)}
    if sqlite is None:
        sqlite = SqliteStore()
        t = time.perf_counter()
        sqlite.load_from(c)
        report["sqlite_load_s"] = time.perf_counter() - t
    try:
        cands = np.array(check_agreement(c, sqlite, queries, now) or [0], dtype=np.int64)
        report["candidates"] = {"p50": float(np.percentile(cands, 50)), "p99": float(np.percentile(cands, 99)), "max": int(cands.max())}
        timed = [{**q, "now": now} for q in queries]
        impls = implementations(c, sqlite)
        _times(impls, timed)  # warm
        for name, times in _times(impls, timed).items():
            report[name] = _summary(times)
        report["alone"] = {name: _summary(times) for name, times in _times_alone({n: impls[n] for n in ALONE}, timed).items()}
    finally:
        if own:
            sqlite.close()
    base = report["cortex"]["p50_ms"]
    for name in ("original", "sqlite", "sqlite_lean", "sqlite_bulk"):
        report[f"ratio_{name}"] = report[name]["p50_ms"] / base
    for name in ALONE[1:]:
        report["alone"][f"ratio_{name}"] = report["alone"][name]["p50_ms"] / report["alone"]["cortex"]["p50_ms"]
    return report
