"""Kueue's quota model: ClusterQueues in (hierarchical) cohorts, and what fits where.

This module holds the simulator's configuration (what the Kueue objects say, in the
simulator's units); the simulator decides on it as Kueue objects (:mod:`aiplat.sched.sim_queues`)
with the replay's quota tree (:mod:`aiplat.kueue.quota`), flavor assigner and
preemption search (:mod:`aiplat.sched.admission`).

Quota semantics (Kueue v0.19), per (flavor, resource) ``fr``:
- A ClusterQueue's *subtree quota* is its nominal quota; a cohort's is its own nominal quota
  plus, for each child, the child's subtree quota minus what the child keeps private.
- *Guaranteed* (private) quota of a node with a ``lendingLimit``: subtree quota − lendingLimit;
  without one, nothing is private.
- A cohort's *usage* is the sum over its children of the part of their usage above their
  guaranteed quota.
- *Available* to a node: its unused guaranteed quota plus what its parent has available,
  capped by ``borrowingLimit`` (unset = the whole cohort) as Kueue computes it:
  ``min(parentAvailable, subtreeQuota − guaranteed − usedInParent + borrowingLimit)``.
- A workload *borrows* when its ClusterQueue's usage would exceed its nominal quota.

Resources are named as in the ClusterQueue (``nvidia.com/gpu`` in GPUs, ``cpu`` in cores,
``memory`` in GiB); a workload that requests a resource its ClusterQueue does not cover is
not admitted, as in Kueue.
Names follow the spec: a flavor is a ``pool``, a ClusterQueue is a ``tenant``.

What the objects say is read once, by :mod:`aiplat.kueue.snapshot` (in Kueue's integer
units); :mod:`aiplat.sched.kueue_objects` converts it to this configuration (GPUs, cores,
GiB as floats). The policy shapes (``Preemption``, ``AdmissionFairSharing``,
``WaitForPodsReady``) are the snapshot's own.
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
