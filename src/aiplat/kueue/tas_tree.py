"""The topology tree of one TAS flavor and each leaf's free capacity, as Kueue's TAS cache
builds them (``tas_topology_tree.go``, ``tas_flavor.go`` ``snapshot``, ``tas_nodes_cache.go``
``find``), and the node filters of its default feasibility checker
(``scheduling_simulator_default.go``). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from aiplat.kueue.tas_model import (
    HOSTNAME,
    Node,
    Requirement,
    Taint,
    TasInput,
    Toleration,
    TopologyAssignment,
)

Requests = dict[str, int]
MAX_INT32 = 2**31 - 1


@dataclass(eq=False)
class Domain:
    """A topology domain; the counts are the placement's scratch state (``domainState``)."""
    id: str
    values: tuple[str, ...]
    parent: Domain | None = None
    children: list[Domain] = field(default_factory=list)
    node: Node | None = None  # a leaf's node when the lowest level is the hostname
    free: Requests = field(default_factory=dict)  # allocatable minus non-TAS pods
    tas: Requests = field(default_factory=dict)  # admitted TAS workloads
    pods: int = 0
    slices: int = 0
    pods_wl: int = 0  # ...WithLeader: what is left once a leader is placed here
    slices_wl: int = 0
    leaders: int = 0

    def reset(self) -> None:
        self.pods = self.slices = self.pods_wl = self.slices_wl = self.leaders = 0


@dataclass
class Tree:
    topology: str
    levels: tuple[str, ...]
    tolerations: tuple[Toleration, ...]
    per_level: list[dict[str, Domain]]
    leaves: dict[str, Domain]
    roots: list[Domain]

    @property
    def lowest_is_node(self) -> bool:
        return bool(self.levels) and self.levels[-1] == HOSTNAME


def build(inp: TasInput) -> Tree:
    """The flavor's tree with each leaf's capacity (``newTopologyTree`` and ``snapshot``)."""
    levels = inp.flavor.levels
    tree = Tree(inp.flavor.topology, levels, inp.flavor.tolerations,
                [{} for _ in levels], {}, [])
    node_leaf: dict[str, Domain] = {}
    for node in inp.nodes:
        if _in_flavor(node, inp.flavor.node_labels, levels):
            node_leaf[node.name] = _add_node(tree, node)
    for leaf in tree.leaves.values():
        _link(tree, leaf)
    for pod in inp.pods:
        if pod.counts() and pod.node in node_leaf:  # non-TAS usage, and one pod
            _sub(node_leaf[pod.node].free, {**pod.requests})
            _sub(node_leaf[pod.node].free, {"pods": 1})
    for adm in inp.admitted:
        held = _usage_leaf(tree, inp.flavor.name, adm.flavor, adm.levels, adm.values)
        if held is not None:
            _add(held.tas, scaled(adm.requests, adm.count))
            _add(held.tas, {"pods": adm.count})
    return tree


def _in_flavor(node: Node, node_labels: Mapping[str, str], levels: tuple[str, ...]) -> bool:
    """``nodesCache``: Ready and schedulable nodes only (``SchedulerLibraryIntegration`` is
    off); ``NodeMatchesFlavor``: the flavor's labels and every level's label."""
    if not node.ready or node.unschedulable:
        return False
    if any(node.labels.get(k) != v for k, v in node_labels.items()):
        return False
    return all(level in node.labels for level in levels)


def _add_node(tree: Tree, node: Node) -> Domain:
    values = tuple(node.labels[k] for k in tree.levels)
    key = values[-1] if tree.lowest_is_node else ",".join(values)
    leaf = tree.leaves.get(key)
    if leaf is None:
        leaf = Domain(key, values, node=node if tree.lowest_is_node else None)
        tree.leaves[key] = leaf
    _add(leaf.free, {**node.allocatable})
    return leaf


def _link(tree: Tree, dom: Domain) -> None:
    """``initializeHelper``: index the domain at its level and connect it to its parent."""
    tree.per_level[len(dom.values) - 1][dom.id] = dom
    if len(dom.values) == 1:
        tree.roots.append(dom)
        return
    pvalues = dom.values[:-1]
    pid = ",".join(pvalues)
    parent = tree.per_level[len(pvalues) - 1].get(pid)
    if parent is None:
        parent = Domain(pid, pvalues)
        _link(tree, parent)
    dom.parent = parent
    parent.children.append(dom)


def _usage_leaf(tree: Tree, flavor: str, adm_flavor: str, levels: tuple[str, ...],
                values: tuple[str, ...]) -> Domain | None:
    """Where an admitted domain's usage counts: by hostname across every hostname-level
    flavor (``TASHandleOverlappingFlavors``), else in its own flavor's leaf."""
    if tree.lowest_is_node:
        if not levels or levels[-1] != HOSTNAME or not values:
            return None
        return tree.leaves.get(values[-1])
    if adm_flavor != flavor:
        return None
    return tree.leaves.get(",".join(values))


