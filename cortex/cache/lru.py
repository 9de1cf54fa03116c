"""The eviction rule of a handle's caches, in one place: least recently used first,
within a budget.

`HotFrames` counts rows, `NewestEvents` entries, `JoinedCalls` bytes and rows: each states
the size of what it keeps, and `SizedLru` keeps the total within the budget. It has
no lock of its own: every cache calls it under its own lock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class SizedLru(Generic[K, V]):
    """Values by key, each counted at the size its caller states; `total` is their
    sum, kept at most `budget` by dropping the least recently used."""

    __slots__ = ("budget", "total", "_items")

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.total = 0
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        """The keys, least recently used first."""
        return iter(self._items)

    def get(self, key: K, touch: bool = True) -> V | None:
        """The value under `key` (None when absent), made the most recently used
        unless `touch` is False."""
        found = self._items.get(key)
        if found is None:
            return None
        if touch:
            self._items.move_to_end(key)
        return found[0]

    def put(self, key: K, value: V, size: int) -> None:
        """Keep `value` under `key` as the most recently used, counted at `size` (what
        was under `key` goes), then drop the least recently used while `total` is over
        the budget: this one too, when it alone is over."""
        self.pop(key)
        self._items[key] = (value, size)
        self.total += size
        while self.total > self.budget and self._items:
            _, (_, gone) = self._items.popitem(last=False)
            self.total -= gone

    def pop(self, key: K) -> V | None:
        """Drop what is under `key`, and return it (None when absent)."""
        found = self._items.pop(key, None)
        if found is None:
            return None
        self.total -= found[1]
        return found[0]

    def clear(self) -> None:
        self._items.clear()
        self.total = 0
