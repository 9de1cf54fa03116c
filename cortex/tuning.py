"""`Tuning`: the thresholds of the read path, in one frozen value held by the Engine.

Each field chooses between two ways of computing the same thing (or how much a
cache keeps): none changes an answer. `cortex.open(..., tuning=Tuning(...))` sets
them for a handle; the tests set them to reach every path on small stores, where
the defaults would take only the paths of a small call. The defaults are the
values measured best on the benchmark's stores (see benchmarks/RESULTS.md).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .errors import ValidationError

# The trim's reachable list holds at most this many URIs (README: `reachable_uris`).
MAX_REACHABLE_URIS = 64


@dataclass(frozen=True, slots=True)
class Tuning:
    """The read path's thresholds (see the module docstring).

    `first_ranked`: how many of the best rows the trim ranks first; it ranks four
    times more while the budget and the reachable list need more.
    `reachable_uris`: the most dropped memories a bundle lists in `reachable_uris`.
    `sort_dedup_rows`: up to this many candidates, dedup sorts them all by id; above
    it, it searches the blocks in one another (which scales better).
    `bounded_from`: a frame-tier part of at least this many rows (a hot frame's
    cached columns) may be scored importance by importance (the bounded ranking).
    `group_rows`: what opening one importance group costs, in rows scored and ranked
    at once (the bounded ranking is chosen only where it costs less).
    `always_bound`: use the bounded ranking wherever it applies, not only where it
    costs less (tests reach it on small stores: the bundle is the same).
    `joined_below_rows`: calls of fewer candidates keep what they joined in the
    handle's byte-budgeted pool; larger ones keep it per frame prefix.
    `joined_bytes`: that pool's budget, in bytes as `row_bytes` counts them.
    `joined_frame_rows`: the per-frame-prefix pool's budget, in rows.
    `row_bytes`: what a kept candidate row counts (its joined copy of 14 columns,
    its tier and pinned flag, and the cached row its key keeps alive).
    `uris_max`: the most URIs the handle keeps made (hot objects trim the same
    memories call after call).
    """

    first_ranked: int = 256
    reachable_uris: int = MAX_REACHABLE_URIS
    sort_dedup_rows: int = 2048
    bounded_from: int = 16384
    group_rows: int = 8192
    always_bound: bool = False
    joined_below_rows: int = 4096
    joined_bytes: int = 64 << 20
    joined_frame_rows: int = 1_000_000
    row_bytes: int = 128
    uris_max: int = 1 << 16

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "always_bound":
                if not isinstance(value, bool):
                    raise ValidationError(f"tuning.{f.name}", "must be a bool", value)
            elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValidationError(f"tuning.{f.name}", "must be a non-negative integer", value)
        if self.first_ranked < 1:
            raise ValidationError("tuning.first_ranked", "must be at least 1", self.first_ranked)


DEFAULT_TUNING = Tuning()
