"""Kueue's flavor assigner: per pod set and resource group, a flavor in the group's order.

``pkg/scheduler/flavorassigner/flavorassigner.go``: for each pod set, each resource group it
requests is assigned one flavor, trying the group's flavors in order (from where the last
scan stopped, ``FlavorFungibilityPreserveScanProgress``). A flavor is checked against the
pod set first (taints the pod does not tolerate, a ``nodeSelector`` on the flavor's label
keys), then every resource of the group is charged in it: ``Fit`` (fits the unused quota,
with the borrowing height of the lowest subtree where it fits), ``Preempt`` (fits the quota,
not its unused part: preemption is simulated, ``Reclaim`` when every victim is in another
queue), or ``NoFit`` (over the most the queue could get, or preemption forbidden: over
nominal without ``borrowWithinCohort``). The flavor's mode is the least preferred of its
resources' (by ``preference``: under PreemptionOverBorrowing borrowing ranks below
preempting), and a pod set whose chosen flavor's mode fits carries no status: it counts as
Fit even with a resource in Preempt mode, as in Kueue. The scan stops at a flavor that fits
without borrowing, at one that borrows under ``whenCanBorrow: MayStopSearch`` or needs
preemption under ``whenCanPreempt: MayStopSearch``; otherwise the best flavor seen is kept,
by ``flavorFungibility.preference``. A requested resource no group covers makes the pod set
(and the workload) NoFit. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from aiplat.kueue import preempt
from aiplat.kueue.labels import affinity_matches
from aiplat.kueue.quota import Node, Tree
from aiplat.kueue.snapshot import (
    FR,
    ClusterQueue,
    Flavor,
    Fungibility,
    PodSet,
    ResourceGroup,
    Workload,
    show,
)

T = TypeVar("T")
NOFIT, PREEMPT, FIT = 0, 1, 3  # FlavorAssignmentMode (DeferredFit = 2 is not reached)
# granular preemption modes, worst first
_NOFIT, _NO_CANDIDATES, _PREEMPT, _RECLAIM, _FIT = range(5)
Mode = tuple[int, int]  # (granular mode, borrowing level)
WORST: Mode = (_NOFIT, 1 << 30)
BEST: Mode = (_FIT, 0)


def preferred(a: Mode, b: Mode, fung: Fungibility) -> bool:
    """``isPreferred``: is ``a`` better than ``b``?"""
    if a[0] == _NOFIT:
        return False
    if b[0] == _NOFIT:
        return True
    if (a[0] == _NO_CANDIDATES) != (b[0] == _NO_CANDIDATES):
        return a[0] != _NO_CANDIDATES
    if fung.preference == "PreemptionOverBorrowing":
        return a[1] < b[1] if a[1] != b[1] else a[0] > b[0]
    return a[0] > b[0] if a[0] != b[0] else a[1] < b[1]


def _try_next(mode: Mode, fung: Fungibility) -> bool:
    if mode[0] in (_NOFIT, _NO_CANDIDATES):
        return True
    if mode[0] in (_PREEMPT, _RECLAIM) and fung.when_can_preempt == "TryNextFlavor":
        return True
    return mode[1] != 0 and fung.when_can_borrow == "TryNextFlavor"


_PUBLIC = (NOFIT, PREEMPT, PREEMPT, PREEMPT, FIT)  # by granular mode


@dataclass(slots=True)
class PodSetAssignment:
    name: str
    flavors: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # res -> f, mode, b
    reasons: list[str] = field(default_factory=list)
    failed: bool = False

    @property
    def mode(self) -> int:
        """``PodSetAssignment.RepresentativeMode``: Fit when its status has no reason, else
        the worst of its resources. A flavor whose worst resource (by ``preference``) fits
        returns no status, so under ``PreemptionOverBorrowing`` a pod set can be Fit with a
        resource in Preempt mode (cpu to preempt for beside memory to borrow): Kueue then
        computes no preemption targets and skips the workload every cycle as "no longer
        fits"; the replay does the same."""
        if not self.reasons:
            return FIT
        return min((m for _, m, _ in self.flavors.values()), default=FIT)


