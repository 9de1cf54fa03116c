"""Corruption (docs/operations.md: "A record that fails to decode raises `CorruptRecord`
naming the key; `verify()` ... returns the problems found, one line each;
`rebuild()` recreates the derived keys").

A small store is built once and closed; every test works on a copy
(`shutil.copytree`). RocksDB checksums its files, so the practical way to damage
one record is to overwrite its value under an open handle, behind its back
(`damage(c, {key: value})`); flipping bytes in the SST files themselves is tested too, in a subprocess so that a crash in RocksDB could not take pytest down.

What is required, for every damaged record:

* every read (`resolve`, `resolve_latest`, `memories`, `context`, `find`,
  `salience`, `weights`, `stats`, `root`) either returns or raises `CorruptRecord`
  whose `.key` is the damaged key; never another exception (that would crash an
  agent that only expects `CortexError`);
* `open()` either opens the store or raises `CorruptRecord` naming the damaged
  key, and raises the same again when tried a second time (a failed open releases
  the store);
* `verify()` never raises and lists the damaged key, in the format of its other
  lines (`prefix` + hex of the rest, e.g. `m/01a2…`; `meta/journal` for meta keys),
  whatever the damage: also after a flip that leaves a record of the right shape,
  which it finds by comparing the record with its recomputation;
* `rebuild()` repairs damage to derived keys (`idx/...`, `sal/`, `meta/weights`):
  `verify()` is then clean and every read gives the undamaged store's answer; with
  damage to a canonical key (`m/`, `mv/`, `j/`, `meta/journal`) it raises at most
  `CorruptRecord` naming that key, and `verify()` keeps reporting it.
"""

from __future__ import annotations

import glob
import json
import os
import random
import re
import shutil
import subprocess
from collections import Counter
from datetime import datetime, timedelta, timezone

import msgpack
import pytest

import cortex
from cortex.forms import Tokenizer
from cortex import CortexError, CorruptRecord, Event, Fact, Frame, Goal, Identity, Preference, Write

from reliability_helpers.common import REPO, ROOT_SIZE, FakeClock, emit, helper_cmd, split_journal_value, subprocess_env

ACTOR = "corrupt-agent"
UTC = timezone.utc
NOW = datetime(2025, 6, 1, tzinfo=UTC)
TALLY: Counter = Counter()

_PREFIXES = (b"idx/type/", b"idx/tag/", b"idx/pinned/", b"idx/frame/", b"idx/actor_obj/", b"sal/", b"mv/", b"m/", b"j/", b"meta/")
DERIVED = (b"idx/", b"sal/", b"meta/weights")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def shown(key: bytes) -> str:
    """A key as verify() prints it: its prefix, then the hex of the rest."""
    for prefix in _PREFIXES:
        if key.startswith(prefix):
            return prefix.decode() + key[len(prefix):].hex()
    return key.hex()


def names(key: bytes) -> set[str]:
    """Ways a verify() line may name `key` (meta keys also by their plain name)."""
    out = {shown(key)}
    if key.startswith(b"meta/"):
        out.add(key.decode())
    return out


def listed(problems: list[str], key: bytes) -> bool:
    return any(name in line for line in problems for name in names(key))


def raw_id(uri: str) -> bytes:
    ulid = uri.split("/")[3].split("#")[0]
    n = 0
    for ch in ulid:
        n = n * 32 + _CROCKFORD.index(ch)
    return n.to_bytes(16, "big")


def fixed_clock() -> datetime:
    return NOW


@pytest.fixture(scope="module", autouse=True)
def summary(request):
    yield
    emit(
        request.config,
        f"reliability-corruption: {TALLY['damaged']} damaged records, {TALLY['reads']} reads on them "
        f"({TALLY['read_ok']} returned, {TALLY['read_corrupt']} raised CorruptRecord, {TALLY['read_other']} raised something else), "
        f"verify() listed {TALLY['listed']} of {TALLY['verified']} damaged keys and raised {TALLY['verify_raised']} times",
    )


# ---------------------------------------------------------------------------
# The pristine store


