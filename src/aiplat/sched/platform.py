"""The platform's own queues, simulated: ``simulate_platform(platform, plan, seed)``.

Maps the spec onto the simulator with one name per concept:

- every pool becomes a flavor of the same name and ``plan.pools[].nodes`` nodes of
  ``gpus_per_node`` GPUs with the node's allocatable CPU and memory (what the Kueue quotas
  and the lint inventory count: ``plan/resolve``'s reservation rule), laid out in racks of
  ``nodes_per_rack`` and blocks of ``topology.racksPerBlock`` racks; a pool with
  ``autoscaling`` scales between min and max with its ``startupSeconds``;
- the queues are the Kueue objects the tree renders, read back (``queues``: ClusterQueues
  with cpu, memory and GPU quota, Cohorts, the Configuration's fair sharing and
  waitForPodsReady; :mod:`aiplat.ops.sim_month` renders and reads them, since ``sched``
  sees neither ``kube`` nor YAML): there is no second, spec-derived version of them;
- every workload becomes jobs (:mod:`aiplat.sched.synthetic`) from the plan's sized GPUs and
  run hours, in the pods the tree renders (``plan.pods``: a pod per inference replica, a
  training gang in equal pods), each pod asking for the CPU and memory the rendered pods do
  (``plan.kubelet.pod_cpus`` in whole cores, ``pod_memory_gib``): training
  kinds are gangs with Poisson arrivals at ``runsPerMonth``, batch inference is split into
  one-pod replicas arriving periodically, online inference and RAG hold their GPUs all
  month at the highest priority.

One month is simulated with the ``bestfit`` placement policy; for the example platform it
takes well under a second. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from aiplat.errors import InputError
from aiplat.plan.kubelet import pod_cpus, pod_memory_gib
from aiplat.plan.models import Plan, WorkloadPlan
from aiplat.plan.pods import pod_groups
from aiplat.plan.resolve import POD_SHARE, cpu_allocatable, memory_allocatable_gib
from aiplat.sched.cluster import Node
from aiplat.sched.engine import PoolStrategy, simulate
from aiplat.sched.kueue import GPU, KueueConfig
from aiplat.sched.metrics import SimResult
from aiplat.sched.synthetic import Profile, Shape, generate
from aiplat.sched.workload import Job
from aiplat.sizing.power import rack_of
from aiplat.spec.models import Platform, PoolSpec, WorkloadKind

SHAPES: dict[str, Shape] = {
    WorkloadKind.PRETRAIN.value: "gang",
    WorkloadKind.FINETUNE.value: "gang",
    WorkloadKind.LORA.value: "gang",
    WorkloadKind.BATCH_INFERENCE.value: "replicas",
    WorkloadKind.ONLINE_INFERENCE.value: "always-on",
    WorkloadKind.RAG.value: "always-on",
}


def platform_nodes(platform: Platform, plan: Plan) -> list[Node]:
    nodes = []
    for pp in plan.pools:
        spec = platform.pool(pp.name)
        if spec is None or not pp.gpus_per_node:
            continue
        per_rack = max(1, pp.nodes_per_rack)
        per_block = spec.topology.racks_per_block
        for i in range(pp.nodes):
            rack = rack_of(i, per_rack)
            nodes.append(Node(
                name=f"{pp.name}-{i}", cpu_milli=cpu_allocatable(spec.node.cpu_cores) * 1000,
                memory_mib=memory_allocatable_gib(spec.node.memory_gib) * 1024,
                gpus=pp.gpus_per_node,
                model=pp.gpu_model or "", pool=pp.name, block=f"block-{rack // per_block}",
                rack=f"rack-{rack}",
            ))
    return nodes


STRATEGIES = ("spec", "fixed", "autoscale", "warm")


def platform_strategies(platform: Platform, strategy: str = "spec", *, warm_nodes: int = 1,
                        mtbf_h: float | None = None, mttr_h: float = 24.0
                        ) -> dict[str, PoolStrategy]:
    """Pool strategies: ``spec`` (autoscaling where the spec says so), ``fixed`` (every
    pool at its size), ``autoscale`` (every pool from 0, the spec's start-up time or 600 s),
    ``warm`` (autoscale keeping ``warm_nodes`` idle nodes up); failures on top if ``mtbf_h``."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown pool strategy {strategy!r}; choose {', '.join(STRATEGIES)}")
    out = {}
    for p in platform.pools:
        startup = p.autoscaling.startup_seconds if p.autoscaling is not None else 600
        scaled = strategy in ("autoscale", "warm") or (
            strategy == "spec" and p.autoscaling is not None)
        minimum = p.autoscaling.min if strategy == "spec" and p.autoscaling is not None else 0
        out[p.name] = PoolStrategy(
            autoscaling=scaled, min_nodes=minimum, startup_s=startup,
            warm_nodes=warm_nodes if strategy == "warm" else 0, mtbf_h=mtbf_h, mttr_h=mttr_h)
    return out


