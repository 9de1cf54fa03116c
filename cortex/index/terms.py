"""The lexical analyzer: the text of a memory and of a query, as index terms.

One set of choices, recorded in every store under `meta/lexical` (`SETTINGS`) when
the store is created, like the token encoding (docs/recall.md explains each):

1. Text: every string a memory's data holds, in field order, depth first (statements,
   summaries, rationales, names, values, the strings in lists, the keys and string
   values of mappings; numbers, flags and times are not text), then its tags.
2. Normalisation: Unicode NFKC, then case folding (`str.casefold`).
3. Words: maximal runs of Unicode letters, digits and combining marks (Python's
   `\\w` without the underscore, so `gpu_inference` is two words), an apostrophe
   between two such runs kept inside the word (`user's`, `don't`).
4. Stop words: Lucene's English stop set, the 33 words `STOP_WORDS` (the list
   `bm25s` uses), removed before stemming.
5. Stemming: the Snowball English stemmer ("porter2") of the `PyStemmer` package.
6. A term longer than `MAX_TERM_BYTES` UTF-8 bytes is cut to that length on a
   character boundary (index keys stay bounded; two such terms sharing their first 64
   bytes are one term).

A change to any of these is a new `ANALYZER` name: a store made with another one gets
its index rebuilt the next time a writer opens it (`cortex.engine`).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import Stemmer

ANALYZER = "cortex.lexical.v1"
STEMMER = "english"  # Snowball's English ("porter2") algorithm, as PyStemmer names it
MAX_TERM_BYTES = 64

# Lucene's English stop set (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`), the list `bm25s` uses.
STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
))

SETTINGS = (f"{ANALYZER} words=unicode-alnum+apostrophe case=nfkc-casefold stop=lucene-english-33 "
            f"stem=snowball-{STEMMER} max-term-bytes={MAX_TERM_BYTES}")

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_local = threading.local()  # PyStemmer's stemmer objects are not safe to share between threads


def _stemmer() -> Any:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer(STEMMER)
    return stemmer


def _cut(term: str) -> str:
    raw = term.encode("utf-8")
    if len(raw) <= MAX_TERM_BYTES:
        return term
    return raw[:MAX_TERM_BYTES].decode("utf-8", errors="ignore")


def words(text: str) -> list[str]:
    """The words of `text`, normalised and case folded, stop words included."""
    if text.isascii():  # NFKC leaves ASCII as it is, and casefold() is lower() there
        return _WORD.findall(text.lower())
    folded = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    return _WORD.findall(folded)


# A term of at most this many characters is within MAX_TERM_BYTES (4 UTF-8 bytes each at most).
_SURELY_SHORT = MAX_TERM_BYTES // 4


def terms(texts: Iterable[str]) -> list[str]:
    """The index terms of `texts`, in order, repeats kept (steps 2-6 above)."""
    kept = [w for text in texts for w in words(text) if w not in STOP_WORDS]
    if not kept:
        return []
    return [t if len(t) <= _SURELY_SHORT else _cut(t) for t in _stemmer().stemWords(kept)]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)


def memory_texts(record: Iterable[Any], tags: Iterable[str]) -> list[str]:
    """The texts of a memory (step 1): the strings of its data record, then its tags."""
    return [*_strings(list(record)), *tags]


def counts(record: Iterable[Any], tags: Iterable[str]) -> tuple[Counter[str], int]:
    """A memory's term frequencies and its length (the number of terms, repeats counted)."""
    found = terms(memory_texts(record, tags))
    return Counter(found), len(found)
