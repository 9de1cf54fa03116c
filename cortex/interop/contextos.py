"""Seed 002's compiler output envelope and its ContextOS ten-layer projection, from a `cortex.Bundle`.

    out = contextos.compile_context(bundle, "renew the GPU reservation")
    out["manifests"]["tool_manifest"], out["budget_report"], out["context_ledger"], out["contextos"]
    contextos.verify_projection(out["contextos"])        # its content hash holds

`compile_context` is a pure function of the bundle, the intent and the version: the
same store state and options (a fixed `now`) give the same bytes. What each part
holds is written out in docs/interop-seeds.md; in short:

* `pack`: the bundle's ContextPackV2 (`context_pack.build`);
* `manifests.policy_manifest`: one rule per Constraint survivor (enforcement
  `block` for hard, `require_approval` for firm, `advise` for soft) and the
  Preferences as advisories; `evidence_manifest`: one item per survivor, in bundle
  order, with its tier, score, tokens and provenance; `tool_manifest`: one entry
  per tool (the refs of the survivors' `tool` frames, each Capability survivor, and
  cortex's own `cortex.resolve`, which reads the reachable URIs), each with a
  `capability_class`, `risk_level` and `approval_mode` from the verb it is filed
  under (`TOOL_CLASS_OF_VERB`), raised to `write_irreversible` / `destructive` when a
  payment Event shares its frame, and `blocked` when a hard "dont" Constraint does;
* `runtime_controls`: the call's budget, form, tiers and limits, `web_mode` off,
  the tools that need approval and those blocked;
* `budget_report`: tokens per tier, used and remaining, counts, the first 100 drops
  with their reasons (the ledger has them all), the warnings;
* `context_ledger`: the call's ledger (`ledger.build`) with the pack id and
  reference, the policy rules, the tool capabilities, the evidence and memory block
  ids, the budget warnings and the dropped block ids, its `context_snapshot_hash`
  taken over all of it;
* `contextos`: the ten layers `contract_meta` ... `tone_and_comms`, whose
  `pack_meta.content_hash` is `"sha256:"` + the SHA-256 of the canonical JSON of the
  projection without that key, for immutable `pack_id@version` replay. The schema is
  shipped: `cortex/interop/schemas/contextos_pack.schema.json`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..memory import Memory
from ..model import Capability, Constraint, Event, ObjKind, Preference, Verb
from . import context_pack, ledger
from .canonical import JSONDict, content_hash

if TYPE_CHECKING:
    from ..context import Bundle

__all__ = ["compile_context", "project", "verify_projection", "projection_hash", "TOOL_CLASS_OF_VERB", "LAYERS",
           "SCHEMA_VERSION", "CONTRACT_VERSION"]

SCHEMA_VERSION = "compiler_output.v1"
CONTRACT = "contextos.context_pack"
CONTRACT_VERSION = "v2"
LAYERS = ("contract_meta", "pack_meta", "intelligence_refs", "business_context", "policy_layer", "tooling_layer",
          "decision_layer", "memory_layer", "evaluation_layer", "tone_and_comms")
"""The ten ContextOS layers, in their order."""

TOOL_CLASS_OF_VERB: Mapping[Verb, tuple[str, str, str]] = {
    Verb.FIND: ("observe", "read_safe", "read_only"),
    Verb.MONITOR: ("observe", "read_safe", "read_only"),
    Verb.ANALYZE: ("verify", "read_safe", "read_only"),
    Verb.SCHEDULE: ("act", "write_reversible", "local_write"),
    Verb.BUILD: ("act", "write_reversible", "local_write"),
    Verb.MODIFY: ("act", "write_reversible", "local_write"),
    Verb.DELIVER: ("act", "write_external", "network"),
    Verb.ACQUIRE: ("act", "write_external", "network"),
    Verb.NEGOTIATE: ("act", "write_external", "network"),
    Verb.DELEGATE: ("act", "write_external", "delegated"),
}
"""A tool's (capability_class, risk_level, approval_mode) from the verb its frame is filed under."""
_RISK_ORDER = ("read_safe", "read_sensitive", "write_reversible", "write_external", "write_irreversible")
_NEEDS_APPROVAL = ("network", "delegated", "destructive")
_ENFORCEMENT = {"hard": "block", "firm": "require_approval", "soft": "advise"}
_RESOLVE_TOOL = {"tool": "cortex.resolve", "capability_class": "recall", "risk_level": "read_safe",
                 "approval_mode": "read_only", "sources": [], "blocked_by": [],
                 "reason": "reads the memories the budget left out (the bundle's reachable URIs)"}
