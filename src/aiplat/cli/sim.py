"""``aiplat sim run|compare|fgd``: simulate queues and placement (thin: parse, call, print).

The work is in :mod:`aiplat.sched`; this module loads inputs (spec, trace files), shows a
progress bar on stderr when stderr is a terminal, and prints data on stdout as a table or
JSON.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from aiplat.cli._output import DATA_FORMATS, FORMATS, box_table, print_data
from aiplat.cli._output import console as out_console
from aiplat.cli._progress import QUIET, Bar, info, progress_bar
from aiplat.cli.main import SEED, Finite
from aiplat.errors import InputError
from aiplat.sched import PAPER_POLICIES, POLICY_NAMES, SimResult, simulate
from aiplat.sched.fgd import fgd_table
from aiplat.sched.platform import STRATEGIES, foreign_flavors, simulate_platform, uncovered
from aiplat.sched.policies import ENGINE_VARIANT
from aiplat.text import shown

DEFAULT_TRACES = ("default", "gpushare40", "gpuspec33", "multigpu50")


def _out() -> Console:
    # _row shows a snapshot's names terminal-safe; the console takes them as plain text.
    return out_console()


def _warn(text: str) -> None:
    """A warning on stderr; it quotes objects' names, shown terminal-safe (aiplat.text)."""
    click.echo(f"warning: {shown(text)}", err=True)


def _platform(spec: str | None) -> tuple[Any, Any]:
    from aiplat.catalog import load_catalog
    from aiplat.plan import build_plan
    from aiplat.spec import EXAMPLE, example_text, load_platform, parse_platform

    catalog = load_catalog()
    platform = (load_platform(spec, catalog) if spec
                else parse_platform(example_text(), EXAMPLE, catalog))
    return platform, build_plan(platform, catalog)


def _kueue(path: str | None) -> Any:
    """Kueue objects from a YAML file or a folder of them; unsupported fields warned."""
    if path is None:
        return None
    from aiplat import inputs
    from aiplat.ops import kueue_input
    from aiplat.sched.kueue_objects import from_objects

    root = Path(path)
    files = sorted(root.rglob("*.y*ml")) if root.is_dir() else [root]
    items: list[tuple[str, Any]] = []
    for f in files:
        try:
            docs = inputs.load_yaml_all(f, "Kueue objects (YAML)")
        except InputError as e:
            raise InputError(f"{e} (pass the rendered Kueue YAML, e.g. out/kube/kueue/)") \
                from None
        for i, d in enumerate(docs):
            if not isinstance(d, dict):
                raise InputError(f"{f}: document {i + 1} is {type(d).__name__}, not a Kueue "
                                 "object (fix: pass the rendered Kueue YAML)")
        items.extend((str(f), d) for d in docs)
    config = kueue_input.read(
        items, str(root),
        lambda objs: from_objects(objs, str(root), load_text=inputs.embedded_mappings),
        "pass the rendered Kueue YAML, e.g. out/kube/kueue/")
    for line in config.unsupported:
        _warn(line)
    return config


def _tree_queues(platform: Any) -> Any:
    """The queues the Kubernetes tree renders for ``platform`` (what would be applied)."""
    from aiplat.ops.sim_month import tree_queues

    return tree_queues(platform)


def _data_dir(data: str | None) -> Path:
    if data is None:
        raise InputError("no trace data given (fix: pass --data DIR, the folder that holds "
                         "traces/alibaba-gpu-v2023)")
    from aiplat.sched.alibaba import trace_dir

    return trace_dir(Path(data))


@click.group()
def sim() -> None:
    """Simulate Kueue queues and GPU placement: waits, fairness, fragmentation, cost."""


# ---------------------------------------------------------------------------- fgd


@sim.command()
@click.option("--trace", "traces", multiple=True, metavar="NAME",
              help=f"pod list variant (repeatable; default: those of {', '.join(DEFAULT_TRACES)} "
              "that exist)")
@click.option("--policy", "policies", multiple=True, type=click.Choice(POLICY_NAMES),
              help="placement policy (repeatable; default: the paper's six; the two Kubernetes "
              "ones only with --variant aiplat)")
