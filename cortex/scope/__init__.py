"""Scopes: signed, expiring, budget-capped, revocable slices of a store.

A parent agent hands a sub-agent a slice of its store:

    scope = Scope(include=Selector(types=["Fact", "Preference"]),
                  exclude=Selector(tags=["billing"]),
                  expires_at=now + timedelta(hours=1), budget_tokens=1500,
                  granted_by="agent-ops-1", granted_to="sub-7")
    token = c.grant(scope, private_key).to_bytes()      # c.trust()ed the public key before

and the sub-agent, in its own process, passes `scope=SignedScope.from_bytes(token)` to
the reads that take one. The package holds what that needs below the engine, one
module per idea:

* `values`: `Selector`, `Scope`, `SignedScope`, their canonical bytes and wire forms;
* `signing`: Ed25519 keys and signatures;
* `grants`: the trusted keys and revoked scopes a store keeps (folded from the journal);
* `checks`: the verification once per call, the budget cap, `Refusal`;
* `evaluate`: a scope over index values (a vectorised mask) and over one memory;
* `state`: what one handle keeps (evaluated scopes, violation counts, the rate limit).

The read protocol that puts them together (verify once, cap the budget, refuse,
report the violation) is `cortex.scoped`. The guarantees and formats: docs/scopes.md.

What a scope does not do: it gates calls that pass it. A process that can open the
store's files can read them without a scope; give a sub-agent only a handle whose
calls carry the scope (and the files' permissions), not the directory.
"""

from __future__ import annotations

from .checks import Refusal, capped_budget, check_signed, verify
from .evaluate import Evaluator, IdSet, memory_frames
from .grants import GRANT_PREFIXES, Grants, is_revoked, trusted_key, trusted_keys
from .signing import private_key, public_key_bytes, sign, signature_valid
from .state import ScopeState, TokenBucket, log_violation
from .values import Scope, Selector, SignedScope, check_name, scope_id_bytes

__all__ = [
    "GRANT_PREFIXES", "Evaluator", "Grants", "IdSet", "Refusal", "Scope", "ScopeState", "Selector", "SignedScope",
    "TokenBucket", "capped_budget", "check_name", "check_signed", "is_revoked", "log_violation", "memory_frames",
    "private_key", "public_key_bytes", "scope_id_bytes", "sign", "signature_valid", "trusted_key", "trusted_keys",
    "verify",
]
