"""Trust and revocation records: the trusted signer keys and the revoked scopes a
store keeps under `meta/trust/` and `meta/revoked/`, derived from the journal's
trust, untrust and revoke entries (see cortex/records.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import (
    REVOKED_PREFIX,
    TRUST_PREFIX,
    Entry,
    decode_revoked,
    decode_trust,
    encode_revoked,
    encode_trust,
    revoked_key,
    trust_key,
)
from ..storage import Storage


def trusted_keys(storage: Storage) -> dict[str, bytes]:
    """Every trusted name and its raw public key, in name order."""
    return {trust_key_name(key): decode_trust(key, raw)[0] for key, raw in storage.scan_items(TRUST_PREFIX)}


def trust_key_name(key: bytes) -> str:
    return key[len(TRUST_PREFIX):].decode("utf-8", errors="replace")


def trusted_key(storage: Storage, name: str) -> bytes | None:
    key = trust_key(name)
    raw = storage.get(key)
    return None if raw is None else decode_trust(key, raw)[0]


def is_revoked(storage: Storage, scope_id: bytes) -> bool:
    key = revoked_key(scope_id)
    raw = storage.get(key)
    if raw is not None:
        decode_revoked(key, raw)
    return raw is not None


@dataclass
class Grants:
    """What the journal's trust, untrust and revoke entries imply: the trusted keys
    (name -> (public key, when)) and the revoked scopes (id -> when). verify()
    compares the stored records with `records()`; rebuild() writes them."""

    trusted: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    revoked: dict[bytes, int] = field(default_factory=dict)

    def note(self, entry: Entry) -> None:
        p = entry.payload
        if entry.kind == "trust":
            self.trusted[p["name"]] = (p["key"], entry.at)
        elif entry.kind == "untrust":
            self.trusted.pop(p["name"], None)
        elif entry.kind == "revoke":
            self.revoked.setdefault(p["scope"], entry.at)

    def records(self) -> dict[bytes, bytes]:
        out = {trust_key(name): encode_trust(key, at) for name, (key, at) in self.trusted.items()}
        out.update({revoked_key(scope_id): encode_revoked(at) for scope_id, at in self.revoked.items()})
        return out


GRANT_PREFIXES = (TRUST_PREFIX, REVOKED_PREFIX)


