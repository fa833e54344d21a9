"""Lint rules for queued workloads their ClusterQueue can never admit, whatever else runs:
too big for the queue, or pinned to nodes none of its flavors has. Each class, with its page
at night and the rule's source (Kueue v0.19.2):

  workload-quota    a queued workload (all its pods: Kueue admits a Job's parallelism, a
                    JobSet's replicated Jobs, a StatefulSet's replicas together) asks for
                    more of a resource than its ClusterQueue can ever give, nominal quota
                    plus what it may borrow (its borrowingLimit, else what its cohort can
                    lend). Symptom: Pending forever, "insufficient quota ... request >
                    maximum capacity". Source: pkg/scheduler/flavorassigner
                    (fitsResourceQuota, the maximum capacity of a flavor). Judged at the
                    fewest pods partial admission allows (job-min-parallelism, minCount),
                    on requests transformed as Kueue's resources.transformations say
                    (pkg/workload applyResourceTransformations).
  flavor-node-taints a queued pod that tolerates none of the flavors its ClusterQueue offers
                    for what it asks: each has a NoSchedule/NoExecute nodeTaint neither the
                    pod's nor the flavor's tolerations match. Symptom: inadmissible,
                    "untolerated taint K=V:E in flavor F". Source: flavorassigner.go
                    (FindMatchingUntoleratedTaint).
  flavor-affinity   a queued pod template pinned (nodeSelector or required node affinity on
                    aiplat.io/pool) to a pool none of its ClusterQueue's flavors selects.
                    Symptom: inadmissible, "flavor X doesn't match node affinity". Source:
                    flavorassigner checks each flavor's nodeLabels against the pod's
                    affinity.
  topology-spread   a multi-pod JobSet (distributed training) on a topology flavor that
                    asks for no required or preferred topology level (none, or
                    unconstrained). Symptom: slower than planned: Kueue may place its ranks
                    across blocks and racks, so every all-reduce crosses the spine (a
                    warning: only lint can say it). Source: Kueue TAS annotations
                    kueue.x-k8s.io/podset-required-topology / -preferred-topology
                    (apis/kueue/v1beta2 topology annotations, pkg/cache/scheduler/
                    tas_flavor_snapshot.go).
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from aiplat.findings import Finding
from aiplat.kube.facts import POOL_LABEL
from aiplat.kube.lint.base import Context, Obj, finding, name, namespace, rule
from aiplat.kube.lint.objects import (
    QUEUE_LABEL,
    claim_counts,
    cohort_of,
    cohort_root,
    job_pods,
    kueue_configuration,
    min_parallelism,
    pod_templates,
    pool_of,
    quantity,
    tolerates,
    transformations,
    transformed,
)
from aiplat.kube.quantity import pod_requests
from aiplat.kube.validate import ref


def _podsets(o: Obj, *, least: bool = False) -> list[tuple[int, Obj]]:
    """(pods, pod spec) of each pod set Kueue admits together for one workload; with
    ``least``, the fewest pods partial admission lets Kueue admit (a Job's
    job-min-parallelism, a Workload's minCount)."""
    spec = o.get("spec") or {}
    kind = o.get("kind")
    if kind == "JobSet":
        out = []
        for rj in spec.get("replicatedJobs") or []:
            job = (rj.get("template") or {}).get("spec") or {}
            pods = int(rj.get("replicas", 1)) * job_pods(job)
            out.append((pods, ((job.get("template") or {}).get("spec") or {})))
        return out
    if kind == "Job":
        pods, least_ = job_pods(spec), min_parallelism(o)
        if least and least_ is not None and 0 < least_ < pods:
            pods = least_
        return [(pods, (spec.get("template") or {}).get("spec") or {})]
    if kind == "Workload":
        return [(int(ps.get("minCount", ps.get("count", 1)) if least else ps.get("count", 1)),
                 (ps.get("template") or {}).get("spec") or {})
                for ps in spec.get("podSets") or []]
    if kind == "StatefulSet":
        return [(int(spec.get("replicas", 1)), (spec.get("template") or {}).get("spec") or {})]
    if kind == "Deployment":  # the pod integration: each pod is its own workload
        return [(1, (spec.get("template") or {}).get("spec") or {})]
    if kind == "Pod":
        return [(1, spec)]
    return []


def _queue_of(ctx: Context, o: Obj) -> Obj | None:
    q = ((o.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL)
    if o.get("kind") == "Workload":
        q = (o.get("spec") or {}).get("queueName")
    lq = next((lq for lq in ctx.kind("LocalQueue")
               if name(lq) == q and namespace(lq) == namespace(o)), None)
    cq_name = ((lq or {}).get("spec") or {}).get("clusterQueue")
    return next((cq for cq in ctx.kind("ClusterQueue") if name(cq) == cq_name), None)


def _mapped(ctx: Context) -> dict[str, str]:
    """DeviceClass -> the resource name Kueue charges its devices as."""
    cfg = kueue_configuration(ctx) or {}
    return {c: str(m.get("name")) for m in (cfg.get("resources") or {}).get(
        "deviceClassMappings") or [] for c in m.get("deviceClassNames") or []}


def _demand(ctx: Context, o: Obj, *, least: bool = False) -> dict[str, Decimal]:
    """What the workload charges to quota (Kueue's resource transformations applied)."""
    total: dict[str, Decimal] = defaultdict(Decimal)
    mapped = _mapped(ctx)
    transforms = transformations(ctx)
    for pods, spec in _podsets(o, least=least):
        for res, v in transformed(pod_requests(spec), transforms).items():
            total[res] += v * pods
        for _t, cls, count in claim_counts(ctx, o, spec):
            if cls in mapped:
                total[mapped[cls]] += count * pods
    return dict(total)


def _lendable(ctx: Context, cq: Obj, flavor: str, res: str) -> Decimal:
    """What the rest of the cohort tree can lend of one flavor's resource."""
    c = cohort_of(cq)
    if not c:
        return Decimal(0)
    root = cohort_root(c, ctx.kind("Cohort"))
    total = Decimal(0)
    for other in ctx.kind("ClusterQueue"):
        oc = cohort_of(other)
        if other is cq or not oc or cohort_root(oc, ctx.kind("Cohort")) != root:
            continue
        for rg in (other.get("spec") or {}).get("resourceGroups") or []:
            for fl in rg.get("flavors") or []:
                for r in fl.get("resources") or []:
                    if fl.get("name") == flavor and r.get("name") == res:
                        total += quantity(r.get("lendingLimit", r.get("nominalQuota", 0)))
    return total


def _capacity(ctx: Context, cq: Obj) -> dict[str, tuple[Decimal, str]]:
    """Per resource: the most one flavor of the queue can ever give, and that flavor."""
    best: dict[str, tuple[Decimal, str]] = {}
    for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
        for fl in rg.get("flavors") or []:
            for r in fl.get("resources") or []:
                res = str(r.get("name"))
                borrow = (quantity(r["borrowingLimit"]) if "borrowingLimit" in r
                          else _lendable(ctx, cq, str(fl.get("name")), res))
                cap = quantity(r.get("nominalQuota", 0)) + borrow
                if res not in best or cap > best[res][0]:
                    best[res] = (cap, str(fl.get("name")))
    return best


def _fmt(v: Decimal, res: str) -> str:
    if res == "memory":
        return f"{(v / 2**30).quantize(Decimal('0.1')).normalize():f}Gi"
    return f"{v:g}"


@rule("workload-quota", "a queued workload fits its ClusterQueue's nominal quota plus "
      "what it may borrow (at its partial-admission minimum)")
def workload_quota(ctx: Context) -> list[Finding]:
    out = []
    for o in ctx.objects:
        cq = _queue_of(ctx, o)
        if cq is None:
            continue  # workload-queue reports a queue that does not exist
        cap = _capacity(ctx, cq)
        least = sum(n for n, _ in _podsets(o, least=True))
        partial = least < sum(n for n, _ in _podsets(o))
        for res, want in sorted(_demand(ctx, o, least=True).items()):
            if res in cap and want > cap[res][0]:
                most, flavor = cap[res]
                out.append(finding(
                    "error", "workload-quota", ref(o),
                    (f"even at its minimum of {least} pods (partial admission) " if partial
                     else "") + f"its pods ask for {_fmt(want, res)} {res} in all but "
                    f"ClusterQueue {name(cq)} can give at most {_fmt(most, res)} (flavor "
                    f"{flavor}, nominal plus borrowing): Kueue never admits it ('request > "
                    "maximum capacity')", f"shrink it to {_fmt(most, res)} {res} (fewer or "
                    "smaller pods, or a lower kueue.x-k8s.io/job-min-parallelism), or raise "
                    "the queue's nominalQuota / borrowingLimit"))
    return out


@rule("flavor-affinity", "a queued pod's pool pin is a pool one of its queue's flavors "
      "selects")
def flavor_affinity(ctx: Context) -> list[Finding]:
    pools = {name(fl): ((fl.get("spec") or {}).get("nodeLabels") or {}).get(POOL_LABEL)
             for fl in ctx.kind("ResourceFlavor")}
    out = []
    for o in ctx.objects:
        cq = _queue_of(ctx, o)
        if cq is None:
            continue
        flavors = [str(fl.get("name")) for rg in (cq.get("spec") or {}).get(
            "resourceGroups") or [] for fl in rg.get("flavors") or []]
        known = {p.name for p in ctx.inventory.pools}
        if any(pools.get(f) not in known for f in flavors):
            continue  # clusterqueue-flavor / flavor-pool report a flavor without its pool
        served = {pools[f] for f in flavors}
        for _pods, spec in _podsets(o):
            pinned = pool_of(spec)
            if pinned and pinned not in served:
                out.append(finding(
                    "error", "flavor-affinity", ref(o),
                    f"its pods are pinned to pool {pinned} ({POOL_LABEL}) but ClusterQueue "
                    f"{name(cq)}'s flavors {flavors} select other pools: Kueue finds no "
                    "flavor for them ('doesn't match node affinity')",
                    f"drop the pin (the flavor places the pods) or queue it where a flavor "
                    f"selects pool {pinned}"))
    return out


def _taint(t: Obj) -> str:
    return f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}".replace("=:", ":")


def _untolerated(fl: Obj, spec: Obj) -> Obj | None:
    """A NoSchedule/NoExecute nodeTaint of the flavor that neither the pod's tolerations nor
    the flavor's tolerate (Kueue's flavor assigner; PreferNoSchedule is ignored)."""
    fspec = fl.get("spec") or {}
    tols = [*(spec.get("tolerations") or []), *(fspec.get("tolerations") or [])]
    return next((t for t in fspec.get("nodeTaints") or []
                 if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tols, t)),
                None)


