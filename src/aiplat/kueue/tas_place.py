"""Kueue's TAS placement of one pod set (or a leader and its workers) in a flavor's tree:
``findTopologyAssignment`` of ``tas_flavor_snapshot.go`` (v0.19, default feature gates).

Phase 1 counts, per leaf, how many pods (and, with a leader, a leader plus pods) fit in
what is left, and sums them up the tree, in slices at the slice level. Phase 2 picks the
level and domains: the requested level (required: one domain or the reason; preferred: the
levels above too, then spread over the top level; unconstrained: spread at once), the
domains sorted BestFit (most slices first, then the fullest) or, for unconstrained
requests, LeastFreeCapacity (fewest slices first; ``TASProfileMixed``); the last domain
taken is the tightest that still fits. Then level by level down to the leaves, each domain's
pods go to its children the same way. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from aiplat.kueue.tas_model import (
    DomainAssignment,
    PodSetRequest,
    SliceLayer,
    TopologyAssignment,
    TopologyRequest,
)
from aiplat.kueue.tas_tree import (
    MAX_INT32,
    Domain,
    Exclusions,
    Requests,
    Tree,
    count_in,
    feasible,
    remaining,
    subtract,
)


@dataclass
class _State:
    """``topologyAssignmentParameters`` and the exclusion counts."""
    count: int
    leader_count: int
    slice_size: int
    requested: int  # level index
    slice_level: int
    required: bool
    unconstrained: bool  # also: LeastFreeCapacity (TASProfileMixed is on)
    size_at_level: dict[int, int]
    layers: tuple[SliceLayer, ...]  # the multi-layer constraints, for the message
    stats: Exclusions = field(default_factory=Exclusions)


def place(tree: Tree, workers: PodSetRequest, leader: PodSetRequest | None,
          assumed: Mapping[str, Requests], simulate_empty: bool
          ) -> tuple[dict[str, TopologyAssignment], str]:
    """The pod sets' assignments, or Kueue's reason they do not fit."""
    st, reason = _prepare(tree, workers, leader is not None)
    if st is None:
        return {}, reason
    _fill_counts(tree, workers, leader, st, assumed=assumed, simulate_empty=simulate_empty)
    level, fit, reason = _find_level(tree, st.requested, st)
    if reason:
        return {}, reason
    fit = _descend(tree, fit, level, st)
    out: dict[str, TopologyAssignment] = {}
    if leader is not None:
        leads = []
        for d in fit:
            if d.leaders > 0:
                lead = copy.copy(d)
                lead.pods = d.leaders
                leads.append(lead)
        out[leader.name] = _build(tree, leads)
        fit = [d for d in fit if d.pods > 0]
    out[workers.name] = _build(tree, fit)
    return out, ""


def _prepare(tree: Tree, ps: PodSetRequest, has_leader: bool) -> tuple[_State | None, str]:
    """The levels and slice sizes the request names, or the reason they are wrong."""
    tr = ps.topology
    layers = tr.slices if tr is not None else ()
    size = layers[0].size if layers else 1
    if size <= 0:
        return None, "slice topology requested, but slice size not provided"
    key = _level_key(tree, tr, ps.implied)
    if key is None:
        return None, "topology level not specified"
    if key not in tree.levels:
        return None, f"no requested topology level: {key}"
    slice_key = layers[0].topology if layers else tree.levels[-1]
    if slice_key not in tree.levels:
        return None, f"no requested topology level for slices: {slice_key}"
    requested, slice_level = tree.levels.index(key), tree.levels.index(slice_key)
    if requested > slice_level:
        return None, f"podset slice topology {slice_key} is above the podset topology {key}"
    at_level, reason = _slice_size_at_level(tree, layers, size, slice_level)
    if reason:
        return None, reason
    unconstrained = ps.implied or (tr is not None and (tr.unconstrained or _slice_only(tr)))
    return _State(ps.count, 1 if has_leader else 0, size, requested, slice_level,
                  tr is not None and tr.required is not None, unconstrained, at_level,
                  layers if at_level else ()), ""


def _slice_only(tr: TopologyRequest) -> bool:
    return tr.required is None and tr.preferred is None and bool(tr.slices)


def _level_key(tree: Tree, tr: TopologyRequest | None, implied: bool) -> str | None:
    """``levelKeyWithImpliedFallback``: with no level asked for, implied TAS takes the
    lowest level."""
    if tr is None:
        return tree.levels[-1] if implied else None
    if tr.required is not None:
        return tr.required
    if tr.preferred is not None:
        return tr.preferred
    if _slice_only(tr):
        return tree.levels[0]
    return tree.levels[-1] if tr.unconstrained or implied else None


def _slice_size_at_level(tree: Tree, layers: tuple[SliceLayer, ...], size: int,
                         level: int) -> tuple[dict[int, int], str]:
    """``buildSliceSizeAtLevel``: each inner layer's size, on every level down to its own."""
    at: dict[int, int] = {}
    for layer in layers[1:]:
        if layer.topology not in tree.levels:
            return {}, f"no requested topology level for additional slice layer: {layer.topology}"
        inner = tree.levels.index(layer.topology)
        if inner <= level:
            return {}, (f"additional slice layer topology {layer.topology} must be at a lower "
                        f"level than {tree.levels[level]}")
        if layer.size <= 0 or size % layer.size:  # Kueue's webhook refuses a size of 0
            return {}, (f"additional slice layer size {layer.size} must evenly divide "
                        f"parent layer size {size}")
        for lvl in range(level + 1, inner + 1):
            at[lvl] = layer.size
        size, level = layer.size, inner
    return at, ""


