"""The simulator's queue manager: pending workloads in buckets by shape.

``sim run`` hands the Kueue cycle (:class:`~aiplat.kueue.cycle.Replay`) this
:class:`~aiplat.kueue.cycle.Queues` instead of Kueue's own heap per ClusterQueue. One thing
differs from Kueue's, for speed: pending workloads of a ClusterQueue are kept in *buckets*
by shape (priority, LocalQueue, pod sets, pool pin). When a bucket's first workload is found
inadmissible, the whole bucket is set aside with it, until its cohort tree's requeue brings
it back. Kueue would nominate each of them in a cycle of its own, against the same quota
(any change in between requeues the tree anyway) and reach the same answer; only what other
queues do in those cycles may be decided a few cycles earlier. Without this, a month of an
oversubscribed cohort costs a cycle per pending workload per release (a prototype on the
30-queue benchmark: 5,000 workloads, 378,317 cycles, 136 s).

In a queue that cannot preempt, a bucket comes back only when some flavor of each resource it
asks for has the unused quota (it would be found inadmissible again), and the needs refused
are remembered until quota is released in the cohort tree (admissions only lower what is
unused): the requeue an admission raises then asks nothing again.

Heads: a preemptor waiting for its victims first; then, with admission fair sharing, the
LocalQueue's decayed usage (``usage``, the caller's); then priority, creation time, UID.
Pure: no I/O.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiplat.kueue.cycle import Entry, Pending
from aiplat.kueue.quota import Tree
from aiplat.kueue.snapshot import PodSet, Snapshot
from aiplat.sched.kueue_workloads import podsets
from aiplat.sched.workload import Job


@dataclass
class _Bucket:
    """Pending workloads of one shape in one ClusterQueue: heaps of (created, uid, key,
    version); ``aside`` holds the inadmissible ones."""

    need: dict[str, int]  # what one of them asks for in all, per resource
    active: list[tuple[Any, ...]] = field(default_factory=list)
    aside: list[tuple[Any, ...]] = field(default_factory=list)


def _merge(into: list[tuple[Any, ...]], other: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """One heap of both (the smaller pushed into the larger)."""
    if not other:  # the common case: a bucket set aside again, or nothing aside
        return into
    if len(into) < len(other):
        into, other = other, into
    for item in other:
        heapq.heappush(into, item)
    return into


def _fits(room: dict[str, int], need: dict[str, int]) -> bool:
    for r, v in need.items():
        got = room.get(r)
        if got is None or got < v:
            return False
    return True


class Buckets:
    """See the module docstring; the methods are :class:`~aiplat.kueue.cycle.Queues`'."""

    def __init__(self, snap: Snapshot, tree: Tree,
                 usage: Callable[[Pending], float] | None = None) -> None:
        self.snap = snap
        self.tree = tree
        self.usage = usage
        self.pending: dict[str, dict[str, Pending]] = {q: {} for q in snap.cluster_queues}
        self.held: list[Pending] = []
        self.buckets: dict[str, dict[int, _Bucket]] = {q: {} for q in snap.cluster_queues}
        # per ClusterQueue: its buckets whose active heap is not empty
        self._active: dict[str, set[int]] = {q: set() for q in snap.cluster_queues}
        self.firsts: dict[str, list[Pending]] = {q: [] for q in snap.cluster_queues}
        # per ClusterQueue and resource: its group's (flavor, resource) pairs, in order
        self._groups = {q.name: {r: tuple((f.flavor, r) for f in g.flavors)
                                 for g in q.groups for r in g.covered}
                        for q in snap.cluster_queues.values()}
        self._shape_id: dict[tuple[Any, ...], tuple[int, tuple[PodSet, ...]]] = {}
        self._job_shape: dict[str, tuple[int, tuple[PodSet, ...]]] = {}  # by job name
        self.shape_of: dict[str, int] = {}  # workload key -> its shape
        self._pin: list[str | None] = []  # per shape: the pool it is pinned to
        self._needs: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
        self._need_of: dict[int, dict[str, int]] = {}  # the same, by id
        self._tas: list[bool] = []  # per shape: does it ask for topology-aware placement
        self._version = 0
        self.live: set[str] = set()  # ClusterQueues that may have an active workload
        # per ClusterQueue: its buckets set aside, by their need (id of the shared dict)
        self._asides: dict[str, dict[int, set[int]]] = {q: {} for q in snap.cluster_queues}
        # A queue that cannot preempt: the needs (ids) found to fit no flavor's unused quota
        # since the last release in its cohort tree (admissions only lower what is unused).
        self._never = {q.name: q.preemption.never for q in snap.cluster_queues.values()}
        self._refused: dict[str, set[int]] = {q: set() for q in snap.cluster_queues}
        self._tree_of = {q: [c.name for c in node.root().cluster_queues()]
                         if not node.root().is_cq else [q] for q, node in tree.cqs.items()}
        # Every resource group of every queue has one flavor: a flavor scan always starts
        # at it, so neither the cycle count nor the tree's generation (which decide whether a
        # scan goes on or starts over: lastAssignmentOutdated) can change a decision.
        self._single = all(len(g.flavors) == 1 for q in snap.cluster_queues.values()
                           for g in q.groups)
        self._strict = {q.name: q.queueing_strategy == "StrictFIFO"
                        for q in snap.cluster_queues.values()}

    # ------------------------------------------------------------------ shapes

    def shape(self, job: Job) -> tuple[int, tuple[PodSet, ...]]:
        """The job's shape and its pod sets as Kueue counts them (one tuple per shape)."""
        got = self._job_shape.get(job.name)
        if got is None:
            got = self._job_shape[job.name] = self._shape(job)
        return got

    def _shape(self, job: Job) -> tuple[int, tuple[PodSet, ...]]:
        pods = tuple((p.count, p.request, p.topology) for p in job.podsets)
        key = (job.priority, job.local_queue, pods, job.pool)
        got = self._shape_id.get(key)
        if got is None:
            got = self._shape_id[key] = (len(self._shape_id), podsets(job))
            self._pin.append(job.pool)
            self._tas.append(any(p.topology is not None for p in job.podsets))
        return got

    # ------------------------------------------------------------------ Queues

    def push(self, p: Pending) -> None:
        """``shape_of`` names the workload's shape (set before it enters)."""
        self._version += 1
        p.version = self._version
        buckets = self.buckets[p.wl.cluster_queue]
        sid = self.shape_of[p.wl.key]
        b = buckets.get(sid)
        if b is None:
            need: dict[str, int] = {}
            for ps in p.wl.podsets:
                for r, v in ps.totals.items():
                    need[r] = need.get(r, 0) + v
            # one dict per distinct need: buckets that differ in priority share it
            need = self._needs.setdefault(tuple(sorted(need.items())), need)
            self._need_of[id(need)] = need
            b = buckets[sid] = _Bucket(need)
        heapq.heappush(b.active, (p.wl.created, p.wl.uid, p.wl.key, p.version))
        self._active[p.wl.cluster_queue].add(sid)
        self.live.add(p.wl.cluster_queue)

    def heads(self, inactive: Mapping[str, str]) -> list[Pending]:
        heads: list[Pending] = []
        live = self.live
        if not live:
            return heads
        for name in sorted(live):
            p = self._head(name) if name not in inactive else None
            if p is None:
                live.discard(name)
            else:
                heads.append(p)
        return heads

    def _head(self, name: str) -> Pending | None:
        pend = self.pending[name]
        firsts = self.firsts[name]
        if firsts:  # preemptors waiting for their victims stay first
            firsts[:] = [p for p in firsts if pend.get(p.wl.key) is p]
            ready = [p for p in firsts if not p.inadmissible]
            if ready:
                return min(ready, key=lambda p: (-p.wl.priority, p.wl.created, p.wl.uid))
        usage = self.usage
        best: Pending | None = None
        best_key: tuple[Any, ...] = ()
        buckets = self.buckets[name]
        active = self._active[name]
        empty = []
        heappop = heapq.heappop
        for sid in active:
            heap = buckets[sid].active
            p = None
            while heap:
                top = heap[0]  # (created, uid, key, version)
                p = pend.get(top[2])
                if p is not None and p.version == top[3] and not p.sticky:
                    break
                heappop(heap)
                p = None
            if p is None:
                empty.append(sid)
                continue
            wl = p.wl
            k = (usage(p) if usage is not None else 0.0, -wl.priority, wl.created, wl.uid)
            if best is None or k < best_key:
                best, best_key = p, k
        for sid in empty:
            active.discard(sid)
            if not buckets[sid].aside:
                del buckets[sid]
        return best

    def deliver(self, notified: set[str]) -> bool:
        moved = False
        never, refused, all_asides = self._never, self._refused, self._asides
        for n in notified:  # (in any order: each queue's own state alone changes)
            asides = all_asides[n]
            if not asides and not self.firsts[n]:  # nothing waits in it
                continue
            if never[n]:  # (every need refused: the common case after an admission)
                back = [] if asides.keys() <= refused[n] else self._coming_back(n)
            else:
                back = list(asides)
            buckets = self.buckets[n]
            for nid in back:
                for sid in asides.pop(nid):
                    b = buckets[sid]
                    b.active, b.aside = _merge(b.active, b.aside), []
                    if b.active:
                        self._active[n].add(sid)
            if back:
                moved = True
                self.live.add(n)
            for p in self.firsts[n]:
                if p.inadmissible:
                    moved, p.inadmissible = True, False
                    self.live.add(n)
        return moved

    def _coming_back(self, cq: str) -> list[int]:
        """A queue that cannot preempt admits on unused quota alone: of its buckets set
        aside, those (by need) that some flavor has room for; the others would be found
        inadmissible again (no need to ask), and are remembered as refused."""
        refused = self._refused[cq]
        asides = self._asides[cq]
        back: list[int] = []
        room: dict[str, int] | None = None
        for nid in asides:
            if nid in refused:
                continue
            if room is None:
                room = self._room(cq)
            if _fits(room, self._need_of[nid]):
                back.append(nid)
            else:
                refused.add(nid)
        return back

    def requeue(self, e: Entry) -> None:
        p = e.p
        inadmissible = not e.goes_back_active()  # Kueue's rule (kueue.cycle)
        if e.status == "preempting":
            p.last = None
            self.first(p)
        strict = e.cq.queueing_strategy == "StrictFIFO"
        cq = e.cq.name
        never = self._never[cq]
        if (e.status == "skipped" and not strict and not p.sticky and never
                and not self._may_fit(cq, need := self._bucket(p).need)):
            # Kueue would nominate it again next cycle and find no flavor with room: a
            # queue that cannot preempt admits on unused quota alone.
            inadmissible = True
            self._refused[cq].add(id(need))
        if p.sticky:
            p.inadmissible = inadmissible
        elif inadmissible:  # the head and its whole bucket wait for the tree's requeue
            sid = self.shape_of[p.wl.key]
            self._set_aside(cq, sid, self.buckets[cq][sid])
            if never and not self._tas[sid]:
                self._aside_bigger(cq, sid)

    def first(self, p: Pending) -> None:
        if not p.sticky:
            p.sticky = True
            self.firsts[p.wl.cluster_queue].append(p)
            self.live.add(p.wl.cluster_queue)

    def signature(self, heads: list[Pending]) -> tuple[object, ...]:
        return tuple((p.wl.key, p.version, tuple(sorted(p.last.items())) if p.last else ())
                     for p in heads)

    def inadmissible_alone(self, p: Pending) -> bool:
        """In a queue that cannot preempt, a workload is admitted on unused quota alone: a
        head whose need no flavor's unused quota covers is NoFit or PreemptionNoCandidates
        (no candidates, ever), and goes back inadmissible (BestEffortFIFO, its scan over: one
        flavor per group). Alone in its cycle it holds no quota for a later head, and with
        one flavor per group its scan state, the cycle count and the tree's generation
        decide nothing (see ``_single``). Not claimed for a preemptor waiting first,
        partial admission (reduced counts may fit) or topology-aware placement."""
        cq = p.wl.cluster_queue
        if not self._single or not self._never[cq] or self._strict[cq] or p.sticky \
                or p.wl.partial:
            return False
        sid = self.shape_of[p.wl.key]
        if self._tas[sid]:
            return False
        node = self.tree.cqs[cq]
        groups = self._groups[cq]
        available = self.tree.available
        for r, v in self.buckets[cq][sid].need.items():
            # the flavor assigner's test: the request within max(0, unused quota)
            if v > 0 and not any(max(available(node, fr), 0) >= v for fr in groups.get(r, ())):
                return True
        return False

    # ------------------------------------------------------------------ setting aside

    def released(self, cq: str) -> None:
        """Quota was released in ``cq``'s cohort tree: what was refused may fit now."""
        for q in self._tree_of[cq]:
            self._refused[q].clear()

    def aside_if_waiting(self, cq: str, sid: int, notified: bool) -> None:
        """A workload just arrived in bucket ``sid``: in a queue that cannot preempt, its
        likes wait for a release in the tree, and when none came since (``notified``
        False) it would be found inadmissible against the same quota."""
        b = self.buckets[cq][sid]
        if b.aside and not notified and self.snap.cluster_queues[cq].preemption.never:
            self._set_aside(cq, sid, b)

    def _may_fit(self, cq: str, need: dict[str, int]) -> bool:
        """Does some flavor of each requested resource's group have its unused quota?
        (Pinned buckets are checked on every flavor: looser, still safe.)"""
        node = self.tree.cqs[cq]
        groups = self._groups[cq]
        available = self.tree.available
        for r, v in need.items():
            for fr in groups.get(r, ()):
                if available(node, fr) >= v:
                    break
            else:  # no flavor has room, or no group covers it
                return False
        return True

    def _room(self, cq: str) -> dict[str, int]:
        """Per covered resource, the most unused quota one flavor of its group has now:
        ``_fits(room, need)`` is ``_may_fit(cq, need)`` for every need, asked once."""
        node = self.tree.cqs[cq]
        available = self.tree.available
        room = {}
        for r, frs in self._groups[cq].items():
            if len(frs) == 1:
                room[r] = available(node, frs[0])
            elif frs:
                room[r] = max([available(node, fr) for fr in frs])
        return room

    def _set_aside(self, cq: str, sid: int, b: _Bucket) -> None:
        b.aside, b.active = _merge(b.aside, b.active), []
        active = self._active[cq]
        active.discard(sid)
        if not active and not self.firsts[cq]:  # nothing left for heads() to look at
            self.live.discard(cq)
        if b.aside:
            asides = self._asides[cq]
            same = asides.get(id(b.need))
            if same is None:
                asides[id(b.need)] = {sid}
            else:
                same.add(sid)

    def _aside_bigger(self, cq: str, sid: int) -> None:
        """In a queue that cannot preempt, fit is a matter of unused quota only: a bucket
        pinned alike that asks for at least as much of everything cannot fit either."""
        buckets = self.buckets[cq]
        mine = buckets[sid].need
        pin = self._pin[sid]
        for oid in list(self._active[cq]):
            o = buckets[oid]
            if (o.active and oid != sid and not self._tas[oid] and self._pin[oid] == pin
                    and (o.need is mine  # the same need (one dict per distinct need)
                         or (o.need.keys() == mine.keys()
                             and all(o.need[r] >= v for r, v in mine.items())))):
                self._set_aside(cq, oid, o)

    def _bucket(self, p: Pending) -> _Bucket:
        return self.buckets[p.wl.cluster_queue][self.shape_of[p.wl.key]]
