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

from aiplat.kube.facts import POOL_LABEL, TENANT_LABEL, PoolFacts
from aiplat.kube.objects import Obj, obj, toleration
from aiplat.kube.quantity import format_number
from aiplat.kube.yamlout import dump_docs
from aiplat.spec.models import Platform, PoolQuota, TenantSpec

WORKLOAD_PRIORITIES = (("serving", 1000), ("training", 500), ("batch", 100))


def root_cohort(platform: Platform) -> str:
    return platform.metadata.name


def _fraction(pool: PoolFacts, units: float) -> float:
    total = sum(pool.capacity().values())
    return units / total if total else 0.0


def _cpu(pool: PoolFacts, units: float) -> int:
    return math.floor(_fraction(pool, units) * pool.cpu_allocatable * pool.nodes)


def _mem(pool: PoolFacts, units: float) -> str:
    return f"{math.floor(_fraction(pool, units) * pool.memory_allocatable_gib * pool.nodes)}Gi"


def flavor_resources(pool: PoolFacts, quota: PoolQuota, covered: list[str]) -> list[Obj]:
    """The ``resources`` list of one flavor of a tenant's ClusterQueue."""
    def entry(name: str, nominal: Any, borrow: Any, lend: Any) -> Obj:
        e: Obj = {"name": name, "nominalQuota": nominal}
        if borrow is not None:
            e["borrowingLimit"] = borrow
        if lend is not None:
            e["lendingLimit"] = lend
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
    spec["fairSharing"] = {"weight": format_number(tenant.weight)}
    return obj(f"kueue.x-k8s.io/{api}", "ClusterQueue", tenant.name,
               labels={TENANT_LABEL: tenant.name}, spec=spec)


def render_kueue(platform: Platform, pools: list[PoolFacts]) -> tuple[dict[str, list[Obj]],
                                                                        dict[str, str]]:
    api = platform.kubernetes.kueue_api
    group = f"kueue.x-k8s.io/{api}"
    by_name = {p.name: p for p in pools}
    topologies = [obj(group, "Topology", p.name, spec={
        "levels": [{"nodeLabel": lvl} for lvl in p.topology_levels]}) for p in pools]
    flavors = []
    for p in pools:
        spec: Obj = {"nodeLabels": {POOL_LABEL: p.name}}
        if p.taints:
            spec["tolerations"] = [toleration(t.key, t.value, t.effect.value) for t in p.taints]
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
    files: dict[str, str] = {}
    if platform.kubernetes.gpu_resources == "dra":
        classes = sorted({r for p in pools for r in p.gpu_resources})
        fragment: dict[str, Any] = {"resources": {"deviceClassMappings": [
            {"name": c, "deviceClassNames": [c]} for c in classes]}}
        files["kueue/config/configuration-fragment.yaml"] = (
            "# Merge into the Kueue Configuration (ConfigMap kueue-manager-config) and enable\n"
            "# the DynamicResourceAllocation feature gate: Kueue then counts DRA claims on\n"
            "# these DeviceClasses against the ClusterQueue resources of the same name.\n"
            + dump_docs([fragment]))
    return manifests, files