@dataclass(slots=True)
class Assignment:
    podsets: list[PodSetAssignment]
    usage: dict[FR, int]
    borrowing: int = 0
    tried: dict[tuple[int, str], int] = field(default_factory=dict)  # (podset, res) -> idx
    counts: dict[str, int] = field(default_factory=dict)  # pod set -> count, when reduced

    _mode: int | None = field(default=None, repr=False, compare=False)

    @property
    def mode(self) -> int:
        """RepresentativeMode: the worst pod set's; NoFit if a pod set failed (kept once
        asked: it is asked after assign() is done with it)."""
        if self._mode is None:
            mode = FIT if self.podsets else NOFIT
            for p in self.podsets:
                if p.failed:
                    mode = NOFIT
                    break
                mode = min(mode, p.mode)
            self._mode = mode
        return self._mode

    def message(self) -> str:
        """The condition message Kueue writes for a workload that is not admitted."""
        parts = []
        for p in self.podsets:
            if p.reasons:
                # Status.Message sorts the reasons (flavorassigner.go)
                parts.append(f"couldn't assign flavors to pod set {p.name}: "
                             + ", ".join(sorted(p.reasons)))
        return "; ".join(parts)

    def pending_flavors(self) -> bool:
        return any(i != -1 for i in self.tried.values())

    def needs_preemption(self) -> set[FR]:
        return {(f, r) for p in self.podsets for r, (f, m, _) in p.flavors.items()
                if m == PREEMPT}


def _tolerated(taint: dict[str, object], tolerations: tuple[dict[str, object], ...]) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        op = t.get("operator", "Equal")
        if not t.get("key") and op == "Exists":
            return True
        if t.get("key") != taint.get("key"):
            continue
        if op == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _tas_mismatch(flavor: Flavor, name: str, ps: PodSet, group: ResourceGroup | None,
                  tas_only: bool) -> str | None:
    """``checkPodSetAndFlavorMatchForTAS``: a pod set that asks for a topology (or is in a
    queue of topology-aware flavors only) needs one for the resources it asks; one that does
    not skips them. ``ps.tas`` None (the simulator's pod sets): not checked."""
    if ps.tas is None:
        return None
    if ps.tas or tas_only:
        if tas_only or flavor.topology:
            return None
        if group is not None and not set(ps.requests) & set(group.covered):
            return None
        return f'Flavor "{name}" does not support TopologyAwareScheduling'
    if flavor.topology:
        return f'Flavor "{name}" supports only TopologyAwareScheduling'
    return None


def check_flavor(flavor: Flavor | None, name: str, ps: PodSet,
                 group: ResourceGroup | None = None, tas_only: bool = False) -> str | None:
    """Why ``ps`` cannot use ``flavor`` (``checkFlavorForPodSets``), or None."""
    if flavor is None:
        return f"flavor {name} not found"
    tas = _tas_mismatch(flavor, name, ps, group, tas_only)
    if tas is not None:
        return tas
    if flavor.node_taints:
        tolerations = (*ps.tolerations, *flavor.tolerations)
        for taint in flavor.node_taints:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(
                    taint, tolerations):
                shown = f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"
                return f"untolerated taint {shown} in flavor {name}"
    labels = flavor.node_labels
    if any(k in labels and labels[k] != v for k, v in ps.node_selector.items()) \
            or not affinity_matches(ps.affinity, labels):
        return f"flavor {name} doesn't match node affinity"
    return None


# What a pod set asks of one resource group, and which of the group's flavors it may use:
# (pod set, group, its requests of the group's resources, [(flavor, why not or None)]).
Plan = tuple[PodSet, ResourceGroup, dict[str, int], list[tuple[str, str | None]]]
# One step of a pod set's assignment: per resource group it asks of, in the order of the first
# resource it requests there, (that resource, the group's plan); or why it fails there (a str:
# a requested resource no group covers). The resources after the first of a group are
# assigned with it.
Step = tuple[str, Plan] | str


