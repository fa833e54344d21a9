"""The cohort tree with usage, in Kueue's integer units: what the scheduler's snapshot answers.

One :class:`Node` per ClusterQueue and Cohort (``pkg/cache/scheduler/resource_node.go``):
- ``subtree``: a ClusterQueue's nominal quota; a cohort's own nominal plus, per child, the
  child's subtree minus what the child keeps local.
- ``local``: what a node keeps for itself: subtree − lendingLimit when a lending limit is
  set, else nothing (all of a node's quota is lent to its parent).
- ``usage``: a ClusterQueue's admitted usage; a cohort's is the part of its children's
  usage above their local quota.
- ``available``: local left plus what the parent has, capped by ``borrowingLimit``;
  ``potential``: the same on an empty tree (the most a workload could ever get).

:class:`Tree` also holds the admitted workloads per ClusterQueue and their usage, and can
take a workload out and put it back (the preemption search simulates removals that way).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiplat.kueue.snapshot import FR, Quota, ResourceGroup, Snapshot, Workload


@dataclass(slots=True)
class Admitted:
    """A workload holding quota: its flavors per pod set and resource, and its usage."""

    wl: Workload
    flavors: dict[str, dict[str, str]]
    usage: dict[FR, int]
    reserved_at: float


@dataclass(eq=False)
class Node:
    name: str
    is_cq: bool
    weight: float = 1.0
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    quotas: dict[FR, Quota] = field(default_factory=dict)
    subtree: dict[FR, int] = field(default_factory=dict)
    usage: dict[FR, int] = field(default_factory=dict)
    workloads: dict[str, Admitted] = field(default_factory=dict)  # ClusterQueues only
    _height: int = field(default=-1, repr=False, compare=False)
    _local: dict[FR, int] = field(default_factory=dict, repr=False, compare=False)

    def local(self, fr: FR) -> int:
        """Kept once asked: the quotas are fixed, and the tree asks a node only after its
        subtree is summed."""
        got = self._local.get(fr)
        if got is None:
            q = self.quotas.get(fr)
            got = max(0, self.subtree.get(fr, 0) - q.lending_limit) \
                if q is not None and q.lending_limit is not None else 0
            self._local[fr] = got
        return got

    def local_available(self, fr: FR) -> int:
        return max(0, self.local(fr) - self.usage.get(fr, 0))

    def borrow_cap(self, fr: FR) -> int | None:
        """What the node's ``borrowingLimit`` lets it hold from its parent; None without a
        limit or a parent."""
        q = self.quotas.get(fr)
        if q is None or q.borrowing_limit is None or self.parent is None:
            return None
        return _borrow_cap(self.subtree.get(fr, 0), self.local(fr), self.usage.get(fr, 0),
                           q.borrowing_limit)

    def nominal(self, fr: FR) -> int:
        q = self.quotas.get(fr)
        return q.nominal if q is not None else 0

    def ancestors(self) -> Iterator[Node]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> Node:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def borrowing_with(self, fr: FR, val: int) -> bool:
        # A ClusterQueue compares with its nominal quota, a cohort with its subtree quota.
        limit = self.nominal(fr) if self.is_cq else self.subtree.get(fr, 0)
        return limit < self.usage.get(fr, 0) + val

    def within_nominal(self, frs: set[FR] | frozenset[FR]) -> bool:
        return all(self.subtree.get(fr, 0) >= self.usage.get(fr, 0) for fr in frs)

    def height(self) -> int:
        """``getNodeHeight``: 1 for a cohort of only ClusterQueues, +1 per cohort level
        (kept: the tree's shape is fixed once built)."""
        if self._height >= 0:
            return self._height
        h = min(len(self.children), 1)
        for c in self.children:
            if not c.is_cq:
                h = max(h, c.height() + 1)
        self._height = h
        return h

    def cluster_queues(self) -> Iterator[Node]:
        for c in self.children:
            if c.is_cq:
                yield c
            else:
                yield from c.cluster_queues()


def _borrow_cap(subtree: int, local: int, use: int, limit: int) -> int:
    """What a ``borrowingLimit`` lets a node hold from its parent: what it lends up, less
    what of that it uses, plus the limit."""
    return subtree - local - max(0, use - local) + limit


def _quotas(groups: tuple[ResourceGroup, ...]) -> dict[FR, Quota]:
    return {(f.flavor, r): q for g in groups for f in g.flavors for r, q in f.resources.items()}


class Tree:
    """ClusterQueues and cohorts of a snapshot, with usage; see the module docstring."""

    def __init__(self, snap: Snapshot) -> None:
        self.cqs: dict[str, Node] = {}
        self.cohorts: dict[str, Node] = {}
        for c in snap.cohorts.values():
            self._cohort(c.name, snap)
        for q in snap.cluster_queues.values():
            node = Node(q.name, True, q.weight, quotas=_quotas(q.groups))
            self.cqs[q.name] = node
            if q.cohort:
                parent = self._cohort(q.cohort, snap)
                node.parent = parent
                parent.children.append(node)
        for node in [*self.cqs.values(), *self.cohorts.values()]:
            if node.parent is None:
                self._sum(node)
        self.generation = 0  # bumped on every usage change (Kueue's AllocatableResourceGeneration)
        self._available: dict[Node, dict[FR, int]] = {}  # answers since the last change
        self._potential: dict[tuple[int, FR], int] = {}  # quotas only: kept

    def _cohort(self, name: str, snap: Snapshot, seen: frozenset[str] = frozenset()) -> Node:
        if name in self.cohorts:
            return self.cohorts[name]
        spec = snap.cohorts.get(name)
        node = Node(name, False, spec.weight if spec else 1.0,
                    quotas=_quotas(spec.groups) if spec else {})
        self.cohorts[name] = node
        if spec is not None and spec.parent and spec.parent not in seen | {name}:
            parent = self._cohort(spec.parent, snap, seen | {name})
            node.parent = parent
            parent.children.append(node)
        return node

    def _sum(self, node: Node) -> None:
        for c in node.children:
            self._sum(c)
        frs = set(node.quotas) | {fr for c in node.children for fr in c.subtree}
        for fr in frs:
            node.subtree[fr] = node.nominal(fr) + sum(
                c.subtree.get(fr, 0) - c.local(fr) for c in node.children)

    # ------------------------------------------------------------------ queries

    def available(self, node: Node, fr: FR) -> int:
        """A node's unused local quota plus what its parent has available, capped by its
        borrowing limit. The hottest query of a simulation: the answers of every node on
        the way are kept until the usage changes (a cohort's is shared by its queues)."""
        mine = self._available.get(node)
        if mine is None:
            mine = self._available[node] = {}
        else:
            got = mine.get(fr)
            if got is not None:
                return got
        parent = node.parent
        use = node.usage.get(fr, 0)
        if parent is None:
            avail = node.subtree.get(fr, 0) - use
        else:
            theirs = self._available.get(parent)  # (asked here first: no call when kept)
            kept = theirs.get(fr) if theirs is not None else None
            avail = kept if kept is not None else self.available(parent, fr)
            q = node.quotas.get(fr)
            local = node._local.get(fr)
            if local is None:
                local = node.local(fr)
            if q is not None and q.borrowing_limit is not None:
                # _borrow_cap, inlined (the hottest query)
                cap = node.subtree.get(fr, 0) - local - max(0, use - local) + q.borrowing_limit
                avail = min(avail, cap)
            if local > use:
                avail += local - use
        mine[fr] = avail
        return avail

    def potential(self, node: Node, fr: FR) -> int:
        """The most ``node`` could get of ``fr`` with the whole tree unused."""
        key = (id(node), fr)
        got = self._potential.get(key)
        if got is None:
            got = self._potential[key] = self._potential_of(node, fr)
        return got

    def _potential_of(self, node: Node, fr: FR) -> int:
        if node.parent is None:
            return node.subtree.get(fr, 0)
        avail = node.local(fr) + self.potential(node.parent, fr)
        q = node.quotas.get(fr)
        if q is not None and q.borrowing_limit is not None:
            avail = min(node.subtree.get(fr, 0) + q.borrowing_limit, avail)
        return avail

    def fits(self, cq: Node, usage: dict[FR, int]) -> bool:
        available = self.available
        for fr, v in usage.items():  # noqa: SIM110 (a loop, not all() over a generator: hot)
            if v > 0 and available(cq, fr) < v:
                return False
        return True

    # ------------------------------------------------------------------ changes

    @contextmanager
    def on_snapshot(self) -> Iterator[None]:
        """Usage taken and given back on the cycle's snapshot only leaves the generation as
        it was: Kueue copies a ClusterQueue's AllocatableResourceGeneration from its cache
        into each cycle's snapshot (``snapshot.go``) and moves it in the cache alone, when a
        workload leaves or is updated in the queue (``clusterQueue.deleteWorkload``) or its
        quotas change; a snapshot's ``AddUsage`` (a hold, fair sharing's shares) does not."""
        gen = self.generation
        try:
            yield
        finally:
            self.generation = gen

    def add_usage(self, node: Node, usage: dict[FR, int]) -> None:
        self.generation += 1
        self._available.clear()
        for fr, amount in usage.items():
            n: Node | None = node
            val = amount
            while n is not None and val > 0:
                local = n.local_available(fr)
                n.usage[fr] = n.usage.get(fr, 0) + val
                val = val - local if val > local else 0
                n = n.parent

    def remove_usage(self, node: Node, usage: dict[FR, int]) -> None:
        self.generation += 1
        self._available.clear()
        for fr, amount in usage.items():
            n: Node | None = node
            val = amount
            while n is not None and val > 0:
                stored = n.usage.get(fr, 0) - n.local(fr)
                n.usage[fr] = n.usage.get(fr, 0) - val
                if stored <= 0:
                    break
                val = min(val, stored)
                n = n.parent

    def admit(self, a: Admitted) -> None:
        node = self.cqs[a.wl.cluster_queue]
        node.workloads[a.wl.key] = a
        self.add_usage(node, a.usage)

    def release(self, a: Admitted) -> None:
        node = self.cqs[a.wl.cluster_queue]
        if node.workloads.pop(a.wl.key, None) is not None:
            self.remove_usage(node, a.usage)
