"""The full JSON Lines export and import: byte-identical round trips, refusals that
write nothing, and an interrupted import that verify() names and a rerun completes."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cortex
from cortex import Capability, Constraint, Event, Fact, Frame, Goal, Identity, Preference, Write
from cortex import ImportRefused

UTC = timezone.utc
NOW = datetime(2025, 3, 1, tzinfo=UTC)
TOOL = Frame("find", "tool", "t")


class Clock:
    def __init__(self) -> None:
        self.t = datetime(2025, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t


def build(path: Path, seed: int = 1, extra: int = 0) -> cortex.Cortex:
    c = cortex.open(path, actor="agent", clock=Clock(), entropy=random.Random(seed).randbytes)
    fact = c.write(Fact(statement="the sky is blue", subject="sky", predicate="color", as_of=datetime(2024, 5, 1, tzinfo=UTC)),
                   frames=[TOOL], tags=["t1"], importance=4)
    c.update(fact, Fact(statement="the sky is grey", subject="sky", predicate="color"))
    event = c.write(Event(kind="payment", outcome="success", counterparty="acme", cost=("usd", 2.5)), frames=[TOOL], tags=["t1", "t2"])
    c.write(Identity(name="agent-007", roles=["ops"]))
    c.write(Goal(statement="ship it", status="active", success_criteria=["green CI"]), frames=[TOOL])
    c.write(Constraint(statement="never pay twice", strength="hard", polarity="dont", source="user_declared"))
    pref = c.write(Preference(topic="tone", polarity="prefer", strength=0.8), frames=[TOOL], tags=["t2"])
    c.write(Capability(subject="acme", capability="serve", parameters={"b": "1", "a": "2"}, verified=True))
    c.tombstone(pref, "obsolete")
    c.write_many([Write(Fact(statement=f"filler {i}", subject="s", predicate="p"), frames=[TOOL], tags=["t1"],
                        expires_at=NOW + timedelta(days=i - 3)) for i in range(6 + extra)])
    c.attest([fact, event], "success")
    c.attest([event], "failure", reason="factual_error")
    c.update_head(fact, tags=["t1", "t3"], importance=7)
    return c


def every_version(c: cortex.Cortex) -> dict[str, dict]:
    out = {}
    for m in c.memories(include_tombstoned=True):
        for v in range(1, m.version + 1):
            uri = m.uri.rsplit("#", 1)[0] + f"#{v}"
            out[uri] = c.resolve(uri).to_dict()
    return out


def bundles(c: cortex.Cortex) -> list[str]:
    return [c.context(verb="find", objects={"tool": "t"}, now=NOW, form=form, budget_tokens=budget).to_json()
            for form in ("short", "medium", "full") for budget in (0, 20)] + [c.context(now=NOW).to_json()]


def test_export_import_export_is_byte_identical_and_the_store_answers_the_same(tmp_path):
    with build(tmp_path / "a") as a:
        counts = a.export_jsonl(tmp_path / "a.jsonl")
        want = (a.root(), every_version(a), bundles(a), a.weights(), a.stats()["by_type"])
    assert counts == {"memory": 13, "weights": 1, "record": 0, "journal": 18}
    with cortex.open(tmp_path / "b", actor="agent") as b:
        assert b.import_jsonl(tmp_path / "a.jsonl") == counts
        assert (b.root(), every_version(b), bundles(b), b.weights(), b.stats()["by_type"]) == want
        assert b.verify() == []
        b.export_jsonl(tmp_path / "b.jsonl")
        # New writes after an import get ids after every imported one.
        uri = b.write(Fact(statement="new", subject="s", predicate="p"))
        assert cortex.MemoryType.FACT and uri.split("/")[3] > max(m.id for m in b.memories() if m.uri != uri)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_the_format_is_what_the_docstring_says(tmp_path):
    with build(tmp_path / "a") as a:
        a.export_jsonl(tmp_path / "a.jsonl")
        root = a.root()
    lines = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert lines[0] == {"kind": "header", "format": "cortex-export", "version": 2, "actor": "agent", "schema": 1,
                        "tokenizer": "cl100k_base", "journal_format": 2, "root": root,
                        "counts": {"memory": 13, "weights": 1, "record": 0, "journal": 18}}
    kinds = [line["kind"] for line in lines]
    assert kinds == ["header"] + ["memory"] * 13 + ["weights"] + ["journal"] * 18 + ["end"]
    fact = lines[1]
    assert fact["type"] == "Fact" and fact["tags"] == ["t1", "t3"] and fact["importance"] == 7
    assert [v["data"]["statement"] for v in fact["versions"]] == ["the sky is blue", "the sky is grey"]
    assert fact["salience"]["citations"] == 1 and fact["frames"] == [["find", "tool", "t"]]
    assert lines[-1]["lines"] == len(lines) - 1
    assert [line["seq"] for line in lines if line["kind"] == "journal"] == list(range(1, 19))


def _refused_and_untouched(tmp_path: Path, text: bytes, field: str, words: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(text)
    with cortex.open(tmp_path / "fresh", actor="agent") as b:
        with pytest.raises(ImportRefused) as info:
            b.import_jsonl(bad)
        assert info.value.field == field and words in info.value.rule
        assert b.root() == "0" * 64 and list(b.memories(include_tombstoned=True)) == [] and b.verify() == []


def test_a_truncated_file_is_refused_with_nothing_written(tmp_path):
    with build(tmp_path / "a") as a:
        a.export_jsonl(tmp_path / "a.jsonl")
    lines = (tmp_path / "a.jsonl").read_bytes().splitlines(keepends=True)
    _refused_and_untouched(tmp_path, b"".join(lines[:-1]), "path", "truncated")
    _refused_and_untouched(tmp_path, b"".join(lines[:-5]), "path", "truncated")
    _refused_and_untouched(tmp_path, b"".join(lines)[:-30], f"line {len(lines)}", "not JSON")


def test_an_altered_line_is_refused_with_its_line_number_and_nothing_written(tmp_path):
    with build(tmp_path / "a") as a:
        a.export_jsonl(tmp_path / "a.jsonl")
    lines = (tmp_path / "a.jsonl").read_bytes().splitlines(keepends=True)
    altered = list(lines)
    altered[3] = altered[3].replace(b'"importance":0', b'"importance":9', 1)
    assert altered[3] != lines[3]
    _refused_and_untouched(tmp_path, b"".join(altered), f"line {len(lines)}", "altered")
    # Even with a recomputed end line, a journal line that no longer chains is named.
    import hashlib
    body = list(lines[:-1])
    body[20] = body[20].replace(b'"at":', b'"at":1', 1)
    digest = hashlib.sha256(b"".join(body)).hexdigest()
    end = json.dumps({"kind": "end", "lines": len(body), "sha256": digest}, separators=(",", ":")).encode() + b"\n"
    _refused_and_untouched(tmp_path, b"".join(body) + end, "line 21", "hash chain")


def test_refusals_name_the_rule(tmp_path):
    with build(tmp_path / "a") as a:
        a.export_jsonl(tmp_path / "a.jsonl")
    with cortex.open(tmp_path / "other", actor="someone-else") as o:
        with pytest.raises(ImportRefused, match="belongs to actor 'agent'"):
            o.import_jsonl(tmp_path / "a.jsonl")
    with build(tmp_path / "busy") as busy:
        with pytest.raises(ImportRefused, match="not empty"):
            busy.import_jsonl(tmp_path / "a.jsonl")
    with cortex.open(tmp_path / "c", actor="agent") as c:
        with pytest.raises(ImportRefused, match="cannot be read"):
            c.import_jsonl(tmp_path / "missing.jsonl")


_CRASHING_IMPORT = textwrap.dedent("""
    import os, sys
    import cortex
    from cortex.interop import jsonl
    jsonl.BATCH_KEYS = 25
    c = cortex.open(sys.argv[1], actor="agent")
    storage = c._engine.storage
    real_write = storage.write
    calls = [0]
    def write(puts):
        calls[0] += 1
        if calls[0] == 4:
            os._exit(3)   # the process dies between two batches
        real_write(puts)
    storage.write = write
    c.import_jsonl(sys.argv[2])
