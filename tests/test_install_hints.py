"""The name cortex installs under, and the one line a missing optional dependency
gets: the import name is `cortex`, but the package index's `cortex` is an unrelated
project, so every install hint names the distribution `cortex-memory-engine` and the
extra that brings the missing package.

A missing package is made missing the way Python itself reports one: `None` in
`sys.modules` makes its import raise `ModuleNotFoundError` naming it.
"""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
from pathlib import Path

import pytest

import cortex
from cortex.cli import main

ROOT = Path(__file__).resolve().parent.parent
DIST = "cortex-memory-engine"


def test_the_distribution_name_is_the_one_every_hint_uses():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DIST == cortex.errors.DISTRIBUTION
    assert project["scripts"] == {"cortex": "cortex.cli:main"}
    # the test extra pulls the other extras by this name, not by the index's `cortex`
    assert f"{DIST}[mcp,langgraph,postgres]" in project["optional-dependencies"]["test"]


def test_no_install_hint_names_the_wrong_package():
    """`pip install 'cortex[...]'` or `pip install cortex` would install the index's
    unrelated `cortex`: no source file, README or docs page says it."""
    wrong = re.compile(r"pip install (-e )?'?cortex(\[|'|\s|$)", re.M)
    files = [*ROOT.glob("cortex/**/*.py"), ROOT / "README.md", *ROOT.glob("docs/**/*.md")]
    offenders = [str(p.relative_to(ROOT)) for p in files if wrong.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_version_names_the_distribution(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"cortex {cortex.__version__} (pip install {DIST})\n"


def _without(monkeypatch: pytest.MonkeyPatch, package: str, *importers: str) -> None:
    monkeypatch.setitem(sys.modules, package, None)
    for name in importers:  # imported earlier in this process: import them afresh
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_postgresql_store_without_psycopg_is_one_line_naming_the_extra(monkeypatch, capsys):
    _without(monkeypatch, "psycopg", "cortex.storage.postgres")
    status = main(["stats", "postgresql://cortex@127.0.0.1:1/agents", "--actor", "agent-ops-1"])
    assert (status, capsys.readouterr().err) == (
        2, "cortex: MissingExtra: a PostgreSQL store needs the 'psycopg' package, which is not installed: "
           f"pip install '{DIST}[postgres]'\n")


def test_open_without_psycopg_raises_missing_extra(monkeypatch):
    _without(monkeypatch, "psycopg", "cortex.storage.postgres")
    with pytest.raises(cortex.MissingExtra) as caught:
        cortex.open("postgresql://cortex@127.0.0.1:1/agents", actor="a")
    assert (caught.value.module, caught.value.extra) == ("psycopg", "postgres")
    assert isinstance(caught.value, ImportError)  # code that catches ImportError still does


def test_cortex_mcp_without_the_sdk_is_one_line_naming_the_extra(monkeypatch, capsys, tmp_path):
    _without(monkeypatch, "mcp", "cortex.integrations.mcp", "mcp.server", "mcp.types")
    assert main(["mcp", str(tmp_path / "s")]) == 2
    assert capsys.readouterr().err == (
        f"cortex: MissingExtra: the MCP server needs the 'mcp' package, which is not installed: pip install '{DIST}[mcp]'\n")


def test_the_langgraph_store_without_langgraph_names_the_extra(monkeypatch):
    _without(monkeypatch, "langgraph", "cortex.integrations.langgraph", "langgraph.store", "langgraph.store.base")
    with pytest.raises(cortex.MissingExtra, match=re.escape(f"pip install '{DIST}[langgraph]'")):
        importlib.import_module("cortex.integrations.langgraph")
