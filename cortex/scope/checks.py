"""Verification of a scope, once per call that takes one: well-formed, signed under
a currently trusted key, not revoked, unexpired, for this store; and the budget cap."""

from __future__ import annotations

from ..errors import BudgetExceeded, CortexError, ScopeExpired, ScopeInvalid, ScopeRevoked
from ..model import json_value, to_micros
from ..records import META_STORE_ID
from ..storage import Storage
from .grants import is_revoked, trusted_key
from .signing import signature_valid
from .state import ScopeState
from .values import SignedScope


class Refusal(Exception):
    """Raised inside a read to leave it: the caller counts a violation of `scope_id`
    (`what`, `detail`) outside the read lock, then raises `error`."""

    def __init__(self, error: CortexError, scope_id: bytes, what: str, detail: str) -> None:
        super().__init__(str(error))
        self.error = error
        self.scope_id = scope_id
        self.what = what
        self.detail = detail


def check_signed(value: object) -> SignedScope:
    """The `scope=` argument of a call: a `SignedScope` (`ScopeInvalid` otherwise)."""
    if not isinstance(value, SignedScope):
        raise ScopeInvalid("scope", f"must be a cortex.SignedScope (SignedScope.from_bytes(token)), not {type(value).__name__}", None)
    return value


def verify(storage: Storage, signed: SignedScope, actor: str, now: int, clock_now: int, state: ScopeState | None = None,
           journal: tuple[int, bytes] | None = None) -> bytes:
    """Check a scope in the current view (call inside `Engine.read`); return its id
    (32 bytes). Signed under the key its signer is trusted with now (`ScopeInvalid`),
    not revoked (`ScopeRevoked`), unexpired at the call's `now` and at the store
    clock's `clock_now` (`ScopeExpired`), for this store: its id (`meta/store_id`)
    and its actor (`ScopeInvalid`; a store without an id yet takes no scope).

    With `state` and the view's `journal` state (seq, root): trust and revocation
    change only by journal entries, so a scope that passed them at this journal state
    is not read for again (two point reads saved per call)."""
    digest = bytes.fromhex(signed.scope_id)
    token = (signed.scope_id, signed.signer, signed.signature)  # the whole token: a forged signature is another key
    if state is None or journal is None or state.passed(token) != journal:
        _check_grant(storage, signed, digest)
        if state is not None and journal is not None:
            state.note_passed(token, journal)
    if max(now, clock_now) >= to_micros(signed.scope.expires_at):
        raise ScopeExpired("scope", f"expired at {json_value(signed.scope.expires_at)}")
    if signed.scope.granted_by != actor:
        raise ScopeInvalid("scope", f"issued for the store of {signed.scope.granted_by!r}, not this one")
    return digest


def _check_grant(storage: Storage, signed: SignedScope, digest: bytes) -> None:
    """Signed under the key its signer is trusted with now, not revoked, and naming
    this store's id (which never changes once made, so a pass is kept with the rest)."""
    public = trusted_key(storage, signed.signer)
    if public is None:
        raise ScopeInvalid("scope", f"signed by {signed.signer!r}, which this store does not trust")
    if not signature_valid(public, digest, signed.canonical_bytes(), signed.signature):
        raise ScopeInvalid("scope", f"the signature does not verify under the key trusted as {signed.signer!r}")
    if is_revoked(storage, digest):
        raise ScopeRevoked("scope", f"scope {signed.scope_id} was revoked")
    store_id = storage.get(META_STORE_ID)
    if store_id is None or signed.scope.store_id != store_id.hex():
        raise ScopeInvalid("scope", f"issued for the store {signed.scope.store_id} of {signed.scope.granted_by!r}, not this one")


def capped_budget(signed: SignedScope, digest: bytes, requested: int, unset: int) -> int:
    """The budget a scoped call runs with: `requested` (`unset` means "no budget
    asked for": the cap) within the scope's cap; over a non-zero cap is a violation."""
    cap = signed.scope.budget_tokens
    if not cap:
        return requested
    if requested == unset:
        return cap
    if requested > cap:
        error = BudgetExceeded("budget_tokens", f"must be at most the scope's cap of {cap} (0 means the cap)", requested)
        raise Refusal(error, digest, "budget", f"requested {requested} tokens, cap {cap}")
    return requested


