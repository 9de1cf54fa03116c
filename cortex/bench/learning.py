"""The learning harness: generated traces with planted knowledge, and what `learn()`
recovers of it (docs/learning.md, "Measured").

    python -m benchmarks learn --sessions 2000 --seed 7          # recovery and next-action prediction
    python -m benchmarks learn --speed-events 100000             # learn() over 100k events, then 1k more

Traces (`generate`): every session follows one planted procedure (a fixed sequence
of 4-6 tool calls), possibly reordered (two adjacent steps swapped, 10% of sessions),
with unrelated events mixed in (tool calls of a long tail of 40 tools, messages and
observations: `noise` of all events, 20% by default), sessions interleaved in time.
Planted failure modes: a tool fails right after a trigger step in 60% of the
sessions where the trigger precedes it, and the session recovers with a fixed
recovery step then the tool again. Planted decisions: under a condition, one
option succeeds 90% of the time and the other 30%. Everything from one
`random.Random(seed)`: the same seed gives the same events.

Recovery (`recovery`): the active artifacts of a learn over all sessions against
the planted ones. A procedure is recovered by an active task schema with exactly its
steps; a failure mode by an active playbook of its tool whose triggers include its
trigger and whose recovery is its recovery then the tool; a decision by an active
policy of its condition recommending the better option. Precision is over the
active artifacts of each type (a task schema, playbook or policy matching nothing
planted counts against it); recall over the planted ones.

Prediction (`prediction`): sessions split 80/20 by session; learn on the first
part; for every step of a held-out session after the first, predict the next step
from the steps so far. Schemas: the active task schemas containing the current step
whose earlier steps best match the history (most matched steps, then support, then
artifact id) give the step after it. Bigram: the most frequent next step after the
current one in the training sessions. Both are scored on the same steps: every
held-out step, and the steps where a schema applies (a schema holds the current step
before its last).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import cortex

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)

PROCEDURES = {
    "release": ("checkout", "build", "test", "package", "publish"),
    "hotfix": ("checkout", "patch", "test", "deploy"),
    "migrate": ("snapshot", "migrate", "verify", "switch", "cleanup", "notify"),
    "triage": ("fetch_logs", "grep", "open_ticket", "assign"),
}
# (tool, trigger step, recovery step): the tool fails right after the trigger.
FAILURES = (("test", "build", "clear_cache"), ("migrate", "snapshot", "unlock_tables"))
# condition -> (better option, worse option)
DECISIONS = {"rollout": ("canary", "big_bang"), "ticket_priority": ("page_oncall", "wait")}
DECISION_AT = {"release": "rollout", "triage": "ticket_priority"}
NOISE_TOOLS = tuple(f"tool_{i:02d}" for i in range(40))


@dataclass
class Truth:
    procedures: dict[str, tuple[str, ...]] = field(default_factory=dict)
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    decisions: dict[str, str] = field(default_factory=dict)


def _label(tool: str) -> str:
    return f"delegate tool:{tool}"


def generate(seed: int, sessions: int, noise: float = 0.2, reorder: float = 0.1, prefix: str = "s") -> tuple[list[dict[str, Any]], Truth]:
    """HMX events of `sessions` sessions (interleaved, timestamp order) and what was planted."""
    rng = random.Random(seed)
    names = sorted(PROCEDURES)
    per_session: list[list[tuple[str, dict[str, Any]]]] = []
    for _ in range(sessions):
        proc = rng.choice(names)
        steps = list(PROCEDURES[proc])
        if rng.random() < reorder and len(steps) > 2:
            i = rng.randrange(len(steps) - 1)
            steps[i], steps[i + 1] = steps[i + 1], steps[i]
        out: list[tuple[str, dict[str, Any]]] = []
        ok_session = True
        decided: str | None = None
        for n, tool in enumerate(steps):
            if proc in DECISION_AT and n == len(steps) - 1:
                cond = DECISION_AT[proc]
                good, bad = DECISIONS[cond]
                decided = good if rng.random() < 0.5 else bad
                out.append(("decision", {"decision": decided, "domain": cond}))
            failing = next((f for f in FAILURES if f[0] == tool and n and steps[n - 1] == f[1]), None)
            if failing is not None and rng.random() < 0.6:
                out += _call(tool, False)
                out += _call(failing[2], True)
            last = n == len(steps) - 1
            ok = True
            if last and decided is not None:
                good = DECISIONS[DECISION_AT[proc]][0]
                ok = rng.random() < (0.9 if decided == good else 0.3)
                ok_session = ok
            out += _call(tool, ok)
        del ok_session
        # unrelated events: noise / (1 - noise) of the session's events, anywhere in it
        extra = round(len(out) * noise / (1 - noise))
        for _ in range(extra):
            at = rng.randrange(len(out) + 1)
            kind = rng.random()
            if kind < 0.5:
                tool = rng.choice(NOISE_TOOLS)
                out[at:at] = [("tool_call", {"tool_name": tool})]
            elif kind < 0.75:
                out[at:at] = [("message", {"role": rng.choice(("user", "assistant")), "content": "..."})]
            else:
                out[at:at] = [("observation", {"observation": f"note {rng.randrange(1000)}"})]
        per_session.append(out)
    # interleave: each session starts at a random minute; its events a second apart
    timed: list[tuple[datetime, int, int, str, dict[str, Any]]] = []
    for s, events in enumerate(per_session):
        start = T0 + timedelta(minutes=rng.randrange(sessions * 2))
        for seq, (etype, content) in enumerate(events):
            timed.append((start + timedelta(seconds=seq), s, seq, etype, content))
    timed.sort(key=lambda t: (t[0], t[1], t[2]))
    events_out = [{
        "hmx_version": "HMX-1.0", "event_id": f"{prefix}{s}-{seq}", "event_type": etype, "agent_id": "bench",
        "tenant_id": "bench", "session_id": f"{prefix}{s}", "timestamp": at.isoformat(), "sequence": seq, "content": content,
    } for at, s, seq, etype, content in timed]
    truth = Truth({k: tuple(_label(t) for t in v) for k, v in PROCEDURES.items()},
                  [(_label(a), _label(b), _label(c)) for a, b, c in FAILURES],
                  {k: v[0] for k, v in DECISIONS.items()})
    return events_out, truth


def _call(tool: str, ok: bool) -> list[tuple[str, dict[str, Any]]]:
    result = {"tool_name": tool, "output": "ok"} if ok else {"tool_name": tool, "error": "Error: failed"}
    return [("tool_call", {"tool_name": tool}), ("tool_result", result)]


def _pr(matched: int, reported: int, planted: int) -> dict[str, float | int]:
    return {"matched": matched, "reported": reported, "planted": planted,
            "precision": round(matched / reported, 4) if reported else 0.0,
            "recall": round(matched / planted, 4) if planted else 0.0}


def recovery(c: cortex.Cortex, truth: Truth) -> dict[str, Any]:
    """Precision and recall of the active artifacts against the planted knowledge."""
    forms = c.artifact_forms(status="active")
    schemas = [f for f in forms if f["artifact_type"] == "task_schema"]
    playbooks = [f for f in forms if f["artifact_type"] == "failure_playbook"]
    policies = [f for f in forms if f["artifact_type"] == "decision_policy"]
    planted_steps = set(truth.procedures.values())
    s_match = [f for f in schemas if tuple(f["content"]["steps"]) in planted_steps]
    found_procs = {tuple(f["content"]["steps"]) for f in s_match}

    def playbook_ok(f: dict[str, Any], mode: tuple[str, str, str]) -> bool:
        tool, trigger, fix = mode
        c_ = f["content"]
        return c_["failure_pattern"] == f"{tool} fails" and trigger in c_["trigger_conditions"] and c_["recovery_steps"] == [fix, tool]

    p_match = [f for f in playbooks if any(playbook_ok(f, m) for m in truth.failures)]
    found_modes = {m for m in truth.failures if any(playbook_ok(f, m) for f in playbooks)}
    d_match = [f for f in policies if truth.decisions.get(f["content"]["condition"]) == f["content"]["recommendation"]]
    found_decisions = {f["content"]["condition"] for f in d_match}
    parts = {
        "task_schema": _pr(len(s_match), len(schemas), len(planted_steps)) | {"recovered": len(found_procs)},
        "failure_playbook": _pr(len(p_match), len(playbooks), len(truth.failures)) | {"recovered": len(found_modes)},
        "decision_policy": _pr(len(d_match), len(policies), len(truth.decisions)) | {"recovered": len(found_decisions)},
    }
    matched = len(s_match) + len(p_match) + len(d_match)
    reported = len(schemas) + len(playbooks) + len(policies)
    planted = len(planted_steps) + len(truth.failures) + len(truth.decisions)
    recovered = len(found_procs) + len(found_modes) + len(found_decisions)
    overall = {"precision": round(matched / reported, 4) if reported else 0.0, "recall": round(recovered / planted, 4)}
    return {"by_type": parts, "overall": overall}


def _steps(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each session's steps as learn() builds them (a call and its result are one step)."""
    by_session: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for ev in events:
        by_session.setdefault(ev["session_id"], []).append((ev["sequence"], ev))
    out: dict[str, list[str]] = {}
    for sess, items in by_session.items():
        steps: list[str] = []
        waiting: set[str] = set()
        for _, ev in sorted(items, key=lambda x: x[0]):
            if ev["event_type"] not in ("tool_call", "tool_result"):
                continue
            lab = _label(ev["content"]["tool_name"])
            if ev["event_type"] == "tool_call":
                steps.append(lab)
                waiting.add(lab)
            elif lab in waiting:
                waiting.discard(lab)
            else:
                steps.append(lab)
        out[sess] = steps
    return out


