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
preempted too). Where that quiet state recurs with a period, completing in another state of
it decides otherwise: those outcomes are the replay's timing alternatives
(:mod:`aiplat.kueue.timing`).

The engine here only applies these decisions; the decisions are pure functions of the
tree. Pure: no I/O.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiplat.kueue import preempt
from aiplat.kueue.assign import FIT, NOFIT, PREEMPT, Assigner, Assignment, Plan, reduced_counts
from aiplat.kueue.fairshare import tournament
from aiplat.kueue.quota import Admitted, Node, Tree
from aiplat.kueue.snapshot import FR, ClusterQueue, Snapshot, Workload
from aiplat.kueue.timing import Alternative, Forks

BATCH_CYCLES = 50  # cycles that run within Kueue's 1 s requeue batch (a cycle takes ms)
Flavors = dict[str, dict[str, str]]  # pod set -> resource -> flavor


@dataclass(slots=True)
class Pending:
    """A workload waiting in its ClusterQueue, with its place in the queue manager."""

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
    counts: dict[str, int] = field(default_factory=dict)  # pods per pod set, when partial
    preempted: list[str] = field(default_factory=list)  # Kueue's reasons, in order
    pending: str = ""  # active | inadmissible
    reason: str = ""
    message: str = ""
    cycle: int | None = None  # the cycle it was admitted in (None: already admitted)
    unknown: str = ""  # what the replay does not model that decides it (kueue.unknown)
    depends_on: list[str] = field(default_factory=list)  # the unknown ones it depends on
    # decided otherwise when an eviction completes in another cycle (kueue.timing)
    alternatives: list[dict[str, Any]] = field(default_factory=list)

    @property
    def shown(self) -> str:
        """The decision as reported: ``unknown (feature)`` where the replay cannot tell."""
        return f"unknown ({self.unknown})" if self.unknown else self.decision

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workload": self.workload, "clusterQueue": self.cluster_queue,
                               "decision": self.shown}
        if self.unknown:  # what the quota rules alone would decide, as context
            out["onQuotaAlone"] = self.decision
            if self.depends_on:
                out["dependsOn"] = self.depends_on
        if self.flavors:
            out["flavors"] = self.flavors
        if self.counts:
            out["counts"] = self.counts
        if self.preempted:
            out["preemptionReasons"] = self.preempted
        if self.decision != "admitted":
            out["pending"] = self.pending
            out["reason"] = self.reason
            out["message"] = self.message
        if self.cycle is not None:
            out["cycle"] = self.cycle
        if self.alternatives:
            out["timingAlternatives"] = self.alternatives
        return out


@dataclass(slots=True)
class Entry:
    """A head nominated in a cycle: its flavor assignment, its victims, what became of it."""

    p: Pending
    cq: ClusterQueue
    a: Assignment
    targets: list[preempt.Target]
    status: str = ""  # skipped | preempting | admitted | inadmissible

    def goes_back_active(self) -> bool:
        """Kueue's requeue of a head the cycle did not admit (queue manager, requeueWorkload
        with its RequeueReason): back in the heap at once when it was skipped or is
        preempting, under StrictFIFO, or when its flavor assignment has flavors left to try
        (a last-tried index that is not -1); otherwise inadmissible until quota is released
        in its cohort tree. (A preempting head's flavor scan starts over: the queue clears
        ``p.last`` after asking.)"""
        last = self.p.last
        return (self.status in ("skipped", "preempting")
                or self.cq.queueing_strategy == "StrictFIFO"
                or (last is not None and any(i != -1 for i in last.values())))


class Queues(Protocol):
    """Extension point: the queue manager (Kueue's ``pkg/queue``), where pending workloads
    wait. The cycle takes its heads, hands back those it did not admit, and tells it when a
    batched requeue fires; :class:`KueueQueues` is Kueue's own (one heap per ClusterQueue),
    the simulator brings a faster one (``aiplat.sched.buckets``)."""

    pending: dict[str, dict[str, Pending]]  # ClusterQueue -> workload key -> its entry
    held: list[Pending]  # sit out the next cycle, then come back (see Replay.evicted)

    def push(self, p: Pending) -> None:
        """``p`` is active (again)."""

    def heads(self, inactive: Mapping[str, str]) -> list[Pending]:
        """The first active workload of every ClusterQueue that is not ``inactive``."""

    def requeue(self, e: Entry) -> None:
        """A head the cycle did not admit goes back: active, or inadmissible until its
        cohort tree's requeue."""

    def deliver(self, notified: set[str]) -> bool:
        """The batched requeue fires for the ``notified`` ClusterQueues: their inadmissible
        workloads come back. True when one did."""

    def first(self, p: Pending) -> None:
        """``p`` preempted and its victims are gone: it stays first in its queue."""

    def signature(self, heads: list[Pending]) -> tuple[object, ...]:
        """The heads and their scan progress: the same after a cycle that changed nothing
        means every later cycle repeats it."""

    def inadmissible_alone(self, p: Pending) -> bool:
        """True when the queue manager can prove that ``p``, the only head of a cycle, would
        be found inadmissible (NoFit or PreemptionNoCandidates) and go back inadmissible,
        and that nothing its caller reads depends on the nomination's details (its flavor
        scan, the cycle count, the tree's generation): the cycle then requeues it without
        nominating it. Kueue's own queues never claim that."""