class Pristine:
    def __init__(self, path: str) -> None:
        self.path = path
        clock = FakeClock(datetime(2025, 1, 1, tzinfo=UTC), timedelta(seconds=1))
        with cortex.open(path, actor=ACTOR, clock=clock, entropy=random.Random(5).randbytes) as c:
            t = Frame("find", "tool", "t")
            fact1 = c.write(Fact(statement="the sky is blue", subject="sky", predicate="color", as_of=datetime(2024, 5, 1, tzinfo=UTC)), frames=[t], tags=["t1"], importance=4)
            fact2 = c.update(fact1, Fact(statement="the sky is grey today", subject="sky", predicate="color"))
            event = c.write(Event(kind="payment", outcome="success", counterparty="acme", cost=("usd", 2.5), summary="paid"), frames=[t], tags=["t1", "t2"])
            ident = c.write(Identity(name="agent-007", roles=["ops"]))
            goal = c.write(Goal(statement="ship it", status="active"), frames=[t])
            pref = c.write(Preference(topic="tone", polarity="prefer", strength=0.8), frames=[t], tags=["t2"])
            c.tombstone(pref, "obsolete")
            bulk = c.write_many([Write(Fact(statement=f"filler {i}", subject="s", predicate="p"), frames=[t], tags=["t1"]) for i in range(6)])
            c.attest([fact2, event], "success")
            assert c.verify() == []
            self.uris = {"fact#1": fact1, "fact#2": fact2, "event": event, "ident": ident, "goal": goal, "pref": pref, "bulk": bulk[0]}
            raw = dict(c._engine.storage.all_items())
        self.raw = raw
        ids = {name: raw_id(uri) for name, uri in self.uris.items()}

        def derived(prefix: bytes, name: str) -> bytes:
            return next(k for k in sorted(raw) if k.startswith(prefix) and k.endswith(ids[name]))

        journal: dict[str, bytes] = {}
        for k, v in sorted(raw.items()):
            if k.startswith(b"j/"):
                journal.setdefault(msgpack.unpackb(split_journal_value(v)[1])["kind"], k)  # the first entry of each kind
        self.keys = {
            "head:fact": b"m/" + ids["fact#1"],
            "head:event": b"m/" + ids["event"],
            "head:ident": b"m/" + ids["ident"],
            "version:fact#1": b"mv/" + ids["fact#1"] + (1).to_bytes(8, "big"),
            "version:fact#2": b"mv/" + ids["fact#1"] + (2).to_bytes(8, "big"),
            "version:event#1": b"mv/" + ids["event"] + (1).to_bytes(8, "big"),
            "sal:fact": b"sal/" + ids["fact#1"],
            "sal:ident": b"sal/" + ids["ident"],
            "frame:event": derived(b"idx/frame/", "event"),
            "frame:goal": derived(b"idx/frame/", "goal"),
            "actor_obj:event": derived(b"idx/actor_obj/", "event"),
            "pinned:ident": derived(b"idx/pinned/", "ident"),
            "type:fact": derived(b"idx/type/", "fact#1"),
            "tag:event": derived(b"idx/tag/", "event"),
            "journal:write": journal["write"],
            "journal:update": journal["update"],
            "journal:tombstone": journal["tombstone"],
            "journal:attest": journal["attest"],
            "meta:weights": b"meta/weights",
            "meta:journal": b"meta/journal",
        }
        for key in self.keys.values():
            assert key in raw, key
        with self.open(path) as c:
            self.answers = {name: fn(c) for name, fn in reads(self.uris).items()}

    def copy(self, dst) -> str:
        shutil.copytree(self.path, dst)
        return str(dst)

    @staticmethod
    def open(path):
        return cortex.open(path, actor=ACTOR, clock=fixed_clock)


def reads(uris: dict[str, str]) -> dict:
    """Every read, as a function of an open store returning a comparable value."""
    out = {}
    for name, uri in uris.items():
        out[f"resolve {name}"] = lambda c, uri=uri: c.resolve(uri).to_dict()
        ulid = uri.split("/")[3].split("#")[0]
        out[f"resolve_latest {name}"] = lambda c, ulid=ulid: c.resolve_latest(ulid).to_dict()
        out[f"salience {name}"] = lambda c, ulid=ulid: c.salience(ulid)
    out["memories"] = lambda c: [m.to_dict() for m in c.memories()]
    out["memories+tombstoned"] = lambda c: [m.to_dict() for m in c.memories(include_tombstoned=True)]
    out["context frame"] = lambda c: c.context(verb="find", objects={"tool": "t"}, now=NOW).to_json()
    out["context full form"] = lambda c: c.context(verb="find", objects={"tool": "t"}, now=NOW, form="full", budget_tokens=60).to_json()
    out["context pinned"] = lambda c: c.context(now=NOW).to_json()
    out["find tag t1"] = lambda c: [m.to_dict() for m in c.find(tags=["t1"], limit=100)]
    out["find tag t2+tombstoned"] = lambda c: [m.to_dict() for m in c.find(tags=["t2"], limit=100, include_tombstoned=True)]
    out["find type Fact"] = lambda c: [m.to_dict() for m in c.find(type="Fact", limit=100)]
    out["find type Event by budget"] = lambda c: [m.to_dict() for m in c.find(type="Event", budget_tokens=500, order_by="-created")]
    out["weights"] = lambda c: c.weights()
    out["stats"] = lambda c: {k: v for k, v in c.stats().items() if k != "path"}
    out["root"] = lambda c: c.root()
    return out


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Pristine:
    return Pristine(str(tmp_path_factory.mktemp("pristine") / "store"))