def prediction(c: cortex.Cortex, train: list[dict[str, Any]], test: list[dict[str, Any]]) -> dict[str, Any]:
    """Next-step accuracy of the active task schemas and of the bigram baseline on held-out sessions."""
    schemas = [(f["observed_count"], f["artifact_id"], f["content"]["steps"]) for f in c.artifact_forms("task_schema", "active")]
    bigram: dict[str, Counter[str]] = {}
    for steps in _steps(train).values():
        for a, b in zip(steps, steps[1:]):
            bigram.setdefault(a, Counter())[b] += 1
    best_next = {a: min(cnt.items(), key=lambda kv: (-kv[1], kv[0]))[0] for a, cnt in bigram.items()}
    total = hits_schema = hits_bigram = covered = hits_combined = hits_bigram_covered = 0
    for steps in _steps(test).values():
        for i in range(1, len(steps)):
            history, actual = steps[:i], steps[i]
            total += 1
            guess_b = best_next.get(history[-1])
            hits_bigram += guess_b == actual
            guess_s = _schema_guess(schemas, history)
            if guess_s is not None:
                covered += 1
                hits_schema += guess_s == actual
                hits_bigram_covered += guess_b == actual
            hits_combined += (guess_s if guess_s is not None else guess_b) == actual
    return {"held_out_steps": total, "schemas": len(schemas),
            "schema_accuracy": round(hits_schema / total, 4) if total else 0.0,
            "schema_coverage": round(covered / total, 4) if total else 0.0,
            "schema_accuracy_where_applied": round(hits_schema / covered, 4) if covered else 0.0,
            "bigram_accuracy_where_schema_applied": round(hits_bigram_covered / covered, 4) if covered else 0.0,
            "schema_then_bigram_accuracy": round(hits_combined / total, 4) if total else 0.0,
            "bigram_accuracy": round(hits_bigram / total, 4) if total else 0.0}


