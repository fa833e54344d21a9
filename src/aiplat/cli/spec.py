"""``aiplat spec validate|schema|example``."""

from __future__ import annotations

import json
import sys

import click

from aiplat.cli._output import DATA_FORMATS, FORMATS, print_data
from aiplat.errors import SpecError
from aiplat.spec import Platform, example_text, load_platform
from aiplat.text import shown


@click.group()
def spec() -> None:
    """Validate the platform spec, print its JSON Schema or the built-in example."""


@spec.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "fmt", type=click.Choice(FORMATS), default="table",
              show_default=True,
              help="json|yaml: {file, valid, errors: [{file, line, column, path, message, "
                   "fix}]} on stdout, also when invalid (exit 2), for CI")
def validate(file: str, fmt: str) -> None:
    """Check FILE (- reads stdin): syntax, types, ranges, references and catalog names (exit 2
    on error).

    \b
    Examples:
      aiplat spec example > platform.yaml
      aiplat spec validate platform.yaml
      aiplat spec example | aiplat spec validate - -o json
    """
    try:
        p = load_platform(file)
    except SpecError as e:
        if fmt not in DATA_FORMATS:
            raise
        print_data(fmt, {"file": file, "valid": False, "errors": [
            {"file": i.file, "line": i.line, "column": i.column, "path": i.path,
             "message": i.message, "fix": i.hint} for i in e.issues]})
        sys.exit(2)
    gpus = sum(pool.gpus for pool in p.pools)
    if fmt in DATA_FORMATS:
        print_data(fmt, {"file": file, "valid": True, "pools": len(p.pools), "gpus": gpus,
                         "tenants": len(p.tenants), "workloads": len(p.workloads),
                         "errors": []})
        return
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
    from aiplat.spec.amounts import schema_with_units

    doc = Platform.model_json_schema(by_alias=True)
    schema_with_units(doc)
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
