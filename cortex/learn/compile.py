"""The five rules: session records in, artifacts out (a pure function of the records
and the thresholds; docs/learning.md states each rule in words).

`compile_artifacts(passes, params)` streams the session records (`passes()` yields
them again for each pass, in the same order) and returns the compiled artifacts in
a total order (type, artifact id). Nothing here reads or writes a store.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model import Frame, ObjKind, Verb
from . import mine
from .params import LearnParams
from .traces import CONTEXT, DECISION, STEP, Item

TYPES = ("task_schema", "failure_playbook", "decision_policy", "causal_pattern", "strategy_template")
COMPILED_STATUSES = ("draft", "active", "deprecated")
STATUSES = ("draft", "active", "superseded", "deprecated", "archived")

Sessions = Callable[[], Iterable[tuple[str, list[Item]]]]


def ratio(part: int, whole: int) -> float:
    """A share rounded to 6 decimals (every reported rate is one)."""
    return round(part / whole, 6) if whole else 0.0


def canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Artifact:
    """One compiled artifact. `content` holds every reported field and number (what
    `content_hash` covers); `evidence` the raw ids of its evidence events (at most
    `params.evidence_links`, in session order)."""

    artifact_type: str
    key: str
    status: str
    title: str
    content: dict[str, Any]
    frames: tuple[Frame, ...]
    evidence: tuple[bytes, ...]
    support: int
    confidence: float

    @property
    def artifact_id(self) -> str:
        return artifact_id(self.artifact_type, self.key)

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(canonical(self.body())).hexdigest()

    def body(self) -> dict[str, Any]:
        return {"artifact_type": self.artifact_type, "title": self.title, **self.content}


def artifact_id(artifact_type: str, key: str) -> str:
    return "art-" + hashlib.sha256(f"{artifact_type}\n{key}".encode()).hexdigest()[:32]


# ---------------------------------------------------------------------------
# Steps


@dataclass(slots=True)
class Step:
    label: str
    outcome: str
    ids: list[bytes]
    detail: str
    open: bool  # a call still waiting for its result


@dataclass(slots=True)
class Trace:
    """A session as the rules see it."""

    name: str
    steps: list[Step]
    decisions: list[tuple[int, str, str, bytes]]  # (steps before it, statement, subject, id)
    context: list[tuple[int, str, bytes]]  # (steps before it, frame label, id)

    @property
    def success(self) -> bool:
        return bool(self.steps) and self.steps[-1].outcome == "success"

    def labels(self) -> list[str]:
        return [s.label for s in self.steps]

    def path(self) -> list[int]:
        """The steps a task schema is mined from (positions in `steps`): every step but
        the detours failures forced. A failed step that the session later retries with
        success is left out, with the steps between (the recovery, which the failure
        playbook reports); the successful retry stays."""
        out: list[int] = []
        i = 0
        steps = self.steps
        while i < len(steps):
            step = steps[i]
            if step.outcome != "success":
                retry = next((j for j in range(i + 1, len(steps))
                              if steps[j].label == step.label and steps[j].outcome == "success"), None)
                if retry is not None:
                    i = retry
                    continue
            out.append(i)
            i += 1
        return out


def trace_of(name: str, items: Sequence[Item]) -> Trace:
    """Steps from items: a step starts at every call (a dispatch) and at every event
    that is not a call's result. An event is the result of the latest call of the
    same label still without one (other events may come between them); the step
    then takes the result's outcome."""
    steps: list[Step] = []
    decisions: list[tuple[int, str, str, bytes]] = []
    context: list[tuple[int, str, bytes]] = []
    waiting: dict[str, Step] = {}  # label -> its latest call without a result
    for _, raw_id, code, label, outcome, detail in items:
        if code == STEP:
            is_call = detail == "call"
            call = None if is_call else waiting.pop(label, None)
            if call is not None:
                call.outcome, call.detail, call.open = outcome, detail, False
                call.ids.append(raw_id)
            else:
                step = Step(label, outcome, [raw_id], "" if is_call else detail, is_call)
                steps.append(step)
                if is_call:
                    waiting[label] = step
        elif code == DECISION:
            decisions.append((len(steps), label, detail, raw_id))
        elif code == CONTEXT:
            context.append((len(steps), label, raw_id))
    return Trace(name, steps, decisions, context)


