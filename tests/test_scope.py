"""Scopes (docs/scopes.md): signed, expiring, budget-capped, revocable, leak-free views.

* the values: Selector / Scope validation, canonical bytes, scope_id, the token's
  bytes and JSON forms, malformed input (fuzzed) always `ScopeInvalid`;
* the property: a scoped `context()` equals the unscoped `context()` of a twin store
  that holds only the in-scope memories (same ids, clock and options), and never
  names an out-of-scope memory anywhere;
* refusals (changed bytes, untrusted or untrusted-since keys, expiry, revocation,
  another store's scope), also from a `mode="r"` reader in another process;
* budget caps, out-of-scope resolve indistinguishable from a missing id, violation
  journaling and its rate limit, trust/untrust/revoke across reopen, rebuild, verify.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import msgpack
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import cortex
from cortex import Constraint, Event, Fact, Frame, Goal, Identity, MemoryType, Preference, Scope, Selector, SignedScope
from conftest import ACTOR, START, FakeClock, open_store

GPU = Frame("acquire", "service", "gpu")
CPU = Frame("acquire", "service", "cpu")
HOUR = timedelta(hours=1)


def key_from(seed: int) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(f"key-{seed}".encode()).digest())


PARENT = key_from(1)
OTHER = key_from(2)


def make_scope(include: Selector, exclude: Selector = Selector(), *, expires_at: datetime = START + HOUR, budget: int = 0,
               actor: str = ACTOR) -> Scope:
    return Scope(include, exclude, expires_at=expires_at, budget_tokens=budget, granted_by=actor, granted_to="sub-7")


def fact(text: str) -> Fact:
    return Fact(statement=text, subject="customer-42", predicate="says")


@pytest.fixture
def world(tmp_path):
    """A store with a trusted parent key and a handful of memories on one frame."""
    clock = FakeClock()
    c = open_store(tmp_path / "s", clock=clock)
    uris = {
        "fact": c.write(fact("the quote was 3 USD an hour"), frames=[GPU], tags=["quotes"], importance=5),
        "billing": c.write(fact("the card ends in 4242"), frames=[GPU], tags=["billing"]),
        "pref": c.write(Preference(topic="tone", polarity="prefer", rationale="short answers"), frames=[GPU]),
        "event": c.write(Event(kind="payment", outcome="success", summary="paid 3 USD"), frames=[GPU]),
        "goal": c.write(Goal(statement="keep costs under 100 USD", status="active")),
        "cpu": c.write(fact("cpu is cheap"), frames=[CPU], tags=["quotes"]),
    }
    c.trust(PARENT.public_key(), "parent")
    yield c, clock, uris
    c.close()


def grant(c: cortex.Cortex, scope: Scope | None = None, key: Ed25519PrivateKey = PARENT) -> SignedScope:
    return c.grant(scope or make_scope(Selector(types=["Fact", "Preference"], frames=[GPU]), Selector(tags=["billing"])), key)


def ids_in(bundle: cortex.Bundle) -> set[str]:
    return {m.id for m in bundle.memories()}


def id_of(uri: str) -> str:
    return uri.split("/")[-1].split("#")[0]


# ---------------------------------------------------------------------------
# Values


def test_selector_normalises_and_sorts():
    uri = "cortex://Fact/01JGFJJZ0072TECMQ49PKZ57H6#3"
    s = Selector(types=["preference", MemoryType.FACT, Fact], tags=["b", "a", "b"], ids=[uri, "01jgfjjz0072tecmq49pkz57h6"],
                 frames=[GPU, CPU, Frame("acquire", "service", "gpu")])
    assert s.types == (MemoryType.FACT, MemoryType.PREFERENCE)
    assert s.tags == ("a", "b")
    assert s.ids == ("01JGFJJZ0072TECMQ49PKZ57H6",)
    assert s.frames == (CPU, GPU)
    assert Selector().is_empty() and not s.is_empty()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"types": ["Nope"]}, "types[0]"),
        ({"types": "Fact"}, "types"),
        ({"tags": [""]}, "tags[0]"),
        ({"tags": ["x" * 65]}, "tags[0]"),
        ({"ids": ["not-an-id"]}, "ids[0]"),
        ({"ids": [7]}, "ids[0]"),
        ({"frames": [("acquire", "service", "gpu")]}, "frames[0]"),
        ({"tags": [str(i) for i in range(1025)]}, "tags"),
    ],
)
def test_selector_rejects_bad_input_naming_the_field(kwargs, field):
    with pytest.raises(cortex.ScopeInvalid) as err:
        Selector(**kwargs)
    assert err.value.field == field


def test_scope_validation():
    inc = Selector(types=["Fact"])
    with pytest.raises(cortex.ScopeInvalid, match="expires_at"):
        Scope(inc, expires_at=datetime(2030, 1, 1), granted_by=ACTOR, granted_to="x")  # naive
    with pytest.raises(cortex.ScopeInvalid, match="expires_at"):
        Scope(inc, expires_at=None, granted_by=ACTOR, granted_to="x")  # type: ignore[arg-type]
    with pytest.raises(cortex.ScopeInvalid, match="budget_tokens"):
        Scope(inc, expires_at=START, budget_tokens=-1, granted_by=ACTOR, granted_to="x")
    with pytest.raises(cortex.ScopeInvalid, match="granted_to"):
        Scope(inc, expires_at=START, granted_by=ACTOR, granted_to="")
    with pytest.raises(cortex.ScopeInvalid, match="issued_at"):
        Scope(inc, expires_at=START, granted_by=ACTOR, granted_to="x", issued_at=START + HOUR)
    with pytest.raises(cortex.ScopeInvalid, match="include"):
        Scope("Fact", expires_at=START, granted_by=ACTOR, granted_to="x")  # type: ignore[arg-type]
    assert issubclass(cortex.ScopeInvalid, cortex.ValidationError)
    assert issubclass(cortex.ScopeRevoked, cortex.ScopeInvalid) and issubclass(cortex.ScopeExpired, cortex.ScopeInvalid)


def test_canonical_bytes_and_scope_id():
    a = make_scope(Selector(types=["Preference", "Fact"], tags=["b", "a"]), Selector(tags=["billing"]), budget=1500)
    b = make_scope(Selector(tags=["a", "b", "a"], types=[MemoryType.FACT, "preference"]), Selector(tags=["billing"]), budget=1500)
    assert a == b and a.canonical_bytes() == b.canonical_bytes()
    assert msgpack.unpackb(a.canonical_bytes()) == [
        [[2, 3], ["a", "b"], [], [], "any"], [[], ["billing"], [], [], "any"],
        int((START + HOUR - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds()) * 1_000_000, 1500, ACTOR, "sub-7", None,
        None,  # the store id: grant() fills it in
    ]
    assert a.scope_id == hashlib.sha256(a.canonical_bytes()).hexdigest()
    assert make_scope(Selector(tags=["a"])).scope_id != make_scope(Selector(tags=["b"])).scope_id


def test_token_round_trips_bytes_and_json(world):
    c, _, _ = world
    signed = grant(c, make_scope(Selector(types=["Fact"], ids=[world[2]["pref"]], frames=[GPU]), Selector(tags=["billing"]), budget=900))
    assert signed.signer == "parent" and len(signed.signature) == 64
    assert signed.scope_id == signed.scope.scope_id
    again = SignedScope.from_bytes(signed.to_bytes())
    assert again == signed and again.to_bytes() == signed.to_bytes()
    text = signed.to_json()
    assert SignedScope.from_json(text) == signed
    assert SignedScope.from_json(json.dumps(json.loads(text), indent=2)) == signed
    obj = json.loads(text)
    assert obj["scope"]["include"]["frames"] == [{"verb": "acquire", "kind": "service", "ref": "gpu"}]
    assert obj["scope"]["budget_tokens"] == 900 and obj["signer"] == "parent" and obj["scope_id"] == signed.scope_id


def test_non_canonical_encodings_are_refused(world):
    c, _, _ = world
    signed = grant(c)
    version, scope_bytes, signer, signature = msgpack.unpackb(signed.to_bytes())
    rec = msgpack.unpackb(scope_bytes)
    rec[1][1] = ["billing", "billing"]  # a duplicate
    unsorted = msgpack.packb([version, msgpack.packb(rec), signer, signature])
    with pytest.raises(cortex.ScopeInvalid, match="canonical"):
        SignedScope.from_bytes(unsorted)
    token = signed.to_bytes()
    assert token[:2] == b"\x94\x02"
    with pytest.raises(cortex.ScopeInvalid, match="canonical"):
        SignedScope.from_bytes(b"\x94\xcc\x02" + token[2:])  # the version as a uint8: same value, other bytes
    with pytest.raises(cortex.ScopeInvalid, match="msgpack"):
        SignedScope.from_bytes(token + b"\x00")
    with pytest.raises(cortex.ScopeInvalid, match="msgpack"):
        SignedScope.from_bytes(token[:-1])
    padded = msgpack.packb([version, scope_bytes, signer, signature], use_bin_type=False)  # bytes as str
    with pytest.raises(cortex.ScopeInvalid):
        SignedScope.from_bytes(padded)
    obj = json.loads(signed.to_json())
    obj["scope_id"] = "0" * 64
    with pytest.raises(cortex.ScopeInvalid, match="scope_id"):
        SignedScope.from_json(json.dumps(obj))


def _hostile(ints):
    return st.recursive(
        st.none() | st.booleans() | ints | st.floats() | st.text(max_size=20) | st.binary(max_size=70),
        lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=10), inner, max_size=6),
        max_leaves=30,
    )


hostile = _hostile(st.integers(-(2**70), 2**70))
hostile_msgpack = _hostile(st.integers(-(2**63), 2**64 - 1) | st.sampled_from([0, 1, 2, 7, 10, 255, 2**53]))
# Values shaped like a token, with hostile parts: [2, scope bytes, signer, signature].
selector_like = st.lists(st.lists(hostile_msgpack | st.integers(0, 12) | st.text(max_size=5), max_size=3), min_size=4, max_size=4).map(
    lambda parts: [*parts, "all"])
scope_like = st.tuples(selector_like, selector_like, hostile_msgpack | st.integers(0, 2**62), hostile_msgpack | st.integers(0, 5000),
                       hostile_msgpack | st.just(ACTOR), st.text(max_size=5), st.none() | hostile_msgpack,
                       st.none() | st.binary(min_size=16, max_size=16) | hostile_msgpack).map(list)
token_like = st.tuples(st.just(2) | st.just(1) | hostile_msgpack, scope_like.map(lambda v: msgpack.packb(v, use_bin_type=True)) | hostile_msgpack,
                       st.just("parent") | hostile_msgpack, st.binary(min_size=64, max_size=64) | hostile_msgpack).map(list)


@pytest.mark.no_store
@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=300), hostile_msgpack.map(lambda v: msgpack.packb(v, use_bin_type=True)),
                 token_like.map(lambda v: msgpack.packb(v, use_bin_type=True))))
def test_fuzzed_bytes_raise_scope_invalid_only(raw):
    with pytest.raises(cortex.ScopeInvalid):
        SignedScope.from_bytes(raw)


@pytest.mark.no_store
@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), hostile.map(lambda v: json.dumps(v, default=repr)), st.binary(max_size=50)))
def test_fuzzed_json_raises_scope_invalid_only(text):
    with pytest.raises(cortex.ScopeInvalid):
        SignedScope.from_json(text)


def _mutations(token: dict):
    """Structurally valid tokens with one field changed."""
    for path, value in [(("signer",), 7), (("version",), 3), (("scope", "include", "types"), ["Nope"]),
                        (("scope", "include", "frames"), [{"verb": "x", "kind": "service", "ref": "gpu"}]),
                        (("scope", "expires_at"), "2030-01-01T00:00:00"), (("scope", "budget_tokens"), True),
                        (("scope", "exclude"), {}), (("signature",), "zz" * 64), (("scope",), [])]:
        changed = json.loads(json.dumps(token))
        target = changed
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        yield changed


def test_json_with_one_bad_field_raises_scope_invalid(world):
    signed = grant(world[0])
    for changed in _mutations(json.loads(signed.to_json())):
        with pytest.raises(cortex.ScopeInvalid):
            SignedScope.from_json(json.dumps(changed))


# ---------------------------------------------------------------------------
# Using a scope


def test_scoped_context_resolve_find(world):
    c, _, u = world
    signed = grant(c)
    b = c.context(verb="acquire", objects={"service": "gpu"}, scope=signed)
    assert ids_in(b) == {id_of(u["fact"]), id_of(u["pref"]), id_of(u["event"])}  # the event by its frame
    assert c.resolve(u["fact"], scope=signed).uri == u["fact"]
    assert [m.uri for m in c.find(type="Fact", limit=10, scope=signed)] == [u["fact"], u["cpu"]]  # not billing
    assert [m.uri for m in c.find(tags=["billing"], limit=10, scope=signed)] == []
    assert c.scope_violations() == {}
    same_scope_bad_signature = SignedScope(signed.scope, signed.signer, bytes(64))  # same scope_id as the good one
    with pytest.raises(cortex.ScopeInvalid, match="signature"):
        c.context(verb="acquire", objects={"service": "gpu"}, scope=same_scope_bad_signature)


def test_changed_byte_anywhere_is_refused_and_returns_nothing(world):
    c, _, u = world
    signed = grant(c)
    token = signed.to_bytes()
    root = c.root()
    rng = random.Random(3)
    for i in range(len(token)):
        changed = bytearray(token)
        changed[i] = (changed[i] + rng.randint(1, 255)) % 256
        try:
            forged = SignedScope.from_bytes(bytes(changed))
        except cortex.ScopeInvalid:
            continue
        for call in (lambda: c.context(verb="acquire", objects={"service": "gpu"}, scope=forged),
                     lambda: c.resolve(u["fact"], scope=forged), lambda: c.find(type="Fact", limit=5, scope=forged)):
            with pytest.raises(cortex.ScopeInvalid):
                call()
    assert c.root() == root and c.scope_violations() == {}


def test_tampered_scope_with_forged_fields_is_refused(world):
    """A sub-agent that widens its scope (new fields, old signature) gets nothing."""
    c, _, u = world
    signed = grant(c)
    wider = SignedScope(make_scope(Selector(types=list(MemoryType))), signed.signer, signed.signature)
    with pytest.raises(cortex.ScopeInvalid, match="signature"):
        c.context(verb="acquire", objects={"service": "gpu"}, scope=wider)
    with pytest.raises(cortex.ScopeInvalid, match="signature"):
        c.resolve(u["billing"], scope=wider)
    with pytest.raises(cortex.ScopeInvalid):
        c.context(scope=signed.to_bytes())  # the token must be parsed: bytes are not a scope


def test_untrusted_and_untrusted_since_keys(world):
    c, _, u = world
    with pytest.raises(cortex.ValidationError, match="not trusted"):
        c.grant(make_scope(Selector(types=["Fact"])), OTHER)
    forged = SignedScope(make_scope(Selector(types=["Fact"])), "parent", OTHER.sign(make_scope(Selector(types=["Fact"])).canonical_bytes()))
    with pytest.raises(cortex.ScopeInvalid, match="signature"):
        c.context(scope=forged)
    signed = grant(c)
    c.untrust("parent")
    for call in (lambda: c.context(verb="acquire", objects={"service": "gpu"}, scope=signed),
                 lambda: c.resolve(u["fact"], scope=signed), lambda: c.find(type="Fact", limit=3, scope=signed)):
        with pytest.raises(cortex.ScopeInvalid, match="does not trust"):
            call()
    c.trust(OTHER.public_key(), "parent")  # the name comes back with another key
    with pytest.raises(cortex.ScopeInvalid, match="signature"):
        c.context(scope=signed)
    c.untrust("parent")
    c.trust(PARENT.public_key().public_bytes_raw(), "parent")  # the original key again (raw bytes)
    assert ids_in(c.context(verb="acquire", objects={"service": "gpu"}, scope=signed))


def test_expired_by_the_call_now_or_the_store_clock(world):
    c, clock, u = world
    signed = grant(c)
    with pytest.raises(cortex.ScopeExpired):
        c.context(scope=signed, now=START + HOUR)
    assert c.context(scope=signed, now=START + HOUR - timedelta(microseconds=1)).pinned == []
    clock.advance(3600)
    with pytest.raises(cortex.ScopeExpired):
        c.context(scope=signed, now=START)  # an old `now` does not revive it
    with pytest.raises(cortex.ScopeExpired):
        c.resolve(u["fact"], scope=signed)
    with pytest.raises(cortex.ScopeExpired):
        c.find(type="Fact", limit=1, scope=signed)


def test_revoked_scope_is_refused_from_then_on(world):
    c, _, u = world
    signed = grant(c)
    other = grant(c, make_scope(Selector(types=["Fact"])))
    root = c.root()
    c.revoke(signed.scope_id)
    assert c.root() != root
    root = c.root()
    c.revoke(signed)  # idempotent: nothing written
    assert c.root() == root
    for call in (lambda: c.context(scope=signed), lambda: c.resolve(u["fact"], scope=signed),
                 lambda: c.find(type="Fact", limit=3, scope=signed)):
        with pytest.raises(cortex.ScopeRevoked):
            call()
    assert c.resolve(u["fact"], scope=other).uri == u["fact"]
    with pytest.raises(cortex.ValidationError, match="scope_id"):
        c.revoke("abc")


def test_scope_for_another_store_is_refused(world, tmp_path):
    c, clock, u = world
    with open_store(tmp_path / "other", clock=clock, actor="agent-2") as other:
        other.trust(PARENT.public_key(), "parent")
        theirs = other.grant(make_scope(Selector(types=list(MemoryType)), actor="agent-2"), PARENT)
        with pytest.raises(cortex.ValidationError, match="granted_by"):
            other.grant(make_scope(Selector(types=["Fact"])), PARENT)
    with pytest.raises(cortex.ScopeInvalid, match="agent-2"):
        c.context(verb="acquire", objects={"service": "gpu"}, scope=theirs)
    with pytest.raises(cortex.ScopeInvalid, match="agent-2"):
        c.resolve(u["fact"], scope=theirs)


def test_budget_cap(world):
    c, _, u = world
    signed = grant(c, make_scope(Selector(types=list(MemoryType)), budget=20))
    b = c.context(verb="acquire", objects={"service": "gpu"}, scope=signed)
    assert b.request["budget_tokens"] == 20 and b.total_tokens <= 20 and b.trimmed > 0
    assert c.context(verb="acquire", objects={"service": "gpu"}, scope=signed, budget_tokens=15).request["budget_tokens"] == 15
    root = c.root()
    with pytest.raises(cortex.BudgetExceeded) as err:
        c.context(verb="acquire", objects={"service": "gpu"}, scope=signed, budget_tokens=21)
    assert err.value.field == "budget_tokens" and isinstance(err.value, cortex.ValidationError)
    assert c.scope_violations() == {signed.scope_id: 1} and c.root() != root  # journaled
    assert sum(m.tokens["medium"] for m in c.find(type="Fact", limit=10, scope=signed)) <= 20  # None: the cap
    with pytest.raises(cortex.BudgetExceeded):
        c.find(type="Fact", budget_tokens=21, scope=signed)
    uncapped = grant(c, make_scope(Selector(types=list(MemoryType))))
    assert c.context(scope=uncapped, budget_tokens=0).request["budget_tokens"] == 3000


def test_out_of_scope_resolve_is_indistinguishable_from_a_missing_id(world):
    c, _, u = world
    signed = grant(c)
    hidden = u["billing"]
    missing = hidden[:-8] + ("Z" if hidden[-8] != "Z" else "Y") + hidden[-7:]
    errors = []
    for uri in (hidden, missing):
        with pytest.raises(cortex.NotFound) as err:
            c.resolve(uri, scope=signed)
        errors.append(err.value)
    assert type(errors[0]) is type(errors[1]) is cortex.NotFound
    assert [str(e) for e in errors] == [f"no memory {hidden}", f"no memory {missing}"]
    assert errors[0].args == (f"no memory {hidden}",) and errors[1].args == (f"no memory {missing}",)
    assert c.scope_violations() == {signed.scope_id: 2}  # both count: no oracle in the log either
    assert c.resolve(hidden).uri == hidden  # unscoped, it is there


def test_find_filters_silently(world):
    c, _, u = world
    signed = grant(c)
    root = c.root()
    assert [m.uri for m in c.find(type="Fact", limit=10, scope=signed)] == [u["fact"], u["cpu"]]
    assert c.find(type="Goal", limit=10, scope=signed) == []
    assert c.scope_violations() == {} and c.root() == root


def test_a_scoped_read_without_violation_writes_nothing(world):
    c, _, u = world
    signed = grant(c)
    root = c.root()
    c.context(verb="acquire", objects={"service": "gpu"}, scope=signed)
    c.resolve(u["fact"], scope=signed)
    c.find(type="Fact", limit=3, scope=signed)
    assert c.root() == root


def test_violations_are_journaled_and_rate_limited(world):
    c, clock, u = world
    signed = grant(c)
    seq = c.stats()["journal_seq"]
    for _ in range(25):
        with pytest.raises(cortex.NotFound):
            c.resolve(u["billing"], scope=signed)
    assert c.scope_violations() == {signed.scope_id: 25}
    assert c.stats()["journal_seq"] == seq + 20  # a burst of 20, the rest counted only
    clock.advance(0.5)  # five more tokens
    for _ in range(7):
        with pytest.raises(cortex.BudgetExceeded):
            c.context(scope=grant(c, make_scope(Selector(types=["Fact"]), budget=10)), budget_tokens=11)
    assert c.stats()["journal_seq"] == seq + 25
    entries = [e for e in _journal(c) if e["kind"] == "violation"]
    assert len(entries) == 25
    first = entries[0]["payload"]
    assert first["scope"] == bytes.fromhex(signed.scope_id) and first["what"] == "resolve" and first["detail"] == u["billing"]
    assert entries[20]["payload"]["what"] == "budget" and entries[20]["payload"]["held_back"] == 0
    assert c.verify() == []
    clock.advance(10)
    with pytest.raises(cortex.NotFound):
        c.resolve(u["billing"], scope=signed)
    assert _journal(c)[-1]["payload"]["held_back"] == 5  # the resolves the limit held back


def _journal(c: cortex.Cortex) -> list[dict]:
    return [msgpack.unpackb(v[32:], raw=False) for _, v in c._engine.storage.scan_items(b"j/")]


def test_reader_violations_go_to_the_logger_under_the_same_limit(world, caplog):
    c, _, u = world
    signed = grant(c)
    with cortex.open(c.path, actor=ACTOR, mode="r", clock=FakeClock()) as r, caplog.at_level(logging.WARNING, logger="cortex.scope"):
        root = r.root()
        for _ in range(30):
            with pytest.raises(cortex.NotFound):
                r.resolve(u["billing"], scope=signed)
        assert r.scope_violations() == {signed.scope_id: 30}
        assert r.root() == root
    logged = [rec for rec in caplog.records if rec.name == "cortex.scope"]
    assert len(logged) == 20 and signed.scope_id in logged[0].getMessage()


def test_trust_validation(world, tmp_path):
    c, _, _ = world
    root = c.root()
    c.trust(PARENT.public_key(), "parent")  # the same again: nothing written
    assert c.root() == root
    with pytest.raises(cortex.ValidationError, match="already names another key"):
        c.trust(OTHER.public_key(), "parent")
    with pytest.raises(cortex.ValidationError, match="already trusted as 'parent'"):
        c.trust(PARENT.public_key(), "second")
    with pytest.raises(cortex.ValidationError, match="public_key"):
        c.trust(b"short", "x")
    with pytest.raises(cortex.ValidationError, match="name"):
        c.trust(OTHER.public_key(), "")
    with pytest.raises(cortex.ValidationError, match="no trusted key"):
        c.untrust("nobody")
    with pytest.raises(cortex.ValidationError, match="expires_at"):
        c.grant(make_scope(Selector(types=["Fact"]), expires_at=START), PARENT)
    assert c.root() == root
    with cortex.open(c.path, actor=ACTOR, mode="r") as r, pytest.raises(cortex.ReadOnlyStore):
        r.trust(OTHER.public_key(), "other")


def test_trust_untrust_revoke_survive_reopen_and_rebuild(tmp_path):
    clock = FakeClock()
    path = tmp_path / "s"
    with open_store(path, clock=clock) as c:
        uri = c.write(fact("x"), frames=[GPU])
        c.trust(PARENT.public_key(), "parent")
        c.trust(OTHER.public_key(), "other")
        kept = grant(c, make_scope(Selector(types=["Fact"])))
        revoked = grant(c, make_scope(Selector(types=["Fact"], tags=["t"])))
        by_other = grant(c, make_scope(Selector(types=["Fact"])), OTHER)
        c.revoke(revoked.scope_id)
        c.untrust("other")
    with open_store(path, clock=clock) as c:
        assert c.resolve(uri, scope=kept).uri == uri
        with pytest.raises(cortex.ScopeRevoked):
            c.resolve(uri, scope=revoked)
        with pytest.raises(cortex.ScopeInvalid, match="does not trust"):
            c.resolve(uri, scope=by_other)
        assert c.verify() == []
        storage = c._engine.storage
        derived = {k: v for p in (b"meta/trust/", b"meta/revoked/") for k, v in storage.scan_items(p)}
        assert sorted(derived) == [b"meta/revoked/" + bytes.fromhex(revoked.scope_id), b"meta/trust/parent"]
        storage.write({k: None for k in derived})  # lose every derived scope record
        with cortex.open(path, actor=ACTOR, mode="r") as reader, pytest.raises(cortex.ScopeInvalid, match="does not trust"):
            reader.resolve(uri, scope=kept)  # a handle opened now reads the (damaged) records
        assert c.verify() == [f"meta/revoked/{revoked.scope_id}: missing entry", f"meta/trust/{b'parent'.hex()}: missing entry"]
        storage.write({b"meta/trust/parent": msgpack.packb([OTHER.public_key().public_bytes_raw(), 1])})  # a swapped key
        assert c.verify() == [f"meta/trust/{b'parent'.hex()}: stale or corrupt value", f"meta/revoked/{revoked.scope_id}: missing entry"]
        storage.write({b"meta/trust/intruder": msgpack.packb([OTHER.public_key().public_bytes_raw(), 1])})
        assert f"meta/trust/{b'intruder'.hex()}: entry points at no live record" in c.verify()
        assert c.rebuild() == []
        assert c.verify() == []
        assert {k: v for p in (b"meta/trust/", b"meta/revoked/") for k, v in storage.scan_items(p)} == derived
        assert c.resolve(uri, scope=kept).uri == uri
        with pytest.raises(cortex.ScopeRevoked):
            c.resolve(uri, scope=revoked)


def test_scope_sets_follow_writes(world):
    """A handle keeps a scope's id sets between calls and moves them forward from the
    journal: writes and tag changes after the first call are reflected exactly."""
    c, clock, u = world
    signed = grant(c, make_scope(Selector(tags=["vip"], frames=[CPU]), Selector(tags=["billing"])))
    query = {"verb": "acquire", "objects": {"service": "gpu"}}
    assert ids_in(c.context(scope=signed, **query)) == set()
    clock.advance(1)
    new = c.write(fact("vip detail"), frames=[GPU], tags=["vip"])
    c.update_head(u["fact"], tags=["vip"])
    c.update_head(u["pref"], tags=["vip", "billing"])
    c.update_head(u["cpu"], frames=[GPU])  # leaves the CPU frame
    first = c.context(scope=signed, **query)
    assert ids_in(first) == {id_of(new), id_of(u["fact"])}
    with cortex.open(c.path, actor=ACTOR, mode="r", clock=clock) as fresh:  # nothing cached
        assert fresh.context(scope=signed, now=clock.now, **query).to_json() == c.context(scope=signed, now=clock.now, **query).to_json()
    c.update_head(u["fact"], tags=["plain"])
    assert ids_in(c.context(scope=signed, **query)) == {id_of(new)}


def test_threads_share_a_scoped_handle_while_it_writes(world):
    """Readers on several threads use one scope while the handle writes: every bundle
    holds in-scope memories only, and the last one matches a handle that starts fresh."""
    import threading

    c, clock, _ = world
    signed = grant(c, make_scope(Selector(tags=["vip"]), Selector(tags=["billing"])))
    query = {"verb": "acquire", "objects": {"service": "gpu"}}
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                for m in c.context(scope=signed, **query).memories():
                    assert "vip" in m.tags and "billing" not in m.tags
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(40):
        uri = c.write(fact(f"note {i}"), frames=[GPU], tags=["vip"] if i % 2 else ["plain"])
        if i % 3 == 0:
            c.update_head(uri, tags=["vip", "billing"])
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    with cortex.open(c.path, actor=ACTOR, mode="r", clock=clock) as fresh:
        assert fresh.context(scope=signed, now=clock.now, **query).to_json() == c.context(scope=signed, now=clock.now, **query).to_json()


def test_tag_hash_collision_fails_closed(world):
    """An index bucket may hold another tag with the same 64-bit hash: the include
    set is confirmed on the heads, so such a memory stays out."""
    c, _, u = world
    storage = c._engine.storage
    from cortex.index import by_tag  # the bucket layout, to plant a colliding entry

    impostor = id_of(u["billing"])
    key, value = next((k, v) for k, v in storage.scan_items(by_tag.prefix("billing")))
    storage.write({by_tag.prefix("quotes") + key[len(by_tag.prefix("billing")):]: value})
    signed = grant(c, make_scope(Selector(tags=["quotes"])))
    b = c.context(verb="acquire", objects={"service": "gpu"}, scope=signed)
    assert ids_in(b) == {id_of(u["fact"])} and impostor not in b.to_json()
    assert {m.uri for m in c.find(type="Fact", limit=10, scope=signed)} == {u["fact"], u["cpu"]}


# ---------------------------------------------------------------------------
# A reader in another process

_READER = r"""
import json, sys
import cortex
from cortex import SignedScope
path, actor, tokens, uris = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
out = {}
with cortex.open(path, actor=actor, mode="r") as r:
    for name, hex_token in tokens.items():
        results = []
        try:
            scope = SignedScope.from_bytes(bytes.fromhex(hex_token))
        except cortex.CortexError as exc:
            out[name] = ["parse", type(exc).__name__]
            continue
        calls = [lambda: sorted(m.id for m in r.context(verb="acquire", objects={"service": "gpu"}, scope=scope).memories()),
                 lambda: [r.resolve(u, scope=scope).id for u in uris],
                 lambda: sorted(m.id for m in r.find(type="Fact", limit=10, scope=scope))]
        for call in calls:
            try:
                results.append(["ok", call()])
            except cortex.CortexError as exc:
                results.append(["error", type(exc).__name__])
        out[name] = results
