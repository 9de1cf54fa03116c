"""The `cortex` command line (docs/cli.md): every command through the real entry points
(the `cortex` script and `python -m cortex`, in subprocesses) on temporary stores,
output parsed and exit codes checked; bad input exits 2 with one line
`cortex: <ErrorClass>: <message>` and no traceback.

A cortex process costs about half a second to start, so the subprocess tests start
their independent processes together (`run_all`) and the finer points of parsing are
checked in-process through `cortex.cli.main`, the function both entry points call.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

import cortex
from cortex import Constraint, Event, Fact, Frame, Goal, Identity, Preference, upkeep
from cortex.cli import main
from conftest import FakeClock

ACTOR = "agent-cli"
NOW = "2025-06-01T12:00:00Z"
GPU = Frame("acquire", "service", "gpu")


def entry_point() -> list[str]:
    """The installed `cortex` script (beside this interpreter, or on PATH)."""
    beside = Path(sys.executable).with_name("cortex")
    found = str(beside) if beside.exists() else shutil.which("cortex")
    assert found, "the cortex console script is not installed"
    return [found]


MODULE = [sys.executable, "-m", "cortex"]


def run_all(commands: list[list[str]], tmp: Path, stdin: list[str | None] | None = None,
            cwd: Path | None = None) -> list[subprocess.CompletedProcess[str]]:
    """Run the commands at once, each with `tmp` as its temporary folder and working
    directory (or `cwd`); return their results in order."""
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("_CORTEX_COMPLETE", None)
    inputs = stdin or [None] * len(commands)
    procs = [
        subprocess.Popen(cmd, cwd=cwd or tmp, env=env, text=True, stdin=subprocess.PIPE if text is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for cmd, text in zip(commands, inputs)
    ]
    results = []
    for cmd, proc, text in zip(commands, procs, inputs):
        out, err = proc.communicate(text, timeout=120)
        results.append(subprocess.CompletedProcess(cmd, proc.returncode, out, err))
    return results


def run(command: list[str], tmp: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_all([command], tmp, [stdin])[0]


def assert_one_line_error(result: subprocess.CompletedProcess[str], error: str) -> str:
    """Exit 2, nothing on stdout, one line `cortex: <error>: ...` on stderr."""
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"cortex: {error}: "), lines[0]
    assert "Traceback" not in result.stderr
    return lines[0]


def build_store(path: Path) -> dict[str, str]:
    """A small store for the CLI to read: URIs by name."""
    with cortex.open(path, actor=ACTOR, clock=FakeClock(), entropy=random.Random(3).randbytes) as c:
        return {
            "me": c.write(Identity(name=ACTOR)),
            "rule": c.write(Constraint(statement="never pay twice", strength="hard", polarity="dont", source="user_declared")),
            "goal": c.write(Goal(statement="ship", status="active")),
            "fact": c.write(Fact(statement="8 cards", subject="cluster", predicate="quota"), frames=[GPU], tags=["ops"], importance=5),
            "pref": c.write(Preference(topic="tone", polarity="prefer", strength=0.8), frames=[GPU], tags=["ops"]),
            "lease": c.write(Event(kind="payment", outcome="success", counterparty="acme"), frames=[GPU]),
        }


JSONL = "\n".join(json.dumps(m) for m in [
    {"type": "Fact", "data": {"statement": "A100 spot is 1.40 USD/h", "subject": "acme", "predicate": "price"},
     "frames": [{"verb": "acquire", "kind": "service", "ref": "gpu"}], "tags": ["pricing"], "importance": 5},
    {"type": "Goal", "data": {"statement": "stay under budget", "status": "active"}},
    {"type": "Event", "data": {"kind": "payment", "outcome": "success", "cost": ["USD", 1.4]},
     "frames": [{"verb": "acquire", "kind": "service", "ref": "gpu"}]},
]) + "\n"


# ---------------------------------------------------------------------------
# Every command through the entry points


def test_a_store_s_life_through_the_entry_points(tmp_path):
    cli = entry_point()
    store = str(tmp_path / "store")

    created, again, version = run_all([[*cli, "init", store, "--actor", ACTOR], [*MODULE, "--version"], [*cli, "--version"]], tmp_path)
    assert (created.returncode, created.stdout) == (0, f"created store at {store} (actor {ACTOR})\n")
    assert again.stdout == version.stdout == f"cortex {cortex.__version__} (pip install cortex-memory-engine)\n"

    written = run([*cli, "write", store], tmp_path, stdin=JSONL)  # JSON Lines on stdin; the actor read from the store
    assert written.returncode == 0 and written.stderr == ""  # no progress bar: stderr is not a terminal
    fact_uri, goal_uri, event_uri = written.stdout.split()
    assert fact_uri.startswith("cortex://Fact/") and goal_uri.startswith("cortex://Goal/") and event_uri.startswith("cortex://Event/")

    attested = run([*cli, "attest", store, fact_uri, "--outcome", "success"], tmp_path)  # writers: one at a time
    tombstoned = run([*MODULE, "tombstone", store, goal_uri, "--reason", "done"], tmp_path)
    assert (attested.returncode, attested.stdout) == (0, "attested 1 memory: success\n")
    assert (tombstoned.returncode, tombstoned.stdout) == (0, f"tombstoned {goal_uri}\n")

    rebuilt = run([*cli, "rebuild", store, "--json"], tmp_path)
    assert (rebuilt.returncode, json.loads(rebuilt.stdout)) == (0, {"damage": []})

    context_cmd = ["context", store, "--verb", "acquire", "--object", "service=gpu", "--now", NOW]
    as_json, markdown, resolved, found, stats, verified = run_all([
        [*cli, *context_cmd, "--format", "json"],
        [*MODULE, *context_cmd],
        [*cli, "resolve", store, goal_uri, "--json"],
        [*cli, "find", store, "--tag", "pricing", "--json"],
        [*MODULE, "stats", store, "--json"],
        [*cli, "verify", store, "--json"],
    ], tmp_path)
    now = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)
    with cortex.open(store, actor=ACTOR, mode="r") as c:
        bundle = c.context(verb="acquire", objects={"service": "gpu"}, now=now)
        assert (as_json.returncode, as_json.stdout) == (0, bundle.to_json() + "\n")
        assert markdown.stdout.split("\n_form=")[0] == bundle.to_markdown().split("\n_form=")[0]  # all but the latency
        assert json.loads(resolved.stdout) == c.resolve(goal_uri).to_dict()
        assert json.loads(resolved.stdout)["tombstoned"] is True
        assert [m["uri"] for m in json.loads(found.stdout)] == [fact_uri]
        assert json.loads(stats.stdout) == {**c.stats(), "mode": "r"}
        assert c.salience(fact_uri).citations == 1
    assert json.loads(stats.stdout)["memories"] == 2 and json.loads(stats.stdout)["tombstoned"] == 1
    assert (verified.returncode, json.loads(verified.stdout)) == (0, {"problems": []})
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("cortex-secondary-")]  # readers cleaned up


def test_read_commands_run_beside_a_writer_and_a_second_writer_is_refused(tmp_path):
    cli = entry_point()
    store = tmp_path / "store"
    uris = build_store(store)
    with cortex.open(store, actor=ACTOR) as writer:  # holds the store's lock
        writer.write(Fact(statement="written while the readers run", subject="s", predicate="p"), tags=["late"])
        found, stats, context, locked = run_all([
            [*cli, "find", str(store), "--tag", "late"],
            [*cli, "stats", str(store)],
            [*cli, "context", str(store), "--verb", "acquire", "--object", "service=gpu", "--tier", "pinned", "--json"],
            [*cli, "tombstone", str(store), uris["fact"], "--reason", "x"],
        ], tmp_path)
    assert found.returncode == 0 and found.stdout.startswith("- cortex://Fact/") and "p(s)=written while the readers run" in found.stdout
    assert stats.returncode == 0 and "memories  7 live, 0 tombstoned" in stats.stdout
    assert [m["uri"] for m in json.loads(context.stdout)["pinned"]] == [uris["me"], uris["rule"], uris["goal"]]  # floor ties: id order
    message = assert_one_line_error(locked, "StoreLocked")
    assert "read commands (context, resolve, find, list, stats, export) run beside it" in message and 'mode="r"' not in message


def test_bad_input_exits_2_with_one_line(tmp_path):
    cli = entry_point()
    store = tmp_path / "store"
    build_store(store)
    (tmp_path / "bad.jsonl").write_text(JSONL + '{"type": "Fact", "data": {"statement": \n')
    (tmp_path / "kind.json").write_text(json.dumps({"type": "Fact", "data": {"statement": "s", "subject": "a", "predicate": "p"},
                                                     "frames": [{"verb": "acquire", "kind": "servce", "ref": "x"}]}))
    cases = {
        "unknown kind": ([*cli, "context", str(store), "--verb", "acquire", "--object", "servce=gpu"], "InvalidObjKind"),
        "unknown kind in a memory": ([*cli, "write", str(store), "kind.json"], "InvalidObjKind"),
        "malformed JSON": ([*cli, "write", str(store), "bad.jsonl"], "ValidationError"),
        "missing store": ([*MODULE, "stats", str(tmp_path / "nowhere")], "NotFound"),
        "not a store": ([*cli, "find", str(tmp_path), "--type", "Fact"], "NotFound"),
        "bench --memories 0": ([*cli, "bench", "--memories", "0"], "BadParameter"),
        "bench --memories -5": ([*cli, "bench", "--memories", "-5"], "BadParameter"),
        "bench --queries 0": ([*MODULE, "bench", "--queries", "0"], "BadParameter"),
        "unknown option": ([*cli, "stats", str(store), "--colour"], "NoSuchOption"),
        "unknown command": ([*cli, "frobnicate"], "NoSuchCommand"),
    }
    results = run_all([cmd for cmd, _ in cases.values()], tmp_path)
    lines = {name: assert_one_line_error(result, error) for (name, (_, error)), result in zip(cases.items(), results)}
    assert lines["malformed JSON"].startswith("cortex: ValidationError: line 4: is not JSON: ")
    assert lines["unknown kind in a memory"].startswith("cortex: InvalidObjKind: line 1: frames[0].kind: unknown object kind 'servce'")
    assert "0 is not in the range x>=1" in lines["bench --memories 0"]
    with cortex.open(store, actor=ACTOR, mode="r") as c:
        assert c.stats()["memories"] == 6  # the bad files wrote nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "kind.json", "store"]  # bench wrote nothing here


def test_verify_exits_1_on_a_damaged_store(tmp_path):
    store = tmp_path / "store"
    uris = build_store(store)
    with cortex.open(store, actor=ACTOR) as c:
        raw_id = cortex.ids.parse_uri(uris["fact"]).id
        c._engine.storage.write({b"sal/" + raw_id: None})  # damage a derived record
    result = run([*entry_point(), "verify", str(store)], tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1] == "1 problem(s)"
    assert "sal/" in result.stdout
    repaired = run([*entry_point(), "rebuild", str(store)], tmp_path)
    assert (repaired.returncode, repaired.stdout) == (0, "rebuilt; 0 problem(s) left in canonical records\n")


def test_bench_writes_nothing_in_the_current_folder(tmp_path):
    work, temp = tmp_path / "work", tmp_path / "temp"
    work.mkdir()
    temp.mkdir()
    command = [*entry_point(), "bench", "--memories", "200", "--queries", "10", "--baseline-queries", "3", "--smoke"]
    result = run_all([command], temp, cwd=work)[0]
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["memories"], report["queries"], report["baselines"]["queries"]) == (200, 10, 3)
    assert report["samples"] == {"cold_runs": 1, "writes": 50, "sync_writes": 10}
    assert report["context_ms"]["p50"] > 0
    assert list(work.iterdir()) == []  # no store, no report
    assert [p.name for p in temp.iterdir() if p.name.startswith("cortex-")] == []  # no temporary store left


# ---------------------------------------------------------------------------
# In-process: the finer points of each command


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "store"
    return str(path), build_store(path)


def cli_run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_every_command_s_help_has_an_example_and_the_closed_sets(capsys):
    status, out, _ = cli_run(capsys, "--help")
    commands = ["init", "write", "update", "attest", "tombstone", "erase", "rebuild", "optimize", "link", "unlink", "edges",
                "trust", "untrust", "grant", "revoke", "context", "resolve", "find", "stats", "verify", "list", "frames",
                "actors", "learn", "bench", "bench-fleet", "demo", "export", "import", "import-hmx", "export-fingerprint",
                "import-fingerprint", "migrate", "mcp"]
    listed = [ln.split()[0] for ln in out.split("Commands:\n")[1].split("\n\n")[0].splitlines()]
    assert status == 0 and listed == commands  # every command's help alike, mcp's too
    assert "_CORTEX_COMPLETE=bash_source cortex" in out
    for command in commands:
        status, out, _ = cli_run(capsys, command, "--help")
        assert status == 0
        assert f"  Examples:\n    cortex {command}" in out, command
        flat = " ".join(out.split())
        assert "Verbs: " + ", ".join(v.name.lower() for v in cortex.Verb) in flat
        assert "Object kinds: " + ", ".join(k.name.lower() for k in cortex.ObjKind) in flat
        assert "Memory types: " + ", ".join(t.type_name for t in cortex.MemoryType) in flat


def test_no_arguments_prints_the_help(capsys):
    status, out, err = cli_run(capsys)
    assert status == 0 and out.startswith("Usage: cortex") and err == ""


def test_context_object_rules(small, capsys):
    store, _ = small
    for args, message in [
        (["--object", "service"], "--object: takes KIND=REF, got 'service'"),
        (["--verb", "acquire", "--object", "service=a", "--object", "service=b"], "--object: kind 'service' given twice"),
        (["--object", "service=gpu"], "--object: needs --verb"),
        (["--verb", "acquire", "--format", "contextpack"], "--format contextpack needs --intent"),
        (["--verb", "acquire", "--format", "ledger", "--json"], "--json and --format ledger disagree"),
        (["--now", "2025-06-01T12:00:00"], "--now: must be ISO 8601 with a timezone"),
        (["--budget", "-1"], "'--budget': -1 is not in the range x>=0"),
        (["--verb", "fly"], "InvalidVerb: verb: unknown verb 'fly'"),
        (["--verb", "acquire", "--object", "service="], "EmptyObjRef"),
    ]:
        status, out, err = cli_run(capsys, "context", store, *args)
        assert (status, out) == (2, ""), args
        assert err.count("\n") == 1 and err.startswith("cortex: ") and message in err, (args, err)


def test_context_interop_formats(small, capsys):
    store, _ = small
    common = ["context", store, "--verb", "acquire", "--object", "service=gpu", "--now", NOW]
    now = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)
    with cortex.open(store, actor=ACTOR, mode="r") as c:
        bundle = c.context(verb="acquire", objects={"service": "gpu"}, now=now)
    assert json.loads(cli_run(capsys, *common, "--format", "ledger")[1]) == json.loads(json.dumps(bundle.ledger()))
    pack = json.loads(cli_run(capsys, *common, "--format", "contextpack", "--intent", "lease a GPU")[1])
    assert pack == json.loads(json.dumps(bundle.to_context_pack(intent="lease a GPU")))
    hmx = json.loads(cli_run(capsys, *common, "--format", "hmx", "--query-context", "gpu lease")[1])
    assert hmx == json.loads(json.dumps(bundle.to_hmx_pack(query_context="gpu lease")))


def test_context_as_hmx_carries_the_edges_between_its_memories(tmp_path, capsys):
    store = str(tmp_path / "store")
    gpu = [cortex.Frame("acquire", "service", "gpu")]
    with cortex.open(store, actor=ACTOR) as c:
        a = c.write(cortex.Fact(statement="A100 costs $2/h", subject="gpu", predicate="price"), frames=gpu)
        b = c.write(cortex.Fact(statement="A100 costs $3/h", subject="gpu", predicate="price"), frames=gpu)
        c.link(a, "contradicts", b)
        bundle = c.context(verb="acquire", objects={"service": "gpu"}, now=datetime(2026, 1, 1, tzinfo=timezone.utc))
        edges = [e for m in bundle.memories() for e in c.edges(m.uri)]
    expected = bundle.to_hmx_pack(query_context="gpu", edges=edges)
    relations = [entry for entry in expected["entries"] if entry["section"] == "graph_relations"]
    assert [r["content"] for r in relations] == [f"{a} contradicts {b}"]
    out = cli_run(capsys, "context", store, "--verb", "acquire", "--object", "service=gpu", "--now", "2026-01-01T00:00:00+00:00",
                  "--format", "hmx", "--query-context", "gpu")[1]
    assert json.loads(out) == json.loads(json.dumps(expected))


def test_write_reads_one_object_a_list_or_json_lines(tmp_path, capsys):
    store = str(tmp_path / "store")
    assert cli_run(capsys, "init", store, "--actor", ACTOR)[0] == 0
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"type": "Goal", "data": {"statement": "a", "status": "paused"}}, indent=2))
    many = tmp_path / "many.json"
    many.write_text(json.dumps([{"type": "Goal", "data": {"statement": s, "status": "paused"}} for s in ("b", "c")], indent=1))
    lines = tmp_path / "lines.jsonl"
    lines.write_text("\n" + JSONL + "\n\n")
    for path, count in ((one, 1), (many, 2), (lines, 3)):
        status, out, err = cli_run(capsys, "write", store, str(path))
        assert (status, err, len(out.split())) == (0, "", count)
    with cortex.open(store, actor=ACTOR, mode="r") as c:
        assert [m.data.statement for m in c.find(type="Goal", order_by="created", limit=10)] == ["a", "b", "c", "stay under budget"]


@pytest.mark.parametrize("text, message", [
    ("", "ValidationError: input: is empty"),
    ("\n\n", "ValidationError: input: is empty"),
    ('{"type": "Fact",\n "data": ', "ValidationError: input: is neither JSON nor JSON Lines: it ends before the JSON does (Expecting value) at line 2, column 9"),
    ('[{"type": "Goal", "data": {"statement": "a", "status": "paused"}}, {"type": "Goal", "data": {"status": "paused"}}]',
     "ValidationError: [1]: data.statement: is required"),
    ('{"type": "Goal", "data": {"statement": "a", "status": "paused"}}\n{"type": "Gaol", "data": {}}\n',
     "ValidationError: line 2: type: must be one of Identity, Fact"),
    ('{"type": "Goal", "data": {"statement": "a", "status": "paused"}}\n\n[1, 2\n', "ValidationError: line 3: is not JSON: "),
    ('{"type": "Goal", "data": {"statement": "a", "status": "done"}}', "ValidationError: line 1: data.status: must be one of active"),
])
def test_write_names_the_line_and_field_of_a_problem_and_writes_nothing(small, tmp_path, capsys, text, message):
    store, _ = small
    path = tmp_path / "input.json"
    path.write_text(text)
    with cortex.open(store, actor=ACTOR, mode="r") as c:
        root = c.root()
    status, out, err = cli_run(capsys, "write", store, str(path))
    assert (status, out) == (2, "")
    assert err.startswith(f"cortex: {message}") and err.count("\n") == 1, err
    with cortex.open(store, actor=ACTOR, mode="r") as c:
        assert c.root() == root


def test_write_needs_an_existing_store(tmp_path, capsys):
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"type": "Goal", "data": {"statement": "a", "status": "paused"}}))
    status, _, err = cli_run(capsys, "write", str(tmp_path / "nowhere"), str(path), "--actor", ACTOR)
    assert status == 2 and err.startswith("cortex: NotFound: ")
    assert not (tmp_path / "nowhere").exists()


def test_another_actor_is_refused(small, capsys):
    store, _ = small
    status, _, err = cli_run(capsys, "stats", store, "--actor", "someone-else")
    assert status == 2 and err.startswith("cortex: ActorMismatch: ")
    status, out, _ = cli_run(capsys, "init", store, "--actor", ACTOR)
    assert (status, out) == (0, f"store exists at {store} (actor {ACTOR})\n")


def test_find_where_reads_times_and_defaults_to_20(small, capsys):
    store, uris = small
    with cortex.open(store, actor=ACTOR) as c:
        c.write(Fact(statement="dated", subject="s", predicate="p", as_of=datetime(2025, 3, 1, tzinfo=timezone.utc)))
        for i in range(25):
            c.write(Goal(statement=f"g{i}", status="paused"))
    status, out, _ = cli_run(capsys, "find", store, "--type", "Fact", "--where", '["gte", "as_of", "2025-02-01T00:00:00Z"]')
    assert status == 0 and out.splitlines() == [ln for ln in out.splitlines() if "p(s)=dated" in ln] and len(out.splitlines()) == 1
    status, out, _ = cli_run(capsys, "find", store, "--type", "Goal")
    assert status == 0 and len(out.splitlines()) == 20
    status, _, err = cli_run(capsys, "find", store, "--type", "Goal", "--where", '{"status": "actve"}')
    assert status == 2 and err.startswith("cortex: ValidationError: where.status: must be one of active")
    status, _, err = cli_run(capsys, "find", store, "--type", "Fact", "--where", '["gt", "as_of", "March"]')
    assert status == 2 and "--where: must be ISO 8601" in err


def test_resolve_by_uri_or_id_in_any_form(small, capsys):
    store, uris = small
    status, out, _ = cli_run(capsys, "resolve", store, uris["rule"])
    assert (status, out) == (0, f"{uris['rule']} (Constraint, version 1)\n[hard] never pay twice — source=user_declared\npolarity: dont\n")
    memory_id = uris["rule"].split("/")[-1].split("#")[0]
    status, out, _ = cli_run(capsys, "resolve", store, memory_id, "--form", "short")
    assert (status, out) == (0, f"{uris['rule']} (Constraint, version 1)\n[hard] never pay twice\n")


def test_attest_says_when_a_failure_takes_no_citation(small, capsys):
    store, uris = small
    status, out, err = cli_run(capsys, "attest", store, uris["fact"], "--outcome", "failure", "--reason", "wrong_assumptions")
    assert (status, out) == (0, "attested 1 memory: failure\n")
    assert err == "note: no citation taken away; only the reasons factual_error and wrong_assumption do\n"
    status, out, err = cli_run(capsys, "attest", store, uris["fact"], uris["pref"], "--outcome", "failure", "--reason", cortex.FACTUAL_ERROR)
    assert (status, out, err) == (0, "attested 2 memories: failure\n", "")


LLAMA = Frame("analyze", "model", "llama")
HOT_TASKS = [("acquire", {"service": "gpu"}), ("analyze", {"model": "llama"}), ("analyze", {"service": "gpu"})]


def build_hot_store(path: Path) -> None:
    """A store whose frames hold 9, 5, 4 and 4 entries (one entry per frame of a live
    memory): at a threshold of 5 entries, two prefixes of 14 entries in all pack."""
    with cortex.open(path, actor=ACTOR, clock=FakeClock(), entropy=random.Random(5).randbytes) as c:
        c.write(Identity(name=ACTOR))
        c.write(Constraint(statement="never pay twice", strength="hard", polarity="dont", source="user_declared"))
        for i in range(7):  # acquire/service/gpu: 7 facts ...
            c.write(Fact(statement=f"offer {i}", subject=f"provider-{i}", predicate="price"), frames=[GPU], importance=i % 4)
        c.write(Event(kind="payment", outcome="success", counterparty="acme"), frames=[GPU])  # ... an outcome ...
        gone = c.write(Fact(statement="withdrawn offer", subject="provider-x", predicate="price"), frames=[GPU])
        c.tombstone(gone, "withdrawn")  # ... (a tombstoned memory leaves its frames) ...
        c.write(Fact(statement="llama-70b fits on 2 A100s", subject="llama", predicate="fits"), frames=[GPU, LLAMA])  # ... 9
        for i in range(4):  # analyze/model/llama: 4 more, 5 in all
            c.write(Fact(statement=f"benchmark {i}", subject="llama", predicate="score"), frames=[LLAMA])
        for i in range(4):  # analyze/service/gpu (same object, another verb) and acquire/service/tpu: 4 each, not packed
            c.write(Fact(statement=f"utilisation {i}", subject="gpu", predicate="load"), frames=[Frame("analyze", "service", "gpu")])
            c.write(Fact(statement=f"tpu offer {i}", subject="gcp", predicate="price"), frames=[Frame("acquire", "service", "tpu")])


def hot_bundles(store: str) -> tuple[list[str], str]:
    """The bundles of HOT_TASKS as JSON, from a fresh handle (its first read of each
    frame), and the store's root."""
    now = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)
    with cortex.open(store, actor=ACTOR, mode="r") as c:
        return [c.context(verb=verb, objects=objects, now=now).to_json() for verb, objects in HOT_TASKS], c.root()