def _fill_counts(tree: Tree, ps: PodSetRequest, leader: PodSetRequest | None, st: _State, *,
                 assumed: Mapping[str, Requests], simulate_empty: bool) -> None:
    """Phase 1 (``fillInCounts``): per leaf, then summed up the tree."""
    for doms in tree.per_level:
        for d in doms.values():
            d.reset()
    one = _with_pod(ps.requests)
    lead = _with_pod(leader.requests) if leader is not None else None
    tolerations = ps.tolerations + tree.tolerations
    for leaf in tree.leaves.values():
        st.stats.total += 1
        if tree.lowest_is_node and leaf.node is not None and not feasible(
                leaf.node, tolerations, ps.node_selector, ps.affinity, st.stats):
            continue
        left = remaining(leaf, assumed, simulate_empty)
        leaf.pods, limiting = count_in(one, left)
        if leaf.pods == 0 and limiting:
            st.stats.resources[limiting] = st.stats.resources.get(limiting, 0) + 1
        if lead is not None and count_in(lead, left)[0] > 0:
            leaf.leaders = 1
            subtract(left, lead)
        leaf.pods_wl = count_in(one, left)[0]
    for root in tree.roots:
        _sum_up(root, 0, st)


def _with_pod(requests: Mapping[str, int]) -> Requests:
    """A pod's requests plus the one ``pods`` it takes (``OnePodRequest``)."""
    return {**requests, "pods": requests.get("pods", 0) + 1}


