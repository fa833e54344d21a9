"""``aiplat slurm render [SPEC] [-d DIR]``: the platform as a Slurm cluster (bare metal)."""

from __future__ import annotations

import time

import click

from aiplat.catalog import load_catalog
from aiplat.cli._output import OutDir
from aiplat.fsutil import write_tree
from aiplat.slurm import slurm_outputs
from aiplat.spec import EXAMPLE, example_text, load_platform, parse_platform
from aiplat.text import shown


@click.group()
def slurm() -> None:
    """Slurm for the bare-metal deployment: the same pools and tenants as a Slurm cluster."""


@slurm.command("render")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("-d", "--out-dir", "out_dir", default="out/slurm", show_default=True,
              type=OutDir(), help="directory for the Slurm files")
@click.option("--controller", default="slurmctld", show_default=True,
              help="host name of slurmctld (and slurmdbd), as `hostname -s` prints it")
@click.option("--controller-addr", help="its address, where the name does not resolve")
def render_cmd(spec: str | None, out_dir: str, controller: str,
               controller_addr: str | None) -> None:
    """Render slurm.conf, gres.conf, topology.conf, cgroup.conf and sacctmgr.sh for SPEC
    (default: the built-in example): one partition per pool, one account per tenant.

    \b
    Examples:
      aiplat slurm render -d slurm
      aiplat spec example > platform.yaml
      aiplat slurm render platform.yaml -d slurm --controller head-0
    """
    t0 = time.perf_counter()
    catalog = load_catalog()
    platform = (load_platform(spec, catalog) if spec
                else parse_platform(example_text(), EXAMPLE, catalog))
    out = slurm_outputs(platform, catalog, controller=controller,
                        controller_addr=controller_addr)
    write_tree(out_dir, out.files)
    recommended = out.plan.deployment.recommendation
    if recommended != "bare_metal":
        click.echo(f"note: the plan's deployment assessment recommends {recommended}, not "
                   "bare_metal (`aiplat plan` shows why)", err=True)
    click.echo(f"wrote {', '.join(out.files)} to {shown(out_dir)} in "
               f"{time.perf_counter() - t0:.2f} s; review sacctmgr.sh, then run it once "
               "slurmctld has registered with slurmdbd", err=True)
