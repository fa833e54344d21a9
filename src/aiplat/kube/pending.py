"""``aiplat kube why-pending``: the one-line reason a Job, Workload or Pod does not run, and
the evidence, reasoned over a ``ClusterObjects`` (pure: no API calls here).

The walk follows what has to happen, in order, and stops at the first thing that fails:

1. Kueue queueing: the Workload is active, its LocalQueue exists and points at an existing,
   active ClusterQueue (``status.conditions[Active]``, ``spec.stopPolicy``).
2. Flavor assignment: some flavor of the ClusterQueue is compatible with the pods' node
   selector/affinity and tolerates the flavor's ``nodeTaints``.
3. Quota, per flavor and resource, from the admitted Workloads' ``status.admission``, over
   the cohort tree as Kueue keeps it (:mod:`aiplat.kueue.quota`, the replay's own: Cohorts
   with a parent and their own quota, ``borrowingLimit``/``lendingLimit`` at every level): own
   nominal quota, what the tree has available, and which level's limit caps it; then
   whether preemption could help (``withinClusterQueue`` for lower-priority workloads in
   the queue) or is already under way (victims with ``Evicted``/``Preempted`` conditions
   still holding quota).
4. Topology-aware scheduling: with a required podset topology level, whether any domain at
   that level (nodes of the flavor grouped by the level's label) has room for all pods.
5. DRA: each claim of a pending pod is allocated, or which devices in the ResourceSlices
   satisfy its DeviceClass and request selectors (CEL, evaluated) and which of those are free.
6. Placement of pending pods: taints, node selector/affinity, allocatable minus requests.

Simplifications, stated: this walk answers "can it fit at all, and what blocks it" per
resource; the order Kueue's cycle takes (other heads, StrictFIFO, fair sharing), the
preemption it would make and requeues are the replay's. Given ``decide`` (Kueue's decision,
``aiplat.ops.why_pending``), the step that found the cause asks for it and the quota verdict
is Kueue's (:mod:`aiplat.kube.pending_answer`), so "fits" is never the final word.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal

from aiplat.errors import InputError
from aiplat.kube import cel
from aiplat.kube.lint.objects import cohort_root, selector_matches
from aiplat.kube.objects import deployment_of
from aiplat.kube.pending_answer import (
    Asked,
    Decide,
    Explanation,
    NextCycles,
    at_quota,
    besides,
)
from aiplat.kube.quantity import pod_requests, quantity_or_zero
from aiplat.kube.snapshot import ClusterObjects, Obj
from aiplat.kueue.quota import Node, Tree
from aiplat.kueue.snapshot import FR, KUEUE_VERSIONS, from_units, in_units, parse
from aiplat.shell import sh

KUEUE_API = KUEUE_VERSIONS[0]  # what a listed item without its apiVersion is read as


_BYTES = ("memory", "ephemeral-storage", "storage")


def _fmt(d: Decimal, resource: str = "") -> str:
    """A figure as a Kubernetes quantity, in one unit per resource so that a line never
    mixes units: bytes in Gi (up to three decimals, rounded up as Kueue rounds a request),
    cpu in cores, the rest as counts."""
    if resource in _BYTES or resource.startswith("hugepages-"):
        gi = (d / 2**30).quantize(Decimal("0.001"), rounding=ROUND_CEILING)
        return f"{gi.normalize():f}Gi"
    return f"{d.normalize():f}"


def _meta(o: Obj) -> Obj:
    return o.get("metadata") or {}


def _name(o: Obj) -> str:
    return str(_meta(o).get("name", ""))


def _ns(o: Obj) -> str:
    return str(_meta(o).get("namespace", ""))


def _cond(o: Obj, ctype: str) -> Obj | None:
    for c in (o.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def _is_true(o: Obj, ctype: str) -> bool:
    c = _cond(o, ctype)
    return bool(c and c.get("status") == "True")


def _podsets(wl: Obj) -> list[Obj]:
    return list((wl.get("spec") or {}).get("podSets") or [])


def workload_requests(wl: Obj, *, least: bool = False) -> dict[str, Decimal]:
    """What the workload's pods request; ``least``: with each pod set at its ``minCount``
    (the fewest pods partial admission may admit)."""
    out: dict[str, Decimal] = defaultdict(Decimal)
    for ps in _podsets(wl):
        n = int(ps.get("count", 1))
        if least and isinstance(ps.get("minCount"), int):
            n = min(n, int(ps["minCount"]))
        for k, v in pod_requests(((ps.get("template") or {}).get("spec")) or {}).items():
            out[k] += v * n
    return dict(out)


def _admitted(wl: Obj) -> bool:
    return _is_true(wl, "QuotaReserved") and not _is_true(wl, "Finished")


def _priority(wl: Obj) -> int:
    return int((wl.get("spec") or {}).get("priority") or 0)


def _quota_tree(snap: ClusterObjects) -> Tree:
    """The cohort tree as Kueue keeps it (:mod:`aiplat.kueue.quota`, in Kueue's units), with
    the quota the admitted Workloads hold (``status.admission``)."""
    objects = [{**o, "kind": kind, "apiVersion": o.get("apiVersion") or KUEUE_API}
               for resource, kind in (("clusterqueues", "ClusterQueue"), ("cohorts", "Cohort"))
               for o in snap.list(resource)]
    tree = Tree(parse(objects, "snapshot"))
    usage: dict[str, dict[FR, int]] = defaultdict(lambda: defaultdict(int))
    for wl in snap.list("workloads"):
        if not _admitted(wl):
            continue
        adm = (wl.get("status") or {}).get("admission") or {}
        for psa in adm.get("podSetAssignments") or []:
            flavors = psa.get("flavors") or {}
            for res, amount in (psa.get("resourceUsage") or {}).items():
                fr = (flavors.get(res, ""), res)
                usage[adm.get("clusterQueue", "")][fr] += in_units(res, quantity_or_zero(amount))
    for cq, held in usage.items():
        if cq in tree.cqs:
            tree.add_usage(tree.cqs[cq], held)
    return tree


def _holders(snap: ClusterObjects, cq: str, flavor: str, res: str) -> list[Obj]:
    out = []
    for wl in snap.list("workloads"):
        if not _admitted(wl):
            continue
        adm = (wl.get("status") or {}).get("admission") or {}
        if adm.get("clusterQueue") != cq:
            continue
        if any((psa.get("flavors") or {}).get(res) == flavor
               for psa in adm.get("podSetAssignments") or []):
            out.append(wl)
    return out


def _cohort(cq: Obj) -> str | None:
    spec = cq.get("spec") or {}
    c = spec.get("cohortName") or spec.get("cohort")
    return str(c) if c else None


def _tree(snap: ClusterObjects, cq: Obj) -> list[Obj]:
    """ClusterQueues that share quota with ``cq``: everything under its cohort tree's root."""
    mine = _cohort(cq)
    if not mine:
        return []
    cohorts = snap.list("cohorts")
    root = cohort_root(mine, cohorts)
    return [c for c in snap.list("clusterqueues")
            if _cohort(c) and cohort_root(str(_cohort(c)), cohorts) == root]


def _quotas(cq: Obj) -> dict[tuple[str, str], Obj]:
    out = {}
    for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
        for fl in rg.get("flavors") or []:
            for r in fl.get("resources") or []:
                out[(fl.get("name", ""), r.get("name", ""))] = r
    return out


def _flavor_order(cq: Obj) -> list[str]:
    out: list[str] = []
    for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
        for fl in rg.get("flavors") or []:
            if fl.get("name") not in out:
                out.append(fl.get("name", ""))
    return out


def _missing_flavors(snap: ClusterObjects, cq: Obj) -> list[str]:
    """Flavors the ClusterQueue names that the snapshot's ResourceFlavors lack (only when the
    snapshot has ResourceFlavors at all: a snapshot without them says nothing)."""
    if not snap.list("resourceflavors"):
        return []
    return [f for f in _flavor_order(cq) if snap.get("resourceflavors", f) is None]


def _tolerated(tols: list[Obj], taint: Obj) -> bool:
    for t in tols:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t.get("key") == taint.get("key")):
            return True
        if t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _required_terms(spec: Obj) -> list[Obj]:
    aff = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    req = aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return list(req.get("nodeSelectorTerms") or [])


