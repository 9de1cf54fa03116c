"""`find(near="text", ...)`: recall by content, ranked by BM25 over the lexical index.

    hits = c.find(near="which database does billing use?", limit=5)
    for m in hits:
        print(hits.relevance[m.id], m.uri)

The query text goes through the same analyzer as the memories (`cortex.index.terms`);
its distinct terms, in code point order, are scored against the lexical index
(`cortex.index.lexical`) with BM25 (Lucene's form, k1 = 1.2, b = 0.75):

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d, t) = idf(t) * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * dl / avgdl))
    score(d)    = the sum of score(d, t) over the query's terms, added in term order

N is the number of memories in the corpus (every memory not tombstoned), avgdl their
mean length in terms, df(t) how many of them hold t, tf how often d holds t and dl
d's length. Under a scope the corpus is the in-scope memories only, so no score
depends on what the scope hides. Every posting of every query term is scored: the
ranking is exact.

Results: relevance descending, then live salience descending (as `find()` orders by
it), then id ascending. `type=`, `tags=`, `where=` and the scope filter the results
(not the statistics); tombstoned and expired memories are never results, superseded
ones only with `include_superseded=True`. `limit` / `budget_tokens` trim as `find()`
does: the longest prefix of the ranking whose tokens (in `form`) fit, at least one
memory. The result is a `Recalled` list whose `relevance` maps each id to its score.

Hostile queries are refused with `ValidationError` naming `near`: text over
`MAX_NEAR_BYTES`, more than `MAX_NEAR_TERMS` distinct terms, or no term at all
(empty, only stop words, only punctuation or control characters).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from .engine import Engine
from .errors import StoreError, ValidationError
from .index import by_type, entry, lexical, terms
from .memory import Memory
from .model import DATA_CLASSES, MemoryType, check_tags, to_micros
from .query import Predicate, _memory_type, check_bounds, compile_where, field_rules
from .records import FLAG_SUPERSEDED, H_CREATED, H_EXPIRES, H_TOMBSTONE, H_TYPE, head_keys, unpack_head
from .salience.score import live_scores
from . import scoped
from .scope import Evaluator, SignedScope, check_signed, memory_frames
from .scoped import Granted
from .writes import touch

K1 = 1.2
B = 0.75
MAX_NEAR_BYTES = 16_384
MAX_NEAR_TERMS = 256
_CHUNK = 256
_FIRST_RANKED = 512
# MaxScore's point reads per call (candidates x terms not scanned, summed over its
# rounds); past it every posting is scored instead. A point read costs 20-50 times a
# posting read by a scan, so this is about the cost of scanning 20-50k postings.
_POINT_READS = 1024

POSTING_DTYPE = np.dtype([("id", "S16"), ("tf", ">u4"), ("dl", ">u4"), ("type", "u1")])
DOC_DTYPE = np.dtype([("id", "S16"), ("dl", ">u4"), ("type", "u1")])


class Recalled(list[Memory]):
    """The memories `find(near=...)` returned, best first; `relevance[id]` is each
    one's BM25 score (a float, higher is more relevant)."""

    relevance: Mapping[str, float]

    def __init__(self, memories: Iterable[Memory] = (), relevance: Mapping[str, float] | None = None) -> None:
        super().__init__(memories)
        self.relevance = dict(relevance or {})


def query_terms(near: object) -> list[str]:
    """The distinct terms of a query, in code point order (`ValidationError` naming
    `near` for text that is not a string, too long, or holds no term)."""
    if not isinstance(near, str):
        raise ValidationError("near", "must be a string of words", near)
    if len(near.encode("utf-8", errors="surrogatepass")) > MAX_NEAR_BYTES:
        raise ValidationError("near", f"must be at most {MAX_NEAR_BYTES} UTF-8 bytes", near)
    found = sorted(set(terms.terms([near])))
    if not found:
        raise ValidationError("near", "holds no word to search for (it is empty, or only stop words, punctuation or control characters)", near)
    if len(found) > MAX_NEAR_TERMS:
        raise ValidationError("near", f"holds {len(found)} distinct words; at most {MAX_NEAR_TERMS}", near)
    return found


def _memory_types(value: object) -> tuple[MemoryType, ...]:
    """`type=`: one type (as `find()` takes it), or a list of them (any of them)."""
    if isinstance(value, (list, tuple, set, frozenset)):
        found = {t for t in (_memory_type(v) for v in value) if t is not None}
        return tuple(sorted(found))
    one = _memory_type(value)
    return () if one is None else (one,)


def idf(docs: int, df: int) -> float:
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