class World(Protocol):
    """Extension points: what the cycle leaves to whoever runs it. The replay is its own
    world (a snapshot: no time but the cycle count, no pods to place, evictions that complete
    when the cycles are quiet, every decision written to its outcome table); ``sim run``
    brings simulated time, pod placement and evictions that take a grace period
    (``aiplat.sched.admission``)."""

    def now(self) -> float:
        """Time: the reservation time a new admission records (preemption takes the newest
        first)."""

    def unplaceable(self, wl: Workload, flavors: Flavors, victims: list[Admitted]) -> str:
        """Placement: why the pods of ``wl``, which fits its quota once ``victims`` are gone,
        find no room ("" when they do; a preemption that would not make room is not
        issued)."""

    def admitted(self, wl: Workload, flavors: Flavors) -> None:
        """``wl`` holds its quota now (the tree and the queues already say so)."""

    def requeued(self, e: Entry) -> None:
        """A head went back to its queue with Kueue's reason (``e.p.reason``, ``message``)."""

    def preempting(self, victim: Admitted, reason: str, by: Workload) -> None:
        """Evictions: ``victim`` is marked Evicted for ``by`` (Kueue's ``reason``); it keeps
        its quota until :meth:`Replay.evicted` says its pods stopped."""

    def evictions_quiet(self, victims: list[str]) -> bool:
        """Evictions: the cycles are quiet with ``victims`` marked. True: their evictions
        completed now (:meth:`Replay.evicted` was called for each); False: they complete
        later."""

    def evict(self, victim: Admitted, again: bool) -> None:
        """Evictions: the victim's pods have stopped; release its quota
        (:meth:`Replay.release`) and requeue it (:meth:`Replay.add`; ``again``: its
        preemptor evicted it before, so it sits out a cycle: see :meth:`Replay.evicted`)."""


class Steps(Protocol):
    """Extension points inside the cycle's own decisions, for a step that decides with it
    (topology-aware scheduling: ``aiplat.kueue.tas_world``, where Kueue's flavor assigner and
    preemptor ask TAS). Each is called at one place of the cycle, in this order; the
    default (the replay itself) adds nothing. The step may call back :meth:`Replay.nominate`
    and :meth:`Replay.preemption_targets`, which include these hooks.

    - :meth:`nominated`: at nomination, after the quota's flavor assignment and victims;
    - :meth:`preemption_fits`: when victims are searched, a check beside the quota's;
    - :meth:`processing` and :meth:`processed`: around processing one head;
    - :meth:`cycle_done`: after a cycle (also one with no head), before held workloads
      return."""

    def nominated(self, e: Entry) -> Entry:
        """``e`` was nominated on quota alone (:meth:`Replay.nominate`): the entry the cycle
        processes (``e`` itself, or another for the same head: a different assignment and
        victims)."""

    def preemption_fits(self, spec: ClusterQueue, wl: Workload, a: Assignment
                        ) -> Callable[[], bool] | None:
        """``workloadFits`` beyond quota while preemption's search (:mod:`~aiplat.kueue.preempt`)
        looks for victims of ``wl`` under ``a``: called with the candidates taken so far
        released from the tree, True when ``wl`` fits. None: quota alone decides."""

    def processing(self, e: Entry, taken: Mapping[str, Admitted]) -> None:
        """``e`` is about to be processed, after the heads before it in the cycle took
        ``taken`` (victims, by workload key); it may change ``e.a`` and ``e.targets``."""

    def processed(self, e: Entry, last: bool) -> None:
        """``e`` was processed (``e.status`` says how); ``last``: no head comes after it in
        this cycle."""

    def cycle_done(self) -> None:
        """The cycle ended: what the step kept for its heads only is given back."""


