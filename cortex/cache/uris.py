"""`UriMemo`: URIs by (type code, id, version), made once: hot objects trim the same
memories call after call, and a URI never changes for its (type, id, version), so
nothing a write does can make one stale."""

from __future__ import annotations

from typing import cast

from ..ids import format_uris


class UriMemo:
    """A plain dict, emptied when full: its lookups and updates need no lock (a
    race costs a URI made twice, never a wrong one)."""

    __slots__ = ("max_size", "_uris")

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._uris: dict[tuple[int, bytes, int], str] = {}

    def __len__(self) -> int:
        return len(self._uris)

    def uris(self, types: list[int], raw_ids: list[bytes], versions: list[int]) -> list[str]:
        """The URIs of memories named by columns: those made before, the rest made in one batch."""
        kept = self._uris
        keys = list(zip(types, raw_ids, versions))
        found = [kept.get(k) for k in keys]
        missing = [k for k, uri in zip(keys, found) if uri is None]
        if not missing:
            return cast("list[str]", found)
        made = dict(zip(missing, format_uris([t for t, _, _ in missing], [i for _, i, _ in missing], [v for _, _, v in missing])))
        if len(kept) + len(made) > self.max_size:
            kept.clear()
        kept.update(made)
        return [made[k] if uri is None else uri for k, uri in zip(keys, found)]