""")


def test_an_interrupted_import_is_named_by_verify_and_completed_by_running_it_again(tmp_path):
    with build(tmp_path / "a", extra=40) as a:
        a.export_jsonl(tmp_path / "a.jsonl")
        root, versions = a.root(), every_version(a)
    cortex.open(tmp_path / "b", actor="agent").close()
    proc = subprocess.run([sys.executable, "-c", _CRASHING_IMPORT, str(tmp_path / "b"), str(tmp_path / "a.jsonl")],
                          capture_output=True, timeout=120)
    assert proc.returncode == 3, proc.stderr.decode()
    with cortex.open(tmp_path / "b", actor="agent") as b:
        problems = b.verify()
        assert any(line.startswith("meta/import: an import did not finish") for line in problems)
        b.import_jsonl(tmp_path / "a.jsonl")
        assert b.verify() == [] and b.root() == root and every_version(b) == versions


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.tuples(st.text(min_size=1, max_size=30).filter(str.strip), st.floats(0, 1), st.integers(0, 10),
                               st.lists(st.sampled_from(["a", "b", "ü", "x y"]), max_size=3)), min_size=1, max_size=12),
       seed=st.integers(0, 2**32 - 1))
def test_round_trip_property(tmp_path_factory, data, seed):
    base = tmp_path_factory.mktemp("rt")
    with cortex.open(base / "a", actor="p", clock=Clock(), entropy=random.Random(seed).randbytes) as a:
        uris = a.write_many([Write(Preference(topic=text, polarity="avoid", strength=strength), importance=imp, tags=tags,
                                   frames=[Frame("build", "skill", text)]) for text, strength, imp, tags in data])
        a.update(uris[0], Preference(topic="changed", polarity="do", strength=0.5))
        a.export_jsonl(base / "a.jsonl")
        root, versions = a.root(), every_version(a)
    with cortex.open(base / "b", actor="p") as b:
        b.import_jsonl(base / "a.jsonl")
        assert b.root() == root and every_version(b) == versions and b.verify() == []
        b.export_jsonl(base / "b.jsonl")
    assert (base / "a.jsonl").read_bytes() == (base / "b.jsonl").read_bytes()