def _schema_guess(schemas: list[tuple[int, str, list[str]]], history: list[str]) -> str | None:
    current = history[-1]
    best: tuple[tuple[int, int, str], str] | None = None
    for support, aid, steps in schemas:
        for j, step in enumerate(steps[:-1]):
            if step != current:
                continue
            matched = _matched(steps[:j], history[:-1])
            key = (-matched, -support, aid)
            if best is None or key < best[0]:
                best = (key, steps[j + 1])
    return None if best is None else best[1]


def _matched(prefix: list[str], history: list[str]) -> int:
    """How many of the schema's earlier steps appear, in order, backwards through the history."""
    count = 0
    pos = len(history) - 1
    for step in reversed(prefix):
        while pos >= 0 and history[pos] != step:
            pos -= 1
        if pos < 0:
            break
        count += 1
        pos -= 1
    return count


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_quality(sessions: int, seed: int, noise: float, workdir: Path) -> dict[str, Any]:
    events, truth = generate(seed, sessions, noise)
    with cortex.open(workdir / "all", actor="bench") as c:
        c.ingest_hmx(events)
        started = time.perf_counter()
        report = c.learn()
        learn_s = time.perf_counter() - started
        rec = recovery(c, truth)
    split = {f"s{i}" for i in range(sessions) if i % 5 != 4}
    train = [e for e in events if e["session_id"] in split]
    test = [e for e in events if e["session_id"] not in split]
    with cortex.open(workdir / "train", actor="bench") as c:
        c.ingest_hmx(train)
        c.learn()
        pred = prediction(c, train, test)
    return {"sessions": sessions, "events": len(events), "noise": noise, "seed": seed, "learn_seconds": round(learn_s, 3),
            "artifacts": report.by_type, "statuses": report.by_status, "recovery": rec, "prediction": pred}


