"""Commit positions: read-your-writes across handles, processes and standbys.

A store's position is its journal head: the sequence number of its latest journal
entry and the root after it (every write appends one entry in the same atomic batch).
`Cortex.last_token` gives it as a token, a short string:

    "<seq>.<the first 16 hex digits of the root>"      e.g. "42.3f9a0c1d2e4b5a69"

A writer's token after a write names that write; a reader's, the view its latest
`context()` or `refresh()` saw. Another handle on the same store (a reader in another
process, on a PostgreSQL streaming standby, a RocksDB follower) waits for it with
`refresh(until=token, timeout=...)`, which returns as soon as what it reads holds
that entry, and raises `NotReplayed` when `timeout` seconds pass first.

Why the journal and not the database's own log position (PostgreSQL's WAL LSN): the
journal is the store's, so the same token works on every backend, on CockroachDB and
YugabyteDB followers too, needs no function only PostgreSQL has, and a reader waits
for its actor's writes alone, not for every actor's traffic before them. The root
digits catch a store that was rewritten under the token (a failover that lost the
write, a store restored from an older copy): a position with the token's sequence
number but another root raises `StoreError`. See docs/postgresql.md.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from .errors import NotReplayed, StoreError, ValidationError, shown
from .records import JournalHead

ROOT_DIGITS = 16  # hex digits of the root a token carries
MAX_WAIT_SECONDS = 3600.0
_FIRST_POLL = 0.0005  # seconds between the first two looks; doubles up to _LAST_POLL
_LAST_POLL = 0.02
_TOKEN = re.compile(r"(\d{1,19})\.([0-9a-f]{%d})" % ROOT_DIGITS)


@dataclass(frozen=True, slots=True)
class Token:
    """A parsed commit position: journal sequence number and root digits."""

    seq: int
    root: str

    def __str__(self) -> str:
        return f"{self.seq}.{self.root}"


def token_of(head: JournalHead) -> str:
    """The token of a journal head."""
    return str(Token(head.seq, head.root.hex()[:ROOT_DIGITS]))


def parse_token(value: object) -> Token:
    """A token as `Cortex.last_token` gives it, or `ValidationError` naming `until`."""
    match = _TOKEN.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValidationError("until", "must be a token from Cortex.last_token, like '42.3f9a0c1d2e4b5a69'",
                              shown(value))
    return Token(int(match.group(1)), match.group(2))


def check_timeout(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_WAIT_SECONDS \
            or math.isnan(value):
        raise ValidationError("timeout", f"must be a number of seconds within 0..{MAX_WAIT_SECONDS:.0f}", value)
    return float(value)


def reached(head: JournalHead, token: Token) -> bool:
    """Whether a store at `head` holds the write `token` names (`StoreError` when it
    holds another write at that position)."""
    if head.seq < token.seq:
        return False
    if head.seq == token.seq and head.root.hex()[:ROOT_DIGITS] != token.root:
        raise StoreError(f"the store holds another write at journal entry {token.seq} than token {token} names "
                         f"(its root begins {head.root.hex()[:ROOT_DIGITS]}): it was rewritten since the token was "
                         "given (a failover that lost the write, a restored copy)")
    return True


def wait_for(token: Token, timeout: float, look: Callable[[], JournalHead],
             lag: Callable[[], float | None]) -> JournalHead:
    """Call `look()` (a fresh position each time) until it holds `token`, sleeping a
    little longer each time (from half a millisecond up to 20 ms); `NotReplayed`
    when `timeout` seconds pass first, with the lag `lag()` reports."""
    deadline = time.monotonic() + timeout
    pause = _FIRST_POLL
    while True:
        head = look()
        if reached(head, token):
            return head
        left = deadline - time.monotonic()
        if left <= 0:
            behind = lag()
            shown_lag = "" if behind is None else f"; the server reports a replay lag of {behind:.3f} s"
            raise NotReplayed(f"refresh(until={token!s}): after {timeout:g} s the store this handle reads holds "
                              f"journal entry {head.seq}, not yet {token.seq}{shown_lag}")
        time.sleep(min(pause, left))
        pause = min(pause * 2, _LAST_POLL)