def frame_of(label: str) -> Frame | None:
    """The frame a `"verb kind:ref"` label names (None for a label without one)."""
    verb, _, rest = label.partition(" ")
    kind, sep, ref = rest.partition(":")
    if not sep or verb.upper() not in Verb.__members__ or kind.upper() not in ObjKind.__members__ or not ref:
        return None
    return Frame(verb, kind, ref)


def _frames(labels: Iterable[str]) -> tuple[Frame, ...]:
    out: list[Frame] = []
    for label in labels:
        f = frame_of(label)
        if f is not None and f not in out:
            out.append(f)
    return tuple(out[:16])


def _tools(labels: Iterable[str]) -> list[str]:
    out: list[str] = []
    for label in labels:
        f = frame_of(label)
        if f is not None and f.kind == ObjKind.TOOL and f.ref not in out:
            out.append(f.ref)
    return out


def _status(params: LearnParams, support: int, sessions: int, confidence: float) -> str | None:
    """draft / active / deprecated from support and confidence; None below the draft support."""
    if support < params.draft_support(sessions):
        return None
    if confidence < params.deprecate_below:
        return "deprecated"
    return "active" if support >= params.active_support(sessions) else "draft"


def _keep(params: LearnParams, ids: list[bytes], new: Iterable[bytes]) -> None:
    for raw_id in new:
        if len(ids) >= params.evidence_links:
            return
        ids.append(raw_id)


def _shared(counts: Counter[str], whole: int, share: float) -> list[str]:
    """Labels counted in at least `share` of `whole`, by count descending then label."""
    need = share * whole
    return [label for label, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if whole and c >= need]


# ---------------------------------------------------------------------------
# The compiler


@dataclass(slots=True)
class _Tally:
    """What one streaming pass over the sessions adds up (bounded by the labels and
    decisions seen, not by the events)."""

    sessions: int = 0  # sessions with steps
    successes: int = 0
    path_support: Counter[str] = field(default_factory=Counter)  # sessions whose path holds the label
    label_support: Counter[str] = field(default_factory=Counter)
    label_success: Counter[str] = field(default_factory=Counter)
    label_evidence: dict[str, list[bytes]] = field(default_factory=dict)
    fail_sessions: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    recovered: Counter[str] = field(default_factory=Counter)
    triggers: dict[str, Counter[str]] = field(default_factory=dict)
    recoveries: dict[str, Counter[tuple[str, ...]]] = field(default_factory=dict)
    errors: dict[str, Counter[str]] = field(default_factory=dict)
    fail_evidence: dict[str, list[bytes]] = field(default_factory=dict)
    decided: dict[str, Counter[str]] = field(default_factory=dict)  # condition -> option -> sessions
    decided_ok: dict[str, Counter[str]] = field(default_factory=dict)
    decision_sessions: Counter[str] = field(default_factory=Counter)
    decision_evidence: dict[str, list[bytes]] = field(default_factory=dict)


def _tally(params: LearnParams, traces: Iterable[Trace]) -> _Tally:
    t = _Tally()
    for tr in traces:
        if not tr.steps:
            continue
        t.sessions += 1
        ok = tr.success
        t.successes += ok
        last = tr.steps[-1]
        t.path_support.update({tr.steps[i].label for i in tr.path()})
        seen: set[str] = set()
        for step in tr.steps:
            if step.label in seen:
                continue
            seen.add(step.label)
            t.label_support[step.label] += 1
            t.label_success[step.label] += ok
            _keep(params, t.label_evidence.setdefault(step.label, []), [step.ids[0], last.ids[-1]])
        failed_here: set[str] = set()
        for i, step in enumerate(tr.steps):
            if step.outcome == "success":
                continue
            x = step.label
            failed_here.add(x)
            t.failures[x] += 1
            t.triggers.setdefault(x, Counter())[tr.steps[i - 1].label if i else "(session start)"] += 1
            if step.detail:
                t.errors.setdefault(x, Counter())[step.detail] += 1
            _keep(params, t.fail_evidence.setdefault(x, []), step.ids)
            for j in range(i + 1, len(tr.steps)):
                later = tr.steps[j]
                if later.label == x and later.outcome == "success":
                    t.recovered[x] += 1
                    t.recoveries.setdefault(x, Counter())[tuple(s.label for s in tr.steps[i + 1 : j + 1])] += 1
                    break
        for x in failed_here:
            t.fail_sessions[x] += 1
        taken: dict[str, set[str]] = {}
        for before, statement, subject, raw_id in tr.decisions:
            condition = subject or (tr.steps[before - 1].label if before else "(session start)")
            if statement in taken.setdefault(condition, set()):
                continue
            taken[condition].add(statement)
            t.decided.setdefault(condition, Counter())[statement] += 1
            t.decided_ok.setdefault(condition, Counter())[statement] += ok
            _keep(params, t.decision_evidence.setdefault(condition, []), [raw_id, last.ids[-1]])
        for condition in taken:
            t.decision_sessions[condition] += 1
    return t


