"""The simulator's queues: Kueue objects, as Kueue's cycle decides on them.

A :class:`KueueConfig` *is* a :class:`~aiplat.kueue.snapshot.Snapshot` in Kueue's integer
units (``sim run``'s admission hands it to :class:`~aiplat.kueue.cycle.Replay` as it is)
plus the notes on what the simulator does not model. It comes from one of two edges:

- Kueue objects, read once by :func:`aiplat.kueue.snapshot.parse`
  (:func:`aiplat.sched.kueue_objects.from_objects`): resource groups, flavor order,
  fungibility, stop policy and cohorts exactly as read;
- code (tests, trace replays, benchmarks): :func:`queues` with the builders below
  (:class:`ClusterQueue`, :class:`Cohort`, :class:`FlavorQuotas`, :class:`Quota`), which take
  the simulator's units (GPUs, cores, GiB) and are converted once, here; flavors that cover
  the same resources form one resource group, in their order.

Either way the simulator adjusts two things: the whole-GPU resource names of a flavor (the
device plugin's and DRA DeviceClasses) are one ``nvidia.com/gpu``, in **milli-GPUs**, so a
time-sliced or MPS share (half a GPU) is charged what it holds (:func:`merge_gpus`; the
builders' GPUs are scaled alike); and a flavor is a pool (:func:`simulated`): every flavor
carries the label ``aiplat.io/pool=<its name>`` (taints and tolerations are dropped: the
spec's pods tolerate their pool's taints). cpu stays in milli-cores, memory in bytes.
Reports convert back at the edge (:func:`sim_units`).
Names follow the spec: a flavor is a ``pool``, a ClusterQueue is a ``tenant``. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from aiplat.kueue.snapshot import (
    AdmissionFairSharing,
    Flavor,
    FlavorQuota,
    Fungibility,
    Preemption,
    ResourceGroup,
    Snapshot,
    WaitForPodsReady,
)
from aiplat.kueue.snapshot import ClusterQueue as KueueQueue
from aiplat.kueue.snapshot import Cohort as KueueCohort
from aiplat.kueue.snapshot import Quota as KueueQuota

__all__ = ["FR", "GPU", "POOL_LABEL", "AdmissionFairSharing", "ClusterQueue", "Cohort",
           "FlavorQuotas", "KueueConfig", "Preemption", "QueueingStrategy", "Quota", "Strategy",
           "WaitForPodsReady", "merge_gpus", "queues", "sim_units", "simulated", "whole_gpu"]

GPU = "nvidia.com/gpu"
FR = tuple[str, str]  # (flavor, resource)
MILLI = 1000  # milli-GPUs per GPU (sched.cluster's unit)
POOL_LABEL = "aiplat.io/pool"  # the label kube render puts on a pool's nodes and flavor
_SCALE = {"cpu": 1000, "memory": 2**30, GPU: MILLI}  # the simulator's unit -> Kueue's

QueueingStrategy = Literal["BestEffortFIFO", "StrictFIFO"]
Strategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


@dataclass(frozen=True)
class KueueConfig:
    """The queues a simulation runs on (see the module docstring)."""

    snapshot: Snapshot
    unsupported: tuple[str, ...] = field(default=())  # fields read but not simulated

    @property
    def fair_sharing(self) -> bool:
        return self.snapshot.fair_sharing

    @property
    def mode(self) -> str:
        """How the queues share: what a title says ran."""
        return "fair sharing" if self.fair_sharing else "classic"

    @property
    def wait_for_pods_ready(self) -> WaitForPodsReady | None:
        return self.snapshot.wait_for_pods_ready

    @property
    def local_queues(self) -> dict[str, str]:
        """LocalQueues, "namespace/name" -> ClusterQueue: how a tenant's jobs find their
        queue (none for queues built in code)."""
        return self.snapshot.local_queues

    @property
    def weights(self) -> dict[str, float]:
        """Each ClusterQueue's fair-sharing weight."""
        return {q.name: q.weight for q in self.snapshot.cluster_queues.values()}

    def with_fair_sharing(self, on: bool) -> KueueConfig:
        """The same queues under fair sharing (``on``) or classic ordering."""
        return dataclasses.replace(
            self, snapshot=dataclasses.replace(self.snapshot, fair_sharing=on))


def sim_units(resource: str, value: int) -> float:
    """Kueue's amount in this snapshot as reports show it: GPUs, cores, GiB."""
    return value / _SCALE.get(resource, 1)


def whole_gpu(name: str) -> bool:
    """Whole-GPU resource names: the device plugin's (``nvidia.com/gpu``), the DRA driver's
    DeviceClass (``gpu.nvidia.com``) and aiplat's per-model DeviceClasses (``gpu-<model>``)."""
    return name.endswith("/gpu") or name == "gpu.nvidia.com" or name.startswith("gpu-")


# ---------------------------------------------------------------------------- the snapshot


def simulated(snap: Snapshot) -> Snapshot:
    """The snapshot ``sim run`` decides on: the queues, cohorts, LocalQueues and
    Configuration of ``snap`` (GPUs in milli-GPUs already: see :func:`merge_gpus`), one
    flavor per pool named in them, no Workloads (the jobs bring theirs), no notes."""
    groups = [g for q in snap.cluster_queues.values() for g in q.groups]
    groups += [g for c in snap.cohorts.values() for g in c.groups]
    names = {f.flavor for g in groups for f in g.flavors}
    flavors = {n: Flavor(n, {POOL_LABEL: n}) for n in sorted(names)}
    return Snapshot(flavors, dict(snap.cluster_queues), dict(snap.cohorts), [],
                    fair_sharing=snap.fair_sharing, strategies=tuple(snap.strategies),
                    admission_fair_sharing=snap.admission_fair_sharing,
                    wait_for_pods_ready=snap.wait_for_pods_ready,
                    local_queues=dict(snap.local_queues))


