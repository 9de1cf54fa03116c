"""`CortexStore`: a LangGraph `BaseStore` over a cortex store.

    from cortex.integrations.langgraph import CortexStore, namespace_ref

    store = CortexStore("agent-store", actor="agent-ops-1")       # or CortexStore(open_cortex)
    store.put(("users", "alice"), "food", {"likes": "pizza", "since": 2021})
    store.get(("users", "alice"), "food").value                    # {"likes": "pizza", "since": 2021}
    store.search(("users",), filter={"since": {"$gte": 2020}})
    graph = builder.compile(store=store)                           # LangGraph nodes get it as `store`

    # the same items, as memories an agent's context() finds:
    c.context(verb="find", objects={"knowledge": namespace_ref(("users", "alice"))})

The store behaves like LangGraph's own stores (`InMemoryStore`, `SqliteStore`,
`PostgresStore`): `batch` and `abatch`, hence get / put / delete / search /
list_namespaces and their async forms. What it chooses where they differ:

**Items as memories.** Each item is one `Fact`:

* `statement`: the value as JSON (keys in the value's order, non-ASCII kept), so
  `context()` renders `key(namespace/path)={...}`;
* `subject`: the namespace path, labels joined by "/" (a label's "%" and "/" written
  as %25 and %2F, so the path is unambiguous); `predicate`: the key (an empty or
  blank key shown JSON-quoted);
* `object`: a JSON envelope with the exact namespace, key and TTL, and `created_at`
  when the item is older than this memory; `source`: "langgraph".

The item's `updated_at` is the memory's `created_at` (the time of the put, on the
store's clock), and its `created_at` that of the key's first put; a TTL refresh, which
rewrites the memory, keeps both (the original `updated_at` then goes in `as_of`).

It carries the frame `Frame("find", "knowledge", namespace_ref(namespace))` (the path
itself when it fits a ref's 256 bytes, else its first bytes + "#" + a hash), so
`context(verb="find", objects={"knowledge": namespace_ref(ns)})` returns the items of
that namespace, and these tags (each within 64 characters): "lg:store" (every item),
`item_tag(ns, key)` ("lg:item:" + 128-bit hash of namespace and key: a get finds its
item through this tag's index, never by scanning), and `namespace_tag(prefix)`
("lg:ns:" + hash) for each prefix of the namespace down to depth 14 (searches and
listings read only the items under their prefix; deeper prefixes read the depth-14
bucket and check the rest).

**Writes.** A put writes a new memory and then tombstones the key's previous one; a
delete tombstones it (history stays resolvable). `created_at` is kept from the item
being replaced (as `PostgresStore` does; the in-memory and SQLite stores reset it),
`updated_at` is the time of the put; every put of a batch has the same time. A crash
between the write and the tombstone leaves two live memories for a key: reads take
the newest (highest id) and the next put or delete of the key retires both.

**Sizes.** The value's JSON, the namespace path and the key are each at most 16 KiB
of UTF-8 (cortex's text limit), and the envelope (namespace and key as JSON, plus
about 80 bytes) too; a larger one raises `cortex.ValidationError` naming `value`,
`namespace` or `key`. Values must be JSON: dicts with string keys, lists, strings,
finite floats, ints, booleans and None, nested at most 200 deep; anything else
(a tuple, a datetime, NaN) raises `ValidationError` naming its path
(`value["a"][0]`), since it could not come back as it went in.

**Search.** Filters follow `InMemoryStore`'s rules: a plain value matches by JSON
equality (a boolean is not a number; a missing field reads as None), a nested dict
matches key by key (extra keys in the item allowed), a list matches a list of the same
length element by element, and `{"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": v}` compare;
the four orderings compare numbers with numbers and strings with strings, and a field
that is missing or of another type does not match (`InMemoryStore` raises there).
Filter keys name top-level fields (a dot is part of the name, as in the in-memory and
Postgres stores). Results are newest first by `updated_at`, ties by namespace then
key; `offset` and `limit` apply after the filter. A `query` ranks the filtered items
by content (`cortex.integrations.recall_rank`, docs/recall.md): BM25 relevance
descending (the item's `score`; 0.0 for an item sharing no word with the query), ties
newest first; a query with no word to search for (only stop words) keeps the order,
every score 0.0. Without a query `score` is None. A search reads every item under its
namespace prefix.

**Namespaces.** LangGraph's label rules (non-empty strings without "."; a put's
namespace is non-empty and does not start with "langgraph"), checked for ops passed to
`batch` directly too. `list_namespaces` lists namespaces holding live items (as the
SQL stores do), in tuple order, with prefix/suffix conditions ("*" matches one label),
`max_depth`, `limit` and `offset`.

**TTL.** `supports_ttl` is True. A put's `ttl` (minutes, > 0) sets the memory's
`expires_at` (after which `context()` leaves it out too); an expired item is absent
from every read at once (as with `TTLConfig(omit_expired=True)`), and `sweep_ttl()`
tombstones expired items. A get or search with `refresh_ttl` (the default unless
`TTLConfig(refresh_on_read=False)`) moves the expiry of the items it returns to
now + their TTL; cortex cannot change a memory's expiry in place, so a refresh
rewrites the item as a new memory with the same value and timestamps. `TTLConfig`'s
`default_ttl` applies to puts without a `ttl`.

**Batches.** As LangGraph's: every read of a batch sees the store as it was before the
batch, and puts (and deletes) of the same key are deduplicated, the last one winning.
All new memories of a batch are written in one atomic `write_many`. A bad op anywhere
in a batch raises before anything is read or written. Batches run one at a time per
`CortexStore`; `abatch` runs the batch in a worker thread.

Over a store opened with `mode="r"` every read first catches up with the writer,
TTLs are not refreshed, and writes raise `cortex.ReadOnlyStore`.

Length: over the ~600 lines a module keeps to, on purpose: one BaseStore adapter:
LangGraph's operations mapped one by one onto cortex calls, with the item encoding they
share.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from cortex.errors import MissingExtra

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        validate_op_namespace,
    )
except ModuleNotFoundError as _missing:  # one line naming the extra, not a traceback
    raise MissingExtra("cortex.integrations.langgraph", _missing.name or "langgraph", "langgraph") from None

import cortex

from .recall_rank import relevance

__all__ = [
    "CortexStore",
    "namespace_path",
    "namespace_ref",
    "namespace_frame",
    "item_tag",
    "namespace_tag",
    "STORE_TAG",
    "FRAME_VERB",
    "FRAME_KIND",
    "MAX_JSON_BYTES",
    "TAGGED_DEPTH",
]

STORE_TAG = "lg:store"
ITEM_TAG_PREFIX = "lg:item:"
NAMESPACE_TAG_PREFIX = "lg:ns:"
SOURCE = "langgraph"
FRAME_VERB = "find"
FRAME_KIND = "knowledge"
MAX_JSON_BYTES = 16 * 1024
"""The most UTF-8 bytes a value's JSON, a namespace path or a key may take (cortex's text limit)."""
TAGGED_DEPTH = 14
"""Namespace prefixes down to this depth get a tag of their own (16 tags a memory, two taken)."""
MAX_VALUE_DEPTH = 200
_MAX_REF_BYTES = 256
_LOOKUP_LIMIT = 16  # live memories of one key: one, or two after a crash mid-put
_SCAN_LIMIT = 2**31  # find() needs a bound; a scan wants everything under its tag


# ---------------------------------------------------------------------------
# The mapping of namespaces and keys onto frames and tags


def namespace_path(namespace: Sequence[str]) -> str:
    """The namespace as a path: labels joined by "/", with "%" and "/" inside a label
    written as %25 and %2F (unambiguous, and readable for ordinary labels)."""
    return "/".join(label.replace("%", "%25").replace("/", "%2F") for label in namespace)


def namespace_ref(namespace: Sequence[str]) -> str:
    """The object ref of the frame a namespace's items carry: `namespace_path()` when it
    fits a ref's 256 UTF-8 bytes, else its first bytes, "#" and a 128-bit hash."""
    path = namespace_path(namespace)
    raw = path.encode("utf-8", "surrogatepass")
    if len(raw) <= _MAX_REF_BYTES:
        return path
    digest = _hash(list(namespace))
    head = raw[: _MAX_REF_BYTES - 1 - len(digest)].decode("utf-8", "ignore")
    return f"{head}#{digest}"


