"""``aiplat lab cluster build|up|status|down|kubeconfig``: a real control plane on this
host, thin commands over :mod:`aiplat.cluster`; ``image`` builds the node-agent image its
DaemonSet runs (:mod:`aiplat.cluster.agent_image`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from aiplat.cli._output import DATA_FORMATS, FORMATS, Existing, print_data
from aiplat.cli._progress import QUIET, progress_bar
from aiplat.errors import InputError

NAME = click.option("--name", default="aiplat", show_default=True,
                    help="cluster name (its folder, kubeconfig context prefix)")
OUTPUT = click.option("-o", "--output", type=click.Choice(FORMATS), default="table",
                      show_default=True, help="format on stdout")


def _err(msg: str) -> None:
    click.echo(msg, err=True)


@click.group("cluster")
def cluster() -> None:
    """A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver,
    kube-controller-manager, kube-scheduler (DRA on), Kueue, JobSet, and kwok nodes for the
    spec's pools, with the ResourceSlices the NVIDIA DRA driver publishes."""


@cluster.command()
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path),
              help="where the binaries go (default: $XDG_CACHE_HOME/aiplat/cluster/<versions>)")
@click.option("--force", is_flag=True, help="rebuild even what is there")
@OUTPUT
@QUIET
def build(cache: Path | None, force: bool, output: str) -> None:
    """Build the pinned components with `go build` from their Go modules (needs Go >= 1.26
    and the Go module proxy). Idempotent: a second run builds nothing.

    \b
    Examples (Go >= 1.26, the Go module proxy):
      aiplat lab cluster build
      aiplat lab cluster build -o json
    """
    from aiplat.cluster.assets import build as do_build

    with progress_bar("go build") as bar:
        def compiled(package: str) -> None:
            bar.advance()
            bar.step(package)

        report = do_build(cache, progress=bar.log, force=force,
                          packages=compiled if bar.shown else None)
    if output in DATA_FORMATS:
        print_data(output, report)
        return
    for module, version in report["versions"].items():  # type: ignore[attr-defined]
        click.echo(f"{module:<28} {version}")
    built = report["built"] or ["nothing (all present)"]
    click.echo(f"built: {', '.join(built)} in {report['seconds']} s -> {report['cache']}/bin")  # type: ignore[arg-type]


@cluster.command()
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@NAME
@click.option("--assets", type=click.Path(file_okay=False, path_type=Path),
              help="folder with binaries you already have (looked up before the cache)")
@click.option("--timeout", default=120.0, show_default=True, help="seconds per component")
def up(spec: str | None, name: str, assets: Path | None, timeout: float) -> None:
    """Start the cluster for SPEC's pools (default: the built-in example).

    \b
    Examples (root, the components of aiplat lab cluster build):
      aiplat lab cluster up
    """
    from aiplat.catalog import load_catalog
    from aiplat.catalog.storage import DEFAULT_PROVISIONERS, driver
    from aiplat.cluster.assets import locate
    from aiplat.cluster.nodes import lab_nodes
    from aiplat.cluster.run import kubeconfig_path
    from aiplat.cluster.run import up as do_up
    from aiplat.kube.facts import pool_facts
    from aiplat.kube.render_kueue import kueue_configuration
    from aiplat.plan.resolve import resolve
    from aiplat.spec import EXAMPLE, example_text, load_platform, parse_platform

    catalog = load_catalog()
    platform = (load_platform(spec, catalog) if spec
                else parse_platform(example_text(), EXAMPLE, catalog))
    pools = pool_facts(resolve(platform, catalog))
    if not lab_nodes(pools):
        raise InputError(f"{spec or 'the example'}: no pool has nodes (fix: give a pool count "
                         "or autoscaling.min above 0)")
    found = locate(assets)
    t0 = time.monotonic()
    # The local static provisioner's PVs, which a kwok cluster has no disks to publish.
    local = tuple(c.name for c in platform.storage.classes if c.tier == "local-nvme"
                  and not getattr(driver(c.provisioner or DEFAULT_PROVISIONERS[c.tier]),
                                  "dynamic", False))
    state = do_up(name, pools, kueue_configuration(platform, pools), found,
                  local_classes=local, progress=lambda m: _err(f"starting {m}"),
                  timeout=timeout)
    _err(f"lab cluster {name} up in {time.monotonic() - t0:.1f} s: {state.server}, "
         f"{len(state.nodes)} nodes")
    click.echo(f"export KUBECONFIG={kubeconfig_path(name)}")


@cluster.command()
@NAME
@click.option("--settle", default=0.0, show_default=True, metavar="SECONDS",
              help="first wait up to SECONDS until Kueue's workloads stop changing")
