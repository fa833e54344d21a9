"""The cohort tree's quota arithmetic for why-pending, over API objects (pure, ``Decimal``).

Kueue keeps one resource node per ClusterQueue and per Cohort (``pkg/cache/scheduler/
resource_node.go`` in Kueue v0.19): a Cohort may have a parent (``spec.parentName``) and its
own ``resourceGroups`` quota, and every node may set ``borrowingLimit`` and ``lendingLimit``.
Per flavor and resource:

- ``subtree``: a ClusterQueue's nominal quota; a Cohort's own nominal plus, per child, what
  the child lends up (its subtree minus what it keeps);
- ``local`` (what a node keeps for its own subtree): subtree − lendingLimit when the node has
  a lendingLimit, else nothing;
- ``usage``: a ClusterQueue's admitted usage; a Cohort's is its children's usage above their
  local quota;
- ``available``: local left, plus what the parent has available, capped by the node's
  ``borrowingLimit``; the root has its subtree minus its usage. ``potential`` is the same on
  an empty tree (the most a workload could ever get).

Besides the numbers, :meth:`QuotaTree.binding` says which level's limit caps a queue: the
lowest node whose ``borrowingLimit`` is tighter than what its parent has, else the root's
pool. The sched package has its own copy of these rules for the replay (the packages are
independent); ``tests/unit/test_pending_cohorts.py`` checks the two agree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from aiplat.kube.quantity import QuantityError, parse_quantity

Obj = dict[str, Any]
FR = tuple[str, str]  # (flavor, resource)


def _q(v: Any) -> Decimal:
    try:
        return parse_quantity(v)
    except QuantityError:
        return Decimal(0)


@dataclass(frozen=True)
class Limits:
    nominal: Decimal
    borrowing: Decimal | None = None
    lending: Decimal | None = None


def quotas(obj: Obj) -> dict[FR, Limits]:
    """A ClusterQueue's or Cohort's ``spec.resourceGroups`` per (flavor, resource)."""
    out = {}
    for rg in (obj.get("spec") or {}).get("resourceGroups") or []:
        for fl in rg.get("flavors") or []:
            for r in fl.get("resources") or []:
                out[(str(fl.get("name", "")), str(r.get("name", "")))] = Limits(
                    _q(r.get("nominalQuota", 0)),
                    _q(r["borrowingLimit"]) if r.get("borrowingLimit") is not None else None,
                    _q(r["lendingLimit"]) if r.get("lendingLimit") is not None else None)
    return out


@dataclass(eq=False)
class Node:
    kind: str  # ClusterQueue | Cohort
    name: str
    quotas: dict[FR, Limits] = field(default_factory=dict)
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    subtree: dict[FR, Decimal] = field(default_factory=lambda: defaultdict(Decimal))
    usage: dict[FR, Decimal] = field(default_factory=lambda: defaultdict(Decimal))

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.name}"

    def limits(self, fr: FR) -> Limits:
        return self.quotas.get(fr, Limits(Decimal(0)))

    def local(self, fr: FR) -> Decimal:
        lend = self.limits(fr).lending
        return max(Decimal(0), self.subtree[fr] - lend) if lend is not None else Decimal(0)

    def chain(self) -> Iterator[Node]:
        """This node, then its ancestors up to the root."""
        node: Node | None = self
        while node is not None:
            yield node
            node = node.parent


@dataclass(frozen=True)
class Binding:
    """The limit that caps a queue: ``node``'s borrowingLimit, or the root's pool."""

    node: Node
    what: str  # borrowingLimit | pool
    room: Decimal  # what that limit leaves for the queue (beyond its local quota below)


class QuotaTree:
    """ClusterQueues and Cohorts of a snapshot with their admitted usage."""

    def __init__(self, cluster_queues: list[Obj], cohorts: list[Obj],
                 usage: dict[tuple[str, str, str], Decimal]) -> None:
        self.cohorts: dict[str, Node] = {}
        self.cqs: dict[str, Node] = {}
        specs = {str((c.get("metadata") or {}).get("name", "")): c for c in cohorts}
        for name in specs:
            self._cohort(name, specs, frozenset())
        for cq in cluster_queues:
            name = str((cq.get("metadata") or {}).get("name", ""))
            node = Node("ClusterQueue", name, quotas(cq))
            self.cqs[name] = node
            spec = cq.get("spec") or {}
            parent = spec.get("cohortName") or spec.get("cohort")
            if parent:
                node.parent = self._cohort(str(parent), specs, frozenset())
                node.parent.children.append(node)
        for (cq_name, flavor, res), amount in usage.items():
            if cq_name in self.cqs:
                self.cqs[cq_name].usage[(flavor, res)] += amount
        for node in [*self.cqs.values(), *self.cohorts.values()]:
            if node.parent is None:
                self._sum(node)

    def _cohort(self, name: str, specs: dict[str, Obj], seen: frozenset[str]) -> Node:
        if name in self.cohorts:
            return self.cohorts[name]
        spec = specs.get(name)
        node = Node("Cohort", name, quotas(spec) if spec else {})  # implicit: no quota
        self.cohorts[name] = node
        parent = ((spec or {}).get("spec") or {}).get("parentName")
        if parent and parent not in seen | {name}:  # a cycle stops (lint names it)
            node.parent = self._cohort(str(parent), specs, seen | {name})
            node.parent.children.append(node)
        return node

    def _sum(self, node: Node) -> None:
        for c in node.children:
            self._sum(c)
        frs = set(node.quotas) | {fr for c in node.children for fr in c.subtree}
        for fr in frs:
            node.subtree[fr] = node.limits(fr).nominal + sum(
                (c.subtree[fr] - c.local(fr) for c in node.children), Decimal(0))
            if node.kind == "Cohort":
                node.usage[fr] = sum((max(Decimal(0), c.usage[fr] - c.local(fr))
                                      for c in node.children), Decimal(0))

    def _cap(self, node: Node, fr: FR) -> Decimal | None:
        """What ``node``'s borrowingLimit lets it take from its parent, None without one."""
        bl = node.limits(fr).borrowing
        if bl is None or node.parent is None:
            return None
        local = node.local(fr)
        stored = node.subtree[fr] - local
        used = max(Decimal(0), node.usage[fr] - local)
        return stored - used + bl

    def available(self, node: Node, fr: FR) -> Decimal:
        if node.parent is None:
            return node.subtree[fr] - node.usage[fr]
        parent = self.available(node.parent, fr)
        cap = self._cap(node, fr)
        if cap is not None:
            parent = min(parent, cap)
        return max(Decimal(0), node.local(fr) - node.usage[fr]) + parent

    def potential(self, node: Node, fr: FR) -> Decimal:
        if node.parent is None:
            return node.subtree[fr]
        avail = node.local(fr) + self.potential(node.parent, fr)
        bl = node.limits(fr).borrowing
        if bl is not None:
            avail = min(node.subtree[fr] + bl, avail)
        return avail

    def binding(self, node: Node, fr: FR) -> Binding:
        """The lowest borrowingLimit tighter than what the level above has, else the root's
        free pool."""
        n: Node = node
        while n.parent is not None:
            cap = self._cap(n, fr)
            above = self.available(n.parent, fr)
            if cap is not None and cap < above:
                return Binding(n, "borrowingLimit", max(Decimal(0), cap))
            n = n.parent
        return Binding(n, "pool", self.available(n, fr))

    def never_binding(self, node: Node, fr: FR) -> Node:
        """On an empty tree: the node whose borrowingLimit caps ``potential``, else the root."""
        n: Node = node
        while n.parent is not None:
            bl = n.limits(fr).borrowing
            if bl is not None and n.subtree[fr] + bl < n.local(fr) + self.potential(n.parent, fr):
                return n
            n = n.parent
        return n