def _usage(wl: Workload, flavors: Flavors, counts: dict[str, int] | None = None
           ) -> dict[FR, int]:
    """What an admission holds; ``counts``: a partial admission's pods per pod set."""
    usage: dict[FR, int] = {}
    for ps in wl.podsets:
        n = ps.count if counts is None else counts.get(ps.name, ps.count)
        total = ps.total() if n == ps.count else ps.scaled(n)
        total.setdefault("pods", n)
        for res, flavor in flavors.get(ps.name, {}).items():
            fr = (flavor, res)
            usage[fr] = usage.get(fr, 0) + total.get(res, 0)
    return usage


def inactive_queues(snap: Snapshot, tree: Tree) -> dict[str, str]:
    """The ClusterQueues Kueue keeps inactive, with why: a stop policy, a missing flavor, a
    cohort cycle."""
    out = {}
    for q in snap.cluster_queues.values():
        missing = [f.flavor for g in q.groups for f in g.flavors
                   if f.flavor not in snap.flavors]
        node = tree.cqs[q.name]
        checks = _check_problems(snap, q)
        if q.stop_policy != "None":
            out[q.name] = f"ClusterQueue {q.name} is inactive (stopPolicy {q.stop_policy})"
        elif missing:
            out[q.name] = (f"ClusterQueue {q.name} is inactive (flavor "
                           f"{', '.join(missing)} not found)")
        elif checks:
            out[q.name] = f"ClusterQueue {q.name} is inactive ({checks})"
        elif node.parent is not None and node.root().parent is not None:
            out[q.name] = f"ClusterQueue {q.name} is inactive (cohort cycle)"
    return out


def _check_problems(snap: Snapshot, q: ClusterQueue) -> str:
    """AdmissionChecks the queue names that are missing (AdmissionCheckNotFound) or not
    Active (AdmissionCheckInactive): Kueue keeps the queue inactive."""
    if snap.admission_checks is None:  # not in the snapshot: unknown (kueue.unknown)
        return ""
    missing = [n for n, _ in q.checks if n not in snap.admission_checks]
    idle = [n for n, _ in q.checks if not snap.admission_checks.get(n, True)]
    return ", ".join([*(f"AdmissionCheck {n} not found" for n in missing),
                      *(f"AdmissionCheck {n} inactive" for n in idle)])


def _reserved(out: Outcome, cq: ClusterQueue, flavors: Flavors,
              states: Mapping[str, str]) -> None:
    """Quota reserved in a queue with AdmissionChecks: Admitted only once every check that
    applies is Ready (``SyncAdmittedCondition``); the checks' controllers decide that."""
    waiting = [n for n in cq.checks_on(flavors) if states.get(n) != "Ready"]
    if waiting:
        out.decision, out.pending, out.reason = "reserved", "admission checks", \
            "UnsatisfiedChecks"
        shown = ", ".join(f"{n} ({states.get(n, 'Pending')})" for n in waiting)
        out.message = (f"quota reserved in ClusterQueue {cq.name}; waiting for admission "
                       f"check(s) {shown}: The workload has not all checks ready")


class KueueQueues:
    """Kueue's queue manager: each ClusterQueue's active workloads in a heap (a preemptor
    waiting for its victims first, then priority, creation time, UID); inadmissible ones wait
    beside it until their cohort tree's requeue. See :class:`Queues`."""

    def __init__(self, cluster_queues: Mapping[str, object]) -> None:
        self.pending: dict[str, dict[str, Pending]] = {q: {} for q in cluster_queues}
        self.held: list[Pending] = []
        self.heaps: dict[str, list[tuple[Any, ...]]] = {}

    @staticmethod
    def _queue_key(p: Pending) -> tuple[bool, int, float, str]:
        return (not p.sticky, -p.wl.priority, p.wl.created, p.wl.uid)

    def push(self, p: Pending) -> None:
        """An entry in the heap is stale once the workload left, went inadmissible or was
        pushed again (its version moved on)."""
        p.version += 1
        heapq.heappush(self.heaps.setdefault(p.wl.cluster_queue, []),
                       (*self._queue_key(p), p.version, p.wl.key))

    def heads(self, inactive: Mapping[str, str]) -> list[Pending]:
        heads = []
        for name, heap in self.heaps.items():
            if name in inactive:
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

    def requeue(self, e: Entry) -> None:
        p = e.p
        p.inadmissible = not e.goes_back_active()
        if e.status == "preempting":
            p.sticky, p.last = True, None
        if not p.inadmissible:
            self.push(p)

    def deliver(self, notified: set[str]) -> bool:
        moved = False
        for n in sorted(notified):
            for p in self.pending[n].values():
                if p.inadmissible:
                    moved = True
                    p.inadmissible = False
                    self.push(p)
        return moved

    def first(self, p: Pending) -> None:
        if not p.sticky:
            p.sticky = True
            self.push(p)

    def signature(self, heads: list[Pending]) -> tuple[object, ...]:
        return tuple((p.wl.key, tuple(sorted((p.last or {}).items())), p.inadmissible)
                     for p in heads)

    def inadmissible_alone(self, p: Pending) -> bool:
        return False


