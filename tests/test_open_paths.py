"""Where `cortex.open()` may create a store, and the folders a reader leaves behind.

* A writer creates a store in a folder that does not exist or is empty, and refuses
  (`NotAStore`, naming what it found, touching nothing) a non-empty folder that
  holds no store, or a file.
* A reader (`mode="r"`, a RocksDB secondary instance) keeps its private files in a
  `cortex-secondary-<pid>-*` folder of the temporary folder: `close()` removes it,
  and opening a reader removes those of processes that are gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import cortex
from cortex import Fact

ACTOR = "agent-paths"


def secondaries(pid: int | None = None) -> set[str]:
    """The reader folders in the temporary folder (of process `pid`: ours by default)."""
    prefix = f"cortex-secondary-{os.getpid() if pid is None else pid}-"
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith(prefix)}


def fact() -> Fact:
    return Fact(statement="s", subject="a", predicate="p")


@pytest.mark.parametrize("where", ["missing", "missing/nested/deeper", "empty"])
def test_a_writer_creates_a_store_where_there_is_nothing(tmp_path, where):
    (tmp_path / "empty").mkdir()
    path = tmp_path / where
    with cortex.open(path, actor=ACTOR) as c:
        uri = c.write(fact())
    with cortex.open(path, actor=ACTOR, mode="r") as c:
        assert c.resolve(uri).data == fact()
    assert cortex.store_actor(path) == ACTOR


def test_a_folder_of_other_things_is_not_a_store(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    for name in ("a.jpg", "b.jpg", "c.jpg", "notes.txt"):
        (folder / name).write_text(name)
    with pytest.raises(cortex.NotAStore) as caught:
        cortex.open(folder, actor=ACTOR)
    assert "a.jpg, b.jpg, c.jpg, …" in str(caught.value)  # names what it found
    assert isinstance(caught.value, cortex.StoreError)
    assert sorted(os.listdir(folder)) == ["a.jpg", "b.jpg", "c.jpg", "notes.txt"]  # nothing created among them

    file = tmp_path / "a-file"
    file.write_text("x")
    with pytest.raises(cortex.NotAStore, match="is a file"):
        cortex.open(file, actor=ACTOR)
    assert file.read_text() == "x"


@pytest.mark.parametrize("where", ["missing", "empty", "other"])
def test_a_reader_needs_a_store(tmp_path, where):
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x").write_text("x")
    with pytest.raises(cortex.NotFound):
        cortex.open(tmp_path / where, actor=ACTOR, mode="r")
    with pytest.raises(cortex.NotFound):
        cortex.store_actor(tmp_path / where)
    assert not (tmp_path / "missing").exists()


def test_a_reader_removes_its_folder_on_close(tmp_path):
    with cortex.open(tmp_path / "s", actor=ACTOR) as writer:
        writer.write(fact())
        before = secondaries()
        reader = cortex.open(tmp_path / "s", actor=ACTOR, mode="r")
        mine = secondaries() - before
        assert len(mine) == 1
        writer.write(fact())
        reader.refresh(reopen=True)  # a fresh secondary instance: a new folder, the old one gone
        assert len(secondaries() - before) == 1 and secondaries() - before != mine
        reader.close()
        assert secondaries() == before
        reader.close()  # idempotent
        cortex.store_actor(tmp_path / "s")  # a one-read follower open cleans up too
        assert secondaries() == before


def test_opening_a_reader_removes_the_folders_of_dead_processes(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead_pid = int(gone.stdout)
    stale = Path(tempfile.gettempdir()) / f"cortex-secondary-{dead_pid}-stale"
    stale.mkdir()
    (stale / "LOG").write_text("left by a reader that was never closed")
    alive = Path(tempfile.mkdtemp(prefix=f"cortex-secondary-{os.getppid()}-"))  # a live process's: kept
    try:
        with cortex.open(tmp_path / "s", actor=ACTOR) as c:
            c.write(fact())
        with cortex.open(tmp_path / "s", actor=ACTOR, mode="r"):
            assert not stale.exists()
            assert alive.exists()
    finally:
        alive.rmdir()
