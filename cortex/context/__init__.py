"""`context()`: the cold-start composer.

One read-only call that gathers three tiers from the indexes, scores and trims them
from the index values alone, and only then reads the survivors. Its files follow
one call in order:

* `plan`: the options (`ContextOpts`), validated and normalised into a `Plan`;
* `gather`: the tiers, one block of rows per scan (Pinned: every `idx/pinned`
  entry; Outcomes: the `outcome_limit` newest live Events under (verb, object) not
  already pinned; FrameRelevant: everything under each (verb, kind, object) frame);
* `candidates`: the blocks joined, and the rows left out before ranking (copies,
  by the dedup priority Pinned > Outcomes > FrameRelevant; expired memories);
* `rank` and `bounded`: one `Ranker` (every candidate scored, or only those bounds
  say can rank among the best: the same answer), and the trim to the budget;
* `bundle`: the `Bundle`, and the lazy view of the call's rows it reads;
* `call`: the call itself (`Call`), which runs the steps above on one
  consistent view.

Edges (`cortex.edges`): a superseded memory (a live `supersedes` edge points at it
from a live memory) is not a candidate in any tier unless `include_superseded=True`
(one mask over a flag bit of the index values); its id goes to
`Bundle.superseded_ids`. `Bundle.conflicts` pairs the candidates linked by a live
`contradicts` edge, looking up the edges of flagged candidates only. Memories
outside the call's scope are left out before anything is scored (a scope is
verified once per call, in the same view: `cortex.scope`).

Nothing is written: no journal entry, no salience bump; the root is unchanged. The
tokenizer is never loaded: token counts come from the index values. The thresholds
that choose between equivalent ways are one `cortex.Tuning` held by the handle.
"""

from __future__ import annotations

from ..tuning import MAX_REACHABLE_URIS, Tuning
from .bundle import Bundle
from .call import compose
from .plan import DEFAULT_BUDGET_TOKENS, DEFAULT_OUTCOME_LIMIT, MAX_BUDGET_TOKENS, ContextOpts, Form, TierName

__all__ = [
    "Bundle", "ContextOpts", "DEFAULT_BUDGET_TOKENS", "DEFAULT_OUTCOME_LIMIT", "Form", "MAX_BUDGET_TOKENS",
    "MAX_REACHABLE_URIS", "TierName", "Tuning", "compose",
]