@pytest.fixture
def hot(tmp_path, monkeypatch):
    """A `build_hot_store` store, and optimize() packing prefixes of 5 entries or more
    (its default, `packs.MIN_ROWS`, was bound when cortex.upkeep was imported)."""
    path = tmp_path / "store"
    build_hot_store(path)
    monkeypatch.setattr(upkeep.optimize, "__defaults__", (5,))
    return str(path)


def test_optimize_packs_the_hot_frames_and_changes_no_answer(hot, capsys):
    before = hot_bundles(hot)
    assert [sum(len(json.loads(b)[tier]) for tier in ("frame_relevant", "outcomes")) for b in before[0]] == [9, 5, 4]
    assert cli_run(capsys, "optimize", hot, "--json") == (0, json.dumps({"packed": 2, "rows": 14}, indent=2, sort_keys=True) + "\n", "")
    assert json.loads(cli_run(capsys, "optimize", hot, "--json")[1]) == {"packed": 2, "rows": 14}  # repacks the same two
    with cortex.open(hot, actor=ACTOR, mode="r") as c:
        assert len(c._engine.packs) == 2  # a fresh handle reads the two packs
    assert cli_run(capsys, "verify", hot, "--json") == (0, json.dumps({"problems": []}, indent=2) + "\n", "")
    assert hot_bundles(hot) == before  # same bundles, byte for byte, and the same root (nothing journaled)


