"""The parts of an HMX-F fingerprint (seed 003) beyond its artifacts and statistics:
`compiler_state`, `tags`, `expires_at`, versioning, and what an import keeps.

* `compiler_state(weights)`: cortex's adaptive parameters are the salience weights
  `attest()` learns (docs/interop-seeds.md); each is reported against its default
  as the baseline. cortex keeps no count of adaptations, so `adaptation_count` is
  1 for a parameter that moved from its baseline and 0 for one that did not.
* `check_optional(fingerprint)`: the optional fields' shapes (`tags` at most 64
  strings, `expires_at` ISO 8601 with a timezone, `compiler_state` an object).
* `unknown_fields(envelope)`: every field the seed does not define, by its path
  (envelope, fingerprint, artifact sets and their summaries), with its value: an
  import keeps them in the attributes of the Event that records it and reports them.
* `kept_writes(...)`: the Facts an import writes to keep the fingerprint's
  `context_priors` (HMX-C assembly reads them back: `stored_priors`) and to record
  its `compiler_state`, each tagged, the priors expiring with the fingerprint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..errors import ValidationError
from ..model import Fact
from ..provenance import canonical_attributes
from ..salience.score import DEFAULT_WEIGHTS, Weights
from ..writes import Write
from .canonical import JSONDict, canonical_json, cut_utf8

__all__ = [
    "FingerprintImport", "compiler_state", "check_optional", "unknown_fields", "kept_writes", "record_attributes",
    "parse_time", "PRIORS_TAG", "COMPILER_STATE_TAG", "MAX_TAGS", "ADAPTIVE_SCHEMA_VERSION",
]

PRIORS_TAG = "hmxfp.priors"
"""The tag of the Fact an import writes to keep the fingerprint's `context_priors`."""
COMPILER_STATE_TAG = "hmxfp.compiler_state"
"""The tag of the Fact an import writes to record the fingerprint's `compiler_state`."""
MAX_TAGS = 64
ADAPTIVE_SCHEMA_VERSION = 1
_MAX_KEPT_BYTES = 16 * 1024  # a Fact's object, and the attributes of a memory, hold at most this

FINGERPRINT_FIELDS = frozenset({
    "hmx_version", "fingerprint_id", "fingerprint_version", "tenant_id", "created_at", "artifact_summaries",
    "behavioral_patterns", "graph_digest", "semantic_summary", "context_priors", "fingerprint_hash", "metadata",
    "agent_id", "compression_tier", "source_event_count", "source_artifact_count", "compiler_state", "tags", "expires_at",
})
"""Seed 003 §2.1 and §2.2."""
ENVELOPE_FIELDS = frozenset({"format", "envelope_version", "hmx_version", "fingerprint", "exported_at", "integrity_hash",
                             "exported_by", "cortex_signature"})  # cortex_signature: `fingerprint_trust`
SUMMARY_FIELDS: Mapping[str, frozenset[str]] = {
    "policy_set": frozenset({"artifact_id", "condition", "recommendation", "scope", "confidence", "outcome_count", "tags",
                             "cortex_memory"}),
    "task_schema_set": frozenset({"artifact_id", "title", "steps", "tools_used", "preconditions", "postconditions",
                                  "complexity", "success_rate", "observed_count", "confidence", "tags", "cortex_memory"}),
    "playbook_set": frozenset({"artifact_id", "title", "failure_pattern", "trigger_conditions", "recovery_steps",
                               "prevention_strategies", "severity", "occurrence_count", "confidence", "tags",
                               "cortex_memory"}),
    "cluster_summaries": frozenset({"cluster_id", "label", "dominant_type", "member_count", "representative_ids",
                                    "shared_tags", "avg_confidence", "total_observations"}),
}
"""Seed 003 §3, plus cortex's `cortex_memory` (the exact memory a summary came from)."""


@dataclass(frozen=True, slots=True)
class FingerprintImport:
    """What `fingerprint.import_report` did."""

    fingerprint_id: str
    written: int
    """Artifact memories written (0 for a fingerprint already imported)."""
    unknown_fields: tuple[str, ...] = ()
    """Paths of the fields the seed does not define, kept in the import record's attributes."""
    warnings: tuple[str, ...] = ()
    priors_stored: bool = False
    compiler_state_recorded: bool = False
    already_imported: bool = False


def compiler_state(weights: Weights) -> JSONDict:
    """Seed 003 §9 for cortex's adaptive parameters, the four salience weights."""
    params = []
    for name, current, baseline in zip(("recency", "access", "citation", "importance"), weights.as_tuple(),
                                       DEFAULT_WEIGHTS.as_tuple()):
        delta = round(current - baseline, 12)
        params.append({"parameter": f"salience.{name}", "current_value": current, "baseline_value": baseline,
                       "delta": delta, "adaptation_count": int(delta != 0), "frozen": False})
    return {
        "total_parameters": len(params),
        "adapted_parameter_count": sum(p["adaptation_count"] for p in params),
        "global_freeze": False,
        "adapted_parameters": params,
        "adaptive_schema_version": ADAPTIVE_SCHEMA_VERSION,
    }


