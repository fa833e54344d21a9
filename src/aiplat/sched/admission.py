"""Kueue's admission in the simulator: the replay's decisions, applied in simulated time.

``sim run`` (and the month ``aiplat plan`` simulates) decides exactly as ``sim replay`` and
``kube why-pending`` do: :class:`Admission` runs the replay's cycle
(:class:`~aiplat.kueue.cycle.Replay`) — the same flavor assigner per pod set and resource
group, preemption target search, classic or fair-sharing head order, requeue of inadmissible
workloads per cohort tree, and evictions that complete once the cycles are quiet — on the
simulator's queues, which are Kueue objects (:mod:`aiplat.sched.kueue`). It is a client of the
cycle, not a subclass: it brings the cycle's two declared extension points, the queue
manager (:class:`~aiplat.sched.buckets.Buckets`) and the world
(:class:`~aiplat.kueue.cycle.World`: time, placement, evictions), and adds the engine
(:class:`Host`): a job's arrival adds its Workload, a finish or failure releases its quota,
an admission hands the job to placement, a completed eviction stops the victim's pods.
After the events of one instant, cycles run until quiet.

Also from the simulator: admission fair sharing orders a ClusterQueue's heads by their
LocalQueue's decayed GPU usage (α = 1 − 0.5^(Δt/halfLife), plus the entry penalty) before
priority; a pod set asking for topology-aware placement is placed at admission and stays
inadmissible (NoFit) when no domain has room, until capacity changes.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from aiplat.kueue.cycle import Entry, Flavors, Pending, Replay
from aiplat.kueue.quota import Admitted, Tree
from aiplat.kueue.snapshot import Workload
from aiplat.sched.buckets import Buckets
from aiplat.sched.cluster import ClusterState
from aiplat.sched.kueue import KueueConfig
from aiplat.sched.kueue_workloads import pool_of, workload
from aiplat.sched.workload import Run


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


class Admission:
    """The engine's calls (:meth:`arrive`, :meth:`release`, :meth:`capacity_changed`,
    :meth:`decide`, :meth:`evicted`) and the cycle's :class:`~aiplat.kueue.cycle.World`."""

    def __init__(self, config: KueueConfig, sim: Host) -> None:
        snap = config.snapshot
        self.config = config
        self.snap = snap
        self.sim = sim
        tree = Tree(snap)
        afs = snap.admission_fair_sharing is not None
        self.queues = Buckets(snap, tree, self._lq_usage if afs else None)
        self.replay = Replay(snap, tree=tree, queues=self.queues, world=self)
        self.replay.notify.clear()  # no snapshot to start from: nothing waits yet
        self._flavors = {q.name: [f.flavor for g in q.groups for f in g.flavors]
                         for q in snap.cluster_queues.values()}
        self._seq = 0
        self._hold = False  # the next arrival sits out a cycle (see Replay.evicted)
        self._placed: str | None = None  # the job topology-aware placement just placed
        self._lq: dict[tuple[str, str], list[float]] = {}  # usage, last t, current GPUs
        self._stopping: set[str] = set()  # victims whose pods are stopping
        self.dirty = False

    @property
    def tree(self) -> Tree:
        """Kueue's quota tree with the simulation's usage."""
        return self.replay.tree

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
        sid, shapes = self.queues.shape(job)
        self._seq += 1
        p = Pending(workload(job, self._seq, shapes))
        self.queues.shape_of[job.name] = sid
        hold, self._hold = self._hold, False
        self.replay.add(p, hold)
        if not hold:
            self.queues.aside_if_waiting(job.queue, sid, job.queue in self.replay.notify)
        self.dirty = True

    def release(self, run: Run) -> None:
        """The job finished or was stopped: its quota is released, its cohort tree's
        inadmissible workloads come back."""
        q = run.job.queue
        a = self.tree.cqs[q].workloads.get(run.job.name)
        if a is not None:
            self.replay.release(a)
            self.queues.released(q)
            self._lq_add(run, -1)
            self.dirty = True

    def waiting(self) -> int:
        """How many workloads wait in their queues (every arrived job not admitted, but
        those the engine holds back for a requeue backoff)."""
        return sum(len(q) for q in self.queues.pending.values())

    def capacity_changed(self, pool: str) -> None:
        """Nodes came up: workloads that found no topology domain may now."""
        self.replay.notify.update(q for q, fl in self._flavors.items() if pool in fl)
        self.dirty = True

    def decide(self) -> None:
        """After the events of one instant: cycles until quiet."""
        if self.dirty:
            self.dirty = False
            self.replay.until_quiet()

    def evicted(self, name: str, same: bool) -> None:
        """The victim's pods have stopped; ``same``: it is still the admission that was
        preempted (not one after a failure and a requeue meanwhile)."""
        self._stopping.discard(name)
        self.replay.evicted(name, released=same)
        self.dirty = True

    # ------------------------------------------------------------------ the cycle's world

    def now(self) -> float:
        return self.sim.now

    def unplaceable(self, wl: Workload, flavors: Flavors, victims: list[Admitted]) -> str:
        run = self.sim.runs[wl.key]
        run.pools = [pool_of(flavors.get(ps.name, {})) for ps in wl.podsets]
        run.flavor = run.pools[0] if run.pools else ""
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

    def admitted(self, wl: Workload, flavors: Flavors) -> None:
        run = self.sim.runs[wl.key]
        self._lq_add(run, 1)
        if self._placed == wl.key:  # topology-aware: placed at admission
            self._placed = None
            run.state = "admitted"
            run.admitted_at = self.sim.now
            self.sim.start(run)
        else:
            self.sim.admitted(run)

    def requeued(self, e: Entry) -> None:
        """The simulator keeps no outcome rows: the jobs' runs say what became of them."""

    def preempting(self, victim: Admitted, reason: str, by: Workload) -> None:
        self.sim.runs[by.key].preempted_at = self.sim.now

    def evictions_quiet(self, victims: list[str]) -> bool:
        """Victims stop after their pods' grace period (the engine's ``EVICTION_S``):
        their quota is held until then (:meth:`evicted`), and the preemptor waits."""
        for key in victims:
            if key not in self._stopping:
                self._stopping.add(key)
                self.sim.stop_later(self.sim.runs[key])
        return False

    def evict(self, victim: Admitted, again: bool) -> None:
        """The engine stops the victim, which releases its quota (:meth:`release`) and
        requeues it (:meth:`arrive`; ``again``: it sits out the next cycle)."""
        self._hold = again
        self.sim.evict(self.sim.runs[victim.wl.key], reason="preempted")
        self._hold = False

    # ------------------------------------------------------------------ admission fair sharing

    def _lq_usage(self, p: Pending) -> float:
        return self._lq_decayed((p.wl.cluster_queue, p.wl.queue_name))

    def _lq_decayed(self, key: tuple[str, str]) -> float:
        afs = self.snap.admission_fair_sharing
        if afs is None:
            return 0.0
        rec = self._lq.setdefault(key, [0.0, self.sim.now, 0.0])
        dt = self.sim.now - rec[1]
        if dt > 0:
            alpha = 1 - 0.5 ** (dt / afs.half_life_s)
            rec[0] = (1 - alpha) * rec[0] + alpha * rec[2]
            rec[1] = self.sim.now
        return rec[0]

    def _lq_add(self, run: Run, sign: int) -> None:
        """The run's GPUs join (1) or leave (-1) its LocalQueue's usage."""
        afs = self.snap.admission_fair_sharing
        if afs is None:
            return
        gpus = sign * run.job.gpus
        key = (run.job.queue, run.job.local_queue or run.job.queue)
        self._lq_decayed(key)
        rec = self._lq[key]
        rec[2] += gpus
        if gpus > 0:
            rec[0] += afs.entry_penalty