def compile_artifacts(passes: Sessions, params: LearnParams) -> list[Artifact]:
    """Every compiled artifact (see the module docstring)."""

    def traces() -> Iterable[Trace]:
        for name, items in passes():
            yield trace_of(name, items)

    with _Spool() as spool:
        tally = _tally(params, _spooled(traces(), spool))
        return _compile(params, traces, tally, spool)


def _spooled(traces: Iterable[Trace], spool: _Spool) -> Iterator[Trace]:
    """The traces, each session's path written to the spool on the way (the miner's
    passes read it there, not the records again)."""
    for tr in traces:
        if tr.steps:
            spool.write([tr.steps[i].label for i in tr.path()])
        yield tr


class _Spool:
    """Sessions' paths as label numbers in a temporary file: what the miner's passes
    read (a few bytes a step on disk, one session at a time in memory)."""

    def __init__(self) -> None:
        self.labels: dict[str, int] = {}
        self.names: list[str] = []
        self._file = tempfile.TemporaryFile()

    def __enter__(self) -> _Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def write(self, path: list[str]) -> None:
        ids = array("I", [len(path)])
        for label in path:
            number = self.labels.get(label)
            if number is None:
                number = self.labels[label] = len(self.names)
                self.names.append(label)
            ids.append(number)
        self._file.write(ids.tobytes())

    def passes(self, keep: set[str]) -> Callable[[], Iterable[list[int]]]:
        wanted = {self.labels[label] for label in keep if label in self.labels}

        def read() -> Iterator[list[int]]:
            self._file.seek(0)
            reader = self._file
            size = array("I").itemsize
            while True:
                head = reader.read(size)
                if not head:
                    return
                (n,) = array("I", head)
                ids = array("I", reader.read(size * n))
                yield [i for i in ids if i in wanted]

        return read


def _compile(params: LearnParams, traces: Callable[[], Iterable[Trace]], tally: _Tally, spool: _Spool) -> list[Artifact]:
    n = tally.sessions
    out: list[Artifact] = []
    schemas = _task_schemas(params, traces, tally, spool)
    out.extend(schemas)
    out.extend(_playbooks(params, tally))
    out.extend(_policies(params, tally))
    out.extend(_causal(params, tally))
    keep = _frequent_labels(params, tally)
    out.extend(_strategies(params, traces, [s for s in schemas if s.status == "active"], n, keep))
    out.sort(key=lambda a: (TYPES.index(a.artifact_type), a.artifact_id))
    return out


# ---------------------------------------------------------------------------
# task_schema


def _frequent_labels(params: LearnParams, tally: _Tally) -> set[str]:
    """The labels on the paths of at least the draft support of sessions: the steps
    patterns are made of (and between which gaps are counted)."""
    minsup = params.draft_support(tally.sessions)
    return {label for label, c in tally.path_support.items() if c >= minsup}


def mined_patterns(params: LearnParams, tally: _Tally, spool: _Spool) -> dict[tuple[str, ...], int]:
    """The reported patterns: frequent (draft support), `min_steps` long or more, and
    not covered: from the longest down, a pattern is left out when the longer
    patterns already reported that contain it hold, their supports summed, at least
    `cover_share` of its support (it says less than they do)."""
    minsup = params.draft_support(tally.sessions)
    keep = _frequent_labels(params, tally)
    if not keep:
        return {}
    numbered = mine.mine(spool.passes(keep), minsup, params.max_gap, params.max_steps)
    found = {tuple(spool.names[i] for i in p): s for p, s in numbered.items()}
    long = {p: s for p, s in found.items() if len(p) >= params.min_steps}
    by_len = sorted(long.items(), key=lambda kv: (-len(kv[0]), kv[0]))
    reported: dict[tuple[str, ...], int] = {}
    for p, s in by_len:
        held = sum(sq for q, sq in reported.items() if len(q) > len(p) and mine.is_subsequence(p, q))
        if held < params.cover_share * s:
            reported[p] = s
    return reported