def _node_matches(spec: Obj, labels: dict[str, str], only_keys: set[str] | None = None) -> bool:
    """nodeSelector and required node affinity against labels; with ``only_keys`` only the
    requirements on those keys count (what Kueue checks against a flavor's nodeLabels)."""
    for k, v in (spec.get("nodeSelector") or {}).items():
        if only_keys is not None and k not in only_keys:
            continue
        if labels.get(k) != v:
            return False
    terms = _required_terms(spec)
    if not terms:
        return True
    for term in terms:
        exprs = [e for e in term.get("matchExpressions") or []
                 if only_keys is None or e.get("key") in only_keys]
        if selector_matches({"matchExpressions": exprs}, labels):
            return True
    return False


def _flavor_problem(fl: Obj | None, name: str, spec: Obj) -> str | None:
    if fl is None:
        return f"flavor {name} does not exist"
    fspec = fl.get("spec") or {}
    labels = fspec.get("nodeLabels") or {}
    if not _node_matches(spec, labels, set(labels)):
        return f"flavor {name}: nodeLabels {labels} conflict with the pods' node selector/affinity"
    tols = list(spec.get("tolerations") or []) + list(fspec.get("tolerations") or [])
    for taint in fspec.get("nodeTaints") or []:
        if not _tolerated(tols, taint):
            return (f"flavor {name}: untolerated taint {taint.get('key')}"
                    f"{'=' + taint['value'] if taint.get('value') else ''}:{taint.get('effect')}")
    return None


@dataclass
class _Fit:
    flavor: str
    code: str
    reason: str
    evidence: list[str]
    guess: list[str] = field(default_factory=list)  # the walk's own preemption verdict


def _quota_fit(tree: Tree, cq: Obj, flavor: str, req: dict[str, Decimal]) -> _Fit:
    cqn = _name(cq)
    node = tree.cqs[cqn]
    evidence: list[str] = []
    worst: _Fit | None = None
    for res, asked in sorted(req.items()):
        if asked == 0:
            continue
        if (flavor, res) not in node.quotas:
            return _Fit(flavor, "ResourceNotCovered",
                        f"ClusterQueue {cqn} does not cover {res} in flavor {flavor}",
                        [f"covered: {sorted({r for (_f, r) in node.quotas})}"])
        q = in_units(res, asked)
        fit = (_flat_fit if node.parent is None else _cohort_fit)(tree, node, flavor, res, q)
        if isinstance(fit, str):
            evidence.append(fit + " — fits")
        elif worst is None:
            worst = fit
    if worst is None:
        return _Fit(flavor, "Fits", "", evidence)
    worst.evidence = evidence + worst.evidence
    return worst