@click.option("--seeds", default=10, show_default=True, type=click.IntRange(1, 1000),
              help="seeds per experiment: 42, 43, ...")
@click.option("--variant", type=click.Choice(["published", "aiplat"]), default="published",
              show_default=True, help="the published simulator's rules, or aiplat's earlier "
              "model whole (random ties, exact FGD, every shape, all nodes, its own sampling)")
@click.option("--ties", type=click.Choice(["node-order", "random"]), default="node-order",
              show_default=True, help="ties: the seed's node order, or a fresh random choice")
@click.option("--fgd-score", type=click.Choice(["integer", "exact"]), default="integer",
              show_default=True, help="FGD's coarse integer score, or the exact float delta")
@click.option("--typical", type=click.Choice(["popular", "all"]), default="popular",
              show_default=True, help="FGD's target workload: the popular 95% of shapes, or all")
@click.option("--nodes", "node_set", type=click.Choice(["gpu", "all"]), default="gpu",
              show_default=True, help="the GPU nodes only, or CPU-only nodes too")
@click.option("--data", metavar="DIR", help="folder holding traces/alibaba-gpu-v2023")
@click.option("-o", "--output", "fmt", type=click.Choice(FORMATS), default="table",
              show_default=True)
@QUIET
def fgd(traces: tuple[str, ...], policies: tuple[str, ...], seeds: int, variant: str,  # noqa: PLR0917
        ties: str, fgd_score: str, typical: str, node_set: str, data: str | None,
        fmt: str) -> None:
    """Reproduce the FGD paper's experiment: GPU allocation ratio at 130% arrivals.

    By default the published simulator's protocol (hkust-adsl/kubernetes-scheduler-simulator):
    GPU nodes only, the trace's pods shuffled and topped up to 1.3x the cluster's GPUs, placed
    in order by each policy with ties to the seed's node order, nothing ever leaves; the
    figure is the mean allocation over the pods that arrive at 130%. Prints the mean per
    policy and trace and the variant that produced it (JSON: trace -> policy -> mean percent,
    plus per-seed values and "variant").

    \b
    Examples (the FGD trace in ./data, see aiplat samples get fgd-trace):
      aiplat sim fgd --data data --trace multigpu50 --seeds 1
      aiplat sim fgd --data data --trace multigpu50 --policy fgd --policy bestfit --seeds 1 -o json
    """
    from aiplat.sched.alibaba import load_nodes, load_pods, variants
    from aiplat.sched.fgd import FgdOptions

    options = (FgdOptions.aiplat() if variant == "aiplat" else
               FgdOptions(ties=ties, fgd_score=fgd_score, typical=typical,  # type: ignore[arg-type]
                          nodes=node_set))  # type: ignore[arg-type]
    extra = [p for p in policies if p not in PAPER_POLICIES]
    if extra and variant != "aiplat":
        raise InputError(f"--policy {extra[0]}: the published simulator has only "
                         f"{', '.join(PAPER_POLICIES)} (fix: drop it, or add --variant aiplat)")
    folder = _data_dir(data)
    if not traces:  # the defaults that this data folder has
        traces = tuple(t for t in DEFAULT_TRACES if t in variants(folder)) or ("default",)
    policies = policies or PAPER_POLICIES
    nodes = load_nodes(folder)
    requests = {t: [p.request for p in load_pods(folder, t)] for t in traces}
    seed_list = list(range(42, 42 + seeds))
    t0 = time.perf_counter()
    with progress_bar("fgd", len(traces) * len(policies) * len(seed_list)) as bar:
        try:
            table = fgd_table(nodes, requests, list(policies), seed_list,
                              progress=bar.at, options=options)
        except ValueError as e:
            raise InputError(f"{folder}: {e} (fix: check the trace's node and pod lists)") \
                from None
    elapsed = time.perf_counter() - t0
    if fmt in DATA_FORMATS:
        print_data(fmt, table)
    else:
        _print_fgd(table)
    info(f"{len(traces) * len(policies) * len(seed_list)} experiments in {elapsed:.1f} s")