_HASH_KEY = "content_hash"
MAX_REPORTED_DROPS = 100
"""The budget report lists the first 100 drops (the ledger lists them all)."""


def compile_context(bundle: Bundle, intent: str, *, version: int = 1) -> JSONDict:
    """The compiler output envelope of `bundle` for `intent` (see the module
    docstring); `version` (an integer >= 1) is the pack's version in `pack_id@version`."""
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValidationError("version", "must be an integer >= 1", version)
    pack = context_pack.build(bundle, intent)
    survivors = bundle.memories()
    tier_of = {m.id: tier for tier, members in (("pinned", bundle.pinned), ("outcomes", bundle.outcomes),
                                                ("frame_relevant", bundle.frame_relevant)) for m in members}
    policy = _policy_manifest(bundle, survivors)
    evidence = {"items": [_evidence(bundle, m, tier_of[m.id]) for m in survivors], "count": len(survivors)}
    tools = _tools(bundle, survivors)
    record = ledger.build(bundle)
    request = bundle.request
    controls = {
        "budget_tokens": int(request["budget_tokens"]),
        "form": bundle.form,
        "include_tiers": list(request["include_tiers"]),
        "outcome_limit": int(request["outcome_limit"]),
        "web_mode": "off",
        "now": request["now"],
        "max_risk_level": max((t["risk_level"] for t in tools if not t["blocked_by"]), key=_RISK_ORDER.index),
        "approval_required": [t["tool"] for t in tools if t["approval_mode"] in _NEEDS_APPROVAL and not t["blocked_by"]],
        "blocked_tools": [t["tool"] for t in tools if t["blocked_by"]],
    }
    budget = int(request["budget_tokens"])
    report = {
        "budget_tokens": budget,
        "used_tokens": bundle.total_tokens,
        "remaining_tokens": max(0, budget - bundle.total_tokens),
        "per_tier": {name: record["tokens"][name] for name in ("pinned", "outcomes", "frame_relevant")},
        "candidates": bundle.candidates,
        "selected": len(survivors),
        "trimmed": bundle.trimmed,
        "superseded": len(bundle.superseded_ids),
        "dropped_count": len(record["dropped_entries"]),
        "dropped": copy.deepcopy(record["dropped_entries"][:MAX_REPORTED_DROPS]),
        "warnings": copy.deepcopy(record["warnings"]),
    }
    evidence_ids = [m.id for m in survivors if tier_of[m.id] != "pinned"]
    compiled_ledger = {k: v for k, v in record.items() if k != ledger.HASH_KEY}
    compiled_ledger.update({
        "pack_id": pack["pack_id"],
        "pack_ref": f"{pack['pack_id']}@{version}",
        "policy_rules": [rule["rule_id"] for rule in policy["rules"]],
        "tool_capabilities": [{k: t[k] for k in ("tool", "capability_class", "risk_level", "approval_mode")} for t in tools],
        "evidence_ids": evidence_ids,
        "memory_block_ids": [m.id for m in survivors],
        "budget_warnings": [w["code"] for w in record["warnings"]],
        "dropped_block_ids": [entry["id"] for entry in record["dropped_entries"]],
    })
    compiled_ledger[ledger.HASH_KEY] = ledger.snapshot_hash(compiled_ledger)
    out: JSONDict = {
        "schema_version": SCHEMA_VERSION,
        "pack": pack,
        "manifests": {"policy_manifest": policy, "evidence_manifest": evidence, "tool_manifest": {"tools": tools}},
        "runtime_controls": controls,
        "budget_report": report,
        "context_ledger": compiled_ledger,
    }
    out["contextos"] = project(out, version=version)
    return out