def _fit_or_least(tree: Tree, cq: Obj, flavor: str, req: dict[str, Decimal],
                  least: dict[str, Decimal]) -> _Fit:
    """Partial admission: a job that can never fit whole may still fit with its pod sets
    at ``minCount`` (Kueue searches the counts down to it); then that is its quota answer."""
    fit = _quota_fit(tree, cq, flavor, req)
    if fit.code != "NeverFits" or least == req:
        return fit
    small = _quota_fit(tree, cq, flavor, least)
    if small.code == "NeverFits":
        return fit
    small.evidence.insert(0, f"partial admission: the whole job never fits ({fit.reason}); "
                          "with its pod sets at minCount it asks "
                          + ", ".join(f"{r}={_fmt(v, r)}" for r, v in sorted(least.items())
                                      if v))
    return small


def _show(value: int, res: str) -> str:
    """A quota figure in Kueue's units as the quantity reads (cores, bytes as Gi, GPUs)."""
    return _fmt(from_units(res, value), res)


def _ref(node: Node) -> str:
    return f"{'ClusterQueue' if node.is_cq else 'Cohort'} {node.name}"


def _own(node: Node, flavor: str, res: str, q: int) -> str:
    fr = (flavor, res)
    return (f"{res} in {flavor}: requests {_show(q, res)}, ClusterQueue {node.name} uses "
            f"{_show(node.usage.get(fr, 0), res)} of nominal {_show(node.nominal(fr), res)}")


def _flat_fit(tree: Tree, node: Node, flavor: str, res: str, q: int) -> _Fit | str:
    """A ClusterQueue without a cohort: its nominal quota is all it has."""
    fr = (flavor, res)
    ev = _own(node, flavor, res, q)
    nominal, used = node.nominal(fr), node.usage.get(fr, 0)
    if used + q <= nominal:
        return ev
    return _Fit(flavor, "NeverFits" if q > nominal else "QuotaExhausted",
                f"{res} quota in flavor {flavor} is "
                + ("smaller than the request" if q > nominal else "used up")
                + f": needs {_show(q, res)}, {_show(max(0, nominal - used), res)}"
                f" free of {_show(nominal, res)}, no cohort to borrow from", [ev])


def _levels(node: Node, fr: FR, res: str) -> list[str]:
    """One line per Cohort above the queue: its quota, limits and usage (nested trees)."""
    out = []
    for c in node.ancestors():
        q = c.quotas.get(fr)
        nominal = c.nominal(fr)
        parts = [f"subtree quota {_show(c.subtree.get(fr, 0), res)}"
                 + (f" (own nominal {_show(nominal, res)})" if nominal else ""),
                 f"uses {_show(c.usage.get(fr, 0), res)}"]
        if q is not None and q.borrowing_limit is not None:
            parts.append(f"borrowingLimit {_show(q.borrowing_limit, res)}")
        if q is not None and q.lending_limit is not None:
            parts.append(f"lendingLimit {_show(q.lending_limit, res)} (keeps "
                         f"{_show(c.local(fr), res)} for its own queues)")
        where = f"parent {c.parent.name}" if c.parent is not None else "root"
        out.append(f"Cohort {c.name} ({where}): " + ", ".join(parts))
    return out


def _binding(tree: Tree, node: Node, fr: FR) -> Node | None:
    """The node whose borrowingLimit caps a queue now: the lowest one tighter than what the
    level above has; None when the root's free pool does."""
    n = node
    while n.parent is not None:
        cap = n.borrow_cap(fr)
        if cap is not None and cap < tree.available(n.parent, fr):
            return n
        n = n.parent
    return None


def _never_binding(tree: Tree, node: Node, fr: FR) -> Node:
    """On an empty tree: the node whose borrowingLimit caps ``potential``, else the root."""
    n = node
    while n.parent is not None:
        if tree.potential(n, fr) < n.local(fr) + tree.potential(n.parent, fr):
            return n
        n = n.parent
    return n


def _cohort_fit(tree: Tree, node: Node, flavor: str, res: str, q: int) -> _Fit | str:
    """A ClusterQueue in a cohort tree: Kueue's available and potential quota, and which
    level's limit caps it."""
    fr = (flavor, res)
    own = node.quotas.get(fr)
    limit = own.borrowing_limit if own is not None else None
    root = node.root()
    pool_free = tree.available(root, fr)
    ev = (_own(node, flavor, res, q) + f"; cohort {root.name} lendable "
          f"{_show(root.subtree.get(fr, 0), res)}, free {_show(pool_free, res)}; "
          f"borrowingLimit {'unlimited' if limit is None else _show(limit, res)}")
    nested = _levels(node, fr, res) if node.parent is not root else []
    avail = tree.available(node, fr)
    if q <= avail:
        return "; ".join([ev, *nested])
    potential = tree.potential(node, fr)
    if q > potential:
        cap = _never_binding(tree, node, fr)
        cap_q = cap.quotas.get(fr)
        if cap.parent is None:
            by = (f" (cohort {cap.name}'s whole subtree quota is "
                  f"{_show(cap.subtree.get(fr, 0), res)})")
        else:
            by = (f" ({_ref(cap)}'s nominal {_show(cap.nominal(fr), res)}"
                  if cap.is_cq else f" ({_ref(cap)}'s subtree quota "
                  f"{_show(cap.subtree.get(fr, 0), res)}") + (
                f" + borrowingLimit {_show((cap_q.borrowing_limit if cap_q else None) or 0, res)})")
        return _Fit(flavor, "NeverFits",
                    f"requests {_show(q, res)} {res} but ClusterQueue {node.name} can never "
                    f"hold more than {_show(potential, res)} in flavor {flavor}{by}",
                    [ev, *nested])
    b = _binding(tree, node, fr)
    short = q - avail
    used, nominal = node.usage.get(fr, 0), node.nominal(fr)
    if b is None:
        # The pool holds the queue's own lendable quota too: one figure, as Kueue reports
        # it ("N more needed").
        return _Fit(flavor, "QuotaExhausted" if used + q > nominal else "CohortExhausted",
                    f"{res} in flavor {flavor}: needs {_show(q, res)}, cohort {root.name} "
                    f"has {_show(pool_free, res)} free (ClusterQueue {node.name}'s unused "
                    f"quota included): {_show(short, res)} more needed", [ev, *nested])
    if b is node:
        return _Fit(flavor, "BorrowingLimit",
                    f"would borrow {_show(used + q - nominal, res)} {res} in flavor "
                    f"{flavor} but ClusterQueue {node.name}'s borrowingLimit is "
                    f"{'unlimited' if limit is None else _show(limit, res)} (cohort "
                    f"{root.name} has {_show(pool_free, res)} free)", [ev, *nested])
    b_q = b.quotas.get(fr)
    return _Fit(flavor, "BorrowingLimit",
                f"{res} in flavor {flavor}: needs {_show(q, res)}, {_show(short, res)} more "
                f"than Cohort {b.name}'s borrowingLimit "
                f"{_show((b_q.borrowing_limit if b_q else None) or 0, res)} "
                f"lets its queues take from {b.parent.name if b.parent else ''} (its subtree "
                f"quota {_show(b.subtree.get(fr, 0), res)}, used "
                f"{_show(b.usage.get(fr, 0), res)}; cohort "
                f"{root.name} has {_show(pool_free, res)} free)", [ev, *nested])