def _sum_up(dom: Domain, level: int, st: _State) -> None:
    """``fillInCountsHelper``: children's pods add up (in whole inner slices under a
    multi-layer constraint); with a leader, the cheapest child to host it sets the loss."""
    if not dom.children:
        if level == st.slice_level:
            dom.slices, dom.slices_wl = dom.pods // st.slice_size, dom.pods_wl // st.slice_size
        return
    pods = slices = leaders = 0
    pod_loss = slice_loss = MAX_INT32
    contributes = False
    inner = st.size_at_level.get(level + 1)
    for child in dom.children:
        _sum_up(child, level + 1, st)
        cp, cpwl = child.pods, child.pods_wl
        if inner is not None:
            cp, cpwl = cp // inner * inner, cpwl // inner * inner
        pods += cp
        slices += child.slices
        if st.leader_count == 0 or child.leaders > 0:
            contributes = True
            pod_loss = min(cp - cpwl, pod_loss)
            slice_loss = min(child.slices - child.slices_wl, slice_loss)
        leaders = max(child.leaders, leaders)
    dom.pods, dom.leaders = pods, leaders
    dom.pods_wl = pods - pod_loss if contributes else 0
    slices_wl = slices - slice_loss if contributes else 0
    if level == st.slice_level:
        slices, slices_wl = dom.pods // st.slice_size, dom.pods_wl // st.slice_size
    dom.slices, dom.slices_wl = slices, slices_wl


def _sorted(doms: list[Domain], lfc: bool) -> list[Domain]:
    """``sortedDomains``: slices descending (BestFit) or ascending (LeastFreeCapacity),
    then the fewest pods, then the level values."""
    return sorted(doms, key=lambda d: (d.slices if lfc else -d.slices, d.pods, d.values))


def _sorted_wl(doms: list[Domain], lfc: bool) -> list[Domain]:
    """``sortedDomainsWithLeader``: those that can host the leader first."""
    return sorted(doms, key=lambda d: (-d.leaders, d.slices_wl if lfc else -d.slices_wl,
                                       d.pods_wl, d.values))


def _best_fit(doms: list[Domain], needed: int, leaders: int,
              count: Callable[[Domain], int]) -> Domain:
    """``findBestFitDomainBy``: the first domain with the fewest that still fit."""
    best, best_count = doms[0], MAX_INT32
    found = False
    for d in doms:
        if d.leaders < leaders:
            continue
        n = count(d)
        if needed <= n < best_count:
            best, best_count, found = d, n, True
    return best if found else doms[0]


def _best_fit_slices(doms: list[Domain], needed: int, leaders: int) -> Domain:
    return _best_fit(doms, needed, leaders,
                     (lambda d: d.slices_wl) if leaders > 0 else (lambda d: d.slices))


def _best_fit_pods(doms: list[Domain], needed: int, leaders: int) -> Domain:
    return _best_fit(doms, needed, leaders,
                     (lambda d: d.pods_wl) if leaders > 0 else (lambda d: d.pods))


def _find_level(tree: Tree, idx: int, st: _State) -> tuple[int, list[Domain], str]:
    """``findLevelWithFitDomains``: one domain at the level that fits them all, or (not
    required) a level higher up, or several domains at the top level."""
    if not tree.per_level[idx]:
        return 0, [], f"no topology domains at level: {tree.levels[idx]}"
    doms = _sorted_wl(list(tree.per_level[idx].values()), st.unconstrained)
    top = doms[0]
    want = st.count // st.slice_size
    if not st.unconstrained and top.slices_wl >= want and top.leaders >= st.leader_count:
        top = _best_fit_slices(doms, want, st.leader_count)
    if st.unconstrained:
        for d in doms:
            if st.leader_count > 0 and d.leaders < st.leader_count:
                continue
            if (d.slices_wl if st.leader_count > 0 else d.slices) >= want:
                return idx, [d], ""
        if st.required:
            return 0, [], _not_fit(tree, idx, doms[-1].pods, want, st)
    if top.slices_wl >= want and top.leaders >= st.leader_count:
        return idx, [top], ""
    if st.required:
        return 0, [], _not_fit(tree, idx, top.slices, want, st)
    if idx > 0 and not st.unconstrained:
        return _find_level(tree, idx - 1, st)
    return _spread(tree, idx, doms, want, st)


