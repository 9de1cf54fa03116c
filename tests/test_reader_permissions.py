"""A `mode="r"` reader needs no write permission on the store folder (docs/trust.md):
a sub-agent can be given a store through file permissions alone.

The reader runs in a child process without write access: the store's folder and
files are made read-only, and under root (which file permissions do not bind) the
child also drops the capabilities that bypass them (`setpriv`). The writer, in this
process, goes on writing, and the child sees its writes after `refresh()`."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import cortex
from cortex import Fact

REPO = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys
import cortex
r = cortex.open(sys.argv[1], actor="a", mode="r")
print(json.dumps([m.data.statement for m in r.memories()]), flush=True)
sys.stdin.readline()
r.refresh()
print(json.dumps([m.data.statement for m in r.memories()]), flush=True)
try:
    open(sys.argv[1] + "/probe", "w")
    print("could write", flush=True)
except OSError:
    print("could not write", flush=True)
r.close()
"""


def _without_write_access() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot be made to bind")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def _read_only(folder: Path) -> None:
    for path in [folder, *folder.iterdir()]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def test_a_reader_needs_no_write_permission(tmp_path):
    store = tmp_path / "s"
    with cortex.open(store, actor="a") as writer:
        writer.write(Fact(statement="one", subject="s", predicate="p"))
        writer.write(Fact(statement="two", subject="s", predicate="p"))
        writer._engine.storage.flush()
        _read_only(store)
        config = (store / "rocksdict-config.json").stat().st_mtime_ns
        child = subprocess.Popen([*_without_write_access(), sys.executable, "-c", CHILD, str(store)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": str(REPO)})
        try:
            assert child.stdout is not None and child.stdin is not None
            first = child.stdout.readline()
            assert json.loads(first or "null") == ["one", "two"], child.stderr.read() if not first else first
            writer.write(Fact(statement="three", subject="s", predicate="p"))  # the writer is not bound by the modes
            child.stdin.write("\n")
            child.stdin.flush()
            assert json.loads(child.stdout.readline()) == ["one", "two", "three"]
            assert child.stdout.readline().strip() == "could not write"  # the child really had no write access
        finally:
            child.kill()
            child.wait()
        assert (store / "rocksdict-config.json").stat().st_mtime_ns == config
    for path in [store, *store.iterdir()]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
