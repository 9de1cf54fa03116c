"""Ids (ULIDs) and URIs: docs/data-model.md ("IDs are ULIDs ...", "URIs are ...") and docs/data-model.md
(write_many reads the clock once; ids ascend in item order)."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cortex
from cortex import BadURI, Fact, MemoryType, Preference, ValidationError, Write
from cortex.ids import URI, IdGenerator, decode_id, encode_id, encode_ids, format_uri, format_uris, parse_uri
from cortex.model import to_micros

from conftest import FakeClock, open_store

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ULID_RE = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
GOOD_ID = "01JGFJJZ0072TECMQ49PKZ57H6"


def fact(i: int = 0) -> Fact:
    return Fact(statement=f"statement {i}", subject="subject", predicate="predicate")


def crockford_int(text: str) -> int:
    n = 0
    for ch in text:
        n = n * 32 + CROCKFORD.index(ch)
    return n


# ---------------------------------------------------------------------------
# URI format / parse


def test_format_uri_layout():
    raw = bytes(range(16))
    uri = format_uri(MemoryType.PREFERENCE, raw, 3)
    assert uri == f"cortex://Preference/{encode_id(raw)}#3"
    assert str(URI(MemoryType.PREFERENCE, raw, 3)) == uri


def test_parse_uri_fields():
    parsed = parse_uri(f"cortex://Event/{GOOD_ID}#12")
    assert parsed.type is MemoryType.EVENT
    assert parsed.id == decode_id(GOOD_ID)
    assert parsed.version == 12


@pytest.mark.parametrize("mtype", list(MemoryType))
def test_every_type_name_round_trips(mtype):
    raw = bytes(range(16, 32))
    text = format_uri(mtype, raw, 1)
    assert text.startswith(f"cortex://{mtype.type_name}/")
    assert parse_uri(text) == URI(mtype, raw, 1)


def test_type_names_are_the_class_names():
    assert [m.type_name for m in MemoryType] == [
        "Identity", "Fact", "Preference", "Belief", "Event", "Goal", "Constraint", "Capability", "Pattern",
    ]


@settings(max_examples=50, deadline=None)
@given(
    mtype=st.sampled_from(list(MemoryType)),
    raw=st.binary(min_size=16, max_size=16),
    version=st.integers(min_value=1, max_value=2**32 - 1),
)
def test_uri_round_trip_property(mtype, raw, version):
    text = format_uri(mtype, raw, version)
    parsed = parse_uri(text)
    assert parsed == URI(mtype, raw, version)
    assert format_uri(parsed.type, parsed.id, parsed.version) == text
    assert ULID_RE.fullmatch(text.split("/")[-1].split("#")[0])


@settings(max_examples=50, deadline=None)
@given(raw=st.binary(min_size=16, max_size=16))
def test_id_text_round_trip_and_order_property(raw):
    text = encode_id(raw)
    assert len(text) == 26
    assert ULID_RE.fullmatch(text)
    assert decode_id(text) == raw
    assert crockford_int(text) == int.from_bytes(raw, "big")


@settings(max_examples=50, deadline=None)
@given(a=st.binary(min_size=16, max_size=16), b=st.binary(min_size=16, max_size=16))
def test_id_text_sorts_like_bytes_property(a, b):
    assert (encode_id(a) < encode_id(b)) == (a < b)


# Ids that set each of the 26 digits alone, all ones, and the highest and lowest.
_EDGE_IDS = [(1 << k).to_bytes(16, "big") for k in range(0, 128, 5)] + [bytes(16), b"\xff" * 16]


@given(raws=st.lists(st.binary(min_size=16, max_size=16), max_size=80))
def test_batch_encoding_equals_one_by_one_property(raws):
    raws = raws + _EDGE_IDS
    assert encode_ids(raws) == [encode_id(raw) for raw in raws]
    versions = list(range(1, len(raws) + 1))
    types = [list(MemoryType)[i % len(MemoryType)] for i in range(len(raws))]
    assert format_uris(types, raws, versions) == [format_uri(t, raw, v) for t, raw, v in zip(types, raws, versions)]


def test_batch_encoding_of_nothing_is_empty_and_of_many_is_in_order():
    assert encode_ids([]) == [] and format_uris([], [], []) == []
    rng = random.Random(5)
    many = [rng.randbytes(16) for _ in range(5_000)] + [i.to_bytes(16, "big") for i in range(5_000)]
    assert encode_ids(many) == [encode_id(raw) for raw in many]


BAD_URIS = [
    pytest.param(f"http://Fact/{GOOD_ID}#1", id="wrong-scheme"),
    pytest.param(f"cortex:/Fact/{GOOD_ID}#1", id="one-slash"),
    pytest.param(f"Cortex://Fact/{GOOD_ID}#1", id="scheme-case"),
    pytest.param(f"cortex://Memo/{GOOD_ID}#1", id="unknown-type"),
    pytest.param(f"cortex://fact/{GOOD_ID}#1", id="type-lower-case"),
    pytest.param(f"cortex://FACT/{GOOD_ID}#1", id="type-upper-case"),
    pytest.param(f"cortex:///{GOOD_ID}#1", id="no-type"),
    pytest.param(f"cortex://Fact/{GOOD_ID[:-1]}#1", id="ulid-25-chars"),
    pytest.param(f"cortex://Fact/{GOOD_ID}0#1", id="ulid-27-chars"),
    pytest.param(f"cortex://Fact/{GOOD_ID[:-1]}U#1", id="ulid-U"),
    pytest.param(f"cortex://Fact/{GOOD_ID[:-1]}I#1", id="ulid-I"),
    pytest.param(f"cortex://Fact/{GOOD_ID[:-1]}L#1", id="ulid-L"),
    pytest.param(f"cortex://Fact/{GOOD_ID[:-1]}O#1", id="ulid-O"),
    pytest.param(f"cortex://Fact/{GOOD_ID.lower()}#1", id="ulid-lower-case"),
    pytest.param(f"cortex://Fact/8{GOOD_ID[1:]}#1", id="ulid-overflows-128-bits"),
    pytest.param(f"cortex://Fact/{GOOD_ID}#0", id="version-0"),
    pytest.param(f"cortex://Fact/{GOOD_ID}#latest", id="version-latest"),
    pytest.param(f"cortex://Fact/{GOOD_ID}#-1", id="version-negative"),
    pytest.param(f"cortex://Fact/{GOOD_ID}#01", id="version-leading-zero"),
    pytest.param(f"cortex://Fact/{GOOD_ID}#", id="version-empty"),
    pytest.param(f"cortex://Fact/{GOOD_ID}#{2**32}", id="version-too-large"),
    pytest.param(f"cortex://Fact/{GOOD_ID}", id="missing-hash"),
    pytest.param(f"cortex://Fact/{GOOD_ID}1", id="missing-hash-digits-appended"),
    pytest.param(f"cortex://Fact/{GOOD_ID}#1 ", id="trailing-space"),
    pytest.param(f"cortex://Fact/{GOOD_ID}#1\n", id="trailing-newline"),
    pytest.param(f" cortex://Fact/{GOOD_ID}#1", id="leading-space"),
    pytest.param("", id="empty"),
]


@pytest.mark.parametrize("text", BAD_URIS)
def test_malformed_uri_raises_bad_uri(text):
    with pytest.raises(BadURI) as info:
        parse_uri(text)
    assert info.value.field == "uri"
    assert isinstance(info.value, ValidationError)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("value", [None, 1, b"cortex://Fact/" + GOOD_ID.encode() + b"#1"])
def test_non_string_uri_raises_bad_uri(value):
    with pytest.raises(BadURI) as info:
        parse_uri(value)
    assert info.value.field == "uri"


def test_largest_version_parses():
    assert parse_uri(f"cortex://Fact/{GOOD_ID}#{2**32 - 1}").version == 2**32 - 1


@pytest.mark.parametrize("text", ["", "0" * 25, "0" * 27, "0" * 25 + "U", "8" + "0" * 25])
def test_decode_id_rejects_bad_ids(text):
    with pytest.raises(BadURI):
        decode_id(text)


# A URI without `#version` names a memory's latest version in every store call
# (tests/test_naming.py); it is malformed only as a version's URI (`parse_uri`).
@pytest.mark.parametrize("text", [row.values[0] for row in BAD_URIS if row.id != "missing-hash"])
def test_store_calls_reject_malformed_uris(store, text):
    uri = store.write(fact())
    before = store.root()
    for call in (
        lambda: store.resolve(text),
        lambda: store.update(text, fact(1)),
        lambda: store.update_head(text, importance=3),
        lambda: store.tombstone(text, "reason"),
    ):
        with pytest.raises(BadURI) as info:
            call()
        assert info.value.field == "uri"
    assert store.root() == before
    assert store.resolve(uri).version == 1


# ---------------------------------------------------------------------------
# ULIDs from the store


def test_ids_are_26_char_ulids_carrying_the_clock_millisecond(store, clock):
    clock.advance(0.123456)
    uris = [store.write(fact(i)) for i in range(3)]
    millis = to_micros(clock.now) // 1000
    for uri in uris:
        m = store.resolve(uri)
        assert len(m.id) == 26
        assert ULID_RE.fullmatch(m.id)
        assert uri == f"cortex://Fact/{m.id}#1"
        assert crockford_int(m.id) >> 80 == millis


def test_ids_strictly_increase_across_writes_in_one_millisecond(store):
    ids = [store.resolve(store.write(fact(i))).id for i in range(40)]
    assert len(set(ids)) == 40
    assert ids == sorted(ids)
    raw = [decode_id(i) for i in ids]
    assert all(a < b for a, b in zip(raw, raw[1:]))


def descending_entropy():
    """Random bits that go down with every call: ids stay increasing only if the
    generator makes them so."""
    counter = [10_000]

    def entropy(n: int) -> bytes:
        counter[0] -= 1
        return counter[0].to_bytes(n, "big")

    return entropy


def test_ids_increase_even_when_random_bits_decrease(tmp_path):
    clock = FakeClock()
    with open_store(tmp_path / "s", clock, entropy=descending_entropy()) as s:
        singles = [s.resolve(s.write(fact(i))).id for i in range(5)]
        batch = [s.resolve(u).id for u in s.write_many([Write(fact(i)) for i in range(10)])]
    ids = singles + batch
    assert len(set(ids)) == 15
    assert ids == sorted(ids)


def test_write_many_ids_ascend_in_item_order(store):
    items = [Write(fact(i)) for i in range(30)]
    uris = store.write_many(items)
    assert len(uris) == 30
    ids = [store.resolve(u).id for u in uris]
    assert ids == sorted(ids) and len(set(ids)) == 30
    assert [store.resolve(u).data for u in uris] == [w.data for w in items]


def test_write_many_reads_the_clock_once(tmp_path):
    clock = FakeClock(tick=0.005)  # every call to the clock moves it on by 5 ms
    with open_store(tmp_path / "s", clock) as s:
        uris = s.write_many([Write(fact(i)) for i in range(10)] + [Write(Preference(topic="t", polarity="avoid"))])
        memories = [s.resolve(u) for u in uris]
        stamps = {m.created_at for m in memories}
        assert len(stamps) == 1
        assert {m.updated_at for m in memories} == stamps
        millis = {crockford_int(m.id) >> 80 for m in memories}
        assert millis == {to_micros(stamps.pop()) // 1000}
        later = s.resolve(s.write(fact(99)))
        assert later.created_at > memories[0].created_at
        assert later.id > memories[-1].id


def test_write_after_reopen_at_the_same_instant_never_replaces_a_memory(tmp_path):
    """Same clock reading, same entropy (both injected, as open() allows): the new
    memory must get a new id, and the first memory must stay as it was."""
    path = tmp_path / "s"
    clock = FakeClock()
    with open_store(path, clock) as s:
        first = s.write(fact(1))
        kept = s.resolve(first)
    with open_store(path, clock) as s:
        second = s.write(fact(2))
        assert second != first
        assert s.resolve(first) == kept
        assert s.resolve(second).data == fact(2)
        assert s.resolve(second).id > kept.id
        assert [m.uri for m in s.memories()] == [first, second]


def test_write_many_of_nothing_writes_nothing(store):
    assert store.write_many([]) == []
    assert store.root() == "0" * 64
    assert list(store.memories(include_tombstoned=True)) == []


def test_resolve_latest_by_id(store, clock):
    uri = store.write(fact(1))
    m = store.resolve(uri)
    clock.advance(1)
    store.update(uri, fact(2))
    latest = store.resolve_latest(m.id)
    assert latest.version == 2 and latest.data == fact(2) and latest.id == m.id
    with pytest.raises(cortex.NotFound):
        store.resolve_latest(encode_id(bytes(16)))
    with pytest.raises(BadURI):
        store.resolve_latest("not-an-id")


def test_resolve_unknown_id_raises_not_found(store):
    store.write(fact())
    raw = random.Random(1).randbytes(16)
    with pytest.raises(cortex.NotFound) as info:
        store.resolve(format_uri(MemoryType.FACT, raw, 1))
    assert isinstance(info.value, LookupError)


def test_resolve_with_the_wrong_type_name_raises_not_found(store):
    uri = store.write(fact())
    wrong = uri.replace("cortex://Fact/", "cortex://Belief/")
    with pytest.raises(cortex.NotFound):
        store.resolve(wrong)


def test_a_batch_draws_its_random_bits_in_one_call():
    calls = []

    def entropy(n: int) -> bytes:
        calls.append(n)
        return bytes(i % 251 for i in range(n))

    gen = IdGenerator(entropy)
    ids = gen.next_many(1_700_000_000_000, 4)
    assert calls == [40]
    assert ids == sorted(ids) and len(set(ids)) == 4
    assert all(i[:6] == (1_700_000_000_000).to_bytes(6, "big") for i in ids)
    assert gen.next(1_700_000_000_000) > ids[-1]  # the generator goes on above the batch


def test_a_short_entropy_answer_for_a_batch_is_rejected():
    gen = IdGenerator(lambda n: b"\x00" * (n - 1))
    with pytest.raises(cortex.ValidationError) as err:
        gen.next_many(1, 3)
    assert err.value.field == "entropy"