def project(compiled: Mapping[str, Any], *, version: int = 1) -> JSONDict:
    """The ContextOS ten-layer projection of a compiler output envelope."""
    pack = compiled["pack"]
    manifests = compiled["manifests"]
    compiled_ledger = compiled["context_ledger"]
    tools = manifests["tool_manifest"]["tools"]
    layers: JSONDict = {
        "contract_meta": {"contract": CONTRACT, "contract_version": CONTRACT_VERSION, "generator": "cortex",
                          "source_schema": pack["schema_version"], "compiler_schema": compiled["schema_version"]},
        "pack_meta": {"pack_id": pack["pack_id"], "version": version, "ref": f"{pack['pack_id']}@{version}",
                      "created_at": pack["created_at"], "intent": pack["intent"], "root": compiled_ledger["root"],
                      "context_snapshot_hash": compiled_ledger[ledger.HASH_KEY]},
        "intelligence_refs": {"evidence_ids": list(compiled_ledger["evidence_ids"]),
                              "memory_block_ids": list(compiled_ledger["memory_block_ids"]),
                              "decision_ids": [d["decision_id"] for d in pack["prior_decisions"]],
                              "dropped_block_ids": list(compiled_ledger["dropped_block_ids"])},
        "business_context": {"intent": pack["intent"], "open_loops": list(pack["open_loops"]),
                             "durable_facts": copy.deepcopy(pack["durable_facts"]),
                             "subsystems": list((pack["routing_hints"] or {}).get("subsystems", []))},
        "policy_layer": {"rules": copy.deepcopy(manifests["policy_manifest"]["rules"]),
                         "hard_constraints": list(pack["policy_controls"]["hard_constraints"]),
                         "runtime_controls": copy.deepcopy(compiled["runtime_controls"])},
        "tooling_layer": {"tools": copy.deepcopy(tools), "allowed_actions": list(pack["allowed_actions"]),
                          "approval_modes": {t["tool"]: t["approval_mode"] for t in tools}},
        "decision_layer": {"prior_decisions": copy.deepcopy(pack["prior_decisions"]),
                           "suggested_plan": copy.deepcopy(pack["suggested_plan"]),
                           "routing_hints": copy.deepcopy(pack["routing_hints"]),
                           "conflicts": copy.deepcopy(pack["conflicts"])},
        "memory_layer": {"relevant_facts": copy.deepcopy(pack["relevant_facts"]), "evidence": copy.deepcopy(pack["evidence"]),
                         "episode_state": copy.deepcopy(pack["episode_state"]),
                         "memory_policy": {"form": compiled["runtime_controls"]["form"], "write_back": "journaled",
                                           "forget": "tombstone", "reachable_via": "cortex.resolve"}},
        "evaluation_layer": {"success_criteria": list(pack["success_criteria"]),
                             "evaluator_targets": [{"criterion": c, "target": "met"} for c in pack["success_criteria"]],
                             "budget_report": {k: copy.deepcopy(v) for k, v in compiled["budget_report"].items()
                                               if k != "dropped"}},
        "tone_and_comms": {"preferences": list(pack["preferences"]),
                           "advisories": copy.deepcopy(manifests["policy_manifest"]["advisories"]),
                           "web_mode": pack["web_mode"]},
    }
    layers["pack_meta"][_HASH_KEY] = projection_hash(layers)
    return layers


def projection_hash(layers: Mapping[str, Any]) -> str:
    """`"sha256:"` + the SHA-256 of the canonical JSON of the projection without its hash."""
    meta = {k: v for k, v in layers["pack_meta"].items() if k != _HASH_KEY}
    return "sha256:" + content_hash({**layers, "pack_meta": meta})


