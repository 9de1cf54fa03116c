"""`cortex learn STORE [--json] [--full] [--artifacts]` (cortex/cli/learning.py)."""

from __future__ import annotations

import json

import jsonschema

from cortex.cli import main
from cortex.learn.artifacts import schema

from conftest import open_store
from learn_helpers import hmx_events
from test_learn import WORKED


def test_cortex_learn_reports_and_is_incremental(tmp_path, capsys):
    with open_store(tmp_path / "s") as c:
        c.ingest_hmx(hmx_events(WORKED))
    assert main(["learn", str(tmp_path / "s"), "--json", "--artifacts"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["events_read"] == 59 and out["sessions"] == 5
    assert len(out["created"]) == len(out["artifacts"]) == sum(out["by_status"].values())
    for form in out["artifacts"]:
        jsonschema.validate(form, schema())
    assert main(["learn", str(tmp_path / "s")]) == 0
    text = capsys.readouterr().out
    assert text.startswith("read 0 new events (59 in all, 5 sessions with steps)\ncreated: 0\n")
    assert main(["learn", str(tmp_path / "nothing-here")]) == 2
    assert "cortex: " in capsys.readouterr().err
