"""Fingerprint imports are untrusted by default (docs/trust.md).

A fingerprint comes from another agent's store. Its hashes prove only that it was
not damaged on the way: anyone can recompute them after editing a policy. So:

* An envelope may carry `"cortex_signature": {"key": hex, "sig": hex}`, an Ed25519
  signature over its `integrity_hash` (`export_fingerprint(..., sign_with=key)`).
  It is trusted when the key is one the store trusts (`Cortex.trust(key, name)`, the
  same keys that sign scopes) and the signature verifies; a signature that does not
  verify is refused (`FingerprintIntegrityError`), whoever signed it.
* An untrusted fingerprint never writes a pinned or hard memory: its Constraints
  land soft (a firm or hard one included), at most `UNTRUSTED_MAX_ITEMS` artifact
  memories, none whose text passes `UNTRUSTED_MAX_TEXT_BYTES`
  (`cortex.interop.limits`); what is left out is reported in the import's warnings.
  Every memory an import writes, trusted or not, names its import in its provenance
  (`session` = the import's tag).
* An import is known by the hash of the fingerprint's content (`content_id`), not by
  the `fingerprint_id` it claims, so an envelope that reuses a real fingerprint's id
  with other content cannot make the real import a no-op.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import FingerprintIntegrityError
from ..model import Constraint, field_names
from ..provenance import Provenance
from ..scope import private_key
from ..writes import Write
from .canonical import content_hash, without
from .limits import UNTRUSTED_MAX_ITEMS, UNTRUSTED_MAX_TEXT_BYTES

SIGNATURE_CONTEXT = b"hmx-fingerprint signature 1\n"
SIGNATURE_FIELD = "cortex_signature"  # an envelope field seed 003 does not define


def content_id(fingerprint: Mapping[str, Any]) -> str:
    """`fp-` and 32 hex digits of the SHA-256 of the fingerprint without its id and
    hash: what cortex's own export makes its `fingerprint_id`, recomputed."""
    return "fp-" + content_hash(without(without(dict(fingerprint), "fingerprint_hash"), "fingerprint_id"))[:32]


def sign(envelope: dict[str, Any], key: object) -> dict[str, Any]:
    """The envelope with its signature (over its integrity hash)."""
    private = private_key(key, "sign_with")
    sig = private.sign(SIGNATURE_CONTEXT + str(envelope["integrity_hash"]).encode())
    return {**envelope, SIGNATURE_FIELD: {"key": private.public_key().public_bytes_raw().hex(), "sig": sig.hex()}}


def signer(envelope: Mapping[str, Any], trusted: Mapping[str, bytes]) -> str | None:
    """The trusted name whose key signed the envelope, or None (unsigned, or signed
    by a key the store does not trust); `FingerprintIntegrityError` for a signature
    that does not verify."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    sig = envelope.get(SIGNATURE_FIELD)
    if sig is None:
        return None
    try:
        if not isinstance(sig, Mapping) or set(sig) != {"key", "sig"}:
            raise ValueError("shape")
        key, raw = bytes.fromhex(str(sig["key"])), bytes.fromhex(str(sig["sig"]))
        Ed25519PublicKey.from_public_bytes(key).verify(raw, SIGNATURE_CONTEXT + str(envelope.get("integrity_hash")).encode())
    except (ValueError, InvalidSignature):
        raise FingerprintIntegrityError(SIGNATURE_FIELD, "does not verify against the envelope's integrity_hash", sig) from None
    return next((name for name, known in sorted(trusted.items()) if known == key), None)


def _text_bytes(write: Write) -> int:
    data = write.data
    return sum(len(v.encode("utf-8")) for name in field_names(type(data)) if isinstance(v := getattr(data, name), str))


def untrusted(writes: Iterable[Write], warnings: list[str]) -> list[Write]:
    """What an untrusted fingerprint may write of `writes`: soft Constraints only,
    capped in count and text size; what is left out or softened goes to `warnings`."""
    out: list[Write] = []
    softened = too_long = too_many = 0
    for write in writes:
        if _text_bytes(write) > UNTRUSTED_MAX_TEXT_BYTES:
            too_long += 1
            continue
        if len(out) == UNTRUSTED_MAX_ITEMS:
            too_many += 1
            continue
        if isinstance(write.data, Constraint) and write.data.strength != "soft":
            softened += 1
            write = _with(write, data=dataclasses.replace(write.data, strength="soft"))
        out.append(write)
    if softened:
        warnings.append(f"untrusted fingerprint: {softened} firm or hard constraints imported as soft")
    if too_long:
        warnings.append(f"untrusted fingerprint: {too_long} artifacts over {UNTRUSTED_MAX_TEXT_BYTES} bytes of text left out")
    if too_many:
        warnings.append(f"untrusted fingerprint: {too_many} artifacts past the first {UNTRUSTED_MAX_ITEMS} left out")
    return out


def with_provenance(writes: Iterable[Write], session: str) -> list[Write]:
    """The writes, each naming the import it came from (`session`)."""
    out = []
    for write in writes:
        prov = write.provenance or Provenance()
        out.append(_with(write, provenance=dataclasses.replace(prov, session=session)))
    return out


def _with(write: Write, **changes: Any) -> Write:
    """A copy of a (validated) write with some fields replaced by validated values."""
    new = copy.copy(write)
    for name, value in changes.items():
        object.__setattr__(new, name, value)
    return new
