"""Interop: moving memory between cortex and other systems (docs/interop.md).

One module per format, each a set of plain functions over public objects (a
`cortex.Bundle`, a store handle, plain dicts); the `Bundle` and `Cortex` methods
of the same names delegate to them:

* `hmx_pack`: an HMX-1.0 Context Pack (HMX-C, seed 000) from a bundle (and the
  edges between its memories, read from the store with `hmx_pack.edges_among`);
* `context_pack`: SecondBrain's ContextPackV2 (seed 002) from a bundle;
* `ledger`: the replay record of one `context()` call, with its snapshot hash;
* `hmx_events`: HMX-1.0 events (HMX-E, seed 001) ingested as memories;
* `fingerprint`: HMX-1.0 fingerprints (HMX-F, seed 003), export and import;
* `canonical`: the canonical JSON and SHA-256 rules all of them hash with;
* `memory_json`: one memory as JSON (CLI and MCP); `jsonl`: the full export.

Interop sits below the facade in the package's layering (pyproject.toml): these
modules import the lower modules they use (model, memory, writes, errors), never
the `cortex` package itself. The store side is typed with `InteropStore`, the few
methods of `cortex.Cortex` these modules call, so that interop depends on the
handle's shape and never imports the module that implements it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..model import Edge
    from ..memory import Memory
    from ..model import EdgeType
    from ..salience.score import Weights
    from ..writes import Write
    from ..context import Form
    from ..scope import SignedScope
    from ..view import DataType, Order, Where


class InteropStore(Protocol):
    """The methods of `cortex.Cortex` the interop modules call."""

    def write_many(self, items: Iterable[Write]) -> list[str]: ...

    def find(self, type: DataType | Sequence[DataType] | None = None, tags: Iterable[str] = (), where: Where | None = None,
             order_by: Order = "salience", limit: int | None = None, budget_tokens: int | None = None,
             form: Form | None = None, include_tombstoned: bool = False, scope: SignedScope | None = None,
             late_binding: bool = False, include_superseded: bool = False, session: str | None = None) -> list[Memory]: ...

    def memories(self, include_tombstoned: bool = False) -> Iterator[Memory]: ...

    def stats(self) -> dict[str, Any]: ...

    def resolve_latest(self, id: str) -> Memory: ...

    def weights(self) -> Weights: ...

    def root(self) -> str: ...

    def edges(self, uri: str, direction: str = "out", types: Iterable[EdgeType | str] | None = None,
              include_tombstoned: bool = False) -> list[Edge]: ...

    def learn_params(self) -> dict[str, Any] | None: ...

    def trusted_keys(self) -> dict[str, bytes]: ...