def damage(c, puts: dict) -> None:
    """Write `puts` behind the handle's back, as damage on disk would be, then drop the
    handle's caches of stored keys (hot frames, current heads): they mirror only what
    passes through the handle, so damage made under an open handle shows when the
    store is next opened, which this stands in for."""
    c._engine.storage.write(puts)
    c._engine.drop_caches()


def check_reads(c, key: bytes, pristine: Pristine, *, want_equal: bool = False) -> list[str]:
    """Run every read; returns the failures (another exception, a CorruptRecord naming
    another key, or with `want_equal`, an answer that differs from the pristine one)."""
    failures = []
    for name, fn in reads(pristine.uris).items():
        TALLY["reads"] += 1
        try:
            got = fn(c)
        except CorruptRecord as exc:
            TALLY["read_corrupt"] += 1
            if want_equal:
                failures.append(f"{name}: CorruptRecord({shown(exc.key)}) after rebuild")
            elif exc.key != key:
                failures.append(f"{name}: CorruptRecord names {shown(exc.key)}, not the damaged {shown(key)}")
            continue
        except CortexError as exc:
            TALLY["read_other"] += 1
            failures.append(f"{name}: {type(exc).__name__} instead of CorruptRecord: {exc}")
            continue
        except Exception as exc:
            TALLY["read_other"] += 1
            failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:150]}")
            continue
        TALLY["read_ok"] += 1
        if want_equal and got != pristine.answers[name]:
            failures.append(f"{name}: differs from the undamaged store's answer")
    return failures


def check_verify(c, key: bytes, *, must_list: bool = True) -> tuple[list[str], list[str] | None]:
    """(failures, problems): verify() must not raise and must list `key`."""
    TALLY["verified"] += 1
    try:
        problems = c.verify()
    except Exception as exc:
        TALLY["verify_raised"] += 1
        return [f"verify() raised {type(exc).__name__}: {str(exc)[:150]}"], None
    if listed(problems, key):
        TALLY["listed"] += 1
    elif must_list:
        return [f"verify() does not list {shown(key)}: {problems[:4]}"], problems
    return [], problems


def open_damaged(path: str, key: bytes, failures: list[str]):
    """Open a damaged copy: a store, or None if open() refused it with CorruptRecord
    naming the key (anything else is a failure). A refused open is tried again: the
    first failure released the store, so the second fails the same way (not with
    `StoreLocked`)."""
    try:
        return Pristine.open(path)
    except CorruptRecord as exc:
        if exc.key != key:
            failures.append(f"open(): CorruptRecord names {shown(exc.key)}, not {shown(key)}")
        first = exc
    except Exception as exc:
        failures.append(f"open() raised {type(exc).__name__}: {str(exc)[:150]}")
        return None
    try:
        Pristine.open(path).close()
        failures.append("a second open() succeeded where the first raised CorruptRecord")
    except CorruptRecord as again:
        if str(again) != str(first):
            failures.append(f"a second open() raised {again}, the first {first}")
    except Exception as again:
        failures.append(f"a second open() raised {type(again).__name__} after CorruptRecord: {str(again)[:150]}")
    return None


# ---------------------------------------------------------------------------
# Garbage values


TARGETS = [
    "head:fact", "head:event", "head:ident", "version:fact#1", "version:fact#2", "version:event#1",
    "sal:fact", "sal:ident", "frame:event", "actor_obj:event", "pinned:ident", "type:fact", "tag:event",
    "journal:write", "journal:update", "journal:tombstone", "journal:attest", "meta:weights", "meta:journal",
]
GARBAGE = {"garbage": b"\x00garbage", "zeros63": bytes(63), "empty": b""}