def _print_fgd(table: dict[str, Any]) -> None:
    means: dict[str, dict[str, float]] = table["mean"]
    traces = list(means)
    policies = list(next(iter(means.values())))
    t = box_table(f"GPU allocation ratio (%) at {table['arrival_pct']:g}% arrivals",
                  ("policy", *traces), right=traces)
    for p in policies:
        t.add_row(p, *(f"{means[tr][p]:.2f}" for tr in traces))
    console = _out()
    console.print(t)
    console.print(f"variant {table['variant']}: mean of {len(table['seeds'])} seed(s) on "
                  f"{table['gpus']:,} GPUs")
    for tr in traces:
        ranked = sorted(means[tr], key=lambda p: -means[tr][p])
        console.print(f"{tr}: {' > '.join(ranked)}")


# ---------------------------------------------------------------------------- run / compare


def _print_result(title: str, r: SimResult) -> None:
    cols = ("tenant", "jobs", "started", "waiting", "wait p50 h", "wait p95 h", "wait p99 h",
            "GPU-h", "share", "fair share")
    t = box_table(title, cols, right=cols[1:])
    for x in r.tenants:
        t.add_row(shown(x.name), str(x.jobs), str(x.started), str(x.waiting),
                  f"{x.wait_p50_h:.2f}", f"{x.wait_p95_h:.2f}", f"{x.wait_p99_h:.2f}",
                  f"{x.gpu_hours:,.0f}", f"{x.obtained_share:.1%}", f"{x.fair_share:.1%}")
    console = _out()
    console.print(t)
    console.print(
        f"Jain {r.jain_index:.3f} · utilisation {r.utilisation:.1%} · GPU-h allocated "
        f"{r.allocated_gpu_hours:,.0f} of {r.provisioned_gpu_hours:,.0f} provisioned · "
        f"preemptions {r.preemptions} ({r.preempted_gpu_hours:,.0f} GPU-h lost) · never fit "
        f"{r.never_fit} · fragmented GPUs {r.mean_fragmented_gpus:.1f} (mean)"
    )


@sim.command()
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("--policy", type=click.Choice(POLICY_NAMES), default="bestfit", show_default=True)
@click.option("--strategy", type=click.Choice(STRATEGIES), default="spec", show_default=True,
              help="pool strategy: as the spec says, fixed, autoscale, or warm reserve")
@click.option("--warm-nodes", default=1, show_default=True, type=click.IntRange(0, 10000))
@click.option("--mtbf", "mtbf_h", type=Finite(min=0.01), help="node MTBF in hours")
@click.option("--mttr", "mttr_h", default=24.0, show_default=True,
              type=Finite(min=0.01), help="node repair time in hours")
@click.option("--classic", is_flag=True, help="no fair sharing (classic Kueue ordering)")
@click.option("--months", default=1.0, show_default=True, type=Finite(0.01, 120))
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--kueue", "kueue_path", metavar="PATH",
              help="rendered Kueue objects (file or folder) instead of queues from SPEC")
@click.option("--trace", metavar="NAME", help="replay an Alibaba trace variant instead of SPEC")
@click.option("--data", metavar="DIR", help="folder holding traces/alibaba-gpu-v2023")
@click.option("-o", "--output", "fmt", type=click.Choice(FORMATS), default="table",
              show_default=True)
