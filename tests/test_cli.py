"""The command line: `cortex demo`, `context`, `stats`, `verify`."""

from __future__ import annotations

import json

from cortex.cli import main


def test_demo_prints_a_bundle_and_the_store_it_wrote(tmp_path, capsys):
    store = tmp_path / "demo"
    assert main(["demo", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"store: {store}" in out
    for section in ("## Pinned", "## Frame-relevant", "## Outcomes", "## Reachable"):
        assert section in out
    assert "[hard] dont never pay more than 2 USD per GPU hour" in out
    assert "success intent_completed with acme-cloud cost=1.6USD" in out  # newest outcome

    assert main(["context", str(store), "--actor", "agent-ops-1", "--verb", "acquire", "--object", "service=gpu_inference", "--json"]) == 0
    bundle = json.loads(capsys.readouterr().out)
    assert len(bundle["outcomes"]) == 3 and len(bundle["pinned"]) == 3

    assert main(["stats", str(store), "--actor", "agent-ops-1"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["memories"] == 14 and stats["journal_seq"] == 14

    assert main(["verify", str(store), "--actor", "agent-ops-1"]) == 0
    assert capsys.readouterr().out.strip() == "0 problem(s)"


def test_errors_are_reported_not_raised(tmp_path, capsys):
    main(["demo", "--store", str(tmp_path / "s")])
    capsys.readouterr()
    assert main(["context", str(tmp_path / "s"), "--actor", "someone-else", "--verb", "acquire"]) == 2
    assert "ActorMismatch" in capsys.readouterr().err
    assert main(["context", str(tmp_path / "s"), "--actor", "agent-ops-1", "--verb", "fly"]) == 2
    assert "InvalidVerb" in capsys.readouterr().err
