"""Shapes the layers above share without importing one another: what the bundle
formats read of a `context()` bundle, and the types of `find()`'s arguments.

The interop formats (`cortex.interop.hmx_pack`, `context_pack`, `ledger`) build
their documents from a bundle; `Bundle`'s export methods hand the bundle to them.
So that neither side imports the other, the formats type against `BundleView` (the
read-only shape of `cortex.context.Bundle`), and `Bundle` calls them through the
`Exporters` that `cortex.facade` registers here when the package is imported (the
facade sits above both, so it may import both). Importing `cortex` always imports
the facade, so a bundle always finds them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol

from .memory import Memory
from .model import Edge, MemoryData, MemoryType
from .salience.score import Weights

# A `find()` predicate on data fields (`cortex.query`): `(op, field, value)`,
# `("and" | "or", predicate, ...)`, `("not", predicate)`, or a dict of field -> value.
Where = tuple[object, ...] | list[object] | Mapping[str, object]
# How `find()` orders what it returns (`cortex.query`).
Order = Literal["salience", "created", "-created", "sequence"]
# A memory type as `find(type=...)` takes it: a `MemoryType`, a data class such as
# `cortex.Goal`, or a type name (with `near=`, also a list of them: `cortex.recall`).
DataType = MemoryType | type[MemoryData] | str


class BundleView(Protocol):
    """A `context()` bundle as the formats read it (`cortex.context.Bundle` has
    every field; its docstring says what each holds)."""

    @property
    def pinned(self) -> list[Memory]: ...
    @property
    def frame_relevant(self) -> list[Memory]: ...
    @property
    def outcomes(self) -> list[Memory]: ...
    @property
    def rendered(self) -> dict[str, str]: ...
    @property
    def tokens(self) -> Mapping[str, int]: ...
    @property
    def scores(self) -> Mapping[str, float]: ...
    @property
    def reachable_uris(self) -> list[str]: ...
    @property
    def total_tokens(self) -> int: ...
    @property
    def trimmed(self) -> int: ...
    @property
    def candidates(self) -> int: ...
    @property
    def latency_ms(self) -> float: ...
    @property
    def form(self) -> str: ...
    @property
    def root(self) -> str: ...
    @property
    def request(self) -> Mapping[str, Any]: ...
    @property
    def dropped_ids(self) -> Sequence[str]: ...
    @property
    def weights(self) -> Weights: ...
    @property
    def now(self) -> datetime | None: ...
    @property
    def conflicts(self) -> list[tuple[str, str]]: ...
    @property
    def superseded_ids(self) -> Sequence[str]: ...
    @property
    def superseded_uris(self) -> Sequence[str]: ...
    @property
    def superseded_scores(self) -> Mapping[str, float]: ...
    @property
    def superseded_tokens(self) -> Mapping[str, int]: ...

    def memories(self) -> list[Memory]:
        """Every survivor: pinned, then outcomes, then frame-relevant."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Every field but `latency_ms`, JSON-ready."""
        ...


class Exporters(Protocol):
    """The formats a bundle exports to (`Bundle.to_hmx_pack`, `to_context_pack`, `ledger`)."""

    def hmx_pack(self, bundle: BundleView, query_context: str | Mapping[str, Any] | None, edges: Iterable[Edge],
                 sections: Sequence[str] | None = None) -> dict[str, Any]:
        """The HMX-1.0 Context Pack of `bundle` (`cortex.interop.hmx_pack.build`), only
        the sections named when `sections` is given."""
        ...

    def context_pack(self, bundle: BundleView, intent: str) -> dict[str, Any]:
        """The ContextPackV2 of `bundle` (`cortex.interop.context_pack.build`)."""
        ...

    def ledger(self, bundle: BundleView) -> dict[str, Any]:
        """The replay record of the call that made `bundle` (`cortex.interop.ledger.build`)."""
        ...


_registered: list[Exporters] = []


def register(exporters: Exporters) -> None:
    """Set the formats bundles export to (`cortex.facade` does, on import)."""
    _registered[:] = [exporters]


def exporters() -> Exporters:
    """The formats bundles export to."""
    if not _registered:
        raise RuntimeError("no bundle exporters: import cortex, whose facade registers them")
    return _registered[0]