@pytest.mark.parametrize("garbage", sorted(GARBAGE))
@pytest.mark.parametrize("target", TARGETS)
def test_garbage_record(pristine, tmp_path, target, garbage):
    path = pristine.copy(tmp_path / "copy")
    key = pristine.keys[target]
    with Pristine.open(path) as c:
        damage(c, {key: GARBAGE[garbage]})
    TALLY["damaged"] += 1
    failures: list[str] = []
    c = open_damaged(path, key, failures)
    if c is None:
        assert not failures, "\n".join(failures)
        return
    with c:
        failures += check_reads(c, key, pristine)
        found, _ = check_verify(c, key)
        failures += found
        derived = key.startswith(DERIVED)
        try:
            c.rebuild()
        except CorruptRecord as exc:
            if derived:
                failures.append(f"rebuild() of damaged derived key raised CorruptRecord({shown(exc.key)})")
            elif exc.key != key:
                failures.append(f"rebuild() raised CorruptRecord naming {shown(exc.key)}, not {shown(key)}")
        except Exception as exc:
            failures.append(f"rebuild() raised {type(exc).__name__}: {str(exc)[:150]}")
        if derived:
            try:
                after = c.verify()
            except Exception as exc:
                after = [f"verify() raised {type(exc).__name__}"]
            if after:
                failures.append(f"after rebuild() verify() is not clean: {after[:4]}")
            failures += [f"after rebuild(): {f}" for f in check_reads(c, key, pristine, want_equal=True)]
        else:
            found, _ = check_verify(c, key)
            failures += [f"after rebuild(): {f}" for f in found]
    assert not failures, f"{target} = {GARBAGE[garbage]!r}:\n" + "\n".join(failures)


def test_rebuild_repairs_derived_keys_despite_canonical_damage(pristine, tmp_path):
    """One corrupt head must not stop rebuild() from repairing the other memories'
    derived keys: afterwards verify() reports only the canonical damage (and the
    derived keys of that one memory, which cannot be recomputed from it)."""
    path = pristine.copy(tmp_path / "copy")
    bad_head = pristine.keys["head:fact"]
    derived_damage = [pristine.keys["sal:ident"], pristine.keys["frame:goal"], pristine.keys["tag:event"]]
    with Pristine.open(path) as c:
        damage(c, {bad_head: b"\x00garbage", **{k: b"\x00garbage" for k in derived_damage}})
        TALLY["damaged"] += 4
        try:
            c.rebuild()
        except CorruptRecord as exc:
            assert exc.key == bad_head
        problems = c.verify()
    fact_id = bad_head[2:]
    assert listed(problems, bad_head)
    leftovers = [line for line in problems if fact_id.hex() not in line]
    assert not leftovers, "rebuild() left derived damage of intact memories:\n" + "\n".join(leftovers)


# ---------------------------------------------------------------------------
# Values that decode but have the wrong shape


def shape(value):
    if isinstance(value, list):
        return ("list", tuple(shape(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), shape(v)) for k, v in value.items())))
    return type(value).__name__


_WRONG = [None, "x", 1.5, 7, [], {}, [None, None, None], b"\x00", True]


def _field_mutations(record: list, extra: dict[int, list]) -> list[tuple[str, object]]:
    """Each field replaced by values of another type, and by the values in `extra`
    (index -> values of the right type but out of range); then structural damage."""
    out = []
    for i, original in enumerate(record):
        for bad in [v for v in _WRONG if shape(v) != shape(original)] + extra.get(i, []):
            mutated = list(record)
            mutated[i] = bad
            out.append((f"[{i}]={bad!r}", mutated))
    out += [("short list", record[:-1]), ("empty list", []), ("a dict", {"a": 1}), ("an int", 5), ("a string", "x")]
    return out


def _head_mutations(rec: list) -> list[tuple[str, object]]:
    # Head: type, version, created, updated, frames, tags, importance, tombstone,
    # expires, data, confidence, source, forms, tokens
    extra = {
        0: [0, 10, 255], 1: [0, -1, 2**40], 2: [-1, 2**64 - 1], 3: [-1, 2**64 - 1], 6: [-1, 11],
        8: [-1, 2**64 - 1], 10: [-0.5, 1.5], 13: [[-1, 5, 5], [5, 5]],
        4: [[[99, 12, "t"]], [[1, 99, "t"]], [[1, 12, None]], [[1, 12]], ["x"], [[1, 12, ""]]],
        5: [[None], [5], [""]], 7: [[1], ["x", "y"], [None, "r"]], 9: [[], [None, None, None, None, None, None], ["x"]],
        12: [[None, None], ["a"], [5, 6]],
    }
    return _field_mutations(rec, extra)