def find_near(e: Engine, *, near: object, type: Any, tags: Iterable[str], where: Any, limit: int | None,
              budget_tokens: int | None, form: str | None, include_tombstoned: bool, scope: Any, late_binding: bool,
              include_superseded: bool) -> Recalled:
    """See the module docstring; `Cortex.find` calls it when `near` is given."""
    e.check_open()
    words = query_terms(near)
    mtypes = _memory_types(type)
    tag_list = check_tags(tags)
    form = check_bounds(limit, budget_tokens, form)
    for name, flag in (("include_tombstoned", include_tombstoned), ("late_binding", late_binding),
                       ("include_superseded", include_superseded)):
        if not isinstance(flag, bool):
            raise ValidationError(name, "must be a bool", flag)
    if include_tombstoned:
        raise ValidationError("include_tombstoned", "find(near=...) never returns tombstoned memories (the index leaves them out)", include_tombstoned)
    signed = None if scope is None else check_signed(scope)
    classes = [DATA_CLASSES[t] for t in mtypes] if mtypes else list(DATA_CLASSES.values())
    predicate = compile_where(where, field_rules(classes))
    if late_binding:
        e.check_writable()

    def read(granted: Granted | None) -> tuple[list[tuple[bytes, Memory]], dict[str, float]]:
        if e.storage.get(lexical.META_LEXICAL) != lexical.SETTINGS.encode():
            raise StoreError(f"store {e.location!r} has no lexical index of this cortex's analyzer yet: "
                             "open it once with mode=\"rw\" (which builds it) or run rebuild()")
        now = to_micros(e.now())
        budget = budget_tokens
        evaluator = None
        if granted is not None:
            budget = granted.budget(0 if budget is None else budget) or None
            evaluator = granted.evaluator()

        def collect(ids: np.ndarray, scores: np.ndarray) -> tuple[list[tuple[bytes, Memory]], dict[str, float]]:
            return _collect(e, ids, scores, now, tag_list, predicate, limit, budget, form, signed, include_superseded)

        if evaluator is None and budget is None and limit is not None:
            early = _max_score(e, words, mtypes, limit, collect)
            if early is not None:
                return early
        return collect(*score(e, words, mtypes, evaluator))

    results, relevance = scoped.read(e, signed, read)
    if late_binding and results:
        touch(e, [r[0] for r in results])
    return Recalled((m for _, m in results), relevance)


def _in_scope(e: Engine, evaluator: Evaluator, rows: np.ndarray) -> np.ndarray:
    ids = np.ascontiguousarray(rows["id"]).view(">u8").reshape(-1, 2)
    mask: np.ndarray = evaluator.mask(e.storage, ids[:, 0].astype(np.uint64), ids[:, 1].astype(np.uint64), rows["type"])
    return mask


def _postings(e: Engine, term: str) -> np.ndarray:
    prefix = lexical.term_prefix(term)
    values = e.storage.scan_values(prefix, lexical.posting_key_of(prefix))
    return np.frombuffer(b"".join(values), dtype=POSTING_DTYPE)


def _postings_of(e: Engine, term: str, ids: np.ndarray) -> np.ndarray:
    """The postings of `term` for these documents only: one point read each. Under a
    scope the postings of out-of-scope memories are never read, so a query costs the
    same whether they hold its terms or not (docs/scopes.md)."""
    prefix = lexical.term_prefix(term)
    raw = ids.tobytes()
    values = e.storage.multi_get([prefix + raw[i : i + 16] for i in range(0, len(raw), 16)])
    return np.frombuffer(b"".join(v for v in values if v is not None), dtype=POSTING_DTYPE)