class Assigner:
    """A ClusterQueue's flavor assignments against the tree (``FlavorAssigner``), one
    workload per :meth:`assign`. ``plans``: where a caller keeps what does not change
    between assignments (a pod set's requests per group and the flavors it may use), by pod
    set and group."""

    wl: Workload  # the workload being assigned (set by assign) and its scan state
    last: dict[tuple[int, str], int]

    def __init__(self, tree: Tree, spec: ClusterQueue, flavors: dict[str, Flavor], *,
                 fair: bool, strategies: tuple[str, ...],
                 plans: dict[tuple[int, int, bool], Plan] | None = None) -> None:
        self.tree = tree
        self.spec = spec
        self.cq: Node = tree.cqs[spec.name]
        self.flavors = flavors
        self.fair = fair
        self.strategies = strategies
        self.plans = plans if plans is not None else {}
        self._pods_group = spec.group_of("pods")  # does the queue count pods?
        self._never = spec.preemption.never  # no preemption candidate, ever
        self._tas_only = spec.tas_only(flavors)
        # by pod set (id): the pod set, its requests at its full count, its steps
        self._walks: dict[int, tuple[PodSet, dict[str, int], list[Step]]] = {}

    def _plan(self, ps: PodSet, group: ResourceGroup, requests: dict[str, int],
              pods: bool, scaled: bool = False) -> Plan:
        """``scaled``: ``requests`` are a reduced count's; the kept plan's are the full."""
        key = (id(ps), id(group), pods)
        plan = self.plans.get(key)
        if plan is None or plan[0] is not ps or plan[1] is not group:
            covered = group.covered
            checks = [(f.flavor, check_flavor(self.flavors.get(f.flavor), f.flavor, ps,
                                              group, self._tas_only)) for f in group.flavors]
            plan = self.plans[key] = (ps, group, {r: v for r, v in requests.items()
                                                  if r in covered}, checks)
        if scaled:
            return (ps, group, {r: v for r, v in requests.items() if r in group.covered},
                    plan[3])
        return plan

    def _walk(self, ps: PodSet, n: int | None = None) -> tuple[dict[str, int], list[Step]]:
        """What ``ps`` requests at ``n`` pods (None: its full count) and its steps (see
        ``Step``); at the full count both are kept, by pod set: they do not change between
        its assignments."""
        if n is None:
            kept = self._walks.get(id(ps))
            if kept is not None and kept[0] is ps:
                return kept[1], kept[2]
        requests = ps.totals if n is None else ps.scaled(n)
        pods = self._pods_group is not None
        if pods:
            requests = {**requests, "pods": ps.count if n is None else n}
        steps: list[Step] = []
        groups: set[int] = set()
        for res, qty in requests.items():
            group = self.spec.group_of(res)
            if group is None:
                if qty == 0:
                    continue
                steps.append(f"resource {res} unavailable in ClusterQueue")
                break
            if id(group) in groups:  # assigned with the group's first resource
                continue
            groups.add(id(group))
            steps.append((res, self._plan(ps, group, requests, pods, n is not None)))
        if n is None:
            self._walks[id(ps)] = (ps, requests, steps)
        return requests, steps

    def assign(self, wl: Workload, last: dict[tuple[int, str], int] | None,
               counts: list[int] | None = None) -> Assignment:
        """``wl``'s assignment, its flavor scans going on from ``last``; ``counts``: the
        pods per pod set (partial admission), else each pod set's full count."""
        self.wl, self.last = wl, last or {}
        if counts is None and len(wl.podsets) == 1:
            kept = self._walks.get(id(wl.podsets[0]))
            if kept is not None and kept[0] is wl.podsets[0] and len(kept[2]) == 1:
                fast = self._one(kept[2][0], kept[1])
                if fast is not None:
                    return fast
        a = Assignment([], {})
        if counts is not None:
            a.counts = {ps.name: n for ps, n in zip(wl.podsets, counts, strict=True)}
        usage = a.usage
        walks = self._walks
        for i, ps in enumerate(wl.podsets):
            kept = walks.get(id(ps)) if counts is None else None
            if kept is not None and kept[0] is ps:  # (the common case: _walk's kept steps)
                requests, steps = kept[1], kept[2]
            else:
                requests, steps = self._walk(ps, None if counts is None else counts[i])
            psa = PodSetAssignment(ps.name)
            a.podsets.append(psa)
            flavors = psa.flavors
            tried: dict[tuple[int, str], int] = {}
            for step in steps:
                if isinstance(step, str):  # a requested resource no group covers
                    psa.reasons.append(step)
                    psa.failed = True
                    return a
                got, reasons = self._find(i, step[0], step[1], usage, tried)
                if reasons:
                    psa.reasons += reasons
                if not got:  # a failed pod set keeps no flavors, so no scan progress either
                    psa.failed = True
                    return a
                flavors.update(got)
            a.tried.update(tried)
            for res, (f, _, b) in flavors.items():
                a.borrowing = max(a.borrowing, b)
                fr = (f, res)
                usage[fr] = usage.get(fr, 0) + requests.get(res, 0)
        return a

    def _one(self, step: Step, requests: dict[str, int]) -> Assignment | None:
        """:meth:`assign` of one pod set asking one resource of a group of one flavor it may
        use, its scan not under way: :meth:`_find`'s walk of one flavor, without the walk
        (the common case of a simulation; None: not that case)."""
        if isinstance(step, str):
            return None
        res, plan = step
        checks, reqs = plan[3], plan[2]
        if len(checks) != 1 or len(reqs) != 1 or checks[0][1] is not None \
                or self.last.get((0, res), -1) != -1:
            return None
        fname = checks[0][0]
        ((r, val),) = reqs.items()
        granular, borrow, why = self._fits((fname, r), 0, val)
        psa = PodSetAssignment(self.wl.podsets[0].name)
        a = Assignment([psa], {})
        if granular == _NOFIT:
            psa.reasons.append(why)
            psa.failed = True
            a._mode = NOFIT
            return a
        if granular != _FIT:
            psa.reasons.append(why)
        a._mode = _PUBLIC[granular]  # (what the mode property would find)
        psa.flavors[r] = (fname, _PUBLIC[granular], borrow)
        a.tried[(0, r)] = -1
        a.borrowing = max(0, borrow)
        a.usage[(fname, r)] = requests.get(r, 0)
        return a

    def _find(self, i: int, res: str, plan: Plan, usage: dict[FR, int],
              tried_out: dict[tuple[int, str], int]
              ) -> tuple[dict[str, tuple[str, int, int]], list[str]]:
        """The flavor of ``plan``'s group for pod set ``i`` (whose first resource there is
        ``res``), scanning on from where the last assignment stopped."""
        reqs, checks = plan[2], plan[3]
        fung = self.spec.fungibility
        best: dict[str, tuple[str, int, int]] = {}
        best_mode = WORST
        reasons: list[str] = []
        last = self.last
        start = last.get((i, res), -1) + 1 if last else 0
        tried = -1
        for idx in range(start, len(checks)):
            tried = idx
            fname, why = checks[idx]
            if why is not None:
                reasons.append(why)
                continue
            rep = BEST
            got: dict[str, tuple[str, int, int]] = {}
            for r, val in reqs.items():
                fr = (fname, r)
                granular, borrow, why = self._fits(fr, usage.get(fr, 0), val)
                if why:
                    reasons.append(why)
                m = (granular, borrow)
                # the first resource's mode is the flavor's so far (nothing beats BEST)
                if not got or preferred(rep, m, fung):
                    rep = m
                if rep[0] == _NOFIT:
                    break
                got[r] = (fname, _PUBLIC[granular], borrow)
            if not _try_next(rep, fung):
                best, best_mode = got, rep
                break
            if preferred(rep, best_mode, fung):
                best, best_mode = got, rep
        mark = -1 if tried == len(checks) - 1 else tried
        for r in best:
            tried_out[(i, r)] = mark
        if best_mode[0] == _FIT:
            reasons = []
        return (best if best_mode[0] != _NOFIT else {}), reasons

    def _fits(self, fr: FR, assumed: int, request: int) -> tuple[int, int, str]:
        """``fitsResourceQuota``: (granular mode, borrowing level, reason)."""
        cq, tree = self.cq, self.tree
        available = max(tree.available(cq, fr), 0)
        most = tree.potential(cq, fr)
        val = assumed + request
        if val > most:
            f, r = fr
            return _NOFIT, 0, (
                f"insufficient quota for {r} in flavor {f}, previously considered podsets "
                f"requests ({show(r, assumed)}) + current podset request ({show(r, request)}) "
                f"> maximum capacity ({show(r, most)})")
        borrow, may_reclaim = lowest_fit(cq, fr, val)
        if val <= available:
            return _FIT, borrow, ""
        f, r = fr
        why = (f"insufficient unused quota for {r} in flavor {f}, "
               f"{show(r, val - available)} more needed")
        pre = self.spec.preemption
        while_borrowing = pre.borrow_within_cohort != "Never" or (
            self.fair and pre.reclaim_within_cohort != "Never")
        if cq.nominal(fr) >= val or may_reclaim or while_borrowing:
            victims = [] if self._never else preempt.targets(
                tree, self.spec, self.wl, {fr}, {fr: val}, fair=self.fair,
                strategies=self.strategies)
            if not victims:  # the tree is as it was: the same borrowing level
                return _NO_CANDIDATES, borrow, why
            for t in victims:
                tree.release(t.victim)
            after = lowest_fit(cq, fr, val)[0]
            for t in victims:
                tree.admit(t.victim)
            own = any(t.victim.wl.cluster_queue == self.spec.name for t in victims)
            return (_PREEMPT if own else _RECLAIM), after, why
        return _NOFIT, borrow, why