@QUIET
def run(  # noqa: PLR0917 (one parameter per click option)
    spec: str | None, policy: str, strategy: str, warm_nodes: int, mtbf_h: float | None,
        mttr_h: float, classic: bool, months: float, seed: int, kueue_path: str | None,
        trace: str | None, data: str | None, fmt: str) -> None:
    """Simulate the platform in SPEC (default: the built-in example) on its own queues.

    Each tenant is a ClusterQueue, each pool a flavor; workloads become jobs from the plan's
    sized GPUs and run hours. With --trace, replays an Alibaba trace variant instead (one
    ClusterQueue per QoS class).

    \b
    Examples:
      aiplat sim run
      aiplat sim run --policy fgd --strategy autoscale --months 3 -o json
    """
    t0 = time.perf_counter()
    if trace is not None:
        from aiplat.sched.alibaba import load_nodes, load_pods
        from aiplat.sched.traces import qos_queues, trace_jobs

        folder = _data_dir(data)
        nodes = load_nodes(folder)
        jobs = trace_jobs(load_pods(folder, trace), trace)
        with progress_bar(f"trace {trace}", 1.0, "fraction") as bar:
            result = simulate(nodes, jobs, qos_queues(jobs, nodes), policy=policy, seed=seed,
                              progress=bar.update)
        title = f"trace {trace} · policy {policy}"
    else:
        platform, plan = _platform(spec)
        queues = _kueue(kueue_path) or _tree_queues(platform)
        if classic:  # --classic overrides the Configuration
            queues = queues.with_fair_sharing(False)
        for line in [*foreign_flavors(queues, [p.name for p in plan.pools]),
                     *uncovered(queues, [w.tenant for w in plan.workloads])]:
            _warn(line)
        with progress_bar("simulating", 1.0, "fraction") as bar:
            result = simulate_platform(platform, plan, seed, policy=policy, months=months,
                                       strategy=strategy, warm_nodes=warm_nodes,
                                       mtbf_h=mtbf_h, mttr_h=mttr_h,
                                       queues=queues, progress=bar.update)
        title = (f"{platform.metadata.name} · {months:g} month(s) · policy {policy} · "
                 f"pools {strategy} · {queues.mode} · queues "
                 + (f"from {kueue_path}" if kueue_path else "as kube render writes them"))
    if fmt in DATA_FORMATS:
        print_data(fmt, result.to_dict())
    else:
        _print_result(title, result)
    info(f"{result.events:,} events in {time.perf_counter() - t0:.2f} s")


def _offset(bar: Bar, done: int) -> Callable[[float], None]:
    """One run's fraction, drawn after the ``done`` runs before it."""
    return lambda fraction: bar.update(done + fraction)


@sim.command()
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("--policy", "policies", multiple=True, type=click.Choice(POLICY_NAMES),
              help="placement policies to compare (repeatable; default bestfit)")
@click.option("--strategy", "strategies", multiple=True, type=click.Choice(STRATEGIES),
              help="pool strategies to compare (repeatable; default spec)")
@click.option("--queueing", "queueings", multiple=True, type=click.Choice(["fair", "classic"]),
              help="fair sharing or classic ordering (repeatable; default fair)")
@click.option("--warm-nodes", default=1, show_default=True, type=click.IntRange(0, 10000))
@click.option("--mtbf", "mtbf_h", type=Finite(min=0.01), help="node MTBF in hours")
@click.option("--mttr", "mttr_h", default=24.0, show_default=True,
              type=Finite(min=0.01))
@click.option("--months", default=1.0, show_default=True, type=Finite(0.01, 120))
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--serving", "serving_only", is_flag=True,
              help="only the serving pools' day (fixed, autoscale, warm), not the month")
@click.option("-o", "--output", "fmt", type=click.Choice(FORMATS), default="table",
              show_default=True)
