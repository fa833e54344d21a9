"""The replay with topology-aware scheduling: Kueue's flavor assigner asks TAS where a
workload whose quota fits would go (``pkg/scheduler/flavorassigner``: ``assignFlavors``
calls ``FindTopologyAssignmentsForWorkload``), on :mod:`aiplat.kueue.tas` over the
cluster's Topologies, Nodes and Pods (:mod:`aiplat.kueue.tas_input`).

The replay's own world and steps, through the cycle's declared extension points only
(:class:`~aiplat.kueue.cycle.World`, :class:`~aiplat.kueue.cycle.Steps`; no private step of
the cycle is overridden). At nomination (``Steps.nominated``) and in preemption's search
(``Steps.preemption_fits``), Kueue's flavor assigner and preemptor ask TAS; around
processing a head (``Steps.processing``, ``processed``) a placement another head took is
assigned again and a preemptor's domains are held, until the cycle ends
(``Steps.cycle_done``).

Through the placement extension point (``World.unplaceable``): a workload whose quota
fits and whose pod sets TAS places is admitted, its pods' domains then taken for the
workloads after it (``with_admitted``); one TAS cannot place even on an empty topology
(``simulate_empty``) is NoFit with TAS's message, as in Kueue. A quota preemption whose
preemptor's pods fit the topology already goes ahead (Kueue's victim search, which asks
TAS at each step, picks the same victims); an eviction gives the victim's domains back.
What TAS leaves to a preemption Kueue would search by topology (fits empty, not now; or a
quota preemption whose preemptor fits only once victims' domains are freed) and what
``tas_input`` does not model are not decided: the workload is named in ``unknown``
("unknown (feature)", :mod:`aiplat.kueue.unknown`). Pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from aiplat.kueue import tas, tas_tree
from aiplat.kueue.assign import FIT, NOFIT, PREEMPT, Assignment
from aiplat.kueue.cycle import Entry, Flavors, Replay
from aiplat.kueue.quota import Admitted
from aiplat.kueue.snapshot import TAS, ClusterQueue, Snapshot, Workload
from aiplat.kueue.tas_input import (
    TasCluster,
    WorkloadRequests,
    requests_for,
    with_admitted,
    without,
)

PREEMPTION = "topology-aware preemption"
HOLD = "hold:"  # the domains a preemptor without candidates keeps for the rest of a cycle


class TasReplay(Replay):
    """:class:`~aiplat.kueue.cycle.Replay` whose placement is Kueue's TAS: it implements the
    cycle's :class:`~aiplat.kueue.cycle.Steps` and :class:`~aiplat.kueue.cycle.World` for
    itself, nothing else."""

    def __init__(self, snap: Snapshot, cluster: TasCluster) -> None:
        self.cluster = cluster
        self.unknown: dict[str, str] = {}  # workload -> what TAS leaves undecided
        self._placed: dict[str, dict[str, tuple[str, tas.PodSetResult]]] = {}
        # workload -> pod set -> where TAS placed it, for those admitted (and not evicted)
        self.assignments: dict[str, dict[str, tas.TopologyAssignment]] = {}
        # workload -> where TAS placed it when nominated this cycle, and the victims whose
        # domains that placement counts as given back
        self._nominated: dict[str, tuple[dict[str, tuple[str, tas.PodSetResult]],
                                         frozenset[str]]] = {}
        super().__init__(snap)

    # ------------------------------------------------------------ nomination (Kueue's
    # flavorassigner asks TAS once the quota fits; the preemptor asks it for every victim set)

    def _asks(self, wl: Workload, a: Assignment) -> WorkloadRequests | None:
        """The workload's TAS requests under ``a``; None when TAS does not decide it here
        (no pod set placed by TAS, a Kueue error message, or something not modelled)."""
        if wl.key not in self.cluster.workloads:
            return None
        asks = requests_for(self.cluster, wl.key, _flavors(a), a.counts or None)
        if not asks.by_flavor or asks.errors or asks.not_modelled:
            return None
        return asks

    def nominated(self, e: Entry) -> Entry:
        """``assignFlavors``: quota that fits but a topology that does not (now; it would
        empty) makes the TAS pod sets' resources Preempt, and the victims are searched by
        quota and topology together (classic and fair sharing alike: Kueue's fair-sharing
        search asks the same ``workloadFits``).
        The placement is kept as ``updateAssignmentForTAS`` computes it: on the cycle's
        snapshot, without the victims when there are some.
        Pods that would not fit even an empty topology make the assignment NoFit here, at
        nomination, as Kueue's flavor assigner does (``updateMode(NoFit)``): the head is
        then inadmissible whatever the heads before it took, never skipped as "no longer
        fits" (requeued at once), and searches no victims (TAS under fair sharing, seed 18:
        skipped, w08 stayed its queue's head a cycle longer than in Kueue)."""
        p = e.p
        key = p.wl.key
        self._nominated.pop(key, None)
        if e.a.mode == NOFIT:
            return e
        asks = self._asks(p.wl, e.a)
        if asks is None:
            return e
        empty = _failure(tas.find_for_workload(asks.by_flavor, simulate_empty=True))
        if e.a.mode == FIT:
            got = tas.find_for_workload(asks.by_flavor)
            now = _failure(got)
            if not now:
                self._nominated[key] = (got, frozenset())
                return e
            if empty:
                return Entry(p, e.cq, _nofit_mode(e.a, now, empty), [])
            a = _preempt_mode(e.a, asks, now)
            e = Entry(p, e.cq, a, self.preemption_targets(e.cq, p.wl, a))
        elif empty:  # Preempt by quota: TAS's check on an empty topology alone
            return Entry(p, e.cq, _nofit_mode(e.a, "", empty), [])
        if e.targets:
            gone = frozenset(t.victim.wl.key for t in e.targets)
            got = tas.find_for_workload(requests_for(
                self._without(gone), key, _flavors(e.a), e.a.counts or None).by_flavor)
            if not _failure(got):
                self._nominated[key] = (got, gone)
        return e

    def _without(self, keys: frozenset[str] | set[str]) -> TasCluster:
        """The cluster as if the workloads ``keys`` had given their domains back."""
        return dataclasses.replace(self.cluster, admitted=tuple(
            d for d in self.cluster.admitted if d.workload not in keys))

    def preemption_fits(self, spec: ClusterQueue, wl: Workload, a: Assignment
                        ) -> Callable[[], bool] | None:
        """``GetTargets`` with ``workloadFits``' topology check: a victim set is enough
        when the quota fits and TAS places the pods without the victims' domains (fair
        sharing's strategies too: ``workloadFitsForFairSharing`` calls ``workloadFits``)."""
        if self._asks(wl, a) is None:
            return None
        return lambda: self._fits_without_released(wl, a)

    def _fits_without_released(self, wl: Workload, a: Assignment) -> bool:
        """TAS places ``wl`` once the workloads the search has released from the quota tree
        give their domains back (``SimulateWorkloadUsageRemoval``)."""
        live = {k for node in self.tree.cqs.values() for k in node.workloads}
        cluster = dataclasses.replace(self.cluster, admitted=tuple(
            d for d in self.cluster.admitted if not d.workload or d.workload in live
            or d.workload.startswith(HOLD)))
        asks = requests_for(cluster, wl.key, _flavors(a), a.counts or None)
        return not _failure(tas.find_for_workload(asks.by_flavor))

    def processing(self, e: Entry, taken: Mapping[str, Admitted]) -> None:
        """``updateAssignmentIfNeeded``: a placement found at nomination that no longer
        fits (an earlier head of the cycle took its domains: ``FitsCheckNoTAS``) makes
        Kueue assign the workload again, from its first flavor, on what the cycle has taken
        (``TASRecomputeAssignmentWithinSchedulingCycle``). Only when its quota still fits:
        ``ClusterQueueSnapshot.Fits`` checks the quota first, and ``FitsCheckNoQuota`` skips
        the head as it was nominated ("no longer fits"), with no new assignment (TAS
        under fair sharing, seed 21: a pod set nominated on a borrowed flavor an earlier
        head's quota and domains took; recomputed, it was admitted a cycle early)."""
        nominated = self._nominated.get(e.p.wl.key)
        if nominated is not None and self._quota_fits(e, taken) and not _still_fits(
                self._without(set(taken) | nominated[1]), nominated[0], self._requests(e.p.wl)):
            e.p.last = None
            again = self.nominate(e.p)
            e.a, e.targets = again.a, again.targets

    def _quota_fits(self, e: Entry, taken: Mapping[str, Admitted]) -> bool:
        """The quota half of ``fits``: the nominated usage with the cycle's victims and
        ``e``'s own released, as the cycle checks it next."""
        merged = list(taken.values()) + [t.victim for t in e.targets
                                         if t.victim.wl.key not in taken]
        return self._fits(self.tree.cqs[e.cq.name], e.a.usage, merged)

    def processed(self, e: Entry, last: bool) -> None:
        """``reserveCapacityForUnreclaimablePreempt``: a preemptor without candidates keeps
        its quota (the cycle does that) and the domains TAS would give it on an empty
        topology (``updateAssignmentForTAS``), for the heads after it in the cycle; a
        preemptor keeps its placement's domains likewise."""
        if last:
            return  # no head after this one: nothing would see a hold
        key = e.p.wl.key
        if e.status == "preempting":  # cq.AddUsage(usage): its TAS usage too
            nominated = self._nominated.get(key)
            if nominated is not None:
                self._hold_domains(e.p.wl, nominated[0])
            return
        if e.status != "inadmissible" or e.p.reason != "PreemptionNoCandidates" \
                or e.cq.preemption.reclaim_within_cohort == "Any":
            return
        asks = self._asks(e.p.wl, e.a)
        if asks is None:
            return
        got = tas.find_for_workload(asks.by_flavor, simulate_empty=True)
        if not _failure(got):
            self._hold_domains(e.p.wl, got)

    def _hold_domains(self, wl: Workload, got: dict[str, tuple[str, tas.PodSetResult]]) -> None:
        """``got``'s domains stay taken for the rest of the cycle."""
        n = len(self.cluster.admitted)
        held = with_admitted(self.cluster, wl.key, got)
        self.cluster = dataclasses.replace(held, admitted=held.admitted[:n] + tuple(
            dataclasses.replace(d, workload=HOLD + wl.key) for d in held.admitted[n:]))

    def _requests(self, wl: Workload) -> dict[str, dict[str, int]]:
        return {ps.request.name: dict(ps.request.requests)
                for ps in self.cluster.workloads[wl.key].podsets}

    def cycle_done(self) -> None:
        """The holds last one cycle."""
        if any(d.workload.startswith(HOLD) for d in self.cluster.admitted):
            self.cluster = dataclasses.replace(self.cluster, admitted=tuple(
                d for d in self.cluster.admitted if not d.workload.startswith(HOLD)))

    # ------------------------------------------------------------ placement

    def unplaceable(self, wl: Workload, flavors: Flavors, victims: list[Admitted]) -> str:
        if wl.key not in self.cluster.workloads:
            return ""
        asks = requests_for(self.cluster, wl.key, flavors, self.placing or None)
        if not asks.by_flavor and not asks.errors:
            return ""  # no pod set TAS places
        if asks.not_modelled:
            self.unknown[wl.key] = f"{TAS}: {'; '.join(asks.not_modelled)}"
            return ""
        if asks.errors:
            name, message = next(iter(sorted(asks.errors.items())))
            return f"couldn't assign flavors to pod set {name}: {message}"
        empty = _failure(tas.find_for_workload(asks.by_flavor, simulate_empty=True))
        if empty:
            return empty  # not even on an empty topology: NoFit
        nominated = self._nominated.get(wl.key)
        got = nominated[0] if nominated is not None and not victims else \
            tas.find_for_workload(asks.by_flavor)
        now = _failure(got)
        if victims:
            # the victims were searched with TAS's check (preemption_fits): the pods are placed
            # once they are gone
            return ""
        if now:  # an earlier head of this cycle took the domains: Kueue recomputes the
            self.unknown[wl.key] = PREEMPTION  # assignment, which may preempt
            return now
        self._placed[wl.key] = got
        return ""

    def admitted(self, wl: Workload, flavors: Flavors) -> None:
        super().admitted(wl, flavors)
        got = self._placed.pop(wl.key, None)
        if got is not None:
            self.cluster = with_admitted(self.cluster, wl.key, got)
            self.assignments[wl.key] = {ps: r.assignment for ps, (_, r) in got.items()
                                        if r.assignment is not None}

    def evict(self, victim: Admitted, again: bool) -> None:
        """The eviction completed: Kueue's cache drops the victim's topology usage with
        its quota."""
        self.cluster = without(self.cluster, victim.wl.key)
        self.assignments.pop(victim.wl.key, None)
        super().evict(victim, again)


