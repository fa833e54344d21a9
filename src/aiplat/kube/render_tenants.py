"""``tenants/<name>/``: one namespace per tenant with everything that fences it in.

- Namespace with Pod Security labels (enforce/audit/warn at the tenant's level);
- Roles for the team's admins and users: explicit verbs and resources, never ``*``, never
  ``escalate``/``bind``/``impersonate``, RBAC objects read-only, Secrets only when the spec
  grants them;
- ResourceQuota: what the tenant's ClusterQueue can admit (nominal + borrowing limit; the
  whole cohort when the limit is unset) in GPU requests or DRA device-class counts, CPU,
  memory, and storage per StorageClass; a LimitRange so pods without requests still count;
- NetworkPolicies: default deny both ways, then allow the namespace itself, DNS, the model
  store (the storage segments), monitoring scrapes and the inference gateway;
- ResourceClaimTemplates per workload profile on DRA pools: one GPU, a PCIe-root pair
  (``matchAttribute``), a whole node, a MIG slice (no ``firstAvailable`` list: Kueue refuses
  workloads whose claims use one).
"""

from __future__ import annotations

import math
from typing import Any

from aiplat.kube.facts import TENANT_LABEL, PoolFacts, gpu_device_class, mig_device_class
from aiplat.kube.objects import Obj, obj
from aiplat.kube.quantity import format_number
from aiplat.spec.models import Platform, SegmentPurpose, TenantSpec

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC = f"{RBAC_GROUP}/v1"
GATEWAY_NS = "aiplat-gateway"
MONITORING_NS = "monitoring"

_WORK = [
    ("", ["pods", "services", "configmaps", "persistentvolumeclaims"]),
    ("apps", ["deployments", "statefulsets"]),
    ("batch", ["jobs", "cronjobs"]),
    ("jobset.x-k8s.io", ["jobsets"]),
    ("resource.k8s.io", ["resourceclaims"]),
    ("gateway.networking.k8s.io", ["httproutes"]),
]
_WRITE = ["get", "list", "watch", "create", "update", "patch", "delete"]
_READ = ["get", "list", "watch"]


