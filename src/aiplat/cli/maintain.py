"""``aiplat maintain plan [SPEC] --pool P --change KIND=VERSION``: the rolling maintenance,
decided and shown before it runs (issue #42). Thin: load the spec, resolve the pool, call
``aiplat.maintain.plan``, print a table or JSON."""

from __future__ import annotations

import json

import click

from aiplat.cli._output import table
from aiplat.errors import InputError
from aiplat.text import shown


@click.group()
def maintain() -> None:
    """Rolling maintenance of a pool: canary, batches, each node's steps."""


@maintain.command("plan")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("--pool", required=True, help="the pool to maintain")
@click.option("--change", "change_text", required=True,
              help="KIND=VERSION: driver, toolkit, kernel, firmware or kubernetes")
@click.option("--nodes", help="the pool's node names in rack order, comma-separated "
                              "(default: <pool>-0, <pool>-1, ... as the lab names them)")
@click.option("--max-unavailable", type=click.IntRange(1, 100_000),
              help="nodes out at once (default: the pool's planned spare nodes, at least 1)")
@click.option("-o", "--output", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Output format.")
def plan_cmd(*, spec: str | None, pool: str, change_text: str, nodes: str | None,
             max_unavailable: int | None, fmt: str) -> None:
    """Show the batches and each node's steps for a change to a pool, without running it.

    \b
    Examples:
      aiplat maintain plan --pool h100 --change driver=580.95.05
      aiplat maintain plan --pool l40s --change kernel=6.8.0-60 --max-unavailable 2 -o json
    """
    from aiplat.catalog import load_catalog
    from aiplat.maintain.plan import Change, plan
    from aiplat.plan.resolve import resolve
    from aiplat.spec import EXAMPLE, example_text, load_platform, parse_platform

    catalog = load_catalog()
    platform = (load_platform(spec, catalog) if spec
                else parse_platform(example_text(), EXAMPLE, catalog))
    resolved = next((p for p in resolve(platform, catalog).pools if p.name == pool), None)
    if resolved is None:
        raise InputError(f"--pool {shown(pool)}: no such pool (fix: use one of "
                         f"{', '.join(p.name for p in platform.pools)})")
    names = [n.strip() for n in nodes.split(",") if n.strip()] if nodes else None
    decided = plan(platform, resolved, Change.parse(change_text), nodes=names,
                   max_unavailable=max_unavailable)
    if fmt == "json":
        click.echo(json.dumps(decided.to_dict(), indent=2))
        return
    click.echo(f"pool {decided.pool}: {decided.change.kind} {decided.change.version} through "
               f"the {'GPU Operator' if decided.owner == 'operator' else 'host'}, "
               f"{decided.max_unavailable} node(s) at a time after the canary")
    click.echo(table(["batch", "nodes", "block"],
                     [[f"{b.index}{' (canary)' if b.canary else ''}", ", ".join(b.nodes),
                       ", ".join(b.blocks)] for b in decided.batches]))
    click.echo("each node:")
    for s in decided.steps:
        click.echo(f"  {s.step:<9} {s.what}")
        if s.command:
            click.echo(f"            $ {s.command}")
    for n in decided.notes:
        click.echo(f"note: {n}")