def _profile(w: WorkloadPlan, gpus_per_node: int, spec: PoolSpec) -> Profile:
    # The rendered pod's request: POD_SHARE of allocatable over the node's GPUs, CPUs by
    # plan.kubelet.pod_cpus (whole cores where the kubelet pins them) for every pod size.
    gpn, node = max(1, gpus_per_node), spec.node
    per_gpu_cpu = max(1, int(cpu_allocatable(node.cpu_cores) * POD_SHARE) * 1000 // gpn)
    pod_cpu = tuple((g, pod_cpus(spec, g) * 1000) for g in range(1, gpn + 1))
    pod_mem = tuple((g, pod_memory_gib(spec, g) * 1024) for g in range(1, gpn + 1))
    per_gpu_mem = max(1, int(memory_allocatable_gib(node.memory_gib) * POD_SHARE) * 1024 // gpn)
    return Profile(
        name=w.name, tenant=w.tenant, pool=w.pool, gpus=max(1, w.gpus),
        gpus_per_node=gpus_per_node, run_hours=w.run_hours,
        runs_per_month=max(w.gpu_hours_per_month / (w.gpus * w.run_hours), 1e-6)
        if w.run_hours else 1.0,
        shape=SHAPES.get(w.kind, "gang") if w.run_hours else "always-on",
        cpu_per_gpu=per_gpu_cpu, pod_cpu_milli=pod_cpu, memory_mib_per_gpu=per_gpu_mem,
        pod_memory_mib=pod_mem,
        pods=tuple((g.pods, g.gpus) for g in pod_groups(
            w, gpus_per_node, mig=bool(spec.sharing.mig_layout))),
    )


def platform_jobs(platform: Platform, plan: Plan, seed: int, months: float = 1.0) -> list[Job]:
    profiles = []
    pools = {p.name: p for p in plan.pools}
    for w in plan.workloads:
        pp = pools.get(w.pool)
        spec = platform.pool(w.pool)
        if pp is None or spec is None or not pp.gpus_per_node:
            continue
        profiles.append(_profile(w, pp.gpus_per_node, spec))
    return generate(profiles, seed=seed, months=months)


def tenant_queues(tenants: list[str], queues: KueueConfig) -> dict[str, str]:
    """Each tenant's ClusterQueue, as its pods find it: the LocalQueue in the tenant's
    namespace (the one named after the tenant, as ``kube render`` writes it, or the only
    one there), else a ClusterQueue of the tenant's name (queues given without
    LocalQueues). InputError naming the tenants that have neither."""
    lqs: dict[str, dict[str, str]] = {}
    for key, cq in sorted(queues.local_queues.items()):
        ns, _, name = key.partition("/")
        lqs.setdefault(ns, {})[name] = cq
    names = set(queues.snapshot.cluster_queues)
    out, missing = {}, []
    for t in tenants:
        mine = lqs.get(t, {})
        if t in mine:
            out[t] = mine[t]
        elif len(mine) == 1:
            out[t] = next(iter(mine.values()))
        elif not mine and t in names:
            out[t] = t
        else:
            missing.append(f"{t} ({'LocalQueues ' + ', '.join(sorted(mine)) if mine else 'none'}"
                           " in its namespace)")
    if missing:
        raise InputError(f"no queue for tenant(s) {'; '.join(missing)}: a tenant's jobs go to "
                         "the LocalQueue named after it in its namespace, or to the ClusterQueue"
                         f" of its name (ClusterQueues: {', '.join(sorted(names))}) (fix: add "
                         "a LocalQueue NAMESPACE/NAME -> CLUSTERQUEUE for each, as kube render "
                         "writes them)")
    return out


def foreign_flavors(queues: KueueConfig, pools: list[str]) -> list[str]:
    """One line per ClusterQueue flavor that names no pool: its quota lands on no node (a
    flavor is a pool here, matched by name), so jobs that would use it never run."""
    return [f"ClusterQueue {q.name}: flavor {f.flavor} is not a pool of the spec "
            f"({', '.join(pools)}): no node has it, jobs assigned to it never start"
            for q in queues.snapshot.cluster_queues.values() for g in q.groups
            for f in g.flavors if f.flavor not in pools]


REQUESTED = ("cpu", "memory", GPU)  # what every pod of the spec's workloads requests


def uncovered(queues: KueueConfig, tenants: list[str]) -> list[str]:
    """One line per tenant's ClusterQueue that covers not every resource the spec's pods
    request: Kueue admits no workload asking for a resource its queue does not cover, so
    that tenant's jobs all stay pending."""
    snap = queues.snapshot
    out = []
    for cq in sorted(set(tenant_queues(tenants, queues).values())):
        missing = [r for r in REQUESTED if snap.cluster_queues[cq].group_of(r) is None]
        if missing:
            out.append(f"ClusterQueue {cq} does not cover {', '.join(missing)}, which the "
                       "spec's pods request: Kueue admits none of its jobs (fix: add "
                       f"{', '.join(missing)} to a resource group's coveredResources, as "
                       "kube render writes them)")
    return out


def route(jobs: list[Job], queues: KueueConfig, tenants: list[str]) -> list[Job]:
    """The spec's jobs (queued by tenant) in their tenants' ClusterQueues; every tenant in
    ``tenants`` must have one, whether or not its jobs arrive in the simulated span."""
    by_tenant = tenant_queues(sorted({*tenants, *(j.queue for j in jobs)}), queues)
    return [j if by_tenant[j.queue] == j.queue else dataclasses.replace(
        j, queue=by_tenant[j.queue], local_queue=j.local_queue or j.queue) for j in jobs]


def simulate_platform(platform: Platform, plan: Plan, seed: int = 0, *, queues: KueueConfig,
                      policy: str = "bestfit", months: float = 1.0, strategy: str = "spec",
                      warm_nodes: int = 1, mtbf_h: float | None = None, mttr_h: float = 24.0,
                      progress: Callable[[float], None] | None = None) -> SimResult:
    """Simulate ``months`` of the platform's workloads on its pools and queues.

    ``queues``: the Kueue objects the tree renders, read back
    (:func:`aiplat.ops.sim_month.tree_queues`, or ``from_objects`` on a folder)."""
    jobs = route(platform_jobs(platform, plan, seed, months), queues,
                 [w.tenant for w in plan.workloads])
    strategies = platform_strategies(platform, strategy, warm_nodes=warm_nodes,
                                     mtbf_h=mtbf_h, mttr_h=mttr_h)
    return simulate(platform_nodes(platform, plan), jobs,
                    queues, policy=policy,
                    strategies=strategies, seed=seed, horizon=months * 730 * 3600,
                    progress=progress)
