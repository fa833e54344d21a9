"""The simulator's Kueue configuration: ClusterQueues in (hierarchical) cohorts, in the
simulator's units (``nvidia.com/gpu`` in GPUs, ``cpu`` in cores, ``memory`` in GiB, floats),
for reports and queues built in code.

Kueue's semantics are :mod:`aiplat.kueue`'s, not this module's: what the objects say is read
once, by :mod:`aiplat.kueue.snapshot` (in Kueue's integer units), and
:mod:`aiplat.sched.kueue_objects` converts it to this configuration; the simulator decides on
it as Kueue objects again (:mod:`aiplat.sched.sim_queues`), with Kueue's quota tree
(:mod:`aiplat.kueue.quota`), flavor assigner and preemption search
(:mod:`aiplat.sched.admission`). The policy shapes (``Preemption``,
``AdmissionFairSharing``, ``WaitForPodsReady``) are the snapshot's own.
Names follow the spec: a flavor is a ``pool``, a ClusterQueue is a ``tenant``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from aiplat.kueue.snapshot import (
    AdmissionFairSharing,
    Preemption,
    Snapshot,
    WaitForPodsReady,
)

__all__ = ["FR", "GPU", "AdmissionFairSharing", "ClusterQueue", "Cohort", "FlavorQuotas",
           "KueueConfig", "Preemption", "QueueingStrategy", "Quota", "Strategy",
           "WaitForPodsReady"]

GPU = "nvidia.com/gpu"
FR = tuple[str, str]  # (flavor, resource)

QueueingStrategy = Literal["BestEffortFIFO", "StrictFIFO"]
Strategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


@dataclass(frozen=True)
class Quota:
    nominal: float
    borrowing_limit: float | None = None
    lending_limit: float | None = None


@dataclass(frozen=True)
class FlavorQuotas:
    """One flavor (pool) of a resource group and its quotas per resource."""

    flavor: str
    resources: dict[str, Quota]


@dataclass(frozen=True)
class ClusterQueue:
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
    name: str
    parent: str | None = None
    flavors: tuple[FlavorQuotas, ...] = ()
    weight: float = 1.0


@dataclass(frozen=True)
class KueueConfig:
    cluster_queues: tuple[ClusterQueue, ...]
    cohorts: tuple[Cohort, ...] = ()
    fair_sharing: bool = False
    preemption_strategies: tuple[Strategy, ...] = (
        "LessThanOrEqualToFinalShare", "LessThanInitialShare",
    )
    admission_fair_sharing: AdmissionFairSharing | None = None
    wait_for_pods_ready: WaitForPodsReady | None = None
    unsupported: tuple[str, ...] = field(default=())  # fields read but not simulated
    # LocalQueues, "namespace/name" -> ClusterQueue: how a tenant's jobs find their queue
    local_queues: tuple[tuple[str, str], ...] = ()
    # the objects read (resource groups, flavor order, fungibility as given): what the
    # simulator decides on (sched.sim_queues); None for queues built in code
    objects: Snapshot | None = field(default=None, compare=False, repr=False)

    @property
    def mode(self) -> str:
        """How the queues share: what a title says ran."""
        return "fair sharing" if self.fair_sharing else "classic"

    def __post_init__(self) -> None:
        names = [q.name for q in self.cluster_queues]
        if len(set(names)) != len(names):
            raise ValueError(f"ClusterQueue names repeat: {names}")
        cohorts = {c.name: c for c in self.cohorts}
        for c in self.cohorts:
            seen = {c.name}
            p = c.parent
            while p is not None:
                if p in seen:
                    raise ValueError(f"cohort {c.name}: parent chain has a cycle through {p}")
                seen.add(p)
                p = cohorts[p].parent if p in cohorts else None
