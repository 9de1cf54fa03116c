"""`JoinedCalls`: what `context()` made of the blocks of its recent calls (the joined
candidates, their tiers and which copies of an id go), keyed by the blocks
themselves: the one cache of joined results.

A call on the same objects as an earlier one, in the same view, gets the same
blocks: the very `Columns` objects the hot-frame cache returned (a cached prefix
gets a new object at every change) and the same index values of the outcomes tier.
Joining them again gives the same rows, so a call whose key is here takes them from
here. The key holds its blocks, so no object id is reused while an entry stands.
Values are never changed once kept (the caller makes their arrays read-only).

Two pools. Calls of fewer than `Tuning.joined_below_rows` candidates are kept
within `Tuning.joined_bytes`, least recently used first. A larger call (a hot
frame's, joined lazily: `cortex.columns`) is kept under its frame prefix, one call
a prefix (the last), within `Tuning.joined_frame_rows`: in one pool, at 10M
memories, the ten hot frames' entries (7.7 MB counted each) pushed out one another
and every small call's, and both kinds of call came out slower. A written batch
that touches a frame prefix drops what is kept under it (its columns are new).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ..storage import Storage
from ..tuning import DEFAULT_TUNING, Tuning
from .hot import frame_prefix_of
from .lru import SizedLru

Key = tuple[object, ...]


class JoinedCalls:
    """The joined candidates of recent calls (see the module docstring)."""

    def __init__(self, tuning: Tuning = DEFAULT_TUNING, max_bytes: int | None = None) -> None:
        self.max_bytes = tuning.joined_bytes if max_bytes is None else max_bytes
        self._calls: SizedLru[Key, object] = SizedLru(self.max_bytes)
        self._framed: SizedLru[bytes, tuple[Key, object]] = SizedLru(tuning.joined_frame_rows)  # counted in rows
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """The calls kept in the pool of small calls."""
        return len(self._calls)

    def framed(self, prefix: bytes) -> tuple[Key, object] | None:
        """The (key, value) kept under a frame prefix, if any."""
        with self._lock:
            return self._framed.get(prefix, touch=False)

    def framed_count(self) -> int:
        """The frame prefixes a large call's join is kept under."""
        return len(self._framed)

    def get(self, key: Key, prefix: bytes | None = None) -> object | None:
        """What a call on the blocks in `key` made of them, if kept (under the frame
        `prefix` for a large call)."""
        with self._lock:
            if prefix is None:
                return self._calls.get(key)
            found = self._framed.get(prefix)
            return None if found is None or found[0] != key else found[1]

    def put(self, key: Key, value: object, size: int, prefix: bytes | None = None) -> None:
        """Keep `value` under `key`, counting `size` bytes, dropping the least recently
        used entries while over the budget; or (a large call) as the one call kept
        under the frame `prefix`, counting `size` rows."""
        with self._lock:
            if prefix is not None:
                self._framed.put(prefix, (key, value), size)
            elif size <= self.max_bytes:
                self._calls.put(key, value, size)

    def observe(self, puts: Mapping[bytes, bytes | None]) -> None:
        """Drop what large calls kept under the frame prefixes a written batch changes."""
        if not self._framed:
            return
        with self._lock:
            for key in puts:
                prefix = frame_prefix_of(key)
                if prefix is not None:
                    self._framed.pop(prefix)

    def drop(self) -> None:
        with self._lock:
            self._calls.clear()
            self._framed.clear()

    def verify(self, storage: Storage) -> list[tuple[bytes, str]]:
        """Nothing to compare: a key holds the very blocks it was joined from."""
        return []
