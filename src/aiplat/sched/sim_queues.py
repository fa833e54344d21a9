"""The simulator's queues as Kueue objects: a :class:`Snapshot` that ``sim run`` decides on.

``sim run`` and the month ``aiplat plan`` simulates decide with the replay's code (flavor
assigner, preemption search, head ordering: :mod:`aiplat.sched.admission`), which reads a
:class:`~aiplat.kueue.snapshot.Snapshot` in Kueue's integer units. This module makes
that snapshot from the simulator's :class:`~aiplat.sched.kueue.KueueConfig`, and each job's
Kueue ``Workload``:

- queues read from objects (``KueueConfig.objects``) keep their resource groups, flavor
  order, fungibility and stop policy exactly; queues built in code (tests, trace replays)
  become one resource group per set of resources their flavors cover;
- units: cpu in milli-cores and memory in bytes as in Kueue; GPUs in **milli-GPUs** so a
  time-sliced or MPS share (half a GPU) is charged what it holds; the whole-GPU names of
  one flavor (device plugin and DRA DeviceClasses) are one resource, ``nvidia.com/gpu``;
- a flavor is a pool: every flavor carries the label ``aiplat.io/pool=<its name>`` and a
  job pinned to a pool selects it, so only that flavor fits (``check_flavor``). Taints and
  tolerations are dropped: the spec's pods tolerate their pool's taints, as ``kube render``
  writes them;
- a job's pod sets request only what they ask for (nothing of zero), so a ClusterQueue that
  does not cover a requested resource leaves the job pending, as Kueue does.

Pure: no I/O.
"""

from __future__ import annotations

import dataclasses

from aiplat.kueue.snapshot import (
    ClusterQueue,
    Cohort,
    Flavor,
    FlavorQuota,
    Fungibility,
    PodSet,
    Quota,
    ResourceGroup,
    Snapshot,
    Workload,
)
from aiplat.sched.cluster import MILLI
from aiplat.sched.kueue import GPU, FlavorQuotas, KueueConfig
from aiplat.sched.kueue import ClusterQueue as SimQueue
from aiplat.sched.kueue import Quota as SimQuota
from aiplat.sched.workload import Job

POOL_LABEL = "aiplat.io/pool"  # the label kube render puts on a pool's nodes and flavor
_SCALE = {"cpu": 1000, "memory": 2**30, GPU: MILLI}  # the simulator's unit -> Kueue's


def whole_gpu(name: str) -> bool:
    """Whole-GPU resource names: the device plugin's (``nvidia.com/gpu``), the DRA driver's
    DeviceClass (``gpu.nvidia.com``) and aiplat's per-model DeviceClasses (``gpu-<model>``)."""
    return name.endswith("/gpu") or name == "gpu.nvidia.com" or name.startswith("gpu-")


# ---------------------------------------------------------------------------- queues


def to_snapshot(config: KueueConfig) -> Snapshot:
    """The queues of ``config`` as the snapshot the admission code decides on."""
    if config.objects is not None:
        src = config.objects
        queues = {q.name: dataclasses.replace(q, groups=_merge_gpus(q.groups))
                  for q in src.cluster_queues.values()}
        cohorts = {c.name: dataclasses.replace(c, groups=_merge_gpus(c.groups))
                   for c in src.cohorts.values()}
    else:
        queues = {q.name: _queue(q) for q in config.cluster_queues}
        cohorts = {c.name: Cohort(c.name, c.parent, _groups(c.name, c.flavors), c.weight)
                   for c in config.cohorts}
    groups = [g for q in queues.values() for g in q.groups]
    groups += [g for c in cohorts.values() for g in c.groups]
    names = {f.flavor for g in groups for f in g.flavors}
    flavors = {n: Flavor(n, {POOL_LABEL: n}) for n in sorted(names)}
    return Snapshot(flavors, queues, cohorts, [], fair_sharing=config.fair_sharing,
                    strategies=tuple(config.preemption_strategies),
                    admission_fair_sharing=config.admission_fair_sharing,
                    wait_for_pods_ready=config.wait_for_pods_ready)