def parse_time(field: str, value: object) -> datetime:
    """ISO 8601 text with a timezone, as an aware UTC datetime."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValidationError(field, "must carry a timezone", value)
        return value.astimezone(timezone.utc)
    if not isinstance(value, str):
        raise ValidationError(field, "must be ISO 8601 text with a timezone", value)
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(field, "must be ISO 8601 text with a timezone", value) from None
    if at.tzinfo is None:
        raise ValidationError(field, "must carry a timezone (Z or an offset)", value)
    return at.astimezone(timezone.utc)


def check_optional(fingerprint: Mapping[str, Any]) -> None:
    """The optional fields of seed 003 §2.2 this reader uses, checked for shape."""
    tags = fingerprint.get("tags")
    if tags is not None and (not isinstance(tags, list) or len(tags) > MAX_TAGS
                             or not all(isinstance(t, str) for t in tags)):
        raise ValidationError("fingerprint.tags", f"must be a list of at most {MAX_TAGS} strings", tags)
    if fingerprint.get("expires_at") is not None:
        parse_time("fingerprint.expires_at", fingerprint["expires_at"])
    state = fingerprint.get("compiler_state")
    if state is not None and not isinstance(state, Mapping):
        raise ValidationError("fingerprint.compiler_state", "must be an object", state)


def unknown_fields(envelope: Mapping[str, Any]) -> dict[str, Any]:
    """path -> value for every field seed 003 does not define (see the module docstring)."""
    out: dict[str, Any] = {}
    for key in sorted(set(envelope) - ENVELOPE_FIELDS):
        out[key] = envelope[key]
    fingerprint = envelope.get("fingerprint")
    if not isinstance(fingerprint, Mapping):
        return out
    for key in sorted(set(fingerprint) - FINGERPRINT_FIELDS):
        out[f"fingerprint.{key}"] = fingerprint[key]
    summaries = fingerprint.get("artifact_summaries")
    if isinstance(summaries, Mapping):
        for key in sorted(summaries):
            path = f"fingerprint.artifact_summaries.{key}"
            if key not in SUMMARY_FIELDS:
                out[path] = summaries[key]
                continue
            items = summaries[key]
            for i, item in enumerate(items if isinstance(items, list) else []):
                if isinstance(item, Mapping):
                    for field in sorted(set(item) - SUMMARY_FIELDS[key]):
                        out[f"{path}[{i}].{field}"] = item[field]
    return out


def record_attributes(unknown: Mapping[str, Any], warnings: list[str]) -> dict[str, Any] | None:
    """The import record's attributes: the unknown fields and the warnings (as text
    cut to 2 KiB when they do not fit a memory's attributes)."""
    attrs: dict[str, Any] = {}
    if unknown:
        attrs["unknown_fields"] = dict(unknown)
    if warnings:
        attrs["warnings"] = list(warnings)
    if not attrs:
        return None
    try:
        canonical_attributes(attrs)
    except ValidationError:
        return {"text": cut_utf8(canonical_json(attrs).decode("utf-8"), 2048)}
    return attrs


def kept_writes(fingerprint: Mapping[str, Any], fingerprint_id: str) -> tuple[list[Write], list[str]]:
    """The Facts that keep the priors and record the compiler state, and warnings for
    what could not be kept (over 16 KiB as canonical JSON)."""
    writes: list[Write] = []
    warnings: list[str] = []
    expires = fingerprint.get("expires_at")
    expires_at = parse_time("fingerprint.expires_at", expires) if expires is not None else None
    for key, tag, predicate in (("context_priors", PRIORS_TAG, "context_priors"),
                                ("compiler_state", COMPILER_STATE_TAG, "compiler_state")):
        value = fingerprint.get(key)
        if not isinstance(value, Mapping):
            continue
        text = canonical_json(dict(value)).decode("utf-8")
        if len(text.encode("utf-8")) > _MAX_KEPT_BYTES:
            warnings.append(f"fingerprint.{key}: over {_MAX_KEPT_BYTES} bytes as JSON, not kept")
            continue
        fact = Fact(statement=f"{key} of HMX fingerprint {cut_utf8(fingerprint_id, 256)}", subject=cut_utf8(fingerprint_id, 256),
                    predicate=predicate, object=text)
        writes.append(Write(fact, tags=(tag,), source="hmx-fingerprint",
                            expires_at=expires_at if key == "context_priors" else None))
    return writes, warnings


def stored(facts: list[Any], now: datetime | None) -> JSONDict | None:
    """The newest Fact's object (JSON) among `facts`, skipping those expired at `now`."""
    live = [m for m in facts if isinstance(m.data, Fact) and m.data.object
            and (now is None or m.expires_at is None or m.expires_at > now)]
    if not live:
        return None
    newest = max(live, key=lambda m: (m.created_at, m.id))
    value = json.loads(newest.data.object)
    return value if isinstance(value, dict) else None
