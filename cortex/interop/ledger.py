"""The context ledger: the replay record of one `context()` call (docs/interop.md, seed 002).

    record = ledger.build(bundle)
    assert ledger.verify(record)

A plain JSON-ready dict:

* `request`: the call's normalised options (verb, objects as [kind, ref] pairs,
  effective budget, tiers, outcome limit, form, `now` as ISO-8601 text);
* `selected`: the survivors' ids per tier (`pinned`, `outcomes`, `frame_relevant`),
  in bundle order;
* `dropped`: every trimmed id, best first;
* `dropped_entries`: every memory the call found but left out, with its reason:
  `{"id", "reason": "budget"}` for each trimmed id (best first), then
  `{"id", "reason": "superseded"}` for each memory a live one supersedes (in id
  order). Their scores and token counts are the bundle's (`scores`, `tokens`,
  `superseded_scores`, `superseded_tokens`). (Expired memories are left out before
  any scan reads them, so no call can list them.)
* `tokens`: the survivors' tokens per tier and `total`, in the call's form;
* `budget`: the effective token budget;
* `warnings`: `{"code", "message"}` objects, in this order when they apply:
  `budget_hit` (something was trimmed), `pinned_over_budget` (the pinned tier's
  candidates alone need more than the budget), `min_one_kept` (the one memory kept
  is over the budget by itself), `reachable_truncated` (more were trimmed than
  `reachable_uris` lists), `pinned_only` (other tiers were asked for, but without
  a verb or objects only the pinned tier can be scanned), `no_candidates` (nothing was found at all);
* `root`: the store's OverallRoot the call read;
* `context_snapshot_hash`: `"sha256:"` + the hex SHA-256 of the canonical JSON of
  the ledger without this key.

Two calls on the same state with the same options (a fixed `now`) give the same
ledger. The bundle does not say which trimmed memories were pinned, so the pinned
tier's candidate tokens are passed in when known (`pinned_candidate_tokens`);
without them only the surviving pinned memories are counted, which detects the
condition whenever no pinned memory was trimmed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .canonical import JSONDict, content_hash, without

if TYPE_CHECKING:
    from ..view import BundleView as Bundle

__all__ = ["build", "verify", "snapshot_hash", "HASH_KEY"]

HASH_KEY = "context_snapshot_hash"
# How many trimmed memories `reachable_uris` lists at most (docs/context.md).
_REACHABLE_LIMIT = 64


def build(bundle: Bundle, *, pinned_candidate_tokens: int | None = None) -> JSONDict:
    """The ledger of the call that produced `bundle` (see the module docstring)."""
    tiers = {"pinned": bundle.pinned, "outcomes": bundle.outcomes, "frame_relevant": bundle.frame_relevant}
    tokens = {name: sum(int(bundle.tokens[m.id]) for m in members) for name, members in tiers.items()}
    budget = int(bundle.request["budget_tokens"])
    record: JSONDict = {
        "request": copy.deepcopy(dict(bundle.request)),  # the caller may edit the ledger, not the bundle
        "selected": {name: [m.id for m in members] for name, members in tiers.items()},
        "dropped": list(bundle.dropped_ids),
        "dropped_entries": [
            *({"id": memory_id, "reason": "budget"} for memory_id in bundle.dropped_ids),
            *({"id": memory_id, "reason": "superseded"} for memory_id in bundle.superseded_ids),
        ],
        "tokens": {**tokens, "total": bundle.total_tokens},
        "budget": budget,
        "warnings": _warnings(bundle, budget, tokens["pinned"] if pinned_candidate_tokens is None else pinned_candidate_tokens),
        "root": bundle.root,
    }
    record[HASH_KEY] = snapshot_hash(record)
    return record


def snapshot_hash(record: Mapping[str, Any]) -> str:
    """`"sha256:"` + the hex SHA-256 of the canonical JSON of `record` without its hash."""
    return "sha256:" + content_hash(without(dict(record), HASH_KEY))


def verify(record: Mapping[str, Any]) -> bool:
    """Whether `record[HASH_KEY]` is the hash of the rest of the record."""
    try:
        return record.get(HASH_KEY) == snapshot_hash(record)
    except (TypeError, ValueError):  # not JSON-serializable: cannot be a ledger
        return False


def _warnings(bundle: Bundle, budget: int, pinned_tokens: int) -> list[JSONDict]:
    out: list[JSONDict] = []

    def warn(code: str, message: str) -> None:
        out.append({"code": code, "message": message})

    kept = len(bundle.pinned) + len(bundle.outcomes) + len(bundle.frame_relevant)
    if bundle.trimmed:
        warn("budget_hit", f"{bundle.trimmed} of {bundle.candidates} candidates trimmed to fit {budget} tokens")
    if pinned_tokens > budget:
        warn("pinned_over_budget", f"the pinned tier alone needs {pinned_tokens} tokens, over the budget of {budget}")
    if kept == 1 and bundle.total_tokens > budget:
        warn("min_one_kept", f"the one memory kept needs {bundle.total_tokens} tokens, over the budget of {budget}")
    if bundle.trimmed > _REACHABLE_LIMIT:
        warn("reachable_truncated", f"{bundle.trimmed} trimmed; reachable_uris lists {len(bundle.reachable_uris)} of them")
    request = bundle.request
    if (request["verb"] is None or not request["objects"]) and set(request["include_tiers"]) - {"pinned"}:
        warn("pinned_only", "no verb or no objects: only the pinned tier could be scanned")
    if bundle.candidates == 0:
        warn("no_candidates", "no memory matched the request")
    return out
