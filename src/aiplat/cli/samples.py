"""``aiplat samples [list]`` and ``aiplat samples get NAME [-d DIR]``: the files the tour
uses, from the package (no source checkout needed)."""

from __future__ import annotations

from pathlib import Path

import click

from aiplat.cli._output import emit, output_option


@click.group("samples", invoke_without_command=True)
@click.pass_context
def samples(ctx: click.Context) -> None:
    """Sample inputs for the tour: node trees, a containerd config, cluster snapshots.

    \b
    Examples:
      aiplat samples
      aiplat samples get node-hgx-h100-degraded -d fixtures/hgx-h100-degraded
      aiplat node check --root fixtures/hgx-h100-degraded
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_cmd, fmt="table")


@samples.command("list")
@output_option()
def list_cmd(fmt: str) -> None:
    """Every sample with what it holds and the command that reads it.

    \b
    Examples:
      aiplat samples list
      aiplat samples list -o json
    """
    from aiplat.samples import catalogue

    rows = [{"name": s.name, "what": s.what, "use": s.use,
             "shipped": s.write is not None} for s in catalogue()]
    emit(fmt, rows, ["name", "use", "what"], [[r["name"], r["use"], r["what"]] for r in rows])


@samples.command("get")
@click.argument("name")
@click.option("-d", "--out-dir", "dest", type=click.Path(path_type=Path),
              help="where to write it (default: ./NAME)")
def get_cmd(name: str, dest: Path | None) -> None:
    """Write sample NAME (a file or a folder) and print where; a DIR that already holds
    exactly this sample is left as it is (exit 0), anything else there is never overwritten.

    \b
    Examples:
      aiplat samples get node-hgx-h100-degraded
      aiplat samples get platform.yaml -d my-platform.yaml
    """
    from aiplat.samples import write
    from aiplat.text import shown

    path, written = write(name, dest)
    if not written:
        click.echo(f"{shown(str(path))} already holds {name}, unchanged", err=True)
    click.echo(str(path))
