"""The ``aiplat`` command group and its error handling."""

from __future__ import annotations

import sys

import click

from aiplat import __version__
from aiplat.cli.devices import accounting_group, cdi_group, runtime_group, sharing_group
from aiplat.cli.kube import kube
from aiplat.cli.model import model
from aiplat.cli.node import node
from aiplat.cli.ops import monitoring, runbook
from aiplat.cli.plan import plan
from aiplat.cli.spec import spec
from aiplat.errors import AiplatError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="aiplat")
def cli() -> None:
    """aiplat: size, build, check and hand over an AI platform from one spec."""


for command in (plan, spec, kube, cdi_group, runtime_group, sharing_group, accounting_group,
                monitoring, runbook, model, node):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, prog_name="aiplat", standalone_mode=False)
    except AiplatError as e:
        click.echo(f"error: {e}" if "\n" not in str(e) else f"error:\n{e}", err=True)
        return e.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except click.exceptions.Exit as e:
        return e.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