def _still_fits(cluster: TasCluster, got: dict[str, tuple[str, tas.PodSetResult]],
                requests: dict[str, dict[str, int]]) -> bool:
    """``TASFlavorSnapshot.Fits``: each domain of the placement still has room for its
    pods (each pod set's domains checked on their own, as Kueue does)."""
    trees: dict[str, tas_tree.Tree] = {}
    for name, (flavor, r) in got.items():
        if r.assignment is None:
            continue
        tree = trees.get(flavor) or trees.setdefault(flavor, tas_tree.build(
            cluster.input(flavor)))
        one = {**requests[name], "pods": 1}
        for d in r.assignment.domains:
            leaf = tree.leaves.get(d.values[-1] if tree.lowest_is_node else ",".join(d.values))
            if leaf is None or tas_tree.count_in(
                    one, tas_tree.remaining(leaf, {}, simulate_empty=False))[0] < d.count:
                return False
    return True


def _flavors(a: Assignment) -> Flavors:
    return {ps.name: {r: f for r, (f, _, _) in ps.flavors.items()} for ps in a.podsets}


def _preempt_mode(a: Assignment, asks: WorkloadRequests, reason: str) -> Assignment:
    """``updateMode(failed pod set, Preempt)`` then ``updateModeForTASRequests``: every
    resource of the pod sets TAS places is in Preempt mode; the failed one says why."""
    placed = {ps.name for _, podsets in asks.by_flavor.values() for ps in podsets}
    failed = reason.split(": ", 1)[0].removeprefix("couldn't assign flavors to pod set ")
    podsets = []
    for ps in a.podsets:
        podsets.append(ps if ps.name not in placed else dataclasses.replace(
            ps, flavors={r: (f, PREEMPT, b) for r, (f, _, b) in ps.flavors.items()},
            reasons=[*ps.reasons, reason.split(": ", 1)[1]] if ps.name == failed
            else list(ps.reasons)))
    return dataclasses.replace(a, podsets=podsets, _mode=None)


