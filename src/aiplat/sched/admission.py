"""Kueue's admission in the simulator: the replay's decisions, applied in simulated time.

``sim run`` (and the month ``aiplat plan`` simulates) decides exactly as ``sim replay`` and
``kube why-pending`` do: :class:`Admission` *is* the replay's
:class:`~aiplat.kueue.cycle.Replay` — the same flavor assigner per pod set and
resource group, preemption target search, classic or fair-sharing head order, requeue of
inadmissible workloads per cohort tree, and evictions that complete once the cycles are
quiet — on the simulator's queues as Kueue objects (:mod:`aiplat.sched.sim_queues`). What it
adds is time and the engine (:class:`Host`): a job's arrival adds its Workload, a finish or
failure releases its quota, an admission hands the job to placement, a completed eviction
stops the victim's pods. After the events of one instant, cycles run until quiet.

One thing differs from the replay, for speed: pending workloads of a ClusterQueue are kept in
*buckets* by shape (priority, LocalQueue, pod sets, pool pin). When a bucket's first workload
is found inadmissible, the whole bucket is set aside with it, until its cohort tree's
requeue brings it back. Kueue would nominate each of them in a cycle of its own, against
the same quota (any change in between requeues the tree anyway) and reach the same answer;
only what other queues do in those cycles may be decided a few cycles earlier. Without this,
a month of an oversubscribed cohort costs a cycle per pending workload per release (a
prototype on the 30-queue benchmark: 5,000 workloads, 378,317 cycles, 136 s).

Also from the simulator: admission fair sharing orders a ClusterQueue's heads by their
LocalQueue's decayed GPU usage (α = 1 − 0.5^(Δt/halfLife), plus the entry penalty) before
priority; a pod set asking for topology-aware placement is placed at admission and stays
inadmissible (NoFit) when no domain has room, until capacity changes.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from aiplat.kueue import preempt
from aiplat.kueue.cycle import Replay, _Entry, _Pending
from aiplat.kueue.quota import Admitted
from aiplat.kueue.snapshot import PodSet
from aiplat.sched.cluster import ClusterState
from aiplat.sched.kueue import KueueConfig
from aiplat.sched.sim_queues import podsets, pool_of, to_snapshot, workload
from aiplat.sched.workload import Job, Run


class Host(Protocol):
    """What admission needs from the engine that runs it: the clock, the jobs, the nodes,
    and the four actions it decides (evict, place, start, hand over to placement). The
    engine implements it; admission never imports the engine."""

    now: float
    runs: dict[str, Run]
    state: ClusterState
    pool_nodes: dict[str, np.ndarray]

    def evict(self, run: Run, reason: str) -> None: ...
    def try_place(self, run: Run) -> bool: ...
    def fits_without(self, run: Run, victims: list[Run]) -> bool: ...
    def stop_later(self, run: Run) -> None: ...
    def start(self, run: Run) -> None: ...
    def admitted(self, run: Run) -> None: ...


@dataclass
class _Bucket:
    """Pending workloads of one shape in one ClusterQueue: heaps of (created, uid, key,
    version); ``aside`` holds the inadmissible ones."""

    need: dict[str, int]  # what one of them asks for in all, per resource
    active: list[tuple[Any, ...]] = field(default_factory=list)
    aside: list[tuple[Any, ...]] = field(default_factory=list)


def _merge(into: list[tuple[Any, ...]], other: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """One heap of both (the smaller pushed into the larger)."""
    if len(into) < len(other):
        into, other = other, into
    for item in other:
        heapq.heappush(into, item)
    return into


class Admission(Replay):
    def __init__(self, config: KueueConfig, sim: Host) -> None:
        super().__init__(to_snapshot(config))
        self.config = config
        self.sim = sim
        self.notify.clear()  # no snapshot to start from: nothing waits yet
        self.buckets: dict[str, dict[int, _Bucket]] = {q: {} for q in self.snap.cluster_queues}
        self.firsts: dict[str, list[_Pending]] = {q: [] for q in self.snap.cluster_queues}
        self._flavors = {q.name: [f.flavor for g in q.groups for f in g.flavors]
                         for q in self.snap.cluster_queues.values()}
        # per ClusterQueue and resource: its group's (flavor, resource) pairs, in order
        self._groups = {q.name: {r: tuple((f.flavor, r) for f in g.flavors)
                                 for g in q.groups for r in g.covered}
                        for q in self.snap.cluster_queues.values()}
        self._shape_id: dict[tuple[Any, ...], tuple[int, tuple[PodSet, ...]]] = {}
        self._shape_of: dict[str, int] = {}
        self._pin: list[str | None] = []  # per shape: the pool it is pinned to
        self._needs: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
        self._tas: list[bool] = []  # per shape: does it ask for topology-aware placement
        self._seq = 0
        self._version = 0
        self._hold = False  # the next arrival sits out a cycle (see Replay._release)
        self._placed: str | None = None  # the job topology-aware placement just placed
        self._lq: dict[tuple[str, str], list[float]] = {}  # usage, last t, current GPUs
        self._stopping: set[str] = set()  # victims whose pods are stopping
        self.live: set[str] = set()  # ClusterQueues that may have an active workload
        # per ClusterQueue: its buckets set aside, by their need (id of the shared dict)
        self._asides: dict[str, dict[int, set[int]]] = {q: {} for q in self.snap.cluster_queues}
        self.dirty = False

    # ------------------------------------------------------------------ the engine's calls

    def flavors(self, cq: str) -> list[str]:
        if cq not in self._flavors:
            raise ValueError(f"job queue {cq!r} is not a ClusterQueue ({', '.join(self._flavors)})")
        return self._flavors[cq]

    def arrive(self, run: Run) -> None:
        """The job's Workload enters its ClusterQueue (again, after an eviction)."""
        job = run.job
        self.flavors(job.queue)
        run.state = "pending"
        sid, shapes = self._shape(job)
        self._seq += 1
        p = _Pending(workload(job, self._seq, shapes))
        self._shape_of[job.name] = sid
        self.pending[job.queue][job.name] = p
        if self._hold:
            self._hold = False
            self.held.append(p)
        else:
            self._push(p)
            b = self.buckets[job.queue][sid]
            if (b.aside and job.queue not in self.notify
                    and self.snap.cluster_queues[job.queue].preemption.never):
                # Its likes wait for a release in the tree, and none came since: it would
                # be found inadmissible against the same quota.
                self._set_aside(job.queue, sid, b)
        self.dirty = True

    def release(self, run: Run) -> None:
        """The job finished or was stopped: its quota is released, its cohort tree's
        inadmissible workloads come back."""
        q = run.job.queue
        a = self.tree.cqs[q].workloads.get(run.job.name)
        if a is not None:
            self.tree.release(a)
            self._lq_add(run, -run.job.gpus)
            self._requeue_tree(q)
            self.dirty = True

    def capacity_changed(self, pool: str) -> None:
        """Nodes came up: workloads that found no topology domain may now."""
        self.notify.update(q for q, fl in self._flavors.items() if pool in fl)
        self.dirty = True

    def decide(self) -> None:
        """After the events of one instant: cycles until quiet."""
        if self.dirty:
            self.dirty = False
            self.until_quiet()

    # ------------------------------------------------------------------ shapes and queues

    def _shape(self, job: Job) -> tuple[int, tuple[PodSet, ...]]:
        pods = tuple((p.count, p.request, p.topology) for p in job.podsets)
        key = (job.priority, job.local_queue, pods, job.pool)
        got = self._shape_id.get(key)
        if got is None:
            got = self._shape_id[key] = (len(self._shape_id), podsets(job))
            self._pin.append(job.pool)
            self._tas.append(any(p.topology is not None for p in job.podsets))
        return got

    def _push(self, p: _Pending) -> None:
        self._version += 1
        p.version = self._version
        buckets = self.buckets[p.wl.cluster_queue]
        sid = self._shape_of[p.wl.key]
        b = buckets.get(sid)
        if b is None:
            need: dict[str, int] = {}
            for ps in p.wl.podsets:
                for r, v in ps.totals.items():
                    need[r] = need.get(r, 0) + v
            # one dict per distinct need: buckets that differ in priority share it
            need = self._needs.setdefault(tuple(sorted(need.items())), need)
            b = buckets[sid] = _Bucket(need)
        heapq.heappush(b.active, (p.wl.created, p.wl.uid, p.wl.key, p.version))
        self.live.add(p.wl.cluster_queue)

    def _heads(self) -> list[_Pending]:
        heads = []
        for name in sorted(self.live):
            p = self._head(name) if name not in self.inactive else None
            if p is None:
                self.live.discard(name)
            else:
                heads.append(p)
        return heads

    def _head(self, name: str) -> _Pending | None:
        pend = self.pending[name]
        firsts = self.firsts[name]
        if firsts:  # preemptors waiting for their victims stay first
            firsts[:] = [p for p in firsts if pend.get(p.wl.key) is p]
            ready = [p for p in firsts if not p.inadmissible]
            if ready:
                return min(ready, key=lambda p: (-p.wl.priority, p.wl.created, p.wl.uid))
        afs = self.snap.admission_fair_sharing is not None
        best: _Pending | None = None
        best_key: tuple[Any, ...] = ()
        buckets = self.buckets[name]
        empty = []
        for sid, b in buckets.items():
            heap = b.active
            p = None
            while heap:
                top = heap[0]  # (created, uid, key, version)
                p = pend.get(top[2])
                if p is not None and p.version == top[3] and not p.sticky:
                    break
                heapq.heappop(heap)
                p = None
            if p is None:
                if not b.aside:
                    empty.append(sid)
                continue
            k = (self._lq_usage(p) if afs else 0.0, -p.wl.priority, p.wl.created, p.wl.uid)
            if best is None or k < best_key:
                best, best_key = p, k
        for sid in empty:
            del buckets[sid]
        return best

    def _deliver(self) -> bool:
        moved = False
        for n in sorted(self.notify):
            buckets, asides = self.buckets[n], self._asides[n]
            never = self.snap.cluster_queues[n].preemption.never
            back = []
            for nid, sids in asides.items():
                # A queue that cannot preempt admits on unused quota alone: buckets no
                # flavor has room for would be found inadmissible again (no need to ask).
                if never and not self._may_fit(n, buckets[next(iter(sids))].need):
                    continue
                back.append(nid)
                for sid in sids:
                    b = buckets[sid]
                    b.active, b.aside = _merge(b.active, b.aside), []
            for nid in back:
                del asides[nid]
            if back:
                moved = True
                self.live.add(n)
            for p in self.firsts[n]:
                if p.inadmissible:
                    moved, p.inadmissible = True, False
                    self.live.add(n)
        self.notify.clear()
        return moved

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

    def _signature(self, heads: list[_Pending]) -> tuple[object, ...]:
        return tuple((p.wl.key, p.version, tuple(sorted((p.last or {}).items())))
                     for p in heads)

    def _requeue(self, e: _Entry) -> None:
        if e.status == "admitted":
            return
        p = e.p
        immediate = e.status in ("skipped", "preempting")
        if e.status == "preempting":
            p.last = None
            self._make_first(p)
        strict = e.cq.queueing_strategy == "StrictFIFO"
        inadmissible = not (strict or immediate or (p.last is not None and any(
            i != -1 for i in p.last.values())))
        if (e.status == "skipped" and not strict and not p.sticky and e.cq.preemption.never
                and not self._may_fit(e.cq.name, self._bucket(p).need)):
            # Kueue would nominate it again next cycle and find no flavor with room: a
            # queue that cannot preempt admits on unused quota alone.
            inadmissible = True
        if p.sticky:
            p.inadmissible = inadmissible
        elif inadmissible:  # the head and its whole bucket wait for the tree's requeue
            buckets = self.buckets[p.wl.cluster_queue]
            sid = self._shape_of[p.wl.key]
            self._set_aside(p.wl.cluster_queue, sid, buckets[sid])
            if e.cq.preemption.never and not self._tas[sid]:
                self._aside_bigger(p.wl.cluster_queue, sid)

    def _set_aside(self, cq: str, sid: int, b: _Bucket) -> None:
        b.aside, b.active = _merge(b.aside, b.active), []
        if b.aside:
            self._asides[cq].setdefault(id(b.need), set()).add(sid)

    def _aside_bigger(self, cq: str, sid: int) -> None:
        """In a queue that cannot preempt, fit is a matter of unused quota only: a bucket
        pinned alike that asks for at least as much of everything cannot fit either."""
        buckets = self.buckets[cq]
        mine = buckets[sid].need
        for oid, o in buckets.items():
            if (o.active and oid != sid and not self._tas[oid]
                    and self._pin[oid] == self._pin[sid] and o.need.keys() == mine.keys()
                    and all(o.need[r] >= v for r, v in mine.items())):
                self._set_aside(cq, oid, o)

    def _bucket(self, p: _Pending) -> _Bucket:
        return self.buckets[p.wl.cluster_queue][self._shape_of[p.wl.key]]

    def _make_first(self, p: _Pending) -> None:
        if not p.sticky:
            p.sticky = True
            self.firsts[p.wl.cluster_queue].append(p)
            self.live.add(p.wl.cluster_queue)

    # ------------------------------------------------------------------ decisions applied

    def _clock(self) -> float:
        return self.sim.now

    def _unplaceable(self, e: _Entry, flavors: dict[str, dict[str, str]],
                     victims: list[Admitted]) -> str:
        run = self.sim.runs[e.p.wl.key]
        self._set_pools(run, e, flavors)
        if all(ps.topology is None for ps in run.job.podsets):
            return ""
        if victims:  # would evicting them make room? (else they would come back at once)
            runs = [self.sim.runs[a.wl.key] for a in victims]
            if self.sim.fits_without(run, runs):
                return ""
        elif self.sim.try_place(run):
            self._placed = run.job.name
            return ""
        return "no topology domain has room for its pods"

    @staticmethod
    def _set_pools(run: Run, e: _Entry, flavors: dict[str, dict[str, str]]) -> None:
        run.pools = [pool_of(flavors.get(ps.name, {})) for ps in e.p.wl.podsets]
        run.flavor = run.pools[0] if run.pools else ""

    def _admit(self, e: _Entry, flavors: dict[str, dict[str, str]]) -> None:
        wl = e.p.wl
        self.tree.admit(Admitted(wl, flavors, dict(e.a.usage), self.sim.now))
        self._requeue_tree(e.cq.name)
        del self.pending[e.cq.name][wl.key]
        run = self.sim.runs[wl.key]
        self._lq_add(run, run.job.gpus)
        if self._placed == wl.key:  # topology-aware: placed at admission
            self._placed = None
            run.state = "admitted"
            run.admitted_at = self.sim.now
            self.sim.start(run)
        else:
            self.sim.admitted(run)

    def _complete_evictions(self) -> bool:
        """Victims stop after their pods' grace period (the engine's ``EVICTION_S``):
        their quota is held until then, and the preemptor waits."""
        for key in self.evicting:
            if key not in self._stopping:
                self._stopping.add(key)
                self.sim.stop_later(self.sim.runs[key])
        return False

    def evicted(self, name: str, same: bool) -> None:
        """The victim's pods have stopped; ``same``: it is still the admission that was
        preempted (not one after a failure and a requeue meanwhile)."""
        self._stopping.discard(name)
        got = self.evicting.pop(name, None)
        if got is not None and same:
            self._release(*got)
        self.dirty = True

    def _mark_evicted(self, t: preempt.Target, by: _Entry) -> None:
        self.sim.runs[by.p.wl.key].preempted_at = self.sim.now

    def _release(self, t: preempt.Target, by: _Entry) -> None:
        """The victim's pods are stopped: the engine releases its quota and requeues it
        (a victim its preemptor evicted before sits out a cycle, as in the replay)."""
        a = t.victim
        if a.wl.key not in self.tree.cqs[a.wl.cluster_queue].workloads:
            return
        pair = (a.wl.key, by.p.wl.key)
        self.evictions[pair] = self.evictions.get(pair, 0) + 1
        self._hold = self.evictions[pair] > 1
        self.sim.evict(self.sim.runs[a.wl.key], reason="preempted")
        self._hold = False
        p = self.pending[by.cq.name].get(by.p.wl.key)
        if p is not None:
            self._make_first(p)

    # ------------------------------------------------------------------ admission fair sharing

    def _lq_usage(self, p: _Pending) -> float:
        afs = self.snap.admission_fair_sharing
        if afs is None:
            return 0.0
        key = (p.wl.cluster_queue, p.wl.queue_name)
        rec = self._lq.setdefault(key, [0.0, self.sim.now, 0.0])
        dt = self.sim.now - rec[1]
        if dt > 0:
            alpha = 1 - 0.5 ** (dt / afs.half_life_s)
            rec[0] = (1 - alpha) * rec[0] + alpha * rec[2]
            rec[1] = self.sim.now
        return rec[0]

    def _lq_add(self, run: Run, gpus: float) -> None:
        afs = self.snap.admission_fair_sharing
        if afs is None:
            return
        p = _Pending(workload(run.job, 0, ()))
        self._lq_usage(p)
        rec = self._lq[(run.job.queue, run.job.local_queue or run.job.queue)]
        rec[2] += gpus
        if gpus > 0:
            rec[0] += afs.entry_penalty
