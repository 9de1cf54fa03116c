"""Commands of learning from experience: learn (docs/learning.md)."""

from __future__ import annotations

import click

from ._common import _actor_option, _echo_json, _epilog, _json_option, _open, _store_argument, cli


@cli.command(short_help="Compile the store's event traces into artifacts.", epilog=_epilog(
    "cortex learn ./store",
    "cortex learn ./store --json",
    "cortex learn ./store --full",
))
@_store_argument
@_actor_option
@_json_option
@click.option("--full", is_flag=True, help="Read every event again (after events were edited or tombstoned).")
@click.option("--artifacts", "show", is_flag=True, help="With --json: add every artifact as its HMX-A JSON form.")
def learn(store: str, actor: str | None, as_json: bool, full: bool, show: bool) -> int:
    """Compile the event traces of STORE (memories with a session, such as ingested
    HMX events) into HMX-A artifacts: task schemas, failure playbooks, decision
    policies, causal patterns and strategy templates. Incremental: only the events
    written since the last learn are read. Deterministic; no model is called.

    Prints what was created, updated (new numbers), superseded, deprecated and
    archived, by artifact id.
    """
    with _open(store, actor, write=True) as c:
        report = c.learn(full=full)
        forms = c.artifact_forms() if show else None
    if as_json:
        out = report.to_dict()
        if forms is not None:
            out["artifacts"] = forms
        _echo_json(out)
        return 0
    click.echo(f"read {report.events_read:,} new events ({report.events_total:,} in all, {report.sessions:,} sessions with steps)")
    for name in ("created", "updated", "superseded", "deprecated", "archived", "restored"):
        ids = getattr(report, name)
        click.echo(f"{name}: {len(ids)}" + ("".join(f"\n  {aid}" for aid in ids) if ids else ""))
    statuses = ", ".join(f"{count} {status}" for status, count in report.by_status.items()) or "none"
    click.echo(f"artifacts: {statuses}")
    return 0
