"""learn()'s task-schema miner against `prefixspan` (PyPI 0.5.2), on the same traces.

    pip install prefixspan==0.5.2        # not a cortex dependency: this comparison only
    python benchmarks/learn_prefixspan.py --sessions 1000

Generates traces (cortex.bench.learning.generate), then runs learn() twice on the
same events: once with cortex's gap-constrained miner (cortex/learn/mine.py), once
with `mine.mine` replaced by PrefixSpan (any gap between a pattern's steps; the same
frequent-step projection and the same cover rule before and after). Prints each
one's task-schema precision and recall against the planted procedures and the CPU
seconds of the learn. docs/learning.md reports the figures.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import cortex
from cortex.bench.learning import generate, recovery
from cortex.learn import mine


def prefixspan_mine(passes: Callable[[], Iterable[Sequence[Any]]], min_support: int, max_gap: int, max_len: int) -> dict[tuple[Any, ...], int]:
    from prefixspan import PrefixSpan

    ps = PrefixSpan([list(s) for s in passes()])  # the whole database in memory
    ps.minlen, ps.maxlen = 1, max_len
    return {tuple(p): s for s, p in ps.frequent(min_support)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    ours = mine.mine
    for noise in (0.2, 0.4):
        events, truth = generate(args.seed, args.sessions, noise=noise)
        for name, miner in (("cortex", ours), ("prefixspan", prefixspan_mine)):
            mine.mine = miner  # type: ignore[assignment]
            with tempfile.TemporaryDirectory() as d, cortex.open(d, actor="bench") as c:
                c.ingest_hmx(events)
                started = time.process_time()
                c.learn()
                cpu = time.process_time() - started
                schemas = recovery(c, truth)["by_type"]["task_schema"]
            print(json.dumps({"noise": noise, "miner": name, "events": len(events), "learn_cpu_seconds": round(cpu, 2),
                              "precision": schemas["precision"], "recall": schemas["recall"]}))
    mine.mine = ours


if __name__ == "__main__":
    main()