@OUTPUT
def status(name: str, settle: float, output: str) -> None:
    """Components, nodes, Kueue health and where each workload went (exit 1 when not up).

    \b
    Examples (a running lab cluster):
      aiplat lab cluster status
      aiplat lab cluster status --settle 30 -o json
    """
    from aiplat.cluster.run import status as do_status

    st = do_status(name, settle=settle)
    if st is None:
        _err(f"lab cluster {name} is not up (fix: 'aiplat lab cluster up')")
        sys.exit(1)
    if output in DATA_FORMATS:
        print_data(output, st)
    else:
        click.echo(f"server      {st['server']}")
        click.echo(f"kubeconfig  {st['kubeconfig']}")
        for c in st["components"]:
            click.echo(f"  {c['name']:<24} pid {c['pid']:<8} "
                       f"{'running' if c['alive'] else 'NOT RUNNING'}")
        if "error" in st:
            click.echo(f"API: {st['error']}")
        else:
            nodes = st["nodes"]
            ready = sum(n["ready"] for n in nodes)
            click.echo(f"nodes       {ready}/{len(nodes)} Ready")
            k = st["kueue"]
            click.echo(f"kueue       webhook {'answering' if k['webhook'] else 'NOT answering'}, "
                       f"{k['clusterQueues']} ClusterQueues, {k['admitted']}/{k['workloads']} "
                       "workloads admitted")
            for run, ws in _by_run(st["workloads"]):
                click.echo(f"  {run:<36} {_verdict(ws)}")
    if "error" in st or not all(c["alive"] for c in st["components"]):
        sys.exit(1)


def _by_run(workloads: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Kueue's Workloads by what the tree created: a Deployment's pods (a Workload each)
    are one line."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for w in workloads:
        runs.setdefault(f"{w['namespace']}/{w.get('run') or w['owner']}", []).append(w)
    return sorted(runs.items())


def _verdict(ws: list[dict[str, Any]]) -> str:
    admitted = [w for w in ws if w["admitted"]]
    nodes = sorted({p["node"] for w in admitted for p in w["pods"] if p["node"]})
    flavors = ",".join(sorted({f for w in admitted for f in w["flavors"]}))
    pending = [w for w in ws if not w["admitted"]]
    if len(ws) == 1:
        return (f"admitted on {flavors}, pods on {','.join(nodes) or '-'}" if admitted
                else f"pending: {pending[0]['reason'][:100]}")
    parts = []
    if admitted:
        parts.append(f"{len(admitted)}/{len(ws)} admitted on {flavors}, pods on "
                     f"{len(nodes)} nodes")
    if pending:
        parts.append(f"{len(pending)}/{len(ws)} pending: {pending[0]['reason'][:80]}")
    return "; ".join(parts)


@cluster.command()
@NAME
def down(name: str) -> None:
    """Stop what `up` started and remove its files (also after a crash).

    \b
    Examples (a running lab cluster):
      aiplat lab cluster down
    """
    from aiplat.cluster.run import down as do_down

    stopped = do_down(name)
    _err(f"stopped {', '.join(stopped) if stopped else 'nothing (was not running)'}")


@cluster.command()
@NAME
def kubeconfig(name: str) -> None:
    """Print the path of the cluster's kubeconfig (use: export KUBECONFIG=$(...)).

    \b
    Examples (a running lab cluster):
      aiplat lab cluster kubeconfig
    """
    from aiplat.cluster.run import kubeconfig_path, load_state

    if load_state(name) is None:
        raise InputError(f"lab cluster {name} is not up (fix: 'aiplat lab cluster up')")
    click.echo(str(kubeconfig_path(name)))


@cluster.command()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="also save the image as a docker-archive tar (podman save)")
@click.option("--tag", help="image name (default: the one the rendered DaemonSet uses)")
@click.option("--wheel", type=Existing("an aiplat wheel", dir_okay=False, path_type=Path),
              help="an aiplat wheel to install (default: pip wheel of the source checkout)")
@click.option("--source", type=Existing("an aiplat source checkout", file_okay=False,
                                              path_type=Path),
              help="aiplat source checkout to build the wheel from (default: this one)")
@click.option("--mirror", help="Debian mirror for debootstrap (default: deb.debian.org)")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path),
              help="cache folder (default: $XDG_CACHE_HOME/aiplat/agent-image)")
@click.option("--force", is_flag=True, help="rebuild the base, the rootfs and the image")
@OUTPUT
def image(out: Path | None, tag: str | None, wheel: Path | None, source: Path | None,  # noqa: PLR0917 (one parameter per option)
          mirror: str | None, cache: Path | None, force: bool, output: str) -> None:
    """Build the node-agent image the DaemonSet runs: Debian (debootstrap minbase, python3)
    plus the aiplat wheel, imported into Podman. Needs root, debootstrap and podman.
    Idempotent: cached by the wheel's content hash; a second run builds nothing.

    \b
    Examples (root, debootstrap, Podman):
      aiplat lab cluster image
      aiplat lab cluster image --out node-agent.tar
    """
    from aiplat.cluster.agent_image import DEFAULT_MIRROR, Recipe, build_image
    from aiplat.kube.render_cluster import AGENT_IMAGE

    report = build_image(source=source, wheel=wheel, tag=tag or AGENT_IMAGE, out=out,
                         cache=cache, recipe=Recipe(mirror=mirror or DEFAULT_MIRROR),
                         force=force, progress=_err)
    if output in DATA_FORMATS:
        print_data(output, report.as_data())
        return
    m = report.manifest
    click.echo(f"image    {report.tag} ({report.image_id[:12]}), key {report.key}")
    click.echo(f"size     {report.size_bytes / 2**20:.1f} MiB: {len(m['debian'])} Debian "  # type: ignore[arg-type]
               f"packages, {len(m['python'])} Python distributions")  # type: ignore[arg-type]
    if report.archive:
        click.echo(f"archive  {report.archive}")
    click.echo(f"built: {', '.join(report.built) or 'nothing (all cached)'} in "
               f"{report.seconds} s -> {report.cache}")
