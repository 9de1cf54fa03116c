"""Shared utilities of the reliability suite.

* `REPO`: the repository root; `subprocess_env()`: an environment in which a
  subprocess started with `sys.executable` imports this checkout's `cortex`.
* `emit(config, line)`: print a summary line past pytest's output capture.
* `split_journal_value(value)`: a raw `j/` value as (running root, entry bytes).
* `journal_chain(c)`: the OverallRoot recomputed from the raw `j/` records with the
  docs/architecture.md formula, independently of `cortex.journal`.
* `FakeClock`: a clock that moves on by a fixed tick at every call.
"""

from __future__ import annotations

import hashlib
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import msgpack

REPO = Path(__file__).resolve().parents[2]
HELPERS = Path(__file__).resolve().parent

DOMAIN = b"cortex.journal.v1"
START = datetime(2025, 1, 1, tzinfo=timezone.utc)


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONHASHSEED"] = "0"
    return env


def helper_cmd(script: str, *args: object) -> list[str]:
    """The argv that runs `tests/reliability_helpers/<script>` with this interpreter."""
    return [sys.executable, str(HELPERS / script), *map(str, args)]


def emit(config, line: str) -> None:
    """Show `line` in the pytest output even though output is captured."""
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is None:
        print(line, flush=True)
        return
    with capman.global_and_fixture_disabled():
        print("\n" + line, flush=True)


ROOT_SIZE = 32
ENTRY_FIELDS = {"seq", "kind", "at", "payload"}


def split_journal_value(value: bytes) -> tuple[bytes, bytes]:
    """(stored running root, entry bytes) of a `j/` value.

    The one layout cortex writes (`cortex.records`): the 32-byte running root after
    this entry, then the msgpack map {seq, kind, at, payload}. Anything else raises
    AssertionError saying what is wrong, so a change of layout fails the suite
    instead of being read some other way."""
    assert len(value) > ROOT_SIZE, f"journal value of {len(value)} bytes: not a 32-byte root and an entry"
    root, entry = value[:ROOT_SIZE], value[ROOT_SIZE:]
    rec = msgpack.unpackb(entry, raw=False, strict_map_key=False)
    assert isinstance(rec, dict) and set(rec) == ENTRY_FIELDS, f"journal entry after the root is not a map of {sorted(ENTRY_FIELDS)}: {rec!r}"
    return root, entry


def journal_chain(c) -> tuple[int, str, list[str]]:
    """(last seq, root hex, every intermediate root hex) of the raw journal.

    root_0 = 32 zero bytes; root_n = sha256(b"cortex.journal.v1" + root_{n-1} +
    entry_bytes_n) over the `j/<seq8>` records in key order (docs/architecture.md). Raises
    AssertionError if the sequence numbers are not 1, 2, 3, ..., or an entry's seq
    is not its key's, or the running root stored with an entry is not the chain's.
    """
    root = bytes(ROOT_SIZE)
    roots = [root.hex()]
    seq = 0
    for key, value in c._engine.storage.scan_items(b"j/"):
        number = int.from_bytes(key[2:], "big")
        assert len(key) == 10 and number == seq + 1, f"journal key {key!r} after seq {seq}"
        seq = number
        stored, entry = split_journal_value(value)
        assert msgpack.unpackb(entry, raw=False)["seq"] == seq, f"journal entry under seq {seq} says another seq"
        root = hashlib.sha256(DOMAIN + root + entry).digest()
        assert stored == root, f"journal entry {seq} stores root {stored.hex()}, the chain gives {root.hex()}"
        roots.append(root.hex())
    return seq, root.hex(), roots


class FakeClock:
    """A deterministic clock: returns `now`, then moves it on by `tick`."""

    def __init__(self, start: datetime = START, tick: timedelta = timedelta(milliseconds=1)) -> None:
        self.now = start
        self.tick = tick

    def __call__(self) -> datetime:
        now = self.now
        self.now = now + self.tick
        return now
