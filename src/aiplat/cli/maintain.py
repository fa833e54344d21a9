"""``aiplat maintain plan|run|status|resume|rollback``: the rolling maintenance of a pool
(issue #42). ``plan`` decides and shows it; ``run`` executes that same plan on a cluster
through ``aiplat.maintain.run`` (state in the ConfigMap aiplat-system/aiplat-maintenance),
``resume`` goes on from the step where it stopped, ``rollback`` puts nodes back. Thin: load
the spec, resolve the pool, call one function, print. The ``--apply-with`` runner (the
admin's own command, one process per node of a batch, side by side) lives here, the only
layer that starts processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from typing import TYPE_CHECKING, Any

import click

from aiplat.cli._output import DATA_FORMATS, FORMATS, print_data, table
from aiplat.errors import InputError
from aiplat.text import shown

if TYPE_CHECKING:
    from aiplat.kube.apply import Api
    from aiplat.maintain.plan import MaintenancePlan
    from aiplat.maintain.run import Result
    from aiplat.maintain.state import RunState
    from aiplat.spec.models import Platform


@click.group()
def maintain() -> None:
    """Rolling maintenance of a pool: canary, batches, each node's steps."""


_POOL = click.option("--pool", required=True, help="the pool to maintain")
_CHANGE = click.option("--change", "change_text", required=True,
                       help="KIND=VERSION: driver, toolkit, kernel, firmware or kubernetes")
_MAX_UNAVAILABLE = click.option(
    "--max-unavailable", type=click.IntRange(1, 100_000),
    help="nodes out at once (default: the pool's planned spare nodes, at least 1)")
_KUBECONFIG = click.option("--kubeconfig", type=click.Path(dir_okay=False),
                           help="the cluster (default: $KUBECONFIG, else ~/.kube/config)")
_OUTPUT = click.option("-o", "--output", "fmt", type=click.Choice(FORMATS),
                       default="table", show_default=True, help="Output format.")
_APPLY_WITH = click.option(
    "--apply-with", help="host-owned changes: a command run as `CMD NODE` for each node "
    "(AIPLAT_ACTION apply|rollback, AIPLAT_VERSION, AIPLAT_COMMAND in its environment); "
    "exit 0 = applied. Without it the run waits for `resume --applied NODE`")
_GATE_WITH = click.option(
    "--gate-with", help="after the node agent's healthy verdict, a check run as `CMD NODE` "
    "(AIPLAT_ACTION=gate, AIPLAT_VERSION in its environment), e.g. a baseline compare on "
    "the node; exit 0 = healthy, else the node is rolled back")