@rule("flavor-node-taints", "a queued pod tolerates the nodeTaints of some flavor of its "
      "ClusterQueue that covers what it asks for")
def flavor_node_taints(ctx: Context) -> list[Finding]:
    flavors = {name(fl): fl for fl in ctx.kind("ResourceFlavor")}
    out = []
    for o in ctx.objects:
        cq = _queue_of(ctx, o)
        for _pods, spec in _podsets(o) if cq is not None else []:
            wants = set(pod_requests(spec))
            usable = [str(fl.get("name")) for rg in (cq or {}).get("spec", {}).get(
                "resourceGroups") or [] if wants & set(rg.get("coveredResources") or [])
                for fl in rg.get("flavors") or [] if fl.get("name") in flavors]
            taints = [(f, t) for f in usable if (t := _untolerated(flavors[f], spec))]
            if not usable or len(taints) < len(usable):
                continue
            out.append(finding(
                "error", "flavor-node-taints", ref(o),
                "its pods tolerate no flavor of ClusterQueue " + name(cq or {}) + ": "
                + "; ".join(f"untolerated taint {_taint(t)} in flavor {f}" for f, t in taints)
                + ": Kueue never admits it", f"add a toleration for {_taint(taints[0][1])} "
                "to the pod template (or spec.tolerations on the flavor)"))
            break
    return out


