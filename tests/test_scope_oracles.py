"""Scopes without oracles, bound to one store, with selectors that can require every
criterion (docs/scopes.md).

Under a scope an out-of-scope memory and a missing one must cost the same work and
give the same answer. Work is observed without a clock: the Python calls a read makes
(`sys.setprofile`) and the memory it allocates (`tracemalloc`), both deterministic
for the same store state.
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from collections import Counter
from collections.abc import Callable

import msgpack
import pytest

import cortex
from cortex import Fact, Frame, Preference, Scope, Selector, SignedScope
from conftest import ACTOR, FakeClock, open_store
from test_scope import HOUR, PARENT, START, make_scope

GPU = Frame("acquire", "service", "gpu")
MISSING_ID = "01JZZZZZZZZZZZZZZZZZZZZZZZ"


def fact(text: str) -> Fact:
    return Fact(statement=text, subject="customer", predicate="says")


@pytest.fixture
def shop(tmp_path):
    """Preferences in scope, Facts out of it (the scope: types=[Preference])."""
    c = open_store(tmp_path / "s", clock=FakeClock())
    c.trust(PARENT.public_key(), "parent")
    uris = {
        "pref": c.write(Preference(topic="tone", polarity="prefer", rationale="short"), frames=[GPU], tags=["mine"]),
        "pref2": c.write(Preference(topic="pace", polarity="prefer", rationale="fast"), frames=[GPU], tags=["mine"]),
        "hidden": c.write(fact("the card ends in 4242"), frames=[Frame("find", "service", "vault")], tags=["secret"]),
    }
    signed = c.grant(make_scope(Selector(types=["Preference"])), PARENT)
    yield c, uris, signed
    c.close()


def _calls(fn: Callable[[], object]) -> tuple[Counter[str], str]:
    """The Python and C functions a call runs (how often each) and the error it raised."""
    seen: Counter[str] = Counter()

    def profile(frame, event, arg) -> None:
        if event == "call":
            seen[frame.f_code.co_qualname] += 1
        elif event == "c_call":
            seen[getattr(arg, "__qualname__", repr(arg))] += 1

    # A garbage collection that happens to run during the call would add its callbacks
    # (pytest-benchmark's gc timer, ...) to the count: collect first and hold it off.
    gc.collect()
    gc.disable()
    sys.setprofile(profile)
    try:
        fn()
    except cortex.NotFound as exc:
        return seen, str(exc)
    finally:
        sys.setprofile(None)
        gc.enable()
    return seen, ""


def _peak(fn: Callable[[], object]) -> int:
    """Bytes a call allocated at its peak (what it read and decoded)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_resolve_of_an_out_of_scope_memory_does_the_work_of_a_missing_one(shop):
    c, uris, signed = shop
    hidden_id = uris["hidden"].split("/")[3].split("#")[0]
    missing = uris["hidden"].replace(hidden_id, MISSING_ID)
    for _ in range(3):  # warm: the signature, the trusted key, the evaluator
        for uri in (uris["hidden"], missing):
            _calls(lambda uri=uri: c.resolve(uri, scope=signed))
    hidden_calls, hidden_error = _calls(lambda: c.resolve(uris["hidden"], scope=signed))
    missing_calls, missing_error = _calls(lambda: c.resolve(missing, scope=signed))
    assert hidden_error == f"no memory {uris['hidden']}" and missing_error == f"no memory {missing}"
    assert hidden_calls == missing_calls


def test_scoped_find_costs_the_same_whether_hidden_memories_match_or_none_do(shop):
    c, uris, signed = shop
    c.write_many([cortex.Write(fact(f"hidden {i}"), tags=["secret"]) for i in range(3000)])
    for tag in ("secret", "nothing", "secret", "nothing"):  # warm: the scope's members at this state
        assert c.find(tags=[tag], limit=10, scope=signed) == []
    hidden = _peak(lambda: c.find(tags=["secret"], limit=10, scope=signed))
    missing = _peak(lambda: c.find(tags=["nothing"], limit=10, scope=signed))
    # Before, the hidden tag's bucket (3,000 index values) was read and decoded: ~0.5 MB.
    assert abs(hidden - missing) < 16_384, (hidden, missing)
    assert sorted(m.uri for m in c.find(tags=["mine"], limit=10, scope=signed)) == sorted([uris["pref"], uris["pref2"]])


def test_edges_under_a_scope_name_no_out_of_scope_memory(shop):
    c, uris, signed = shop
    c.link(uris["pref"], "references", uris["hidden"])
    c.link(uris["pref"], "references", uris["pref2"])
    c.link(uris["hidden"], "contradicts", uris["pref"])
    listed = c.edges(uris["pref"], direction="both", scope=signed)
    assert [(e.type.name, e.dst) for e in listed] == [("REFERENCES", uris["pref2"].split("/")[3].split("#")[0])]
    assert len(c.edges(uris["pref"], direction="both")) == 3  # unscoped: all of them
    hidden_id = uris["hidden"].split("/")[3].split("#")[0]
    missing = uris["hidden"].replace(hidden_id, MISSING_ID)
    for uri in (uris["hidden"], missing):
        with pytest.raises(cortex.NotFound) as err:
            c.edges(uri, scope=signed)
        assert str(err.value) == f"uri: no memory {uri}"