def add_usage(into: dict[str, Requests], ta: TopologyAssignment,
              requests: Mapping[str, int]) -> None:
    """``addAssumedUsage``: what a placed pod set takes, per leaf id, for the next ones."""
    for d in ta.domains:
        usage = into.setdefault(",".join(d.values), {})
        _add(usage, scaled(requests, d.count))
        _add(usage, {"pods": d.count})


def scaled(requests: Mapping[str, int], n: int) -> Requests:
    return {k: v * n for k, v in requests.items()}


def _add(into: Requests, more: Mapping[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def _sub(into: Requests, less: Mapping[str, int]) -> None:
    for k, v in less.items():
        into[k] = into.get(k, 0) - v


def remaining(leaf: Domain, assumed: Mapping[str, Requests], simulate_empty: bool) -> Requests:
    """Free capacity minus TAS usage (unless simulating an empty cluster) minus what the
    earlier pod sets of this workload took."""
    left = dict(leaf.free)
    if not simulate_empty:
        _sub(left, leaf.tas)
    _sub(left, assumed.get(leaf.id, {}))
    return left


def count_in(requests: Mapping[str, int], capacity: Mapping[str, int]) -> tuple[int, str]:
    """``CountInWithLimitingResource``: how many times the requests fit, and the resource
    that limits it (ties go to the first name); a zero request never limits."""
    best: tuple[int, str] | None = None
    for name in sorted(requests):
        want = requests[name]
        n = MAX_INT32 if want == 0 else max(0, min(capacity.get(name, 0) // want, MAX_INT32))
        if best is None or n < best[0]:
            best = (n, name)
    return best if best is not None else (0, "")


def subtract(capacity: Requests, requests: Mapping[str, int]) -> None:
    _sub(capacity, requests)


# --- the default feasibility checker: taints, nodeSelector, required node affinity ---

@dataclass
class Exclusions:
    """``tasExclusionStats``: why nodes were left out, for the message."""
    total: int = 0
    node_selector: int = 0
    affinity: int = 0
    taints: dict[str, int] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)

    def any(self) -> bool:
        return bool(self.node_selector or self.affinity or self.taints or self.resources)

    def shown(self) -> str:
        parts = [f"nodeSelector: {self.node_selector}"] if self.node_selector else []
        parts += [f"affinity: {self.affinity}"] if self.affinity else []
        parts += [f'taint "{t}": {n}' for t, n in self.taints.items()]
        parts += [f'resource "{r}": {n}' for r, n in self.resources.items()]
        return ", ".join(sorted(parts))


def feasible(node: Node, tolerations: Iterable[Toleration], selector: Mapping[str, str],
             affinity: tuple[tuple[Requirement, ...], ...] | None, stats: Exclusions) -> bool:
    """``defaultChecker.FindFeasibleNodes`` for one node, counting the reason it fails."""
    tols = tuple(tolerations)
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not _tolerated(taint, tols):
            key = taint.shown()
            stats.taints[key] = stats.taints.get(key, 0) + 1
            return False
    if any(node.labels.get(k) != v for k, v in selector.items()):
        stats.node_selector += 1
        return False
    if affinity is not None and not any(_term(node, t) for t in affinity):
        stats.affinity += 1
        return False
    return True


def _tolerated(taint: Taint, tolerations: tuple[Toleration, ...]) -> bool:
    return any(_tolerates(t, taint) for t in tolerations)


def _tolerates(t: Toleration, taint: Taint) -> bool:
    """``Toleration.ToleratesTaint`` (comparison operators enabled)."""
    if (t.effect and t.effect != taint.effect) or (t.key and t.key != taint.key):
        return False
    if t.operator in ("", "Equal"):
        return t.value == taint.value
    if t.operator == "Exists":
        return True
    if t.operator in ("Lt", "Gt"):
        want, have = _int(t.value), _int(taint.value)
        if want is None or have is None:
            return False
        return have < want if t.operator == "Lt" else have > want
    return False


def _term(node: Node, term: tuple[Requirement, ...]) -> bool:
    """A node selector term: every requirement holds (an empty term matches nothing)."""
    return bool(term) and all(_requirement(node, r) for r in term)


def _requirement(node: Node, r: Requirement) -> bool:
    fields = {"metadata.name": node.name}
    labels: Mapping[str, str] = fields if r.field else node.labels
    have = labels.get(r.key)
    if r.operator == "In":
        return have is not None and have in r.values
    if r.operator == "NotIn":
        return have is None or have not in r.values
    if r.operator == "Exists":
        return have is not None
    if r.operator == "DoesNotExist":
        return have is None
    if r.operator in ("Gt", "Lt") and have is not None and len(r.values) == 1:
        a, b = _int(have), _int(r.values[0])
        if a is None or b is None:
            return False
        return a > b if r.operator == "Gt" else a < b
    return False


def _int(s: str) -> int | None:
    """Go's ``strconv.ParseInt(s, 10, 64)``: an optional sign and decimal digits only."""
    digits = s[1:] if s[:1] in ("+", "-") else s
    if not digits.isascii() or not digits.isdigit():
        return None
    n = int(s)
    return n if -(2**63) <= n < 2**63 else None
