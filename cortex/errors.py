"""The error hierarchy: every error cortex raises on purpose is a `CortexError`.

Input errors name the field and the rule that was broken, and are raised before
anything is written, so a rejected call leaves the store (and its root) unchanged.
"""

from __future__ import annotations

import reprlib

_SHOW = reprlib.Repr()
_SHOW.maxlevel = 3
_SHOW.maxstring = 80
_SHOW.maxother = 80


def shown(value: object) -> str:
    """A short repr of a user-supplied value for an error message: bounded in length
    and depth, and never failing (a cyclic, huge or hostile value included)."""
    try:
        return _SHOW.repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


class CortexError(Exception):
    """Base class of every error cortex raises on purpose."""


class ValidationError(CortexError, ValueError):
    """An argument broke a rule. `field` names the argument, `rule` says what it must be."""

    def __init__(self, field: str, rule: str, value: object = None) -> None:
        self.field = field
        self.rule = rule
        self.value = value
        super().__init__(f"{field}: {rule}")


class InvalidVerb(ValidationError):
    """A verb name outside the closed set of `Verb`."""


class InvalidObjKind(ValidationError):
    """An object kind name outside the closed set of `ObjKind`."""


class EmptyObjRef(ValidationError):
    """An object reference that is empty."""


class NoTiersIncluded(ValidationError):
    """`context(include_tiers=...)` named no tier."""


class BadURI(ValidationError):
    """A string that is not `cortex://<Type>/<ULID>#<version>`."""


class TypeMismatch(ValidationError):
    """`update()` with data of another type than the memory's."""


class NotFound(CortexError, LookupError):
    """No memory (or no such version) under that id."""


class MemoryTombstoned(CortexError):
    """The memory is tombstoned and can no longer change."""


class StoreLocked(CortexError):
    """Another writer holds the store's lock."""


class ActorMismatch(CortexError):
    """The store belongs to another actor than the one given to `open()`."""


class ReadOnlyStore(CortexError):
    """A write on a store opened with `mode="r"`."""


class StoreError(CortexError, OSError):
    """The storage backend could not open or use the store (the message says why)."""


class NotAStore(StoreError):
    """`open()` of a folder that holds other things than a cortex store."""


class StoreClosed(CortexError):
    """A call on a store after `close()`."""


class CorruptRecord(CortexError):
    """A stored record failed to decode. `key` is the raw key that holds it."""

    def __init__(self, key: bytes, detail: str) -> None:
        self.key = key
        self.detail = detail
        super().__init__(f"corrupt record at key {key!r}: {detail}")


__all__ = [
    "CortexError",
    "ValidationError",
    "InvalidVerb",
    "InvalidObjKind",
    "EmptyObjRef",
    "NoTiersIncluded",
    "BadURI",
    "TypeMismatch",
    "NotFound",
    "MemoryTombstoned",
    "StoreLocked",
    "ActorMismatch",
    "ReadOnlyStore",
    "StoreError",
    "NotAStore",
    "StoreClosed",
    "CorruptRecord",
]


class Unbounded(ValidationError):
    """`find()` without a limit or a token budget."""


class TooBroad(ValidationError):
    """`find()` without a type or a tag to plan from."""


__all__ += ["Unbounded", "TooBroad"]
