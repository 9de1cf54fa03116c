"""The caches a handle keeps beside its store, apart from the indexes they speed up.

Each cache that mirrors stored keys follows one small interface (`Cache`): it
`observe`s every batch the handle writes (`Engine.write` is the only way a batch
reaches storage), is dropped when the view moves in a way it cannot follow
(`drop`), and can be compared with storage (`verify`, which `Cortex.verify()`
runs). `Caches` holds one handle's caches and is the only one the Engine talks to:

* `hot.HotFrames`: the decoded columns of hot frame prefixes and the pinned tier;
* `newest.NewestEvents`: the newest entries under outcomes-tier prefixes;
* `joined.JoinedCalls`: what recent `context()` calls joined of their blocks;
* `heads.CurrentHeads`: views of the current heads, by key;

and two that need no invalidation, being keyed by what they are made from:
`heads.ViewCache` (views by head bytes) and `uris.UriMemo` (URIs by type, id and
version). Backends whose reads see other processes' commits without a refresh
(PostgreSQL) get none of the mirroring caches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from ..storage import Storage
from ..tuning import Tuning
from .heads import CurrentHeads, ViewCache
from .hot import HotFrames
from .joined import JoinedCalls
from .newest import NewestEvents
from .uris import UriMemo

__all__ = ["Cache", "Caches", "CurrentHeads", "HotFrames", "JoinedCalls", "NewestEvents", "UriMemo", "ViewCache"]


class Cache(Protocol):
    """A cache that mirrors stored keys (see the module docstring)."""

    def observe(self, puts: Mapping[bytes, bytes | None]) -> None:
        """Follow a batch this handle wrote (key -> new value, None: deleted)."""
        ...

    def drop(self) -> None:
        """Forget everything (the view moved in a way the cache cannot follow)."""
        ...

    def verify(self, storage: Storage) -> list[tuple[bytes, str]]:
        """The keys whose cached state differs from `storage`'s current view, each
        with what differs."""
        ...


class Caches:
    """One handle's caches (see the module docstring). The mirroring ones are None
    where reads can see other processes' commits without a refresh (`live_reads`)."""

    def __init__(self, live_reads: bool, cache_mb: int, tuning: Tuning) -> None:
        self.views = ViewCache()
        self.uris = UriMemo(tuning.uris_max)
        self.hot: HotFrames | None = None if live_reads else HotFrames()
        self.newest: NewestEvents | None = None if live_reads else NewestEvents()
        self.joins: JoinedCalls | None = None if live_reads else JoinedCalls(tuning)
        self.heads: CurrentHeads | None = None if live_reads else CurrentHeads.for_cache(cache_mb)

    def mirroring(self) -> list[Cache]:
        """The caches that mirror stored keys, in a fixed order."""
        return [c for c in (self.hot, self.newest, self.joins, self.heads) if c is not None]

    def observe(self, puts: Mapping[bytes, bytes | None]) -> None:
        for cache in self.mirroring():
            cache.observe(puts)

    def drop(self) -> None:
        for cache in self.mirroring():
            cache.drop()

    def verify(self, storage: Storage) -> list[tuple[bytes, str]]:
        return [problem for cache in self.mirroring() for problem in cache.verify(storage)]
