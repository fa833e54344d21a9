"""Kueue's admission cycle: queue order, flavor assignment, preemption, fair sharing.

Per the Kueue v0.19 documentation (concepts: ClusterQueue, cohort, preemption, fair sharing,
admission fair sharing):

- Inside a ClusterQueue, pending workloads are ordered by priority, then creation time
  (with admission fair sharing: first by their LocalQueue's decayed usage, usage
  α = 1 − 0.5^(Δt/halfLife), plus an entry penalty). Each cycle takes one head per queue.
  ``StrictFIFO``: a head that does not fit blocks its queue. ``BestEffortFIFO``: it is set
  aside until capacity in its cohort changes, and the next workload gets its turn.
- Heads across queues: without fair sharing, those that fit without borrowing first, then
  higher priority, then older. With fair sharing, a tournament up the cohort tree, each level
  preferring the candidate whose subtree has the lowest weighted dominant resource share with
  the candidate added (ties: non-borrowing, priority, age); here computed as a lexicographic
  order over the path root → queue, once per cycle.
- Flavor assignment walks the queue's flavors in order: a flavor where the workload fits
  without borrowing wins; one where it fits by borrowing wins at once with
  ``whenCanBorrow: Borrow``, else is remembered (``TryNextFlavor``); one where it fits only by
  preempting wins at once with ``whenCanPreempt: Preempt``, else is remembered.
- Classic preemption: candidates are admitted workloads on the flavor, in the same queue as
  ``withinClusterQueue`` allows, and in borrowing queues of the cohort as
  ``reclaimWithinCohort`` allows — or, when the preemptor itself would borrow, only
  lower-priority ones under ``borrowWithinCohort`` (up to ``maxPriorityThreshold``). Order:
  other queues first, then lowest priority, then most recently admitted. Candidates are
  removed until the workload fits (skipping queues that stopped borrowing), then any victim
  not needed is given back (last removed kept).
- Fair-sharing preemption: candidates in other queues are the workloads of every borrowing
  ClusterQueue of the cohort tree that ``reclaimWithinCohort`` allows, whether or not the
  preemptor itself borrows (``borrowWithinCohort`` is classic only). The queue with the
  highest share loses its lowest-priority, newest workload first, if the first strategy
  allows it (``LessThanOrEqualToFinalShare`` — the preemptor's share with the new workload ≤
  the target's share without the victim), then the target is chosen again; candidates that
  fail wait for the second strategy, used only if the workload still does not fit
  (``LessThanInitialShare`` — < the target's share with the victim; at most one per queue).
  Same-queue candidates come after.

Eviction is immediate in the simulation (Kueue waits for the victims to terminate).
"""

from __future__ import annotations

import heapq
from typing import Any, Protocol

import numpy as np

from aiplat.sched.cluster import ClusterState
from aiplat.sched.kueue import FR, KueueConfig, QuotaTree
from aiplat.sched.workload import Job, Run

_Run = Run


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
    def start(self, run: Run) -> None: ...
    def admitted(self, run: Run) -> None: ...

FIT, BORROW, PREEMPT, NOFIT = 0, 1, 2, 3


