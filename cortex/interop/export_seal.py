"""What an import checks beyond the shape of an export's lines (docs/trust.md).

* `ContentLedger`: in a store of journal format 2 every write and update entry holds
  the content hash of the version it wrote, so the root commits to content. An import
  recomputes each version's hash from its data (the memory lines) and matches it
  against the hash the journal lines hold for the same (memory, version): a memory
  whose text was changed, even with its `content_hash` and the end line's digest
  made again, is refused, naming its line. Memory is 56 bytes a version on each side,
  compared once both sides are read (numpy, sorted by memory and version).
* Signatures: `export_jsonl(..., sign_with=key)` signs the digest the end line holds
  with an Ed25519 key; an import can require a signature by one of the keys it is
  given (`signed_by=`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import ImportRefused, ValidationError
from ..ids import encode_id
from ..scope import private_key, public_key_bytes

_ROW = np.dtype([("key", "V20"), ("hash", "V32"), ("line", ">u4")])
SIGNATURE_CONTEXT = b"cortex-export signature 1\n"


class ContentLedger:
    """The (memory, version) -> content hash pairs of both sides of an export file."""

    def __init__(self) -> None:
        self._memories = bytearray()  # from the memory lines, already in (id, version) order
        self._journal = bytearray()  # from the journal's write and update entries, in sequence order
        self._erased: set[bytes] = set()

    @staticmethod
    def _row(raw_id: bytes, version: int, digest: bytes, line: int) -> bytes:
        return raw_id + version.to_bytes(4, "big") + digest + line.to_bytes(4, "big")

    def memory_version(self, raw_id: bytes, version: int, digest: bytes, line: int) -> None:
        """A version a memory line holds, with the hash of its data as recomputed."""
        self._memories += self._row(raw_id, version, digest, line)

    def journal_version(self, raw_id: bytes, version: int, digest: bytes, line: int) -> None:
        """A version a journal line says was written, with the hash it holds."""
        self._journal += self._row(raw_id, version, digest, line)

    def erased(self, raw_id: bytes) -> None:
        """A memory whose content a journal line erased: no memory line holds it."""
        self._erased.add(raw_id)

    def check(self) -> None:
        """`ImportRefused` naming the first line whose content the journal does not
        commit to (a memory line), or whose version no memory line holds (a journal line)."""
        mem = np.frombuffer(self._memories, dtype=_ROW)  # no copy: the rows are read in place
        jour = np.frombuffer(self._journal, dtype=_ROW)
        if self._erased:
            keep = np.array([bytes(k)[:16] not in self._erased for k in jour["key"]], dtype=bool)
            jour = jour[keep]
        jour = jour[np.argsort(jour["key"], kind="stable")]
        common = min(len(mem), len(jour))
        differs = np.flatnonzero((mem["key"][:common] != jour["key"][:common]) | (mem["hash"][:common] != jour["hash"][:common]))
        if len(differs):
            i = int(differs[0])
        elif len(mem) != len(jour):
            i = common
        else:
            return
        m = mem[i] if i < len(mem) else None
        j = jour[i] if i < len(jour) else None
        if m is not None and j is not None and bytes(m["key"]) == bytes(j["key"]):
            raw_id, version = _key(m)
            raise ImportRefused(
                f"line {int(m['line'])}",
                f"version {version} of memory {encode_id(raw_id)}: its data hashes to {bytes(m['hash']).hex()}, but the journal "
                f"(line {int(j['line'])}) wrote {bytes(j['hash']).hex()}: the root does not commit to this content (altered file)")
        if m is not None and (j is None or bytes(m["key"]) < bytes(j["key"])):
            raw_id, version = _key(m)
            raise ImportRefused(f"line {int(m['line'])}",
                                f"version {version} of memory {encode_id(raw_id)} was never written by the journal (altered file)")
        assert j is not None
        raw_id, version = _key(j)
        raise ImportRefused(f"line {int(j['line'])}",
                            f"writes version {version} of memory {encode_id(raw_id)}, which no memory line holds (altered file)")


def _key(row: np.void) -> tuple[bytes, int]:
    key = bytes(row["key"])
    return key[:16], int.from_bytes(key[16:], "big")


def signed_message(digest_hex: str, lines: int) -> bytes:
    """What an export's signature signs: the end line's digest and line count."""
    return SIGNATURE_CONTEXT + f"{lines} {digest_hex}".encode()


def sign(key: object, digest_hex: str, lines: int) -> dict[str, str]:
    """The end line's `signature` field: the signer's public key and the signature."""
    private = private_key(key, "sign_with")
    return {"key": private.public_key().public_bytes_raw().hex(), "sig": private.sign(signed_message(digest_hex, lines)).hex()}


def signer_keys(value: object) -> frozenset[bytes] | None:
    """The raw public keys `signed_by=` names (one key or several), or None."""
    if value is None:
        return None
    items = [value] if not isinstance(value, Iterable) or isinstance(value, (bytes, bytearray)) else list(value)
    if not items:
        raise ValidationError("signed_by", "must name at least one Ed25519 public key", value)
    return frozenset(public_key_bytes(item, "signed_by") for item in items)


def check_signature(end: dict[str, object], line: int, digest_hex: str, signers: frozenset[bytes] | None) -> None:
    """Refuse an end line whose signature does not verify, or that lacks one by a key
    of `signers` when they are given."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    sig = end.get("signature")
    if sig is None:
        if signers is not None:
            raise ImportRefused(f"line {line}", "the export is not signed, and signed_by= asks for a signature")
        return
    try:
        assert isinstance(sig, dict) and set(sig) == {"key", "sig"}
        key, raw = bytes.fromhex(str(sig["key"])), bytes.fromhex(str(sig["sig"]))
        Ed25519PublicKey.from_public_bytes(key).verify(raw, signed_message(digest_hex, line - 1))
    except (AssertionError, ValueError, InvalidSignature):
        raise ImportRefused(f"line {line}", "the export's signature does not verify (altered file)") from None
    if signers is not None and key not in signers:
        raise ImportRefused(f"line {line}", f"the export is signed by key {key.hex()}, which is not among signed_by=")