def _task_schemas(params: LearnParams, traces: Callable[[], Iterable[Trace]], tally: _Tally, spool: _Spool) -> list[Artifact]:
    patterns = mined_patterns(params, tally, spool)
    if not patterns:
        return []
    keep = _frequent_labels(params, tally)
    stats = {p: _SchemaStats() for p in patterns}
    for tr in traces():
        if not tr.steps:
            continue
        index = [i for i in tr.path() if tr.steps[i].label in keep]
        seq = [tr.steps[i].label for i in index]
        for p, st in stats.items():
            positions = mine.first_occurrence(seq, p, params.max_gap)
            if positions is None:
                continue
            st.support += 1
            st.successes += tr.success
            first, last = index[positions[0]], index[positions[-1]]
            st.before.update({label for at, label, _ in tr.context if at <= first})
            if tr.success:
                st.after.update({label for at, label, _ in tr.context if at > last})
            _keep(params, st.evidence, [raw_id for pos in positions for raw_id in tr.steps[index[pos]].ids])
    out = []
    for p, st in stats.items():
        rate = ratio(st.successes, st.support)
        status = _status(params, st.support, tally.sessions, rate)
        if status is None:
            continue
        content = {
            "steps": list(p), "tools_used": _tools(p),
            "preconditions": _shared(st.before, st.support, params.condition_share),
            "postconditions": _shared(st.after, st.successes, params.condition_share),
            "complexity": "low" if len(p) <= 3 else "medium" if len(p) <= 5 else "high",
            "success_rate": rate, "observed_count": st.support, "confidence": rate,
            "sessions_total": tally.sessions,
        }
        title = f"{p[0]} \u2192 \u2026 \u2192 {p[-1]} ({len(p)} steps)" if len(p) > 3 else " \u2192 ".join(p)
        out.append(Artifact("task_schema", "\u241f".join(p), status, title, content, _frames(p), tuple(st.evidence),
                            st.support, rate))
    return out


@dataclass(slots=True)
class _SchemaStats:
    support: int = 0
    successes: int = 0
    before: Counter[str] = field(default_factory=Counter)
    after: Counter[str] = field(default_factory=Counter)
    evidence: list[bytes] = field(default_factory=list)


# ---------------------------------------------------------------------------
# failure_playbook, decision_policy, causal_pattern


def _severity(recovery_rate: float) -> str:
    return "critical" if recovery_rate < 0.25 else "high" if recovery_rate < 0.5 else "medium" if recovery_rate < 0.75 else "low"


def _playbooks(params: LearnParams, t: _Tally) -> list[Artifact]:
    out = []
    for x in sorted(t.failures):
        support = t.fail_sessions[x]
        failures = t.failures[x]
        rate = ratio(t.recovered[x], failures)
        status = _status(params, support, t.sessions, rate)
        if status is None:
            continue
        recoveries = t.recoveries.get(x, Counter())
        best = min(recoveries.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0] if recoveries else ()
        triggers = t.triggers[x]
        content = {
            "failure_pattern": f"{x} fails",
            "trigger_conditions": _shared(triggers, failures, params.trigger_share),
            "trigger_counts": dict(sorted(triggers.items())),
            "recovery_steps": list(best), "recovery_count": recoveries.get(best, 0) if best else 0,
            "error_types": dict(sorted(t.errors.get(x, Counter()).items())),
            "prevention_strategies": [f"check before {label}" for label in _shared(triggers, failures, params.trigger_share)
                                      if label != "(session start)"],
            "severity": _severity(rate), "occurrence_count": failures, "session_count": support,
            "recovered_count": t.recovered[x], "recovery_rate": rate, "confidence": rate,
        }
        labels = [x, *_shared(triggers, failures, params.trigger_share), *best]
        out.append(Artifact("failure_playbook", x, status, f"when {x} fails", content, _frames(labels),
                            tuple(t.fail_evidence[x]), support, rate))
    return out