class Admission:
    def __init__(self, config: KueueConfig, sim: Host) -> None:
        self.config = config
        self.sim = sim
        self.tree = QuotaTree(config)
        # Pending workloads of a queue, bucketed by shape (priority, LocalQueue, request):
        # a FIFO heap per bucket. BestEffortFIFO sets aside a whole bucket when its head does
        # not fit (a later workload of the same shape cannot fit either) until capacity in
        # the cohort changes: the cost of a cycle grows with shapes, not with queue length.
        # Shapes are interned to small ints: hashing them once per job, not per look-up.
        self.buckets: dict[str, dict[int, list[tuple[Any, ...]]]] = {q: {} for q in self.tree.cq}
        self.blocked: dict[str, set[int]] = {q: set() for q in self.tree.cq}
        self._shapes: list[tuple[Any, ...]] = []
        self._shape_job: list[Job] = []  # a job of each shape (for its quota need)
        self._topology: list[bool] = []  # does the shape ask for topology-aware placement
        self._quota_shape: list[int] = []  # shapes with the same pods and pool share one
        self._quota_shape_id: dict[tuple[Any, ...], int] = {}
        self._shape_id: dict[tuple[Any, ...], int] = {}
        self._run_shape: dict[str, int] = {}
        self._needs: dict[tuple[int, str], dict[FR, float]] = {}
        self.admitted: dict[str, dict[str, _Run]] = {q: {} for q in self.tree.cq}
        self.dirty: set[str] = set()
        self._seq = 0
        self._root: dict[str, str] = {}
        members: dict[str, list[str]] = {}
        for q in self.tree.cq:
            root = self.tree.path(q)[-1]
            key = self.tree.key(root)
            self._root[q] = key
            members.setdefault(key, []).append(q)
        self._members = members
        self._flavors = {q.name: [f.flavor for f in q.flavors] for q in config.cluster_queues}
        self._lq: dict[tuple[str, str], list[float]] = {}  # usage, last t, current GPUs
        self._can_host: dict[tuple[int, str], bool] = {}
        self._shape_totals: dict[int, tuple[int, int, int]] = {}

    # ------------------------------------------------------------------ bookkeeping

    def flavors(self, cq: str) -> list[str]:
        if cq not in self._flavors:
            raise ValueError(f"job queue {cq!r} is not a ClusterQueue ({', '.join(self._flavors)})")
        return self._flavors[cq]

    def arrive(self, run: _Run) -> None:
        q = run.job.queue
        self.flavors(q)
        run.state = "pending"
        bucket = self.buckets[q].setdefault(self._shape(run), [])
        heapq.heappush(bucket, (run.job.submit, self._seq, run.job.name, run.epoch))
        self._seq += 1
        self.dirty.add(q)

    def _shape(self, run: _Run) -> int:
        got = self._run_shape.get(run.job.name)
        if got is None:
            j = run.job
            pods = tuple((p.count, p.request, p.topology) for p in j.podsets)
            shape = (j.priority, j.local_queue, pods, j.pool)
            got = self._shape_id.get(shape)
            if got is None:
                got = self._shape_id[shape] = len(self._shapes)
                self._shapes.append(shape)
                self._shape_job.append(j)
                self._topology.append(any(p.topology is not None for p in j.podsets))
                # shapes that differ only in priority or local queue need the same quota
                self._quota_shape.append(self._quota_shape_id.setdefault(
                    (pods, j.pool), len(self._quota_shape_id)))
            self._run_shape[run.job.name] = got
        return got

    def release(self, run: _Run) -> None:
        q = run.job.queue
        if self.admitted[q].pop(run.job.name, None) is not None:
            self.tree.add(q, run.need, -1.0)
            self._lq_add(run, -run.job.gpus)
            self._unpark_cohort(q)

    def capacity_changed(self, pool: str) -> None:
        for q, flavors in self._flavors.items():
            if pool in flavors:
                self._unpark(q)

    def _unpark_cohort(self, q: str) -> None:
        for member in self._members[self._root[q]]:
            self._unpark(member)

    def _unpark(self, q: str) -> None:
        """Capacity changed: give set-aside buckets another turn. In a queue that cannot
        preempt, a bucket without topology requests is admitted on quota alone, so one that
        still does not fit its quota on any flavor stays aside (exact, and much cheaper
        than re-trying its head)."""
        blocked = self.blocked[q]
        if blocked:
            pre = self.tree.cq[q].preemption
            if (pre.within_cluster_queue == "Never" and pre.reclaim_within_cohort == "Never"
                    and pre.borrow_within_cohort == "Never"):
                room: dict[FR, float] = {}  # the tree is unchanged meanwhile: ask once
                verdict: dict[int, bool] = {}  # per shape job: buckets differ in priority
                topology = self._topology
                self.blocked[q] = {sid for sid in blocked if not topology[sid]
                                   and not self._quota_fits(q, sid, room, verdict)}
            else:
                blocked.clear()
        self.dirty.add(q)

    def _quota_fits(self, q: str, sid: int, room: dict[FR, float],
                    verdict: dict[int, bool] | None = None) -> bool:
        """Does the bucket's shape fit ``q``'s quota on some flavor? ``room`` caches the
        queue's available quota per flavor and resource, ``verdict`` the answer per shape
        job, for calls on an unchanged tree."""
        job = self._shape_job[sid]
        if verdict is not None:
            key = self._quota_shape[sid]
            got = verdict.get(key)
            if got is None:
                got = verdict[key] = self._quota_fits(q, sid, room)
            return got
        node = self.tree.queue(q)
        for flavor in self._flavors[q]:
            if job.pool is not None and flavor != job.pool:
                continue
            need = self._needs.get((sid, flavor))
            if need is None:
                need = self._needs[(sid, flavor)] = job.need(flavor, self.tree.covered(q, flavor))
            ok = True
            for fr, amount in need.items():
                if fr not in room:
                    room[fr] = self.tree.available(node, fr)
                if amount > room[fr] + 1e-9:
                    ok = False
                    break
            if ok:
                return True
        return False

    # ------------------------------------------------------------------ admission fair sharing

    def _lq_usage(self, run: _Run) -> float:
        afs = self.config.admission_fair_sharing
        if afs is None:
            return 0.0
        key = (run.job.queue, run.job.local_queue)
        rec = self._lq.setdefault(key, [0.0, self.sim.now, 0.0])
        dt = self.sim.now - rec[1]
        if dt > 0:
            alpha = 1 - 0.5 ** (dt / afs.half_life_s)
            rec[0] = (1 - alpha) * rec[0] + alpha * rec[2]
            rec[1] = self.sim.now
        return rec[0]

    def _lq_add(self, run: _Run, gpus: float) -> None:
        afs = self.config.admission_fair_sharing
        if afs is None:
            return
        self._lq_usage(run)
        rec = self._lq[(run.job.queue, run.job.local_queue)]
        rec[2] += gpus
        if gpus > 0:
            rec[0] += afs.entry_penalty

    # ------------------------------------------------------------------ the cycle

    def _front(self, bucket: list[tuple[Any, ...]]) -> _Run | None:
        while bucket:
            _, _, name, epoch = bucket[0]
            run = self.sim.runs[name]
            if run.state == "pending" and run.epoch == epoch:
                return run
            heapq.heappop(bucket)
        return None

    def _head(self, q: str) -> tuple[int, _Run] | None:
        """The queue's next workload (skipping buckets set aside), with its bucket."""
        best: tuple[Any, ...] | None = None
        out: tuple[int, _Run] | None = None
        afs = self.config.admission_fair_sharing is not None
        blocked = self.blocked[q]
        for shape, bucket in list(self.buckets[q].items()):
            if shape in blocked:
                continue
            run = self._front(bucket)
            if run is None:
                del self.buckets[q][shape]
                continue
            key = (self._lq_usage(run) if afs else 0.0, -run.job.priority, bucket[0][0],
                   bucket[0][1])
            if best is None or key < best:
                best, out = key, (shape, run)
        return out

    def cycle(self) -> None:
        while self.dirty:
            heads = []
            for q in sorted(self.dirty):
                got = self._head(q)
                if got is not None:
                    heads.append((q, got[1], self.assign(q, got[1]), got[0]))
            self.dirty.clear()
            heads.sort(key=self._order)
            version = self.tree.version
            for q, run, first, shape in heads:
                # usage unchanged since the head was assessed: the same answer
                same = version == self.tree.version and run.state == "pending"
                mode, flavor, need, victims = first if same else self.assign(q, run)
                admitted = False
                if mode in (FIT, BORROW) or (mode == PREEMPT and victims):
                    if victims:
                        run.preempted_at = self.sim.now
                    for v in victims:
                        self.sim.evict(v, reason="preempted")
                    admitted = self._admit(q, run, flavor, need)
                if admitted:  # no longer pending: _front drops it from its bucket
                    self.dirty.add(q)
                elif self.tree.cq[q].queueing_strategy == "BestEffortFIFO":
                    self._block(q, shape)
                    self.dirty.add(q)

    def _block(self, q: str, sid: int) -> None:
        """Set aside the bucket that failed and every bucket that cannot fare better: same
        pool pin, no topology, needs at least as much of everything, and (when the queue may
        preempt) no higher priority. Without borrowWithinCohort a bigger need never opens
        more victims, so this is exact."""
        blocked = self.blocked[q]
        blocked.add(sid)
        shape = self._shapes[sid]
        pre = self.tree.cq[q].preemption
        if pre.borrow_within_cohort != "Never" or self._topology[sid]:
            return
        preempts = pre.within_cluster_queue != "Never" or pre.reclaim_within_cohort != "Never"
        mine = self._totals(sid)
        for oid in self.buckets[q]:
            if oid in blocked:
                continue
            other = self._shapes[oid]
            if self._topology[oid]:
                continue
            if other[3] != shape[3] or (preempts and other[0] > shape[0]):
                continue
            theirs = self._totals(oid)
            if all(b >= a for a, b in zip(mine, theirs, strict=True)):
                blocked.add(oid)

    def _totals(self, sid: int) -> tuple[int, int, int]:
        got = self._shape_totals.get(sid)
        if got is None:
            pods = self._shapes[sid][2]
            got = self._shape_totals[sid] = (
                sum(c * r.gpu_total_milli for c, r, _ in pods),
                sum(c * r.cpu_milli for c, r, _ in pods),
                sum(c * r.memory_mib for c, r, _ in pods))
        return got

    def _order(self, item: tuple[str, _Run, tuple[int, str, dict[FR, float], list[_Run]],
                                 int]) -> tuple[Any, ...]:
        q, run, (mode, _, need, _), _ = item
        borrows = mode != FIT
        base = (borrows, -run.job.priority, run.job.submit)
        if not self.config.fair_sharing:
            return base
        extra = self.tree.with_extra(q, need)
        shares = tuple(self.tree.share(n, extra.get(self.tree.key(n)))
                       for n in reversed(self.tree.path(q)[:-1]))
        return (*shares, *base)

    def _admit(self, q: str, run: _Run, flavor: str, need: dict[FR, float]) -> bool:
        run.flavor = flavor
        run.need = need
        if any(p.topology is not None for p in run.job.podsets):
            # TAS decides placement during admission: no room in the topology, no admission.
            if not self.sim.try_place(run):
                return False
            self._reserve(q, run)
            run.state = "admitted"
            run.admitted_at = self.sim.now
            self.sim.start(run)
            return True
        self._reserve(q, run)
        self.sim.admitted(run)
        return True

    def _reserve(self, q: str, run: _Run) -> None:
        self.tree.add(q, run.need, 1.0)
        self.admitted[q][run.job.name] = run
        self._lq_add(run, run.job.gpus)

    # ------------------------------------------------------------------ flavors

    def assign(self, q: str, run: _Run) -> tuple[int, str, dict[FR, float], list[_Run]]:
        spec = self.tree.cq[q]
        remembered: tuple[int, str, dict[FR, float], list[_Run]] | None = None
        for flavor in self._flavors[q]:
            if run.job.pool is not None and flavor != run.job.pool:
                continue
            if not self._pool_can_host(run, flavor):
                continue
            nkey = (self._shape(run), flavor)
            need = self._needs.get(nkey)
            if need is None:
                need = self._needs[nkey] = run.job.need(flavor, self.tree.covered(q, flavor))
            if self.tree.fits(q, need):
                if not self.tree.borrows(q, need):
                    return FIT, flavor, need, []
                if spec.when_can_borrow == "Borrow":
                    return BORROW, flavor, need, []
                if remembered is None or remembered[0] > BORROW:
                    remembered = (BORROW, flavor, need, [])
                continue
            # one preemption per workload per instant: no eviction ping-pong at one time
            victims = [] if run.preempted_at == self.sim.now else self.victims(
                q, run, flavor, need)
            if victims:
                if spec.when_can_preempt == "Preempt":
                    return PREEMPT, flavor, need, victims
                if remembered is None:
                    remembered = (PREEMPT, flavor, need, victims)
        return remembered or (NOFIT, "", {}, [])

    def _pool_can_host(self, run: _Run, flavor: str) -> bool:
        key = (self._shape(run), flavor)
        got = self._can_host.get(key)
        if got is None:
            got = self._can_host[key] = self._pool_can_host_now(run, flavor)
        return got

    def _pool_can_host_now(self, run: _Run, flavor: str) -> bool:
        """Could the pool hold every pod set if it were empty (capacities never change)?"""
        idx = self.sim.pool_nodes.get(flavor)
        if idx is None:
            return False
        st = self.sim.state
        for p in run.job.podsets:
            r = p.request
            fit = (st.cpu_cap[idx] >= r.cpu_milli) & (st.mem_cap[idx] >= r.memory_mib)
            if r.num_gpu:
                fit &= st.model_ok(r.gpu_models)[idx] & (st.gpu_count[idx] >= r.num_gpu)
            if not fit.any():
                return False
        return True

    # ------------------------------------------------------------------ preemption

    def _same_queue(self, q: str, run: _Run, flavor: str) -> list[_Run]:
        rule = self.tree.cq[q].preemption.within_cluster_queue
        p = run.job.priority
        out = []
        for r in self.admitted[q].values():
            if r.flavor != flavor:
                continue
            rp = r.job.priority
            if (rule == "LowerPriority" and rp < p) or (
                rule == "LowerOrNewerEqualPriority"
                and (rp < p or (rp == p and r.job.submit > run.job.submit))
            ):
                out.append(r)
        return out

    def _cohort_candidates(self, q: str, run: _Run, flavor: str, need: dict[FR, float]
                           ) -> list[_Run]:
        pre = self.tree.cq[q].preemption
        p = run.job.priority
        fair = self.config.fair_sharing
        # Classic: a preemptor that would borrow may only take lower-priority workloads
        # under borrowWithinCohort. Fair sharing (Kueue's findCandidates): every workload of
        # a borrowing ClusterQueue in the cohort tree is a candidate as reclaimWithinCohort
        # allows, borrowing preemptor or not; the strategies then decide.
        borrows = not fair and self.tree.borrows(q, need)
        out = []
        for other in self._members[self._root[q]]:
            if other == q:
                continue
            if fair and not self.tree.is_borrowing(other):
                continue
            for r in self.admitted[other].values():
                if r.flavor != flavor:
                    continue
                rp = r.job.priority
                if borrows:
                    thr = pre.max_priority_threshold
                    ok = (pre.borrow_within_cohort == "LowerPriority" and rp < p
                          and (thr is None or rp <= thr))
                else:
                    ok = pre.reclaim_within_cohort == "Any" or (
                        pre.reclaim_within_cohort == "LowerPriority" and rp < p)
                if ok:
                    out.append(r)
        return out

    @staticmethod
    def _victim_order(r: _Run) -> tuple[float, float]:
        return (r.job.priority, -(r.admitted_at or 0.0))

    def victims(self, q: str, run: _Run, flavor: str, need: dict[FR, float]) -> list[_Run]:
        pre = self.tree.cq[q].preemption
        if (pre.within_cluster_queue == "Never" and pre.reclaim_within_cohort == "Never"
                and pre.borrow_within_cohort == "Never"):
            return []
        same = sorted(self._same_queue(q, run, flavor), key=self._victim_order)
        others = sorted(self._cohort_candidates(q, run, flavor, need), key=self._victim_order)
        if not same and not others:
            return []
        removed: list[_Run] = []
        try:
            if self.config.fair_sharing:
                self._fair_remove(q, run, need, others, removed)
                if not self.tree.fits(q, need):
                    self._greedy_remove(q, need, same, removed, other_queues=False)
            else:
                self._greedy_remove(q, need, others + same, removed, other_queues=True)
            if not self.tree.fits(q, need):
                return []
            # give back victims that are not needed, newest decision first (keep the last)
            for r in list(reversed(removed[:-1])):
                self.tree.add(r.job.queue, r.need, 1.0)
                if self.tree.fits(q, need):
                    removed.remove(r)
                else:
                    self.tree.add(r.job.queue, r.need, -1.0)
            return list(removed)
        finally:
            for r in removed:
                self.tree.add(r.job.queue, r.need, 1.0)

    def _greedy_remove(self, q: str, need: dict[FR, float], cands: list[_Run],
                       removed: list[_Run], *, other_queues: bool) -> None:
        for r in cands:
            if self.tree.fits(q, need):
                return
            if other_queues and r.job.queue != q and not self.tree.is_borrowing(r.job.queue):
                continue
            self.tree.add(r.job.queue, r.need, -1.0)
            removed.append(r)

    def _fair_remove(self, q: str, run: _Run, need: dict[FR, float], others: list[_Run],
                     removed: list[_Run]) -> None:
        """Kueue's fair-sharing preemption over candidates of other ClusterQueues: the
        target is the borrowing queue with the highest share (ties: the first name); with
        the first strategy its candidates are tried in order, the first that passes is
        removed and the target chosen again, those that fail are kept for the second
        strategy. Only if the workload still does not fit, the second strategy
        (``LessThanInitialShare``, which does not depend on the victim) takes at most the
        first retry candidate of each queue, highest share first."""
        strategies = self.config.preemption_strategies
        if not strategies:
            return
        me = self.tree.queue(q)

        def passes(strategy: str, target: str, victim: _Run) -> bool:
            node = self.tree.queue(target)
            mine = self.tree.share(me, need)
            before = self.tree.share(node)
            if strategy == "LessThanInitialShare":
                return mine < before
            self.tree.add(target, victim.need, -1.0)
            after = self.tree.share(node)
            self.tree.add(target, victim.need, 1.0)
            return mine <= after

        def pick(by_queue: dict[str, list[_Run]]) -> str | None:
            best: str | None = None
            best_share = -1.0
            for t in sorted(by_queue):
                if not by_queue[t] or not self.tree.is_borrowing(t):
                    del by_queue[t]
                    continue
                s = self.tree.share(self.tree.queue(t))
                if s > best_share:
                    best, best_share = t, s
            return best

        by_queue: dict[str, list[_Run]] = {}
        for r in others:
            by_queue.setdefault(r.job.queue, []).append(r)
        retry: list[_Run] = []
        while not self.tree.fits(q, need):
            target = pick(by_queue)
            if target is None:
                break
            cands = by_queue[target]
            while cands:
                victim = cands.pop(0)
                if passes(strategies[0], target, victim):
                    self.tree.add(target, victim.need, -1.0)
                    removed.append(victim)
                    break
                retry.append(victim)
            if not cands:
                del by_queue[target]
        if len(strategies) < 2 or self.tree.fits(q, need):
            return
        by_queue = {}
        for r in retry:
            by_queue.setdefault(r.job.queue, []).append(r)
        while not self.tree.fits(q, need):
            target = pick(by_queue)
            if target is None:
                break
            victim = by_queue.pop(target)[0]
            if passes(strategies[1], target, victim):
                self.tree.add(target, victim.need, -1.0)
                removed.append(victim)