def score(e: Engine, words: list[str], mtypes: tuple[MemoryType, ...], evaluator: Evaluator | None) -> tuple[np.ndarray, np.ndarray]:
    """The ids (S16) holding any of `words` and their BM25 scores, unordered; of the
    types `mtypes` only when any are given (call inside `Engine.read`)."""
    if evaluator is None:
        docs, length = lexical.decode_totals(e.storage.get(lexical.TOTALS_KEY))
        dfs = [lexical.decode_count(raw) for raw in e.storage.multi_get([lexical.df_key(w) for w in words])]
    else:
        rows = np.frombuffer(b"".join(e.storage.scan_values(lexical.DOC_PREFIX)), dtype=DOC_DTYPE)
        inside = rows[_in_scope(e, evaluator, rows)]
        docs, length = len(inside), int(inside["dl"].sum(dtype=np.uint64))
        dfs = []
    empty = (np.empty(0, dtype="S16"), np.empty(0, dtype=np.float64))
    if not docs:
        return empty
    avgdl = length / docs
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for i, word in enumerate(words):
        if evaluator is not None:
            rows = _postings_of(e, word, inside["id"])
            df = len(rows)
        else:
            rows = _postings(e, word)
            df = dfs[i]
        if mtypes:
            rows = rows[np.isin(rows["type"], [int(t) for t in mtypes])]
        if not len(rows) or not df:
            continue
        tf = rows["tf"].astype(np.float64)
        dl = rows["dl"].astype(np.float64)
        norm = K1 * (1.0 - B + B * dl / avgdl)
        parts.append((rows["id"], idf(docs, df) * (tf * (K1 + 1.0)) / (tf + norm)))
    if not parts:
        return empty
    # Each posting list is in id order, so a stable sort of their concatenation merges
    # sorted runs (timsort: about n log k for k terms) and keeps equal ids in term order.
    every = np.concatenate([p[0] for p in parts])
    order = np.argsort(every, kind="stable")
    merged = every[order]
    first = np.r_[True, merged[1:] != merged[:-1]]
    group = np.empty(len(every), dtype=np.intp)
    group[order] = np.cumsum(first) - 1
    ids = merged[first]
    scores = np.zeros(len(ids), dtype=np.float64)
    at = 0
    for part_ids, part_scores in parts:  # term order: each memory's sum adds its terms in that order
        scores[group[at : at + len(part_ids)]] += part_scores
        at += len(part_ids)
    return ids, scores


def _contribution(rows: np.ndarray, docs: int, df: int, avgdl: float) -> np.ndarray:
    """BM25 of one term for the postings `rows` (the same operations, in the same
    order, as `score`)."""
    tf = rows["tf"].astype(np.float64)
    dl = rows["dl"].astype(np.float64)
    norm = K1 * (1.0 - B + B * dl / avgdl)
    out: np.ndarray = idf(docs, df) * (tf * (K1 + 1.0)) / (tf + norm)
    return out


def _max_score(e: Engine, words: list[str], mtypes: tuple[MemoryType, ...], limit: int,
               collect: Any) -> tuple[list[tuple[bytes, Memory]], dict[str, float]] | None:
    """Exact top-`limit` without reading every posting (MaxScore): a term adds less
    than idf * (k1 + 1) to any score, so once the memories holding the rarest terms
    are scored completely (their other terms read by point lookups, each posting
    being addressable by term and id) and the `limit`-th accepted one scores at least
    the sum of those bounds over the terms not scanned, no memory holding none of the
    scanned terms can rank above it. Returns None when the bound never allows it
    (`score` then reads every posting)."""
    docs, length = lexical.decode_totals(e.storage.get(lexical.TOTALS_KEY))
    dfs = dict(zip(words, (lexical.decode_count(raw) for raw in e.storage.multi_get([lexical.df_key(w) for w in words]))))
    rarest = sorted((df, w) for w, df in dfs.items() if df)
    if not docs or len(rarest) < 2:
        return None
    avgdl = length / docs
    scanned: dict[str, np.ndarray] = {}
    budget = _POINT_READS
    for i, (_, word) in enumerate(rarest[:-1]):
        rows = _postings(e, word)
        scanned[word] = rows[np.isin(rows["type"], [int(t) for t in mtypes])] if mtypes else rows
        rest = [w for _, w in rarest[i + 1:]]
        ids = np.unique(np.concatenate([r["id"] for r in scanned.values()]))
        if not len(ids):
            continue
        if len(ids) * len(rest) > budget:
            return None  # the candidates only grow: scoring every posting costs less from here
        budget -= len(ids) * len(rest)
        raw_ids = [bytes(x).ljust(16, b"\x00") for x in ids.tolist()]
        scores = np.zeros(len(ids), dtype=np.float64)
        for word in words:  # term order, as `score` adds them
            if word in scanned:
                rows = scanned[word]
            elif word in rest:
                prefix = lexical.term_prefix(word)
                rows = np.frombuffer(b"".join(v for v in e.storage.multi_get([prefix + r for r in raw_ids]) if v is not None),
                                     dtype=POSTING_DTYPE)
            else:
                continue
            if len(rows):
                scores[np.searchsorted(ids, rows["id"])] += _contribution(rows, docs, dfs[word], avgdl)
        out, relevance = collect(ids, scores)
        bound = math.fsum(idf(docs, dfs[w]) * (K1 + 1.0) for w in rest)
        if len(out) == limit and relevance[out[-1][1].id] > bound * (1.0 + 1e-9):
            return out, relevance
    return None


