"""``kueue/``: ResourceFlavors, Topologies, Cohorts, ClusterQueues, LocalQueues and
WorkloadPriorityClasses (``kueue.x-k8s.io/v1beta2`` by default, ``v1beta1`` selectable).

Quota arithmetic, per tenant and pool (flavor):
- GPU units: the spec's quota in pool units, split over the pool's GPU resources (MIG
  profiles in layout proportion);
- CPU and memory: the same share of the pool's allocatable CPU and memory as the tenant's
  GPU units are of the pool's GPU units, so a job sized "per GPU" is never blocked on CPU
  before GPUs;
- every flavor lists every covered resource (0 where the pool has none), which Kueue
  requires within a resource group; one group per ClusterQueue keeps CPU and memory in the
  same group as the GPUs they go with.
"""

from __future__ import annotations

import math
from typing import Any

from aiplat.kube.facts import POOL_LABEL, RDMA_RESOURCE, TENANT_LABEL, PoolFacts, uses_tas
from aiplat.kube.objects import Obj, obj, toleration
from aiplat.kube.quantity import canonical_decimal, format_number
from aiplat.kube.yamlout import dump_docs
from aiplat.spec.models import Platform, PoolQuota, TenantSpec

WORKLOAD_PRIORITIES = (("serving", 1000), ("training", 500), ("batch", 100))
KUEUE_NS = "kueue-system"
# The workload kinds aiplat renders; Deployment needs Kueue's pod integration as well.
# LeaderWorkerSet: a serving replica across nodes (kube/render_apps.py); Kueue's own shipped
# Configuration enables it too, and waits for the CRD where it is not installed.
FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "pod", "deployment",
              "leaderworkerset.x-k8s.io/leaderworkerset")


def root_cohort(platform: Platform) -> str:
    return platform.metadata.name


def _fraction(pool: PoolFacts, units: float) -> float:
    total = sum(pool.capacity().values())
    return units / total if total else 0.0


def _cpu(pool: PoolFacts, units: float) -> int:
    return math.floor(_fraction(pool, units) * pool.cpu_allocatable * pool.nodes)


def _mem(pool: PoolFacts, units: float) -> str:
    return f"{math.floor(_fraction(pool, units) * pool.memory_allocatable_gib * pool.nodes)}Gi"


def _q(value: Any) -> str:
    return value if isinstance(value, str) else canonical_decimal(value)


def flavor_resources(pool: PoolFacts, quota: PoolQuota, covered: list[str]) -> list[Obj]:
    """The ``resources`` list of one flavor of a tenant's ClusterQueue."""
    def entry(name: str, nominal: Any, borrow: Any, lend: Any) -> Obj:
        # Quantities as strings, the form the API server stores them in (Kueue's webhook
        # round-trips them through resource.Quantity): a number here would differ from the
        # live object on every server-side apply.
        e: Obj = {"name": name, "nominalQuota": _q(nominal)}
        if borrow is not None:
            e["borrowingLimit"] = _q(borrow)
        if lend is not None:
            e["lendingLimit"] = _q(lend)
        return e

    b, ln = quota.borrowing_limit, quota.lending_limit
    out = [
        entry("cpu", _cpu(pool, quota.gpus), None if b is None else _cpu(pool, b),
              None if ln is None else _cpu(pool, ln)),
        entry("memory", _mem(pool, quota.gpus), None if b is None else _mem(pool, b),
              None if ln is None else _mem(pool, ln)),
    ]
    nominal = pool.split_quota(quota.gpus)
    borrow = pool.split_quota(b) if b is not None else {}
    lend = pool.split_quota(ln) if ln is not None else {}
    for r in covered[2:]:
        out.append(entry(r, format_number(nominal.get(r, 0)),
                         None if b is None else format_number(borrow.get(r, 0)),
                         None if ln is None else format_number(lend.get(r, 0))))
    return out


def covered_resources(tenant: TenantSpec, pools: dict[str, PoolFacts]) -> list[str]:
    gpu = sorted({r for name in tenant.quota for r in pools[name].gpu_resources})
    return ["cpu", "memory", *gpu]


def cluster_queue(platform: Platform, tenant: TenantSpec, pools: dict[str, PoolFacts],
                  api: str) -> Obj:
    covered = covered_resources(tenant, pools)
    flavors = [{"name": name, "resources": flavor_resources(pools[name], q, covered)}
               for name, q in tenant.quota.items()]
    cohort = tenant.cohort or root_cohort(platform)
    p = tenant.preemption
    spec: Obj = {"cohortName" if api == "v1beta2" else "cohort": cohort,
                 "namespaceSelector": {"matchLabels": {TENANT_LABEL: tenant.name}},
                 "queueingStrategy": tenant.queueing_strategy}
    if flavors:
        spec["resourceGroups"] = [{"coveredResources": covered, "flavors": flavors}]
    spec["preemption"] = {"reclaimWithinCohort": p.reclaim_within_cohort,
                          "withinClusterQueue": p.within_cluster_queue,
                          "borrowWithinCohort": {"policy": p.borrow_within_cohort}}
    spec["flavorFungibility"] = {"whenCanBorrow": "MayStopSearch" if api == "v1beta2"
                                 else "Borrow", "whenCanPreempt": "TryNextFlavor"}
    spec["fairSharing"] = {"weight": canonical_decimal(tenant.weight)}
    return obj(f"kueue.x-k8s.io/{api}", "ClusterQueue", tenant.name,
               labels={TENANT_LABEL: tenant.name}, spec=spec)