def namespace_frame(namespace: Sequence[str]) -> cortex.Frame:
    """The frame every item of `namespace` is indexed under."""
    return cortex.Frame(FRAME_VERB, FRAME_KIND, namespace_ref(namespace))


def item_tag(namespace: Sequence[str], key: str) -> str:
    """The tag that finds one item's memory: "lg:item:" + a hash of namespace and key."""
    return ITEM_TAG_PREFIX + _hash([list(namespace), key])


def namespace_tag(prefix: Sequence[str]) -> str:
    """The tag carried by every item whose namespace starts with `prefix` (non-empty,
    at most `TAGGED_DEPTH` labels)."""
    return NAMESPACE_TAG_PREFIX + _hash(list(prefix))


def _hash(obj: object) -> str:
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _tags(namespace: tuple[str, ...], key: str) -> list[str]:
    return [STORE_TAG, item_tag(namespace, key), *(namespace_tag(namespace[:i]) for i in range(1, min(len(namespace), TAGGED_DEPTH) + 1))]


def _scan_tag(prefix: tuple[str, ...]) -> str:
    return namespace_tag(prefix[:TAGGED_DEPTH]) if prefix else STORE_TAG


# ---------------------------------------------------------------------------
# Values


def _encode_value(value: object) -> str:
    """A put's value as canonical JSON text, after checking that it is plain JSON."""
    if not isinstance(value, Mapping):
        raise cortex.ValidationError("value", f"must be a dict (or None to delete), not {type(value).__name__}", value)
    value = dict(value)
    _check_json(value, "value", 0)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:  # an int too long to print (sys.set_int_max_str_digits)
        raise cortex.ValidationError("value", f"cannot be written as JSON: {exc}") from None
    size = len(text.encode("utf-8"))
    if size > MAX_JSON_BYTES:
        raise cortex.ValidationError("value", f"must encode to at most {MAX_JSON_BYTES} bytes of JSON (got {size})")
    return text


