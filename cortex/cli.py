"""The `cortex` command line.

    cortex demo [--store DIR]       write a small agent's memories, print a context bundle
    cortex context STORE --actor A --verb V --object KIND=REF [...] [--budget N] [--form F] [--json]
    cortex stats STORE --actor A
    cortex verify STORE --actor A   exit 1 when problems are found
    cortex bench [--memories N] [--queries Q] [--store DIR]   the benchmark harness
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import datetime, timedelta, timezone

from . import (
    Belief,
    Capability,
    Constraint,
    CortexError,
    Event,
    Fact,
    Frame,
    Goal,
    Identity,
    Pattern,
    Preference,
    Write,
    open as open_store,
)


def _demo(args: argparse.Namespace) -> int:
    path = args.store or tempfile.mkdtemp(prefix="cortex-demo-") + "/store"
    gpu = Frame("acquire", "service", "gpu_inference")
    with open_store(path, actor="agent-ops-1") as c:
        if c.stats()["memories"] == 0:
            start = datetime.now(timezone.utc) - timedelta(days=30)
            c.write_many(
                [
                    Write(Identity(name="agent-ops-1", did="did:example:ops1", roles=("operator",))),
                    Write(Constraint(statement="never pay more than 2 USD per GPU hour", strength="hard", polarity="dont", source="user_declared")),
                    Write(Constraint(statement="providers in the EU", strength="soft", polarity="prefer", source="learned"), frames=[gpu]),
                    Write(Goal(statement="keep the inference fleet under budget", status="active", success_criteria=("cost < 500 USD/month",))),
                    Write(Preference(topic="tone", polarity="prefer", strength=0.8, rationale="short answers"), frames=[gpu], importance=6, tags=["style"]),
                    Write(Fact(statement="A100 spot price is 1.40 USD/h", subject="acme-cloud", predicate="price", as_of=start), frames=[gpu], importance=5),
                    Write(Belief(statement="acme-cloud is reliable at night", stance="suspect", evidence_for=("3 clean runs",)), frames=[gpu]),
                    Write(Capability(subject="acme-cloud", capability="serve llama-70b", verified=True), frames=[gpu]),
                    Write(Pattern(statement="spot capacity is scarce on Mondays", strength=0.6, coverage=4), frames=[gpu]),
                ]
            )
            for i, outcome in enumerate(("success", "failure", "success", "partial", "success")):
                c.write(
                    Event(kind="intent_completed" if outcome != "failure" else "intent_failed", outcome=outcome,
                          counterparty="acme-cloud", cost=("USD", 1.2 + i / 10), summary=f"GPU lease #{i + 1}"),
                    frames=[gpu], importance=3,
                )
        bundle = c.context(verb="acquire", objects={"service": "gpu_inference"}, budget_tokens=args.budget, form="medium")
        print(f"store: {path}\n")
        print(bundle.to_markdown())
    return 0


def _objects(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        kind, sep, ref = pair.partition("=")
        if not sep:
            raise SystemExit(f"--object takes KIND=REF, got {pair!r}")
        out[kind] = ref
    return out


def _context(args: argparse.Namespace) -> int:
    with open_store(args.store, actor=args.actor, mode="r") as c:
        bundle = c.context(verb=args.verb, objects=_objects(args.object), budget_tokens=args.budget, form=args.form)
        print(bundle.to_json() if args.json else bundle.to_markdown(), end="" if not args.json else "\n")
    return 0


def _stats(args: argparse.Namespace) -> int:
    with open_store(args.store, actor=args.actor, mode="r") as c:
        print(json.dumps(c.stats(), indent=2, sort_keys=True))
    return 0


def _verify(args: argparse.Namespace) -> int:
    with open_store(args.store, actor=args.actor, mode="r") as c:
        problems = c.verify()
    for line in problems:
        print(line)
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cortex", description="Embedded memory engine for AI agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="write a small agent's memories and print a context bundle")
    p.add_argument("--store", help="store directory (default: a new temporary one)")
    p.add_argument("--budget", type=int, default=3000)
    p.set_defaults(run=_demo)
    p = sub.add_parser("context", help="print the context bundle for a task")
    p.add_argument("store")
    p.add_argument("--actor", required=True)
    p.add_argument("--verb")
    p.add_argument("--object", action="append", default=[], metavar="KIND=REF")
    p.add_argument("--budget", type=int, default=0)
    p.add_argument("--form", default="medium", choices=("short", "medium", "full"))
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_context)
    for name, fn in (("stats", _stats), ("verify", _verify)):
        p = sub.add_parser(name)
        p.add_argument("store")
        p.add_argument("--actor", required=True)
        p.set_defaults(run=fn)
    p = sub.add_parser("bench", help="run the benchmark harness (same as python -m benchmarks run)", add_help=False)
    p.set_defaults(run=None)
    args, rest = parser.parse_known_args(argv)
    if args.command == "bench":
        from .bench.harness import main as bench_main

        return bench_main(["run", *rest])
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return args.run(args)
    except CortexError as exc:
        print(f"cortex: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
