"""Ed25519 keys and signatures of scopes (the `cryptography` package)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..errors import ValidationError
from .values import KEY_BYTES, Scope, SignedScope

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


# cryptography is imported where a key or signature is handled, not with the module:
# it costs ~10 ms of every cold process, and most processes never see a scope.


def public_key_bytes(value: object, field_name: str = "public_key") -> bytes:
    """The raw 32 bytes of an Ed25519 public key given as an `Ed25519PublicKey` or raw."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if isinstance(value, Ed25519PublicKey):
        return value.public_bytes_raw()
    if isinstance(value, (bytes, bytearray)) and len(value) == KEY_BYTES:
        try:
            Ed25519PublicKey.from_public_bytes(bytes(value))
        except ValueError:
            raise ValidationError(field_name, "is not an Ed25519 public key", value) from None
        return bytes(value)
    raise ValidationError(field_name, "must be an Ed25519PublicKey or its raw 32 bytes", value)


def private_key(value: object, field_name: str = "private_key") -> Ed25519PrivateKey:
    """An Ed25519 private key given as an `Ed25519PrivateKey` or its raw 32 bytes."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if isinstance(value, Ed25519PrivateKey):
        return value
    if isinstance(value, (bytes, bytearray)) and len(value) == KEY_BYTES:
        return Ed25519PrivateKey.from_private_bytes(bytes(value))
    raise ValidationError(field_name, "must be an Ed25519PrivateKey or its raw 32 bytes", None)


# Signatures already checked, by (public key, scope id, signature): a sub-agent passes
# the same scope call after call, and Ed25519 verification costs ~60 µs.
_VERIFIED: dict[tuple[bytes, bytes, bytes], None] = {}
_VERIFIED_LOCK = threading.Lock()


def signature_valid(public_key: bytes, digest: bytes, message: bytes, signature: bytes) -> bool:
    key = (public_key, digest, signature)
    if key in _VERIFIED:
        return True
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    with _VERIFIED_LOCK:
        if len(_VERIFIED) >= 4096:
            _VERIFIED.clear()
        _VERIFIED[key] = None
    return True


def sign(scope: Scope, key: Ed25519PrivateKey, signer: str) -> SignedScope:
    return SignedScope(scope, signer, key.sign(scope.canonical_bytes()))


