"""``aiplat node …``: inventory, placement, checks, baseline, burn-in, preparation, agent.

Thin: each command parses options, calls one function in ``aiplat.node`` and prints. Data
goes to stdout (``-o table|json|yaml``); progress and errors to stderr. Exit 0 ok, 1 a failed
check or comparison, 2 bad input.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from aiplat.cli._output import Existing, camel_schema, print_data, spec_argument
from aiplat.cli._progress import QUIET, info, progress_bar
from aiplat.cli.main import Finite
from aiplat.node.collect import collect_inventory, parse_from_options
from aiplat.node.inventory import inventory_json_schema
from aiplat.node.placement import evaluate_placement, pool_placement
from aiplat.node.render import check_table, dump, inventory_table, placement_table
from aiplat.spec import load_platform
from aiplat.spec.models import Platform
from aiplat.text import shown

OUTPUT = click.option("-o", "--output", "fmt", type=click.Choice(["table", "json", "yaml"]),
                      default="table", show_default=True, help="format on stdout")
ROOT = click.option("--root", default="/", show_default=True,
                    type=Existing("a file system root (a mounted image or recorded tree)",
                                  file_okay=False),
                    help="file system root to read (a mounted image or recorded tree)")
FROM = click.option("--from", "recorded", multiple=True, metavar="KIND=FILE",
                    help="recorded output: topo (nvidia-smi topo -m), smi-xml (nvidia-smi -q -x),"
                         " nvlink (nvidia-smi nvlink -s), lstopo (lstopo --of xml)")
SPEC = spec_argument()
POOL = click.option("--pool", help="the spec pool this node belongs to")


def _platform(spec: str | None) -> Platform | None:
    return load_platform(spec) if spec else None


@click.group()
def node() -> None:
    """Inspect, check and prepare a Linux accelerator node."""


@node.command()
@ROOT
@FROM
@OUTPUT
@click.option("--schema", is_flag=True, help="print the inventory JSON Schema and exit")
def inventory(root: str, recorded: tuple[str, ...], fmt: str, schema: bool) -> None:
    """What this node is: PCI tree, NUMA, CPUs, network, drivers, devices, GPUs.

    A --root tree is read as someone else's recording: a link out of it, a FIFO, device or
    socket, or a file past its size bound is not read but listed as a warning (exit 0).

    \b
    Examples:
      aiplat samples get node-hgx-h100 -d hgx
      aiplat node inventory --root hgx
      aiplat node inventory --root hgx -o json > inventory.json
    """
    if schema:
        click.echo(dump(camel_schema(inventory_json_schema()), "json" if fmt == "table" else fmt),
                   nl=False)
        return
    inv = collect_inventory(root, parse_from_options(list(recorded)))
    if fmt == "table":
        inventory_table(inv, evaluate_placement(inv))
    else:
        print_data(fmt, inv.model_dump(mode="json"))


@node.command()
@ROOT
@FROM
@SPEC
@click.option("--pool", help="with SPEC and without --root: the model of this pool's node "
                             "type (what its rendered kubelet-config.yaml carries)")
@OUTPUT
@click.pass_context
def placement(  # noqa: PLR0917 (one parameter per option)
    ctx: click.Context, root: str, recorded: tuple[str, ...], spec: str | None,
    pool: str | None, fmt: str,
) -> None:
    """GPU-NIC-NUMA placement, kubelet and NCCL recommendations, node labels.

    \b
    Examples:
      aiplat samples get node-hgx-h100 -d hgx
      aiplat node placement --root hgx -o yaml
      aiplat spec example > platform.yaml
      aiplat node placement platform.yaml --pool h100
    """
    if pool is not None or spec is not None:
        explicit = ctx.get_parameter_source("root") is not click.core.ParameterSource.DEFAULT
        if pool is None or spec is None or explicit or recorded:
            raise click.UsageError("SPEC and --pool go together, without --root or --from "
                                   "(a recorded node is analysed as it is)")
        p = pool_placement(load_platform(spec), pool)
    else:
        p = evaluate_placement(collect_inventory(root, parse_from_options(list(recorded))))
    if fmt == "table":
        placement_table(p)
        for k, v in p.labels.items():
            click.echo(f"label {k}={v}")
        if pool is not None:
            for reason in p.recommendation.reasons:
                click.echo(f"why: {shown(reason)}")
    else:
        print_data(fmt, p.model_dump(mode="json"))
    if any(f.severity == "error" for f in p.findings):
        sys.exit(1)


@node.command()
@ROOT
@FROM
@SPEC
@POOL
@OUTPUT
@click.option("--kernel-log", type=click.Path(dir_okay=False),
              help="dmesg output to scan for XIDs (default: /dev/kmsg or var/log/kern.log)")
@click.option("--matrix", is_flag=True, help="check versions against versions.approved")
@click.option("--observed", multiple=True, metavar="KEY=VALUE",
              help="cluster-side versions for the matrix, e.g. kueue=0.19.2")
@click.option("--image-config", type=click.Path(dir_okay=False),
              help="OCI image config JSON: check the image's CUDA against the node driver")
@click.option("--baseline", "baseline_file", type=click.Path(dir_okay=False),
              help="last good baseline: on failure, print rollback steps against it")
@click.option("--only", multiple=True, help="run only these checks")
@click.option("--skip", multiple=True, help="skip these checks")
def check(  # noqa: PLR0917 (one parameter per option)
    root: str, recorded: tuple[str, ...], spec: str | None, pool: str | None, fmt: str,
    kernel_log: str | None, matrix: bool, observed: tuple[str, ...],
    image_config: str | None, baseline_file: str | None, only: tuple[str, ...],
    skip: tuple[str, ...],
) -> None:
    """Health checks (and the version matrix); exit 1 on any failure.

    \b
    Examples:
      aiplat samples get node-hgx-h100-degraded -d hgx
      aiplat node check --root hgx
      aiplat spec example > platform.yaml
      aiplat node check platform.yaml --root hgx --pool h100 --matrix -o json
    """
    from aiplat.node.matrix import parse_observed
    from aiplat.node.service import check_node

    outcome = check_node(root=root, recorded=parse_from_options(list(recorded)),
                         platform=_platform(spec), pool=pool, kernel_log=kernel_log,
                         matrix=matrix, observed=parse_observed(list(observed)),
                         image_config=image_config, only=list(only), skip=list(skip),
                         baseline=baseline_file)
    if fmt == "table":
        extra = []
        if outcome.image is not None:
            i = outcome.image
            extra.append(f"{i.severity}: {i.subject}: {i.message}"
                         + (f" (fix: {i.fix})" if i.fix else ""))
        extra += [f"rollback: {step}" for step in outcome.rollback]
        extra += [f"warning: {w}" for w in outcome.warnings]
        check_table(outcome.report, outcome.matrix, extra)
    else:
        print_data(fmt, outcome.as_data())
    sys.exit(outcome.exit_code)


@node.group()
def baseline() -> None:
    """Record a performance baseline, or compare against one."""


BASELINE_OPTS = [
    click.option("--runs", default=5, show_default=True, type=click.IntRange(1, 1000),
                 help="repetitions (median)"),
    click.option("--scale", default=1.0, show_default=True,
                 type=Finite(0, 64, min_open=True),
                 help="work per probe (0.25 for a quick look)"),
    click.option("--dir", "directory", type=click.Path(file_okay=False),
                 help="directory on the disk to measure (default: the temp directory)"),
    click.option("--metric", "metrics", multiple=True, help="only these metrics"),
]


F = TypeVar("F", bound=Callable[..., Any])


def _opts(fn: F) -> F:
    for opt in reversed(BASELINE_OPTS):
        fn = opt(fn)
    return fn


@baseline.command("record")
@_opts
@SPEC
@POOL
@click.option("-w", "--write", "out", required=True, type=click.Path(dir_okay=False),
              help="baseline JSON to write (atomically)")
@QUIET
def baseline_record(  # noqa: PLR0917
        runs: int, scale: float, directory: str | None, metrics: tuple[str, ...],
                    spec: str | None, pool: str | None, out: str) -> None:
    """Measure CPU, memory, disk, loopback network (and GPU with torch); write JSON.

    \b
    Examples:
      aiplat node baseline record --runs 1 --scale 0.05 -w baseline.json
      aiplat node baseline record --metric cpu.matmul --metric disk.read --scale 0.05 -w cpu.json
    """
    from aiplat.fsutil import atomic_write
    from aiplat.node.baseline import record

    entry = _matched_entry(spec, pool)
    with progress_bar("baseline") as bar:
        b = record(runs=runs, scale=scale, directory=directory, only=list(metrics),
                   inventory=collect_inventory("/"), matrix_entry=entry, progress=bar.at)
    atomic_write(out, b.dump_json())
    for name, m in b.metrics.items():
        click.echo(f"{name:18} {m.median:12,.1f} {m.unit:8} ±{m.mad:,.1f} (MAD)  {m.method}")
    for name, why in b.skipped.items():
        click.echo(f"{name:18} skipped: {why}")
    info(f"wrote {shown(str(out))}")


def _matched_entry(spec: str | None, pool: str | None) -> str | None:
    if not spec:
        return None
    from aiplat.node.service import check_node

    outcome = check_node(platform=_platform(spec), pool=pool, matrix=True, only=["gpu-count"])
    return outcome.matrix.matched if outcome.matrix else None


@baseline.command("compare")
@click.argument("baseline_file", type=click.Path(dir_okay=False))
@_opts
@SPEC
@POOL
@click.option("--tolerance", type=Finite(0, 10), help="allowed slowdown (default: the pool's "
              "checks.baselineTolerance, else 0.10)")
@OUTPUT
@QUIET
def baseline_compare(  # noqa: PLR0917
        baseline_file: str, runs: int, scale: float, directory: str | None,
                     metrics: tuple[str, ...], spec: str | None, pool: str | None,
                     tolerance: float | None, fmt: str) -> None:
    """Measure again and compare medians with BASELINE_FILE; exit 1 on a regression.

    \b
    Examples:
      aiplat node baseline record --runs 1 --scale 0.05 -w baseline.json
      aiplat node baseline compare baseline.json --runs 1 --scale 0.05
      aiplat node baseline compare baseline.json --runs 1 --scale 0.05 --tolerance 0.5 -o json
    """
    from aiplat.node.baseline import compare, load_baseline, record

    base = load_baseline(baseline_file)
    tol = tolerance
    if tol is None:
        platform = _platform(spec)
        p = platform.pool(pool) if platform and pool else None
        tol = p.node.checks.baseline_tolerance if p else 0.10
    if not 0 < tol < 1:
        raise click.BadParameter("must be between 0 and 1, e.g. 0.1", param_hint="--tolerance")
    only = list(metrics) or list(base.metrics)
    with progress_bar("baseline") as bar:
        current = record(runs=runs, scale=base.scale if scale == 1.0 else scale,
                         directory=directory, only=only, inventory=collect_inventory("/"),
                         progress=bar.at)
    result = compare(base, current, tol, baseline_file)
    if fmt == "table":
        for m in result.metrics:
            cur = f"{m.current:12,.1f}" if m.current is not None else f"{'missing':>12}"
            ratio = f"{m.ratio:6.2f}x" if m.ratio is not None else "   n/a"
            noisy = " (noisy baseline)" if m.noisy else ""
            click.echo(f"{m.status:7} {m.name:18} {m.baseline:12,.1f} -> {cur} {m.unit:8} "
                       f"{ratio} (fail below {1 - m.threshold:.2f}x){noisy}")
        for k, (a, b) in result.changed.items():
            click.echo(f"changed {k}: {a} -> {b}")
        for step in result.rollback:
            click.echo(f"rollback: {step}")
        click.echo(f"overall: {result.status}")
    else:
        print_data(fmt, result.model_dump(mode="json"))
    sys.exit(1 if result.status == "fail" else 0)


@node.command()
@click.option("--duration", default="10m", show_default=True, help="e.g. 90s, 15m, 2h")
@click.option("--temp-limit", default=85.0, show_default=True, type=Finite(20, 150),
              help="°C")
@click.option("--workers", type=click.IntRange(1, 1024),
              help="CPU stress threads (default: CPUs available)")
@OUTPUT
@QUIET
def burnin(duration: str, temp_limit: float, workers: int | None, fmt: str) -> None:
    """Sustained CPU/memory (and GPU with torch) stress; fail on errors, heat or throttling.

    \b
    Examples:
      aiplat node burnin --duration 2s --workers 2
    """
    from aiplat.node.burnin import parse_duration, run_burnin

    seconds = parse_duration(duration)
    with progress_bar("burn-in", seconds, "seconds") as bar:
        report = run_burnin(seconds, temp_limit_c=temp_limit, workers=workers,
                            on_tick=lambda t, _n: bar.update(t))
    if fmt == "table":
        click.echo(f"burn-in {report.duration_s:.0f} s, {report.workers} CPU workers, "
                   f"GPU stress {'on' if report.gpu else 'off (no torch with CUDA)'}; "
                   f"{report.iterations:,} iterations; max temperature "
                   f"{report.max_temp_c if report.max_temp_c is not None else 'n/a'}")
        if report.throughput_first and report.throughput_last:
            click.echo(f"throughput first third {report.throughput_first:,.0f}/s, last third "
                       f"{report.throughput_last:,.0f}/s")
        for p in report.problems:
            click.echo(f"fail: {p}")
        click.echo(f"overall: {report.status}")
    else:
        print_data(fmt, report.model_dump(mode="json"))
    sys.exit(1 if report.status == "fail" else 0)


@node.command()
@spec_argument(required=True)
@click.option("--pool", required=True, help="the pool to prepare a node for")
@click.option("--entry", help="approved matrix entry (default: the first)")
@click.option("--dry-run", is_flag=True, default=True,
              help="print the script (always: aiplat never runs it)")
@click.option("-w", "--write", "out", type=click.Path(dir_okay=False),
              help="also write the script to this file (atomically, mode 0755)")
def prepare(spec: str, pool: str, entry: str | None, dry_run: bool, out: str | None) -> None:
    """Print the idempotent preparation script for the pool's approved versions.

    \b
    Examples:
      aiplat spec example > platform.yaml
      aiplat node prepare platform.yaml --pool h100
      aiplat node prepare platform.yaml --pool h100 -w prepare-h100.sh
    """
    from aiplat.fsutil import atomic_write
    from aiplat.node.prepare import plan_steps, render_script

    platform = load_platform(spec)
    script = render_script(plan_steps(platform, pool, entry), platform, pool, entry)
    click.echo(script, nl=False)
    if out:
        atomic_write(out, script, mode=0o755)
        click.echo(f"wrote {shown(str(out))}; review it, then run it as root", err=True)


@node.command()
@ROOT
@FROM
@SPEC
@POOL
@click.option("--interval", default=300.0, show_default=True, type=Finite(1, 86400),
              help="seconds")
@click.option("--once", is_flag=True, help="one round, then exit with the check status")
@click.option("--dry-run", is_flag=True, help="print the Node patch instead of applying it")
@click.option("--node-name", envvar="NODE_NAME", help="Node to patch (default: $NODE_NAME)")
@click.option("--kubeconfig", type=click.Path(dir_okay=False),
              help="kubeconfig (default: the pod's service account in a cluster, else "
                   "$KUBECONFIG, then ~/.kube/config)")
@click.option("--context", help="kubeconfig context (default: its current-context)")
@click.option("--live-gpu", is_flag=True,
              help="read the GPUs through NVML and nvidia-smi in this container although "
                   "--root is not / (the DaemonSet: host /sys and /proc under /host, the GPUs "
                   "given by the NVIDIA runtime)")
def agent(*, root: str, recorded: tuple[str, ...], spec: str | None, pool: str | None,
          interval: float, once: bool, dry_run: bool, node_name: str | None,
          kubeconfig: str | None, context: str | None, live_gpu: bool) -> None:
    """Run the checks every --interval and patch this Node (labels, condition, taint).

    \b
    Examples:
      aiplat samples get node-hgx-h100 -d hgx
      aiplat spec example > platform.yaml
      aiplat node agent --root hgx --once --dry-run --node-name gpu-1
      aiplat node agent platform.yaml --root hgx --pool h100 --once --dry-run
    """
    import json

    from aiplat.node.agent import LightkubeNodeClient, run_agent
    from aiplat.node.service import check_node

    if not dry_run and not node_name:
        raise click.UsageError("--node-name (or $NODE_NAME) is required unless --dry-run")
    platform = _platform(spec)
    rec = parse_from_options(list(recorded))

    def one_round() -> tuple[object, dict[str, str]]:
        outcome = check_node(root=root, recorded=rec, platform=platform, pool=pool,
                             live_gpu=live_gpu or None)
        return outcome.report, evaluate_placement(outcome.inventory).labels

    def emit(patch, report) -> None:  # type: ignore[no-untyped-def]
        click.echo(json.dumps({"node": node_name, "status": report.status,
                               "patch": patch.metadata_spec, "statusPatch": patch.status}))

    client = None if dry_run else LightkubeNodeClient(_kube_config(kubeconfig, context))
    code = run_agent(one_round, client=client, node_name=node_name or "", interval_s=interval,  # type: ignore[arg-type]
                     iterations=1 if once else None, emit=emit,
                     on_error=lambda e: click.echo(f"error: patching the Node failed: {e}",
                                                   err=True))
    sys.exit(code)


def _kube_config(kubeconfig: str | None, context: str | None) -> object | None:
    """The context given by --kubeconfig/--context (kubectl's default file when only
    --context is given); None leaves lightkube's order (in-cluster first)."""
    if kubeconfig is None and context is None:
        return None
    from aiplat.kube.live import kubectl_kubeconfig, load_kubeconfig

    return load_kubeconfig(kubectl_kubeconfig(kubeconfig), context)