@QUIET
def compare(  # noqa: PLR0917 (one parameter per click option)
    spec: str | None, policies: tuple[str, ...], strategies: tuple[str, ...],
            queueings: tuple[str, ...], warm_nodes: int, mtbf_h: float | None, mttr_h: float,
            months: float, seed: int, serving_only: bool, fmt: str) -> None:
    """Compare placement policies, pool strategies and queueing side by side on SPEC.

    Every combination of the given --policy, --strategy and --queueing values is one row:
    waits (worst tenant p95), fairness, utilisation and provisioned GPU-hours. Then the
    serving pools over a day of varying load (slo.hourlyLoad, or a default day): fixed at
    the peak's size, autoscaled from the planned replicas, and autoscaled with --warm-nodes
    kept up, by TTFT misses and GPU-hours, with each replica's start-up chain (node boot,
    driver, image pull, model load). --serving prints only that (JSON: its rows).

    \b
    Examples:
      aiplat sim compare --policy bestfit --policy fgd
      aiplat sim compare --strategy fixed --strategy autoscale --queueing fair --queueing classic
      aiplat sim compare --serving -o json
    """
    from aiplat.sched.sim_serving import serving_days

    platform, plan = _platform(spec)
    days = serving_days(platform, plan, warm_nodes=warm_nodes)
    if serving_only:
        if fmt in DATA_FORMATS:
            print_data(fmt, [d.to_dict() for d in days])
        else:
            _print_serving(days, warm_nodes)
        return
    tree = _tree_queues(platform)
    combos = [(p, s, q) for p in (policies or ("bestfit",)) for s in (strategies or ("spec",))
              for q in (queueings or ("fair",))]
    rows = []
    with progress_bar("comparing", len(combos)) as bar:
        for i, (p, s, q) in enumerate(combos):
            bar.step(f"{p}, {s}, {q}")
            r = simulate_platform(platform, plan, seed, policy=p, months=months, strategy=s,
                                  warm_nodes=warm_nodes, mtbf_h=mtbf_h, mttr_h=mttr_h,
                                  queues=tree.with_fair_sharing(q == "fair"),
                                  progress=_offset(bar, i))
            rows.append(({"policy": p, "strategy": s, "queueing": q}, r))
            bar.update(i + 1)
    if fmt in DATA_FORMATS:
        print_data(fmt, [{**k, **r.to_dict()} | {"timeline": None, "variant": ENGINE_VARIANT}
                         for k, r in rows])
        return
    cols = ("policy", "pools", "queueing", "worst p95 wait h", "Jain", "utilisation",
            "provisioned GPU-h", "preemptions", "lost GPU-h", "waiting")
    t = box_table(f"{platform.metadata.name}: {len(rows)} configuration(s), seed {seed} · "
                  f"placement variant {ENGINE_VARIANT}", cols, right=cols[3:])
    for k, r in rows:
        worst = max((x.wait_p95_h for x in r.tenants), default=0.0)
        t.add_row(k["policy"], k["strategy"], k["queueing"], f"{worst:.2f}",
                  f"{r.jain_index:.3f}", f"{r.utilisation:.1%}",
                  f"{r.provisioned_gpu_hours:,.0f}", str(r.preemptions),
                  f"{r.preempted_gpu_hours:,.0f}", str(sum(x.waiting for x in r.tenants)))
    _out().print(t)
    _print_serving(days, warm_nodes)


def _print_serving(days: list[Any], warm_nodes: int) -> None:
    """The serving pools' day: a row per workload and strategy, then each start-up chain."""
    if not days:
        return
    cols = ("workload", "pool", "pools", "replicas", "TTFT misses", "missed", "GPU-h/day")
    t = box_table(f"serving over a day (warm: {warm_nodes} node(s) kept up)", cols,
                  right=cols[3:])
    for d in days:
        t.add_row(shown(d.workload), shown(d.pool), d.strategy,
                  f"{d.floor}-{d.ceiling} (peak {d.peak_replicas})"
                  if d.strategy != "fixed" else str(d.peak_replicas),
                  f"{d.ttft_misses:,.0f}", f"{d.miss_share:.2%}", f"{d.gpu_hours:,.0f}")
    console = _out()
    console.print(t)
    seen = set()
    for d in days:
        if d.workload in seen:
            continue
        seen.add(d.workload)
        items = " + ".join(f"{name} {s:,.0f} s" for name, s in d.chain.items())
        console.print(f"{shown(d.workload)} start-up chain: {items} = {d.chain.total_s:,.0f} s "
                      f"(on a node already up: {d.chain.model_load_s:,.0f} s)")


# ---------------------------------------------------------------------------- replay

def _snapshot_files(path: Path) -> tuple[list[tuple[str, Any]], bool]:
    """Objects from a file or a folder of ``kubectl get -o yaml|json`` output, and whether
    a Pod list was among them (even an empty one)."""
    from aiplat import inputs
    from aiplat.kueue.snapshot import unpack
    from aiplat.ops import kueue_input

    files = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json")) \
        if path.is_dir() else [path]
    if not files:
        raise InputError(f"{path}: no .yaml/.yml/.json file (fix: pass the output of "
                         "'kubectl get clusterqueues,workloads,... -A -o yaml')")
    items: list[tuple[str, Any]] = []
    pods = False
    for f in files:
        text = inputs.read_text(f, "a cluster snapshot")
        docs = ([inputs.parse_json(text, f, "a cluster snapshot")]
                if f.suffix == ".json" or text.lstrip()[:1] in ("{", "[")
                else inputs.parse_yaml_all(text, f, "a cluster snapshot"))
        items.extend((str(f), o) for o in unpack([d for d in docs if d is not None], str(f)))
        pods = pods or kueue_input.pods_listed(str(f), docs)
    if not items:
        raise InputError(f"{path}: no objects (fix: pass the output of 'kubectl get "
                         "clusterqueues,workloads,... -A -o yaml')")
    kept, note = kueue_input.replayed(items, str(path))
    if note:
        click.echo(f"note: {note}", err=True)
    return kept, pods