def verify_projection(layers: Mapping[str, Any]) -> bool:
    """Whether the projection's `pack_meta.content_hash` is the hash of the rest of it."""
    try:
        return bool(layers["pack_meta"][_HASH_KEY] == projection_hash(layers))
    except (KeyError, TypeError, ValueError):
        return False


def _policy_manifest(bundle: Bundle, survivors: Sequence[Memory]) -> JSONDict:
    rules = []
    advisories = []
    for m in sorted(survivors, key=lambda m: (-float(bundle.scores[m.id]), m.id)):
        data = m.data
        if isinstance(data, Constraint):
            rules.append({"rule_id": m.id, "uri": m.uri, "statement": data.statement, "polarity": data.polarity,
                          "strength": data.strength, "trigger": data.trigger, "enforcement": _ENFORCEMENT[data.strength],
                          "source": data.source, "scope": [_frame_text(f) for f in m.frames]})
        elif isinstance(data, Preference):
            advisories.append({"advisory_id": m.id, "uri": m.uri, "topic": data.topic, "polarity": data.polarity,
                               "strength": data.strength, "value": data.value, "rationale": data.rationale})
    rules.sort(key=lambda r: list(_ENFORCEMENT).index(str(r["strength"])))  # hard first (stable: by score inside)
    return {"rules": rules, "advisories": advisories,
            "hard_rule_count": sum(r["strength"] == "hard" for r in rules)}


def _evidence(bundle: Bundle, m: Memory, tier: str) -> JSONDict:
    return {"evidence_id": m.id, "uri": m.uri, "type": m.type.type_name, "tier": tier, "score": float(bundle.scores[m.id]),
            "tokens": int(bundle.tokens[m.id]), "provenance": m.source, "frames": [_frame_text(f) for f in m.frames]}


def _frame_text(f: Any) -> str:
    return f"{f.verb.name.lower()}:{f.kind.name.lower()}:{f.ref}"


def _tools(bundle: Bundle, survivors: Sequence[Memory]) -> list[JSONDict]:
    """The tool manifest: cortex.resolve, then each tool frame's ref and each
    Capability, by name. A payment Event filed under the tool (a frame whose ref is
    its name) or, for a Capability, under one of the Capability's own frames makes it
    irreversible; a hard "dont" Constraint filed under the tool blocks it."""
    found: dict[str, JSONDict] = {}
    refs: dict[str, set[str]] = {}

    def add(name: str, verb: Verb, m: Memory, reason: str) -> None:
        capability_class, risk, approval = TOOL_CLASS_OF_VERB[verb]
        entry = found.get(name)
        if entry is None or _RISK_ORDER.index(risk) > _RISK_ORDER.index(entry["risk_level"]):
            sources = entry["sources"] if entry else []
            entry = found[name] = {"tool": name, "capability_class": capability_class, "risk_level": risk,
                                   "approval_mode": approval, "sources": sources, "blocked_by": [], "reason": reason}
        if m.uri not in entry["sources"]:
            entry["sources"].append(m.uri)
        refs.setdefault(name, {name})
        if isinstance(m.data, Capability):
            refs[name].update(f.ref for f in m.frames)

    for m in survivors:
        for f in m.frames:
            if f.kind is ObjKind.TOOL:
                add(f.ref, f.verb, m, f"filed under {_frame_text(f)}")
        if isinstance(m.data, Capability):
            add(m.data.capability, m.frames[0].verb if m.frames else Verb.DELEGATE, m,
                f"{m.data.subject} can {m.data.capability}")
    paid = {f.ref for m in survivors if isinstance(m.data, Event) and m.data.kind == "payment" for f in m.frames}
    blockers = [m for m in survivors if isinstance(m.data, Constraint) and m.data.strength == "hard" and m.data.polarity == "dont"]
    for name, entry in found.items():
        if refs[name] & paid:
            entry.update(risk_level="write_irreversible", approval_mode="destructive")
        entry["blocked_by"] = sorted(m.uri for m in blockers if name in {f.ref for f in m.frames})
        entry["sources"].sort()
    return [copy.deepcopy(_RESOLVE_TOOL), *(found[name] for name in sorted(found))]
