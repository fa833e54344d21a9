"""Kueue's preemption target search over a :class:`~aiplat.kueue.quota.Tree`.

Classic (``pkg/scheduler/preemption/preemption.go`` classicalPreemptions and
``classical/``): candidates are admitted workloads using a (flavor, resource) that needs
preemption, in three lists — other ClusterQueues with a hierarchical advantage (the
preemptor fits in the subtree up to the common ancestor: ``InCohortReclamation``), other
ClusterQueues without one (``InCohortReclamation`` when the preemptor need not borrow,
``InCohortReclaimWhileBorrowing`` under ``borrowWithinCohort``), then its own queue
(``InClusterQueue``) — each ordered other-queue first, lowest priority, newest reservation,
UID. A candidate of another queue is valid only while that queue (and every cohort up to
the common ancestor) is still above its nominal quota, judged as candidates are removed.
Attempts with and without borrowing are tried in Kueue's order; victims are removed until
the workload fits, then every victim but the last that is not needed is put back.

Fair sharing (``fairPreemptions``, ``fairsharing/``): the same candidates as Kueue's
``findCandidates``, preempted from the ClusterQueue that wins the share comparison down the
tree, first with ``LessThanOrEqualToFinalShare`` then ``LessThanInitialShare``; a preemptor
whose queue stays within nominal quota in the contested resources reclaims from any queue
(``InCohortReclamation``, ``FairSharingPreemptWithinNominal``).

Pure: the tree is changed only inside a search and restored before it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial

from aiplat.kueue.fairshare import Key, drs
from aiplat.kueue.quota import Admitted, Node, Tree
from aiplat.kueue.snapshot import FR, ClusterQueue, Workload

IN_CQ = "InClusterQueue"
RECLAIM = "InCohortReclamation"
RECLAIM_BORROWING = "InCohortReclaimWhileBorrowing"
FAIR = "InCohortFairSharing"
_WITHIN, _HIER, _NO_BORROW, _WHILE_BORROW = range(4)


@dataclass(frozen=True)
class Target:
    victim: Admitted
    reason: str


def satisfies(policy: str, preemptor: Workload, cand: Workload) -> bool:
    """``common/preemption_policy.go`` SatisfiesPreemptionPolicy."""
    lower = preemptor.priority > cand.priority
    if policy == "LowerPriority":
        return lower
    if policy == "LowerOrNewerEqualPriority":
        return lower or (preemptor.priority == cand.priority and preemptor.created < cand.created)
    return policy == "Any"


def uses(a: Admitted, frs: set[FR]) -> bool:
    return any(fr in frs for fr in a.usage)


def _order_key(a: Admitted, cq: str) -> tuple[bool, int, float, str]:
    # common/ordering.go CandidatesOrdering: other queues first, lower priority, newest
    # reservation, UID (evicted ones are gone from the replay's snapshot already).
    return (a.wl.cluster_queue == cq, a.wl.priority, -a.reserved_at, a.wl.uid)


@dataclass
class _Cand:
    a: Admitted
    lca: Node | None
    variant: int


class _Search:
    def __init__(self, tree: Tree, spec: ClusterQueue, wl: Workload, frs: set[FR],
                 requests: dict[FR, int], *, also: Callable[[], bool] | None = None) -> None:
        self.also = also  # workloadFits beyond quota (see targets' fits)
        self.tree = tree
        self.spec = spec
        self.cq = tree.cqs[spec.name]
        self.wl = wl
        self.frs = frs
        self.requests = requests
        self.pre = spec.preemption

    def variant(self, a: Admitted, advantage: bool) -> int | None:
        if not uses(a, self.frs):
            return None
        same = a.wl.cluster_queue == self.spec.name
        policy = self.pre.within_cluster_queue if same else self.pre.reclaim_within_cohort
        if not satisfies(policy, self.wl, a.wl):
            return None
        if same:
            return _WITHIN
        if advantage:
            return _HIER
        if self.pre.borrow_within_cohort == "Never":
            return _NO_BORROW
        thr = self.pre.max_priority_threshold
        if a.wl.priority >= self.wl.priority or (thr is not None and a.wl.priority > thr):
            return _NO_BORROW
        return _WHILE_BORROW

    def from_cq(self, node: Node, lca: Node | None, advantage: bool) -> list[_Cand]:
        out = []
        for a in node.workloads.values():
            v = self.variant(a, advantage)
            if v is not None:
                out.append(_Cand(a, lca, v))
        return out

    def _fits_in(self, node: Node, requests: dict[FR, int]) -> tuple[bool, dict[FR, int]]:
        # resource_node.go QuantitiesFitInQuota
        ok = True
        rest = {}
        for fr, v in requests.items():
            if node.subtree.get(fr, 0) < node.usage.get(fr, 0) + v:
                ok = False
            rest[fr] = max(0, v - node.local_available(fr))
        return ok, rest

    def _collect(self, current: Node, lca: Node, skip: Node | None, advantage: bool,
                 out: list[_Cand]) -> None:
        for child in current.children:
            if child.is_cq or child is skip or child.within_nominal(self.frs):
                continue
            self._collect(child, lca, skip, advantage, out)
        for child in current.children:
            if child.is_cq and child is not self.cq and not child.within_nominal(self.frs):
                out.extend(self.from_cq(child, lca, advantage))

    def candidates(self) -> tuple[list[_Cand], list[_Cand], list[_Cand]]:
        same = (self.from_cq(self.cq, None, False)
                if self.pre.within_cluster_queue != "Never" else [])
        hier: list[_Cand] = []
        prio: list[_Cand] = []
        if self.cq.parent is not None and self.pre.reclaim_within_cohort != "Never":
            advantage, rest = self._fits_in(self.cq, self.requests)
            prev: Node | None = None
            for root in self.cq.ancestors():
                self._collect(root, root, prev, advantage, hier if advantage else prio)
                fits, rest = self._fits_in(root, rest)
                advantage = advantage or fits
                prev = root
        name = self.spec.name
        for lst in (same, hier, prio):
            lst.sort(key=lambda c: _order_key(c.a, name))
        return hier, prio, same

    def valid(self, c: _Cand, borrow: bool) -> bool:
        if c.a.wl.cluster_queue == self.spec.name:
            return True
        if borrow and c.variant == _NO_BORROW:
            return False
        node = self.tree.cqs[c.a.wl.cluster_queue]
        if node.within_nominal(self.frs):
            return False
        for anc in node.ancestors():
            if anc is c.lca:
                break
            if anc.within_nominal(self.frs):
                return False
        return True

    def fits(self, borrow: bool) -> bool:
        for fr, v in self.requests.items():
            if not borrow and self.cq.borrowing_with(fr, v):
                return False
            if v > max(0, self.tree.available(self.cq, fr)):
                return False
        return self.also is None or self.also()

    def under_nominal(self) -> bool:
        return all(self.cq.nominal(fr) > self.cq.usage.get(fr, 0) for fr in self.frs)

    def classical(self) -> list[Target]:
        hier, prio, same = self.candidates()
        forbidden = self.pre.borrow_within_cohort == "Never"
        if (not hier and not prio) or (forbidden and not self.under_nominal()):
            attempts = [True]
        elif forbidden and not hier:
            attempts = [False, True]
        else:
            attempts = [True, False]
        order = hier + prio + same
        for borrow in attempts:
            targets: list[Target] = []
            for c in order:
                if not self.valid(c, borrow):
                    continue
                self.tree.release(c.a)
                targets.append(Target(c.a, _reason(c.variant)))
                if self.fits(borrow):
                    targets = fill_back(self.tree, targets, partial(self.fits, borrow))
                    _restore(self.tree, targets)
                    return targets
            _restore(self.tree, targets)
        return []


def _reason(variant: int) -> str:
    return {_WITHIN: IN_CQ, _HIER: RECLAIM, _NO_BORROW: RECLAIM,
            _WHILE_BORROW: RECLAIM_BORROWING}[variant]


def _restore(tree: Tree, targets: Iterable[Target]) -> None:
    for t in targets:
        tree.admit(t.victim)


def fill_back(tree: Tree, targets: list[Target], fits: Callable[[], bool]) -> list[Target]:
    """Put back every victim but the last that the workload does not need (Kueue swaps the
    last one into the freed slot, so the order of what remains follows it)."""
    i = len(targets) - 2
    while i >= 0:
        tree.admit(targets[i].victim)
        if fits():
            targets[i] = targets[-1]
            targets.pop()
        else:
            tree.release(targets[i].victim)
        i -= 1
    return targets


# ---------------------------------------------------------------------------- fair sharing


def _fair(search: _Search, strategies: tuple[str, ...]) -> list[Target]:
    tree, cq, frs = search.tree, search.cq, search.frs
    cands: list[Admitted] = []
    pre = search.pre
    if pre.within_cluster_queue != "Never":
        cands += [a for a in cq.workloads.values() if uses(a, frs)
                  and satisfies(pre.within_cluster_queue, search.wl, a.wl)]
    if cq.parent is not None and pre.reclaim_within_cohort != "Never":
        for other in cq.root().cluster_queues():
            if other is cq or not any(other.borrowing_with(fr, 0) for fr in frs):
                continue
            cands += [a for a in other.workloads.values() if uses(a, frs)
                      and satisfies(pre.reclaim_within_cohort, search.wl, a.wl)]
    if not cands:
        return []
    cands.sort(key=lambda a: _order_key(a, search.spec.name))
    tree.add_usage(cq, search.requests)  # the preemptor's usage counts in the shares
    targets: list[Target] = []

    def fits() -> bool:
        tree.remove_usage(cq, search.requests)
        ok = search.fits(True)
        tree.add_usage(cq, search.requests)
        return ok

    me = search.spec.name
    # FairSharingPreemptWithinNominal (beta, on): a preemptor whose queue stays within its
    # nominal quota in the contested resources (its own usage counted) reclaims from every
    # other queue regardless of shares.
    within = not any(cq.borrowing_with(fr, 0) for fr in frs)
    ok, retry = _first_strategy(tree, cq, cands, strategies[0], targets=targets, fits=fits,
                                me=me, within_nominal=within)
    if not ok and len(strategies) > 1:
        ok = _second_strategy(tree, cq, retry, targets=targets, fits=fits, me=me)
    tree.remove_usage(cq, search.requests)
    if not ok:
        _restore(tree, targets)
        return []
    targets = fill_back(tree, targets, lambda: search.fits(True))
    _restore(tree, targets)
    return targets


def _strategy(name: str, preemptor_new: Key, target_old: Key, target_new: Key) -> bool:
    # fairsharing/strategy.go, with CompareDRS as the tuple order of the share keys
    if name == "LessThanOrEqualToFinalShare":
        return preemptor_new <= target_new
    return preemptor_new < target_old


_NEG: Key = (False, -1.0)  # NegativeDRS: below every real share


def _by_queue(cands: list[Admitted]) -> dict[str, list[Admitted]]:
    out: dict[str, list[Admitted]] = {}
    for a in cands:
        out.setdefault(a.wl.cluster_queue, []).append(a)
    return out


def _lca_children(preemptor: Node, target: Node) -> tuple[Node, Node]:
    """The children of the lowest common ancestor on the preemptor's and the target's
    paths (``fairsharing/least_common_ancestor.go``): their shares are compared."""
    mine = [preemptor, *preemptor.ancestors()]
    theirs = [target, *target.ancestors()]
    common = next(n for n in mine if n in theirs)
    return mine[mine.index(common) - 1], theirs[theirs.index(common) - 1]


class _Ordering:
    """``fairsharing/ordering.go`` TargetClusterQueueOrdering: going down from the root,
    into the child (ClusterQueue or cohort) with the highest share; ClusterQueues that do
    not borrow (but the preemptor's) and cohorts off the preemptor's path that do not borrow
    are pruned, as are queues without candidates left."""

    def __init__(self, tree: Tree, cq: Node, queues: dict[str, list[Admitted]], me: str
                 ) -> None:
        self.tree, self.cq, self.queues, self.me = tree, cq, queues, me
        self.pruned: set[int] = set()
        self.path = {id(n) for n in cq.ancestors()}

    def drop(self, node: Node) -> None:
        self.pruned.add(id(node))

    def __iter__(self) -> Iterator[Node]:
        if self.cq.parent is None:
            while id(self.cq) not in self.pruned and self.queues.get(self.cq.name):
                yield self.cq
            return
        root = self.cq.root()
        while id(root) not in self.pruned:
            got = self._next(root)
            if got is not None:
                yield got

    def _next(self, cohort: Node) -> Node | None:
        best_cq: Node | None = None
        best_cq_share = _NEG
        for c in cohort.children:
            if not c.is_cq or id(c) in self.pruned:
                continue
            share, borrowing = drs(self.tree, c)
            if (not borrowing and c is not self.cq) or not self.queues.get(c.name):
                self.pruned.add(id(c))
            elif best_cq is None or share > best_cq_share:
                best_cq, best_cq_share = c, share
            elif share == best_cq_share and _order_key(self.queues[c.name][0], self.me) < \
                    _order_key(self.queues[best_cq.name][0], self.me):
                best_cq = c
        best_co: Node | None = None
        best_co_share = _NEG
        for c in cohort.children:
            if c.is_cq or id(c) in self.pruned:
                continue
            share, borrowing = drs(self.tree, c)
            if not borrowing and id(c) not in self.path:
                self.pruned.add(id(c))
            elif share >= best_co_share:
                best_co, best_co_share = c, share
        if best_co is None and best_cq is None:
            self.pruned.add(id(cohort))
            return None
        if best_co is not None and best_co_share >= best_cq_share:
            return self._next(best_co)
        return best_cq


def _first_strategy(tree: Tree, cq: Node, cands: list[Admitted], strategy: str, *,
                    targets: list[Target], fits: Callable[[], bool], me: str,
                    within_nominal: bool = False) -> tuple[bool, list[Admitted]]:
    queues = _by_queue(cands)
    retry: list[Admitted] = []
    for target in _Ordering(tree, cq, queues, me):
        ws = queues[target.name]
        if target is cq or within_nominal:
            a = ws.pop(0)
            tree.release(a)
            targets.append(Target(a, IN_CQ if target is cq else RECLAIM))
            if fits():
                return True, []
            continue
        mine, theirs = _lca_children(cq, target)
        p_new, t_old = drs(tree, mine)[0], drs(tree, theirs)[0]
        if p_new[0] and not t_old[0]:  # fsStrategyUnsatisfiable: no candidate can pass
            retry += ws
            ws.clear()
            continue
        while ws:
            a = ws.pop(0)
            tree.release(a)
            t_new = drs(tree, theirs)[0]
            tree.admit(a)
            if _strategy(strategy, p_new, t_old, t_new):
                tree.release(a)
                targets.append(Target(a, FAIR))
                if fits():
                    return True, []
                break
            retry.append(a)
    return False, retry


def _second_strategy(tree: Tree, cq: Node, retry: list[Admitted], *, targets: list[Target],
                     fits: Callable[[], bool], me: str) -> bool:
    queues = _by_queue(retry)
    order = _Ordering(tree, cq, queues, me)
    for target in order:
        mine, theirs = _lca_children(cq, target) if target is not cq else (cq, cq)
        a = queues[target.name].pop(0)
        if drs(tree, mine)[0] < drs(tree, theirs)[0]:
            tree.release(a)
            targets.append(Target(a, FAIR))
            if fits():
                return True
        order.drop(target)
    return False


def targets(tree: Tree, spec: ClusterQueue, wl: Workload, frs: set[FR],
            requests: dict[FR, int], *, fair: bool = False,
            strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare",
                                           "LessThanInitialShare"),
            fits: Callable[[], bool] | None = None) -> list[Target]:
    """Victims that let ``wl`` (asking ``requests``) fit, or [] when none do. ``fits``:
    Kueue's ``workloadFits`` beyond quota (topology-aware scheduling's check), asked once
    the quota fits with the candidates taken so far released from ``tree``; the search
    takes a victim set only when it is True too."""
    pre = spec.preemption
    if pre.within_cluster_queue == "Never" and pre.reclaim_within_cohort == "Never":
        return []  # no candidate anywhere (borrowWithinCohort needs reclaimWithinCohort)
    search = _Search(tree, spec, wl, frs, requests, also=fits)
    return _fair(search, strategies) if fair else search.classical()