def test_a_memory_superseded_only_by_a_hidden_one_is_not_stale_under_the_scope(shop):
    c, uris, signed = shop
    c.link(uris["hidden"], "supersedes", uris["pref"])
    assert uris["pref"] not in [m.uri for m in c.find(type="Preference", limit=10)]  # unscoped: stale
    scoped = [m.uri for m in c.find(type="Preference", limit=10, scope=signed)]
    assert uris["pref"] in scoped  # as if the hidden memory did not exist
    newer = c.write(Preference(topic="tone", polarity="prefer", rationale="shorter"))
    c.link(newer, "supersedes", uris["pref"])
    assert uris["pref"] not in [m.uri for m in c.find(type="Preference", limit=10, scope=signed)]


def test_memories_salience_and_stats_take_a_scope(shop):
    c, uris, signed = shop
    assert [m.uri for m in c.memories(scope=signed)] == [uris["pref"], uris["pref2"]]
    assert c.salience(uris["pref"], scope=signed) == c.salience(uris["pref"])
    hidden_id = uris["hidden"].split("/")[3].split("#")[0]
    for ref in (uris["hidden"], hidden_id, MISSING_ID):
        with pytest.raises(cortex.NotFound, match=f"^no memory {ref}$"):
            c.salience(ref, scope=signed)
    stats = c.stats(scope=signed)
    assert (stats["memories"], stats["tombstoned"], stats["by_type"]) == (2, 0, {"Preference": 2})
    assert "root" not in stats and "journal_seq" not in stats
    assert c.stats()["memories"] == 3


def test_a_scope_works_only_on_the_store_it_was_granted_for(tmp_path):
    """Two stores of one actor trusting one key: a scope granted on one is refused
    by the other (and by a store rebuilt from the first one's export)."""
    a, b = (open_store(tmp_path / name, clock=FakeClock()) for name in ("a", "b"))
    try:
        for c in (a, b):
            c.trust(PARENT.public_key(), "parent")
            c.write(Preference(topic="tone", polarity="prefer"))
        signed = a.grant(make_scope(Selector(types=["Preference"])), PARENT)
        assert len(a.find(type="Preference", limit=5, scope=signed)) == 1
        with pytest.raises(cortex.ScopeInvalid, match="not this one"):
            b.find(type="Preference", limit=5, scope=signed)
        a.export_jsonl(tmp_path / "a.jsonl")
        with open_store(tmp_path / "copy", clock=FakeClock()) as copy:
            copy.import_jsonl(tmp_path / "a.jsonl", trust_records=True)
            assert copy.root() == a.root()
            with pytest.raises(cortex.ScopeInvalid, match="not this one"):
                copy.find(type="Preference", limit=5, scope=signed)
        other_store = Scope(Selector(types=["Preference"]), expires_at=START + HOUR, granted_by=ACTOR, granted_to="sub-7",
                            store_id="00" * 16)
        with pytest.raises(cortex.ValidationError, match="store_id"):
            a.grant(other_store, PARENT)
    finally:
        a.close()
        b.close()


@pytest.mark.rocksdb_only("removes the id with RocksDB's own storage layer")
def test_a_store_made_before_store_ids_gets_one_from_its_first_writer(tmp_path):
    from cortex.records import META_STORE_ID
    from cortex.storage.rocksdb import open_rocksdb

    path = tmp_path / "old"
    with open_store(path, clock=FakeClock()) as c:
        c.trust(PARENT.public_key(), "parent")
        c.write(Preference(topic="tone", polarity="prefer"))
        root = c.root()
    storage = open_rocksdb(str(path), read_only=False, cache_mb=8, sync=True)
    storage.write({META_STORE_ID: None})  # as a store written before stores had ids
    storage.close()
    with open_store(path, clock=FakeClock(), mode="r") as reader:
        with pytest.raises(cortex.ValidationError, match="no id yet"):
            reader.grant(make_scope(Selector(types=["Preference"])), PARENT)
    with open_store(path, clock=FakeClock()) as c:
        assert c.root() == root and c.verify() == []  # outside the journal: the root is unchanged
        signed = c.grant(make_scope(Selector(types=["Preference"])), PARENT)
        assert len(c.find(type="Preference", limit=5, scope=signed)) == 1
    with open_store(path, clock=FakeClock(), mode="r") as reader:
        assert len(reader.find(type="Preference", limit=5, scope=signed)) == 1


def test_a_version_1_token_is_refused_with_its_reason(shop):
    c, _, signed = shop
    _, scope_bytes, signer, signature = msgpack.unpackb(signed.to_bytes())
    old = msgpack.unpackb(scope_bytes)[:7]
    old[0], old[1] = old[0][:4], old[1][:4]
    token = msgpack.packb([1, msgpack.packb(old), signer, signature])
    with pytest.raises(cortex.ScopeInvalid, match="version 1 token, made before scopes named their store"):
        SignedScope.from_bytes(token)
    as_json = {**signed.to_dict(), "version": 1}
    with pytest.raises(cortex.ScopeInvalid, match="version 1 token"):
        SignedScope.from_json(json.dumps(as_json))