def _rules(admin: bool, secrets: bool) -> list[Obj]:
    rules: list[Obj] = [{"apiGroups": [g], "resources": r, "verbs": _WRITE} for g, r in _WORK]
    rules += [
        {"apiGroups": [""], "resources": ["pods/log", "events"], "verbs": _READ},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaimtemplates"],
         "verbs": _READ},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "localqueues"],
         "verbs": _READ},
        {"apiGroups": [""], "resources": ["resourcequotas", "limitranges"], "verbs": _READ},
    ]
    if admin:
        rules += [
            {"apiGroups": [""], "resources": ["pods/exec", "pods/portforward"],
             "verbs": ["create"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"],
             "verbs": ["update", "patch", "delete"]},
            {"apiGroups": [RBAC_GROUP], "resources": ["roles", "rolebindings"],
             "verbs": _READ},
        ]
    if secrets:
        rules.append({"apiGroups": [""], "resources": ["secrets"],
                      "verbs": _WRITE if admin else _READ})
    return rules


def _roles(t: TenantSpec) -> list[Obj]:
    out = []
    for role, groups, admin in (("admin", t.admins, True), ("user", t.users, False)):
        name = f"aiplat-{role}"
        out.append(obj(RBAC, "Role", name, t.name, rules=_rules(admin, t.secrets_access)))
        if groups:
            out.append(obj(RBAC, "RoleBinding", name, t.name,
                           roleRef={"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
                           subjects=[{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g}
                                     for g in groups]))
    return out


def admissible_units(platform: Platform, t: TenantSpec, pool: str) -> float:
    """GPU units the tenant's ClusterQueue can admit on a pool: nominal + borrowing limit,
    or nominal + everyone else's lendable quota on that pool when the limit is unset."""
    q = t.quota[pool]
    if q.borrowing_limit is not None:
        return q.gpus + q.borrowing_limit
    others = 0.0
    for o in platform.tenants:
        if o.name != t.name and pool in o.quota:
            oq = o.quota[pool]
            others += oq.gpus if oq.lending_limit is None else oq.lending_limit
    return q.gpus + others


def resource_quota(platform: Platform, t: TenantSpec, pools: dict[str, PoolFacts]) -> Obj:
    hard: dict[str, Any] = {}
    cpu = 0
    mem = 0
    for name in t.quota:
        p = pools[name]
        units = admissible_units(platform, t, name)
        total = sum(p.capacity().values())
        frac = units / total if total else 0.0
        cpu += math.floor(frac * p.cpu_allocatable * p.nodes)
        mem += math.floor(frac * p.memory_allocatable_gib * p.nodes)
        for r, n in p.split_quota(units).items():
            key = (f"requests.{r}" if p.gpu_mode == "device-plugin"
                   else f"{r}.deviceclass.resource.k8s.io/devices")
            hard[key] = format_number(float(hard.get(key, 0)) + n)
    hard["requests.cpu"] = cpu
    hard["requests.memory"] = f"{mem}Gi"
    share = 1 / len(platform.tenants)
    for sc in platform.storage.classes:
        if sc.tier == "local-nvme":
            continue  # local volumes are bounded by the node, not by a namespace quota
        gib = math.floor(sc.capacity_tb * 1000**4 / 1024**3 * share)
        hard[f"{sc.name}.storageclass.storage.k8s.io/requests.storage"] = f"{gib}Gi"
    hard["persistentvolumeclaims"] = 50
    return obj("v1", "ResourceQuota", "aiplat-quota", t.name, spec={"hard": hard})


def _limit_range(t: TenantSpec, pools: dict[str, PoolFacts]) -> Obj:
    mem = max((pools[n].spec.node.memory_gib for n in t.quota), default=64)
    cpu = max((pools[n].spec.node.cpu_cores for n in t.quota), default=16)
    # A container without a limit gets the default limit (the API server fills an unset
    # default with the max). A default below what a container requests makes its limit
    # smaller than its request, and the pod is invalid: the original 4Gi refused every
    # example pod. So the default is the max: no container bigger than a node, none refused.
    biggest = {"cpu": str(cpu), "memory": f"{mem}Gi"}
    return obj("v1", "LimitRange", "aiplat-defaults", t.name, spec={"limits": [{
        "type": "Container",
        "default": dict(biggest),
        "defaultRequest": {"cpu": "500m", "memory": "1Gi"},
        "max": dict(biggest),
    }]})


def _network_policies(platform: Platform, t: TenantSpec) -> list[Obj]:
    api = "networking.k8s.io/v1"
    ns = t.name
    store = [{"ipBlock": {"cidr": str(s.cidr)}} for s in platform.network.segments
             if s.purpose is SegmentPurpose.STORAGE and s.cidr is not None]

    def ns_sel(name: str) -> Obj:
        return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}

    out = [
        obj(api, "NetworkPolicy", "default-deny", ns,
            spec={"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
        obj(api, "NetworkPolicy", "allow-same-namespace", ns, spec={
            "podSelector": {}, "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": {}}]}],
            "egress": [{"to": [{"podSelector": {}}]}]}),
        obj(api, "NetworkPolicy", "allow-dns", ns, spec={
            "podSelector": {}, "policyTypes": ["Egress"],
            "egress": [{"to": [{**ns_sel("kube-system"),
                                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                        "ports": [{"protocol": "UDP", "port": 53},
                                  {"protocol": "TCP", "port": 53}]}]}),
        obj(api, "NetworkPolicy", "allow-model-store", ns, spec={
            "podSelector": {}, "policyTypes": ["Egress"],
            "egress": [{"to": [*store, ns_sel("aiplat-models")],
                        "ports": [{"protocol": "TCP", "port": 443},
                                  {"protocol": "TCP", "port": 2049},
                                  {"protocol": "TCP", "port": 5000}]}]}),
        obj(api, "NetworkPolicy", "allow-monitoring", ns, spec={
            "podSelector": {}, "policyTypes": ["Ingress"],
            "ingress": [{"from": [ns_sel(MONITORING_NS)]}]}),
        obj(api, "NetworkPolicy", "allow-gateway", ns, spec={
            "podSelector": {"matchLabels": {"aiplat.io/serving": "true"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [ns_sel(GATEWAY_NS)]}]}),
    ]
    return out


def claim_templates(t: TenantSpec, pools: dict[str, PoolFacts],
                    pod_gpus: dict[tuple[str, str], set[int]] | None = None) -> list[Obj]:
    """Per DRA pool of the tenant: one GPU, a pair on one PCIe root, a whole node, and each
    other pod size the tenant's workloads run there (``pod_gpus[tenant, pool]``)."""
    api = "resource.k8s.io/v1"
    out: list[Obj] = []
    for name in t.quota:
        p = pools[name]
        if p.gpu is None or p.gpu.vendor != "nvidia" or p.gpu_mode != "dra":
            continue
        gpu_class = gpu_device_class(p.gpu)
        if p.spec.sharing.mig_layout:
            for profile in dict.fromkeys(p.spec.sharing.mig_layout):
                cls = mig_device_class(p.gpu, profile)
                out.append(obj(api, "ResourceClaimTemplate", f"{name}-mig-{profile}", t.name,
                               spec={"spec": {"devices": {"requests": [{"name": "mig", "exactly": {
                                   "deviceClassName": cls, "allocationMode": "ExactCount",
                                   "count": 1}}]}}}))
            continue

        def exact(count: int, cls: str = gpu_class) -> Obj:
            return {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}

        out.append(obj(api, "ResourceClaimTemplate", f"{name}-gpu-1", t.name, spec={"spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": exact(1)}]}}}))
        n = p.gpus_per_node
        if n >= 2:
            out.append(obj(api, "ResourceClaimTemplate", f"{name}-gpu-pair", t.name, spec={
                "spec": {"devices": {
                    "requests": [{"name": "gpus", "exactly": exact(2)}],
                    "constraints": [{"requests": ["gpus"],
                                     "matchAttribute": "resource.kubernetes.io/pcieRoot"}]}}}))
        for k in sorted({n, *(pod_gpus or {}).get((t.name, name), ())} - {1, 2}):
            if k > n:
                continue
            out.append(obj(api, "ResourceClaimTemplate", f"{name}-gpu-{k}", t.name, spec={
                "spec": {"devices": {
                    "requests": [{"name": "gpus", "exactly": exact(k)}],
                    "constraints": [{"requests": ["gpus"],
                                     "matchAttribute": "gpu.nvidia.com/productName"}]}}}))
    # No firstAvailable fallback template: Kueue refuses claims that use it.
    return out


