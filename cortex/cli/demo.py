"""`cortex demo`: a small agent's store, explained."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import datetime, timedelta, timezone

import click

import cortex
from cortex import Belief, Capability, Constraint, Event, Fact, Frame, Goal, Identity, Pattern, Preference, Write

from ._common import _epilog, cli


DEMO_ACTOR = "agent-ops-1"
DEMO_VERB = "acquire"
DEMO_OBJECTS = {"service": "gpu_inference"}


def _demo_memories(now: datetime) -> tuple[list[Write], list[Write]]:
    """The demo agent's memories: who it is, its rules and goal, what it learned about
    GPU providers; and the outcomes of five GPU leases, oldest first."""
    gpu = (Frame(DEMO_VERB, "service", "gpu_inference"),)
    leases = [
        Write(Event(kind="intent_completed" if outcome != "failure" else "intent_failed", outcome=outcome,
                    counterparty="acme-cloud", cost=("USD", round(1.2 + i / 10, 2)), summary=f"GPU lease #{i + 1}"),
              frames=gpu, importance=3)
        for i, outcome in enumerate(("success", "failure", "success", "partial", "success"))
    ]
    knowledge = [
        Write(Identity(name=DEMO_ACTOR, did="did:example:ops1", roles=("operator",))),
        Write(Constraint(statement="never pay more than 2 USD per GPU hour", strength="hard", polarity="dont", source="user_declared")),
        Write(Goal(statement="keep the inference fleet under budget", status="active", success_criteria=("cost < 500 USD/month",))),
        Write(Constraint(statement="providers in the EU", strength="soft", polarity="prefer", source="learned"), frames=gpu),
        Write(Preference(topic="tone", polarity="prefer", strength=0.8, rationale="short answers"), frames=gpu, importance=6, tags=("style",)),
        Write(Fact(statement="A100 spot price is 1.40 USD/h", subject="acme-cloud", predicate="price", as_of=now - timedelta(days=30)),
              frames=gpu, importance=5),
        Write(Fact(statement="H100 on-demand is 3.10 USD/h", subject="nimbus", predicate="price", as_of=now - timedelta(days=12)),
              frames=gpu, importance=4),
        Write(Belief(statement="acme-cloud is reliable at night", stance="suspect", evidence_for=("3 clean runs",)), frames=gpu),
        Write(Capability(subject="acme-cloud", capability="serve llama-70b", verified=True), frames=gpu),
        Write(Pattern(statement="spot capacity is scarce on Mondays", strength=0.6, coverage=4), frames=gpu),
    ]
    return knowledge, leases


@cli.command(short_help="A small agent's store, explained.", epilog=_epilog("cortex demo", "cortex demo --store ./demo-store", "cortex demo --budget 400"))
@click.option("--store", type=click.Path(file_okay=False), help="Write the demo store here and keep it (default: a temporary one).")
@click.option("--keep", is_flag=True, help="Keep the temporary store and say where it is.")
@click.option("--budget", type=click.IntRange(min=1), default=200, show_default=True, help="Token budget of the demo's context() call.")
def demo(store: str | None, keep: bool, budget: int) -> int:
    """Write a small agent's memories and walk through one context() call: the
    agent, the task, the budget, the bundle and its tiers, one reachable memory
    resolved, and what to try next."""
    folder = None if store is not None else tempfile.mkdtemp(prefix="cortex-demo-")
    path = os.path.join(folder, "store") if folder is not None else str(store)
    try:
        _run_demo(path, budget, kept=folder is None or keep)
    finally:
        if folder is not None and not keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


def _run_demo(path: str, budget: int, *, kept: bool) -> None:
    say = click.echo
    with cortex.open(path, actor=DEMO_ACTOR) as c:
        if c.stats()["memories"] == 0:
            knowledge, leases = _demo_memories(datetime.now(timezone.utc))
            c.write_many(knowledge)
            for lease in leases:  # one at a time, as they happened: the newest is the last
                c.write_many([lease])
        bundle = c.context(verb=DEMO_VERB, objects=DEMO_OBJECTS, budget_tokens=budget, form="medium")
        best_left_out = c.resolve(bundle.reachable_uris[0]) if bundle.reachable_uris else None
        held = c.stats()["memories"]
    where = path if kept else f"{path}  (temporary: removed when the demo ends; keep it with --keep or --store DIR)"
    say(f"""cortex demo: an agent's memory, and one call that reads it

The agent is {DEMO_ACTOR}, an operations agent that rents GPU capacity for an
inference fleet. Its store holds {held} memories written as it worked: who it is,
a hard spending rule, its goal, prices it saw, a preference, a belief, a
provider's capability, a pattern it learned, and the outcomes of five GPU leases.

Store: {where}

Before its next GPU lease the agent asks for its context, within {budget} tokens:

    c.context(verb="{DEMO_VERB}", objects={json.dumps(DEMO_OBJECTS)}, budget_tokens={budget}, form="medium")

It gets the bundle below. The tiers, in the order printed:
  Pinned          always there: who the agent is, hard constraints, active goals
  Frame-relevant  memories filed under this verb and object, best first
  Outcomes        the newest results of this action on this object
  Reachable       what did not fit the budget: URIs to resolve() when needed
""")
    say(bundle.to_markdown())
    if best_left_out is not None:
        say("The best memory left out, resolved in full when the agent needs it:\n")
        say(f'    c.resolve("{best_left_out.uri}")')
        say("    " + best_left_out.form("full").replace("\n", "\n    ") + "\n")
    else:
        say(f"Nothing was left out at {budget} tokens; `cortex demo --budget 60` shows the Reachable tier at work.\n")
    target = path if kept else "./demo-store"
    say("Next, try:" if kept else "Next: keep a store to explore with `cortex demo --store ./demo-store`, then try:")
    for command in (
        f"cortex context {target} --verb {DEMO_VERB} --object service=gpu_inference --budget 3000",
        f"cortex find {target} --type Event --order-by -created --limit 5",
        f"cortex stats {target}",
    ):
        say(f"    {command}")
