"""The options of a `context()` call and their validated, normalised form (`Plan`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Literal

from ..errors import NoTiersIncluded, ValidationError, shown
from ..forms import FORM_NAMES
from ..model import ObjKind, Tier, Verb, check_datetime, check_ref, from_micros, json_value, to_micros
from ..scope import SignedScope, check_signed

DEFAULT_BUDGET_TOKENS = 3000
MAX_BUDGET_TOKENS = 4000
DEFAULT_OUTCOME_LIMIT = 3

# The tiers in bundle order; a row's tier is its index here.
TIER_ORDER = (Tier.PINNED, Tier.OUTCOMES, Tier.FRAME_RELEVANT)
PINNED_TIER = TIER_ORDER.index(Tier.PINNED)
OUTCOMES_TIER = TIER_ORDER.index(Tier.OUTCOMES)
FRAME_TIER = TIER_ORDER.index(Tier.FRAME_RELEVANT)

Form = Literal["short", "medium", "full"]
TierName = Literal["pinned", "outcomes", "frame_relevant"]


@dataclass(frozen=True)
class ContextOpts:
    """Options of `context()`; every field can also be passed as a keyword argument.

    `verb`: a `Verb` or its name; None runs the pinned tier only. `objects`: object
    kind name -> ref. `budget_tokens`: 0 means 3000, above 4000 is capped at 4000.
    `include_tiers`: None for all three, else `Tier` members or their names.
    `outcome_limit`: 0 means 3. `form`: "short", "medium" or "full". `scope`: a
    `cortex.SignedScope` the call is limited to (its budget cap applies, 0 asking
    for the cap). `now`: the instant scores are computed at and the scope's expiry
    is checked at (None: the store clock). `include_superseded`: keep memories that
    a live memory supersedes (left out by default; `cortex.edges`).
    """

    verb: Verb | str | None = None
    objects: Mapping[str, str] = field(default_factory=dict)
    budget_tokens: int = 0
    include_tiers: Collection[Tier | TierName] | None = None
    outcome_limit: int = 0
    form: Form = "medium"
    scope: SignedScope | None = None
    now: datetime | None = None
    include_superseded: bool = False


OPTION_NAMES = frozenset(f.name for f in fields(ContextOpts))


@dataclass(frozen=True, slots=True)
class Plan:
    """A call's options, validated and normalised (`plan()`)."""

    verb: Verb | None
    objects: tuple[tuple[ObjKind, str], ...]
    budget: int
    tiers: frozenset[Tier]
    outcome_limit: int
    form: str
    now: int
    scope: SignedScope | None = None
    requested_budget: int = 0  # as asked for (a scope's cap decides the budget later)
    include_superseded: bool = False

    def included(self) -> list[Tier]:
        """The tiers the call scans, in tier order: the pinned tier if asked for, the
        others only with a verb and objects."""
        tiered = self.verb is not None and bool(self.objects)
        return [t for t in TIER_ORDER if t in self.tiers and (t is Tier.PINNED or tiered)]

    def request(self) -> dict[str, Any]:
        """The normalised options, JSON-ready (the ledger's `request`)."""
        return {
            "verb": None if self.verb is None else self.verb.name.lower(),
            "objects": [[kind.name.lower(), ref] for kind, ref in self.objects],
            "budget_tokens": self.budget,
            "include_tiers": [t.value for t in TIER_ORDER if t in self.tiers],
            "outcome_limit": self.outcome_limit,
            "form": self.form,
            "now": json_value(from_micros(self.now)),
            **({"include_superseded": True} if self.include_superseded else {}),
        }


def effective_budget(requested: int) -> int:
    """The budget a call trims to: 0 asks for the default, the maximum caps it."""
    return DEFAULT_BUDGET_TOKENS if requested == 0 else min(requested, MAX_BUDGET_TOKENS)


def plan(opts: ContextOpts, clock_now: Callable[[], datetime]) -> Plan:
    """Validate every option (even those a verb-less call does not use) and normalise."""
    if not isinstance(opts.objects, Mapping):
        raise ValidationError("objects", "must be a mapping of object kind name to ref", opts.objects)
    objects = sorted({_object(kind, ref) for kind, ref in opts.objects.items()})
    verb = None if opts.verb is None else Verb.parse(opts.verb)
    budget = opts.budget_tokens
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValidationError("budget_tokens", "must be a non-negative integer", budget)
    limit = opts.outcome_limit
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValidationError("outcome_limit", "must be a non-negative integer", limit)
    if opts.form not in FORM_NAMES:
        raise ValidationError("form", f"must be one of {', '.join(FORM_NAMES)}", opts.form)
    if opts.include_tiers is None:
        tiers = frozenset(Tier)
    else:
        if isinstance(opts.include_tiers, (str, bytes, Tier)) or not isinstance(opts.include_tiers, Iterable):
            raise ValidationError("include_tiers", "must be a collection of tiers", opts.include_tiers)
        tiers = frozenset(_tier(t) for t in opts.include_tiers)
        if not tiers:
            raise NoTiersIncluded("include_tiers", "must name at least one tier")
    scope = None if opts.scope is None else check_signed(opts.scope)
    now = check_datetime("now", opts.now) or clock_now()
    return Plan(
        verb=verb,
        objects=tuple(objects),
        budget=effective_budget(budget),
        tiers=tiers,
        outcome_limit=DEFAULT_OUTCOME_LIMIT if limit == 0 else limit,
        form=opts.form,
        now=to_micros(now),
        scope=scope,
        requested_budget=budget,
        include_superseded=_flag("include_superseded", opts.include_superseded),
    )


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(name, "must be a bool", value)
    return value


def _object(kind: object, ref: object) -> tuple[ObjKind, str]:
    try:
        return ObjKind.parse(kind, "objects"), check_ref("objects", ref)
    except ValidationError as exc:
        if exc.field == "objects" and isinstance(kind, str) and kind.upper() in ObjKind.__members__:
            raise type(exc)(f"objects[{shown(kind)}]", exc.rule, ref) from None  # the ref is bad: name its kind
        raise


def _tier(value: object) -> Tier:
    if isinstance(value, Tier):
        return value
    if isinstance(value, str) and value in Tier._value2member_map_:
        return Tier(value)
    raise ValidationError("include_tiers", f"unknown tier {shown(value)}; tiers: pinned, outcomes, frame_relevant", value)