def lowest_fit(cq: Node, fr: FR, val: int) -> tuple[int, bool]:
    """``FindHeightOfLowestSubtreeThatFits``: the borrowing level, and whether a higher
    cohort exists to reclaim in."""
    node = cq.parent
    if node is None:
        return 0, False
    if not cq.borrowing_with(fr, val):
        return 0, True
    remaining = val - cq.local_available(fr)
    while True:
        if not node.borrowing_with(fr, remaining):
            return node.height(), node.parent is not None
        remaining -= node.local_available(fr)
        if node.parent is None:  # the root: the whole tree is borrowed from
            return node.height(), False
        node = node.parent


def reduced_counts(podsets: tuple[PodSet, ...], fits: Callable[[list[int]], T | None]
                   ) -> T | None:
    """Kueue's ``PodSetReducer.Search``: the largest counts, walking every pod set from its
    count down to its ``minCount`` in step (search index ``i`` of ``total delta`` takes
    ``delta * i // total`` pods off each), for which ``fits`` gives a result; a binary
    search, as Go's ``sort.Search`` runs it (``fits`` is taken as monotone)."""
    deltas = [ps.count - (ps.min_count if ps.min_count is not None else ps.count)
              for ps in podsets]
    total = sum(deltas)
    if total == 0:
        return None
    lo, hi = 0, total + 1
    best: T | None = None
    while lo < hi:
        mid = (lo + hi) // 2
        got = fits([ps.count - d * mid // total for ps, d in zip(podsets, deltas, strict=True)])
        if got is None:
            lo = mid + 1
        else:
            hi, best = mid, got
    return best