def render_kueue(platform: Platform, pools: list[PoolFacts]) -> tuple[dict[str, list[Obj]],
                                                                        dict[str, str]]:
    api = platform.kubernetes.kueue_api
    group = f"kueue.x-k8s.io/{api}"
    by_name = {p.name: p for p in pools}
    topologies = [obj(group, "Topology", p.name, spec={
        "levels": [{"nodeLabel": lvl} for lvl in p.topology_levels]})
        for p in pools if uses_tas(p)]
    flavors = []
    for p in pools:
        spec: Obj = {"nodeLabels": {POOL_LABEL: p.name}}
        if p.taints:
            spec["tolerations"] = [toleration(t.key, t.value, t.effect.value) for t in p.taints]
        if uses_tas(p):
            spec["topologyName"] = p.name
        flavors.append(obj(group, "ResourceFlavor", p.name, spec=spec))
    root = root_cohort(platform)
    cohorts = [obj(group, "Cohort", root, spec={})]
    for c in platform.kubernetes.cohorts:
        cohorts.append(obj(group, "Cohort", c.name, spec={"parentName": c.parent or root}))
    cqs = [cluster_queue(platform, t, by_name, api) for t in platform.tenants]
    lqs = [obj(group, "LocalQueue", t.name, t.name, labels={TENANT_LABEL: t.name},
               spec={"clusterQueue": t.name}) for t in platform.tenants]
    wpcs = [obj(group, "WorkloadPriorityClass", name, value=value,
                description=f"aiplat {name} workloads") for name, value in WORKLOAD_PRIORITIES]
    manifests = {
        "kueue/resourceflavors.yaml": flavors,
        "kueue/topologies.yaml": topologies,
        "kueue/cohorts.yaml": cohorts,
        "kueue/clusterqueues.yaml": cqs,
        "kueue/localqueues.yaml": lqs,
        "kueue/workloadpriorityclasses.yaml": wpcs,
    }
    # The namespace too, so the tree applies before (or without) Kueue's own install.
    manifests["kueue/kueue-manager-config.yaml"] = [obj("v1", "Namespace", KUEUE_NS), obj(
        "v1", "ConfigMap", "kueue-manager-config", KUEUE_NS,
        data={"controller_manager_config.yaml": dump_docs([kueue_configuration(platform,
                                                                               pools)])})]
    return manifests, {}


def kueue_configuration(platform: Platform, pools: list[PoolFacts]) -> Obj:
    """Kueue's Configuration for the platform: the jobs it manages, fair sharing by the
    tenants' weights, and for DRA pools the DeviceClass mappings without which Kueue refuses
    every claim template ("DeviceClass ... is not mapped in DRA configuration"). The Helm
    chart and the upstream manifests read it from ConfigMap ``kueue-manager-config``."""
    cfg: Obj = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": KUEUE_NS,
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "NotIn",
            "values": ["kube-system", KUEUE_NS]}]},
        "integrations": {"frameworks": list(FRAMEWORKS)},
        # Pods that never start (an image that cannot be pulled, a node that never comes)
        # give their quota back after this long instead of holding it for ever.
        "waitForPodsReady": {"timeout": "10m", "blockAdmission": False,
                             "requeuingStrategy": {"timestamp": "Eviction",
                                                   "backoffLimitCount": 5}},
    }
    if platform.kubernetes.fair_sharing:
        cfg["fairSharing"] = {"preemptionStrategies": ["LessThanOrEqualToFinalShare",
                                                       "LessThanInitialShare"]}
    classes = sorted({r for p in pools if p.gpu_mode == "dra" for r in p.gpu_resources})
    resources: Obj = {}
    if classes:
        resources["deviceClassMappings"] = [
            {"name": c, "deviceClassNames": [c]} for c in classes]
    if any(p.rdma for p in pools):
        # The HCAs are shared, not quota: without this Kueue refuses every gang that asks
        # for them ("resource rdma/... unavailable in ClusterQueue").
        resources["excludeResourcePrefixes"] = [RDMA_RESOURCE.split("/")[0] + "/"]
    if resources:
        cfg["resources"] = resources
    return cfg