def _spread(tree: Tree, idx: int, doms: list[Domain], want: int,
            st: _State) -> tuple[int, list[Domain], str]:
    """The pods do not fit one domain of the top level: leaders first, then the rest by
    worker capacity, the last one the tightest fit."""
    taken: list[Domain] = []
    left, leaders = want, st.leader_count
    doms = _prioritize_leader(doms, st.count, st.leader_count, st.slice_size, True)
    i = 0
    while leaders > 0 and i < len(doms) and doms[i].leaders > 0:
        d = doms[i]
        if not st.unconstrained and d.slices_wl >= left:
            d = _best_fit_slices(doms[i:], left, leaders)
        taken.append(d)
        leaders -= d.leaders
        left -= d.slices_wl
        i += 1
    if leaders > 0:
        return 0, [], _not_fit(tree, idx, st.leader_count - leaders, want, st)
    rest = _sorted(doms[i:], st.unconstrained)
    for j, dom in enumerate(rest):
        if left <= 0:
            break
        d = dom
        if not st.unconstrained and d.slices >= left:
            d = _best_fit_slices(rest[j:], left, 0)
        taken.append(d)
        left -= d.slices
    if left > 0:
        return 0, [], _not_fit(tree, idx, want - left, want, st)
    return idx, taken, ""


def _prioritize_leader(doms: list[Domain], count: int, leader_count: int, slice_size: int,
                       by_slices: bool) -> list[Domain]:
    """``prioritizeLeaderDomain``: first the first domain that can host the leader without
    leaving too little room for the workers."""
    if leader_count == 0 or len(doms) < 2:
        return doms
    need = count // slice_size if by_slices else count
    have = sum(d.slices if by_slices else d.pods for d in doms)
    for i, d in enumerate(doms):
        if d.leaders < leader_count:
            continue
        loss = d.slices - d.slices_wl if by_slices else d.pods - d.pods_wl
        if have - loss < need:
            continue
        return doms if i == 0 else [d, *doms[:i], *doms[i + 1:]]
    return doms


def _descend(tree: Tree, fit: list[Domain], level: int, st: _State) -> list[Domain]:
    """Phase 2b: down to the leaves; above the slice level greedily over all the
    children, at and below it within each parent's share."""
    lfc = st.unconstrained
    fit = _minimum(fit, _Need.of(st.count, st.leader_count, st.slice_size, True), lfc)
    last = len(tree.levels) - 1
    while level < min(last, st.slice_level):
        kids = _sorted([c for d in fit for c in d.children], lfc)
        fit = _minimum(kids, _Need.of(st.count, st.leader_count, st.slice_size, True), lfc)
        level += 1
    while level < last:
        size = st.slice_size if level < st.slice_level else st.size_at_level.get(level + 1, 1)
        nxt: list[Domain] = []
        for d in fit:
            kids = _sorted(d.children, lfc)
            if size > 1:  # an inner layer: its own slice counts
                for k in kids:
                    k.slices, k.slices_wl = k.pods // size, k.pods_wl // size
            nxt += _minimum(kids, _Need.of(d.pods, d.leaders, size, size > 1), lfc)
        fit = nxt
        level += 1
    return fit


