"""Lint rules for Kueue's queue objects against each other and against the pools: the
LocalQueue -> ClusterQueue -> ResourceFlavor -> pool chain, the namespaces a ClusterQueue
admits, the quota a pool can hold and a cohort can lend, Topologies, and the queue and
priority class a workload names. Their symptoms and sources: docs/lint-classes.md (Kueue:
queues, cohorts, flavors, quota).
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from aiplat.findings import Finding
from aiplat.kube.inventory import PoolInventory
from aiplat.kube.lint.base import Context, Obj, finding, name, namespace, rule
from aiplat.kube.lint.objects import (
    cohort_of,
    cohort_root,
    flavor_resources,
    node_resources,
    quantity,
    selector_matches,
    tolerates,
)
from aiplat.kube.validate import ref


@rule("localqueue-clusterqueue", "a LocalQueue names an existing ClusterQueue")
def localqueue_clusterqueue(ctx: Context) -> list[Finding]:
    cqs = ctx.names("ClusterQueue")
    return [finding("error", "localqueue-clusterqueue", ref(lq),
                    f"names ClusterQueue {(lq.get('spec') or {}).get('clusterQueue')!r}, which "
                    "does not exist;"
                    " workloads submitted to it stay pending (inadmissible)",
                    f"set spec.clusterQueue to one of {sorted(cqs)} or create the ClusterQueue")
            for lq in ctx.kind("LocalQueue")
            if (lq.get("spec") or {}).get("clusterQueue") not in cqs]


@rule("clusterqueue-flavor", "a ClusterQueue's flavors exist as ResourceFlavors")
def clusterqueue_flavor(ctx: Context) -> list[Finding]:
    flavors = ctx.names("ResourceFlavor")
    out = []
    for cq in ctx.kind("ClusterQueue"):
        for fl in sorted({f for f, _ in flavor_resources(cq)} - flavors):
            out.append(finding("error", "clusterqueue-flavor", ref(cq),
                               f"uses ResourceFlavor {fl!r}, which does not exist; the "
                               "ClusterQueue stays inactive",
                               f"create ResourceFlavor {fl!r} or remove it from the queue"))
    return out


@rule("namespace-selector", "a ClusterQueue selects the namespaces of its LocalQueues",
      severities=("error", "warning"))
def namespace_selector(ctx: Context) -> list[Finding]:
    out = []
    ns_labels = {name(n): dict((n.get("metadata") or {}).get("labels") or {})
                 for n in ctx.kind("Namespace")}
    for cq in ctx.kind("ClusterQueue"):
        sel = (cq.get("spec") or {}).get("namespaceSelector")
        if sel == {}:
            out.append(finding("warning", "namespace-selector", ref(cq),
                               "namespaceSelector {} admits workloads from every namespace",
                               "select the tenant's namespaces by label"))
        for lq in ctx.kind("LocalQueue"):
            if (lq.get("spec") or {}).get("clusterQueue") != name(cq):
                continue
            ns = namespace(lq)
            labels = {**ns_labels.get(ns, {}), "kubernetes.io/metadata.name": ns}
            if not selector_matches(sel, labels):
                out.append(finding("error", "namespace-selector", ref(cq),
                                   f"its namespaceSelector does not select namespace {ns!r} "
                                   f"where LocalQueue {name(lq)!r} points at it; workloads "
                                   "there are inadmissible",
                                   f"label namespace {ns} to match {sel} or fix the selector"))
    return out


@rule("flavor-pool", "each flavor's nodeLabels select a pool, one pool per flavor",
      severities=("error", "warning"))
def flavor_pool(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    if not ctx.inventory.pools:
        return out  # no pools known: nothing to compare the labels with (unknown)
    for fl in ctx.kind("ResourceFlavor"):
        labels = (fl.get("spec") or {}).get("nodeLabels") or {}
        pools = [p.name for p in ctx.inventory.pools
                 if all(p.labels.get(k) == v for k, v in labels.items())]
        if not pools:
            out.append(finding("error", "flavor-pool", ref(fl),
                               f"nodeLabels {labels} selects no pool: admitted pods would "
                               "never schedule", "set nodeLabels to the pool's label, e.g. "
                               f"{{aiplat.io/pool: {name(fl)}}}"))
        elif len(pools) > 1:
            # Kueue places on any of them; only quota-capacity's sums lose their pool.
            out.append(finding("warning", "flavor-pool", ref(fl),
                               f"nodeLabels {labels} selects {len(pools)} pools "
                               f"({', '.join(pools)}): quota and capacity no longer line up "
                               "pool by pool", "set nodeLabels to one pool's label, e.g. "
                               f"{{aiplat.io/pool: {pools[0]}}}"))
    return out


def _flavor_pool(ctx: Context, fl: Obj) -> PoolInventory | None:
    labels = (fl.get("spec") or {}).get("nodeLabels") or {}
    pools = [p for p in ctx.inventory.pools
             if labels and all(p.labels.get(k) == v for k, v in labels.items())]
    return pools[0] if len(pools) == 1 else None


@rule("flavor-taints", "pool taints are tolerated by the pool's flavors")
def flavor_taints(ctx: Context) -> list[Finding]:
    out = []
    for fl in ctx.kind("ResourceFlavor"):
        pool = _flavor_pool(ctx, fl)
        if pool is None:
            continue
        tols = (fl.get("spec") or {}).get("tolerations") or []
        for taint in pool.taints:
            if taint.get("effect") == "PreferNoSchedule" or tolerates(tols, taint):
                continue
            out.append(finding("error", "flavor-taints", ref(fl),
                               f"pool {pool.name} is tainted {taint['key']}:{taint['effect']} "
                               "but the flavor does not tolerate it: admitted pods stay Pending",
                               f"add toleration {{key: {taint['key']}, operator: Exists, "
                               f"effect: {taint['effect']}}} to spec.tolerations"))
    return out


@rule("quota-capacity", "nominal quotas per flavor fit the pool's physical units")
def quota_capacity(ctx: Context) -> list[Finding]:
    nominal: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for cq in ctx.kind("ClusterQueue"):
        for fl, r in flavor_resources(cq):
            nominal[(fl, r.get("name", ""))] += quantity(r.get("nominalQuota", 0))
    flavors = {name(f): f for f in ctx.kind("ResourceFlavor")}
    published = node_resources(ctx) | {"cpu", "memory"}
    out = []
    for (fl, res), total in sorted(nominal.items()):
        pool = _flavor_pool(ctx, flavors[fl]) if fl in flavors else None
        # A resource no node publishes is quota only (a transformation's output, HAMi's
        # total-gpucores): Kueue counts it, no node has it.
        if pool is None or res not in published:
            continue
        if res in pool.capacity:
            cap = Decimal(pool.capacity[res])
        elif res == "cpu":
            cap = Decimal(pool.cpu)
        elif res == "memory":
            cap = Decimal(pool.memory_gib) * 2**30
        else:
            cap = Decimal(0)
        if total > cap:
            out.append(finding("error", "quota-capacity", f"ResourceFlavor/{fl}",
                               f"ClusterQueues promise {total:g} {res} in total but pool "
                               f"{pool.name} has {cap:g}: Kueue admits workloads that can "
                               "never all run",
                               "lower the nominal quotas or grow the pool (count, sharing "
                               "replicas or MIG layout)"))
    return out


@rule("borrowing-cohort", "a borrowing limit the cohort can never lend",
      severities=("warning",))
def borrowing_cohort(ctx: Context) -> list[Finding]:
    lendable: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
    members: dict[str, list[Obj]] = defaultdict(list)
    for cq in ctx.kind("ClusterQueue"):
        c = cohort_of(cq)
        if c:
            # Nested cohorts share quota up the tree: lending is pooled at the root.
            members[cohort_root(c, ctx.kind("Cohort"))].append(cq)
    out = []
    for c, cqs in members.items():
        for cq in cqs:
            for fl, r in flavor_resources(cq):
                lend = r.get("lendingLimit", r.get("nominalQuota", 0))
                lendable[(c, fl, r.get("name", ""))] += quantity(lend)
        for cq in cqs:
            for fl, r in flavor_resources(cq):
                # CPU and memory quotas follow the GPUs; one finding per GPU resource.
                if "borrowingLimit" not in r or r.get("name") in ("cpu", "memory"):
                    continue
                own = quantity(r.get("lendingLimit", r.get("nominalQuota", 0)))
                others = lendable[(c, fl, r.get("name", ""))] - own
                if quantity(r["borrowingLimit"]) > others:
                    out.append(finding(
                        "warning", "borrowing-cohort", ref(cq),
                        f"borrowingLimit {r['borrowingLimit']} {r['name']} on flavor {fl} "
                        f"exceeds what cohort {c} can lend ({others:g}): the limit promises "
                        "capacity that does not exist",
                        f"lower borrowingLimit to {others:g} or raise others' lendable quota"))
    return out


@rule("topology-levels",
      "Topology levels exist as node labels; flavors' topologies exist")
def topology_levels(ctx: Context) -> list[Finding]:
    out = []
    keys = set().union(*(p.all_label_keys for p in ctx.inventory.pools))
    # No pools known: which labels the nodes carry is unknown, not "none".
    for t in ctx.kind("Topology") if ctx.inventory.pools else []:
        for lvl in (t.get("spec") or {}).get("levels") or []:
            if lvl.get("nodeLabel") not in keys:
                out.append(finding("error", "topology-levels", ref(t),
                                   f"level {lvl.get('nodeLabel')!r} is not a label any pool's "
                                   "nodes carry: topology-aware admission finds no domain",
                                   "label the nodes (cluster/nodes/label-and-taint.sh) or fix "
                                   "the level"))
    topos = ctx.names("Topology")
    for fl in ctx.kind("ResourceFlavor"):
        tn = (fl.get("spec") or {}).get("topologyName")
        if tn and tn not in topos:
            out.append(finding("error", "topology-levels", ref(fl),
                               f"topologyName {tn!r} names no Topology",
                               f"create Topology {tn!r} or remove topologyName"))
    return out


@rule("workload-queue", "workloads name a LocalQueue and priority class that exist",
      severities=("error", "warning"))
def workload_queue(ctx: Context) -> list[Finding]:
    lqs = {(namespace(o), name(o)) for o in ctx.kind("LocalQueue")}
    wpcs = ctx.names("WorkloadPriorityClass")
    out = []
    for kind in ("Job", "JobSet", "Deployment", "Pod"):
        for o in ctx.kind(kind):
            labels = (o.get("metadata") or {}).get("labels") or {}
            q = labels.get("kueue.x-k8s.io/queue-name")
            if q is None:
                continue
            ns = namespace(o)
            if (ns, q) not in lqs:
                # A tree with no LocalQueue there leaves the namespace's queues to the cluster.
                mine = any(n == ns for n, _ in lqs)
                out.append(finding(
                    "error" if mine else "warning", "workload-queue", ref(o),
                    f"queue-name {q!r} is not a LocalQueue in {ns!r}: Kueue never admits it"
                    if mine else f"queue-name {q!r}: the tree defines no LocalQueue in "
                    f"{ns!r}; unless the cluster has it, Kueue never admits it",
                    "use the tenant's LocalQueue name" if mine else
                    f"check `kubectl get localqueue -n {ns} {q}`, or lint it with its queues"))
            pc = labels.get("kueue.x-k8s.io/priority-class")
            if pc and pc not in wpcs:
                out.append(finding(
                    "error" if wpcs else "warning", "workload-queue", ref(o),
                    f"priority-class {pc!r} is not a WorkloadPriorityClass" + (
                        "" if wpcs else " of the tree; unless the cluster has it, Kueue "
                        "makes no Workload and it never runs"), f"use one of {sorted(wpcs)}"
                    if wpcs else f"check `kubectl get workloadpriorityclass {pc}`"))
    return out
