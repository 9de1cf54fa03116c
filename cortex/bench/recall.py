"""The recall benchmark: quality, latency, ingest and size of `find(near=...)`.

    python -m cortex.bench.recall --memories 100000 [--store DIR] [--report FILE]

* Quality, on a generated conversational corpus with known answer locations
  (`Conversations`): sessions of user/assistant turns, where some turns state a
  personal fact ("my sister Ana moved to Porto last May") among chit-chat and
  distractors (the same kinds of fact about other people), and each question asks
  for one fact in other words ("Which city did Ana move to?"). Every turn is one
  memory (an `Event` of kind `interaction` whose summary is the turn). Measured:
  turn-level recall@5 and @10 (the answer turn among the first 5 / 10 results), and
  "gold inside the budget" at 500, 1,000 and 2,000 tokens (the answer turn among
  the results that fit the budget, each turn costing its medium-form tokens), for
  cortex and, on the same texts and costs, the reference `bm25s` (its defaults,
  English stop words, PyStemmer's Snowball English stemmer).
* Latency: `find(near=..., limit=10)` p50 / p99 on the harness's workload store
  (`cortex.bench.workload`) of `--memories` memories, queries of 2-12 words mixing
  the workload's common words with rare ones (vendor and subject numbers).
* Ingest: `write_many` memories per second while building that store (the lexical
  index is written in the same batches), and the store's bytes per memory.

Figures are for one run on this machine; the corpus sizes are in the report.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import cortex
from cortex import Event, Write

from .workload import _WORDS, Workload

BUDGETS = (500, 1000, 2000)
TOP = (5, 10)

_NAMES = ("Ana", "Bruno", "Chiara", "Dmitri", "Elif", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kofi", "Lena", "Mateo",
          "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tomasz", "Uma", "Viktor", "Wen", "Ximena", "Yusuf", "Zara")
_CITIES = ("Porto", "Lyon", "Kraków", "Osaka", "Austin", "Nairobi", "Bergen", "Valencia", "Leeds", "Hobart", "Tartu", "Cusco")
_PETS = (("dog", "Biscuit"), ("cat", "Miso"), ("parrot", "Kiwi"), ("rabbit", "Clover"), ("dog", "Pepper"), ("cat", "Noodle"),
         ("turtle", "Sheldon"), ("hamster", "Waffles"))
_FOODS = ("peanuts", "shellfish", "gluten", "sesame", "strawberries", "dairy", "eggs", "mushrooms")
_INSTRUMENTS = ("cello", "ukulele", "trumpet", "banjo", "violin", "harmonica", "drums", "flute")
_COMPANIES = ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Soylent", "Stark")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_DBS = ("Postgres", "MySQL", "Cassandra", "MongoDB", "SQLite", "Redis")
_MONTHS = ("January", "March", "May", "July", "September", "November")
_CHAT = (
    "that sounds great, thanks for the help today", "haha yes, exactly what I was thinking",
    "could you remind me later about that", "I'm not sure, let me think about it for a bit",
    "honestly the weather has been terrible all week", "sure, happy to help with anything else you need",
    "I watched a documentary about octopuses last night", "ok, let's move on to the next thing on my list",
    "can you summarise what we talked about", "good morning! how is your day going so far",
    "I need to buy groceries after work", "the traffic this morning was awful again",
    "what a long day, I'm exhausted", "let me check my calendar and get back to you",
)


def _facts(rng: random.Random) -> tuple[str, str]:
    """One fact turn and a question about it (worded differently)."""
    kind = rng.randrange(7)
    name = rng.choice(_NAMES)
    if kind == 0:
        city, month = rng.choice(_CITIES), rng.choice(_MONTHS)
        return (f"by the way, my sister {name} moved to {city} last {month}", f"Which city did {name} relocate to?")
    if kind == 1:
        pet, pet_name = rng.choice(_PETS)
        return (f"we finally adopted a {pet}, we named it {pet_name}", f"What is the name of the {pet} we got?")
    if kind == 2:
        food = rng.choice(_FOODS)
        return (f"note that {name} is allergic to {food}, keep it off the menu", f"What can't {name} eat?")
    if kind == 3:
        instrument, years = rng.choice(_INSTRUMENTS), rng.randint(2, 15)
        return (f"I have been practicing the {instrument} for {years} years now", "Which instrument do I practice?")
    if kind == 4:
        company, day = rng.choice(_COMPANIES), rng.choice(_DAYS)
        return (f"the {company} meeting got moved to {day} afternoon", f"When is the meeting with {company}?")
    if kind == 5:
        db = rng.choice(_DBS)
        return (f"our team migrated the billing service to {db} yesterday", "Which database does billing run on now?")
    city = rng.choice(_CITIES)
    return (f"my friend {name} recommended a ramen place in {city}", f"Who told me about the noodle restaurant in {city}?")


@dataclass(frozen=True)
class Conversations:
    """A generated conversational corpus: `turns` texts, and `questions` as (text,
    index of the answer turn). Deterministic in `seed`."""

    sessions: int = 400
    seed: int = 5

    def build(self) -> tuple[list[str], list[tuple[str, int]]]:
        rng = random.Random(self.seed)
        turns: list[str] = []
        questions: list[tuple[str, int]] = []
        for _ in range(self.sessions):
            for _ in range(rng.randint(8, 16)):
                speaker = rng.choice(("user", "assistant"))
                if rng.random() < 0.3:
                    fact, question = _facts(rng)
                    questions.append((question, len(turns)))
                    turns.append(f"{speaker}: {fact}")
                else:
                    turns.append(f"{speaker}: {rng.choice(_CHAT)}")
        return turns, questions


def _hits(ranked: Sequence[int], gold: int, costs: Sequence[int]) -> dict[str, bool]:
    out = {f"recall@{k}": gold in ranked[:k] for k in TOP}
    for budget in BUDGETS:
        used, kept = 0, list[int]()
        for doc in ranked:  # the longest prefix that fits, at least one (as find() trims)
            if kept and used + costs[doc] > budget:
                break
            kept.append(doc)
            used += costs[doc]
        out[f"gold_in_{budget}"] = gold in kept
    return out


def _mean(rows: list[dict[str, bool]]) -> dict[str, float]:
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}


def quality(sessions: int = 400, seed: int = 5) -> dict[str, Any]:
    """Recall@5/@10 and gold inside 500/1,000/2,000 tokens, cortex beside bm25s."""
    import Stemmer
    import bm25s

    turns, questions = Conversations(sessions, seed).build()
    depth = 200
    with tempfile.TemporaryDirectory() as d:
        with cortex.open(os.path.join(d, "s"), actor="bench-recall") as c:
            uris = c.write_many([Write(Event(kind="interaction", outcome="success", summary=t)) for t in turns])
            index_of = {c.resolve(u).id: i for i, u in enumerate(uris)}
            costs = [c.resolve(u).tokens["medium"] for u in uris]
            ours = []
            for question, gold in questions:
                try:
                    hits = c.find(near=question, limit=depth)
                except cortex.ValidationError:
                    hits = cortex.Recalled()
                ours.append(_hits([index_of[m.id] for m in hits], gold, costs))
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(turns, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    reference = []
    for question, gold in questions:
        tokens = bm25s.tokenize([question], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = retriever.retrieve(tokens, k=min(depth, len(turns)), show_progress=False)
        reference.append(_hits([int(i) for i in docs[0]], gold, costs))
    return {"turns": len(turns), "questions": len(questions), "cortex": _mean(ours), "bm25s": _mean(reference)}


def _queries(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 10))]
        words += [f"vendor-{rng.randint(1, 500)}" if rng.random() < 0.5 else f"subject-{rng.randint(1, 5000)}"
                  for _ in range(rng.randint(1, 2))]
        rng.shuffle(words)
        out.append(" ".join(words))
    return out


def _spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": statistics.median(ordered), "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
            "max": ordered[-1]}


def _size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)


def speed(memories: int, store: str, queries: int = 300, seed: int = 7) -> dict[str, Any]:
    """Ingest rate and size of the workload store, and find(near) latency on it."""
    report: dict[str, Any] = {"memories": memories}
    if not os.path.exists(store):
        seconds = Workload(memories, seed=seed).build(store, progress=False)
        report["ingest_per_s"] = memories / seconds
        with cortex.open(store, actor="bench-agent") as c:
            c.optimize()  # as the harness does after a bulk load: compacts the files too
    report["bytes_per_memory"] = _size(store) / memories
    times: list[float] = []
    found: list[int] = []
    with cortex.open(store, actor="bench-agent", mode="r") as c:
        texts = _queries(queries, seed)
        for text in texts[:20]:
            c.find(near=text, limit=10)  # warm-up
        for text in texts:
            started = time.perf_counter()
            hits = c.find(near=text, limit=10)
            times.append((time.perf_counter() - started) * 1000)
            found.append(len(hits))
    report["find_near_ms"] = _spread(times)
    report["queries"] = len(times)
    return report


def main(argv: Sequence[str] | None = None, run: Callable[..., Any] = speed) -> int:
    p = argparse.ArgumentParser(prog="python -m cortex.bench.recall", description=__doc__.split("\n\n")[0])
    p.add_argument("--memories", type=int, default=100_000)
    p.add_argument("--store", help="the workload store (built when missing; default: a temporary folder)")
    p.add_argument("--sessions", type=int, default=400, help="conversations of the quality corpus")
    p.add_argument("--report", help="write the JSON report here too")
    p.add_argument("--skip-speed", action="store_true")
    args = p.parse_args(argv)
    report: dict[str, Any] = {"quality": quality(args.sessions)}
    print(json.dumps(report, indent=2), file=sys.stderr)
    if not args.skip_speed:
        if args.store:
            report["speed"] = run(args.memories, args.store)
        else:
            with tempfile.TemporaryDirectory() as d:
                report["speed"] = run(args.memories, os.path.join(d, "s"))
    text = json.dumps(report, indent=2)
    print(text)
    if args.report:
        with open(args.report, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