def _version_mutations(rec: list) -> list[tuple[str, object]]:
    # Version: data, created, created_by, confidence, source, forms, tokens, content_hash
    extra = {0: [[], ["x"]], 1: [-1, 2**64 - 1], 3: [-0.5, 1.5], 5: [[None, None], ["a"]], 6: [[-1, 5, 5], [5, 5]], 7: [b"", b"\x00" * 32]}
    return _field_mutations(rec, extra)


def _salience_mutations(rec: list) -> list[tuple[str, object]]:
    # Score: last_used, access_count, citations, importance, pinned
    return _field_mutations(rec, {0: [-1, 2**64 - 1], 1: [-1], 2: [-1], 3: [-1, 11]})


def _weights_mutations(rec: list) -> list[tuple[str, object]]:
    return _field_mutations(rec, {0: [-1.0, float("nan"), float("inf")]}) + [("five weights", rec + [0.1])]


def _journal_mutations(rec: dict) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    out_of_range = {"seq": [rec["seq"] + 7, -1], "kind": ["nope"], "at": [-1, 2**64 - 1], "payload": [{}]}
    for field in ("seq", "kind", "at", "payload"):
        for bad in [v for v in (None, "x", 1.5, [], b"\x00", 5) if shape(v) != shape(rec[field])] + out_of_range[field]:
            out.append((f"{field}={bad!r}", {**rec, field: bad}))
        dropped = dict(rec)
        del dropped[field]
        out.append((f"without {field}", dropped))
    for field, value in rec["payload"].items():
        for bad in (None, "x", [], b"short", 2**64 - 1):
            if value is None and isinstance(bad, str):
                continue  # an optional text field (attest's reason): any string is valid
            if shape(bad) != shape(value):
                out.append((f"payload.{field}={bad!r}", {**rec, "payload": {**rec["payload"], field: bad}}))
    out += [("a list", list(rec.values())), ("an int", 5)]
    return out


def _meta_journal_mutations(raw: bytes) -> list[tuple[str, bytes]]:
    return [("empty", b""), ("8 bytes", raw[:8]), ("39 bytes", raw[:39]), ("41 bytes", raw + b"\x00"), ("seq + 1", (int.from_bytes(raw[:8], "big") + 1).to_bytes(8, "big") + raw[8:])]


SHAPES = {
    "head": ("head:fact", _head_mutations),
    "version": ("version:fact#1", _version_mutations),
    "salience": ("sal:fact", _salience_mutations),
    "weights": ("meta:weights", _weights_mutations),
    "journal-update": ("journal:update", _journal_mutations),
    "journal-attest": ("journal:attest", _journal_mutations),
    "meta-journal": ("meta:journal", None),
}


@pytest.mark.parametrize("record", sorted(SHAPES))
def test_wrong_shaped_records(pristine, tmp_path, record):
    """Values that are valid msgpack but not a valid record of their kind (a field of
    the wrong type or out of range, a missing field, another container)."""
    target, make = SHAPES[record]
    key = pristine.keys[target]
    original = pristine.raw[key]
    if make is None:
        mutations = _meta_journal_mutations(original)
    else:
        prefix, entry = split_journal_value(original) if key.startswith(b"j/") else (b"", original)  # a journal entry keeps its root: only the entry is damaged
        mutations = [(label, prefix + msgpack.packb(value, use_bin_type=True)) for label, value in make(msgpack.unpackb(entry, raw=False))]
    failures: list[str] = []
    if key == b"meta/journal":
        # Read when the store opens: each mutation gets its own copy, then an open.
        for i, (label, value) in enumerate(mutations):
            path = pristine.copy(tmp_path / f"copy-{i}")
            with Pristine.open(path) as c:
                damage(c, {key: value})
            TALLY["damaged"] += 1
            found: list[str] = []
            c = open_damaged(path, key, found)
            if c is not None:
                with c:
                    found += check_reads(c, key, pristine)
                    found += check_verify(c, key)[0]
            failures += [f"{label}: {f}" for f in found]
    else:
        path = pristine.copy(tmp_path / "copy")
        with Pristine.open(path) as c:
            for label, value in mutations:
                TALLY["damaged"] += 1
                damage(c, {key: value})
                failures += [f"{label}: {f}" for f in check_reads(c, key, pristine)]
                failures += [f"{label}: {f}" for f in check_verify(c, key)[0]]
                damage(c, {key: original})
            assert c.verify() == []
    assert not failures, f"{record} ({shown(key)}): {len(failures)} failures in {len(mutations)} mutations:\n" + "\n".join(failures[:40])