def merge_gpus(groups: tuple[ResourceGroup, ...]) -> tuple[ResourceGroup, ...]:
    """Whole-GPU names as one ``nvidia.com/gpu`` in milli-GPUs (their quotas add up: a
    ClusterQueue covering a device-plugin and a DRA pool lists both, one of them 0)."""
    out = []
    for g in groups:
        covered = tuple(dict.fromkeys(GPU if whole_gpu(r) else r for r in g.covered))
        flavors = []
        for f in g.flavors:
            res: dict[str, KueueQuota] = {}
            for name, q in f.resources.items():
                key, scale = (GPU, MILLI) if whole_gpu(name) else (name, 1)
                got = KueueQuota(q.nominal * scale, _times(q.borrowing_limit, scale),
                                 _times(q.lending_limit, scale))
                res[key] = _add(res[key], got) if key in res else got
            flavors.append(FlavorQuota(f.flavor, res))
        out.append(ResourceGroup(covered, tuple(flavors)))
    return tuple(out)


def _times(v: int | None, scale: int) -> int | None:
    return None if v is None else v * scale


def _add(a: KueueQuota, b: KueueQuota) -> KueueQuota:
    def opt(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)
    return KueueQuota(a.nominal + b.nominal, opt(a.borrowing_limit, b.borrowing_limit),
                      opt(a.lending_limit, b.lending_limit))


def check_cohorts(cohorts: Iterable[tuple[str, str | None]]) -> None:
    """ValueError when a cohort's parent chain comes back to itself."""
    parents = dict(cohorts)
    for name, parent in parents.items():
        seen = {name}
        p = parent
        while p is not None:
            if p in seen:
                raise ValueError(f"cohort {name}: parent chain has a cycle through {p}")
            seen.add(p)
            p = parents.get(p)


# ---------------------------------------------------------------------------- queues in code


@dataclass(frozen=True)
class Quota:
    """A quota in the simulator's units (GPUs, cores, GiB), for :func:`queues`."""

    nominal: float
    borrowing_limit: float | None = None
    lending_limit: float | None = None


@dataclass(frozen=True)
class FlavorQuotas:
    """One flavor (pool) of a queue and its quotas per resource, for :func:`queues`."""

    flavor: str
    resources: dict[str, Quota]


@dataclass(frozen=True)
class ClusterQueue:
    """A ClusterQueue written in code, for :func:`queues`."""

    name: str
    flavors: tuple[FlavorQuotas, ...]
    cohort: str | None = None
    queueing_strategy: QueueingStrategy = "BestEffortFIFO"
    preemption: Preemption = field(default_factory=Preemption)
    when_can_borrow: Literal["Borrow", "TryNextFlavor"] = "Borrow"
    when_can_preempt: Literal["Preempt", "TryNextFlavor"] = "TryNextFlavor"
    weight: float = 1.0


@dataclass(frozen=True)
class Cohort:
    """A Cohort written in code, for :func:`queues`."""

    name: str
    parent: str | None = None
    flavors: tuple[FlavorQuotas, ...] = ()
    weight: float = 1.0


def queues(cluster_queues: Iterable[ClusterQueue], cohorts: Iterable[Cohort] = (), *,
           fair_sharing: bool = False,
           admission_fair_sharing: AdmissionFairSharing | None = None,
           wait_for_pods_ready: WaitForPodsReady | None = None) -> KueueConfig:
    """Queues written in code, as the snapshot the simulator decides on (fair sharing with
    Kueue's default preemption strategies). ValueError when a name repeats, a cohort chain
    has a cycle, or flavors of one queue cover overlapping but different resources (no valid
    Kueue object)."""
    cqs = tuple(cluster_queues)
    names = [q.name for q in cqs]
    if len(set(names)) != len(names):
        raise ValueError(f"ClusterQueue names repeat: {names}")
    tree = tuple(cohorts)
    check_cohorts((c.name, c.parent) for c in tree)
    return KueueConfig(simulated(Snapshot(
        {}, {q.name: _queue(q) for q in cqs},
        {c.name: KueueCohort(c.name, c.parent, _groups(c.name, c.flavors), c.weight)
         for c in tree}, [], fair_sharing=fair_sharing,
        admission_fair_sharing=admission_fair_sharing, wait_for_pods_ready=wait_for_pods_ready)))


def _queue(q: ClusterQueue) -> KueueQueue:
    fung = Fungibility(
        when_can_borrow="TryNextFlavor" if q.when_can_borrow == "TryNextFlavor"
        else "MayStopSearch",
        when_can_preempt="MayStopSearch" if q.when_can_preempt == "Preempt"
        else "TryNextFlavor")
    return KueueQueue(q.name, _groups(q.name, q.flavors), q.cohort, q.queueing_strategy,
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


def _quota(resource: str, q: Quota) -> KueueQuota:
    scale = _SCALE.get(resource, 1)

    def units(v: float | None) -> int | None:
        return None if v is None else round(v * scale)
    nominal = units(q.nominal)
    assert nominal is not None
    return KueueQuota(nominal, units(q.borrowing_limit), units(q.lending_limit))
