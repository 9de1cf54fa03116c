"""`find()`: bounded queries over one type or a set of tags (docs/data-model.md).

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
* `session`: only memories whose provenance names this trace session
  (`cortex.provenance`; the session index `idx/session` is then the plan, and a
  session alone is selective enough: no type or tag is needed).
* `order_by`: "salience" (live score with the store's weights and the pinned
  floor, descending), "created" (oldest first) or "-created" (newest first); ties
  by id ascending. With a session, "sequence" gives the trace order (sequence,
  then id, ascending).
* `budget_tokens`: the result is the longest prefix of the ordered matches whose
  tokens (in `form`, default medium) fit, and at least one memory, as in
  `context()`. With `limit` too, at most `limit` memories.
* Tombstoned memories are left out unless `include_tombstoned=True`. Expiry does
  not apply: `find()` sees every stored memory.
* Superseded memories (a live `supersedes` edge points at them from a live memory:
  `cortex.edges`) are left out unless `include_superseded=True`.
* `late_binding=True` counts an access of every returned memory (journaled, so the
  root changes): the only `find()` that writes.
* `scope`: a `cortex.SignedScope` (docs/scopes.md), verified first; memories outside
  it are left out silently, and so is their work: the candidates come from the
  scope's own members, so a query costs the same whether out-of-scope memories
  match it or none do. A memory superseded only by out-of-scope memories is not
  stale under the scope. With a budget cap in the scope, `budget_tokens=None` means
  the cap and more than the cap raises `BudgetExceeded`.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

import numpy as np

from .engine import Engine
from .errors import TooBroad, Unbounded, ValidationError, shown
from .forms import FORM_NAMES
from .index import by_tag, by_type, entry
from .index import session as by_session
from .memory import Memory
from .model import (
    DATA_CLASSES,
    MAX_LIST_ITEMS,
    Int,
    MemoryData,
    MemoryType,
    Number,
    OneOf,
    Rule,
    Text,
    When,
    check_int,
    check_tags,
    check_text,
    to_micros,
)
from .provenance import MAX_SESSION_BYTES
from .salience.score import live_scores
from .records import FLAG_SUPERSEDED, head_keys, unpack_head
from . import scoped
from .scope import SignedScope, check_signed, memory_frames
from .scoped import Granted
from .writes import touch

ORDERS = ("salience", "created", "-created", "sequence")
MAX_WHERE_DEPTH = 32
_CHUNK = 256
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "lt": operator.lt, "lte": operator.le, "gt": operator.gt, "gte": operator.ge,
}

Predicate = Callable[[MemoryData], bool]



def check_bounds(limit: int | None, budget_tokens: int | None, form: str | None) -> str:
    """The rules every bounded query keeps (`find`, `find(near=...)`): a limit or a
    budget, each at least 1, and a known form; returns the form (medium by default)."""
    if limit is None and budget_tokens is None:
        raise Unbounded("find", "give a limit or a budget_tokens")
    if limit is not None:
        check_int("limit", limit, lo=1, hi=2**31)
    if budget_tokens is not None:
        check_int("budget_tokens", budget_tokens, lo=1, hi=2**31)
    form = form or "medium"
    if form not in FORM_NAMES:
        raise ValidationError("form", f"must be one of {', '.join(FORM_NAMES)}", form)
    return form

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


# The field rules whose values have an order (numbers, text, times): the only fields
# lt, lte, gt and gte may compare.
_ORDERED_RULES = (Text, OneOf, Number, Int, When)

FieldRules = Mapping[str, Sequence[Rule[Any]]]


def field_rules(classes: Iterable[type[MemoryData]]) -> dict[str, list[Rule[Any]]]:
    """Each data field name of `classes` -> the rules that check it on a write (one per
    class that has the field). A data class declares every field with
    `cortex.model.rule()`, which keeps the field's `Rule` in the field's metadata."""
    rules: dict[str, list[Rule[Any]]] = {}
    for cls in classes:
        for f in fields(cls):  # type: ignore[arg-type]
            rules.setdefault(f.name, []).extend(v for v in f.metadata.values() if isinstance(v, Rule))
    return rules


def _where_value(op: str, name: str, value: object, rules: Sequence[Rule[Any]]) -> object:
    """`value` checked as a write of the field `name` would check it, and normalised
    (a list to a tuple, a number to a float, a datetime to UTC). A field that several
    types share may hold a value any of their rules accepts; None (eq, ne) stands for
    an absent optional field."""
    if op in _COMPARE:
        rules = [r for r in rules if isinstance(r, _ORDERED_RULES)]
        if not rules:
            raise ValidationError(f"where.{name}", f"{op!r} compares numbers, text and times; {name} holds a list, a mapping or a flag", value)
    elif value is None:
        return None
    first: ValidationError | None = None
    for rule in rules:
        try:
            return rule.check(f"where.{name}", value)
        except ValidationError as exc:
            first = first or exc
    assert first is not None, f"field {name} has no rule"
    raise first


def compile_where(where: object, rules: FieldRules, depth: int = 0) -> Predicate | None:
    """Validate a `where` clause and turn it into a predicate on data values.

    `rules` maps each field the query may name to its write rules (`field_rules`):
    every value is checked against them as a write would check it, so a NaN, a 10 MB
    string, a number past 2**53, a value of the wrong type, or an order comparison on a
    list field raises `ValidationError` instead of matching nothing.
    """
    if where is None:
        return None
    if depth > MAX_WHERE_DEPTH:
        raise ValidationError("where", f"nests deeper than {MAX_WHERE_DEPTH} levels", where)
    if isinstance(where, Mapping):
        return compile_where(("and", *[("eq", k, v) for k, v in where.items()]), rules, depth + 1)
    if not isinstance(where, (tuple, list)) or not where or not isinstance(where[0], str):
        raise ValidationError("where", "must be (op, field, value), ('and'|'or', p, ...), ('not', p) or a dict", where)
    op, *args = where
    if op in ("and", "or"):
        if not args:
            raise ValidationError("where", f"{shown(op)} needs at least one predicate", where)
        parts = [compile_where(a, rules, depth + 1) for a in args]
        combine = all if op == "and" else any
        return lambda data: combine(p(data) for p in parts)  # type: ignore[misc]
    if op == "not":
        if len(args) != 1:
            raise ValidationError("where", "'not' takes one predicate", where)
        inner = compile_where(args[0], rules, depth + 1)
        return lambda data: not inner(data)  # type: ignore[misc]
    if op not in ("eq", "ne", "in", *_COMPARE):
        raise ValidationError("where", f"unknown operator {shown(op)}; operators: eq, ne, lt, lte, gt, gte, in, and, or, not", where)
    if len(args) != 2 or not isinstance(args[0], str):
        raise ValidationError("where", f"{shown(op)} takes a field name and a value", where)
    name, value = args
    if name not in rules:
        raise ValidationError("where", f"unknown field {shown(name)}; the fields are {', '.join(rules)}", where)
    missing = object()
    if op == "in":
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise ValidationError("where", "'in' takes a list of values", where)
        items = list(itertools.islice(value, MAX_LIST_ITEMS + 1))
        if len(items) > MAX_LIST_ITEMS:
            raise ValidationError(f"where.{name}", f"'in' takes at most {MAX_LIST_ITEMS} values", where)
        choices = [_where_value("eq", name, item, rules[name]) for item in items]
        return lambda data: (v := getattr(data, name, missing)) is not missing and v in choices
    checked = _where_value(op, name, value, rules[name])
    if op == "eq":
        return lambda data: getattr(data, name, missing) == checked
    if op == "ne":
        return lambda data: (v := getattr(data, name, missing)) is not missing and v != checked
    compare = _COMPARE[op]
    return lambda data: (v := getattr(data, name, missing)) is not missing and _orderable(v, checked) and compare(v, checked)


def find(e: Engine, *, type: Any, tags: Iterable[str], where: Any, order_by: str, limit: int | None, budget_tokens: int | None, form: str | None, include_tombstoned: bool, scope: Any, late_binding: bool, include_superseded: bool = False,
         session: str | None = None) -> list[Memory]:
    e.check_open()
    mtype = _memory_type(type)
    tag_list = check_tags(tags)
    if session is not None:
        check_text("session", session, required=True, max_bytes=MAX_SESSION_BYTES)
    if mtype is None and not tag_list and session is None:
        raise TooBroad("find", "name a type, a session or at least one tag")
    form = check_bounds(limit, budget_tokens, form)
    if order_by not in ORDERS:
        raise ValidationError("order_by", f"must be one of {', '.join(ORDERS)}", order_by)
    if order_by == "sequence" and session is None:
        raise ValidationError("order_by", "'sequence' orders the memories of one session: give a session", order_by)
    if not isinstance(include_tombstoned, bool) or not isinstance(late_binding, bool):
        raise ValidationError("include_tombstoned" if not isinstance(include_tombstoned, bool) else "late_binding", "must be a bool")
    if not isinstance(include_superseded, bool):
        raise ValidationError("include_superseded", "must be a bool", include_superseded)
    signed = None if scope is None else check_signed(scope)
    classes = [DATA_CLASSES[mtype]] if mtype else list(DATA_CLASSES.values())
    predicate = compile_where(where, field_rules(classes))
    if late_binding:
        e.check_writable()

    def read(granted: Granted | None) -> list[tuple[bytes, Memory]]:
        now = to_micros(e.now())
        budget = budget_tokens
        if granted is None:
            rows = _candidates(e, mtype, tag_list, include_tombstoned, session)
            if not include_superseded:
                rows = rows[(rows["flags"] & FLAG_SUPERSEDED) == 0]
        else:
            budget = granted.budget(0 if budget is None else budget) or None
            rows = _scoped_candidates(e, granted, mtype, tag_list, include_tombstoned, include_superseded, session)
        if granted is None and e.mode == "r" and e.storage.live_reads:
            e.view_state()  # refuses while an import or migration writes the store
        if order_by == "salience":
            scores = live_scores(rows["last_used"], rows["access"], rows["citations"], rows["importance"], (rows["flags"] & entry.FLAG_PINNED) != 0, now, e.weights())
            order = np.lexsort((rows["id_lo"], rows["id_hi"], -scores))
        elif order_by == "sequence":
            order = np.arange(len(rows))  # the session index's key order: sequence, then id
        else:
            created = rows["created"].astype(np.int64)
            order = np.lexsort((rows["id_lo"], rows["id_hi"], created if order_by == "created" else -created))
        return _collect(e, rows[order], tag_list, predicate, limit, budget, entry.TOKEN_FIELDS[form], signed, session)

    results = scoped.read(e, signed, read)
    if late_binding and results:
        touch(e, [r[0] for r in results])
    return [memory for _, memory in results]


def _candidates(e: Engine, mtype: MemoryType | None, tags: tuple[str, ...], include_tombstoned: bool,
                session: str | None = None) -> np.ndarray:
    if session is not None:
        rows = entry.scan_rows(e.storage, by_session.prefix(session), None)
        for tag in tags:
            bucket = entry.scan_rows(e.storage, by_tag.prefix(tag), by_tag.key_of(by_tag.prefix(tag)))
            ids = set(zip(bucket["id_hi"].tolist(), bucket["id_lo"].tolist()))
            rows = rows[np.fromiter(((h, l) in ids for h, l in zip(rows["id_hi"].tolist(), rows["id_lo"].tolist())), dtype=bool, count=len(rows))]
        if mtype is not None:
            rows = rows[rows["type"] == int(mtype)]
    elif tags:
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


def _scoped_candidates(e: Engine, granted: Granted, mtype: MemoryType | None, tags: tuple[str, ...], include_tombstoned: bool,
                       include_superseded: bool, session: str | None = None) -> np.ndarray:
    """The candidate rows under a scope, taken from the scope's own members (never
    from a tag bucket, a session or a type index of the whole store: its size would
    tell how many out-of-scope memories match). A tag is tested by a point read of
    its bucket key per in-scope row, a session on the in-scope heads (then in the
    session's order: sequence, id); a memory is superseded only by an in-scope memory."""
    rows = granted.members()
    if mtype is not None:
        rows = rows[rows["type"] == int(mtype)]
    if not include_tombstoned:
        rows = rows[(rows["flags"] & entry.FLAG_TOMBSTONED) == 0]
    for tag in tags:
        if not len(rows):
            break
        keys = [by_tag.key(tag, created, raw_id) for created, raw_id in zip(rows["created"].tolist(), entry.ids_of(rows))]
        rows = rows[np.fromiter((v is not None for v in e.storage.multi_get(keys)), dtype=bool, count=len(keys))]
    if not include_superseded:
        flagged = np.flatnonzero((rows["flags"] & FLAG_SUPERSEDED) != 0)
        if len(flagged):
            ids = entry.ids_of(rows[flagged])
            stale = granted.stale(ids)
            keep = np.ones(len(rows), dtype=bool)
            keep[flagged] = [raw_id not in stale for raw_id in ids]
            rows = rows[keep]
    if session is not None and len(rows):
        ids = entry.ids_of(rows)
        keys = head_keys(ids)
        order: list[tuple[int, bytes, int]] = []
        for row, (raw_id, key, raw) in enumerate(zip(ids, keys, e.storage.multi_get(keys))):
            if raw is not None:
                memory = Memory.stored(raw_id, unpack_head(key, raw))
                if memory.session == session:
                    order.append((memory.sequence or 0, raw_id, row))
        rows = rows[[row for _, _, row in sorted(order)]]
    return rows


def _collect(e: Engine, rows: np.ndarray, tags: tuple[str, ...], predicate: Predicate | None, limit: int | None, budget: int | None,
             token_field: str, scope: SignedScope | None = None, session: str | None = None) -> list[tuple[bytes, Memory]]:
    """Read candidates in order, chunk by chunk, until the limit or the budget is met
    (with a scope, only memories whose head it admits)."""
    out: list[tuple[bytes, Memory]] = []
    used = 0
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        ids = entry.ids_of(chunk)
        keys = head_keys(ids)
        for raw_id, key, raw, tokens in zip(ids, keys, e.storage.multi_get(keys), chunk[token_field].tolist()):
            if raw is None:
                continue
            memory = Memory.stored(raw_id, unpack_head(key, raw))
            if any(tag not in memory.tags for tag in tags):
                continue  # another tag with the same 64-bit hash
            if session is not None and memory.session != session:
                continue  # another session with the same 128-bit hash
            if scope is not None and not scope.scope.admits(raw_id, int(memory.type), memory.tags, memory_frames(memory.frames)):
                continue
            if predicate is not None and not predicate(memory.data):
                continue
            if budget is not None and out and used + tokens > budget:
                return out
            out.append((raw_id, memory))
            used += tokens
            if limit is not None and len(out) >= limit:
                return out
    return out