# ---------------------------------------------------------------------------
# Flipped bits


@pytest.mark.parametrize("target", ["head:fact", "head:event", "version:fact#1", "sal:fact", "journal:update", "meta:weights"])
def test_flipped_bits_in_a_record(pristine, tmp_path, target):
    """Every byte of the record flipped (one bit at a time, two masks). Reads never
    raise anything but CorruptRecord naming the key; verify() never raises; and
    verify() lists the key after every flip: the flips that leave something that is
    not msgpack, or msgpack of another shape, by decoding it, and the flips that
    leave a record of the same shape by comparing it with its recomputation (a head
    with its versions, salience and weights with the journal's replay, a version
    with its content hash, a journal entry with the hash chain)."""
    key = pristine.keys[target]
    original = pristine.raw[key]
    skip = ROOT_SIZE if key.startswith(b"j/") else 0  # a journal entry's stored running root
    before = shape(msgpack.unpackb(original[skip:], raw=False))
    path = pristine.copy(tmp_path / "copy")
    failures: list[str] = []
    damaged: dict[str, str] = {}  # flip -> what it left: "undecodable", "new shape" or "same shape"
    caught: set[str] = set()  # the flips after which verify() listed the key
    with Pristine.open(path) as c:
        for pos in range(len(original)):
            for mask in (0x01, 0x80):
                flipped = bytearray(original)
                flipped[pos] ^= mask
                value = bytes(flipped)
                try:
                    after = shape(msgpack.unpackb(value[skip:], raw=False, strict_map_key=False))
                except Exception:
                    after = None
                label = f"byte {pos} ^ {mask:#04x}"
                damaged[label] = "undecodable" if after is None else "new shape" if after != before else "same shape"
                TALLY["damaged"] += 1
                damage(c, {key: value})
                failures += [f"{label}: {f}" for f in check_reads(c, key, pristine)]
                found, problems = check_verify(c, key, must_list=False)
                failures += [f"{label}: {f}" for f in found]
                if problems is not None and listed(problems, key):
                    caught.add(label)
                damage(c, {key: original})
        assert c.verify() == []
    if target in OLDER_VERSIONS:
        # The one documented gap: an older version's stored form texts and full-form
        # token count are display data written once, covered by no hash and not
        # recomputable (templates change between releases). verify() checks its
        # short and medium counts against the texts, so only flips that leave those
        # counts true go unseen.
        caught |= {label for label in damaged if _display_only(original, _flipped(original, label))}
    missed = [f"{label} ({damaged[label]})" for label in damaged if label not in caught]
    report = []
    if failures:
        report.append(f"{len(failures)} failures over {len(damaged)} flips:\n" + "\n".join(failures[:40]))
    if missed:
        report.append(f"verify() does not list {shown(key)} after {len(missed)} of {len(damaged)} flips: " + ", ".join(missed))
    assert caught == set(damaged) and not failures, f"{target}: " + "\n".join(report)


OLDER_VERSIONS = {"version:fact#1"}  # targets that are not their memory's current version


def _flipped(original: bytes, label: str) -> bytes:
    pos, mask = label.removeprefix("byte ").split(" ^ ")
    flipped = bytearray(original)
    flipped[int(pos)] ^= int(mask, 16)
    return bytes(flipped)


def _display_only(original: bytes, value: bytes) -> bool:
    """Whether a flipped version record differs from the original only in its form
    texts or its full-form token count, with the short and medium counts still
    those of the (flipped) texts."""
    try:
        before, after = msgpack.unpackb(original, raw=False), msgpack.unpackb(value, raw=False)
    except Exception:
        return False
    if not (isinstance(after, list) and len(after) == len(before)):
        return False
    forms_at, tokens_at = 5, 6  # the version record's forms and tokens (cortex.records V_FORMS, V_TOKENS)
    same_elsewhere = all(a == b for i, (a, b) in enumerate(zip(before, after)) if i not in (forms_at, tokens_at))
    if not same_elsewhere or not isinstance(after[forms_at], list) or not isinstance(after[tokens_at], list):
        return False
    tokens = Tokenizer()
    counts_hold = [tokens.count(after[forms_at][0]), tokens.count(after[forms_at][1])] == after[tokens_at][:2]
    return counts_hold and after[tokens_at][:2] == before[tokens_at][:2]


