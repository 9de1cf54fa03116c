"""`cortex demo` tells the story (the agent, the task, the budget, the tiers, a
resolved overflow URI, what to try next) and cleans up after itself: its temporary
store is gone when it ends, unless `--keep` or `--store DIR` asked for it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import cortex
from cortex.cli import main


def demo(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m cortex demo ...` with `tmp` as its temporary folder."""
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run([sys.executable, "-m", "cortex", "demo", *args], cwd=tmp, env=env, text=True,
                          capture_output=True, timeout=120)


def test_two_demos_leave_no_temporary_folder(tmp_path):
    temp = tmp_path / "temp"
    temp.mkdir()
    outputs = [demo(temp) for _ in range(2)]
    for result in outputs:
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
    assert [p.name for p in temp.iterdir() if p.name.startswith("cortex-")] == []

    out = outputs[0].stdout
    assert "The agent is agent-ops-1" in out
    assert 'c.context(verb="acquire", objects={"service": "gpu_inference"}, budget_tokens=200, form="medium")' in out
    assert "within 200 tokens" in out
    for legend in ("Pinned          always there", "Frame-relevant  memories filed", "Outcomes        the newest",
                   "Reachable       what did not fit"):
        assert legend in out
    for section in ("## Pinned", "## Frame-relevant", "## Outcomes", "## Reachable"):
        assert section in out
    assert "[hard] never pay more than 2 USD per GPU hour" in out  # the constraint reads as a sentence
    store = re.search(r"^Store: (\S+)  \(temporary: removed when the demo ends", out, re.M)
    assert store and store.group(1).startswith(str(temp))
    reachable = re.findall(r"^- (cortex://\S+)$", out.split("## Reachable")[1], re.M)
    assert reachable and f'c.resolve("{reachable[0]}")' in out  # the best memory left out, resolved
    assert "Next: keep a store to explore with `cortex demo --store ./demo-store`" in out
    assert "cortex context ./demo-store --verb acquire --object service=gpu_inference" in out


def test_keep_and_store_leave_a_store_to_explore(tmp_path, capsys):
    kept = demo(tmp_path, "--keep", "--budget", "4000")
    assert kept.returncode == 0
    path = re.search(r"^Store: (\S+)$", kept.stdout, re.M).group(1)
    assert f"cortex stats {path}" in kept.stdout
    assert "Nothing was left out at 4000 tokens" in kept.stdout
    with cortex.open(path, actor="agent-ops-1", mode="r") as c:
        assert c.stats()["memories"] == 15 and c.verify() == []
    shutil.rmtree(Path(path).parent)

    store = tmp_path / "mine"
    assert main(["demo", "--store", str(store)]) == 0
    first = capsys.readouterr().out
    assert f"Store: {store}\n" in first and f"cortex find {store} --type Event" in first
    assert main(["demo", "--store", str(store)]) == 0  # a second run reuses the store
    with cortex.open(store, actor="agent-ops-1", mode="r") as c:
        assert c.stats()["memories"] == 15


def test_a_demo_that_fails_still_removes_its_store(tmp_path, monkeypatch, capsys):
    import tempfile

    import cortex.cli.demo

    def broken(now):
        raise cortex.ValidationError("demo", "fails on purpose, after its store was created")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(cortex.cli.demo, "_demo_memories", broken)
    assert main(["demo"]) == 2
    assert capsys.readouterr().err == "cortex: ValidationError: demo: fails on purpose, after its store was created\n"
    assert list(tmp_path.iterdir()) == []
