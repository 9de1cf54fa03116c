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