def _check_json(value: object, path: str, depth: int) -> None:
    if depth > MAX_VALUE_DEPTH:
        raise cortex.ValidationError(path, f"nests deeper than {MAX_VALUE_DEPTH} levels")
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, str):
        _check_unicode(path, value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise cortex.ValidationError(path, "must be a finite number (JSON has no NaN or infinity)", value)
    elif isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise cortex.ValidationError(path, f"must have string keys, not {type(k).__name__} ({k!r})", value)
            _check_unicode(path, k)
            _check_json(v, f"{path}[{json.dumps(k, ensure_ascii=False)}]", depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_json(v, f"{path}[{i}]", depth + 1)
    else:
        raise cortex.ValidationError(
            path, f"must be a JSON value (dict, list, str, int, float, bool or None), not {type(value).__name__}", value)


def _check_unicode(field: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise cortex.ValidationError(field, "must be valid Unicode (no lone surrogates)", text) from None


def _check_size(field: str, text: str, what: str) -> None:
    size = len(text.encode("utf-8"))
    if size > MAX_JSON_BYTES:
        raise cortex.ValidationError(field, f"{what} must take at most {MAX_JSON_BYTES} bytes of UTF-8 (got {size})")


# ---------------------------------------------------------------------------
# Filters (InMemoryStore's rules; see the module docstring)

_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def _check_filter(flt: object) -> None:
    """A filter is a dict of top-level field names to expected values (see `_compare`)."""
    if flt is None:
        return
    if not isinstance(flt, Mapping):
        raise cortex.ValidationError("filter", f"must be a dict or None, not {type(flt).__name__}", flt)
    for key, expected in flt.items():
        if not isinstance(key, str):
            raise cortex.ValidationError("filter", f"must have string keys, not {type(key).__name__}", flt)
        _check_expected(f"filter[{key!r}]", expected)


def _check_expected(path: str, expected: object) -> None:
    if isinstance(expected, Mapping):
        operators = any(isinstance(k, str) and k.startswith("$") for k in expected)
        for key, inner in expected.items():
            if not isinstance(key, str):
                raise cortex.ValidationError(path, f"must have string keys, not {type(key).__name__}", expected)
            if operators and key not in _OPERATORS:
                raise cortex.ValidationError(f"{path}[{key!r}]", f"unknown operator; operators are {', '.join(_OPERATORS)} (and not mixed with fields)", inner)
            if not operators:
                _check_expected(f"{path}[{key!r}]", inner)
    elif isinstance(expected, (list, tuple)):
        for i, inner in enumerate(expected):
            _check_expected(f"{path}[{i}]", inner)


def _matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    return not flt or all(_compare(value.get(key), expected) for key, expected in flt.items())


def _compare(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(k.startswith("$") for k in expected):
            return all(_apply(op, actual, operand) for op, operand in expected.items())
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return (isinstance(actual, list) and len(actual) == len(expected)
                and all(_compare(a, e) for a, e in zip(actual, expected)))
    return _json_equal(actual, expected)


def _apply(op: str, actual: Any, operand: Any) -> bool:
    if op == "$eq":
        return _json_equal(actual, operand)
    if op == "$ne":
        return not _json_equal(actual, operand)
    if _is_number(actual) and _is_number(operand) or isinstance(actual, str) and isinstance(operand, str):
        if op == "$gt":
            return bool(actual > operand)
        if op == "$gte":
            return bool(actual >= operand)
        if op == "$lt":
            return bool(actual < operand)
        return bool(actual <= operand)
    return False


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: booleans equal only booleans; 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (Mapping, list, tuple)) or isinstance(b, (Mapping, list, tuple)):
        return False
    return bool(a == b)


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    labels = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == label for p, label in zip(path, labels))


# ---------------------------------------------------------------------------
# Stored items


@dataclass(frozen=True, slots=True)
class _Stored:
    """One item as read from its memory."""

    namespace: tuple[str, ...]
    key: str
    value_json: str
    created_at: datetime
    updated_at: datetime
    ttl: float | None
    memory: cortex.Memory

    def expired(self, now: datetime) -> bool:
        expires = self.memory.expires_at
        return expires is not None and expires <= now

    def item(self) -> Item:
        return Item(value=json.loads(self.value_json), key=self.key, namespace=self.namespace,
                    created_at=self.created_at, updated_at=self.updated_at)

    def search_item(self, score: float | None = None) -> SearchItem:
        return SearchItem(self.namespace, self.key, json.loads(self.value_json), self.created_at, self.updated_at, score)


def _decode(memory: cortex.Memory) -> _Stored | None:
    """The item a memory holds; None for a memory `CortexStore` did not write."""
    data = memory.data
    if not isinstance(data, cortex.Fact) or data.source != SOURCE or data.object is None:
        return None
    try:
        envelope = json.loads(data.object)
        namespace = envelope["namespace"]
        key = envelope["key"]
        created = envelope["created_at"]
        ttl = envelope["ttl"]
        created_at = memory.created_at if created is None else datetime.fromisoformat(created)
    except (ValueError, KeyError, TypeError):
        return None
    if not (isinstance(namespace, list) and all(isinstance(label, str) for label in namespace) and isinstance(key, str)
            and (ttl is None or _is_number(ttl))):
        return None
    return _Stored(tuple(namespace), key, data.statement, created_at, data.as_of or memory.created_at, ttl, memory)


def _newest(versions: Iterable[_Stored]) -> _Stored | None:
    return max(versions, key=lambda s: s.memory.id, default=None)


@dataclass(frozen=True, slots=True)
class _Put:
    """A validated put or delete: `value_json` None deletes."""

    namespace: tuple[str, ...]
    key: str
    value_json: str | None
    ttl: float | None


# ---------------------------------------------------------------------------
# The store


class CortexStore(BaseStore):
    """A LangGraph `BaseStore` whose items are memories of a cortex store.

    `store` is an open `cortex.Cortex` (the caller keeps owning it) or a path (opened
    with `actor`, created if missing, and closed by `close()`; without `actor` the
    store must exist and its own actor is used). `ttl` is LangGraph's
    `TTLConfig` (`default_ttl`, `refresh_on_read`). `clock` returns an aware UTC
    datetime (default: the system clock); it times TTL expiry, so give the cortex
    store's clock if you gave it one, and `context()` agrees on what has expired. See the module docstring for the mapping.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        store: cortex.Cortex | str | os.PathLike[str],
        *,
        actor: str | None = None,
        ttl: TTLConfig | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if clock is not None and not callable(clock):
            raise cortex.ValidationError("clock", "must be a callable returning an aware datetime", clock)
        self._clock: Callable[[], datetime] = clock or (lambda: datetime.now(timezone.utc))
        if ttl is not None and not isinstance(ttl, Mapping):
            raise cortex.ValidationError("ttl", "must be a TTLConfig dict or None", ttl)
        self.ttl_config = ttl
        if ttl is not None and ttl.get("default_ttl") is not None:
            _check_ttl("ttl.default_ttl", ttl.get("default_ttl"))
        if isinstance(store, cortex.Cortex):
            if actor is not None and actor != store.actor:
                raise cortex.ActorMismatch(f"the store belongs to actor {store.actor!r}, not {actor!r}")
            self._c, self._owned = store, False
        elif isinstance(store, (str, os.PathLike)):
            if actor is None:
                try:
                    actor = cortex.store_actor(store)
                except cortex.NotFound:
                    raise cortex.ValidationError("actor", f"is required to create a new store at {os.fspath(store)!r}") from None
            self._c, self._owned = cortex.open(store, actor=actor, clock=clock), True
        else:
            raise cortex.ValidationError("store", f"must be an open cortex.Cortex or a path, not {type(store).__name__}", store)
        self._lock = threading.Lock()

    @property
    def cortex(self) -> cortex.Cortex:
        """The cortex store underneath."""
        return self._c

    def close(self) -> None:
        """Close the cortex store if this `CortexStore` opened it (from a path)."""
        if self._owned:
            self._c.close()

    def __enter__(self) -> CortexStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- BaseStore -------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run a batch of ops; one result per op, in order (see the module docstring)."""
        ops = list(ops)
        puts = self._validate(ops)
        with self._lock:
            return self._run(ops, puts)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread, so the event loop keeps running."""
        return await asyncio.to_thread(self.batch, list(ops))

    def sweep_ttl(self) -> int:
        """Tombstone every expired item's memory; return how many items that was."""
        with self._lock:
            now = self._now()
            expired: dict[tuple[tuple[str, ...], str], list[_Stored]] = {}
            for s in self._versions_under(()):
                expired.setdefault((s.namespace, s.key), []).append(s)
            count = 0
            for versions in expired.values():
                newest = _newest(versions)
                if newest is not None and newest.expired(now):
                    for s in versions:
                        self._c.tombstone(s.memory.uri, "langgraph: expired")
                    count += 1
            return count

    # -- validation -----------------------------------------------------------------

    def _validate(self, ops: list[Op]) -> dict[tuple[tuple[str, ...], str], _Put]:
        """Check every op before anything runs; the batch's puts, deduplicated, last wins."""
        puts: dict[tuple[tuple[str, ...], str], _Put] = {}
        for i, op in enumerate(ops):
            if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
                raise cortex.ValidationError(f"ops[{i}]", f"must be a GetOp, PutOp, SearchOp or ListNamespacesOp, not {type(op).__name__}", op)
            _check_namespace_type(op)
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                _check_key(op.key)
            elif isinstance(op, SearchOp):
                _check_filter(op.filter)
                _check_count("limit", op.limit)
                _check_count("offset", op.offset)
            elif isinstance(op, ListNamespacesOp):
                for condition in op.match_conditions or ():
                    if condition.match_type not in ("prefix", "suffix"):
                        raise cortex.ValidationError("match_type", 'must be "prefix" or "suffix"', condition.match_type)
                if op.max_depth is not None:
                    _check_count("max_depth", op.max_depth, lo=1)
                _check_count("limit", op.limit)
                _check_count("offset", op.offset)
            else:
                put = _validate_put(op)
                puts.pop((put.namespace, put.key), None)
                puts[(put.namespace, put.key)] = put
        return puts

    # -- running a batch ---------------------------------------------------------------

    def _run(self, ops: list[Op], puts: dict[tuple[tuple[str, ...], str], _Put]) -> list[Result]:
        if self._c.mode == "r":
            self._c.refresh()
        now = self._now()
        results: list[Result] = []
        refresh: dict[tuple[tuple[str, ...], str], _Stored] = {}
        scans: dict[tuple[str, ...], list[_Stored]] = {}  # reads see one state: scan each prefix once

        def current_under(prefix: tuple[str, ...]) -> list[_Stored]:
            if prefix not in scans:
                scans[prefix] = self._current_under(prefix, now)
            return scans[prefix]

        for op in ops:
            if isinstance(op, GetOp):
                found = self._current(tuple(op.namespace), op.key, now)
                results.append(found.item() if found else None)
                if found is not None and op.refresh_ttl:
                    refresh[(found.namespace, found.key)] = found
            elif isinstance(op, SearchOp):
                page, scores = self._search(op, current_under(tuple(op.namespace_prefix)))
                results.append([s.search_item(scores.get(s.memory.id)) for s in page])
                if op.refresh_ttl:
                    refresh.update({(s.namespace, s.key): s for s in page})
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op, current_under))
            else:
                results.append(None)
        refresh = {k: s for k, s in refresh.items() if s.ttl is not None and k not in puts}
        if puts or (refresh and self._c.mode == "rw"):
            self._write(puts, refresh, now)
        return results

    def _search(self, op: SearchOp, items: list[_Stored]) -> tuple[list[_Stored], dict[str, float]]:
        """The page of items, and their scores by memory id (with a query: `relevance`)."""
        matched = [s for s in items if _matches(json.loads(s.value_json), op.filter)]
        matched.sort(key=lambda s: (s.namespace, s.key))
        matched.sort(key=lambda s: s.updated_at, reverse=True)  # stable: ties keep namespace, key order
        scores: dict[str, float] = {}
        if op.query is not None and matched:
            scores = relevance(self._c, op.query, _scan_tag(tuple(op.namespace_prefix)), [s.memory for s in matched])
            matched.sort(key=lambda s: -scores[s.memory.id])  # stable: ties stay newest first
        return matched[op.offset: op.offset + op.limit], scores

    def _list_namespaces(self, op: ListNamespacesOp, current_under: Callable[[tuple[str, ...]], list[_Stored]]) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefix: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                labels = tuple(condition.path)
                prefix = labels[: labels.index("*")] if "*" in labels else labels
                break
        namespaces = {s.namespace for s in current_under(prefix)}
        kept = [ns for ns in namespaces if all(_namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            kept = list({ns[: op.max_depth] for ns in kept})
        kept.sort()
        return kept[op.offset: op.offset + op.limit]

    def _write(self, puts: dict[tuple[tuple[str, ...], str], _Put], refresh: dict[tuple[tuple[str, ...], str], _Stored], now: datetime) -> None:
        """Write the batch's new memories atomically, then retire the ones they replace."""
        writes: list[cortex.Write] = []
        retire: list[tuple[str, str]] = []
        for (namespace, key), put in puts.items():
            versions = self._versions(namespace, key)
            current = _newest(versions)
            if current is not None and current.expired(now):
                current = None
            reason = "langgraph: deleted" if put.value_json is None else "langgraph: replaced"
            retire += [(s.memory.uri, reason) for s in versions]
            if put.value_json is not None:
                created = current.created_at if current is not None else None
                writes.append(_memory(namespace, key, put.value_json, created, None, put.ttl, now))
        for s in refresh.values():
            writes.append(_memory(s.namespace, s.key, s.value_json, s.created_at, s.updated_at, s.ttl, now))
            retire.append((s.memory.uri, "langgraph: TTL refreshed"))
        if writes:
            self._c.write_many(writes)
        for uri, reason in retire:
            self._c.tombstone(uri, reason)

    # -- reading items ---------------------------------------------------------------------

    def _versions(self, namespace: tuple[str, ...], key: str) -> list[_Stored]:
        """The live memories of one item (one, or more after a crash mid-put), found
        through the item's tag: a few index reads, whatever the store's size."""
        found = self._c.find(tags=[item_tag(namespace, key)], order_by="-created", limit=_LOOKUP_LIMIT)
        return [s for m in found if (s := _decode(m)) is not None and s.namespace == namespace and s.key == key]

    def _current(self, namespace: tuple[str, ...], key: str, now: datetime) -> _Stored | None:
        newest = _newest(self._versions(namespace, key))
        return None if newest is None or newest.expired(now) else newest

    def _versions_under(self, prefix: tuple[str, ...]) -> list[_Stored]:
        found = self._c.find(tags=[_scan_tag(prefix)], order_by="created", limit=_SCAN_LIMIT)
        return [s for m in found if (s := _decode(m)) is not None and s.namespace[: len(prefix)] == prefix]

    def _current_under(self, prefix: tuple[str, ...], now: datetime) -> list[_Stored]:
        """The current, unexpired item of every key under a namespace prefix."""
        newest: dict[tuple[tuple[str, ...], str], _Stored] = {}
        for s in self._versions_under(prefix):
            seen = newest.get((s.namespace, s.key))
            if seen is None or s.memory.id > seen.memory.id:
                newest[(s.namespace, s.key)] = s
        return [s for s in newest.values() if not s.expired(now)]

    def _now(self) -> datetime:
        now = self._clock()
        if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
            raise cortex.ValidationError("clock()", "must return an aware datetime", now)
        return now.astimezone(timezone.utc)


# ---------------------------------------------------------------------------
# Helpers


def _validate_put(op: PutOp) -> _Put:
    namespace = tuple(op.namespace)
    _check_key(op.key)
    if op.value is None:
        return _Put(namespace, op.key, None, None)
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')
    for label in namespace:
        _check_unicode("namespace", label)
    _check_size("namespace", namespace_path(namespace), "the namespace path")
    _check_size("key", _predicate(op.key), "the key")
    value_json = _encode_value(op.value)
    ttl = _check_ttl("ttl", op.ttl)
    # The envelope at its largest (a created_at is written once the item is replaced).
    _check_size("key", _envelope(namespace, op.key, datetime.now(timezone.utc), ttl), "the namespace and key together (as JSON)")
    return _Put(namespace, op.key, value_json, ttl)


def _check_namespace_type(op: Op) -> None:
    labels = op.namespace_prefix if isinstance(op, SearchOp) else getattr(op, "namespace", ())
    if isinstance(labels, str) or not isinstance(labels, (tuple, list)):
        raise InvalidNamespaceError(f"Namespace must be a tuple of strings, got {type(labels).__name__}: {labels!r}")


def _check_key(key: object) -> None:
    if not isinstance(key, str):
        raise cortex.ValidationError("key", f"must be a string, not {type(key).__name__}", key)
    _check_unicode("key", key)


def _check_ttl(field: str, ttl: object) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise cortex.ValidationError(field, "must be None or a number of minutes above 0", ttl)
    return float(ttl)


def _check_count(field: str, value: object, lo: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise cortex.ValidationError(field, f"must be an integer of at least {lo}", value)


def _predicate(key: str) -> str:
    return key if key.strip() else json.dumps(key)


def _envelope(namespace: tuple[str, ...], key: str, created: datetime | None, ttl: float | None) -> str:
    """The item's identity and metadata; `created` None: the memory's own `created_at`."""
    created_text = None if created is None else created.astimezone(timezone.utc).isoformat(timespec="microseconds")
    return json.dumps({"namespace": list(namespace), "key": key, "created_at": created_text, "ttl": ttl},
                      ensure_ascii=False, separators=(",", ":"))


def _memory(namespace: tuple[str, ...], key: str, value_json: str, created: datetime | None, updated: datetime | None,
            ttl: float | None, now: datetime) -> cortex.Write:
    """The memory that holds one item (see the module docstring for the mapping).
    `created` / `updated` None: the time this memory is written."""
    data = cortex.Fact(
        statement=value_json,
        subject=namespace_path(namespace),
        predicate=_predicate(key),
        object=_envelope(namespace, key, created, ttl),
        source=SOURCE,
        as_of=updated,
    )
    expires = now + timedelta(minutes=ttl) if ttl is not None else None
    return cortex.Write(data, frames=(namespace_frame(namespace),), tags=tuple(_tags(namespace, key)),
                        source=SOURCE, expires_at=expires)