def test_optimize_prints_one_line(hot, tmp_path, capsys, monkeypatch):
    build_store(tmp_path / "small")
    monkeypatch.setattr(upkeep.optimize, "__defaults__", (9,))  # only acquire/service/gpu is that large
    assert cli_run(capsys, "optimize", hot) == (0, "packed 1 frame prefix (9 entries)\n", "")
    monkeypatch.setattr(upkeep.optimize, "__defaults__", (5,))
    assert cli_run(capsys, "optimize", hot) == (0, "packed 2 frame prefixes (14 entries)\n", "")
    monkeypatch.setattr(upkeep.optimize, "__defaults__", (10,))  # none that large, but a packed prefix is repacked
    assert cli_run(capsys, "optimize", hot) == (0, "packed 2 frame prefixes (14 entries)\n", "")
    monkeypatch.undo()  # the default threshold: a small store has nothing to pack
    assert cli_run(capsys, "optimize", str(tmp_path / "small")) == (0, "packed 0 frame prefixes (0 entries)\n", "")
    assert cli_run(capsys, "verify", hot) == (0, "0 problem(s)\n", "")


def test_debug_prints_the_traceback(tmp_path, capsys):
    status, _, err = cli_run(capsys, "--debug", "stats", str(tmp_path / "nowhere"))
    assert status == 2 and "Traceback" in err and err.splitlines()[-1].startswith("cortex: NotFound: ")
