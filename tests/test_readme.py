"""README.md stands alone and agrees with the code: its lists of verbs, object kinds,
memory types, fields and every closed value set are compared with the code (so they
fail when either drifts), its tier order is `Bundle.to_markdown()`'s, `stats()` is
documented key for key, every CLI command is listed, the Quick start runs verbatim,
and it points to no document a user does not have."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
from pathlib import Path

import pytest

import cortex
from cortex import model
from cortex.cli import cli
from cortex.forms import FORM_NAMES
from cortex.interop.memory_json import memory_from_json
from cortex.query import ORDERS

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """The text under the `## title` heading, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.M | re.S)
    assert match, f"no section {title!r}"
    return match.group(1)


def table(text: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table in `text`, header and rule left out."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows[2:]]


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_no_reference_to_documents_a_user_does_not_have():
    assert "DESIGN" not in README and "§" not in README


def test_contents_links_every_section():
    headings = re.findall(r"^## (.+)$", README, re.M)
    slug = lambda title: re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")  # noqa: E731
    links = re.findall(r"^\* \[(.+?)\]\(#(.+?)\)$", section("Contents"), re.M)
    assert [title for title, _ in links] == [h for h in headings if h != "Contents"]
    assert all(anchor == slug(title) for title, anchor in links)


CLOSED_SETS = {
    "verbs (`cortex.Verb`)": [v.name.lower() for v in cortex.Verb],
    "object kinds (`cortex.ObjKind`)": [k.name.lower() for k in cortex.ObjKind],
    "memory types (`cortex.MemoryType`)": [t.type_name for t in cortex.MemoryType],
    "`Preference.polarity`, `Constraint.polarity`": list(model.POLARITIES),
    "`Belief.stance`": list(model.STANCES),
    "`Event.kind`": list(model.EVENT_KINDS),
    "`Event.outcome`": list(model.OUTCOMES),
    "`Goal.status`": list(model.GOAL_STATUSES),
    "`Constraint.strength`": list(model.STRENGTHS),
    "`Constraint.source`": list(model.CONSTRAINT_SOURCES),
    "tiers (`cortex.Tier`)": [t.value for t in cortex.Tier],
    "forms": list(FORM_NAMES),
    "`find(order_by=)`": list(ORDERS),
    "`attest` outcomes": ["success", "failure"],
    "reasons that take a citation away": [cortex.FACTUAL_ERROR, cortex.WRONG_ASSUMPTION],
    "edge types (`cortex.EdgeType`)": [e.name.lower() for e in cortex.EdgeType],
}


def test_closed_sets_are_the_code_s():
    rows = {row[0]: ticked(row[1]) for row in table(section("Data: types, fields and closed sets").split("The closed sets")[1])}
    assert rows == CLOSED_SETS


def test_the_closed_sets_are_the_ones_the_data_classes_check():
    """Each data-class row of the table is the set that field's rule enforces."""
    rules = {(cls.__name__, f.name): rule for cls in model.DATA_CLASSES.values() for f in dataclasses.fields(cls)
             for rule in f.metadata.values() if isinstance(rule, model.OneOf)}
    documented = {}
    for label, values in CLOSED_SETS.items():
        for type_name, field in re.findall(r"`(\w+)\.(\w+)`", label):
            if type_name != "cortex":
                documented[(type_name, field)] = tuple(values)
    assert documented == {key: rule.choices for key, rule in rules.items()}


def test_types_and_fields_are_the_code_s():
    rows = table(section("Data: types, fields and closed sets"))[:9]
    assert [ticked(row[0])[0] for row in rows] == [t.type_name for t in cortex.MemoryType]
    for row in rows:
        cls = getattr(cortex, ticked(row[0])[0])
        names = [name.strip().strip("*") for name in row[1].split(",")]
        required = [name.strip().strip("*") for name in row[1].split(",") if name.strip().startswith("**")]
        fields = dataclasses.fields(cls)
        assert names == [f.name for f in fields], cls
        assert required == [f.name for f in fields if f.metadata.get("cortex.required")], cls


def test_tier_order_is_to_markdown_s(tmp_path):
    documented = [re.sub(r"\*", "", row[0]) for row in table(section("context()"))]
    with cortex.open(tmp_path / "s", actor="a") as c:
        c.write(cortex.Identity(name="a"))
        markdown = c.context(verb="acquire", objects={"service": "x"}).to_markdown()
    assert documented == re.findall(r"^## (.+)$", markdown, re.M)
    assert "b.pinned + b.frame_relevant + b.outcomes" in section("Quick start")


def test_stats_keys_are_documented(tmp_path):
    with cortex.open(tmp_path / "s", actor="a") as c:
        c.write(cortex.Identity(name="a"))
        c.tombstone(c.write(cortex.Identity(name="b")), "gone")
        stats = c.stats()
    text = section("stats()")
    assert set(stats) <= set(ticked(text))  # every key is documented
    bullets = re.findall(r"^\* (.+?):", text, re.M)
    assert {key for lead in bullets for key in ticked(lead)} <= set(stats)  # and nothing else is
    assert "memories that are not tombstoned, per type name" in text
    assert (stats["memories"], stats["tombstoned"], stats["by_type"]) == (1, 1, {"Identity": 1})


def test_every_cli_command_is_in_the_table():
    rows = table(section("Command line"))
    documented = [ticked(row[0])[0].split()[1] for row in rows]
    assert documented == list(cli.commands)


def test_the_memory_json_example_is_a_memory():
    example = re.search(r"```json\n(.*?)```", section("Command line"), re.S).group(1)
    write = memory_from_json(json.loads(example))
    assert write.data == cortex.Fact(statement="A100 spot is 1.40 USD/h", subject="acme", predicate="price")


def test_quick_start_runs_verbatim(tmp_path, monkeypatch):
    code = re.search(r"```python\n(.*?)```", section("Quick start"), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    printed = out.getvalue()
    assert "[hard] never pay more than 2 USD/h — source=user_declared" in printed
    assert "dont never" not in printed and "wallets=0" not in printed
    assert (tmp_path / "agent-store").is_dir()


@pytest.mark.parametrize("name", ["FACTUAL_ERROR", "WRONG_ASSUMPTION"])
def test_the_citation_losing_reasons_are_documented(name):
    assert f"`cortex.{name}`" in section("Salience and feedback")


def test_the_scope_walkthrough_runs_and_hides_the_excluded_memory(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", section("Handing a sub-agent a scope"), re.S)
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    for block in blocks:  # the parent, then the sub-agent
        exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "the quote was 3.10 USD an hour" in out and "4242" not in out