def _policies(params: LearnParams, t: _Tally) -> list[Artifact]:
    out = []
    for condition in sorted(t.decided):
        taken, ok = t.decided[condition], t.decided_ok[condition]
        rates = {o: ratio(ok[o], taken[o]) for o in taken}
        options = [{"option": o, "sessions": taken[o], "successes": ok[o], "success_rate": rates[o]} for o in sorted(taken)]
        chosen = min(taken, key=lambda o: (-rates[o], -taken[o], o))
        support = t.decision_sessions[condition]
        confidence = rates[chosen]
        status = _status(params, support, t.sessions, confidence)
        if status is None:
            continue
        content = {"condition": condition, "recommendation": chosen, "options": options,
                   "confidence": confidence, "outcome_count": support}
        out.append(Artifact("decision_policy", condition, status, f"when {condition}: {chosen}", content,
                            _frames([condition]), tuple(t.decision_evidence[condition]), support, confidence))
    return out


def _causal(params: LearnParams, t: _Tally) -> list[Artifact]:
    out = []
    n = t.sessions
    for label in sorted(t.label_support):
        n_a = t.label_support[label]
        for outcome, n_o, n_ao in (("success", t.successes, t.label_success[label]),
                                   ("failure", n - t.successes, n_a - t.label_success[label])):
            if not n_o or not n_ao:
                continue
            confidence = ratio(n_ao, n_a)
            lift = round((n_ao / n_a) / (n_o / n), 6)
            if lift < params.min_lift or confidence < params.causal_min_confidence:
                continue
            status = _status(params, n_ao, n, confidence)
            if status is None:
                continue
            content = {"cause": label, "effect": f"session {outcome}", "support": n_ao, "confidence": confidence,
                       "lift": lift, "cause_sessions": n_a, "effect_sessions": n_o, "sessions_total": n}
            out.append(Artifact("causal_pattern", f"{label}\u241f{outcome}", status, f"{label} \u2192 session {outcome}",
                                content, _frames([label]), tuple(t.label_evidence[label]), n_ao, confidence))
    return out


# ---------------------------------------------------------------------------
# strategy_template


def _strategies(params: LearnParams, traces: Callable[[], Iterable[Trace]], schemas: list[Artifact], n: int,
                keep: set[str]) -> list[Artifact]:
    if len(schemas) < 2:
        return []
    patterns = [(s, tuple(s.content["steps"])) for s in schemas]
    both: Counter[tuple[int, int]] = Counter()
    ok: Counter[tuple[int, int]] = Counter()
    evidence: dict[tuple[int, int], list[bytes]] = {}
    for tr in traces():
        if not tr.steps:
            continue
        seq = [tr.steps[i].label for i in tr.path() if tr.steps[i].label in keep]  # the miner's sequence
        spans = {}
        for i, (_, p) in enumerate(patterns):
            found = mine.ends(seq, p, params.max_gap)
            if found:
                spans[i] = (min(found), max(found.values()))
        for a, (end_a, _) in spans.items():
            for b, (_, start_b) in spans.items():
                if a != b and end_a < start_b:
                    both[a, b] += 1
                    ok[a, b] += tr.success
                    _keep(params, evidence.setdefault((a, b), []), [tr.steps[0].ids[0], tr.steps[-1].ids[-1]])
    out = []
    for (a, b), count in sorted(both.items()):
        rate = ratio(ok[a, b], count)
        status = _status(params, ok[a, b], n, rate)
        if status is None:
            continue
        sa, sb = patterns[a][0], patterns[b][0]
        content = {"phases": [{"artifact_id": sa.artifact_id, "steps": sa.content["steps"]},
                              {"artifact_id": sb.artifact_id, "steps": sb.content["steps"]}],
                   "session_count": count, "success_count": ok[a, b], "success_rate": rate, "confidence": rate}
        out.append(Artifact("strategy_template", f"{sa.artifact_id}\u241f{sb.artifact_id}", status,
                            f"{sa.title}, then {sb.title}", content, tuple(dict.fromkeys(sa.frames + sb.frames))[:16],
                            tuple(evidence[a, b]), ok[a, b], rate))
    return out