def _eviction_message(v: Obj) -> str:
    return str((_cond(v, "Evicted") or _cond(v, "Preempted") or {}).get("message", ""))


def _preemption(snap: ClusterObjects, wl: Obj, cq: Obj, fit: _Fit) -> Explanation | None:
    """Victims already evicted and still holding quota, or victims that could be taken."""
    me = _priority(wl)
    candidates = _tree(snap, cq) or [cq]
    evicted = []
    for c in candidates:
        for res in {r for (f, r) in _quotas(c) if f == fit.flavor}:
            for v in _holders(snap, _name(c), fit.flavor, res):
                cond = _cond(v, "Evicted") or _cond(v, "Preempted")
                if cond and cond.get("status") == "True" and v not in evicted:
                    evicted.append(v)
    if evicted:
        names = ", ".join(f"{_ns(v)}/{_name(v)}" for v in evicted)
        return Explanation(
            "", "WaitingForPreemption",
            f"waiting for preemption: {len(evicted)} workload(s) evicted to make room "
            f"still hold quota in flavor {fit.flavor} ({names})",
            [*fit.evidence, *(f"victim {_ns(v)}/{_name(v)}: priority {_priority(v)}, "
                              f"{_eviction_message(v)}" for v in evicted),
             "the victims' pods must terminate (check terminationGracePeriodSeconds and "
             "finalizers) before Kueue admits this workload"])
    pol = ((cq.get("spec") or {}).get("preemption") or {})
    within = pol.get("withinClusterQueue", "Never")
    lower = [v for res in {r for (f, r) in _quotas(cq) if f == fit.flavor}
             for v in _holders(snap, _name(cq), fit.flavor, res) if _priority(v) < me]
    if within != "Never" and lower:
        return None  # Kueue will preempt on its next cycle; the quota reason stands
    if within == "Never" and lower:
        fit.guess.append(f"{len(lower)} lower-priority workload(s) hold quota, but "
                         "preemption.withinClusterQueue is Never")
    elif not lower:
        fit.guess.append("preemption cannot help: no lower-priority workload holds quota "
                         f"in ClusterQueue {_name(cq)}")
    return None


def _node_free(snap: ClusterObjects) -> dict[str, dict[str, Decimal]]:
    free: dict[str, dict[str, Decimal]] = {}
    for n in snap.list("nodes"):
        alloc = ((n.get("status") or {}).get("allocatable")) or {}
        free[_name(n)] = {k: quantity_or_zero(v) for k, v in alloc.items()}
    for p in snap.list("pods"):
        node = (p.get("spec") or {}).get("nodeName")
        phase = (p.get("status") or {}).get("phase")
        if not node or node not in free or phase in ("Succeeded", "Failed"):
            continue
        for k, v in pod_requests(p.get("spec") or {}).items():
            free[node][k] = free[node].get(k, Decimal(0)) - v
    return free


_MANY = 1_000_000  # pods: more than any pod set asks


def _pods_fit(free: dict[str, Decimal], per_pod: dict[str, Decimal]) -> int:
    n: Decimal | None = None
    for k, v in per_pod.items():
        if v <= 0:
            continue
        have = free.get(k, Decimal(0))
        # a quotient past Decimal's 28 digits (10**30 allocatable) cannot be floored: capped
        k_fit = Decimal(0) if have <= 0 else Decimal(_MANY) if have / v >= _MANY else have // v
        n = k_fit if n is None else min(n, k_fit)
    return int(n) if n is not None else _MANY