def _nofit_mode(a: Assignment, now: str, empty: str) -> Assignment:
    """``assignFlavors``' TAS step when the pods fit not even an empty topology: the pod set
    that failed now gets that reason (when the quota fit), the one that failed on the empty
    topology NoFit, and so does the assignment (``updateMode(NoFit)``)."""
    failed_now, reason = _podset_of(now) if now else ("", "")
    failed_empty = _podset_of(empty)[0]
    podsets = []
    for ps in a.podsets:
        out = ps
        if ps.name == failed_now:
            out = dataclasses.replace(out, reasons=[*ps.reasons, reason])
        if ps.name == failed_empty:
            out = dataclasses.replace(out, flavors={r: (f, NOFIT, b)
                                                    for r, (f, _, b) in ps.flavors.items()})
        podsets.append(out)
    return dataclasses.replace(a, podsets=podsets, _mode=NOFIT)


def _podset_of(failure: str) -> tuple[str, str]:
    """The pod set a :func:`_failure` names, and TAS's reason."""
    head, reason = failure.split(": ", 1)
    return head.removeprefix("couldn't assign flavors to pod set "), reason


def _failure(got: dict[str, tuple[str, tas.PodSetResult]]) -> str:
    for name, (_, r) in got.items():
        if r.reason:
            return f"couldn't assign flavors to pod set {name}: {r.reason}"
    return ""
