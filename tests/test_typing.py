"""A user's script, written as the README shows, type-checks under `mypy --strict`
against the package as installed (it ships `py.typed`), and an editor infers the
types that come back: `Bundle` from `context()`, `Memory` from `resolve()` and
`find()`, `str` from `write()`."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import cortex

USER_SCRIPT = '''
from datetime import datetime, timezone

import cortex
from cortex import Event, Fact, Frame, Preference, Write

with cortex.open("agent-store", actor="agent-ops-1") as c:
    uri = c.write(Preference(topic="tone", polarity="prefer", strength=0.8, rationale="short answers"),
                  frames=[Frame("acquire", "service", "gpu")], importance=6, tags=["style"])
    c.write_many([Write(Fact(statement="s", subject="a", predicate="p"), frames=[Frame("acquire", "service", "gpu")])])
    c.write(Event(kind="intent_completed", outcome="success", counterparty="acme", cost=("USD", 1.2)))
    b = c.context(verb="acquire", objects={"service": "gpu"}, budget_tokens=3000, form="medium",
                  now=datetime.now(timezone.utc))
    for m in b.pinned + b.outcomes + b.frame_relevant:
        print(m.uri, b.rendered[m.id])
    later = [c.resolve(u) for u in b.reachable_uris]
    found = c.find(type="Goal", where=("eq", "status", "active"), limit=10)
    score = c.salience(uri)
    reveal_type(uri)
    reveal_type(b)
    reveal_type(later)
    reveal_type(found)
    reveal_type(score)
    reveal_type(b.to_markdown())
    reveal_type(c.weights())
'''


def _installed() -> bool:
    purelib = Path(sysconfig.get_paths()["purelib"]).resolve()
    return purelib in Path(cortex.__file__).resolve().parents


def test_the_readme_script_type_checks_strictly_and_infers_the_public_types(tmp_path):
    pytest.importorskip("mypy")
    (tmp_path / "agent.py").write_text(USER_SCRIPT)
    env = {"PATH": ""}
    if not _installed():  # an editable checkout: point mypy at the source tree
        env["MYPYPATH"] = str(Path(cortex.__file__).resolve().parent.parent)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), "agent.py"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
    )
    lines = result.stdout.splitlines()
    assert [line for line in lines if ": error: " in line] == [], result.stdout + result.stderr
    revealed = [line.split('Revealed type is "', 1)[1].rstrip('"').replace("builtins.", "")
                for line in lines if "Revealed type is" in line]
    assert revealed == [
        "str",
        "cortex.context.bundle.Bundle",
        "list[cortex.memory.Memory]",
        "list[cortex.memory.Memory]",
        "cortex.salience.score.Score",
        "str",
        "cortex.salience.score.Weights",
    ], result.stdout


# A user's script calling `context()` and `find()` with keyword arguments. The lines
# after the marker each hold one mistake an editor must flag: a misspelled option, a
# value of the wrong type, a form or tier or order that does not exist.
TYPED_SCRIPT = '''
from datetime import datetime, timezone

import cortex
from cortex import ContextOpts, Goal, Tier, Verb

with cortex.open("agent-store", actor="agent-ops-1") as c:
    b = c.context(verb=Verb.ACQUIRE, objects={"service": "gpu"}, budget_tokens=800, include_tiers=[Tier.PINNED, "outcomes"],
                  outcome_limit=2, form="short", now=datetime.now(timezone.utc), include_superseded=True, scope=None)
    opts = ContextOpts(verb="acquire", objects={"service": "gpu"}, form="full")
    again = c.context(opts, budget_tokens=50)
    found = c.find(type=Goal, where={"status": "active"}, order_by="-created", form="short", limit=3)
    by_name = c.find(type="Goal", where=("eq", "status", "active"), budget_tokens=500)
    moved = cortex.migrate("agent-store", "copy")
    reveal_type(b)
    reveal_type(again)
    reveal_type(b.scores)
    reveal_type(opts.include_tiers)
    reveal_type(opts.form)
    reveal_type(opts.verb)
    reveal_type(found)
    reveal_type(by_name)
    reveal_type(moved)
    reveal_type(moved.root)
    # mistakes below
    c.context(verb="acquire", budget_token=800)
    c.context(verb="acquire", budget_tokens="800")
    c.context(verb="acquire", form="tiny")
    c.context(verb="acquire", include_tiers=["pinned", "everything"])
    c.context(verb="acquire", objects=["service", "gpu"])
    c.find(type="Goal", limit=3, order_by="size")
    c.find(type="Goal", limit=3, where=5)
    c.find(type="Goal", limt=3)
    ContextOpts(verb="acquire", form="tiny")
'''


def _mypy(tmp_path: Path, script: str) -> list[str]:
    (tmp_path / "agent.py").write_text(script)
    env = {"PATH": ""}
    if not _installed():  # an editable checkout: point mypy at the source tree
        env["MYPYPATH"] = str(Path(cortex.__file__).resolve().parent.parent)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), "agent.py"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
    )
    return result.stdout.splitlines()


def test_context_and_find_keywords_are_typed_and_mistakes_are_type_errors(tmp_path):
    pytest.importorskip("mypy")
    lines = _mypy(tmp_path, TYPED_SCRIPT)
    revealed = [line.split('Revealed type is "', 1)[1].rstrip('"').replace("builtins.", "")
                for line in lines if "Revealed type is" in line]
    assert revealed == [
        "cortex.context.bundle.Bundle",
        "cortex.context.bundle.Bundle",
        "typing.Mapping[str, float]",
        "typing.Collection[cortex.model.Tier | Literal['pinned'] | Literal['outcomes'] | Literal['frame_relevant']] | None",
        "Literal['short'] | Literal['medium'] | Literal['full']",
        "cortex.model.Verb | str | None",
        "list[cortex.memory.Memory]",
        "list[cortex.memory.Memory]",
        "cortex.interop.migrate.Migration",
        "str",
    ], "\n".join(lines)
    first_mistake = TYPED_SCRIPT.splitlines().index("    # mistakes below") + 1
    errors = {int(line.split(":")[1]) - first_mistake: line for line in lines if ": error: " in line}
    # Each mistake is an error on its own line, and nothing before the mistakes is one.
    assert sorted(errors) == list(range(1, 10)), "\n".join(lines)
    expected = [
        'Argument "budget_token" to "context" of "Cortex" has incompatible type "int"; expected "Never"',  # misspelled
        'Argument "budget_tokens" to "context" of "Cortex" has incompatible type "str"; expected "int"',
        'Argument "form" to "context" of "Cortex" has incompatible type "Literal[\'tiny\']"',
        'List item 1 has incompatible type "Literal[\'everything\']"',
        'Argument "objects" to "context" of "Cortex" has incompatible type "list[str]"; expected "Mapping[str, str]"',
        'Argument "order_by" to "find" of "Cortex" has incompatible type "Literal[\'size\']"',
        'Argument "where" to "find" of "Cortex" has incompatible type "int"',
        'Unexpected keyword argument "limt" for "find" of "Cortex"',
        'Argument "form" to "ContextOpts" has incompatible type "Literal[\'tiny\']"',
    ]
    for offset, fragment in enumerate(expected, start=1):
        assert fragment in errors[offset], errors[offset]


def test_every_exported_error_and_the_migration_type_are_documented():
    """Every error class `cortex` exports says when it is raised, and `migrate()`'s
    return type is exported with the rest of the public names."""
    from cortex import errors

    for name in errors.__all__:
        assert (getattr(cortex, name).__doc__ or "").strip(), name
    assert cortex.Migration.__doc__ and "Migration" in cortex.__all__
    assert cortex.migrate.__annotations__["return"] in ("Migration", cortex.Migration)