def _topology(snap: ClusterObjects, wl: Obj, flavor: Obj) -> Explanation | None:
    for ps in _podsets(wl):
        tr = ps.get("topologyRequest") or {}
        ann = (((ps.get("template") or {}).get("metadata") or {}).get("annotations")) or {}
        level = tr.get("required") or ann.get("kueue.x-k8s.io/podset-required-topology")
        if not level:
            continue
        count = int(ps.get("count", 1))
        spec = ((ps.get("template") or {}).get("spec")) or {}
        per_pod = pod_requests(spec)
        labels = ((flavor.get("spec") or {}).get("nodeLabels")) or {}
        free = _node_free(snap)
        domains: dict[str, int] = defaultdict(int)
        sizes: dict[str, int] = defaultdict(int)
        for n in snap.list("nodes"):
            nl = _meta(n).get("labels") or {}
            if not all(nl.get(k) == v for k, v in labels.items()) or level not in nl:
                continue
            domains[nl[level]] += _pods_fit(free.get(_name(n), {}), per_pod)
            sizes[nl[level]] += 1
        best = max(domains.values(), default=0)
        if best < count:
            ev = [f"{d}: {sizes[d]} node(s), room for {domains[d]} pod(s)"
                  for d in sorted(domains)]
            return Explanation("", "TopologyDomainTooSmall",
                               f"podset {ps.get('name')} needs {count} pods in one {level} "
                               f"domain (required topology) but the roomiest has space for "
                               f"{best}", ev or [f"no node of flavor {_name(flavor)} carries "
                                                 f"label {level}"])
    return None


def _allocated_devices(snap: ClusterObjects) -> dict[tuple[str, str, str], str]:
    out = {}
    for c in snap.list("resourceclaims"):
        alloc = ((c.get("status") or {}).get("allocation") or {})
        for r in ((alloc.get("devices") or {}).get("results")) or []:
            out[(r.get("driver", ""), r.get("pool", ""), r.get("device", ""))] = \
                f"{_ns(c)}/{_name(c)}"
    return out


def _claim_for(snap: ClusterObjects, pod: Obj, entry: Obj) -> Obj | None:
    if entry.get("resourceClaimName"):
        return snap.get("resourceclaims", entry["resourceClaimName"], _ns(pod))
    for st in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if st.get("name") == entry.get("name") and st.get("resourceClaimName"):
            return snap.get("resourceclaims", st["resourceClaimName"], _ns(pod))
    return None


@dataclass
class _Candidates:
    """What the ResourceSlices offer one (sub)request of a claim."""

    matching: int = 0
    per_node_free: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    errors: set[str] = field(default_factory=set)
    unmatched: str | None = None
    """The first selector no published device satisfies, when none matches."""

    @property
    def best(self) -> int:
        return max(self.per_node_free.values(), default=0)


def _candidates(snap: ClusterObjects, exprs: list[str],
                allocated: dict[tuple[str, str, str], str]) -> _Candidates:
    c = _Candidates()
    passing = [0] * len(exprs)
    for sl in snap.list("resourceslices"):
        s = sl.get("spec") or {}
        driver, pool = s.get("driver", ""), (s.get("pool") or {}).get("name", "")
        for dev in s.get("devices") or []:
            results = []
            for k, e in enumerate(exprs):
                try:
                    ok = bool(cel.evaluate(e, driver, dev))
                except cel.CelError as err:
                    c.errors.add(str(err))
                    ok = False
                passing[k] += ok
                results.append(ok)
            if not all(results):
                continue
            c.matching += 1
            if (driver, pool, dev.get("name", "")) not in allocated:
                c.per_node_free[s.get("nodeName", pool)] += 1
    if not c.matching:
        c.unmatched = next((e for e, n in zip(exprs, passing, strict=True) if n == 0), None)
    return c


def _dra_blocker(cls_name: str, c: _Candidates, count: int,
                 allocated: dict[tuple[str, str, str], str]) -> tuple[str, str]:
    """(code, why) for a subrequest the slices cannot serve: no device matches (and which
    selector excludes them all), every matching device is allocated, or the free ones are
    spread over nodes with fewer than ``count`` each."""
    errors = f"; CEL errors: {sorted(c.errors)}" if c.errors else ""
    if not c.matching:
        which = (f"selector {c.unmatched!r}" if c.unmatched
                 else "the selectors together")
        return ("NoDeviceMatches", f"class {cls_name}: no published device matches {which}"
                + errors)
    free = sum(c.per_node_free.values())
    if not free:
        held = sorted(set(allocated.values()))
        return ("DevicesAllocated", f"class {cls_name}: all {c.matching} matching device(s) "
                f"are allocated (to {', '.join(held[:5])}{', ...' if len(held) > 5 else ''})"
                + errors)
    return ("DevicesSpread", f"class {cls_name}: {c.matching} device(s) match, {free} free, "
            f"but at most {c.best} free on one node (need {count} on one node)" + errors)


def _dra(snap: ClusterObjects, pod: Obj) -> Explanation | None:
    allocated = _allocated_devices(snap)
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        claim = _claim_for(snap, pod, entry)
        if claim is None:
            return Explanation("", "ClaimMissing",
                               f"ResourceClaim for pod claim {entry.get('name')!r} does not "
                               "exist yet", ["the resourceclaim controller creates it from "
                                             f"template {entry.get('resourceClaimTemplateName')}"])
        if ((claim.get("status") or {}).get("allocation")):
            continue
        for req in (((claim.get("spec") or {}).get("devices") or {}).get("requests")) or []:
            blocked = _request_blocker(snap, req, allocated)
            if blocked is not None:
                code, tried = blocked
                return Explanation(
                    "", code, f"claim {_ns(claim)}/{_name(claim)} request "
                    f"{req.get('name')!r}: {tried[0]}", tried)
    return None