@dataclass
class _Need:
    """What is still to place: pods, or slices of ``unit`` pods; and leaders."""
    count: int  # pods, for the leader's priority
    left: int
    leaders: int
    unit: int
    by_slices: bool

    @classmethod
    def of(cls, count: int, leaders: int, slice_size: int, by_slices: bool) -> _Need:
        unit = slice_size if by_slices else 1
        return cls(count, count // unit, leaders, unit, by_slices)

    def have(self, d: Domain) -> int:
        return d.slices if self.by_slices else d.pods

    def with_leader(self, d: Domain) -> int:
        return d.slices_wl if self.by_slices else d.pods_wl

    def best_fit(self, doms: list[Domain], leaders: int) -> Domain:
        return (_best_fit_slices if self.by_slices else _best_fit_pods)(doms, self.left, leaders)

    def give(self, d: Domain, n: int) -> None:
        """The domain's share: ``n`` units."""
        if self.by_slices:
            d.slices = n
        d.pods = n * self.unit


def _minimum(doms: list[Domain], need: _Need, lfc: bool) -> list[Domain]:
    """``updateCountsToMinimumGeneric``: take domains in order until the pods (or slices)
    are placed, the last one the tightest fit (BestFit); sets each one's share."""
    doms = _prioritize_leader(doms, need.count, need.leaders, need.unit, need.by_slices)
    out: list[Domain] = []
    for i, dom in enumerate(doms):
        if need.leaders > 0:
            d, done = _take_with_leader(dom, doms[i:], need, lfc)
            out.append(d)
            if done:
                return out
            continue
        d = dom
        if not lfc and need.have(d) >= need.left:
            d = need.best_fit(doms[i:], 0)
        d.leaders = 0
        out.append(d)
        if need.have(d) >= need.left:
            need.give(d, need.left)
            return out
        need.give(d, need.have(d))
        need.left -= need.have(d)
    return []  # Kueue logs "code assumptions violated" and places nothing


def _take_with_leader(dom: Domain, rest: list[Domain], need: _Need,
                      lfc: bool) -> tuple[Domain, bool]:
    """``consumeWithLeadersGeneric``: a domain takes the leader and what else fits with it."""
    d = dom
    if not lfc and need.with_leader(dom) >= need.left and dom.leaders >= need.leaders:
        d = need.best_fit(rest, need.leaders)
    if need.with_leader(d) >= need.left and d.leaders >= need.leaders:
        d.leaders = need.leaders
        need.give(d, need.left)
        return d, True
    n = min(need.with_leader(d), need.left)
    if need.by_slices:
        d.slices_wl = n
    else:
        d.pods_wl = n
    d.leaders = min(d.leaders, need.leaders)
    need.give(d, n)
    need.left -= n
    need.leaders -= d.leaders
    return d, False


def _build(tree: Tree, doms: list[Domain]) -> TopologyAssignment:
    """``buildAssignment``: domains in level-value order; the hostname alone when it is
    the lowest level; none with no pods."""
    lvl = len(tree.levels) - 1 if tree.lowest_is_node else 0
    return TopologyAssignment(tree.levels[lvl:], tuple(
        DomainAssignment(d.values[lvl:], d.pods)
        for d in sorted(doms, key=lambda d: d.values) if d.pods != 0))


def _not_fit(tree: Tree, idx: int, fit: int, total: int, st: _State) -> str:
    """``notFitMessage`` (or ``multiLayerNotFitMessage``), with the excluded nodes."""
    name = f'topology "{tree.topology}"'
    if st.layers:
        msg = name + " doesn't allow to fit" + _layers_fit(tree, idx, st)
    elif fit == 0:
        msg = f"{name} doesn't allow to fit any of {total} {_unit(st)}(s)"
    else:
        msg = f"{name} allows to fit only {fit} out of {total} {_unit(st)}(s)"
    if st.stats.any():
        msg += f". Total nodes: {st.stats.total}; excluded: {st.stats.shown()}"
    return msg


def _unit(st: _State) -> str:
    return "pod" if st.slice_size == 1 else "slice"


def _layers_fit(tree: Tree, idx: int, st: _State) -> str:
    """Per layer, the slices that fit in the domain with the most slices at the level."""
    best: Domain | None = None
    for d in tree.per_level[idx].values():
        if best is None or (d.slices, best.id) > (best.slices, d.id):
            best = d
    if best is None:
        return ""
    parts = ""
    for layer in st.layers:
        if layer.topology in tree.levels:
            target = tree.levels.index(layer.topology)
            fit = _slices_below(best, idx, target, layer.size)
            parts += f"; {fit}/{st.count // layer.size} slice(s) fit on level {layer.topology}"
    return parts


def _slices_below(d: Domain, level: int, target: int, size: int) -> int:
    if level == target:
        return d.pods // size
    return sum(_slices_below(c, level + 1, target, size) for c in d.children)
