"""``aiplat spec validate|schema|example``."""

from __future__ import annotations

import json

import click

from aiplat.spec import Platform, example_text, load_platform
from aiplat.text import shown


@click.group()
def spec() -> None:
    """Validate the platform spec, print its JSON Schema or the built-in example."""


@spec.command()
@click.argument("file", type=click.Path(dir_okay=False))
def validate(file: str) -> None:
    """Check FILE: syntax, types, ranges, references and catalog names (exit 2 on error).

    \b
    Examples:
      aiplat spec example > platform.yaml
      aiplat spec validate platform.yaml
    """
    p = load_platform(file)
    gpus = sum(pool.gpus for pool in p.pools)
    click.echo(
        f"{shown(file)}: valid ({len(p.pools)} pools, {gpus} GPUs, {len(p.tenants)} tenants, "
        f"{len(p.workloads)} workloads)"
    )


@spec.command()
def schema() -> None:
    """Print the spec's JSON Schema (for editors: yaml-language-server).

    \b
    Examples:
      aiplat spec schema > platform.schema.json
    """
    doc = Platform.model_json_schema(by_alias=True)
    doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    doc["title"] = "aiplat Platform (aiplat/v1alpha1)"
    click.echo(json.dumps(doc, indent=2, sort_keys=False))


@spec.command()
@click.option("--this-host", is_flag=True,
              help="instead, a one-pool spec describing this host (its CPUs, memory and "
                   "kernel series; no GPU), e.g. for `aiplat accept run`")
def example(this_host: bool) -> None:
    """Print the built-in example platform, a starting point for your own.

    \b
    Examples:
      aiplat spec example > platform.yaml
      aiplat spec example --this-host > node.yaml
    """
    if this_host:
        from aiplat.node.collect import collect_inventory
        from aiplat.node.hostspec import spec_for

        click.echo(spec_for(collect_inventory("/")), nl=False)
        return
    click.echo(example_text(), nl=False)