def _default_kubeconfig() -> str:
    """kubectl's default kubeconfig; none there is a clear error."""
    from aiplat.kube.live import kubectl_kubeconfig

    return kubectl_kubeconfig(missing="no snapshot and no kubeconfig at {path} (fix: pass a "
                              "file or folder of 'kubectl get -o yaml' output, or "
                              "--kubeconfig FILE, or set KUBECONFIG)")


_REPLAYED = ("resourceflavors", "cohorts", "clusterqueues", "localqueues", "topologies",
             "workloadpriorityclasses", "workloads", "resourceclaimtemplates", "configmaps",
             "admissionchecks", "namespaces", "nodes", "pods")


def _snapshot_live(kubeconfig: str | None, context: str | None = None) -> list[Any]:
    """The objects the replay reads, from the API server (kube.live.read_cluster)."""
    from aiplat.kube.apply import Api
    from aiplat.kube.live import read_cluster

    with Api.from_kubeconfig(kubeconfig, context) as api:
        read = read_cluster(api, _REPLAYED)
    if "clusterqueues" in read.not_served:
        raise InputError("the cluster does not serve Kueue's API (kueue.x-k8s.io v1beta2 or "
                         "v1beta1) (fix: install Kueue, or pass a snapshot file)")
    return [o for r in _REPLAYED for o in read.lists[r]]


def _print_replay(rows: list[dict[str, Any]], cycles: int) -> None:
    t = box_table(f"replay: {len(rows)} workloads, {cycles} scheduling cycle(s)",
                  ("workload", "ClusterQueue", "decision", "flavors", "reason"),
                  whole=("workload", "ClusterQueue"))  # copied into kubectl commands
    for r in rows:
        flavors = _flavors_shown(r)
        why = ""
        quota = r.get("onQuotaAlone", r["decision"])
        if quota != "admitted":
            why = f"{r['pending']}: {r['reason']}" + (f" — {r['message']}" if r["message"]
                                                     else "")
        if r.get("preemptionReasons"):
            why = f"preempted ({', '.join(r['preemptionReasons'])}) " + why
        if "onQuotaAlone" in r:  # unknown: the quota rules' answer is context only
            deps = f", depends on {', '.join(r['dependsOn'])}" if r.get("dependsOn") else ""
            why = f"on quota alone: {quota}{deps}" + (f"; {why}" if why else "")
        for alt in r.get("timingAlternatives") or []:
            other = _flavors_shown(alt)
            why += ("; " if why else "") + f"or {alt['decision']}" + (
                f" ({other})" if other else "") + f" {alt['when']}"
        t.add_row(*(shown(c) for c in (r["workload"], r["clusterQueue"], r["decision"],
                                        flavors, why)))
    _out().print(t)


def _flavors_shown(r: dict[str, Any]) -> str:
    counts = r.get("counts") or {}
    return "; ".join(f"{ps}: " + ", ".join(f"{res}={f}" for res, f in fl.items())
                     + (f" ({counts[ps]} pods, partial admission)" if ps in counts else "")
                     for ps, fl in (r.get("flavors") or {}).items())


def _warn_unreplayed(lines: list[str], tas_decided: bool, tas_missing: str | None) -> None:
    """The snapshot's unreplayed fields; topology-aware scheduling's are not warned when it
    is decided, and one line says what it lacks when that is why it is not."""
    from aiplat.kueue.snapshot import NOT_REPLAYED_TAS

    tas = [line for line in lines if line.split(":", 1)[0].endswith(NOT_REPLAYED_TAS)]
    for line in lines:
        if line not in tas or (not tas_decided and tas_missing is None):
            _warn(f"not replayed: {line}")
    if tas and not tas_decided and tas_missing is not None:
        objects = ", ".join(dict.fromkeys(line.split(": ", 1)[-1] for line in tas))
        _warn(f"topology-aware scheduling not decided: {tas_missing}: {objects}")