def _merge_gpus(groups: tuple[ResourceGroup, ...]) -> tuple[ResourceGroup, ...]:
    """Whole-GPU names as one ``nvidia.com/gpu`` in milli-GPUs (their quotas add up: a
    ClusterQueue covering a device-plugin and a DRA pool lists both, one of them 0)."""
    out = []
    for g in groups:
        covered = tuple(dict.fromkeys(GPU if whole_gpu(r) else r for r in g.covered))
        flavors = []
        for f in g.flavors:
            res: dict[str, Quota] = {}
            for name, q in f.resources.items():
                key, scale = (GPU, MILLI) if whole_gpu(name) else (name, 1)
                got = Quota(q.nominal * scale, _times(q.borrowing_limit, scale),
                            _times(q.lending_limit, scale))
                res[key] = _add(res[key], got) if key in res else got
            flavors.append(FlavorQuota(f.flavor, res))
        out.append(ResourceGroup(covered, tuple(flavors)))
    return tuple(out)


def _times(v: int | None, scale: int) -> int | None:
    return None if v is None else v * scale


def _add(a: Quota, b: Quota) -> Quota:
    def opt(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)
    return Quota(a.nominal + b.nominal, opt(a.borrowing_limit, b.borrowing_limit),
                 opt(a.lending_limit, b.lending_limit))


def _queue(q: SimQueue) -> ClusterQueue:
    fung = Fungibility(
        when_can_borrow="TryNextFlavor" if q.when_can_borrow == "TryNextFlavor"
        else "MayStopSearch",
        when_can_preempt="MayStopSearch" if q.when_can_preempt == "Preempt"
        else "TryNextFlavor")
    return ClusterQueue(q.name, _groups(q.name, q.flavors), q.cohort, q.queueing_strategy,
                        q.preemption, fung, q.weight)


def _groups(owner: str, flavors: tuple[FlavorQuotas, ...]) -> tuple[ResourceGroup, ...]:
    """Flavors that cover the same resources form one group, in their order. Flavors that
    cover overlapping but different sets are no valid Kueue object: refused."""
    by_set: dict[tuple[str, ...], list[FlavorQuota]] = {}
    for f in flavors:
        key = tuple(sorted(f.resources))
        by_set.setdefault(key, []).append(FlavorQuota(f.flavor, {
            r: _quota(r, q) for r, q in f.resources.items()}))
    sets = list(by_set)
    for i, a in enumerate(sets):
        for b in sets[i + 1:]:
            if set(a) & set(b):
                raise ValueError(f"{owner}: flavors cover {', '.join(a)} and {', '.join(b)}: "
                                 "a resource can be in one resource group only")
    return tuple(ResourceGroup(k, tuple(v)) for k, v in by_set.items())


def _quota(resource: str, q: SimQuota) -> Quota:
    scale = _SCALE.get(resource, 1)

    def units(v: float | None) -> int | None:
        return None if v is None else round(v * scale)
    nominal = units(q.nominal)
    assert nominal is not None
    return Quota(nominal, units(q.borrowing_limit), units(q.lending_limit))


# ---------------------------------------------------------------------------- workloads


def podsets(job: Job) -> tuple[PodSet, ...]:
    """The job's pod sets as Kueue counts them: per pod, what it requests (nothing of zero);
    a job pinned to a pool selects that pool's flavor."""
    selector = {POOL_LABEL: job.pool} if job.pool is not None else {}
    out = []
    for i, p in enumerate(job.podsets):
        r = p.request
        req = {"cpu": r.cpu_milli, "memory": r.memory_mib * 2**20, GPU: r.gpu_total_milli}
        out.append(PodSet(f"ps{i}", p.count, {k: v for k, v in req.items() if v},
                          node_selector=selector))
    return tuple(out)


def workload(job: Job, seq: int, shapes: tuple[PodSet, ...]) -> Workload:
    """The job's Workload; ``seq`` (its arrival order) is the UID that breaks ties among
    jobs created at the same time, as Kueue's UID does."""
    return Workload(job.name, f"{seq:010d}", job.submit, job.priority,
                    job.local_queue or job.queue, job.queue, shapes)


def pool_of(flavors: dict[str, str]) -> str:
    """The pool a pod set's pods go to: its GPU flavor, else its cpu or first one."""
    return flavors.get(GPU) or flavors.get("cpu") or next(iter(flavors.values()), "")


__all__ = ["POOL_LABEL", "podsets", "pool_of", "to_snapshot", "whole_gpu", "workload"]
