"""What one open handle keeps about scopes: evaluated id sets per scope, the
tokens that passed their checks, and the rate-limited count of violations
(journaled on a "rw" handle, logged to the `cortex.scope` logger on an "r" one)."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from ..storage import Storage
from .evaluate import Evaluator, _build, _patch, _Sets
from .values import SignedScope

# Violations: journaled (rw) or logged (r) at most RATE a second, in bursts of BURST.
VIOLATION_RATE = 10.0
VIOLATION_BURST = 20
# Scopes whose member rows a handle keeps (each at most the scope's size of rows).
MEMBER_SETS = 8


class TokenBucket:
    """At most `rate` events a second, in bursts of `burst`; times in microseconds."""

    def __init__(self, rate: float = VIOLATION_RATE, burst: int = VIOLATION_BURST) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.last: int | None = None

    def take(self, now: int) -> bool:
        if self.last is not None and now > self.last:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) / 1e6 * self.rate)
        if self.last is None or now > self.last:
            self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class ScopeState:
    """What one open handle keeps about scopes: evaluated id sets per scope (at most
    `size`, least recently used go first), violation counts per scope id, and the
    violation rate limiter."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.lock = threading.Lock()
        self._sets: OrderedDict[str, _Sets] = OrderedDict()
        self._passed: OrderedDict[tuple[str, str, bytes], tuple[int, bytes]] = OrderedDict()
        # A scope's member rows at one journal state (`cortex.scoped.Granted.members`).
        self._members: OrderedDict[str, tuple[tuple[int, bytes], np.ndarray]] = OrderedDict()
        self.violations: dict[str, int] = {}
        self.held_back: dict[str, int] = {}
        self.bucket = TokenBucket()

    def passed(self, token: tuple[str, str, bytes]) -> tuple[int, bytes] | None:
        """The journal state (seq, root) at which a token (scope id, signer,
        signature) last passed the trust and revocation checks, or None."""
        with self.lock:
            return self._passed.get(token)

    def note_passed(self, token: tuple[str, str, bytes], journal: tuple[int, bytes]) -> None:
        with self.lock:
            self._passed[token] = journal
            self._passed.move_to_end(token)
            while len(self._passed) > self.size:
                self._passed.popitem(last=False)

    def members(self, scope_id: str, journal: tuple[int, bytes]) -> np.ndarray | None:
        """The member rows kept for a scope at this journal state, or None."""
        with self.lock:
            kept = self._members.get(scope_id)
            return kept[1] if kept is not None and kept[0] == journal else None

    def keep_members(self, scope_id: str, journal: tuple[int, bytes], rows: np.ndarray) -> None:
        with self.lock:
            self._members[scope_id] = (journal, rows)
            self._members.move_to_end(scope_id)
            while len(self._members) > MEMBER_SETS:
                self._members.popitem(last=False)

    def violation_counts(self) -> dict[str, int]:
        """Violations counted since the handle was opened, by scope id."""
        with self.lock:
            return dict(self.violations)

    def evaluator(self, storage: Storage, signed: SignedScope, seq: int, root: bytes) -> Evaluator:
        """The scope's evaluator for the view at journal state (seq, root): cached,
        moved forward from the journal, or built. Call inside `Engine.read`."""
        with self.lock:
            sets = self._sets.get(signed.scope_id)
            if sets is not None and (sets.seq, sets.root) == (seq, root) and sets.evaluator is not None:
                self._sets.move_to_end(signed.scope_id)
                return sets.evaluator
            if sets is None or sets.seq > seq or not _patch(storage, signed.scope, sets, seq, root):
                sets = _build(storage, signed.scope, seq, root)
            self._sets[signed.scope_id] = sets
            self._sets.move_to_end(signed.scope_id)
            while len(self._sets) > self.size:
                self._sets.popitem(last=False)
            return sets.evaluator or sets.refresh(signed.scope)

    def count(self, scope_id: str, now: int) -> tuple[bool, int]:
        """Count one violation; return whether it may be written (the rate limit) and
        how many of this scope's were held back since its last written one."""
        with self.lock:
            self.violations[scope_id] = self.violations.get(scope_id, 0) + 1
            if not self.bucket.take(now):
                self.held_back[scope_id] = self.held_back.get(scope_id, 0) + 1
                return False, 0
            return True, self.held_back.pop(scope_id, 0)


def log_violation(scope_id: str, what: str, detail: str, held_back: int) -> None:
    import logging  # here, not with the module: ~4 ms of every cold process

    logging.getLogger("cortex.scope").warning("scope %s violated (%s): %s%s", scope_id, what, detail,
                f" (+{held_back} held back by the rate limit)" if held_back else "")


