"""Kueue's scheduling cycle over a snapshot, repeated until nothing changes: ``sim replay``.

One cycle (``pkg/scheduler/scheduler.go`` schedule):
1. *Heads*: the first pending workload of each active ClusterQueue's queue (priority, then
   creation time, then UID; a workload waiting for its victims stays first).
2. *Nominate* each head against the same state: a flavor assignment
   (:mod:`aiplat.kueue.assign`) and, when it needs preemption, its victims
   (:mod:`aiplat.kueue.preempt`).
3. *Order* the heads: classic — no borrowing first (by borrowing level), higher priority,
   older; fair sharing — the tournament down each cohort tree
   (:mod:`aiplat.kueue.fairshare`).
4. *Process* in that order: NoFit and no-candidates wait (inadmissible; a queue that cannot
   always reclaim keeps the quota it would use, so lower ones in the cohort cannot take it
   in this cycle); a head whose victims overlap an earlier head's, or that no longer fits
   after earlier heads, is skipped and retried next cycle (not re-assigned now); a head that
   needs preemption evicts its victims and waits for them (never admitted in the same
   cycle); the rest are admitted.
5. *Requeue*: skipped heads and preemptors go straight back; the others wait until quota is
   released in their cohort tree (a victim's eviction completing moves every inadmissible
   workload of the tree back) or a queue of the tree admits one: its ClusterQueue status
   changes, and the cohort controller's update of the cohorts above it
   (``CohortReconciler.Reconcile``: ``cache.AddOrUpdateCohort`` advances every queue's
   AllocatableResourceGeneration, ``qManager.AddOrUpdateCohort`` requeues the tree) brings
   the inadmissible back with their flavor scans outdated, so they scan from the first
   flavor again.

Evictions complete late: Kueue marks a victim Evicted at once, but its quota is released
only when its job controller has stopped the pods (seconds), while Kueue runs a cycle every
few milliseconds. So a victim keeps its quota (and its preemptor keeps re-evaluating and
reserving) until the cycles are quiet; then every pending eviction completes at once. The
real Kueue on the lab cluster does the same (its scheduler log, ``--zap-log-level=6``, on a
``bench/kueue_diff.py`` scenario: a preemptor waited about 15 cycles while another head
preempted too).

The engine here only applies these decisions; the decisions are pure functions of the
tree. Pure: no I/O.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from aiplat.kueue import preempt
from aiplat.kueue.assign import FIT, NOFIT, PREEMPT, Assigner, Assignment
from aiplat.kueue.fairshare import tournament
from aiplat.kueue.quota import Admitted, Node, Tree
from aiplat.kueue.snapshot import FR, ClusterQueue, Snapshot, Workload

BATCH_CYCLES = 50  # cycles that run within Kueue's 1 s requeue batch (a cycle takes ms)


@dataclass
class _Pending:
    wl: Workload
    inadmissible: bool = False
    sticky: bool = False  # a preemptor waiting for its victims stays at the head
    last: dict[tuple[int, str], int] | None = None
    last_cycle: int = 0
    last_gen: int = 0
    message: str = ""
    reason: str = ""
    version: int = 0  # of its entry in the queue's heap


@dataclass
class Outcome:
    """What became of one workload (the replay's output row)."""

    workload: str
    cluster_queue: str
    decision: str  # admitted | preempted | pending
    flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    preempted: list[str] = field(default_factory=list)  # Kueue's reasons, in order
    pending: str = ""  # active | inadmissible
    reason: str = ""
    message: str = ""
    cycle: int | None = None  # the cycle it was admitted in (None: already admitted)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workload": self.workload, "clusterQueue": self.cluster_queue,
                               "decision": self.decision}
        if self.flavors:
            out["flavors"] = self.flavors
        if self.preempted:
            out["preemptionReasons"] = self.preempted
        if self.decision != "admitted":
            out["pending"] = self.pending
            out["reason"] = self.reason
            out["message"] = self.message
        if self.cycle is not None:
            out["cycle"] = self.cycle
        return out


@dataclass
class _Entry:
    p: _Pending
    cq: ClusterQueue
    a: Assignment
    targets: list[preempt.Target]
    status: str = ""  # skipped | preempting | admitted | inadmissible


def _usage(wl: Workload, flavors: dict[str, dict[str, str]]) -> dict[FR, int]:
    usage: dict[FR, int] = {}
    for ps in wl.podsets:
        total = ps.total()
        total.setdefault("pods", ps.count)
        for res, flavor in flavors.get(ps.name, {}).items():
            fr = (flavor, res)
            usage[fr] = usage.get(fr, 0) + total.get(res, 0)
    return usage