@sim.command()
@click.argument("snapshot", required=False, type=click.Path(path_type=Path))
@click.option("--kubeconfig", metavar="FILE", help="read the objects from this cluster "
              "instead of SNAPSHOT (without SNAPSHOT: $KUBECONFIG, then ~/.kube/config)")
@click.option("--context", metavar="NAME", help="the kubeconfig's context (default: its "
              "current-context)")
@click.option("--until-quiet", "until_quiet", is_flag=True, default=True,
              help="cycle until nothing changes (default)")
@click.option("--cycles", type=click.IntRange(1, 1_000_000), help="run exactly N cycles")
@click.option("-o", "--output", "fmt", type=click.Choice(FORMATS),
              default="table", show_default=True)
def replay(*, snapshot: Path | None, kubeconfig: str | None, context: str | None,
           until_quiet: bool, cycles: int | None, fmt: str) -> None:
    """What Kueue would do with SNAPSHOT: a file or folder of objects as 'kubectl get -o
    yaml|json' returns them (ResourceFlavor, Cohort, ClusterQueue, LocalQueue, Topology,
    WorkloadPriorityClass, Workload, Node, Kueue's Configuration or its ConfigMap).

    Runs Kueue v0.19's scheduling cycle on them and prints, per workload, the decision
    (admitted, preempted, pending), the flavor per pod set and resource, the preemption
    reason, and for pending ones whether Kueue would retry it (active) or wait for quota
    to be released (inadmissible) with the reason in Kueue's words.

    \b
    Examples (a running lab cluster):
      aiplat sim replay
      aiplat sim replay --cycles 1 -o json
    """
    from aiplat import inputs
    from aiplat.kueue.snapshot import parse
    from aiplat.kueue.timing import MAX_FORKS
    from aiplat.kueue.unknown import decide
    from aiplat.ops import kueue_input

    del until_quiet  # the default; --cycles N overrides it
    if snapshot is not None and (kubeconfig or context):
        raise InputError("give SNAPSHOT or --kubeconfig/--context, not both")
    if snapshot is None and kubeconfig is None:
        kubeconfig = _default_kubeconfig()
    if snapshot is not None and not snapshot.exists():
        raise InputError(f"{snapshot}: no such file or folder (fix: give a snapshot: a folder "
                         "or file of the cluster's objects, e.g. kubectl get ... -o yaml)")
    source = str(snapshot) if snapshot is not None else "cluster"
    items, pods = (_snapshot_files(snapshot) if snapshot is not None  # live: pods listed
                   else ([(source, o) for o in _snapshot_live(kubeconfig, context)], True))
    snap = kueue_input.read(items, source,
                            lambda objs: parse(objs, source, inputs.embedded_mappings),
                            "pass 'kubectl get ... -o yaml' output")
    cluster = kueue_input.tas_cluster(items, source, pods_listed=pods)
    _warn_unreplayed(kueue_input.grouped(snap.unsupported, source), cluster is not None,
                     kueue_input.tas_missing(items, pods_listed=pods))
    r, outcomes = decide(snap, cycles, cluster)
    rows = [o.as_dict() for o in outcomes]
    for victim, preemptor in r.loops():
        _warn(f"preemption loop: {preemptor} preempts {victim}, which is admitted again "
              "before it and preempted again, over and over (Kueue v0.19 on a lab cluster: "
              "1,402 times in 300 s; it leaves such a loop only by a race); the replay ends it "
              f"at the second round, with {preemptor} admitted")
    if r.timing is not None and r.timing.not_made:
        _warn(f"{r.timing.not_made} more timing alternative(s) not computed: the replay "
              f"follows at most {MAX_FORKS} evictions' other cycles")
    if fmt in DATA_FORMATS:
        print_data(fmt, rows)
    else:
        _print_replay(rows, r.cycle)