print(json.dumps(out))
"""


def _reader(path, tokens: dict[str, bytes], uris: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", _READER, str(path), ACTOR, json.dumps({k: v.hex() for k, v in tokens.items()}), json.dumps(uris)],
                          capture_output=True, text=True, timeout=120, cwd=os.path.dirname(__file__))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.rocksdb_only('the child process is given the directory path')
def test_refusals_from_a_reader_in_another_process(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock=clock, actor=ACTOR) as c, open_store(tmp_path / "o", clock=clock, actor="agent-2") as o:
        f = c.write(fact("visible"), frames=[GPU])
        c.write(fact("hidden"), frames=[GPU], tags=["billing"])
        for store in (c, o):
            store.trust(PARENT.public_key(), "parent")
            store.trust(OTHER.public_key(), "other")
        # valid until the reader's system clock passes it: the reader uses its real clock
        far = datetime.now(timezone.utc) + timedelta(days=3650)
        include, exclude = Selector(types=["Fact"]), Selector(tags=["billing"])
        good = c.grant(make_scope(include, exclude, expires_at=far), PARENT)
        since = c.grant(make_scope(include, exclude, expires_at=far), OTHER)
        expired = c.grant(make_scope(include, exclude, expires_at=START + HOUR), PARENT)
        revoked = c.grant(make_scope(include, exclude, expires_at=far, budget=5), PARENT)
        foreign = o.grant(make_scope(include, expires_at=far, actor="agent-2"), PARENT)
        changed = bytearray(good.to_bytes())
        changed[-1] ^= 1
        signature_changed = bytes(changed)
        changed = bytearray(good.to_bytes())
        changed[20] ^= 1
        c.untrust("other")
        c.revoke(revoked)
        tokens = {"good": good.to_bytes(), "since": since.to_bytes(), "expired": expired.to_bytes(), "revoked": revoked.to_bytes(),
                  "foreign": foreign.to_bytes(), "signature": signature_changed, "body": bytes(changed)}
        # the reader opens after the writes: it sees the trust changes and the revocation
        out = _reader(tmp_path / "s", tokens, [f])
    assert out["good"] == [["ok", [id_of(f)]], ["ok", [id_of(f)]], ["ok", [id_of(f)]]]
    assert out["since"] == [["error", "ScopeInvalid"]] * 3
    assert out["expired"] == [["error", "ScopeExpired"]] * 3
    assert out["revoked"] == [["error", "ScopeRevoked"]] * 3
    assert out["foreign"] == [["error", "ScopeInvalid"]] * 3
    assert out["signature"] == [["error", "ScopeInvalid"]] * 3
    assert out["body"] in ([["error", "ScopeInvalid"]] * 3, ["parse", "ScopeInvalid"])


def test_a_running_reader_refuses_a_scope_once_it_catches_up(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock=clock) as c:
        uri = c.write(fact("x"), frames=[GPU])
        c.trust(PARENT.public_key(), "parent")
        signed = grant(c, make_scope(Selector(types=["Fact"]), expires_at=datetime.now(timezone.utc) + timedelta(days=3650)))
        with cortex.open(c.path, actor=ACTOR, mode="r") as r:
            assert r.resolve(uri, scope=signed).uri == uri
            c.revoke(signed)
            r.refresh()
            for call in (lambda: r.context(scope=signed), lambda: r.resolve(uri, scope=signed), lambda: r.find(type="Fact", limit=1, scope=signed)):
                with pytest.raises(cortex.ScopeRevoked):
                    call()


# ---------------------------------------------------------------------------
# The property: scoped context() == unscoped context() over the in-scope memories

TAGS = ["a", "b", "billing"]
REFS = ["gpu", "cpu"]
KINDS = ["service", "model"]


def _data(kind: str, text: str):
    if kind == "fact":
        return fact(text)
    if kind == "pref":
        return Preference(topic=text, polarity="prefer", rationale=text)
    if kind == "event":
        return Event(kind="payment", outcome="success", summary=text)
    if kind == "goal":
        return Goal(statement=text, status="active")
    if kind == "constraint":
        return Constraint(statement=text, strength="hard", polarity="do", source="learned")
    return Identity(name=text)


frames_st = st.builds(lambda kind, ref: Frame("acquire", kind, ref), st.sampled_from(KINDS), st.sampled_from(REFS))
memory_st = st.fixed_dictionaries({
    "kind": st.sampled_from(["fact", "event", "pref", "fact", "event", "goal", "constraint", "identity"]),
    "frames": st.lists(frames_st, min_size=1, max_size=2),
    "tags": st.lists(st.sampled_from(TAGS), max_size=2),
    "importance": st.integers(0, 10),
    "words": st.integers(1, 30),
    "tombstone": st.integers(0, 5).map(lambda n: n == 5),
    "bump": st.integers(0, 4).map(lambda n: n == 4),
    "expires_in": st.one_of(st.none(), st.none(), st.none(), st.integers(1, 40)),
})


def selector_st(count: int, size: int):
    return st.builds(
        lambda types, tags, ids, frames: (types, tags, ids, frames),
        st.lists(st.sampled_from(["Fact", "Event", "Preference", "Goal", "Constraint", "Identity"]), max_size=size + 1),
        st.lists(st.sampled_from(TAGS), max_size=size),
        st.lists(st.integers(0, count - 1), max_size=size + 1),
        st.lists(frames_st, max_size=size),
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), memories=st.lists(memory_st, min_size=6, max_size=18))
def test_scoped_context_equals_context_over_the_in_scope_memories(tmp_path_factory, data, memories):
    tmp = tmp_path_factory.mktemp("prop")
    include = data.draw(selector_st(len(memories), 2).filter(any), label="include")
    exclude = data.draw(selector_st(len(memories), 1), label="exclude")
    include_match, exclude_match = data.draw(st.tuples(*[st.sampled_from(["any", "all"])] * 2), label="match")
    options = data.draw(st.fixed_dictionaries({
        "objects": st.dictionaries(st.sampled_from(KINDS), st.sampled_from(REFS), min_size=1, max_size=2),
        "budget_tokens": st.one_of(st.integers(1, 60), st.just(4000)),
        "form": st.sampled_from(["short", "medium", "full"]),
        "outcome_limit": st.integers(0, 3),
    }), label="options")

    # The original store, written one memory a millisecond (so ids never depend on order).
    clock = FakeClock()
    bytes_log: list[bytes] = []
    rng = random.Random(5)

    def entropy(n: int) -> bytes:
        chunk = rng.randbytes(n)
        bytes_log.append(chunk)
        return chunk

    ops = []  # (at, kind, index)
    for i, spec in enumerate(memories):
        ops.append((START + timedelta(seconds=i), "write", i))
        if spec["bump"]:
            ops.append((START + timedelta(seconds=i, milliseconds=500), "bump", i))
    ops += [(START + timedelta(seconds=len(memories) + i), "tombstone", i) for i, spec in enumerate(memories) if spec["tombstone"]]
    ops.sort(key=lambda op: op[0])

    def writes(store, keep):
        uris: dict[int, str] = {}
        for at, kind, i in ops:
            if i not in keep:
                continue
            clock.now = at
            spec = memories[i]
            if kind == "write":
                expires = None if spec["expires_in"] is None else START + timedelta(seconds=spec["expires_in"])
                uris[i] = store.write(_data(spec["kind"], f"memory {i} " + "word " * spec["words"]), frames=spec["frames"],
                                      tags=spec["tags"], importance=spec["importance"], expires_at=expires)
            elif kind == "bump":
                store.update_head(uris[i], importance=(spec["importance"] + 3) % 11)
            else:
                store.tombstone(uris[i], "gone")
        return uris

    with cortex.open(tmp / "full", actor=ACTOR, clock=clock, entropy=entropy) as full:
        uris = writes(full, set(range(len(memories))))
        full.trust(PARENT.public_key(), "parent")
        ids = [id_of(uris[i]) for i in range(len(memories))]

        def selector(spec, match):
            types, tags, picks, frames = spec
            return Selector(types=types, tags=tags, ids=[uris[i] if k % 2 else ids[i] for k, i in enumerate(picks)], frames=frames,
                            match=match)

        scope = make_scope(selector(include, include_match), selector(exclude, exclude_match), expires_at=START + timedelta(days=365))
        signed = full.grant(scope, PARENT)

        def matches(spec, match, i):
            types, tags, picks, frames = spec
            m = memories[i]
            hits = [(bool(types), _data(m["kind"], "x").TYPE.type_name in types), (bool(picks), i in picks),
                    (bool(tags), any(t in tags for t in m["tags"])), (bool(frames), any(f in frames for f in m["frames"]))]
            if match == "any":
                return any(hit for _, hit in hits)
            given = [hit for named, hit in hits if named]
            return bool(given) and all(given)

        inside = {i for i in range(len(memories)) if matches(include, include_match, i) and not matches(exclude, exclude_match, i)}
        now = START + timedelta(days=2)
        query = {"verb": "acquire", "now": now, **options}
        scoped = full.context(scope=signed, **query)
        unscoped_full = full.context(**query)

        # The twin: only the in-scope memories, same ids (same random bits, same clock).
        chunks = [bytes_log[i] for i in sorted(inside)]
        with cortex.open(tmp / "twin", actor=ACTOR, clock=clock, entropy=lambda n: chunks.pop(0)) as twin:
            twin_uris = writes(twin, inside)
            assert [twin_uris[i] for i in sorted(inside)] == [uris[i] for i in sorted(inside)]
            expected = twin.context(**query)
            # The other scoped reads answer as the twin's unscoped ones.
            assert [m.uri for m in full.memories(include_tombstoned=True, scope=signed)] == [m.uri for m in twin.memories(include_tombstoned=True)]
            counted = {k: v for k, v in twin.stats().items() if k not in ("root", "journal_seq", "path")}
            assert {k: v for k, v in full.stats(scope=signed).items() if k != "path"} == counted
            for kind in ("Fact", "Event", "Preference", "Goal", "Constraint", "Identity"):
                found = {m.uri for m in full.find(type=kind, limit=100, include_tombstoned=True, scope=signed)}
                assert found == {m.uri for m in twin.find(type=kind, limit=100, include_tombstoned=True)}

        got, want = scoped.to_dict(), expected.to_dict()
        got.pop("root")
        want.pop("root")
        assert got == want
        assert list(scoped.dropped_ids) == list(expected.dropped_ids)
        assert scoped.to_markdown().split("_form=")[0] == expected.to_markdown().split("_form=")[0]

        # Nothing out of scope anywhere.
        hidden = [ids[i] for i in range(len(memories)) if i not in inside]
        text = scoped.to_json() + scoped.to_markdown() + " ".join(scoped.dropped_ids) + json.dumps(list(scoped.scores))
        assert not any(h in text for h in hidden)
        event(f"scoped survivors: {min(len(scoped.memories()), 3)}+, trimmed: {scoped.trimmed > 0}, "
              f"scope hid candidates: {len(scoped.scores) < len(unscoped_full.scores)}")
