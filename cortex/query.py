"""`find()`: bounded queries over one type or a set of tags (DESIGN §8).

    c.find(type="Goal", where=("eq", "status", "active"), limit=10)
    c.find(tags=["style", "ops"], where=("and", ("gte", "strength", 0.5),
                                         ("not", ("eq", "polarity", "avoid"))),
           budget_tokens=800, form="short")

Plan: with tags, the tag buckets (`idx/tag`) are intersected; otherwise the type
index (`idx/type`) is scanned. Candidates are ordered from the index values alone,
then read in that order, in chunks, until the limit is reached, so a query with a
small limit reads few records. A query must be bounded (`limit` and/or
`budget_tokens`, else `Unbounded`) and selective (`type` and/or `tags`, else
`TooBroad`).

* `where`: a predicate on data fields (nested at most `MAX_WHERE_DEPTH` = 32 deep): `(op, field, value)` with op one of eq, ne,
  lt, lte, gt, gte, in (value a list), or `("and", p, ...)`, `("or", p, ...)`,
  `("not", p)`; a dict `{field: value, ...}` is the `and` of `eq`s. A field that
  no data class (or not the given type) has raises `ValidationError`. A memory
  without the field, or whose value cannot be ordered against the given one (a
  string against a number), does not match.
* `order_by`: "salience" (live score with the store's weights and the pinned
  floor, descending), "created" (oldest first) or "-created" (newest first); ties
  by id ascending.
* `budget_tokens`: the result is the longest prefix of the ordered matches whose
  tokens (in `form`, default medium) fit, and at least one memory, as in
  `context()`. With `limit` too, at most `limit` memories.
* Tombstoned memories are left out unless `include_tombstoned=True`. Expiry does
  not apply: `find()` sees every stored memory.
* `late_binding=True` counts an access of every returned memory (journaled, so the
  root changes): the only `find()` that writes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from datetime import datetime
from typing import Any

import numpy as np

from .engine import Engine
from .errors import TooBroad, Unbounded, ValidationError, shown
from .forms import FORM_NAMES
from .index import by_tag, by_type, entry
from .memory import Memory
from .model import DATA_CLASSES, MemoryData, MemoryType, check_int, check_tags, to_micros
from .salience.score import live_scores
from .records import head_key, unpack
from .writes import touch

ORDERS = ("salience", "created", "-created")
MAX_WHERE_DEPTH = 32
_CHUNK = 256
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "lt": operator.lt, "lte": operator.le, "gt": operator.gt, "gte": operator.ge,
}

Predicate = Callable[[MemoryData], bool]


def _memory_type(value: object) -> MemoryType | None:
    if value is None or isinstance(value, MemoryType):
        return value
    if isinstance(value, type) and issubclass(value, MemoryData) and value in DATA_CLASSES.values():
        return value.TYPE
    if isinstance(value, str):
        member = MemoryType.__members__.get(value.upper())
        if member is not None:
            return member
    raise ValidationError("type", f"must be a MemoryType, a data class or a type name like 'Fact'; got {shown(value)}", value)


def _orderable(a: object, b: object) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    return (isinstance(a, numbers) and isinstance(b, numbers)) or (isinstance(a, str) and isinstance(b, str)) or (isinstance(a, datetime) and isinstance(b, datetime))


def compile_where(where: object, known: set[str], depth: int = 0) -> Predicate | None:
    """Validate a `where` clause and turn it into a predicate on data values."""
    if where is None:
        return None
    if depth > MAX_WHERE_DEPTH:
        raise ValidationError("where", f"nests deeper than {MAX_WHERE_DEPTH} levels", where)
    if isinstance(where, Mapping):
        return compile_where(("and", *[("eq", k, v) for k, v in where.items()]), known, depth + 1)
    if not isinstance(where, (tuple, list)) or not where or not isinstance(where[0], str):
        raise ValidationError("where", "must be (op, field, value), ('and'|'or', p, ...), ('not', p) or a dict", where)
    op, *args = where
    if op in ("and", "or"):
        if not args:
            raise ValidationError("where", f"{shown(op)} needs at least one predicate", where)
        parts = [compile_where(a, known, depth + 1) for a in args]
        combine = all if op == "and" else any
        return lambda data: combine(p(data) for p in parts)  # type: ignore[misc]
    if op == "not":
        if len(args) != 1:
            raise ValidationError("where", "'not' takes one predicate", where)
        inner = compile_where(args[0], known, depth + 1)
        return lambda data: not inner(data)  # type: ignore[misc]
    if op not in ("eq", "ne", "in", *_COMPARE):
        raise ValidationError("where", f"unknown operator {shown(op)}; operators: eq, ne, lt, lte, gt, gte, in, and, or, not", where)
    if len(args) != 2 or not isinstance(args[0], str):
        raise ValidationError("where", f"{shown(op)} takes a field name and a value", where)
    name, value = args
    if name not in known:
        raise ValidationError("where", f"unknown field {shown(name)}", where)
    missing = object()
    if op == "eq":
        return lambda data: getattr(data, name, missing) == value
    if op == "ne":
        return lambda data: (v := getattr(data, name, missing)) is not missing and v != value
    if op == "in":
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise ValidationError("where", "'in' takes a list of values", where)
        choices = list(value)
        return lambda data: (v := getattr(data, name, missing)) is not missing and v in choices
    compare = _COMPARE[op]
    return lambda data: (v := getattr(data, name, missing)) is not missing and _orderable(v, value) and compare(v, value)


def find(e: Engine, *, type: Any, tags: Iterable[str], where: Any, order_by: str, limit: int | None, budget_tokens: int | None, form: str | None, include_tombstoned: bool, scope: Any, late_binding: bool) -> list[Memory]:
    e.check_open()
    mtype = _memory_type(type)
    tag_list = check_tags(tags)
    if mtype is None and not tag_list:
        raise TooBroad("find", "name a type or at least one tag")
    if limit is None and budget_tokens is None:
        raise Unbounded("find", "give a limit or a budget_tokens")
    if limit is not None:
        check_int("limit", limit, lo=1, hi=2**31)
    if budget_tokens is not None:
        check_int("budget_tokens", budget_tokens, lo=1, hi=2**31)
    form = form or "medium"
    if form not in FORM_NAMES:
        raise ValidationError("form", f"must be one of {', '.join(FORM_NAMES)}", form)
    if order_by not in ORDERS:
        raise ValidationError("order_by", f"must be one of {', '.join(ORDERS)}", order_by)
    if not isinstance(include_tombstoned, bool) or not isinstance(late_binding, bool):
        raise ValidationError("include_tombstoned" if not isinstance(include_tombstoned, bool) else "late_binding", "must be a bool")
    if scope is not None:
        raise ValidationError("scope", "scoped find() is not available in this version; pass scope=None", scope)
    classes = [DATA_CLASSES[mtype]] if mtype else list(DATA_CLASSES.values())
    predicate = compile_where(where, {f.name for cls in classes for f in fields(cls)})  # type: ignore[arg-type]
    if late_binding:
        e.check_writable()

    def read() -> list[tuple[bytes, Memory]]:
        now = to_micros(e.now())
        rows = _candidates(e, mtype, tag_list, include_tombstoned)
        if order_by == "salience":
            scores = live_scores(rows["last_used"], rows["access"], rows["citations"], rows["importance"], (rows["flags"] & entry.FLAG_PINNED) != 0, now, e.weights())
            order = np.lexsort((rows["id_lo"], rows["id_hi"], -scores))
        else:
            created = rows["created"].astype(np.int64)
            order = np.lexsort((rows["id_lo"], rows["id_hi"], created if order_by == "created" else -created))
        return _collect(e, rows[order], tag_list, predicate, limit, budget_tokens, entry.TOKEN_FIELDS[form])

    results = e.read(read)
    if late_binding and results:
        touch(e, [r[0] for r in results])
    return [memory for _, memory in results]


def _candidates(e: Engine, mtype: MemoryType | None, tags: tuple[str, ...], include_tombstoned: bool) -> np.ndarray:
    if tags:
        buckets = [entry.scan_rows(e.storage, by_tag.prefix(tag), by_tag.key_of(by_tag.prefix(tag))) for tag in tags]
        rows = buckets[0]
        for other in buckets[1:]:
            ids = set(zip(other["id_hi"].tolist(), other["id_lo"].tolist()))
            rows = rows[np.fromiter(((h, l) in ids for h, l in zip(rows["id_hi"].tolist(), rows["id_lo"].tolist())), dtype=bool, count=len(rows))]
        if mtype is not None:
            rows = rows[rows["type"] == int(mtype)]
    else:
        assert mtype is not None
        rows = entry.scan_rows(e.storage, by_type.prefix(mtype), by_type.key_of)
    if not include_tombstoned:
        rows = rows[(rows["flags"] & entry.FLAG_TOMBSTONED) == 0]
    return rows


def _collect(e: Engine, rows: np.ndarray, tags: tuple[str, ...], predicate: Predicate | None, limit: int | None, budget: int | None, token_field: str) -> list[tuple[bytes, Memory]]:
    """Read candidates in order, chunk by chunk, until the limit or the budget is met."""
    out: list[tuple[bytes, Memory]] = []
    used = 0
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        ids = entry.ids_of(chunk)
        keys = [head_key(i) for i in ids]
        for raw_id, key, raw, tokens in zip(ids, keys, e.storage.multi_get(keys), chunk[token_field].tolist()):
            if raw is None:
                continue
            memory = Memory.stored(raw_id, unpack(key, raw))
            if any(tag not in memory.tags for tag in tags):
                continue  # another tag with the same 64-bit hash
            if predicate is not None and not predicate(memory.data):
                continue
            if budget is not None and out and used + tokens > budget:
                return out
            out.append((raw_id, memory))
            used += tokens
            if limit is not None and len(out) >= limit:
                return out
    return out
