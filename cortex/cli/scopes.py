"""Scopes for sub-agents: trust, untrust, grant, revoke (see docs/scopes.md).

Keys are Ed25519, kept in files as 64 hexadecimal digits (the raw 32 bytes) and a
newline: `cortex trust STORE NAME --new-key FILE` makes one and trusts its public
half; `cortex grant` signs a scope with it and writes the token file a sub-agent
reads (`cortex mcp STORE --scope FILE`, or `SignedScope.from_bytes`).
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import click

import cortex
from cortex import Scope, Selector

from ._common import TYPE, _actor_option, _echo_json, _epilog, _json_option, _open, _parse_time, _store_argument, cli

_DURATION = re.compile(r"(\d+)([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def _read_hex(path: str, what: str, option: str) -> bytes:
    try:
        text = Path(path).read_text(encoding="ascii").strip()
        raw = bytes.fromhex(text)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"{path}: not a {what} file (64 hexadecimal digits): {exc}", param_hint=option) from None
    if len(raw) != 32:
        raise click.BadParameter(f"{path}: a {what} is 32 bytes (64 hexadecimal digits), got {len(raw)}", param_hint=option)
    return raw


@cli.command(short_help="Trust a key to sign scopes for sub-agents.", epilog=_epilog(
    "cortex trust ./store ops-parent --new-key parent.key",
    "cortex trust ./store ops-parent --public-key 3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29"))
@_store_argument
@click.argument("name")
@click.option("--new-key", type=click.Path(dir_okay=False), metavar="FILE",
              help="Make a new key, write its private half to FILE (owner-only), trust its public half.")
@click.option("--public-key", metavar="HEX", help="Trust this public key (64 hexadecimal digits).")
@_actor_option
def trust(store: str, name: str, new_key: str | None, public_key: str | None, actor: str | None) -> int:
    """Trust an Ed25519 key under NAME: scopes it signs are honoured by this store."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if (new_key is None) == (public_key is None):
        raise click.BadParameter("give one of --new-key FILE or --public-key HEX", param_hint="--new-key")
    private = None
    if new_key is not None:
        if os.path.exists(new_key):
            raise click.BadParameter(f"{new_key} exists: a new key is never written over a file", param_hint="--new-key")
        private = Ed25519PrivateKey.generate()
        raw_public = private.public_key().public_bytes_raw()
    else:
        assert public_key is not None
        try:
            raw_public = bytes.fromhex(public_key)
        except ValueError:
            raise click.BadParameter("must be 64 hexadecimal digits", param_hint="--public-key") from None
    with _open(store, actor, write=True) as c:
        c.trust(raw_public, name)
    if private is not None and new_key is not None:
        fd = os.open(new_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(private.private_bytes_raw().hex() + "\n")
        click.echo(f"wrote the private key to {new_key} (keep it secret)")
    click.echo(f"trusted {name}: public key {raw_public.hex()}")
    return 0


@cli.command(short_help="Stop trusting a key.", epilog=_epilog("cortex untrust ./store ops-parent"))
@_store_argument
@click.argument("name")
@_actor_option
def untrust(store: str, name: str, actor: str | None) -> int:
    """Stop trusting the key named NAME: every scope it signed is refused from now on."""
    with _open(store, actor, write=True) as c:
        c.untrust(name)
    click.echo(f"untrusted {name}")
    return 0


def _expiry(text: str) -> datetime:
    """`--expires`: a duration from now (30m, 2h, 7d) or an ISO 8601 time."""
    match = _DURATION.fullmatch(text)
    if match:
        return datetime.now(timezone.utc) + timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    value = _parse_time(text, "--expires")
    assert value is not None
    return value


@cli.command(short_help="Sign a scope for a sub-agent and write its token file.", epilog=_epilog(
    "cortex grant ./store --key parent.key --to sub-7 --tag customer-42 --exclude-tag billing --expires 1h --out sub-7.scope",
    "cortex grant ./store --key parent.key --to sub-7 --type Fact --type Preference --budget 1500 --out sub-7.scope"))
@_store_argument
@click.option("--key", "key_file", required=True, type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="The private key file (from cortex trust --new-key) of a trusted key.")
@click.option("--to", "granted_to", required=True, metavar="NAME", help="The sub-agent the scope is for.")
@click.option("--type", "types", type=TYPE, multiple=True, help="Include memories of this type (repeatable).")
@click.option("--tag", "tags", multiple=True, help="Include memories with this tag (repeatable).")
@click.option("--exclude-type", "exclude_types", type=TYPE, multiple=True, help="Exclude this type (repeatable; exclusion wins).")
@click.option("--exclude-tag", "exclude_tags", multiple=True, help="Exclude this tag (repeatable; exclusion wins).")
@click.option("--expires", default="1h", show_default=True, help="A duration (30m, 2h, 7d) or an ISO 8601 time.")
@click.option("--budget", type=click.IntRange(min=0), default=0, show_default=True,
              help="The most tokens one call may ask for (0: no cap).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, writable=True), help="Write the token here.")
@_actor_option
@_json_option
def grant(store: str, key_file: str, granted_to: str, types: tuple[str, ...], tags: tuple[str, ...],
          exclude_types: tuple[str, ...], exclude_tags: tuple[str, ...], expires: str, budget: int, out: str,
          actor: str | None, as_json: bool) -> int:
    """Sign a scope (the memories of the given types or tags, less the excluded
    ones, until --expires) with a trusted key and write the token to --out. A
    sub-agent serves it with `cortex mcp STORE --scope FILE`."""
    if not types and not tags:
        raise click.BadParameter("name what the scope includes: at least one --type or --tag", param_hint="--type")
    raw_key = _read_hex(key_file, "private key", "--key")
    with _open(store, actor) as c:
        scope = Scope(Selector(types=types, tags=tags), Selector(types=exclude_types, tags=exclude_tags),
                      expires_at=_expiry(expires), budget_tokens=budget, granted_by=c.actor, granted_to=granted_to)
        signed = c.grant(scope, raw_key)
    Path(out).write_bytes(signed.to_bytes())
    if as_json:
        _echo_json({"scope_id": signed.scope_id, "file": out, "expires_at": scope.expires_at.isoformat()})
    else:
        click.echo(f"granted scope {signed.scope_id} to {granted_to} until {scope.expires_at.isoformat()}; token in {out}")
    return 0


@cli.command(short_help="Revoke a scope.", epilog=_epilog("cortex revoke ./store sub-7.scope", "cortex revoke ./store 5f0c...e1"))
@_store_argument
@click.argument("scope", metavar="TOKEN_FILE|SCOPE_ID")
@_actor_option
def revoke(store: str, scope: str, actor: str | None) -> int:
    """Revoke a scope, named by its token file or its scope id: refused from now on
    (readers refuse it once they catch up)."""
    scope_id = cortex.SignedScope.from_bytes(Path(scope).read_bytes()).scope_id if os.path.isfile(scope) else scope
    with _open(store, actor, write=True) as c:
        c.revoke(scope_id)
    click.echo(f"revoked scope {scope_id}")
    return 0