def _request_blocker(snap: ClusterObjects, req: Obj, allocated: dict[tuple[str, str, str], str]
                     ) -> tuple[str, list[str]] | None:
    """None when some subrequest (``exactly`` or one of ``firstAvailable``) can be served;
    else the first subrequest's blocker code and every subrequest's reason."""
    subs = [req["exactly"]] if "exactly" in req else list(req.get("firstAvailable") or [])
    tried: list[str] = []
    codes: list[str] = []
    for sub in subs:
        cls_name = sub.get("deviceClassName", "")
        dc = snap.get("deviceclasses", cls_name)
        if dc is None:
            codes.append("DeviceClassMissing")
            tried.append(f"DeviceClass {cls_name} does not exist")
            continue
        exprs = [(s.get("cel") or {}).get("expression", "")
                 for s in ((dc.get("spec") or {}).get("selectors") or [])
                 + (sub.get("selectors") or [])]
        count = int(sub.get("count", 1))
        c = _candidates(snap, exprs, allocated)
        if c.best >= count:
            return None  # this subrequest can be satisfied; not the blocker
        code, why = _dra_blocker(cls_name, c, count, allocated)
        codes.append(code)
        tried.append(why)
    return (codes[0], tried) if codes else None


def _placement(snap: ClusterObjects, pod: Obj) -> Explanation | None:
    spec = pod.get("spec") or {}
    per_pod = pod_requests(spec)
    free = _node_free(snap)
    reasons: dict[str, int] = defaultdict(int)
    nodes = snap.list("nodes")
    for n in nodes:
        labels = _meta(n).get("labels") or {}
        taints = [t for t in ((n.get("spec") or {}).get("taints") or [])
                  if t.get("effect") in ("NoSchedule", "NoExecute")]
        bad = [t for t in taints if not _tolerated(spec.get("tolerations") or [], t)]
        if bad:
            reasons[f"untolerated taint {bad[0].get('key')}:{bad[0].get('effect')}"] += 1
            continue
        if not _node_matches(spec, labels):
            reasons["node selector/affinity mismatch"] += 1
            continue
        short = [k for k, v in per_pod.items() if v > free.get(_name(n), {}).get(k, Decimal(0))]
        if short:
            reasons[f"insufficient {short[0]}"] += 1
            continue
        return None
    detail = ", ".join(f"{v} {k}" for k, v in sorted(reasons.items()))
    return Explanation("", "Unschedulable",
                       f"0/{len(nodes)} nodes can run the pod: {detail or 'no nodes'}",
                       ["pod requests " + ", ".join(f"{k}={_fmt(v, k)}"
                                                    for k, v in sorted(per_pod.items()))])


def _pods_of(snap: ClusterObjects, wl: Obj) -> list[Obj]:
    owners = {(o.get("kind"), o.get("name")) for o in _meta(wl).get("ownerReferences") or []}
    out = []
    for p in snap.list("pods"):
        if _ns(p) != _ns(wl):
            continue
        labels = _meta(p).get("labels") or {}
        jobs = {("Job", labels.get(k)) for k in ("job-name", "batch.kubernetes.io/job-name")}
        # Kueue's pod integration: the Workload of a plain pod (a Deployment's) owns by the pod
        jobs.add(("Pod", _name(p)))
        if labels.get("kueue.x-k8s.io/workload") == _name(wl) or jobs & owners:
            out.append(p)
    return out


def _explain_workload(snap: ClusterObjects, wl: Obj, decide: Decide | None = None) -> Explanation:
    ref = _workload_ref(wl)
    if _is_true(wl, "Finished"):
        return Explanation(ref, "Finished", "the workload has finished", [])
    ask = functools.partial(_ask, decide, wl)
    if (wl.get("spec") or {}).get("active") is False:
        return besides(Explanation(ref, "Deactivated", "the workload is deactivated (spec."
                                   "active: false), e.g. after exceeding its requeue backoff "
                                   "limit", ["set spec.active: true to requeue it"]),
                       ask(), "queue")
    kueue_says = _cond(wl, "QuotaReserved")
    said = ([f"Kueue: {kueue_says.get('reason')}: {kueue_says.get('message')}"]
            if kueue_says and kueue_says.get("status") == "False" and kueue_says.get("message")
            else [])
    if _admitted(wl):
        return besides(_explain_admitted(snap, wl, ref), ask(), "admitted")
    queued = _queue_of(snap, wl, ref, said, ask=ask)
    if isinstance(queued, Explanation):
        return queued
    return _explain_quota(snap, wl, queued, said, ask=ask)


def _workload_ref(wl: Obj) -> str:
    return f"Workload/{_ns(wl)}/{_name(wl)}"


def _ask(decide: Decide | None, wl: Obj) -> Asked:
    """Kueue's decision for the workload (see :mod:`aiplat.kube.pending_answer`)."""
    if decide is None:
        return None
    try:
        return decide(f"{_ns(wl)}/{_name(wl)}")
    except InputError as err:
        return str(err)


def _explain_admitted(snap: ClusterObjects, wl: Obj, ref: str) -> Explanation:
    """An admitted workload: what keeps one of its pods pending, if anything."""
    pods = [p for p in _pods_of(snap, wl) if (p.get("status") or {}).get("phase") == "Pending"]
    for p in pods:
        for check in (_dra, _placement):
            e = check(snap, p)
            if e is not None:
                return Explanation(ref, e.code, e.reason,
                                   [f"admitted; pod {_ns(p)}/{_name(p)} is Pending",
                                    *e.evidence])
    return Explanation(ref, "Admitted", "admitted by Kueue; no pending pod is blocked",
                       [f"{len(_pods_of(snap, wl))} pod(s) found"])


