"""SecondBrain's ContextPackV2 (seed 002) built from a `cortex.Bundle`.

    pack = context_pack.build(bundle, intent="renew the GPU reservation")

Every field of docs/interop.md's table is present (lists may be empty). The pack is a
pure function of the bundle and the intent: `created_at` is the call's `now`, so a
call with a fixed `now` on the same state gives the same bytes; `pack_id` is
`"cp-"` and the first 32 hex digits of the SHA-256 of the canonical JSON of the
pack without `pack_id`.

Where each field comes from (only the bundle's survivors; texts are the bundle's
renderings in its form):

* `constraints`: every Constraint, hard first, then firm, then soft; inside a
  strength by score descending, id ascending. `policy_controls` holds the hard
  ones again as `{"hard_constraints": [...], "budget_tokens": <the call's budget>}`.
* `preferences`: every Preference. `allowed_actions`: every Capability.
* `durable_facts`: every pinned memory, then every other Fact, Belief, Capability
  and Pattern; `evidence_refs` is the memory URI, then a Belief's evidence_for or a
  Pattern's derived_from; `provenance` the memory's source.
* `relevant_facts`: the frame-relevant survivors not in `durable_facts` that are
  not Events; `evidence`: the frame-relevant Events. Both with `path` = URI and
  `anchor` = the first of the memory's frames that the call asked for, as
  `verb:kind:ref`.
* `prior_decisions`: the outcomes tier (Events), in bundle order: `title` is the
  rendering, `rationale` the Event's summary, `source_path` the URI.
* `episode_state`: every Event survivor (outcomes and frame-relevant), newest first
  (`created_at` descending, id ascending).
* `open_loops`: active Goals; `success_criteria`: their criteria, first seen first.
* `conflicts`: Beliefs whose stance is "doubt" or "suspect" or that have
  evidence_against, then every pair of candidates linked by a live `contradicts`
  edge (`Bundle.conflicts`, artifact id `"<a>~<b>"`).
* `suggested_plan`: one step per Pattern survivor (in score order): title = its
  statement, tool_requirements = the refs of its `tool` frames, risk_level from its
  strength (>= 0.7 low, >= 0.4 medium, else high), no dependencies.
* Lists ordered by score descending, id ascending unless said otherwise;
  `pack_strategy` "memory_first", `web_mode` "off",
  `functional_state` null.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import ValidationError
from ..memory import Memory
from ..model import Belief, Capability, Constraint, Event, Goal, ObjKind, Pattern, Preference
from .canonical import JSONDict, content_hash

if TYPE_CHECKING:
    from ..view import BundleView as Bundle

__all__ = ["build", "SCHEMA_VERSION"]

SCHEMA_VERSION = "context_pack.v2"

_STRENGTH_ORDER = {"hard": 0, "firm": 1, "soft": 2}
_DURABLE_TYPES = ("Fact", "Belief", "Capability", "Pattern")


def build(bundle: Bundle, intent: str) -> JSONDict:
    """The ContextPackV2 of `bundle` for `intent` (see the module docstring)."""
    if not isinstance(intent, str):
        raise ValidationError("intent", f"must be a string, not {type(intent).__name__}", intent)
    view = _View(bundle)
    survivors = view.by_score(bundle.memories())
    pinned_ids = {m.id for m in bundle.pinned}
    durable = list(bundle.pinned) + [m for m in survivors if m.id not in pinned_ids and m.type.type_name in _DURABLE_TYPES]
    durable_ids = {m.id for m in durable}
    frame_relevant = [m for m in view.by_score(bundle.frame_relevant) if m.id not in durable_ids]
    constraints = sorted(
        ((m, m.data) for m in survivors if isinstance(m.data, Constraint)),
        key=lambda pair: (_STRENGTH_ORDER[pair[1].strength], -view.score(pair[0]), pair[0].id),
    )
    goals = [(m, m.data) for m in survivors if isinstance(m.data, Goal) and m.data.status == "active"]
    disputed = {memory_id for pair in bundle.conflicts for memory_id in pair}
    newest_first = sorted(sorted(bundle.memories(), key=lambda m: m.id), key=lambda m: m.created_at, reverse=True)
    pack: JSONDict = {
        "schema_version": SCHEMA_VERSION,
        "created_at": bundle.request["now"],
        "intent": intent,
        "constraints": [view.text(m) for m, _ in constraints],
        "preferences": [view.text(m) for m in survivors if isinstance(m.data, Preference)],
        "durable_facts": [
            {
                "memory_id": m.id,
                "category": m.type.type_name,
                "text": view.text(m),
                "score": view.score(m),
                "evidence_refs": [m.uri, *_evidence(m)],
                "provenance": m.source,
            }
            for m in durable
        ],
        "relevant_facts": [view.anchored(m) for m in frame_relevant if not isinstance(m.data, Event)],
        "evidence": [view.anchored(m) for m in frame_relevant if isinstance(m.data, Event)],
        "prior_decisions": [
            {
                "decision_id": m.id,
                "title": view.text(m),
                "rationale": m.data.summary if isinstance(m.data, Event) else None,
                "source_path": m.uri,
            }
            for m in bundle.outcomes
        ],
        "open_loops": [view.text(m) for m, _ in goals],
        "episode_state": [
            {"episode_id": m.id, "summary": view.text(m), "score": view.score(m)}
            for m in newest_first
            if isinstance(m.data, Event)
        ],
        "conflicts": [
            {"artifact_id": m.id, "text": view.text(m), "score": view.score(m)}
            for m in survivors
            if isinstance(m.data, Belief) and _contradicted(m.id, m.data, disputed)
        ] + [_contradiction(bundle, a, b) for a, b in bundle.conflicts],
        "pack_strategy": "memory_first",
        "suggested_plan": _plan(survivors),
        "allowed_actions": [view.text(m) for m in survivors if isinstance(m.data, Capability)],
        "success_criteria": list(dict.fromkeys(criterion for _, goal in goals for criterion in goal.success_criteria)),
        "policy_controls": {
            "hard_constraints": [view.text(m) for m, data in constraints if data.strength == "hard"],
            "budget_tokens": int(bundle.request["budget_tokens"]),
        },
        "routing_hints": routing_hints(bundle, view.by_score([m for m in survivors if isinstance(m.data, Capability)])),
        "web_mode": "off",
        "functional_state": None,
    }
    pack["pack_id"] = "cp-" + content_hash(pack)[:32]
    return pack


def _contradicted(memory_id: str, data: Belief, disputed: set[str]) -> bool:
    """A doubted Belief, one with evidence against it, or a suspect one that a live
    `contradicts` edge links to another candidate (suspicion alone is no conflict)."""
    if data.stance == "doubt" or data.evidence_against:
        return True
    return data.stance == "suspect" and memory_id in disputed


def routing_hints(bundle: Bundle, capabilities: Sequence[Memory]) -> JSONDict | None:
    """Where the request should go, when the bundle says: `subsystems` are the call's
    objects as `kind:ref`; `suggested_agent` the subject of the best Capability
    survivor (verified ones first), else the ref of an `agent` object of the call;
    `confidence` that Capability's score (1.0 for an agent the call names). None when
    the call names no object and no Capability survived."""
    objects = [(str(kind), str(ref)) for kind, ref in bundle.request["objects"]]
    if not objects and not capabilities:
        return None
    subsystems = [f"{kind}:{ref}" for kind, ref in objects]
    verified = [m for m in capabilities if isinstance(m.data, Capability) and m.data.verified]
    best = (verified or list(capabilities))[:1]
    asked = ", ".join(subsystems) or "no object"
    if best and isinstance(best[0].data, Capability):
        data = best[0].data
        return {"subsystems": subsystems, "suggested_agent": data.subject, "confidence": float(bundle.scores[best[0].id]),
                "reason": f"{data.subject} can {data.capability}{' (verified)' if data.verified else ''}; asked: {asked}"}
    agents = [ref for kind, ref in objects if kind == "agent"]
    if agents:
        return {"subsystems": subsystems, "suggested_agent": agents[0], "confidence": 1.0,
                "reason": f"the call names agent {agents[0]}"}
    return {"subsystems": subsystems, "suggested_agent": None, "confidence": 0.0,
            "reason": f"no capability among the memories for {asked}"}


def _plan(survivors: Sequence[Memory]) -> list[JSONDict]:
    """One step per Pattern survivor, in the order given."""
    steps: list[JSONDict] = []
    for m in survivors:
        data = m.data
        if isinstance(data, Pattern):
            steps.append({
                "step_id": f"step-{len(steps) + 1}",
                "title": data.statement,
                "dependencies": [],
                "tool_requirements": sorted({f.ref for f in m.frames if f.kind is ObjKind.TOOL}),
                "risk_level": "low" if data.strength >= 0.7 else "medium" if data.strength >= 0.4 else "high",
            })
    return steps


def _contradiction(bundle: Bundle, a: str, b: str) -> JSONDict:
    """Two candidates linked by a live `contradicts` edge (`Bundle.conflicts`): both
    texts when they survived the trim, else their ids; the lower of their scores."""
    def text(memory_id: str) -> str:
        return bundle.rendered.get(memory_id, memory_id)

    return {"artifact_id": f"{a}~{b}", "text": f"{text(a)} | contradicts | {text(b)}",
            "score": min(float(bundle.scores[a]), float(bundle.scores[b]))}


class _View:
    """The bundle's score and rendering of a survivor, and its anchor frame."""

    def __init__(self, bundle: Bundle) -> None:
        self._bundle = bundle
        self._asked = {(bundle.request["verb"], kind, ref) for kind, ref in bundle.request["objects"]}

    def score(self, m: Memory) -> float:
        return float(self._bundle.scores[m.id])

    def text(self, m: Memory) -> str:
        return self._bundle.rendered[m.id]

    def by_score(self, memories: Sequence[Memory]) -> list[Memory]:
        return sorted(memories, key=lambda m: (-self.score(m), m.id))

    def anchored(self, m: Memory) -> JSONDict:
        frames = [f"{f.verb.name.lower()}:{f.kind.name.lower()}:{f.ref}" for f in m.frames
                  if (f.verb.name.lower(), f.kind.name.lower(), f.ref) in self._asked]
        return {
            "path": m.uri,
            "anchor": frames[0] if frames else "",
            "text": self.text(m),
            "score": self.score(m),
            "provenance": m.source,
        }


def _evidence(m: Memory) -> tuple[str, ...]:
    data = m.data
    if isinstance(data, Belief):
        return data.evidence_for
    if isinstance(data, Pattern):
        return data.derived_from
    return ()