def _flip_text(raw: bytes, old: bytes, new: bytes) -> bytes:
    assert raw.count(old) >= 1 and len(old) == len(new)
    return raw.replace(old, new, 1)


def test_flipped_text_in_a_version_record_is_caught_by_its_content_hash(pristine, tmp_path):
    """A flip inside a string leaves valid msgpack of the same shape; the version
    record carries the content hash of its data, so the flip is detectable."""
    key = pristine.keys["version:fact#1"]
    path = pristine.copy(tmp_path / "copy")
    with Pristine.open(path) as c:
        damage(c, {key: _flip_text(pristine.raw[key], b"sky is blue", b"sky is blud")})
        TALLY["damaged"] += 1
        failures, _ = check_verify(c, key)
        try:
            m = c.resolve(pristine.uris["fact#1"])
            failures.append(f"resolve() returned the altered data {m.data.statement!r} instead of raising CorruptRecord")
        except CorruptRecord as exc:
            if exc.key != key:
                failures.append(f"resolve() raised CorruptRecord naming {shown(exc.key)}")
    assert not failures, "\n".join(failures)


def test_flipped_text_in_a_head_is_caught_by_verify(pristine, tmp_path):
    """The head holds a copy of the current version's data; a flip in that copy makes
    it disagree with the version record (and its content hash): verify() must say
    so, naming the head or the version of that memory."""
    key = pristine.keys["head:fact"]
    vkey = pristine.keys["version:fact#2"]
    path = pristine.copy(tmp_path / "copy")
    with Pristine.open(path) as c:
        damage(c, {key: _flip_text(pristine.raw[key], b"grey today", b"grey todax")})
        TALLY["damaged"] += 1
        problems = c.verify()
    assert listed(problems, key) or listed(problems, vkey), f"verify() does not notice: {problems}"


# ---------------------------------------------------------------------------
# Flipped bytes in the files


def _data_block_bytes(c) -> int:
    """How many bytes at the start of the store's one SST file are data blocks.

    A block-based table holds its data blocks first, each with a checksummed
    trailer, then the filter, index and properties blocks and the footer; RocksDB's
    table properties give the data blocks' total size. A data block is read, and its
    checksum checked, whenever a read needs one of its keys, and `verify()` reads
    every key: a flip in the first `data size` bytes is in a region RocksDB reads."""
    props = c._engine.storage.db.property_value("rocksdb.aggregated-table-properties")
    match = re.search(r"data block size=(\d+);", props)
    assert match, props
    return int(match.group(1))