def _queue(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    ns, sep, name = value.partition("/")
    label = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
    if not (sep and label.fullmatch(ns) and label.fullmatch(name)):
        raise click.BadParameter(f"{value!r} is not NAMESPACE/LOCALQUEUE (fix: e.g. "
                                 "--validate-queue ops/validation, a LocalQueue the pool's "
                                 "ClusterQueue serves)")
    return value


_VALIDATE = click.option(
    "--validate-queue", callback=_queue, metavar="NAMESPACE/LOCALQUEUE",
    help="then a validation Job through this Kueue LocalQueue on the node, asking for every "
         "GPU the node published before the change; it must be admitted, placed and exit 0")
_VALIDATE_IMAGE = click.option(
    "--validate-image", help="the validation Job's image (default: NVIDIA's CUDA vectorAdd "
    "sample, the GPU Operator's own verification workload)")
_DEADLINE = click.option("--deadline", type=click.FloatRange(1, 7 * 86400),
                         help="seconds a node's drain (and its apply) may take  [default: 3600]")
_IGNORE_WINDOWS = click.option(
    "--ignore-windows", is_flag=True,
    help="start batches outside the spec's operations.maintenanceWindows (an emergency); "
         "without it a batch starts only inside one (cron in UTC)")
_GATE = click.option("--gate-timeout", type=click.FloatRange(1, 86400),
                     help="seconds to wait for a node's health verdict  [default: 600]")


@maintain.command("plan")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@_POOL
@_CHANGE
@click.option("--nodes", help="the pool's node names in rack order, comma-separated "
                              "(default: <pool>-0, <pool>-1, ... as the lab names them)")
@_MAX_UNAVAILABLE
@_OUTPUT
def plan_cmd(*, spec: str | None, pool: str, change_text: str, nodes: str | None,
             max_unavailable: int | None, fmt: str) -> None:
    """Show the batches and each node's steps for a change to a pool, without running it.

    \b
    Examples:
      aiplat maintain plan --pool h100 --change driver=580.95.05
      aiplat maintain plan --pool l40s --change kernel=6.8.0-60 --max-unavailable 2 -o json
    """
    names = [n.strip() for n in nodes.split(",") if n.strip()] if nodes else None
    _platform, decided = _decide(spec, pool, change_text, names, max_unavailable)
    if fmt in DATA_FORMATS:
        print_data(fmt, decided.to_dict())
        return
    _show_plan(decided)


def _decide(spec: str | None, pool: str, change_text: str, names: list[str] | None,
            max_unavailable: int | None) -> tuple[Platform, MaintenancePlan]:
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
    change = Change.parse(change_text)
    return platform, plan(platform, resolved, change, nodes=names,
                          max_unavailable=max_unavailable)


def _show_plan(decided: MaintenancePlan) -> None:
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


# --- running it ---------------------------------------------------------------------------

_DIGITS = re.compile(r"(\d+)")
# Where a node says which version it runs now: aiplat's own record after a run first, then
# what GPU feature discovery (driver) or the kubelet (kernel, kubelet) reports.
_FOUND = {"driver": ("label", "nvidia.com/cuda.driver-version.full"),
          "kernel": ("info", "kernelVersion"), "kubernetes": ("info", "kubeletVersion")}


def _natural(name: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in _DIGITS.split(name)]


def _pool_nodes(api: Api, pool: str) -> list[dict[str, Any]]:
    nodes = [n for n in api.objects("v1", "Node")
             if (n["metadata"].get("labels") or {}).get("aiplat.io/pool") == pool]
    if not nodes:
        raise InputError(f"--pool {shown(pool)}: no node of the cluster has the label "
                         f"aiplat.io/pool={shown(pool)} (fix: label the pool's nodes with "
                         "cluster/nodes/label-and-taint.sh from `aiplat plan`, or name them "
                         "with --nodes)")
    return sorted(nodes, key=lambda n: _natural(n["metadata"]["name"]))


def _previous(node: dict[str, Any], kind: str) -> str:
    from aiplat.maintain.run import version_annotation

    meta = node.get("metadata") or {}
    recorded = (meta.get("annotations") or {}).get(version_annotation(kind))
    if recorded:
        return str(recorded)
    where, key = _FOUND.get(kind, ("", ""))
    if where == "label":
        return str((meta.get("labels") or {}).get(key, ""))
    if where == "info":
        return str(((node.get("status") or {}).get("nodeInfo") or {}).get(key, ""))
    return ""


def run_commands(commands: dict[str, tuple[str, dict[str, str]]], timeout: float
                 ) -> dict[str, Result]:
    """Each node's ``--apply-with`` command in bash, side by side; waits for all (a command
    past ``timeout`` is killed: exit 124). Output is kept for the failure reason."""
    from aiplat.maintain.run import Result

    start = time.monotonic()
    procs = {n: subprocess.Popen(["bash", "-c", cmd], env={**os.environ, **env},
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, text=True, errors="replace")
             for n, (cmd, env) in commands.items()}
    out: dict[str, Result] = {}
    while len(out) < len(procs):
        for n, p in procs.items():
            if n in out or (p.poll() is None and time.monotonic() - start < timeout):
                continue
            code = p.returncode
            if code is None:
                p.kill()
                code = 124
            text = p.communicate()[0] or ""
            out[n] = Result(code, time.monotonic() - start, text[-2000:])
        time.sleep(0.05)
    return out


def _edge(api: Api) -> Any:
    """The executor's world: this cluster, stderr, and the runner for the admin's
    --apply-with and --gate-with commands (run only where the options name one)."""
    from aiplat.maintain.run import Edge

    return Edge(api, emit=lambda line: click.echo(line, err=True), runner=run_commands)


def _api(kubeconfig: str | None) -> Api:
    from aiplat.kube.apply import Api

    return Api.from_kubeconfig(kubeconfig)


def _finish(state: RunState, fmt: str) -> None:
    """The summary on stdout; exit 1 when the rollout stopped at a failed node."""
    from aiplat.maintain.state import blocking, summary

    data = summary(state)
    if fmt in DATA_FORMATS:
        print_data(fmt, data)
    else:
        _show_summary(data)
    if state.status == "waiting" and state.wait:
        click.echo(f"waiting: {state.wait}", err=True)
    elif state.status == "waiting":
        waiting = [n.name for n in state.nodes if n.phase == "drained"]
        click.echo(f"waiting: run each node's command, then `aiplat maintain resume "
                   f"--applied NODE` ({', '.join(waiting)})", err=True)
    if state.status == "failed":
        bad = blocking(state)
        for n in bad:
            click.echo(f"error: {n.name}: {n.reason}", err=True)
        names = " ".join(f"--skip {n.name}" for n in bad)
        click.echo(f"rollout stopped (fix: look at the node, `kubectl describe node "
                   f"{bad[0].name if bad else 'NODE'}`; then `aiplat maintain resume {names}` "
                   "goes on without it, or `aiplat maintain rollback` puts the changed nodes "
                   "back)", err=True)
        sys.exit(1)


def _show_summary(data: dict[str, Any]) -> None:
    wall = f", {data['wall_s']:.1f} s" if data.get("wall_s") else ""
    click.echo(f"run {data['run']}: pool {data['pool']}, {data['change']} through the "
               f"{data['owner']}: {data['status']}{wall}")
    click.echo(table(["node", "batch", "phase", "drain s", "apply s", "gate s", "reason"],
                     [[n["name"], str(n["batch"]), n["phase"],
                       *(f"{n['seconds'][k]:.1f}" if k in n["seconds"] else "-"
                         for k in ("drain", "apply", "gate")),
                       shown(n["reason"])[:120]] for n in data["nodes"]]))


def _options(state: RunState, *, apply_with: str | None, deadline: float | None,
             gate_timeout: float | None = None, ignore_windows: bool = False,
             gate_with: str | None = None, validate_queue: str | None = None,
             validate_image: str | None = None) -> RunState:
    update: dict[str, Any] = {"windows": []} if ignore_windows else {}
    if validate_queue is not None:
        update["validate_queue"] = validate_queue
    if validate_image is not None:
        update["validate_image"] = validate_image
    if apply_with is not None:
        update["apply_with"] = apply_with
    if gate_with is not None:
        update["gate_with"] = gate_with
    if deadline is not None:
        update["deadline_s"] = deadline
    if gate_timeout is not None:
        update["gate_timeout_s"] = gate_timeout
    return state.model_copy(update={"options": state.options.model_copy(update=update)})


@maintain.command("run")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@_POOL
@_CHANGE
@click.option("--nodes", help="the pool's node names in rack order, comma-separated "
                              "(default: the cluster's nodes labelled aiplat.io/pool=POOL)")
@_MAX_UNAVAILABLE
@_KUBECONFIG
@click.option("--dry-run", is_flag=True, help="show the plan and the calls, change nothing")
@_APPLY_WITH
@_GATE_WITH
@_VALIDATE
@_VALIDATE_IMAGE
@_DEADLINE
@_GATE
@_IGNORE_WINDOWS
@_OUTPUT
def run_cmd(*, spec: str | None, pool: str, change_text: str, nodes: str | None,
            max_unavailable: int | None, kubeconfig: str | None, dry_run: bool,
            apply_with: str | None, gate_with: str | None, validate_queue: str | None,
            validate_image: str | None, deadline: float | None,
            gate_timeout: float | None, ignore_windows: bool, fmt: str) -> None:
    """Roll a change across a pool: canary, then batches; each node cordoned, drained
    through the Eviction API, changed through its owner, gated, uncordoned.

    \b
    Examples:
      aiplat maintain run --pool h100 --change driver=580.95.05 --dry-run

    \b
    On a cluster (the pool's nodes labelled aiplat.io/pool):
      aiplat maintain run platform.yaml --pool h100 --change driver=580.95.05 --apply-with ./prep.sh

    Without a kubeconfig, --dry-run shows the spec's node names and lists no pods.
    """
    from aiplat.maintain.run import Session, execute, load
    from aiplat.maintain.state import Options, new_run

    if dry_run:
        try:
            api = _api(kubeconfig)
        except InputError as e:  # no kubeconfig at all: the plan alone, said so
            click.echo(f"no cluster ({str(e).split(' (fix:')[0]}): the spec's node names, "
                       "no pods listed", err=True)
            names = [n.strip() for n in nodes.split(",") if n.strip()] if nodes else None
            _platform, decided = _decide(spec, pool, change_text, names, max_unavailable)
            _show_plan(decided)
            return
    else:
        api = _api(kubeconfig)
    with api:
        live = {n["metadata"]["name"]: n for n in _pool_nodes(api, pool)}
        names = ([n.strip() for n in nodes.split(",") if n.strip()] if nodes else list(live))
        platform, decided = _decide(spec, pool, change_text, names, max_unavailable)
        entries = {getattr(e, _field(decided.change.kind), None): e.name
                   for e in platform.versions.approved}
        windows = [] if ignore_windows else _windows(platform)
        options = Options(spec=spec or "SPEC", apply_with=apply_with or "",
                          gate_with=gate_with or "",
                          validate_queue=validate_queue or "",
                          validate_image=validate_image or "",
                          deadline_s=deadline or 3600.0, gate_timeout_s=gate_timeout or 600.0,
                          windows=windows)
        state = new_run(decided.to_dict(), run_id=f"mnt-{uuid.uuid4().hex[:8]}",
                        now=time.time(), options=options,
                        previous={n: _previous(live[n], decided.change.kind)
                                  for n in names if n in live},
                        rollback_entry=entries.get)
        if dry_run:
            _show_plan(decided)
            _show_calls(api, state)
            return
        old, version = load(api)
        if old is not None and old.status in ("running", "waiting", "failed"):
            from aiplat.maintain.run import alive
            from aiplat.maintain.state import take_lease

            take_lease(old, "", time.time(), alive)  # a live holder: refused with its name
            raise InputError(f"maintenance run {old.run_id} (pool {old.pool}, {old.kind} "
                             f"{old.version}) is {old.status}, not finished (fix: `aiplat "
                             "maintain resume` finishes it, `aiplat maintain rollback` puts "
                             "its nodes back; `aiplat maintain status` shows where it is)")
        session = Session(_edge(api), state, version)
        _finish(execute(session), fmt)


def _windows(platform: Any) -> list[Any]:
    """The spec's maintenance windows for the run's options, each schedule checked."""
    from aiplat.maintain.state import WindowOption
    from aiplat.maintain.windows import Window, check

    ws = platform.operations.maintenance_windows
    check([Window(w.name, w.schedule, w.duration_hours) for w in ws])
    return [WindowOption(name=w.name, schedule=w.schedule, hours=w.duration_hours) for w in ws]


def _field(kind: str) -> str:
    from aiplat.maintain.plan import FIELDS

    return FIELDS[kind]


def _show_calls(api: Api, state: RunState) -> None:
    from aiplat.maintain.plan import SKIP_LABEL
    from aiplat.maintain.run import CONFIGMAP, NAMESPACE, apply_with_command, evictable, pods_on
    from aiplat.node.checks import CONDITION_TYPE

    o = state.options
    click.echo("calls (dry run: none made):")
    click.echo(f"  write ConfigMap {NAMESPACE}/{CONFIGMAP} after every step (the run, its "
               "lease)")
    if state.owner == "operator":
        click.echo(f"  PATCH each node of the pool: label {SKIP_LABEL}=true")
    for n in state.nodes:
        pods = [f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                for p in pods_on(api, n.name) if evictable(p)]
        click.echo(f"  batch {n.batch} {n.name}:")
        click.echo(f"    PATCH /api/v1/nodes/{n.name} spec.unschedulable=true")
        click.echo(f"    POST pods/eviction for {len(pods)} pod(s)"
                   + (f": {', '.join(pods[:6])}{' ...' if len(pods) > 6 else ''}"
                      if pods else "") + f" (until --deadline {o.deadline_s:g} s)")
        if state.owner == "operator":
            click.echo(f"    PATCH label {SKIP_LABEL}- and follow "
                       "nvidia.com/gpu-driver-upgrade-state to upgrade-done")
        elif o.apply_with:
            click.echo(f"    run: {apply_with_command(o.apply_with, n.name)}  "
                       f"(AIPLAT_COMMAND={n.command})")
        else:
            click.echo(f"    wait for `aiplat maintain resume --applied {n.name}` after: "
                       f"{n.command}")
        click.echo(f"    wait for condition {CONDITION_TYPE}=True newer than the apply "
                   f"(--gate-timeout {o.gate_timeout_s:g} s)")
        if o.gate_with:
            click.echo(f"    run: {apply_with_command(o.gate_with, n.name)}  (exit 0 = healthy)")
        if o.validate_queue:
            click.echo(f"    POST a validation Job to queue {o.validate_queue} pinned to "
                       f"{n.name}, asking for every GPU it publishes at cordon; wait for it "
                       "to complete")
        click.echo(f"    PATCH /api/v1/nodes/{n.name} spec.unschedulable=false")


def _loaded(api: Api) -> tuple[RunState, str | None]:
    from aiplat.maintain.run import CONFIGMAP, NAMESPACE, load

    state, version = load(api)
    if state is None:
        raise InputError(f"no maintenance run in ConfigMap {NAMESPACE}/{CONFIGMAP} (fix: "
                         "start one with `aiplat maintain run SPEC --pool P --change "
                         "KIND=VERSION`)")
    return state, version


@maintain.command("status")
@_KUBECONFIG
@_OUTPUT
def status_cmd(*, kubeconfig: str | None, fmt: str) -> None:
    """Show the maintenance run: each node's phase, the batch, who holds the run.

    \b
    Examples:
      aiplat maintain run --pool h100 --change driver=580.95.05 --dry-run
      aiplat maintain status --help

    \b
    On a cluster with a run:
      aiplat maintain status -o json
    """
    from aiplat.maintain.state import summary

    with _api(kubeconfig) as api:
        state, _version = _loaded(api)
    data = summary(state)
    if state.lease is not None:
        data["lease"] = state.lease.model_dump()
    data["events"] = state.events[-20:]
    if fmt in DATA_FORMATS:
        print_data(fmt, data)
        return
    _show_summary(data)
    if state.lease is not None:
        click.echo(f"held by {state.lease.holder}, renewed "
                   f"{time.time() - state.lease.renewed:.0f} s ago")


@maintain.command("resume")
@_KUBECONFIG
@click.option("--applied", "applied", multiple=True, metavar="NODE",
              help="this node's command ran and succeeded (repeatable)")
@click.option("--skip", "skip", multiple=True, metavar="NODE",
              help="go on past this failed node; it stays cordoned (repeatable)")
@_APPLY_WITH
@_GATE_WITH
@_VALIDATE
@_VALIDATE_IMAGE
@_DEADLINE
@_GATE
@_IGNORE_WINDOWS
@_OUTPUT
def resume_cmd(*, kubeconfig: str | None, applied: tuple[str, ...], skip: tuple[str, ...],
               apply_with: str | None, gate_with: str | None, validate_queue: str | None,
               validate_image: str | None, deadline: float | None,
               gate_timeout: float | None, ignore_windows: bool, fmt: str) -> None:
    """Go on with the maintenance run from the step where it stopped (a killed run, a
    node waiting for its command, a failed node the admin has looked at).

    \b
    Examples:
      aiplat maintain run --pool h100 --change driver=580.95.05 --dry-run
      aiplat maintain resume --help

    \b
    On a cluster with a run:
      aiplat maintain resume
      aiplat maintain resume --applied h100-3
      aiplat maintain resume --skip h100-5
    """
    from aiplat.maintain.run import Session, execute
    from aiplat.maintain.state import acknowledge, mark_applied

    with _api(kubeconfig) as api:
        state, version = _loaded(api)
        if state.status in ("done", "rolled-back"):
            raise InputError(f"maintenance run {state.run_id} is {state.status}: nothing to "
                             "resume (fix: `aiplat maintain run` starts a new one)")
        state = _options(state, apply_with=apply_with, deadline=deadline,
                         gate_timeout=gate_timeout, ignore_windows=ignore_windows,
                         gate_with=gate_with, validate_queue=validate_queue,
                         validate_image=validate_image)
        for n in applied:
            state = mark_applied(state, n, time.time())
        state = acknowledge(state, skip)
        session = Session(_edge(api), state, version)
        _finish(execute(session), fmt)


@maintain.command("rollback")
@click.argument("node", required=False)
@_KUBECONFIG
@_APPLY_WITH
@_DEADLINE
@_OUTPUT
def rollback_cmd(*, node: str | None, kubeconfig: str | None, apply_with: str | None,
                 deadline: float | None, fmt: str) -> None:
    """Put back NODE (default: every node the run touched, last first): a node not changed
    yet is uncordoned; a changed one is drained, rolled back to its previous version through
    its owner, and left cordoned with the reason.

    \b
    Examples:
      aiplat maintain run --pool h100 --change driver=580.95.05 --dry-run
      aiplat maintain rollback --help

    \b
    On a cluster with a run:
      aiplat maintain rollback h100-3 --apply-with ./prep.sh
      aiplat maintain rollback
    """
    from aiplat.maintain.run import Session, rollback

    with _api(kubeconfig) as api:
        state, version = _loaded(api)
        if node is not None:
            state.node(node)  # refused with the run's nodes when it is not one
        state = _options(state, apply_with=apply_with, deadline=deadline)
        session = Session(_edge(api), state, version)
        _finish(rollback(session, [node] if node else None), fmt)