def _ranked_chunks(ids: np.ndarray, scores: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(ids, scores, group starts) in chunks of whole tie groups, relevance
    descending then id ascending; a chunk's ties are ordered by salience later.

    Only the best candidates are sorted first (`_FIRST_RANKED`, then four times more
    each round): a round takes every candidate scoring at least its last one's
    score, so ties never straddle two rounds."""
    remaining = np.arange(len(ids))  # `ids` ascend, and so do these positions
    take = _FIRST_RANKED
    while len(remaining):
        negative = -scores[remaining]
        if len(remaining) > take:
            bound = np.partition(negative, take - 1)[take - 1]
            inside = negative <= bound
            batch, remaining = remaining[inside], remaining[~inside]
            negative = negative[inside]
        else:
            batch, remaining = remaining, remaining[:0]
        batch = batch[np.argsort(negative, kind="stable")]  # ties keep id order
        take *= 4
        yield from _chunks(ids[batch], scores[batch])


def _chunks(ids: np.ndarray, scores: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    starts = np.flatnonzero(np.r_[True, scores[1:] != scores[:-1]]) if len(scores) else np.empty(0, dtype=np.intp)
    bounds = [*starts.tolist(), len(ids)]
    at = 0
    while at < len(bounds) - 1:
        end = at + 1
        while end < len(bounds) - 1 and bounds[end] - bounds[at] < _CHUNK:
            end += 1
        lo, hi = bounds[at], bounds[end]
        yield ids[lo:hi], scores[lo:hi], np.asarray(bounds[at:end]) - lo
        at = end


def _collect(e: Engine, ids: np.ndarray, scores: np.ndarray, now: int, tags: tuple[str, ...], predicate: Predicate | None,
             limit: int | None, budget: int | None, form: str, scope: SignedScope | None,
             include_superseded: bool) -> tuple[list[tuple[bytes, Memory]], dict[str, float]]:
    """Read the ranked candidates chunk by chunk until the limit or the budget is met."""
    out: list[tuple[bytes, Memory]] = []
    relevance: dict[str, float] = {}
    used = 0
    weights = e.weights()
    for chunk_ids, chunk_scores, starts in _ranked_chunks(ids, scores):
        raw_ids = [bytes(i).ljust(16, b"\x00") for i in chunk_ids.tolist()]
        keys = head_keys(raw_ids)
        heads = [None if raw is None else unpack_head(key, raw) for key, raw in zip(keys, e.storage.multi_get(keys))]
        entry_keys = [b"" if h is None else by_type.key(h[H_TYPE], h[H_CREATED], raw_id) for h, raw_id in zip(heads, raw_ids)]
        values = e.storage.multi_get([k for k in entry_keys if k])
        found = iter(values)
        stored = [None if not k else next(found) for k in entry_keys]
        present = [i for i, v in enumerate(stored) if v is not None and heads[i] is not None]
        rows = entry.decode_many([stored[i] for i in present])  # type: ignore[misc]
        salience = np.full(len(raw_ids), -1.0)
        flags = np.zeros(len(raw_ids), dtype=np.int64)
        if present:
            pinned = (rows["flags"] & entry.FLAG_PINNED) != 0
            salience[present] = live_scores(rows["last_used"], rows["access"], rows["citations"], rows["importance"], pinned, now, weights)
            flags[present] = rows["flags"]
        bounds = [*starts.tolist(), len(raw_ids)]
        for lo, hi in zip(bounds, bounds[1:]):
            group = sorted(range(lo, hi), key=lambda i: (-salience[i], raw_ids[i]))
            for i in group:
                head = heads[i]
                if head is None or salience[i] < 0 or head[H_TOMBSTONE] is not None:
                    continue
                if head[H_EXPIRES] and head[H_EXPIRES] <= now:
                    continue
                if not include_superseded and flags[i] & FLAG_SUPERSEDED:
                    continue
                memory = Memory.stored(raw_ids[i], head)
                if any(tag not in memory.tags for tag in tags):
                    continue
                if scope is not None and not scope.scope.admits(raw_ids[i], int(memory.type), memory.tags, memory_frames(memory.frames)):
                    continue
                if predicate is not None and not predicate(memory.data):
                    continue
                tokens = int(memory.tokens[form])
                if budget is not None and out and used + tokens > budget:
                    return out, relevance
                out.append((raw_ids[i], memory))
                relevance[memory.id] = float(chunk_scores[i])
                used += tokens
                if limit is not None and len(out) >= limit:
                    return out, relevance
    return out, relevance