class Replay:
    """The snapshot's state and Kueue's queues; :meth:`run` cycles until quiet.

    The cycle decides; what it leaves to its surroundings are three declared extension
    points: ``queues`` (:class:`Queues`, default Kueue's own :class:`KueueQueues`), ``world``
    (:class:`World`: time, placement, evictions; default the replay itself, which records
    :class:`Outcome` rows) and ``steps`` (:class:`Steps`: what a step deciding with the cycle
    adds at nomination, preemption's search, processing and a cycle's end; default the
    replay itself, which adds nothing). A runner (``sim run``) passes its own and drives the
    cycle through the public methods: :meth:`add`, :meth:`until_quiet`, :meth:`release`,
    :meth:`evicted`, ``notify``. A subclass may implement :class:`World` and
    :class:`Steps` for itself (``tas_world.TasReplay``); it overrides nothing else
    (``tests/unit/test_kueue_extension_points.py``)."""

    def __init__(self, snap: Snapshot, *, tree: Tree | None = None,
                 queues: Queues | None = None, world: World | None = None,
                 steps: Steps | None = None) -> None:
        self.snap = snap
        self.tree = tree if tree is not None else Tree(snap)
        self.queues: Queues = queues if queues is not None else KueueQueues(snap.cluster_queues)
        self.world: World = world if world is not None else self
        # a snapshot's replay forks where an eviction's cycle decides (kueue.timing)
        self.timing: Forks | None = Forks() if world is None else None
        self.alternatives: list[Alternative] = []
        self.steps: Steps = steps if steps is not None else self
        # the steps are the replay's own, which add nothing: the cycle leaves out their calls
        self._plain = self.steps is self and all(
            getattr(type(self), hook) is getattr(Replay, hook)
            for hook in ("nominated", "preemption_fits", "processing", "processed"))
        self.cycle = 0
        self.placing: dict[str, int] = {}
        self.outcomes: dict[str, Outcome] = {}
        # victims marked Evicted whose quota is not yet released, with their preemptor
        self.evicting: dict[str, tuple[preempt.Target, Entry]] = {}
        # how often each preemptor evicted each victim (see evicted)
        self.evictions: dict[tuple[str, str], int] = {}
        self.inactive = inactive_queues(snap, self.tree)
        plans: dict[tuple[int, int, bool], Plan] = {}  # the assigners', kept
        self._assigners = {q.name: Assigner(self.tree, q, snap.flavors, fair=snap.fair_sharing,
                                            strategies=snap.strategies, plans=plans)
                           for q in snap.cluster_queues.values()}
        # each ClusterQueue's cohort tree, as the ClusterQueues a requeue of it reaches
        self._trees: dict[str, list[str]] = {}
        for name, node in self.tree.cqs.items():
            root = node.root()
            self._trees[name] = [c.name for c in root.cluster_queues()] if not root.is_cq \
                else [name]
        # Requeues of inadmissible workloads Kueue batches (requeueBatchPeriod, 1 s): they
        # land after the active heads have had their cycles. Starting the queues is one.
        self.notify: set[str] = set(snap.cluster_queues)
        for wl in snap.workloads:
            out = Outcome(wl.key, wl.cluster_queue, "pending")
            self.outcomes[wl.key] = out
            if wl.admission is not None:
                self.tree.admit(Admitted(wl, wl.admission,
                                         _usage(wl, wl.admission, wl.admitted_counts),
                                         wl.admitted_at))
                out.decision, out.flavors = "admitted", wl.admission
                out.counts = dict(wl.admitted_counts or {})
                _reserved(out, snap.cluster_queues[wl.cluster_queue], wl.admission,
                          wl.check_states)
            elif wl.active and wl.refused:  # DRA, a missing queue, the namespace selector
                out.pending, out.reason, out.message = ("inadmissible", wl.refused_reason,
                                                        wl.refused)
            elif wl.active:
                # A workload Kueue already tried waits among the inadmissible ones of a
                # BestEffortFIFO queue until the queues start (StrictFIFO keeps its head).
                strict = snap.cluster_queues[wl.cluster_queue].queueing_strategy == "StrictFIFO"
                self.add(Pending(wl, inadmissible=wl.evaluated and not strict))
            else:
                out.pending, out.reason = "inadmissible", "Inactive"
                out.message = (f"LocalQueue {wl.queue_name} is inactive" if wl.held else
                               "The workload is deactivated (spec.active: false)")

    # ------------------------------------------------------------------ the runner's calls

    def add(self, p: Pending, hold: bool = False) -> None:
        """A workload enters its queue: active unless ``p.inadmissible``; ``hold``: it sits
        out the next cycle."""
        self.queues.pending[p.wl.cluster_queue][p.wl.key] = p
        if hold:
            self.queues.held.append(p)
        elif not p.inadmissible:
            self.queues.push(p)

    def release(self, a: Admitted) -> None:
        """``a`` no longer holds quota (finished, or its eviction completed): the tree
        frees it and its cohort tree's inadmissible workloads will retry."""
        self.tree.release(a)
        self._requeue_tree(a.wl.cluster_queue)

    def _requeue_tree(self, cq: str) -> None:
        """Quota was released: every inadmissible workload of the cohort tree will retry
        (``QueueAssociatedInadmissibleWorkloadsAfter``, batched: see ``notify``)."""
        self.notify.update(self._trees[cq])

    def _deliver(self) -> bool:
        """The batched requeue fires: the notified queues' inadmissible workloads return."""
        moved = self.queues.deliver(self.notify)
        self.notify.clear()
        return moved

    # ------------------------------------------------------------------ decisions

    def nominate(self, p: Pending) -> Entry:
        """A head's flavor assignment and victims against the current state (the queue's
        scan state ``p.last`` moves on), with :meth:`Steps.nominated`'s say."""
        return self.steps.nominated(self._nominate(p))

    def _nominate(self, p: Pending) -> Entry:
        assigner = self._assigners[p.wl.cluster_queue]
        spec = assigner.spec
        if p.last is not None and self.cycle - p.last_cycle > 1 \
                and self.tree.generation > p.last_gen:
            p.last = None  # lastAssignmentOutdated
        a = assigner.assign(p.wl, p.last)
        mode = a.mode
        targets = self.preemption_targets(spec, p.wl, a) if mode == PREEMPT else []
        if mode != FIT and not targets and p.wl.partial:
            got = self._partial(assigner, p)
            if got is not None:
                a, targets = got
        # (the assignment's scan state is not changed after: kept, not copied)
        p.last, p.last_cycle, p.last_gen = a.tried, self.cycle, self.tree.generation
        return Entry(p, spec, a, targets)

    def preemption_targets(self, spec: ClusterQueue, wl: Workload, a: Assignment
                           ) -> list[preempt.Target]:
        """The victims that let ``wl`` under ``a`` fit (quota, and
        :meth:`Steps.preemption_fits`), or [] when ``a`` needs no preemption or none
        does."""
        if a.mode != PREEMPT or spec.preemption.never:  # (never: no candidate)
            return []
        return preempt.targets(self.tree, spec, wl, a.needs_preemption(), a.usage,
                               fair=self.snap.fair_sharing, strategies=self.snap.strategies,
                               fits=self.steps.preemption_fits(spec, wl, a))

    def _partial(self, assigner: Assigner, p: Pending
                 ) -> tuple[Assignment, list[preempt.Target]] | None:
        """Partial admission (``getInitialAssignments``): the full counts neither fit nor
        can preempt, so the largest reduced counts that fit, or that can preempt with
        targets; each try scans flavors from where the last assignment stopped."""
        def fits(counts: list[int]) -> tuple[Assignment, list[preempt.Target]] | None:
            a = assigner.assign(p.wl, p.last, counts)
            if a.mode == FIT:
                return a, []
            targets = self.preemption_targets(assigner.spec, p.wl, a)
            return (a, targets) if targets else None
        return reduced_counts(p.wl.podsets, fits)

    def _order(self, entries: list[Entry]) -> list[Entry]:
        if not self.snap.fair_sharing:
            return sorted(entries, key=_classic)
        return entries  # fair sharing: ordered as processed (tournament per pop)

    def _fits(self, node: Node, usage: dict[FR, int], taken: list[Admitted]) -> bool:
        for v in taken:
            self.tree.release(v)
        ok = self.tree.fits(node, usage)
        for v in taken:
            self.tree.admit(v)
        return ok

    def _reserve(self, e: Entry, node: Node) -> dict[FR, int]:
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

    def _hold(self, node: Node, usage: dict[FR, int],
              undo: list[tuple[Node, dict[FR, int]]] | None) -> None:
        """``usage`` stays taken in ``node`` for the heads processed after this one; the
        cycle gives it back at its end (``undo``). With no head after it (``undo`` None)
        nothing would read it. A hold is on the cycle's snapshot: it leaves the generation
        that outdates a flavor scan as it was (:meth:`Tree.on_snapshot`)."""
        if undo is None:
            return
        with self.tree.on_snapshot():
            self.tree.add_usage(node, usage)
        undo.append((node, usage))

    def _process(self, e: Entry, taken: dict[str, Admitted], undo: list[
            tuple[Node, dict[FR, int]]] | None, victims: list[tuple[preempt.Target, Entry]]
                 ) -> None:
        """``undo``: where a head's hold on quota is recorded; None for the last head."""
        self.steps.processing(e, taken)
        self._decide(e, taken, undo, victims)
        self.steps.processed(e, undo is None)

    def _decide(self, e: Entry, taken: dict[str, Admitted], undo: list[
            tuple[Node, dict[FR, int]]] | None, victims: list[tuple[preempt.Target, Entry]]
                ) -> None:
        node = self.tree.cqs[e.cq.name]
        mode = e.a.mode
        if mode == NOFIT:
            e.status, e.p.message, e.p.reason = "inadmissible", e.a.message(), "NoFit"
            return
        if mode == PREEMPT and not e.targets:
            e.status, e.p.reason = "inadmissible", "PreemptionNoCandidates"
            e.p.message = e.a.message()
            if e.cq.preemption.reclaim_within_cohort != "Any":
                self._hold(node, self._reserve(e, node) if undo is not None else {}, undo)
            return
        if e.targets and any(t.victim.wl.key in taken for t in e.targets):
            e.status = "skipped"
            e.p.message = "Workload has overlapping preemption targets with another workload"
            e.p.reason = "Skipped"
            return
        if e.targets or taken:
            merged = list(taken.values()) + [t.victim for t in e.targets
                                             if t.victim.wl.key not in taken]
            fits = self._fits(node, e.a.usage, merged)
        else:  # nothing to take out first
            fits = self.tree.fits(node, e.a.usage)
        if not fits:
            e.status = "skipped"
            e.p.message = "Workload no longer fits after processing another workload"
            e.p.reason = "Skipped"
            return
        flavors = {ps.name: {r: f for r, (f, _, _) in ps.flavors.items()}
                   for ps in e.a.podsets}
        self.placing = e.a.counts  # the pod counts being placed (partial admission)
        why = self.world.unplaceable(e.p.wl, flavors, [t.victim for t in e.targets])
        if why:
            e.status, e.p.message, e.p.reason = "inadmissible", why, "NoFit"
            return
        for t in e.targets:
            taken[t.victim.wl.key] = t.victim
        if mode == PREEMPT:
            self._hold(node, e.a.usage, undo)
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

    def _admit(self, e: Entry, flavors: Flavors) -> None:
        self.tree.admit(Admitted(e.p.wl, flavors, dict(e.a.usage), self.world.now()))
        if e.p.wl.key in self.outcomes:  # the replay's table: the pods admitted
            self.outcomes[e.p.wl.key].counts = dict(e.a.counts)
        # The ClusterQueue's status changes (admitted count, usage): its update event has
        # the cohort controller update every cohort above it, which requeues the tree's
        # inadmissible workloads with their flavor scans outdated.
        self._requeue_tree(e.cq.name)
        del self.queues.pending[e.cq.name][e.p.wl.key]
        self.world.admitted(e.p.wl, flavors)

    def step(self, heads: list[Pending] | None = None) -> bool:
        """One scheduling cycle; True when it admitted or preempted something. ``heads``:
        the queues' heads, when the caller has just taken them (nothing changed since)."""
        held, self.queues.held = self.queues.held, []
        try:
            return self._cycle(heads)
        finally:
            self.steps.cycle_done()
            for p in held:  # back after the cycle they sat out
                p.inadmissible = False
                self.queues.push(p)

    def _cycle(self, heads: list[Pending] | None) -> bool:
        if heads is None:
            heads = self.queues.heads(self.inactive)
        if not heads:
            return False
        self.cycle += 1
        if len(heads) == 1 and self._plain and self.queues.inadmissible_alone(heads[0]):
            # A lone head its queue manager proves inadmissible: what a nomination would end
            # in (no hold on quota: no head comes after it), without the nomination.
            p = heads[0]
            e = Entry(p, self._assigners[p.wl.cluster_queue].spec, _NONE, [], "inadmissible")
            self.queues.requeue(e)
            self.world.requeued(e)
            return False
        plain = self._plain
        entries = [self._nominate(p) if plain else self.nominate(p) for p in heads]
        taken: dict[str, Admitted] = {}
        undo: list[tuple[Node, dict[FR, int]]] = []
        victims: list[tuple[preempt.Target, Entry]] = []
        last = len(entries) - 1
        process = self._decide if plain else self._process
        for k, e in enumerate(self._ordered(entries)):
            process(e, taken, undo if k < last else None, victims)
        with self.tree.on_snapshot():  # the holds end with the cycle's snapshot
            for node, usage in undo:
                self.tree.remove_usage(node, usage)
        admitted = False
        requeue, requeued = self.queues.requeue, self.world.requeued
        for e in entries:
            if e.status == "admitted":
                admitted = True
            else:
                requeue(e)
                requeued(e)
        issued = False
        for t, e in victims:
            if t.victim.wl.key not in self.evicting:
                issued = True
                self.evicting[t.victim.wl.key] = (t, e)
                self.world.preempting(t.victim, t.reason, e.p.wl)
        return issued or admitted

    def _ordered(self, entries: list[Entry]) -> Iterator[Entry]:
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

    def evicted(self, key: str, *, released: bool = True) -> None:
        """The victim ``key``'s pods have stopped (``released``: it still holds the
        admission that was preempted): the world releases its quota and requeues it
        (:meth:`World.evict`); its preemptor stays first in its queue.

        A victim its preemptor has evicted before is a churn: it wins the next cycle's head
        order, is admitted, and is preempted again by the same workload. The real Kueue
        leaves that loop only by a race, the cache releasing the quota a cycle before the
        victim is back in its queue (fair seed 6: once after about 300 rounds, then the
        preemptor admitted for good; another run evicted the victim 1,402 times in 300 s);
        the replay takes that way out at the second round (the victim's requeue waits one
        cycle: ``again``) and reports the loop (:meth:`loops`)."""
        got = self.evicting.pop(key, None)
        if got is None or not released:
            return
        t, by = got
        a = t.victim
        if a.wl.key not in self.tree.cqs[a.wl.cluster_queue].workloads:
            return
        pair = (a.wl.key, by.p.wl.key)
        self.evictions[pair] = self.evictions.get(pair, 0) + 1
        self.world.evict(a, self.evictions[pair] > 1)
        p = self.queues.pending[by.cq.name].get(by.p.wl.key)
        if p is not None:
            self.queues.first(p)

    def loops(self) -> list[tuple[str, str]]:
        """(victim, preemptor) pairs of the preemption loops :meth:`evicted` ended: the
        preemptor evicted the victim more than once. The real Kueue keeps repeating those
        until a race ends them: an administrator wants to know."""
        return sorted(pair for pair, n in self.evictions.items() if n > 1)

    def run(self, cycles: int | None = None, limit: int = 100000) -> list[Outcome]:
        """Cycle ``cycles`` times, or until quiet: no head left, or the heads back in a
        state seen since the last change (a blocked StrictFIFO head, or one whose flavor
        scan goes round), with no batched requeue left to deliver."""
        self.until_quiet(cycles, limit)
        rows = self._rows()
        if self.timing is not None and self.timing.copies:
            self.alternatives = self.timing.finish(rows)
        return rows

    def _rows(self) -> list[Outcome]:
        for name, queue in self.queues.pending.items():
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
        """The cycles of :meth:`run`, without the final outcome rows. ``cycles`` counts
        scheduling cycles run, not passes that only deliver a batched requeue (a snapshot's
        workloads Kueue already tried wait for that delivery before their first cycle)."""
        n, start = 0, self.cycle
        seen: dict[tuple[object, ...], int] = {}  # signature -> when, since the last change
        age = 0  # cycles since the pending batched requeue was raised
        heads: list[Pending] | None = None  # taken after the last cycle, still current
        while n < limit and (cycles is None or self.cycle - start < cycles):
            n += 1
            if heads is None:
                heads = self.queues.heads(self.inactive)
            idle = not heads and not self.queues.held  # the cycle would change nothing
            if not idle and self.step(heads):
                seen.clear()
            age = age + 1 if self.notify else 0
            if not idle:
                heads = self.queues.heads(self.inactive)
            sig = self.queues.signature(heads) if heads else ()
            quiet = not heads or sig in seen
            if self.evicting and quiet and self.timing is not None and cycles is None \
                    and sig in seen and len(seen) - seen[sig] > 1:
                self.timing.fork(self, len(seen) - seen[sig])  # a period: see kueue.timing
            if self.evicting and quiet and self.world.evictions_quiet(list(self.evicting)):
                seen.clear()
                heads = None
                continue
            if self.notify and (quiet or age >= BATCH_CYCLES):
                self._deliver()  # the batch period is over: the inadmissible come back
                seen.clear()
                age = 0
                heads = None
                continue
            if quiet and (cycles is None or idle):  # idle: nothing can change any more
                break
            seen[sig] = len(seen)

    # ------------------------------------------------------------------ the replay's steps

    def nominated(self, e: Entry) -> Entry:
        """Quota decides alone: the nomination as it is."""
        return e

    def preemption_fits(self, spec: ClusterQueue, wl: Workload, a: Assignment
                        ) -> Callable[[], bool] | None:
        return None

    def processing(self, e: Entry, taken: Mapping[str, Admitted]) -> None:
        pass

    def processed(self, e: Entry, last: bool) -> None:
        pass

    def cycle_done(self) -> None:
        pass

    # ------------------------------------------------------------------ the replay's world

    def now(self) -> float:
        """The replay has no clock: an admission's reservation time is its cycle."""
        return float(self.cycle)

    def unplaceable(self, wl: Workload, flavors: Flavors, victims: list[Admitted]) -> str:
        """The replay places no pods."""
        return ""

    def admitted(self, wl: Workload, flavors: Flavors) -> None:
        out = self.outcomes[wl.key]
        out.decision, out.flavors, out.cycle = "admitted", flavors, self.cycle
        out.pending = out.reason = out.message = ""
        _reserved(out, self.snap.cluster_queues[wl.cluster_queue], flavors, {})

    def requeued(self, e: Entry) -> None:
        out = self.outcomes[e.p.wl.key]
        out.pending = "inadmissible" if e.p.inadmissible else "active"
        out.reason, out.message = e.p.reason, e.p.message

    def preempting(self, victim: Admitted, reason: str, by: Workload) -> None:
        """The Evicted and Preempted conditions: set at once, the quota still held."""
        out = self.outcomes[victim.wl.key]
        out.decision, out.flavors, out.cycle, out.counts = "preempted", {}, None, {}
        out.preempted.append(reason)
        out.pending, out.reason = "active", "Preempted"
        out.message = (f"Preempted to accommodate a workload ({by.key}) due to "
                       f"{_HUMAN[reason]}")

    def evictions_quiet(self, victims: list[str]) -> bool:
        """The job controllers have stopped the victims: their quota is released and they
        are requeued; the preemptors stay first in their queues."""
        for key in victims:
            self.evicted(key)
        return True

    def evict(self, victim: Admitted, again: bool) -> None:
        self.release(victim)
        self.add(Pending(victim.wl, inadmissible=again), hold=again)


_NONE = Assignment([], {})  # the assignment of a head not nominated (inadmissible_alone)


def _classic(e: Entry) -> tuple[int, int, float, str]:
    """The classic order of a cycle's heads: no borrowing first, then priority, older."""
    wl = e.p.wl
    return (e.a.borrowing, -wl.priority, wl.created, wl.uid)


_HUMAN = {preempt.IN_CQ: "prioritization in the ClusterQueue",
          preempt.RECLAIM: "reclamation within the cohort",
          preempt.FAIR: "Fair Sharing within the cohort",
          preempt.RECLAIM_BORROWING: "reclamation within the cohort while borrowing"}


def replay(snap: Snapshot, cycles: int | None = None) -> list[Outcome]:
    return Replay(snap).run(cycles)


__all__ = ["FIT", "Entry", "Flavors", "KueueQueues", "Outcome", "Pending", "Queues", "Replay",
           "Steps", "World", "inactive_queues", "replay"]