class Replay:
    """The snapshot's state and Kueue's queues; :meth:`run` cycles until quiet."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.tree = Tree(snap)
        self.cycle = 0
        self.pending: dict[str, dict[str, _Pending]] = {q: {} for q in snap.cluster_queues}
        self.heaps: dict[str, list[tuple[Any, ...]]] = {}
        self.outcomes: dict[str, Outcome] = {}
        # victims marked Evicted whose quota is not yet released, with their preemptor
        self.evicting: dict[str, tuple[preempt.Target, _Entry]] = {}
        # how often each preemptor evicted each victim, and the victims whose requeue waits
        # one cycle (see _release)
        self.evictions: dict[tuple[str, str], int] = {}
        self.held: list[_Pending] = []
        self.inactive = self._inactive()
        # Requeues of inadmissible workloads Kueue batches (requeueBatchPeriod, 1 s): they
        # land after the active heads have had their cycles. Starting the queues is one.
        self.notify: set[str] = set(snap.cluster_queues)
        for wl in snap.workloads:
            out = Outcome(wl.key, wl.cluster_queue, "pending")
            self.outcomes[wl.key] = out
            if wl.admission is not None:
                self.tree.admit(Admitted(wl, wl.admission, _usage(wl, wl.admission),
                                         wl.admitted_at))
                out.decision, out.flavors = "admitted", wl.admission
            elif wl.active and wl.refused:  # the workload controller's DRA refusal
                out.pending, out.reason, out.message = "inadmissible", "Inadmissible", wl.refused
            elif wl.active:
                # A workload Kueue already tried waits among the inadmissible ones of a
                # BestEffortFIFO queue until the queues start (StrictFIFO keeps its head).
                strict = snap.cluster_queues[wl.cluster_queue].queueing_strategy == "StrictFIFO"
                self._add(_Pending(wl, inadmissible=wl.evaluated and not strict))
            else:
                out.pending, out.reason = "inadmissible", "Inactive"
                out.message = (f"LocalQueue {wl.queue_name} is inactive" if wl.held else
                               "The workload is deactivated (spec.active: false)")

    def _inactive(self) -> dict[str, str]:
        out = {}
        for q in self.snap.cluster_queues.values():
            missing = [f.flavor for g in q.groups for f in g.flavors
                       if f.flavor not in self.snap.flavors]
            node = self.tree.cqs[q.name]
            if q.stop_policy != "None":
                out[q.name] = f"ClusterQueue {q.name} is inactive (stopPolicy {q.stop_policy})"
            elif missing:
                out[q.name] = (f"ClusterQueue {q.name} is inactive (flavor "
                               f"{', '.join(missing)} not found)")
            elif node.parent is not None and node.root().parent is not None:
                out[q.name] = f"ClusterQueue {q.name} is inactive (cohort cycle)"
        return out

    # ------------------------------------------------------------------ queues

    def _queue_key(self, p: _Pending) -> tuple[bool, int, float, str]:
        return (not p.sticky, -p.wl.priority, p.wl.created, p.wl.uid)

    def _add(self, p: _Pending) -> None:
        self.pending[p.wl.cluster_queue][p.wl.key] = p
        if not p.inadmissible:
            self._push(p)

    def _push(self, p: _Pending) -> None:
        """Each ClusterQueue's active workloads in a heap; an entry is stale once the
        workload left, went inadmissible or was pushed again (its version moved on)."""
        p.version += 1
        heapq.heappush(self.heaps.setdefault(p.wl.cluster_queue, []),
                       (*self._queue_key(p), p.version, p.wl.key))

    def _heads(self) -> list[_Pending]:
        heads = []
        for name, heap in self.heaps.items():
            if name in self.inactive:
                continue
            queue = self.pending[name]
            while heap:
                *_, version, key = heap[0]
                p = queue.get(key)
                if p is not None and not p.inadmissible and p.version == version:
                    heads.append(p)
                    break
                heapq.heappop(heap)
        return heads

    def _requeue_tree(self, cq: str) -> None:
        """Quota was released: every inadmissible workload of the cohort tree will retry
        (``QueueAssociatedInadmissibleWorkloadsAfter``, batched: see ``notify``)."""
        root = self.tree.cqs[cq].root()
        self.notify.update([c.name for c in root.cluster_queues()] if not root.is_cq else [cq])

    def _deliver(self) -> bool:
        """The batched requeue fires: the notified queues' inadmissible workloads return."""
        moved = False
        for n in sorted(self.notify):
            for p in self.pending[n].values():
                if p.inadmissible:
                    moved = True
                    p.inadmissible = False
                    self._push(p)
        self.notify.clear()
        return moved

    # ------------------------------------------------------------------ decisions

    def _nominate(self, p: _Pending) -> _Entry:
        spec = self.snap.cluster_queues[p.wl.cluster_queue]
        if p.last is not None and self.cycle - p.last_cycle > 1 \
                and self.tree.generation > p.last_gen:
            p.last = None  # lastAssignmentOutdated
        a = Assigner(self.tree, spec, self.snap.flavors, p.wl, fair=self.snap.fair_sharing,
                     strategies=self.snap.strategies, last=p.last).assign()
        p.last, p.last_cycle, p.last_gen = dict(a.tried), self.cycle, self.tree.generation
        targets: list[preempt.Target] = []
        if a.mode == PREEMPT:
            targets = preempt.targets(self.tree, spec, p.wl, a.needs_preemption(),
                                      a.usage, fair=self.snap.fair_sharing,
                                      strategies=self.snap.strategies)
        return _Entry(p, spec, a, targets)

    def _order(self, entries: list[_Entry]) -> list[_Entry]:
        def tie(e: _Entry) -> tuple[object, ...]:
            return (-e.p.wl.priority, e.p.wl.created, e.p.wl.uid)
        if not self.snap.fair_sharing:
            return sorted(entries, key=lambda e: (e.a.borrowing, *tie(e)))
        return entries  # fair sharing: ordered as processed (tournament per pop)

    def _fits(self, node: Node, usage: dict[FR, int], taken: list[Admitted]) -> bool:
        for v in taken:
            self.tree.release(v)
        ok = self.tree.fits(node, usage)
        for v in taken:
            self.tree.admit(v)
        return ok

    def _reserve(self, e: _Entry, node: Node) -> dict[FR, int]:
        """``resourcesToReserve``: what a preemptor without candidates keeps."""
        out = {}
        for fr, v in e.a.usage.items():
            q = node.quotas.get(fr)
            used = node.usage.get(fr, 0)
            if e.a.borrowing > 0:
                out[fr] = v if q is None or q.borrowing_limit is None else min(
                    v, node.nominal(fr) + q.borrowing_limit - used)
            else:
                out[fr] = max(0, min(v, node.nominal(fr) - used))
        return {fr: v for fr, v in out.items() if v > 0}

    def _process(self, e: _Entry, taken: dict[str, Admitted], undo: list[
            tuple[Node, dict[FR, int]]], victims: list[tuple[preempt.Target, _Entry]]) -> None:
        node = self.tree.cqs[e.cq.name]
        mode = e.a.mode
        if mode == NOFIT:
            e.status, e.p.message, e.p.reason = "inadmissible", e.a.message(), "NoFit"
            return
        if mode == PREEMPT and not e.targets:
            e.status, e.p.reason = "inadmissible", "PreemptionNoCandidates"
            e.p.message = e.a.message()
            if e.cq.preemption.reclaim_within_cohort != "Any":
                held = self._reserve(e, node)
                self.tree.add_usage(node, held)
                undo.append((node, held))
            return
        if any(t.victim.wl.key in taken for t in e.targets):
            e.status = "skipped"
            e.p.message = "Workload has overlapping preemption targets with another workload"
            e.p.reason = "Skipped"
            return
        merged = list(taken.values()) + [t.victim for t in e.targets
                                         if t.victim.wl.key not in taken]
        if not self._fits(node, e.a.usage, merged):
            e.status = "skipped"
            e.p.message = "Workload no longer fits after processing another workload"
            e.p.reason = "Skipped"
            return
        flavors = {ps.name: {r: f for r, (f, _, _) in ps.flavors.items()}
                   for ps in e.a.podsets}
        why = self._unplaceable(e, flavors, [t.victim for t in e.targets])
        if why:
            e.status, e.p.message, e.p.reason = "inadmissible", why, "NoFit"
            return
        for t in e.targets:
            taken[t.victim.wl.key] = t.victim
        if mode == PREEMPT:
            self.tree.add_usage(node, e.a.usage)
            undo.append((node, e.a.usage))
            e.status = "preempting"
            msg = e.a.message()
            e.p.message = (f"{msg}. Pending the preemption of {len(e.targets)} workload(s)"
                           if msg else f"Pending the preemption of {len(e.targets)} "
                           "workload(s)")
            e.p.reason = "PendingPreemption"
            victims.extend((t, e) for t in e.targets)
            return
        self._admit(e, flavors)
        e.status = "admitted"

    def _unplaceable(self, e: _Entry, flavors: dict[str, dict[str, str]],
                     victims: list[Admitted]) -> str:
        """Why the pods of a workload that fits its quota (once ``victims`` are gone) find
        no room: topology-aware placement, which the simulator runs at admission (and a
        preemption that would not make room is not issued); the replay places no pods."""
        return ""

    def _admit(self, e: _Entry, flavors: dict[str, dict[str, str]]) -> None:
        self.tree.admit(Admitted(e.p.wl, flavors, dict(e.a.usage), self._clock()))
        # The ClusterQueue's status changes (admitted count, usage): its update event has
        # the cohort controller update every cohort above it, which requeues the tree's
        # inadmissible workloads with their flavor scans outdated.
        self._requeue_tree(e.cq.name)
        del self.pending[e.cq.name][e.p.wl.key]
        out = self.outcomes[e.p.wl.key]
        out.decision, out.flavors, out.cycle = "admitted", flavors, self.cycle
        out.pending = out.reason = out.message = ""

    def _clock(self) -> float:
        """The reservation time a new admission records (preemption takes the newest
        first): the cycle here, the simulated time in ``sim run``."""
        return float(self.cycle)

    def step(self, heads: list[_Pending] | None = None) -> bool:
        """One scheduling cycle; True when it admitted or preempted something. ``heads``:
        the queues' heads, when the caller has just taken them (nothing changed since)."""
        held, self.held = self.held, []
        try:
            return self._cycle(heads)
        finally:
            for p in held:  # back after the cycle they sat out
                p.inadmissible = False
                self._push(p)

    def _cycle(self, heads: list[_Pending] | None) -> bool:
        if heads is None:
            heads = self._heads()
        if not heads:
            return False
        self.cycle += 1
        entries = [self._nominate(p) for p in heads]
        taken: dict[str, Admitted] = {}
        undo: list[tuple[Node, dict[FR, int]]] = []
        victims: list[tuple[preempt.Target, _Entry]] = []
        for e in self._ordered(entries):
            self._process(e, taken, undo, victims)
        for node, usage in undo:
            self.tree.remove_usage(node, usage)
        for e in entries:
            self._requeue(e)
        issued = False
        for t, e in victims:
            if t.victim.wl.key not in self.evicting:
                issued = True
                self.evicting[t.victim.wl.key] = (t, e)
                self._mark_evicted(t, e)
        return issued or any(e.status == "admitted" for e in entries)

    def _ordered(self, entries: list[_Entry]) -> Any:
        if not self.snap.fair_sharing:
            yield from self._order(entries)
            return
        left = {e.cq.name: e for e in entries}
        while left:
            name = next(iter(left))
            node = self.tree.cqs[name]
            if node.parent is None:
                yield left.pop(name)
                continue
            root = node.root()
            got = tournament(self.tree, root, left, lambda e: e.a.usage,
                             lambda e: (-e.p.wl.priority, e.p.wl.created, e.p.wl.uid))
            assert got is not None
            yield left.pop(got.cq.name)

    def _requeue(self, e: _Entry) -> None:
        if e.status == "admitted":
            return
        p = e.p
        immediate = e.status in ("skipped", "preempting")
        if e.status == "preempting":
            p.sticky, p.last = True, None
        strict = e.cq.queueing_strategy == "StrictFIFO"
        p.inadmissible = not (strict or immediate or (p.last is not None and any(
            i != -1 for i in p.last.values())))
        if not p.inadmissible:
            self._push(p)
        out = self.outcomes[p.wl.key]
        out.pending = "inadmissible" if p.inadmissible else "active"
        out.reason, out.message = p.reason, p.message

    def _mark_evicted(self, t: preempt.Target, by: _Entry) -> None:
        """The Evicted and Preempted conditions: set at once, the quota still held."""
        a = t.victim
        out = self.outcomes[a.wl.key]
        out.decision, out.flavors, out.cycle = "preempted", {}, None
        out.preempted.append(t.reason)
        out.pending, out.reason = "active", "Preempted"
        out.message = (f"Preempted to accommodate a workload ({by.p.wl.key}) due to "
                       f"{_HUMAN[t.reason]}")

    def _complete_evictions(self) -> bool:
        """The job controllers have stopped the victims: their quota is released and they
        are requeued; the preemptors stay first in their queues. True: something changed."""
        for t, by in self.evicting.values():
            self._release(t, by)
        self.evicting.clear()
        return True

    def _release(self, t: preempt.Target, by: _Entry) -> None:
        """The victim's quota is released and it is requeued. A victim its preemptor has
        evicted before is a churn: it wins the next cycle's head order, is admitted, and
        is preempted again by the same workload. The real Kueue leaves that loop only by a
        race, the cache releasing the quota a cycle before the victim is back in its queue
        (fair seed 6: once after about 300 rounds, then the preemptor admitted for good;
        another run evicted the victim 1,402 times in 300 s); the replay takes that way out
        at the second round (the victim's requeue waits one cycle) and reports the loop
        (:meth:`loops`)."""
        a = t.victim
        if a.wl.key not in self.tree.cqs[a.wl.cluster_queue].workloads:
            return
        self.tree.release(a)
        pair = (a.wl.key, by.p.wl.key)
        self.evictions[pair] = self.evictions.get(pair, 0) + 1
        if self.evictions[pair] > 1:
            self.pending[a.wl.cluster_queue][a.wl.key] = p = _Pending(a.wl, inadmissible=True)
            self.held.append(p)
        else:
            self._add(_Pending(a.wl))
        self._requeue_tree(a.wl.cluster_queue)
        for p in self.pending[by.cq.name].values():
            if p.wl.key == by.p.wl.key and not p.sticky:
                p.sticky = True
                self._push(p)

    def loops(self) -> list[tuple[str, str]]:
        """(victim, preemptor) pairs of the preemption loops :meth:`_release` ended: the
        preemptor evicted the victim more than once. The real Kueue keeps repeating those
        until a race ends them: an administrator wants to know."""
        return sorted(pair for pair, n in self.evictions.items() if n > 1)

    def _signature(self, heads: list[_Pending]) -> tuple[object, ...]:
        """The heads and their scan progress: the same after a cycle that changed nothing
        means every later cycle repeats it (a blocked StrictFIFO head, say)."""
        return tuple((p.wl.key, tuple(sorted((p.last or {}).items())), p.inadmissible)
                     for p in heads)

    def run(self, cycles: int | None = None, limit: int = 100000) -> list[Outcome]:
        """Cycle ``cycles`` times, or until quiet: no head left, or the heads back in a
        state seen since the last change (a blocked StrictFIFO head, or one whose flavor
        scan goes round), with no batched requeue left to deliver."""
        self.until_quiet(cycles, limit)
        for name, queue in self.pending.items():
            for p in queue.values():
                out = self.outcomes[p.wl.key]
                if name in self.inactive:
                    out.pending, out.reason = "inadmissible", "Inactive"
                    out.message = self.inactive[name]
                elif not out.pending:
                    out.pending, out.reason = "active", "Pending"
                    out.message = f"waiting behind the head of ClusterQueue {name}"
        return [self.outcomes[w.key] for w in self.snap.workloads]

    def until_quiet(self, cycles: int | None = None, limit: int = 100000) -> None:
        """The cycles of :meth:`run`, without the final outcome rows."""
        n = 0
        seen: set[tuple[object, ...]] = set()
        age = 0  # cycles since the pending batched requeue was raised
        heads: list[_Pending] | None = None  # taken after the last cycle, still current
        while n < (cycles if cycles is not None else limit):
            n += 1
            changed = self.step(heads)
            if changed:
                seen.clear()
            age = age + 1 if self.notify else 0
            heads = self._heads()
            sig = self._signature(heads)
            quiet = not heads or sig in seen
            if self.evicting and quiet and self._complete_evictions():
                seen.clear()
                heads = None
                continue
            if self.notify and (quiet or age >= BATCH_CYCLES):
                self._deliver()  # the batch period is over: the inadmissible come back
                seen.clear()
                age = 0
                heads = None
                continue
            if quiet and cycles is None:
                break
            seen.add(sig)


_HUMAN = {preempt.IN_CQ: "prioritization in the ClusterQueue",
          preempt.RECLAIM: "reclamation within the cohort",
          preempt.FAIR: "Fair Sharing within the cohort",
          preempt.RECLAIM_BORROWING: "reclamation within the cohort while borrowing"}


def replay(snap: Snapshot, cycles: int | None = None) -> list[Outcome]:
    return Replay(snap).run(cycles)


__all__ = ["FIT", "Outcome", "Replay", "replay"]
