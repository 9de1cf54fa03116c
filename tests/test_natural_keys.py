"""Natural keys: `write(data, key=...)` names a memory by (type, key), so writing the
same key again updates that memory instead of piling up a duplicate, and
`resolve("key:<Type>/<key>")` finds it. The key entries are derived from the journal:
written in the write's batch, checked by verify(), recreated by rebuild(), carried
by export and import."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cortex
from cortex import Constraint, Fact, Frame, Identity, Write
from cortex.index import natural_key
from conftest import open_store

GPU = Frame("acquire", "service", "gpu")


def price(amount: str) -> Fact:
    return Fact(statement=f"A100 spot is {amount} USD/h", subject="acme", predicate="price")


def test_the_same_key_twice_is_one_memory_and_equal_data_writes_nothing(store):
    first = store.write(Identity(name="agent-1"), key="self")
    root = store.root()
    again = store.write(Identity(name="agent-1"), key="self")
    assert again == first and store.root() == root  # nothing journaled
    assert store.stats()["by_type"] == {"Identity": 1}
    assert store.resolve("key:Identity/self").uri == first


def test_new_data_under_a_key_is_a_new_version_of_the_same_memory(store):
    v1 = store.write(price("1.40"), frames=[GPU], key="acme/a100")
    v2 = store.write(price("1.55"), frames=[GPU], key="acme/a100")
    assert v2 == v1.replace("#1", "#2")
    found = store.resolve("key:Fact/acme/a100")
    assert (found.uri, found.data.statement) == (v2, "A100 spot is 1.55 USD/h")
    assert store.resolve(v1).data.statement == "A100 spot is 1.40 USD/h"  # the old version stays
    bundle = store.context(verb="acquire", objects={"service": "gpu"})
    assert [m.uri for m in bundle.frame_relevant] == [v2]
    assert store.verify() == []


def test_new_frames_tags_or_importance_under_a_key_change_the_head_only(store):
    uri = store.write(price("1.40"), key="acme/a100")
    store.write(price("1.40"), frames=[GPU], tags=["pricing"], importance=7, key="acme/a100")
    memory = store.resolve("key:Fact/acme/a100")
    assert (memory.uri, memory.frames, memory.tags, memory.importance) == (uri, (GPU,), ("pricing",), 7)
    assert store.verify() == []


def test_keys_are_per_type(store):
    fact = store.write(price("1.40"), key="acme")
    rule = store.write(Constraint(statement="no acme on Fridays", strength="hard", polarity="dont", source="learned"), key="acme")
    assert fact != rule
    assert store.resolve("key:Fact/acme").uri == fact and store.resolve("key:Constraint/acme").uri == rule


def test_a_tombstoned_memory_gives_its_key_to_the_next_write(store):
    old = store.write(price("1.40"), key="acme/a100")
    store.tombstone(old, "acme closed")
    assert store.resolve("key:Fact/acme/a100").tombstoned  # still found, tombstoned
    new = store.write(price("1.55"), key="acme/a100")
    assert new.split("#")[0] != old.split("#")[0]
    assert store.resolve("key:Fact/acme/a100").uri == new
    assert store.verify() == []


def test_a_batch_mixes_new_memories_and_upserts_atomically(store):
    kept = store.write(price("1.40"), key="acme/a100")
    uris = store.write_many([Write(Identity(name="agent-1"), key="self"), Write(price("1.55"), key="acme/a100"),
                             Write(price("3.10"))])
    assert uris[1] == kept.replace("#1", "#2")
    assert store.stats()["memories"] == 3 and store.verify() == []


@pytest.mark.parametrize(("key", "rule"), [
    ("", "must be a non-empty string"),
    ("a" * 257, "must be at most 256 UTF-8 bytes; got 257"),
    ("two\nlines", "must be one line (no line breaks or NUL)"),
    (7, "must be a non-empty string"),
])
def test_a_bad_key_is_refused_and_writes_nothing(store, key, rule):
    root = store.root()
    with pytest.raises(cortex.ValidationError) as caught:
        store.write(price("1.40"), key=key)
    assert (caught.value.field, caught.value.rule) == ("key", rule)
    assert store.root() == root


def test_one_batch_names_a_key_once(store):
    root = store.root()
    with pytest.raises(cortex.ValidationError, match=r"items\[1\]\.key: repeats the key of items\[0\] \(Fact 'k'\)"):
        store.write_many([Write(price("1.40"), key="k"), Write(price("1.55"), key="k")])
    assert store.root() == root


@pytest.mark.parametrize(("ref", "error", "message"), [
    ("key:Fact/missing", cortex.NotFound, "no Fact has the key 'missing'"),
    ("key:Fakt/x", cortex.ValidationError, "uri: unknown memory type 'Fakt' (one of Identity, Fact, Preference"),
    ("key:Fact", cortex.ValidationError, "uri: a natural key reference is key:<Type>/<key>, such as key:Identity/self"),
])
def test_resolving_a_key_that_names_nothing(store, ref, error, message):
    with pytest.raises(error) as caught:
        store.resolve(ref)
    assert str(caught.value).startswith(message)


def test_verify_names_a_missing_key_entry_and_rebuild_restores_it(store):
    store.write(Identity(name="agent-1"), key="self")
    entry = natural_key.key(int(cortex.MemoryType.IDENTITY), "self")
    store._engine.write({entry: None})
    problems = store.verify()
    assert len(problems) == 1 and problems[0].endswith("missing entry") and "idx/key/" in problems[0]
    assert store.rebuild() == [] and store.verify() == []
    assert store.resolve("key:Identity/self").data.name == "agent-1"


def test_keys_survive_a_reopen_and_an_export_and_import(tmp_path):
    with open_store(tmp_path / "s") as c:
        first = c.write(Identity(name="agent-1"), key="self")
        c.export_jsonl(str(tmp_path / "s.jsonl"))
    with open_store(tmp_path / "s") as c:
        assert c.write(Identity(name="agent-1"), key="self") == first
    with open_store(tmp_path / "copy") as copy:
        copy.import_jsonl(str(tmp_path / "s.jsonl"))
        assert copy.write(Identity(name="agent-1", roles=("operator",)), key="self") == first.replace("#1", "#2")
        assert copy.verify() == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["1.40", "1.55", "2.00"])), min_size=1, max_size=12))
def test_each_key_holds_the_last_data_written_under_it(tmp_path_factory, writes):
    with open_store(tmp_path_factory.mktemp("keys") / "s") as c:
        last: dict[str, str] = {}
        for key, amount in writes:
            c.write(price(amount), key=key)
            last[key] = amount
        assert c.stats()["memories"] == len(last)
        assert {k: c.resolve(f"key:Fact/{k}").data.statement for k in last} == {k: f"A100 spot is {a} USD/h" for k, a in last.items()}
        assert c.verify() == []