def render_tenants(platform: Platform, pools: list[PoolFacts],
                   pod_gpus: dict[tuple[str, str], set[int]] | None = None
                   ) -> dict[str, list[Obj]]:
    """``pod_gpus``: (tenant, pool) -> the GPUs of the pods its workloads run there."""
    by_name = {p.name: p for p in pools}
    out: dict[str, list[Obj]] = {}
    version = f"v{platform.kubernetes.version}"
    for t in platform.tenants:
        level = t.pod_security
        ns = obj("v1", "Namespace", t.name, labels={
            TENANT_LABEL: t.name,
            "pod-security.kubernetes.io/enforce": level,
            "pod-security.kubernetes.io/enforce-version": version,
            "pod-security.kubernetes.io/audit": level,
            "pod-security.kubernetes.io/warn": level,
        })
        d = f"tenants/{t.name}"
        out[f"{d}/namespace.yaml"] = [ns]
        out[f"{d}/rbac.yaml"] = _roles(t)
        out[f"{d}/quota.yaml"] = [resource_quota(platform, t, by_name),
                                  _limit_range(t, by_name)]
        out[f"{d}/networkpolicies.yaml"] = _network_policies(platform, t)
        claims = claim_templates(t, by_name, pod_gpus)
        if claims:
            out[f"{d}/resourceclaimtemplates.yaml"] = claims
    return out
