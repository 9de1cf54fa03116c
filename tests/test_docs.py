"""The documentation site (docs/, built by mkdocs) agrees with the code: the lists of
verbs, object kinds, memory types, fields and every closed value set are compared
with the code (so they fail when either drifts), the tier order is
`Bundle.to_markdown()`'s, `stats()` is documented key for key, every CLI command is
in the command table, every public name is in the API reference with a docstring,
the walkthroughs run, and the nav lists every page."""

from __future__ import annotations

import dataclasses
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

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def section(name: str, title: str) -> str:
    """The text under the `## title` heading of a page, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", page(name), re.M | re.S)
    assert match, f"no section {title!r} in docs/{name}"
    return match.group(1)


def table(text: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table in `text`, header and rule left out."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows[2:]]


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


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
    rows = {row[0]: ticked(row[1]) for row in table(section("data-model.md", "Data: types, fields and closed sets").split("The closed sets")[1])}
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
    rows = table(section("data-model.md", "Data: types, fields and closed sets"))[:9]
    assert [ticked(row[0])[0] for row in rows] == [t.type_name for t in cortex.MemoryType]
    for row in rows:
        cls = getattr(cortex, ticked(row[0])[0])
        names = [name.strip().strip("*") for name in row[1].split(",")]
        required = [name.strip().strip("*") for name in row[1].split(",") if name.strip().startswith("**")]
        fields = dataclasses.fields(cls)
        assert names == [f.name for f in fields], cls
        assert required == [f.name for f in fields if f.metadata.get("cortex.required")], cls


def test_tier_order_is_to_markdown_s(tmp_path):
    documented = [re.sub(r"\*", "", row[0]) for row in table(section("context.md", "context()"))]
    with cortex.open(tmp_path / "s", actor="a") as c:
        c.write(cortex.Identity(name="a"))
        markdown = c.context(verb="acquire", objects={"service": "x"}).to_markdown()
    assert documented == re.findall(r"^## (.+)$", markdown, re.M)


def test_stats_keys_are_documented(tmp_path):
    with cortex.open(tmp_path / "s", actor="a") as c:
        c.write(cortex.Identity(name="a"))
        c.tombstone(c.write(cortex.Identity(name="b")), "gone")
        stats = c.stats()
    text = section("data-model.md", "stats()")
    assert set(stats) <= set(ticked(text))  # every key is documented
    bullets = re.findall(r"^\* (.+?):", text, re.M)
    assert {key for lead in bullets for key in ticked(lead)} <= set(stats)  # and nothing else is
    assert "memories that are not tombstoned, per type name" in text
    assert (stats["memories"], stats["tombstoned"], stats["by_type"]) == (1, 1, {"Identity": 1})


def test_every_cli_command_is_in_the_table():
    rows = table(page("cli.md"))
    documented = [ticked(row[0])[0].split()[1] for row in rows]
    assert documented == list(cli.commands)


def test_the_memory_json_example_is_a_memory():
    example = re.search(r"```json\n(.*?)```", page("cli.md"), re.S).group(1)
    write = memory_from_json(json.loads(example))
    assert write.data == cortex.Fact(statement="A100 spot is 1.40 USD/h", subject="acme", predicate="price")


@pytest.mark.parametrize("name", ["FACTUAL_ERROR", "WRONG_ASSUMPTION"])
def test_the_citation_losing_reasons_are_documented(name):
    assert f"`cortex.{name}`" in section("context.md", "Salience and feedback")


def test_the_scope_walkthrough_runs_and_hides_the_excluded_memory(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", page("scopes.md"), re.S)
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    for block in blocks:  # the parent, then the sub-agent
        exec(compile(block, "docs/scopes.md", "exec"), {})
    out = capsys.readouterr().out
    assert "the quote was 3.10 USD an hour" in out and "4242" not in out


def test_every_public_name_is_in_the_api_reference_with_a_docstring():
    """The reference is generated from docstrings (mkdocstrings): each name in
    `cortex.__all__` has its `::: cortex.NAME` line and a docstring to show."""
    reference = page("reference.md")
    missing = [name for name in cortex.__all__ if f"::: cortex.{name}\n" not in reference]
    undocumented = [name for name in cortex.__all__ if not (getattr(cortex, name).__doc__ or "").strip()
                    and not isinstance(getattr(cortex, name), str)]
    assert (missing, undocumented) == ([], [])
    constants = [name for name in cortex.__all__ if isinstance(getattr(cortex, name), str)]
    assert all(f"`cortex.{name}`" in page("context.md") for name in constants)


def _nav_pages() -> list[str]:
    return re.findall(r"^\s+- (?:[^:]+: |\"[^\"]+\": )?([\w./-]+\.md)$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)


def test_the_nav_lists_every_page_once():
    listed = _nav_pages()
    assert len(listed) == len(set(listed))
    assert sorted(listed) == sorted(p.name for p in DOCS.glob("*.md"))


def test_relative_links_between_pages_point_at_pages_and_headings_that_exist():
    def anchors(name: str) -> set[str]:
        titles = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", page(name), flags=re.S), re.M)
        return {re.sub(r"[^\w\- ]", "", t.lower()).strip().replace(" ", "-") for t in titles}

    broken = []
    for path in sorted(DOCS.glob("*.md")):
        text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
        for target, anchor in re.findall(r"\]\(([\w./-]*\.md|)(?:#([\w-]+))?\)", text):
            name = target or path.name
            if not (DOCS / name).exists() or (anchor and anchor not in anchors(name)):
                broken.append(f"{path.name} -> {target}#{anchor}")
    assert broken == []


def test_no_page_points_to_documents_a_user_does_not_have():
    for path in DOCS.glob("*.md"):
        text = path.read_text(encoding="utf-8")
        assert "DESIGN" not in text, path.name


def test_the_concepts_page_defines_the_words_newcomers_met_undefined():
    glossary = set(re.findall(r"^\*\*(.+?)\*\*$", page("concepts.md"), re.M))
    for word in ("HMX-1.0", "ContextPackV2, SecondBrain, ContextOS", "journal, root", "frame", "seed 000–004", "natural key"):
        assert word in glossary


def test_the_verb_table_files_common_actions_under_valid_verbs():
    rows = table(section("data-model.md", "Which verb an action goes under"))
    verbs = [ticked(row[1])[0] for row in rows]
    assert verbs == [v.name.lower() for v in cortex.Verb]  # each verb once, in code order
    actions = " ".join(row[0] for row in rows)
    assert all(word in actions for word in ("deploy", "test", "review", "search", "refactor"))
    kinds = {k for row in rows for k in ticked(row[2])}
    assert kinds <= {k.name.lower() for k in cortex.ObjKind}


def test_the_agent_loop_runs_and_its_second_bundle_holds_the_new_price_only(tmp_path, monkeypatch, capsys):
    code = re.search(r"```python\n(.*?)```", page("agent-loop.md"), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # twice: the keyed memories stay one each
        exec(compile(code, "docs/agent-loop.md", "exec"), {})
    out = capsys.readouterr().out
    assert "A100 spot is 1.55 USD/h" in out and "A100 spot is 1.40 USD/h" not in out.split("## Frame-relevant")[1].split("## Outcomes")[0]
    with cortex.open(tmp_path / "agent-store", actor="agent-ops-1") as c:
        assert c.stats()["by_type"] == {"Identity": 1, "Fact": 1, "Event": 2, "Constraint": 1}


def test_the_natural_key_example_is_what_the_store_does(tmp_path):
    code = re.search(r"```python\n(.*?)```", section("data-model.md", "Natural keys: one memory per name"), re.S).group(1)
    with cortex.open(tmp_path / "s", actor="agent-ops-1") as c:
        scope = {"c": c, **{name: getattr(cortex, name) for name in ("Identity", "Fact", "Frame")}}
        exec(compile(code, "docs/data-model.md", "exec"), scope)
        exec(compile(code, "docs/data-model.md", "exec"), scope)
        assert c.stats()["memories"] == 2