def run_speed(events_n: int, seed: int, workdir: Path, increment: int = 1000) -> dict[str, Any]:
    """learn() from scratch over about `events_n` events, then over `increment` more."""
    per_session = 12  # about 12 events a generated session
    events, _ = generate(seed, max(1, events_n // per_session))
    more, _ = generate(seed + 1, max(1, increment // per_session), prefix="t")
    out: dict[str, Any] = {"events": len(events), "increment_events": len(more)}
    with cortex.open(workdir / "speed", actor="bench") as c:
        started, cpu = time.perf_counter(), time.process_time()
        c.ingest_hmx(events)
        out["ingest_seconds"] = round(time.perf_counter() - started, 2)
        out["ingest_cpu_seconds"] = round(time.process_time() - cpu, 2)
        rss = _rss_mb()
        started, cpu = time.perf_counter(), time.process_time()
        report = c.learn()
        out["learn_seconds"] = round(time.perf_counter() - started, 2)
        out["learn_cpu_seconds"] = round(time.process_time() - cpu, 2)
        out["learn_rss_growth_mb"] = round(_rss_mb() - rss, 1)
        out["artifacts"] = sum(report.by_status.values())
        c.ingest_hmx(more)
        started, cpu = time.perf_counter(), time.process_time()
        report = c.learn()
        out["incremental_learn_seconds"] = round(time.perf_counter() - started, 2)
        out["incremental_learn_cpu_seconds"] = round(time.process_time() - cpu, 2)
        out["incremental_events_read"] = report.events_read
    # Memory: peak RSS of a fresh process that opens the store and learns it all
    # again (full=True), against one that opens it and reads its stats.
    out["open_peak_rss_mb"] = _peak_rss(workdir / "speed", "c.stats()")
    out["full_learn_peak_rss_mb"] = _peak_rss(workdir / "speed", "c.learn(full=True)")
    return out


def _peak_rss(store: Path, call: str) -> float:
    code = (f"import resource, cortex\nwith cortex.open({str(store)!r}, actor='bench') as c:\n    {call}\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return round(float(done.stdout.strip().splitlines()[-1]), 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks learn", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--noise", type=float, default=0.2)
    parser.add_argument("--speed-events", type=int, default=0, help="also time learn() over this many events (0: skip)")
    parser.add_argument("--report", type=Path, help="write the JSON report here too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cortex-learn-bench-") as tmp:
        out: dict[str, Any] = {"quality": run_quality(args.sessions, args.seed, args.noise, Path(tmp))}
        if args.speed_events:
            out["speed"] = run_speed(args.speed_events, args.seed, Path(tmp))
    text = json.dumps(out, indent=2, sort_keys=True)
    print(text)
    if args.report:
        args.report.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
