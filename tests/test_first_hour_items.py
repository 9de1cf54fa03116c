"""What got in a newcomer's way in the first hour, one test each (the scripted hour
itself is tests/test_first_hour.py): the actor read by `cortex.open(path)`, wording
and rendering, error messages that name the line, the field and the fix, commands
that leave nothing behind, and the PostgreSQL commands."""

from __future__ import annotations

import io
import json
import sys

import pytest

import cortex
from cortex import Constraint, Fact, Frame, Pattern
from cortex.cli import main

GPU = Frame("acquire", "service", "gpu")


def cli(capsys, monkeypatch, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


# -- cortex.open(path) reads the actor ---------------------------------------------


def test_open_reads_the_actor_of_an_existing_store_and_refuses_a_new_one(tmp_path):
    with cortex.open(tmp_path / "s", actor="agent-ops-1") as c:
        c.write(Fact(statement="x", subject="s", predicate="p"))
    with cortex.open(tmp_path / "s") as c:
        assert c.actor == "agent-ops-1" and c.stats()["memories"] == 1
    with pytest.raises(cortex.ValidationError) as caught:
        cortex.open(tmp_path / "new")
    assert str(caught.value) == f"actor: is required to create a store: {tmp_path / 'new'} holds no store to read it from"
    assert not (tmp_path / "new").exists()
    with pytest.raises(cortex.NotFound):
        cortex.open(tmp_path / "new", mode="r")
    with pytest.raises(cortex.ValidationError, match="a database holds many actors"):
        cortex.open("postgresql://cortex@127.0.0.1:1/agents")


# -- rendering and wording -----------------------------------------------------------


def test_superseded_ids_print_as_the_ids(tmp_path):
    with cortex.open(tmp_path / "s", actor="a") as c:
        old = c.write(Fact(statement="pg 13", subject="db", predicate="v"), frames=[GPU])
        c.write(Fact(statement="pg 16", subject="db", predicate="v"), frames=[GPU], supersedes=[old])
        bundle = c.context(verb="acquire", objects={"service": "gpu"})
    old_id = old.split("/")[-1].split("#")[0]
    assert repr(bundle.superseded_ids) == repr([old_id])  # not "[...1 ids]"
    assert str(bundle.superseded_ids) == f"['{old_id}']"


def test_query_context_and_intent_outside_their_format_are_refused(tmp_path, capsys, monkeypatch):
    store = str(tmp_path / "s")
    assert cli(capsys, monkeypatch, "init", store, "--actor", "a")[0] == 0
    status, out, err = cli(capsys, monkeypatch, "context", store, "--verb", "acquire", "--object", "service=gpu",
                           "--query-context", "lease a GPU")
    assert (status, out) == (2, "")
    assert err.startswith("cortex: BadParameter: Invalid value for --query-context: is used by --format hmx only (the format is markdown)")
    status, _, err = cli(capsys, monkeypatch, "context", store, "--intent", "lease", "--format", "json")
    assert status == 2 and "--intent: is used by --format contextpack only (the format is json)" in err


def test_a_fingerprint_import_says_what_it_wrote(tmp_path, capsys, monkeypatch):
    with cortex.open(tmp_path / "a", actor="a") as c:
        c.write(Constraint(statement="never deploy on Fridays", strength="hard", polarity="dont", source="user_declared"))
        c.write(Pattern(statement="spot is scarce on Mondays", strength=0.6, coverage=4))
        envelope = json.dumps(c.export_fingerprint("full"))
    store = str(tmp_path / "b")
    cli(capsys, monkeypatch, "init", store, "--actor", "b")
    status, out, _ = cli(capsys, monkeypatch, "import-fingerprint", store, stdin=envelope)
    with cortex.open(store) as c:
        by_type = c.stats()["by_type"]
    written = ", ".join(f"{name} {count}" for name, count in by_type.items())
    assert (status, out) == (0, f"imported 2 artifacts: {sum(by_type.values())} memories written ({written}; an Event records the import)\n")
    assert by_type["Event"] == 1
    assert cli(capsys, monkeypatch, "import-fingerprint", store, stdin=envelope)[1] == "nothing written: this fingerprint was imported before\n"


# -- error messages ---------------------------------------------------------------------


def test_store_locked_on_the_command_line_names_the_read_commands(tmp_path, capsys, monkeypatch):
    store = str(tmp_path / "s")
    with cortex.open(store, actor="a"):
        status, out, err = cli(capsys, monkeypatch, "write", store, stdin='{"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}}')
    assert (status, out) == (2, "")
    assert err.startswith("cortex: StoreLocked: ") and 'mode="r"' not in err
    assert err.endswith("read commands (context, resolve, find, list, stats, export) run beside it; write commands wait until it closes\n")


def test_an_unknown_where_field_lists_the_fields(tmp_path, capsys, monkeypatch):
    with cortex.open(tmp_path / "s", actor="a") as c:
        c.write(Fact(statement="x", subject="s", predicate="p"))
        with pytest.raises(cortex.ValidationError) as caught:
            c.find(type="Fact", where={"statment": "x"}, limit=5)
    assert caught.value.rule == "unknown field 'statment'; the fields are statement, subject, predicate, object, source, as_of"


@pytest.mark.parametrize(("text", "where"), [
    ('{"type": "Fact", "data": {"statement": "x"\n', "it ends before the JSON does (Expecting ',' delimiter) at line 1, column 43"),
    ('{"type": "Fact", "data": {"statement": "x"', "it ends before the JSON does (Expecting ',' delimiter) at line 1, column 43"),
    ('[\n  {"type": "Fact", "data": {"statement": "x",}}\n]\n', "Expecting property name enclosed in double quotes at line 2, column 46"),
])
def test_a_json_error_names_the_line_it_is_on(tmp_path, capsys, monkeypatch, text, where):
    store = str(tmp_path / "s")
    cli(capsys, monkeypatch, "init", store, "--actor", "a")
    status, out, err = cli(capsys, monkeypatch, "write", store, stdin=text)
    assert (status, out, err) == (2, "", f"cortex: ValidationError: input: is neither JSON nor JSON Lines: {where}\n")


# -- commands that fail leave nothing --------------------------------------------------


def test_a_refused_import_leaves_no_store_and_the_retry_works(tmp_path, capsys, monkeypatch):
    with cortex.open(tmp_path / "s", actor="agent-ops-1") as c:
        c.write(Fact(statement="x", subject="s", predicate="p"))
        c.export_jsonl(str(tmp_path / "s.jsonl"))
    export = str(tmp_path / "s.jsonl")
    lines = (tmp_path / "s.jsonl").read_text().splitlines()
    (tmp_path / "bad.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # the end line cut off
    for args in (["--actor", "someone-else"], []):
        source = export if args else str(tmp_path / "bad.jsonl")
        status, _, err = cli(capsys, monkeypatch, "import", str(tmp_path / "s3"), source, *args)
        assert status == 2 and err.startswith("cortex: ImportRefused: "), err
        assert not (tmp_path / "s3").exists()
    (tmp_path / "empty").mkdir()
    assert cli(capsys, monkeypatch, "import", str(tmp_path / "empty"), str(tmp_path / "bad.jsonl"))[0] == 2
    assert list((tmp_path / "empty").iterdir()) == []  # an empty folder given stays, empty
    status, out, _ = cli(capsys, monkeypatch, "import", str(tmp_path / "s3"), export)
    assert status == 0 and out.startswith("imported 1 memories")


def test_list_frames_unlink_untrust_and_revoke(tmp_path, capsys, monkeypatch):
    store = str(tmp_path / "s")
    with cortex.open(store, actor="a") as c:
        a = c.write(Fact(statement="a", subject="s", predicate="p"), frames=[GPU], tags=["t"])
        b = c.write(Fact(statement="b", subject="s", predicate="p"), frames=[GPU, Frame("monitor", "service", "gpu")])
        c.link(b, "contradicts", a)
    out = cli(capsys, monkeypatch, "list", store, "--tag", "t")[1]
    assert out == f"- {a} — p(s)=a\n"
    assert cli(capsys, monkeypatch, "list", store, "--limit", "1")[1] == f"- {b} — p(s)=b\n"
    assert cli(capsys, monkeypatch, "frames", store)[1] == "      2  acquire service=gpu\n      1  monitor service=gpu\n"
    status, out, _ = cli(capsys, monkeypatch, "unlink", store, b, "contradicts", a, "--reason", "wrong")
    assert (status, out) == (0, f"unlinked {b} contradicts {a}\n")
    assert cli(capsys, monkeypatch, "edges", store, a)[1] == "(no edges)\n"
    status, _, err = cli(capsys, monkeypatch, "untrust", store, "nobody")
    assert status == 2 and err == "cortex: ValidationError: name: no trusted key has this name\n"
    assert cli(capsys, monkeypatch, "revoke", store, "ab" * 32) == (0, f"revoked scope {'ab' * 32}\n", "")


# -- PostgreSQL: only init creates an actor; actors lists them ----------------------------


def test_on_postgresql_only_init_creates_an_actor(pg_dsn, pg_actor, capsys, monkeypatch):
    memory = '{"type": "Fact", "data": {"statement": "x", "subject": "s", "predicate": "p"}}'
    status, out, err = cli(capsys, monkeypatch, "write", pg_dsn, "--actor", pg_actor, stdin=memory)
    assert (status, out) == (2, "")
    assert err.startswith("cortex: NotFound: no cortex store ")
    assert err.endswith(f"; `cortex init STORE --actor {pg_actor}` creates one\n")
    assert pg_actor not in cortex.list_actors(pg_dsn)
    assert cli(capsys, monkeypatch, "init", pg_dsn, "--actor", pg_actor)[0] == 0
    assert cli(capsys, monkeypatch, "write", pg_dsn, "--actor", pg_actor, stdin=memory)[0] == 0
    names = cortex.list_actors(pg_dsn)
    assert pg_actor in names and names == sorted(names)
    status, out, _ = cli(capsys, monkeypatch, "actors", pg_dsn)
    assert status == 0 and out.splitlines() == names
    status, _, err = cli(capsys, monkeypatch, "actors", "./folder")
    assert status == 2 and "is not a PostgreSQL connection string" in err
