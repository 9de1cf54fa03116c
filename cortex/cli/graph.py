"""Edges between memories: link, unlink, edges."""

from __future__ import annotations

import click

import cortex

from ._common import _actor_option, _echo_json, _epilog, _json_option, _open, _store_argument, cli

EDGE_TYPES = [t.name.lower() for t in cortex.EdgeType]


def _edge_line(edge: cortex.Edge) -> str:
    state = " (unlinked)" if edge.tombstoned else ""
    return f"{edge.src} {edge.type.name.lower()} {edge.dst} weight={edge.weight:g}{state}"


def _edge_dict(edge: cortex.Edge) -> dict[str, object]:
    return {"src": edge.src, "type": edge.type.name.lower(), "dst": edge.dst, "weight": edge.weight,
            "created_at": edge.created_at.isoformat(), "tombstoned": edge.tombstoned}


@cli.command(short_help="Link two memories with a typed edge.", epilog=_epilog(
    "cortex link ./store cortex://Fact/01J...#2 supersedes cortex://Fact/01J...#1",
    "cortex link ./store key:Fact/acme/a100-spot contradicts cortex://Belief/01J...#1 --weight 0.8"))
@_store_argument
@click.argument("src", metavar="SRC")
@click.argument("edge_type", metavar="TYPE", type=click.Choice(EDGE_TYPES))
@click.argument("dst", metavar="DST")
@click.option("--weight", type=click.FloatRange(0.0, 1.0), default=1.0, show_default=True, help="The edge's weight.")
@_actor_option
def link(store: str, src: str, edge_type: str, dst: str, weight: float, actor: str | None) -> int:
    """Link memory SRC to DST with an edge of TYPE (each a URI, an id or
    key:TYPE/KEY). Idempotent. A memory another supersedes leaves context()."""
    with _open(store, actor, write=True) as c:
        edge = c.link(_ref(c, src), edge_type, _ref(c, dst), weight)
    click.echo(f"linked {_edge_line(edge)}")
    return 0


@cli.command(short_help="Remove a typed edge (kept in history).", epilog=_epilog(
    'cortex unlink ./store cortex://Fact/01J...#2 supersedes cortex://Fact/01J...#1 --reason "linked by mistake"'))
@_store_argument
@click.argument("src", metavar="SRC")
@click.argument("edge_type", metavar="TYPE", type=click.Choice(EDGE_TYPES))
@click.argument("dst", metavar="DST")
@click.option("--reason", required=True, help="Why (kept in the journal).")
@_actor_option
def unlink(store: str, src: str, edge_type: str, dst: str, reason: str, actor: str | None) -> int:
    """Tombstone the edge SRC TYPE DST; linking it again revives it."""
    with _open(store, actor, write=True) as c:
        c.unlink(_ref(c, src), edge_type, _ref(c, dst), reason)
    click.echo(f"unlinked {src} {edge_type} {dst}")
    return 0


@cli.command(short_help="A memory's edges.", epilog=_epilog(
    "cortex edges ./store cortex://Fact/01J...#1 --direction both", "cortex edges ./store key:Fact/acme/a100-spot --json"))
@_store_argument
@click.argument("ref", metavar="URI|ID|key:TYPE/KEY")
@click.option("--direction", type=click.Choice(["out", "in", "both"]), default="both", show_default=True,
              help="Edges from the memory, to it, or both.")
@click.option("--type", "types", type=click.Choice(EDGE_TYPES), multiple=True, help="An edge type, repeatable (default: all).")
@click.option("--include-unlinked", is_flag=True, help="Unlinked edges too.")
@_actor_option
@_json_option
def edges(store: str, ref: str, direction: str, types: tuple[str, ...], include_unlinked: bool, actor: str | None,
          as_json: bool) -> int:
    """List a memory's edges, one per line: SRC TYPE DST weight=W (ids)."""
    with _open(store, actor) as c:
        found = c.edges(_ref(c, ref), direction, list(types) or None, include_unlinked)
    if as_json:
        _echo_json([_edge_dict(e) for e in found])
    else:
        for edge in found:
            click.echo(_edge_line(edge))
        if not found:
            click.echo("(no edges)")
    return 0


def _ref(c: cortex.Cortex, ref: str) -> str:
    """A URI, an id, or key:TYPE/KEY, as the URI the edge calls take."""
    return ref if ref.startswith("cortex://") else c.resolve(ref).uri
