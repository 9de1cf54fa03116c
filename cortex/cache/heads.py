"""Views of memories a handle keeps: `ViewCache` (views by the exact head bytes they
were built from) and `CurrentHeads` (views of the heads in the current view, by key).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

from ..errors import CorruptRecord
from ..memory import Memory
from ..records import HEAD_PREFIX, unpack_head
from ..storage import Storage


class ViewCache:
    """Views of current heads, keyed by (head key, stored head bytes).

    The pinned tier (identity, hard constraints, active goals) is in every
    `context()`, and hot objects bring back the same memories call after call:
    decoding, checking and rendering them again is most of a warm call. A view is
    immutable and keyed by the exact bytes it was built from, so a hit can never be
    stale: any change to a memory changes its head bytes. At most `size` views are
    kept; the oldest go first.
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        # An OrderedDict, not a dict: a dict finds its oldest key by stepping over the
        # slots its evictions left empty, 3.9 µs a put once full against 0.25 µs.
        self._views: OrderedDict[tuple[bytes, bytes], Memory] = OrderedDict()
        self._lock = threading.Lock()  # readers share a handle: one evicts at a time

    def view(self, key: bytes, raw: bytes, id_text: str | None = None) -> Memory:
        """The view of the head stored under `key` as `raw` (`CorruptRecord` if bad);
        `id_text` as in `Memory.stored`."""
        memory = self._views.get((key, raw))
        if memory is None:
            memory = Memory.stored(key[len(HEAD_PREFIX):], unpack_head(key, raw), id_text=id_text)
            with self._lock:
                if len(self._views) >= self.size:
                    self._views.popitem(last=False)
                self._views[(key, raw)] = memory
        return memory


# Views of current heads a handle keeps per MB of its `cache_mb` (`CurrentHeads`).
VIEWS_PER_CACHE_MB = 32


class CurrentHeads:
    """Views of the heads in a handle's current view, keyed by head key alone: a
    warm `context()` takes its survivors from here and reads storage only for the
    others (the survivors' multi-get was an eighth of a median call).

    The invariant, stated once: a key held here maps to the view of the head stored
    under it in the handle's current view. It holds because every batch a handle
    writes passes through `observe()` (`Engine.write`), and a follower's view moves
    only in `Engine.refresh()`, which calls `drop()` unless the writer has only
    added memories since (new heads, under keys not held here). Backends whose
    reads see other processes' commits without a refresh (PostgreSQL) get none:
    the engine makes none for them. At most `size` views are kept; the oldest go
    first.

    How many: `for_cache(cache_mb)` keeps `VIEWS_PER_CACHE_MB` views per MB of the
    handle's `cache_mb` (32,768 at the default 1024). The benchmark's query mix of
    1,000 calls reads 19,000 distinct heads at 1M memories and 25,000 at 10M. With
    8,192 views, its second pass on the same handle took p50 1.10-1.18 ms at 1M and
    1.32-1.71 at 10M; with all of them kept, 0.60-0.62 and 0.75-0.77. A view with
    its decoded fields holds ~2.6 KB, so a full cache holds about 85 MB at the
    default (8% of `cache_mb`).
    """

    @classmethod
    def for_cache(cls, cache_mb: int) -> CurrentHeads:
        return cls(cache_mb * VIEWS_PER_CACHE_MB)

    def __init__(self, size: int) -> None:
        self.size = size
        self._views: OrderedDict[bytes, Memory] = OrderedDict()  # as in ViewCache
        self._lock = threading.Lock()  # readers share a handle: one evicts at a time

    def __len__(self) -> int:
        return len(self._views)

    def get_many(self, keys: list[bytes]) -> list[Memory | None]:
        """The view of each key (None where there is none)."""
        get = self._views.get
        return [get(key) for key in keys]

    def put(self, key: bytes, memory: Memory) -> None:
        with self._lock:
            if len(self._views) >= self.size:
                self._views.popitem(last=False)
            self._views[key] = memory

    def items(self) -> list[tuple[bytes, Memory]]:
        with self._lock:
            return list(self._views.items())

    def observe(self, puts: Mapping[bytes, bytes | None]) -> None:
        """Drop the views of any head keys a batch being written puts or deletes."""
        if not self._views:
            return
        with self._lock:
            for key in puts:
                if key.startswith(HEAD_PREFIX):
                    self._views.pop(key, None)

    def drop(self) -> None:
        with self._lock:
            self._views.clear()

    def verify(self, storage: Storage) -> list[tuple[bytes, str]]:
        """Each head key whose view differs from the head stored under it."""
        problems = []
        for key, memory in self.items():
            raw = storage.get(key)
            try:
                stored = None if raw is None else Memory.stored(key[len(HEAD_PREFIX):], unpack_head(key, raw))
            except CorruptRecord:  # the record checks name it
                stored = None
            if stored != memory:
                problems.append((key, "this handle's view of the head differs from the stored head"))
        return problems