def _queue_of(snap: ClusterObjects, wl: Obj, ref: str, said: list[str], *,
              ask: Callable[[], Asked]) -> Obj | Explanation:
    """The active ClusterQueue behind the workload's LocalQueue, or why there is none (a
    missing queue: Kueue cannot schedule it, nothing to ask)."""
    queue = (wl.get("spec") or {}).get("queueName", "")
    lq = snap.get("localqueues", queue, _ns(wl))
    if lq is None:
        existing = sorted(_name(q) for q in snap.list("localqueues") if _ns(q) == _ns(wl))
        return Explanation(ref, "LocalQueueMissing",
                           f"LocalQueue {queue!r} does not exist in namespace {_ns(wl)!r}",
                           [f"LocalQueues in {_ns(wl)}: {existing or 'none'}",
                            "fix the kueue.x-k8s.io/queue-name label or create the LocalQueue",
                            *said])
    lq_stop = (lq.get("spec") or {}).get("stopPolicy", "None")
    if lq_stop in ("Hold", "HoldAndDrain"):
        return besides(Explanation(
            ref, "LocalQueueStopped",
            f"LocalQueue {_ns(wl)}/{queue} is stopped (stopPolicy {lq_stop})",
            ["a held LocalQueue admits nothing new"
             + (" and HoldAndDrain evicts what it admitted" if lq_stop == "HoldAndDrain"
                else ""),
             "resume: " + sh("kubectl patch localqueue {q} -n {ns} --type merge "
                             "-p '{{\"spec\":{{\"stopPolicy\":\"None\"}}}}'",
                             q=queue, ns=_ns(wl)), *said]), ask(), "queue")
    cq_name = (lq.get("spec") or {}).get("clusterQueue", "")
    cq = snap.get("clusterqueues", cq_name)
    if cq is None:
        return Explanation(ref, "ClusterQueueMissing",
                           f"LocalQueue {_ns(wl)}/{queue} points at ClusterQueue {cq_name!r}, "
                           "which does not exist", said)
    inactive = _inactive(snap, cq, ref, said)
    return cq if inactive is None else besides(inactive, ask(), "queue")


def _missing_checks(snap: ClusterObjects, cq: Obj) -> list[str]:
    """AdmissionChecks the ClusterQueue names (v1beta2: ``admissionChecksStrategy``; v1beta1
    also ``admissionChecks``) that the snapshot lacks, only when it lists AdmissionChecks at
    all. Kueue keeps the queue inactive, reason AdmissionCheckNotFound (kueue
    pkg/cache/scheduler/clusterqueue.go)."""
    if "admissionchecks" not in snap.items:
        return []
    spec = cq.get("spec") or {}
    names = list(spec.get("admissionChecks") or [])
    names += [c.get("name") for c in (spec.get("admissionChecksStrategy") or {})
              .get("admissionChecks") or [] if isinstance(c, dict)]
    return [n for n in dict.fromkeys(names) if n and snap.get("admissionchecks", n) is None]


def _inactive(snap: ClusterObjects, cq: Obj, ref: str, said: list[str]) -> Explanation | None:
    cq_name = _name(cq)
    checks = _missing_checks(snap, cq)
    if checks:
        return Explanation(ref, "ClusterQueueInactive",
                           f"ClusterQueue {cq_name} is inactive: its AdmissionCheck"
                           f"{'s' if len(checks) > 1 else ''} {', '.join(checks)} "
                           f"do{'' if len(checks) > 1 else 'es'} not exist",
                           ["Kueue keeps a ClusterQueue inactive (AdmissionCheckNotFound) while "
                            "an admission check it names is missing; create the AdmissionCheck "
                            "(and its controller) or remove it from the ClusterQueue", *said])
    missing = _missing_flavors(snap, cq)
    if missing:
        return Explanation(ref, "ClusterQueueInactive",
                           f"ClusterQueue {cq_name} is inactive: its ResourceFlavor"
                           f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                           f"do{'' if len(missing) > 1 else 'es'} not exist",
                           ["Kueue keeps a ClusterQueue inactive (FlavorNotFound) while a flavor "
                            "it names is missing; create it or remove it from resourceGroups",
                            *said])
    active = _cond(cq, "Active")
    stop = (cq.get("spec") or {}).get("stopPolicy", "None")
    if stop in ("Hold", "HoldAndDrain") or (active and active.get("status") == "False"):
        why = (f"stopPolicy {stop}" if stop in ("Hold", "HoldAndDrain") else
               f"{active.get('reason')}: {active.get('message')}" if active else "")
        return Explanation(ref, "ClusterQueueInactive",
                           f"ClusterQueue {cq_name} is inactive ({why})",
                           ["an inactive ClusterQueue admits nothing; fix the cause (missing "
                            "flavor, admission check, stop policy) and it resumes", *said])
    return None