def test_match_all_hands_over_one_customers_facts(tmp_path):
    c = open_store(tmp_path / "s", clock=FakeClock())
    try:
        c.trust(PARENT.public_key(), "parent")
        a_fact = c.write(fact("A pays monthly"), frames=[GPU], tags=["customer-a"])
        b_fact = c.write(fact("B pays yearly"), frames=[GPU], tags=["customer-b"])
        a_pref = c.write(Preference(topic="tone", polarity="prefer"), frames=[GPU], tags=["customer-a"])
        both = Selector(types=["Fact"], tags=["customer-a"], match="all")
        assert both.matches(b"\0" * 16, 2, ["customer-a"], []) and not both.matches(b"\0" * 16, 2, ["customer-b"], [])
        assert not both.matches(b"\0" * 16, 3, ["customer-a"], [])
        signed = c.grant(make_scope(both), PARENT)
        assert SignedScope.from_bytes(signed.to_bytes()) == signed == SignedScope.from_json(signed.to_json())
        assert signed.scope.include.match == "all"
        bundle = c.context(verb="acquire", objects={"service": "gpu"}, scope=signed)
        assert [m.uri for m in bundle.memories()] == [a_fact]
        assert [m.uri for m in c.find(type="Fact", limit=10, scope=signed)] == [a_fact]
        assert [m.uri for m in c.find(tags=["customer-a"], limit=10, scope=signed)] == [a_fact]
        assert c.resolve(a_fact, scope=signed).uri == a_fact
        for hidden in (b_fact, a_pref):
            with pytest.raises(cortex.NotFound):
                c.resolve(hidden, scope=signed)
        either = c.grant(make_scope(Selector(types=["Fact"], tags=["customer-a"])), PARENT)  # match="any"
        assert sorted(m.uri for m in c.find(tags=["customer-a"], limit=10, scope=either)) == sorted([a_fact, a_pref])
        excluded = c.grant(make_scope(Selector(types=["Fact", "Preference"]), Selector(types=["Fact"], tags=["customer-b"], match="all")), PARENT)
        assert sorted(m.uri for m in c.context(verb="acquire", objects={"service": "gpu"}, scope=excluded).memories()) == sorted([a_fact, a_pref])
        with pytest.raises(cortex.ScopeInvalid, match="match"):
            Selector(types=["Fact"], match="every")
    finally:
        c.close()


def test_a_natural_key_of_a_hidden_memory_reads_as_a_key_nobody_has(shop):
    c, _, signed = shop
    c.write(fact("the vault code is 1234"), key="vault")
    c.write(Preference(topic="tone", polarity="prefer"), key="tone")
    assert c.resolve("key:Preference/tone", scope=signed).data.topic == "tone"
    for ref in ("key:Fact/vault", "key:Fact/nobody"):
        with pytest.raises(cortex.NotFound) as err:
            c.resolve(ref, scope=signed)
        assert str(err.value) == f"no memory {ref}"
    assert "vault code" in c.resolve("key:Fact/vault").data.statement  # unscoped: found
    with pytest.raises(cortex.NotFound, match="no Fact has the key 'nobody'"):
        c.resolve("key:Fact/nobody")


def test_scoped_recall_costs_the_same_whether_hidden_memories_hold_the_words_or_none_do(shop):
    c, uris, signed = shop
    c.write_many([cortex.Write(fact(f"zanzibar ledger entry {i}")) for i in range(3000)])
    for word in ("zanzibar", "quokka", "zanzibar", "quokka"):  # warm
        assert list(c.find(near=word, limit=10, scope=signed)) == []
    hidden = _peak(lambda: c.find(near="zanzibar", limit=10, scope=signed))
    missing = _peak(lambda: c.find(near="quokka", limit=10, scope=signed))
    # Before, the postings of every memory holding the word were read (3,000 of them).
    assert abs(hidden - missing) < 16_384, (hidden, missing)
    assert [m.uri for m in c.find(near="zanzibar", limit=10)][:1] != []  # unscoped: found


def test_a_scoped_bundle_names_no_hidden_superseder_or_contradiction(shop):
    c, uris, signed = shop
    ask = {"verb": "acquire", "objects": {"service": "gpu"}}
    alone = c.context(scope=signed, **ask).to_dict()
    c.link(uris["hidden"], "supersedes", uris["pref"])
    c.link(uris["hidden"], "contradicts", uris["pref2"])
    assert uris["pref"] not in [m.uri for m in c.context(**ask).memories()]  # unscoped: stale
    bundle = c.context(scope=signed, **ask)
    assert uris["pref"] in [m.uri for m in bundle.memories()]
    assert list(bundle.superseded_ids) == [] and bundle.conflicts == []
    got = bundle.to_dict()
    for answer in (got, alone):
        answer.pop("root")
        answer.pop("latency_ms", None)
    assert got == alone  # as if the hidden memory and its edges did not exist
