"""Recall by content: the lexical index kept in the write batches, and find(near=...).

The property test writes, updates, tags, tombstones, supersedes and expires memories,
keeps its own model of what each memory says, and compares every `find(near=...)`
with a brute-force BM25 over that model (statistics computed from scratch by the
test, not read from the store). The analyzer (`cortex.index.terms`) has its own
examples below.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cortex
from cortex import Belief, Fact, Preference, Scope, Selector, StoreError, ValidationError, Write
from cortex.index import lexical, terms
from cortex.recall import _max_score as EARLY  # kept before any test patches it
from cortex.salience.score import live_scores
from cortex.storage.rocksdb import open_rocksdb

from conftest import START, FakeClock, open_store

K1, B = 1.2, 0.75
VOCAB = ["billing", "bills", "database", "databases", "Postgres", "running", "runs", "pasta", "Italian", "food",
         "the", "and", "GPU", "inference", "gpu_inference", "déjà", "vu", "café", "user's"]


# ---------------------------------------------------------------------------
# The analyzer


@pytest.mark.no_store
def test_the_analyzer_folds_case_splits_words_drops_stop_words_and_stems():
    assert terms.terms(["The Users' DATABASES are running; gpu_inference at 10:30!"]) == [
        "user", "databas", "run", "gpu", "infer", "10", "30"]
    assert terms.terms(["ＰＡＳＴＡ"]) == ["pasta"]  # NFKC: full-width letters
    assert terms.terms(["Straße STRASSE"]) == ["strass", "strass"]  # case folding, not lower()
    assert terms.terms(["don’t", "don't"]) == ["don't", "don't"]  # the typographic apostrophe is the plain one
    assert terms.terms(["\x00\x01\x7f", "", "the of and", "—…!"]) == []
    assert terms.terms(["x" * 100]) == ["x" * 64]
    assert terms.terms(["é" * 40]) == ["é" * 32]  # cut on a character boundary
    assert terms.SETTINGS.startswith("cortex.lexical.v1 ")


@pytest.mark.no_store
def test_a_memory_is_indexed_by_every_string_of_its_data_and_its_tags():
    data = Preference(topic="cuisine", polarity="prefer", value="Italian", rationale="loves pasta")
    freqs, length = terms.counts(data.to_record(), ["food"])
    assert freqs == Counter({"cuisin": 1, "prefer": 1, "italian": 1, "love": 1, "pasta": 1, "food": 1})
    assert length == 6


# ---------------------------------------------------------------------------
# The index in the write batches


def _lexical_keys(c: cortex.Cortex) -> dict[bytes, bytes]:
    return dict(c._engine.storage.scan_items(lexical.PREFIX))


def test_write_update_tags_and_tombstone_keep_postings_and_statistics_in_the_same_batch(tmp_path):
    with open_store(tmp_path / "s") as c:
        root0 = c.root()
        a = c.write(Fact(statement="Postgres runs billing", subject="billing", predicate="uses"), tags=["infra"])
        b = c.write(Fact(statement="users love pasta", subject="users", predicate="like"))
        stored = _lexical_keys(c)
        assert lexical.decode_totals(stored[lexical.TOTALS_KEY]) == (2, 11)
        assert stored[lexical.df_key("bill")] == (1).to_bytes(8, "big")
        assert c.root() != root0
        c.update(a, Fact(statement="MySQL runs billing", subject="billing", predicate="uses"))
        stored = _lexical_keys(c)
        assert lexical.df_key("postgr") not in stored and lexical.df_key("mysql") in stored
        c.update_head(b, tags=["food", "pasta"])
        assert lexical.decode_totals(_lexical_keys(c)[lexical.TOTALS_KEY]) == (2, 13)
        assert [m.uri for m in c.find(near="pasta", limit=5)] == [c.resolve(b).uri]
        c.tombstone(a, "wrong")
        stored = _lexical_keys(c)
        assert lexical.decode_totals(stored[lexical.TOTALS_KEY]) == (1, 7)
        assert not any(key.endswith(c.resolve(a)._raw_id) for key in stored)
        assert c.find(near="billing mysql", limit=5) == []
        assert c.verify() == []
        c.tombstone(b, "gone")
        assert _lexical_keys(c) == {}  # zero counts are no keys
        assert c.verify() == []


def test_a_rejected_write_leaves_the_index_and_root_unchanged(tmp_path):
    with open_store(tmp_path / "s") as c:
        c.write(Fact(statement="Postgres runs billing", subject="billing", predicate="uses"))
        before, root = _lexical_keys(c), c.root()
        with pytest.raises(cortex.CortexError):
            c.write_many([Write(Fact(statement="pasta", subject="s", predicate="p")), "not a write"])  # type: ignore[list-item]
        assert _lexical_keys(c) == before and c.root() == root


def test_verify_names_a_damaged_posting_and_statistic_and_rebuild_repairs_them(tmp_path):
    with open_store(tmp_path / "s") as c:
        a = c.write(Fact(statement="Postgres runs billing", subject="billing", predicate="uses"))
        c.write(Fact(statement="billing totals", subject="billing", predicate="sums"))
        raw_id = c.resolve(a)._raw_id
        c._engine.storage.write({lexical.posting_key("postgr", raw_id): None, lexical.df_key("bill"): (7).to_bytes(8, "big"),
                                 lexical.posting_key("ghost", raw_id): b"x" * 25})
        problems = c.verify()
        assert any(p.startswith("idx/lx/") and "missing entry" in p for p in problems)
        assert any(p.startswith("idx/lx/") and "stale or corrupt value" in p for p in problems)
        assert any(p.startswith("idx/lx/") and "points at no live record" in p for p in problems)
        assert c.rebuild() == [] and c.verify() == []
        assert [m.uri for m in c.find(near="postgres", limit=3)] == [c.resolve(a).uri]


def test_the_export_does_not_carry_the_index_and_an_import_rebuilds_it(tmp_path):
    with open_store(tmp_path / "s") as c:
        c.write(Fact(statement="Postgres runs billing", subject="billing", predicate="uses"))
        c.write(Fact(statement="users love pasta", subject="users", predicate="like"))
        c.export_jsonl(tmp_path / "x.jsonl")
        expected = _lexical_keys(c)
        hits = [m.uri for m in c.find(near="pasta billing", limit=5)]
    text = (tmp_path / "x.jsonl").read_text()
    assert "idx/lx" not in text and lexical.PREFIX.hex() not in text and lexical.META_LEXICAL.hex() not in text
    with open_store(tmp_path / "t") as d:
        d.import_jsonl(tmp_path / "x.jsonl")
        assert _lexical_keys(d) == expected
        assert [m.uri for m in d.find(near="pasta billing", limit=5)] == hits
        assert d.verify() == []


DATA = json.loads((Path(__file__).parent / "data" / "store_v1.json").read_text())


def _restore_old_store(path: Path) -> None:
    storage = open_rocksdb(str(path), read_only=False, cache_mb=8, sync=False)
    try:
        storage.write({bytes.fromhex(k): bytes.fromhex(v) for k, v in DATA["keys"].items()})
    finally:
        storage.close()


@pytest.mark.rocksdb_only("restores a RocksDB directory written by an older cortex")
def test_a_store_made_before_the_index_gets_it_on_the_first_writer_open(tmp_path):
    _restore_old_store(tmp_path / "old")
    assert lexical.META_LEXICAL.hex() not in DATA["keys"]
    with cortex.open(tmp_path / "old", actor=DATA["actor"], mode="r") as r:
        with pytest.raises(StoreError, match="no lexical index"):
            r.find(near="gpu", limit=3)
    with cortex.open(tmp_path / "old", actor=DATA["actor"]) as c:
        assert c.root() == DATA["root"]  # building the index writes no journal entry
        assert c.verify() == []
        assert all(c._engine.storage.get(bytes.fromhex(k)) == bytes.fromhex(v) for k, v in DATA["keys"].items()
                   if not bytes.fromhex(k).startswith(b"meta/cache_epoch"))
        live = [m for m in c.memories()]
        hits = c.find(near="gpu", limit=50)
        assert hits and all("gpu" in json.dumps(m.data.to_dict()).lower() + " ".join(m.tags) for m in hits)
        assert len(live) >= len(hits)
    with cortex.open(tmp_path / "old", actor=DATA["actor"], mode="r") as r:
        assert [m.uri for m in r.find(near="gpu", limit=50)] == [m.uri for m in hits]


# ---------------------------------------------------------------------------
# find(near=...): its arguments and hostile queries


@pytest.fixture
def small(tmp_path):
    with open_store(tmp_path / "s") as c:
        c.write(Fact(statement="Postgres runs the billing database", subject="billing", predicate="uses"), tags=["infra"])
        c.write(Fact(statement="The users love pasta and Italian food", subject="users", predicate="like"))
        c.write(Preference(topic="food", polarity="prefer", rationale="Italian restaurants near the office"))
        c.write(Belief(statement="billing will move to MySQL", stance="suspect"))
        yield c


def test_near_needs_no_type_or_tag_and_combines_with_type_tags_where_and_form(small):
    c = small
    hits = c.find(near="italian food", limit=10)
    assert [m.type.name for m in hits] == ["PREFERENCE", "FACT"]  # the shorter memory ranks first
    assert all(hits.relevance[m.id] > 0 for m in hits)
    assert hits.relevance[hits[0].id] > hits.relevance[hits[1].id]
    assert [m.type.name for m in c.find(near="italian food", type="Preference", limit=10)] == ["PREFERENCE"]
    assert c.find(near="billing", tags=["infra"], limit=10)[0].data.statement == "Postgres runs the billing database"
    assert [m.data.stance for m in c.find(near="billing", where={"stance": "suspect"}, limit=10)] == ["suspect"]
    one = c.find(near="billing food", budget_tokens=1, form="short")
    assert len(one) == 1  # at least one memory, as find() does
    assert c.find(near="billing", limit=1, late_binding=False) == c.find(near="billing", limit=1)


@pytest.mark.parametrize("near, rule", [
    ("", "holds no word"), ("   \t\n", "holds no word"), ("the and of it", "holds no word"),
    ("\x00\x01\x02\x1b[;\x7f", "holds no word"), ("x " * 600_000, "at most 16384 UTF-8 bytes"),
    (" ".join(f"w{i}" for i in range(300)), "at most 256"), (42, "must be a string"),
])
def test_hostile_queries_are_refused_naming_near(small, near, rule):
    root = small.root()
    with pytest.raises(ValidationError, match=rule) as raised:
        small.find(near=near, limit=5)
    assert raised.value.field == "near"
    assert small.root() == root


def test_long_and_odd_queries_are_answered(small):
    assert small.find(near=" ".join(["pasta"] * 2_000), limit=5)[0].data.subject == "users"  # 10k bytes, one term
    assert small.find(near="pasta\x00\x07billing\u202e", limit=5)  # control characters separate words
    assert small.find(near="zzzunknown", limit=5) == []


def test_near_arguments_are_checked(small):
    with pytest.raises(cortex.Unbounded):
        small.find(near="pasta")
    with pytest.raises(ValidationError, match="order_by"):
        small.find(near="pasta", order_by="created", limit=3)
    with pytest.raises(ValidationError, match="include_tombstoned"):
        small.find(near="pasta", include_tombstoned=True, limit=3)
    with pytest.raises(ValidationError, match="form"):
        small.find(near="pasta", form="tiny", limit=3)


def test_expired_and_superseded_memories_are_left_out(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock=clock) as c:
        old = c.write(Fact(statement="billing uses Postgres", subject="billing", predicate="uses"))
        new = c.write(Fact(statement="billing uses MySQL now", subject="billing", predicate="uses"), supersedes=[old])
        soon = c.write(Fact(statement="billing outage today", subject="billing", predicate="status"),
                       expires_at=START + timedelta(hours=1))
        assert {m.uri for m in c.find(near="billing", limit=9)} == {new, soon}
        assert {m.uri for m in c.find(near="billing", limit=9, include_superseded=True)} == {old, new, soon}
        clock.advance(7200)
        assert [m.uri for m in c.find(near="billing", limit=9)] == [new]


# ---------------------------------------------------------------------------
# The property: exactly a brute-force BM25 over the test's own model


def _texts(kind: str, words: list[str]) -> list[str]:
    text = " ".join(words)
    return [text, "topic", "p"] if kind == "fact" else [text, "believe"]


def _data(kind: str, words: list[str]) -> Fact | Belief:
    text = " ".join(words) or "-"
    return Fact(statement=text, subject="topic", predicate="p") if kind == "fact" else Belief(statement=text, stance="believe")


def _brute(model: dict[str, dict], query: list[str], now_expired: set[str], include_superseded: bool,
           type_name: str | None) -> list[tuple[str, float]]:
    live = {uri: m for uri, m in model.items() if not m["tombstoned"]}
    docs = {uri: Counter(terms.terms(m["texts"] + list(m["tags"]))) for uri, m in live.items()}
    n = len(docs)
    if not n:
        return []
    avgdl = sum(sum(d.values()) for d in docs.values()) / n
    qterms = sorted(set(terms.terms(query)))
    out = []
    for uri, d in docs.items():
        if uri in now_expired or (type_name and live[uri]["type"] != type_name):
            continue
        superseded = any(not model[s]["tombstoned"] for s in live[uri]["superseded_by"])
        if superseded and not include_superseded:
            continue
        score, hit, dl = 0.0, False, sum(d.values())
        for t in qterms:
            tf = d.get(t, 0)
            if not tf:
                continue
            df = sum(1 for other in docs.values() if t in other)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            score += idf * (tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * dl / avgdl))
            hit = True
        if hit:
            out.append((uri, score))
    return out


words_st = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=6)
tags_st = st.lists(st.sampled_from(["food", "billing", "ops"]), max_size=2, unique=True)
op_st = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(["fact", "belief"]), words_st, tags_st, st.booleans(), st.integers(0, 10)),
    st.tuples(st.just("batch"), st.lists(st.tuples(st.sampled_from(["fact", "belief"]), words_st, tags_st), min_size=1, max_size=4)),
    st.tuples(st.just("update"), st.integers(0, 50), words_st),
    st.tuples(st.just("tags"), st.integers(0, 50), tags_st),
    st.tuples(st.just("tombstone"), st.integers(0, 50)),
    st.tuples(st.just("supersede"), st.integers(0, 50), words_st),
)
query_st = st.tuples(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=5), st.integers(1, 12),
                     st.sampled_from([None, "Fact", "Belief"]), st.booleans())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=st.lists(op_st, min_size=1, max_size=14), queries=st.lists(query_st, min_size=1, max_size=4),
       expire_now=st.booleans())
def test_find_near_is_exactly_brute_force_bm25_over_the_live_memories(tmp_path_factory, ops, queries, expire_now):
    clock = FakeClock()
    model: dict[str, dict] = {}
    order: list[str] = []
    with open_store(tmp_path_factory.mktemp("p") / "s", clock=clock) as c:
        for op in ops:
            clock.advance(1)
            if op[0] == "write":
                _, kind, words, tags, expires, importance = op
                at = START + timedelta(days=1) if expires else None
                uri = c.write(_data(kind, words), tags=tags, expires_at=at, importance=importance)
                model[uri] = {"type": "Fact" if kind == "fact" else "Belief", "texts": _texts(kind, words), "tags": tags,
                              "tombstoned": False, "expires": expires, "superseded_by": set()}
                order.append(uri)
            elif op[0] == "batch":
                uris = c.write_many([Write(_data(kind, words), tags=tags) for kind, words, tags in op[1]])
                for uri, (kind, words, tags) in zip(uris, op[1]):
                    model[uri] = {"type": "Fact" if kind == "fact" else "Belief", "texts": _texts(kind, words),
                                  "tags": tags, "tombstoned": False, "expires": False, "superseded_by": set()}
                    order.append(uri)
            elif not order:
                continue
            else:
                uri = order[op[1] % len(order)]
                m = model[uri]
                if op[0] == "tombstone":
                    c.tombstone(uri, "test")
                    m["tombstoned"] = True
                elif m["tombstoned"]:
                    continue
                elif op[0] == "update":
                    kind = "fact" if m["type"] == "Fact" else "belief"
                    c.update(uri, _data(kind, op[2]))
                    m["texts"] = _texts(kind, op[2])
                elif op[0] == "tags":
                    c.update_head(uri, tags=op[2])
                    m["tags"] = op[2]
                else:
                    new = c.write(_data("fact", op[2]), supersedes=[uri])
                    model[new] = {"type": "Fact", "texts": _texts("fact", op[2]), "tags": [], "tombstoned": False,
                                  "expires": False, "superseded_by": set()}
                    order.append(new)
                    m["superseded_by"].add(new)
        if expire_now:
            clock.advance(3 * 86400)
        expired = {uri for uri, m in model.items() if m["expires"] and expire_now}
        ids = {c.resolve(uri).id: uri for uri in model}
        for query, limit, type_name, include_superseded in queries:
            if not terms.terms(query):  # only stop words: refused, naming near
                with pytest.raises(ValidationError, match="holds no word"):
                    c.find(near=" ".join(query), limit=limit)
                continue
            got = c.find(near=" ".join(query), limit=limit, type=type_name, include_superseded=include_superseded)
            want = _brute(model, query, expired, include_superseded, type_name)
            now = clock.now
            salience = {}
            for uri, _ in want:
                s = c.salience(uri)
                salience[uri] = float(live_scores(np.array([int(s.last_used.timestamp() * 1_000_000)]), np.array([s.access_count]),
                                                  np.array([s.citations]), np.array([s.importance]), np.array([s.pinned]),
                                                  int(now.timestamp() * 1_000_000), c.weights())[0])
            want.sort(key=lambda item: (-item[1], -salience[item[0]], c.resolve(item[0]).id))
            assert [(ids[m.id], got.relevance[m.id]) for m in got] == want[:limit]
        assert c.verify() == []


# ---------------------------------------------------------------------------
# Scopes: no score depends on what the scope hides


def _scoped_answer(path: Path, hidden: list[str]) -> list[tuple[str, str, float]]:
    key = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    with open_store(path) as c:
        c.trust(key.public_key(), "parent")
        c.write(Fact(statement="billing runs on Postgres", subject="billing", predicate="uses"), tags=["shared"])
        c.write(Fact(statement="billing invoices go out monthly", subject="billing", predicate="cadence"), tags=["shared"])
        for text in hidden:
            c.write(Fact(statement=text, subject="billing", predicate="secret"), tags=["private"])
        scope = Scope(Selector(tags=["shared"]), expires_at=START + timedelta(hours=1), granted_by=c.actor, granted_to="sub")
        signed = c.grant(scope, key)
        hits = c.find(near="billing postgres secret", limit=10, scope=signed)
        return [(m.data.statement, m.data.predicate, hits.relevance[m.id]) for m in hits]


def test_under_a_scope_results_and_scores_ignore_out_of_scope_memories(tmp_path):
    alone = _scoped_answer(tmp_path / "a", [])
    assert [s for s, _, _ in alone] == ["billing runs on Postgres", "billing invoices go out monthly"]
    hidden = ["billing secret: Postgres password rotates", "billing secret billing secret"] * 3
    assert _scoped_answer(tmp_path / "b", hidden) == alone


# ---------------------------------------------------------------------------
# Copies: migrate and the store of an older cortex


@pytest.mark.rocksdb_only("restores a RocksDB directory written by an older cortex")
def test_migrating_a_store_made_before_the_index_builds_it_in_the_copy(tmp_path):
    _restore_old_store(tmp_path / "old")
    cortex.migrate(tmp_path / "old", tmp_path / "copy")
    with cortex.open(tmp_path / "copy", actor=DATA["actor"], mode="r") as r:
        assert r.verify() == []
        assert r.find(near="gpu", limit=50)


def test_an_upsert_by_natural_key_reindexes_the_memory_in_its_batch(tmp_path):
    with open_store(tmp_path / "s") as c:
        first = c.write(Fact(statement="billing runs on Postgres", subject="billing", predicate="uses"), key="billing-db")
        c.write_many([Write(Fact(statement="billing runs on MySQL", subject="billing", predicate="uses"), key="billing-db",
                            tags=["infra"]),
                      Write(Fact(statement="pasta on fridays", subject="office", predicate="lunch"))])
        assert c.find(near="postgres", limit=5) == []
        hits = c.find(near="mysql infra", limit=5)
        assert [m.id for m in hits] == [c.resolve(first).id] and hits[0].version == 2
        assert lexical.decode_totals(_lexical_keys(c)[lexical.TOTALS_KEY])[0] == 2
        assert c.verify() == []


def test_the_ranking_is_the_same_when_it_is_sorted_in_rounds(tmp_path, monkeypatch):
    from cortex import recall

    with open_store(tmp_path / "s") as c:
        for i in range(40):
            words = ["billing"] * (1 + i % 4) + ["database"] * (i % 3) + ["pasta"] * (i % 5 == 0)
            c.write(Fact(statement=" ".join(words) or "x", subject="s", predicate="p"), importance=i % 11)
        whole = c.find(near="billing database pasta", limit=40)
        monkeypatch.setattr(recall, "_FIRST_RANKED", 2)
        monkeypatch.setattr(recall, "_CHUNK", 3)
        rounds = c.find(near="billing database pasta", limit=40)
        assert [m.id for m in rounds] == [m.id for m in whole] and len(whole) == 40
        assert [rounds.relevance[m.id] for m in rounds] == sorted(whole.relevance.values(), reverse=True)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rare_in=st.lists(st.integers(0, 59), min_size=1, max_size=6), seed=st.integers(0, 1000), limit=st.integers(1, 8),
       common=st.integers(1, 3))
def test_the_early_top_k_equals_scoring_every_posting(tmp_path_factory, monkeypatch, rare_in, seed, limit, common):
    """MaxScore (`cortex.recall._max_score`) stops reading once no unread memory can
    rank in; it must give exactly what scoring every posting gives."""
    from cortex import recall

    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta"]
    with open_store(tmp_path_factory.mktemp("m") / "s") as c:
        items = []
        for i in range(60):
            text = " ".join(rng.choice(words, size=int(rng.integers(1, 8))).tolist())
            if i in rare_in:
                text += " zephyr" * int(rng.integers(1, 3))
            items.append(Write(Fact(statement=text, subject="s", predicate="p"), importance=int(rng.integers(0, 11))))
        c.write_many(items)
        query = "zephyr " + " ".join(words[:common])
        fired = []
        monkeypatch.setattr(recall, "_max_score", lambda *a: fired.append(r := EARLY(*a)) or r)
        fast = c.find(near=query, limit=limit)
        monkeypatch.setattr(recall, "_max_score", lambda *a: None)
        slow = c.find(near=query, limit=limit)
        assert [(m.id, fast.relevance[m.id]) for m in fast] == [(m.id, slow.relevance[m.id]) for m in slow]
        if len(set(rare_in)) >= limit and common == 1:
            assert fired[0] is not None  # one rare word beside a common one: the bound lets it stop early