def _explain_quota(snap: ClusterObjects, wl: Obj, cq: Obj, said: list[str], *,
                   ask: Callable[[], Asked]) -> Explanation:
    """Flavors, quota, topology and preemption for a queued workload on an active queue;
    the quota verdict is Kueue's when it is asked."""
    ref = _workload_ref(wl)
    cq_name = _name(cq)
    req, least = workload_requests(wl), workload_requests(wl, least=True)
    spec0 = (((_podsets(wl) or [{}])[0].get("template") or {}).get("spec")) or {}
    problems, fits = [], []
    tree: Tree | None = None  # built once a flavor suits the pods
    for fname in _flavor_order(cq):
        fl = snap.get("resourceflavors", fname)
        prob = _flavor_problem(fl, fname, spec0)
        if prob:
            problems.append(prob)
            continue
        tree = tree or _quota_tree(snap)
        fits.append(_fit_or_least(tree, cq, fname, req, least))
    if not fits:  # no flavor at all: Kueue says "resource R unavailable in ClusterQueue"
        why = problems[0] if problems else "it has none (spec.resourceGroups is empty)"
        return besides(Explanation(ref, "FlavorMismatch", f"no flavor of ClusterQueue "
                                   f"{cq_name} suits the pods: {why}",
                                   [*problems, *said]), ask(), "blocker")
    ok = next((f for f in fits if f.code == "Fits"), None)
    if ok is not None:
        fl = snap.get("resourceflavors", ok.flavor) or {}
        if (fl.get("spec") or {}).get("topologyName"):
            e = _topology(snap, wl, fl)
            if e is not None:
                return besides(Explanation(ref, e.code, e.reason,
                                           [*ok.evidence, *e.evidence, *said]), ask(), "blocker")
        # Per resource only: whether Kueue's cycle admits it (queue order, other heads,
        # requeues) is Kueue's decision.
        return at_quota(Explanation(ref, "Fits", f"quota is available in flavor {ok.flavor} "
                                    "per resource", [*ok.evidence, *said]), ask(), _cohort(cq))
    rank = {"WaitingForPreemption": 0, "BorrowingLimit": 1, "QuotaExhausted": 2,
            "CohortExhausted": 3, "NeverFits": 4, "ResourceNotCovered": 5}
    best = sorted(fits, key=lambda f: rank.get(f.code, 9))[0]
    pre = _preemption(snap, wl, cq, best)
    if pre is not None:
        return besides(Explanation(ref, pre.code, pre.reason, [*pre.evidence, *said]), ask(),
                       "victims")
    k = ask()
    # The walk's preemption verdict looks within the queue only; Kueue's stands instead
    # where the replay preempts (headline and evidence must agree).
    guess = [] if isinstance(k, NextCycles) and k.victims else best.guess
    return at_quota(Explanation(ref, best.code, best.reason,
                                [*best.evidence, *guess, *problems, *said]), k, _cohort(cq))


def why_pending(snap: ClusterObjects, name: str, namespace: str | None = None,
                decide: Decide | None = None) -> Explanation:
    """Explain a Workload, a Job (via its Workload), a Pod or a Deployment (its first pending
    pod), by name; with ``decide``, the
    steps that need Kueue's decision for a Workload ask it (see
    :mod:`aiplat.kube.pending_answer`), else the walk answers alone."""
    def in_ns(o: Obj) -> bool:
        return namespace is None or _ns(o) == namespace

    for wl in snap.list("workloads"):
        if _name(wl) == name and in_ns(wl):
            return _explain_workload(snap, wl, decide)
    for wl in snap.list("workloads"):
        owners = _meta(wl).get("ownerReferences") or []
        if in_ns(wl) and any(o.get("name") == name for o in owners):
            return _explain_workload(snap, wl, decide)
    for p in snap.list("pods"):
        if _name(p) == name and in_ns(p):
            wl_name = (_meta(p).get("labels") or {}).get("kueue.x-k8s.io/workload")
            owner = snap.get("workloads", wl_name, _ns(p)) if wl_name else None
            if owner is not None:
                return _explain_workload(snap, owner, decide)
            ref = f"Pod/{_ns(p)}/{name}"
            if (p.get("status") or {}).get("phase") != "Pending":
                return Explanation(ref, "NotPending",
                                   f"the pod is {(p.get('status') or {}).get('phase')}", [])
            for check in (_dra, _placement):
                e = check(snap, p)
                if e is not None:
                    return Explanation(ref, e.code, e.reason, e.evidence)
            return Explanation(ref, "Schedulable", "a node has room; the scheduler should "
                               "bind it on its next attempt", [])
    group = [p for p in snap.list("pods") if in_ns(p) and deployment_of(p) == name]
    if group:
        return _explain_deployment(snap, name, group, decide)
    return _not_found(snap, name, namespace)


def _explain_deployment(snap: ClusterObjects, name: str, pods: list[Obj],
                        decide: Decide | None) -> Explanation:
    """A Deployment's pods are Workloads of their own: its first pending pod speaks for the
    others, with how many there are."""
    waiting = sorted((p for p in pods if (p.get("status") or {}).get("phase") == "Pending"),
                     key=_name)
    ref = f"Deployment/{_ns(pods[0])}/{name}"
    if not waiting:
        return Explanation(ref, "NotPending", f"none of its {len(pods)} pods is pending", [])
    first = why_pending(snap, _name(waiting[0]), _ns(waiting[0]), decide)
    return Explanation(first.object, first.code, first.reason, [
        f"{ref}: {len(waiting)} of its {len(pods)} pods pending; the first of them, "
        f"{_name(waiting[0])}, explained", *first.evidence])


SHOWN_NAMES = 10  # names listed when NAME is not found


def _not_found(snap: ClusterObjects, name: str, namespace: str | None) -> Explanation:
    """What was looked for, what exists there, and how to list it."""
    where = f" in namespace {namespace}" if namespace else ""
    wls = [w for w in snap.list("workloads") if namespace is None or _ns(w) == namespace]
    jobs = sorted({o.get("name", "") for w in wls
                   for o in _meta(w).get("ownerReferences") or []})

    def some(names: list[str]) -> str:
        more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
        return ", ".join(names[:SHOWN_NAMES]) + more if names else "none"

    scope = f"-n {namespace}" if namespace else "-A"
    return Explanation(name, "NotFound", f"no Workload, Job or Pod named {name!r}{where} in "
                       "the snapshot",
                       [f"looked for a Workload, a Job's Workload or a Pod named {name!r}"
                        f"{where}",
                        f"Jobs with a Workload{where}: {some(jobs)}",
                        f"Workloads{where}: {some(sorted(_name(w) for w in wls))}",
                        "Kueue names Workloads <kind>-<job name>-<hash>; pass the Job name; "
                        f"list them: kubectl get workloads {scope}"])
