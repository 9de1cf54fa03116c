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


# Interop (cortex.interop): refusals of foreign or exported data.


class MalformedEvent(ValidationError):
    """An HMX event broke a rule: `line` says which event (1-based), `field` which field."""

    def __init__(self, line: int, field: str, rule: str, value: object = None) -> None:
        super().__init__(field, rule, value)
        self.line = line
        self.args = (f"line {line}: {field}: {rule}",)


class UnsupportedHMXVersion(MalformedEvent):
    """An HMX event of a major version this reader does not support."""


class FingerprintIntegrityError(ValidationError):
    """A fingerprint envelope whose `fingerprint_hash` or `integrity_hash` does not match its content."""


class ImportRefused(ValidationError):
    """An export file that cannot be imported (`field` names its line)."""


__all__ += ["MalformedEvent", "UnsupportedHMXVersion", "FingerprintIntegrityError", "ImportRefused"]


class ScopeInvalid(ValidationError):
    """A scope that cannot be used: malformed, not signed under a key the store
    trusts now, or issued for another store (docs/scopes.md). Nothing is returned."""


class ScopeRevoked(ScopeInvalid):
    """A scope revoked with `Cortex.revoke()`."""


class ScopeExpired(ScopeInvalid):
    """A scope used at or after its `expires_at`."""


class BudgetExceeded(ValidationError):
    """A scoped call asked for more tokens than the scope's cap."""


__all__ += ["ScopeInvalid", "ScopeRevoked", "ScopeExpired", "BudgetExceeded"]


class InvalidEdgeType(ValidationError):
    """An edge type name outside the closed set of `EdgeType`."""


class SelfEdge(ValidationError):
    """`link()` of a memory to itself."""


class SupersedesCycle(ValidationError):
    """`link(a, "supersedes", b)` where `b` already supersedes `a`, directly or through
    other memories: a memory cannot end up superseding itself."""


__all__ += ["InvalidEdgeType", "SelfEdge", "SupersedesCycle"]


# The name cortex is published under on the package index (the import name is
# `cortex`; the index's `cortex` is an unrelated project). Every install hint uses it.
DISTRIBUTION = "cortex-memory-engine"


def install_hint(extra: str) -> str:
    """The command that installs an optional part of cortex: `pip install '<dist>[extra]'`."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


class MissingExtra(CortexError, ImportError):
    """An optional part of cortex needs a package that is not installed. The message
    names the part, the missing module and the extra that brings it."""

    def __init__(self, part: str, module: str, extra: str) -> None:
        self.part = part
        self.module = module.partition(".")[0]  # the package to install, not its submodule
        self.extra = extra
        super().__init__(f"{part} needs the {self.module!r} package, which is not installed: {install_hint(extra)}")


__all__ += ["MissingExtra"]


class NotReplayed(StoreError):
    """`refresh(until=token)` timed out: the store this handle reads (a standby, a
    follower) had not yet applied the write the token names."""


__all__ += ["NotReplayed"]