def test_flipped_bytes_in_sst_files(tmp_path, request):
    """Bytes flipped in the data blocks of the store's SST file (what disk rot does).
    RocksDB's block checksums see it; cortex must turn that into CorruptRecord (a
    CortexError) and never return a silently shortened or altered answer: every
    read returns the undamaged answer or raises CorruptRecord, `verify()` returns
    (does not raise) and reports the damage, and an open that fails fails the same
    way when tried again (as a follower and as the writer). Run in a subprocess: a
    crash there fails the test instead of killing pytest.

    Runs 0-2 flip three random bytes each among the data blocks; run "meta" flips
    the byte of the block that holds `meta/actor` (found by its value, which LZ4
    leaves as literal text), so that every open fails on it."""
    base = tmp_path / "base"
    t = Frame("find", "tool", "t")
    with cortex.open(base, actor=ACTOR, clock=FakeClock(), entropy=random.Random(9).randbytes) as c:
        uris = c.write_many([Write(Fact(statement=f"statement number {i} " + "y" * 60, subject="s", predicate="p"), frames=[t], tags=["t1"]) for i in range(300)])
        c._engine.storage.flush()
        data_size = _data_block_bytes(c)
        expected = {
            "resolve": {u: c.resolve(u).data.to_dict() for u in uris},
            "memories": [m.data.to_dict() for m in c.memories()],
            "find": [m.data.to_dict() for m in c.find(tags=["t1"], limit=10_000, order_by="created")],
            "count": c.stats()["memories"],
            "now": NOW.isoformat(),
            "context": [m.id for m in c.context(verb="find", objects={"tool": "t"}, budget_tokens=4000, now=NOW).memories()],
        }
    (tmp_path / "expected.json").write_text(json.dumps(expected))
    ssts = sorted(glob.glob(str(base / "*.sst")))
    assert len(ssts) == 1, f"one flushed SST file expected, found {ssts}"
    sst = ssts[0]
    original = open(sst, "rb").read()
    assert 0 < data_size < len(original)
    actor_at = original.find(ACTOR.encode(), 0, data_size)
    assert actor_at >= 0, "the value of meta/actor is not literal text in the data blocks"

    rng = random.Random(2025)
    runs: dict[str, list[int]] = {str(run): [rng.randrange(0, data_size) for _ in range(3)] for run in range(3)}
    runs["meta"] = [actor_at]
    failures: list[str] = []
    for run, offsets in runs.items():
        store = tmp_path / f"copy-{run}"
        shutil.copytree(base, store)
        data = bytearray(original)
        for offset in offsets:
            data[offset] ^= 0xFF
        with open(store / os.path.basename(sst), "wb") as f:
            f.write(data)
        TALLY["damaged"] += 1
        out = tmp_path / f"result-{run}.json"
        proc = subprocess.run(helper_cmd("corrupt_reader.py", store, ACTOR, tmp_path / "expected.json", out), cwd=REPO, env=subprocess_env(), capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            failures.append(f"run {run}: the reader process died with {proc.returncode}: {proc.stderr[-800:]}")
            continue
        result = json.loads(out.read_text())
        label = f"run {run} (bytes {offsets} of {data_size} in data blocks)"
        failures += [f"{label}: {f}" for f in _judge(result, uris)]
        if run == "meta":
            for mode in ("open", "open_rw"):
                first = result[mode][0]
                if first.get("key") != b"meta/actor".hex():
                    failures.append(f"{label}: {mode} with the meta/actor block damaged gave {first}, not CorruptRecord(meta/actor)")
    emit(request.config, f"reliability-corruption: {len(runs)} SST files with flipped bytes in their data blocks, {len(failures)} problems")
    assert not failures, "\n".join(failures[:40])


def _judge_open(name: str, attempts: list[dict]) -> list[str]:
    """Two opens of the same damaged store: the second fails as the first did (the
    failure released the store), and a failure is a CorruptRecord."""
    first, second = attempts
    failures = []
    if "ok" not in first:
        if not first["cortex"]:
            failures.append(f"{name}: raised {first['error']} (not a CortexError): {first['message'][:120]}")
        elif first["error"] != "CorruptRecord":
            failures.append(f"{name}: raised {first['error']} instead of CorruptRecord: {first['message'][:120]}")
    if first != second:
        failures.append(f"{name}: a second open gave {second.get('error', 'a store')} ({second.get('message', '')[:120]}) after {first.get('error', 'a store')}")
    return failures


def _judge(result: dict, uris: list[str]) -> list[str]:
    failures = _judge_open("open(mode='r')", result["open"]) + _judge_open("open(mode='rw')", result["open_rw"])

    def judge(name: str, o: dict) -> None:
        if "ok" in o:
            if not o["equal"]:
                failures.append(f"{name}: returned a wrong answer without raising")
        elif not o["cortex"]:
            failures.append(f"{name}: raised {o['error']} (not a CortexError): {o.get('message', '')[:120]}")
        elif o["error"] != "CorruptRecord":
            failures.append(f"{name}: raised {o['error']} instead of CorruptRecord")

    if "ok" not in result["open"][0]:
        return failures
    bad_resolves: Counter = Counter()
    example = {}
    for uri, o in result["resolve"].items():
        if "ok" in o:
            kind = None if o["equal"] else "returned a wrong answer without raising"
        elif not o["cortex"]:
            kind = f"raised {o['error']} (not a CortexError): {o.get('message', '')[:100]}"
        elif o["error"] != "CorruptRecord":
            kind = f"raised {o['error']} instead of CorruptRecord"
        elif o["key"] != (b"m/" + raw_id(uri)).hex():
            kind = "raised CorruptRecord naming another key than the memory's head"
        else:
            kind = None
        if kind:
            bad_resolves[kind.split(":")[0]] += 1
            example.setdefault(kind.split(":")[0], f"{uri} {kind}")
    for kind, n in bad_resolves.items():
        failures.append(f"resolve(): {n} of {len(uris)} URIs {kind}; e.g. {example[kind]}")
    for name in ("memories", "context", "find", "stats"):
        judge(name, result[name])
    v = result["verify"]
    if "ok" not in v:
        failures.append(f"verify() raised {v['error']} instead of reporting the damage: {v.get('message', '')[:160]}")
    elif not v["value"]:
        failures.append("verify() is clean although a data block is damaged")
    return failures
