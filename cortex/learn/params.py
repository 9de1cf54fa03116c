"""The learn thresholds: one frozen value, the only place they are set.

Every rule in `cortex.learn.compile` reads its thresholds from a `LearnParams`, and
the fingerprint reports them as its `compiler_state` (docs/learning.md lists what
each one does). `DEFAULT` is what `learn()` uses unless given another.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields

from ..errors import ValidationError


@dataclass(frozen=True, slots=True)
class LearnParams:
    """Thresholds of the five rules (docs/learning.md, "The rules")."""

    # Support of a pattern, in sessions: at least the count and the share of the
    # sessions that have steps (the larger of the two). Below `active_*` but at
    # least `draft_*`, an artifact is a draft.
    active_min_sessions: int = 3
    active_min_share: float = 0.05
    draft_min_sessions: int = 2
    draft_min_share: float = 0.025
    # task_schema: a pattern's steps may be `max_gap` other (frequent) steps apart;
    # patterns of `min_steps` to `max_steps` steps are mined.
    min_steps: int = 2
    max_steps: int = 8
    max_gap: int = 2
    # A mined pattern is reported unless the longer reported patterns containing it
    # hold at least this share of its support (summed): they say more.
    cover_share: float = 0.7
    # An artifact whose confidence falls below this is deprecated.
    deprecate_below: float = 0.25
    # failure_playbook: a preceding step is a trigger condition when it precedes at
    # least this share of the failures.
    trigger_share: float = 0.5
    # causal_pattern: lift at least this, and confidence at least `causal_min_confidence`.
    min_lift: float = 1.5
    causal_min_confidence: float = 0.5
    # pre/postconditions: frames held by at least this share of the supporting sessions.
    condition_share: float = 0.5
    # derived_from edges and URIs kept per artifact (its evidence events, in session order).
    evidence_links: int = 64

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValidationError(f"params.{f.name}", "must be a finite number >= 0", value)
            if f.type == "int" and not isinstance(value, int):
                raise ValidationError(f"params.{f.name}", "must be an integer", value)
        if not 2 <= self.min_steps <= self.max_steps <= 16:
            raise ValidationError("params.max_steps", "must satisfy 2 <= min_steps <= max_steps <= 16", self.max_steps)
        for name in ("active_min_share", "draft_min_share", "cover_share", "deprecate_below", "trigger_share",
                     "causal_min_confidence", "condition_share"):
            if getattr(self, name) > 1:
                raise ValidationError(f"params.{name}", "must be within [0, 1]", getattr(self, name))
        if self.draft_min_sessions < 1 or self.draft_min_sessions > self.active_min_sessions:
            raise ValidationError("params.draft_min_sessions", "must be within 1..active_min_sessions", self.draft_min_sessions)
        if self.draft_min_share > self.active_min_share:
            raise ValidationError("params.draft_min_share", "must be at most active_min_share", self.draft_min_share)

    def draft_support(self, sessions: int) -> int:
        """The support (sessions) a draft needs, out of `sessions` with steps."""
        return max(self.draft_min_sessions, math.ceil(self.draft_min_share * sessions))

    def active_support(self, sessions: int) -> int:
        return max(self.active_min_sessions, math.ceil(self.active_min_share * sessions))

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)

    def digest(self) -> str:
        """SHA-256 hex of the canonical JSON of the parameters (stored with the watermark)."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":")).encode()).hexdigest()


DEFAULT = LearnParams()