_LEVELS = ("kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology")


def _gang(o: Obj) -> bool:
    """A distributed workload whose pods work as one: a JobSet of several pods. (An Indexed
    Job may as well be independent shards of batch inference: not flagged.)"""
    return o.get("kind") == "JobSet" and sum(n for n, _ in _podsets(o)) > 1


@rule("topology-spread", "a multi-pod JobSet on a topology flavor asks for a topology "
      "level", severities=("warning",))
def topology_spread(ctx: Context) -> list[Finding]:
    tas = {name(fl) for fl in ctx.kind("ResourceFlavor")
           if (fl.get("spec") or {}).get("topologyName")}
    out = []
    for o in ctx.objects:
        cq = _queue_of(ctx, o)
        if cq is None or not _gang(o):
            continue
        # The topology flavors with quota for the accelerators these pods ask for.
        wants = set(_demand(ctx, o)) - {"cpu", "memory"}
        flavors = {str(fl.get("name")) for rg in (cq.get("spec") or {}).get(
            "resourceGroups") or [] for fl in rg.get("flavors") or [] for r in fl.get(
                "resources") or [] if r.get("name") in wants and quantity(r.get("nominalQuota", 0))}
        if not flavors & tas:
            continue
        for t in pod_templates(o):
            ann = (t.get("metadata") or {}).get("annotations") or {}
            if not any(a in ann for a in _LEVELS):
                out.append(finding(
                    "warning", "topology-spread", ref(o),
                    f"its pods run as one on topology flavor(s) {sorted(flavors & tas)} but "
                    "ask for no required or preferred topology level: Kueue may spread the "
                    "ranks over blocks and racks, every collective crossing the spine",
                    "annotate the pod template kueue.x-k8s.io/podset-required-topology "
                    "(or -preferred-topology) with the block or rack level"))
    return out
