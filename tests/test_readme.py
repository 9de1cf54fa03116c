"""README.md is the landing page: it opens with the two commands that install and try
cortex and run its tests, its Quick start and agent loop run verbatim (twice: the
keyed memories stay one each), every link points at a page or heading that exists,
its install hints name the distribution the index holds, and it points to no
document a user does not have. The manual itself is docs/ (tests/test_docs.py)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import cortex

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """The text under the `## title` heading, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.M | re.S)
    assert match, f"no section {title!r}"
    return match.group(1)


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")


def test_it_opens_with_the_two_commands():
    lines = README.splitlines()
    assert lines[0] == "# cortex" and lines[1] == ""
    assert [line.split("#")[0].strip() for line in lines[2:4]] == [
        "pip install . && cortex demo", "pip install '.[test]' && python -m pytest"]


def test_it_is_a_landing_page_not_the_manual():
    assert len(README.splitlines()) <= 250


def test_no_reference_to_documents_a_user_does_not_have():
    assert "DESIGN" not in README and "§" not in README


def test_contents_links_every_section():
    headings = re.findall(r"^## (.+)$", README, re.M)
    links = re.findall(r"^\* \[(.+?)\]\(#(.+?)\)$", section("Contents"), re.M)
    assert [title for title, _ in links] == [h for h in headings if h != "Contents"]
    assert all(anchor == slug(title) for title, anchor in links)


def test_every_link_into_docs_names_a_page_and_heading_that_exist():
    broken = []
    for target, anchor in re.findall(r"\]\((docs/[\w./-]+\.md)(?:#([\w-]+))?\)", README):
        path = ROOT / target
        headings = {re.sub(r"[^\w\- ]", "", t.lower()).strip().replace(" ", "-")
                    for t in re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), re.M)} if path.exists() else set()
        if not path.exists() or (anchor and anchor not in headings):
            broken.append(f"{target}#{anchor}")
    assert broken == []


def test_the_documentation_table_links_every_page():
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)", section("Documentation")))
    assert linked == {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md", "development.md"}


def _run(code: str, where: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, where, "exec"), {})
    return out.getvalue()


def test_quick_start_runs_verbatim_and_twice_leaves_one_identity(tmp_path, monkeypatch):
    code = re.search(r"```python\n(.*?)```", section("Quick start"), re.S).group(1)
    assert "b.pinned + b.frame_relevant + b.outcomes" in code
    monkeypatch.chdir(tmp_path)
    printed = _run(code, "README.md")
    assert "[hard] never pay more than 2 USD/h — source=user_declared" in printed
    assert "dont never" not in printed and "wallets=0" not in printed
    root = None
    with cortex.open(tmp_path / "agent-store", actor="agent-ops-1") as c:
        root = c.root()
    _run(code, "README.md")
    with cortex.open(tmp_path / "agent-store", actor="agent-ops-1") as c:
        assert c.stats()["by_type"] == {"Identity": 1, "Preference": 1, "Event": 2, "Constraint": 1}
        assert c.root() != root  # the second run's Event is new; the keyed memories wrote nothing
        assert c.resolve("key:Identity/self").version == 1


def test_the_agent_loop_runs_after_the_quick_start(tmp_path, monkeypatch):
    quick = re.search(r"```python\n(.*?)```", section("Quick start"), re.S).group(1)
    loop = re.search(r"```python\n(.*?)```", section("The agent loop"), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    _run(quick, "README.md")
    _run(loop, "README.md")
    with cortex.open(tmp_path / "agent-store", actor="agent-ops-1") as c:
        assert c.resolve("key:Fact/acme/a100-spot").data.statement == "A100 spot is 1.55 USD/h"
        assert c.resolve("key:Identity/self").data.name == "agent-ops-1"
        assert c.weights() != cortex.Weights(0.25, 0.15, 0.30, 0.20)  # the attest moved them
