"""Kueue's quota model: ClusterQueues in (hierarchical) cohorts, and what fits where.

This module holds the configuration (what the Kueue objects say) and the quota arithmetic of
Kueue v0.19 (``pkg/cache`` resource nodes), as pure data and functions; the admission cycle,
preemption and placement that use it live in :mod:`aiplat.sched.admission` and
:mod:`aiplat.sched.engine`.

Quota semantics, per (flavor, resource) ``fr``:
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
``memory`` in GiB); a workload is only counted against the resources its ClusterQueue covers.
Names follow the spec: a flavor is a ``pool``, a ClusterQueue is a ``tenant``.

What the objects say is read once, by :mod:`aiplat.sched.kueue_snapshot` (in Kueue's integer
units); :mod:`aiplat.sched.kueue_objects` converts it to this configuration (GPUs, cores,
GiB as floats). The policy shapes (``Preemption``, ``AdmissionFairSharing``,
``WaitForPodsReady``) are the snapshot's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from aiplat.sched.kueue_snapshot import AdmissionFairSharing, Preemption, WaitForPodsReady

__all__ = ["FR", "GPU", "AdmissionFairSharing", "ClusterQueue", "Cohort", "FlavorQuotas",
           "KueueConfig", "Preemption", "QueueingStrategy", "Quota", "QuotaTree", "Strategy",
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


class _Node:
    __slots__ = ("borrow", "children", "guaranteed", "is_cq", "lend", "name", "nominal",
                 "parent", "subtree", "usage", "weight")

    def __init__(self, name: str, is_cq: bool, weight: float) -> None:
        self.name = name
        self.is_cq = is_cq
        self.weight = weight
        self.parent: _Node | None = None
        self.children: list[_Node] = []
        self.nominal: dict[FR, float] = {}
        self.borrow: dict[FR, float | None] = {}
        self.lend: dict[FR, float | None] = {}
        self.subtree: dict[FR, float] = {}
        self.guaranteed: dict[FR, float] = {}
        self.usage: dict[FR, float] = {}


class QuotaTree:
    """The cohort forest with live usage; see the module docstring for the arithmetic."""

    def __init__(self, config: KueueConfig) -> None:
        self.config = config
        self.version = 0  # bumped on every usage change: lets callers cache fit checks
        self.nodes: dict[str, _Node] = {}
        self.cq: dict[str, ClusterQueue] = {q.name: q for q in config.cluster_queues}
        cohorts = {c.name: c for c in config.cohorts}
        for c in config.cohorts:
            self._cohort(c.name, cohorts)
        for q in config.cluster_queues:
            node = _Node(q.name, True, q.weight)
            self._quotas(node, q.flavors)
            self.nodes["cq/" + q.name] = node
            if q.cohort is not None:
                parent = self._cohort(q.cohort, cohorts)
                node.parent = parent
                parent.children.append(node)
        self.frs: list[FR] = sorted({fr for n in self.nodes.values() for fr in n.nominal})
        for root in [n for n in self.nodes.values() if n.parent is None]:
            self._sum(root)

    def _cohort(self, name: str, cohorts: dict[str, Cohort]) -> _Node:
        key = "cohort/" + name
        if key in self.nodes:
            return self.nodes[key]
        spec = cohorts.get(name, Cohort(name))  # implicit cohort: named by a queue only
        node = _Node(name, False, spec.weight)
        self._quotas(node, spec.flavors)
        self.nodes[key] = node
        if spec.parent is not None:
            parent = self._cohort(spec.parent, cohorts)
            node.parent = parent
            parent.children.append(node)
        return node

    @staticmethod
    def _quotas(node: _Node, flavors: tuple[FlavorQuotas, ...]) -> None:
        for fq in flavors:
            for res, q in fq.resources.items():
                fr = (fq.flavor, res)
                node.nominal[fr] = q.nominal
                node.borrow[fr] = q.borrowing_limit
                node.lend[fr] = q.lending_limit

    def _sum(self, node: _Node) -> None:
        for child in node.children:
            self._sum(child)
        frs = set(node.nominal) | {fr for c in node.children for fr in c.subtree}
        for fr in frs:
            total = node.nominal.get(fr, 0.0)
            total += sum(c.subtree.get(fr, 0.0) - c.guaranteed.get(fr, 0.0)
                         for c in node.children)
            node.subtree[fr] = total
            lend = node.lend.get(fr)
            node.guaranteed[fr] = max(0.0, total - lend) if lend is not None else 0.0

    # ------------------------------------------------------------------ queries

    def queue(self, name: str) -> _Node:
        return self.nodes["cq/" + name]

    def available(self, node: _Node, fr: FR) -> float:
        usage = node.usage.get(fr, 0.0)
        if node.parent is None:
            return node.subtree.get(fr, 0.0) - usage
        guaranteed = node.guaranteed.get(fr, 0.0)
        local = max(0.0, guaranteed - usage)
        from_parent = self.available(node.parent, fr)
        limit = node.borrow.get(fr)
        if limit is not None:
            stored = node.subtree.get(fr, 0.0) - guaranteed
            used = max(0.0, usage - guaranteed)
            from_parent = min(from_parent, stored - used + limit)
        return local + from_parent

    def fits(self, cq: str, need: dict[FR, float]) -> bool:
        node = self.queue(cq)
        return all(amount <= self.available(node, fr) + 1e-9 for fr, amount in need.items())

    def borrows(self, cq: str, need: dict[FR, float]) -> bool:
        """Would the queue use more than its nominal quota with ``need`` added?"""
        node = self.queue(cq)
        return any(node.usage.get(fr, 0.0) + a > node.nominal.get(fr, 0.0) + 1e-9
                   for fr, a in need.items())

    def is_borrowing(self, cq: str) -> bool:
        node = self.queue(cq)
        return any(u > node.nominal.get(fr, 0.0) + 1e-9 for fr, u in node.usage.items())

    def covered(self, cq: str, flavor: str) -> list[str]:
        return [res for (f, res) in self.queue(cq).nominal if f == flavor]

    # ------------------------------------------------------------------ changes

    def add(self, cq: str, need: dict[FR, float], sign: float = 1.0) -> None:
        self.version += 1
        node: _Node | None = self.queue(cq)
        for fr, amount in need.items():
            node = self.queue(cq)
            delta = sign * amount
            while node is not None and delta:
                old = node.usage.get(fr, 0.0)
                new = old + delta
                if abs(new) < 1e-9:
                    new = 0.0
                node.usage[fr] = new
                g = node.guaranteed.get(fr, 0.0)
                delta = max(0.0, new - g) - max(0.0, old - g)
                node = node.parent

    # ------------------------------------------------------------------ fair sharing

    def share(self, node: _Node, extra: dict[FR, float] | None = None) -> float:
        """Weighted dominant resource share: max over resources of borrowed × 1000 /
        lendable, divided by the weight (0 weight and borrowing: infinite)."""
        if node.parent is None:
            return 0.0
        drs = 0.0
        by_res: dict[str, tuple[float, float]] = {}
        for fr in set(node.subtree) | set(node.usage) | set(extra or {}):
            usage = node.usage.get(fr, 0.0) + (extra or {}).get(fr, 0.0)
            borrowed = max(0.0, usage - node.subtree.get(fr, 0.0))
            lendable = node.parent.subtree.get(fr, 0.0)
            b, lend = by_res.get(fr[1], (0.0, 0.0))
            by_res[fr[1]] = (b + borrowed, lend + lendable)
        for borrowed, lendable in by_res.values():
            if borrowed > 0:
                drs = max(drs, borrowed * 1000 / lendable if lendable > 0 else float("inf"))
        if drs == 0:
            return 0.0
        return drs / node.weight if node.weight > 0 else float("inf")

    def path(self, cq: str) -> list[_Node]:
        """The queue and its ancestors, leaf first."""
        out = []
        node: _Node | None = self.queue(cq)
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def with_extra(self, cq: str, need: dict[FR, float]) -> dict[str, dict[FR, float]]:
        """What ``need`` adds to the usage of each node on the queue's path."""
        extra: dict[str, dict[FR, float]] = {}
        for fr, amount in need.items():
            delta = amount
            for node in self.path(cq):
                if not delta:
                    break
                key = ("cq/" if node.is_cq else "cohort/") + node.name
                extra.setdefault(key, {})[fr] = delta
                old = node.usage.get(fr, 0.0)
                g = node.guaranteed.get(fr, 0.0)
                delta = max(0.0, old + delta - g) - max(0.0, old - g)
        return extra

    def key(self, node: _Node) -> str:
        return ("cq/" if node.is_cq else "cohort/") + node.name
