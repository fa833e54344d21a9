"""Lint rules for what a live cluster refuses although every schema accepts it: each one a
defect class the lab cluster (``aiplat lab cluster``) revealed, so users without a cluster
are warned too. Rules, by name:

  resourcequota-admits  a namespace's ResourceQuota allows less than its ClusterQueue can
                      admit (the ResourceQuota admission plugin refuses the pods Kueue
                      admitted: "exceeded quota")
  pod-security        pods their namespace's Pod Security level refuses (hostPath,
                      privileged, host namespaces, added capabilities such as IPC_LOCK;
                      restricted's securityContext rules; k8s.io/pod-security-admission)
  limitrange-admits   a container's request above the limit a LimitRange gives it (its
                      default limit, which the API server sets to the max when unset), a
                      request below its min, a pod's sum above a Pod item's max (the
                      LimitRanger admission plugin, plugin/pkg/admission/limitranger)
  kueue-dra-mapping   claim templates of queued workloads on a DeviceClass that Kueue's
                      Configuration does not map, or with firstAvailable / All / adminAccess
                      (Kueue marks such workloads inadmissible)
  resourcequota-dra   a namespace's claims on a DeviceClass its ResourceQuota does not cap
  dra-device-plugin   a DRA pool whose nodes would also run the device plugin
  tas-autoscaled      topology-aware placement on an autoscaled pool without a
                      ProvisioningRequest admission check
  workload-shape      Job pods without restartPolicy Never/OnFailure (refused), queued
                      workloads rendered suspended (a re-apply takes suspend from Kueue), pods
                      on a topology flavor with no topology request in a ClusterQueue that is
                      not topology-only (Kueue: "supports only TopologyAwareScheduling")
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from aiplat.findings import Finding
from aiplat.kube.facts import POOL_LABEL
from aiplat.kube.lint.base import Context, Obj, finding, name, namespace, rule
from aiplat.kube.lint.objects import (
    QUEUE_LABEL,
    claim_requests,
    device_subrequests,
    flavor_resources,
    kueue_config,
    pod_specs,
    pod_templates,
    pool_of,
    quantity,
)
from aiplat.kube.quantity import pod_requests
from aiplat.kube.validate import ref

TOPOLOGY_ANNOTATIONS = ("kueue.x-k8s.io/podset-required-topology",
                        "kueue.x-k8s.io/podset-preferred-topology",
                        "kueue.x-k8s.io/podset-unconstrained-topology")
PROVISIONING = "kueue.x-k8s.io/provisioning-request"


def _container_limits(lr_items: list[Obj]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(default limits, max) of a namespace's Container LimitRange items, with the API
    server's defaulting: a resource with a max and no default limit defaults to the max."""
    default: dict[str, Any] = {}
    maximum: dict[str, Any] = {}
    for item in lr_items:
        if item.get("type", "Container") != "Container":
            continue
        maximum |= item.get("max") or {}
        default |= {**(item.get("max") or {}), **(item.get("default") or {})}
    return default, maximum


@rule("limitrange-admits", "containers and pods fit their namespace's LimitRange (its default "
      "limit, min and Pod max)", severities=("error", "warning"))
def limitrange_admits(ctx: Context) -> list[Finding]:
    items: dict[str, list[Obj]] = {}
    out = []
    for lr in ctx.kind("LimitRange"):
        limits = (lr.get("spec") or {}).get("limits") or []
        items.setdefault(namespace(lr), []).extend(limits)
        default, maximum = _container_limits(limits)
        for r in ("cpu", "memory"):
            if r in default and r in maximum and quantity(default[r]) < quantity(maximum[r]):
                out.append(finding(
                    "warning", "limitrange-admits", ref(lr),
                    f"default {r} limit {default[r]} is below the max {maximum[r]}: a "
                    f"container that requests more {r} and sets no limit gets {default[r]} "
                    "as its limit, and the API server refuses the pod (request above limit)",
                    f"set default.{r} to the max ({maximum[r]}) or drop it"))
    for o in ctx.objects:
        lr_items = items.get(namespace(o), [])
        default, maximum = _container_limits(lr_items)
        for spec in pod_specs(o):
            for c in spec.get("containers") or []:
                if default or maximum:
                    out += _container_findings(o, c, default, maximum)
                out += _min_findings(o, c, lr_items)
            out += _pod_item_findings(o, spec, lr_items)
    return out


def _min_findings(o: Obj, c: Obj, lr_items: list[Obj]) -> list[Finding]:
    requests = ((c.get("resources") or {}).get("requests")) or {}
    out = []
    for item in lr_items:
        if item.get("type", "Container") != "Container":
            continue
        for r, low in (item.get("min") or {}).items():
            if r in requests and quantity(requests[r]) < quantity(low):
                out.append(finding(
                    "error", "limitrange-admits", ref(o),
                    f"container {c.get('name')!r} requests {requests[r]} {r}, below the "
                    f"LimitRange min {low}: the API server refuses its pods ('minimum {r} "
                    "usage per Container')", f"request at least {low} {r}"))
    return out


def _pod_item_findings(o: Obj, spec: Obj, lr_items: list[Obj]) -> list[Finding]:
    """A Pod item's max caps the sum over the pod's containers (requests and limits)."""
    total = pod_requests(spec, overhead=False)  # the LimitRanger's sum
    out = []
    for item in lr_items:
        if item.get("type") != "Pod":
            continue
        for r, high in (item.get("max") or {}).items():
            if r in total and total[r] > quantity(high):
                out.append(finding(
                    "error", "limitrange-admits", ref(o),
                    f"its pods ask for {total[r]:g} {r} in all, above the LimitRange's Pod max "
                    f"{high}: the API server refuses them ('maximum {r} usage per Pod')",
                    f"lower the containers' {r} or raise the Pod max"))
    return out


def _container_findings(o: Obj, c: Obj, default: dict[str, Any], maximum: dict[str, Any]
                        ) -> list[Finding]:
    res = c.get("resources") or {}
    requests, limits = res.get("requests") or {}, res.get("limits") or {}
    out = []
    for r in sorted(set(default) | set(maximum)):
        limit = limits.get(r, default.get(r))
        if r in requests and limit is not None and quantity(requests[r]) > quantity(limit):
            given = "its limit" if r in limits else "the LimitRange's default limit"
            out.append(finding(
                "error", "limitrange-admits", ref(o),
                f"container {c.get('name')!r} requests {requests[r]} {r} but {given} is "
                f"{limit}: the API server refuses its pods ('must be less than or equal to "
                f"{r} limit')", f"set resources.limits.{r} to at least {requests[r]}"))
        if r in maximum and limit is not None and quantity(limit) > quantity(maximum[r]):
            out.append(finding(
                "error", "limitrange-admits", ref(o),
                f"container {c.get('name')!r} has {r} limit {limit} above the LimitRange max "
                f"{maximum[r]}: its pods are refused", f"lower the {r} limit"))
    return out


def _queued_claims(ctx: Context) -> Iterable[tuple[Obj, Obj]]:
    """(workload, claim template) for every claim template a queued workload uses."""
    templates = {(namespace(t), name(t)): t for t in ctx.kind("ResourceClaimTemplate")}
    for o in ctx.objects:
        if QUEUE_LABEL not in ((o.get("metadata") or {}).get("labels") or {}):
            continue
        for spec in pod_specs(o):
            for rc in spec.get("resourceClaims") or []:
                t = templates.get((namespace(o), rc.get("resourceClaimTemplateName", "")))
                if t is not None:
                    yield o, t


@rule("kueue-dra-mapping", "queued workloads claim DeviceClasses Kueue's Configuration maps, "
      "an ExactCount of one class", severities=("error", "warning"))
def kueue_dra_mapping(ctx: Context) -> list[Finding]:
    kc = kueue_config(ctx)
    mapped = {c for m in ((kc.doc or {}).get("resources") or {}).get("deviceClassMappings")
              or [] for c in m.get("deviceClassNames") or []}
    out = []
    seen: set[str] = set()
    for o, t in _queued_claims(ctx):
        for req in claim_requests(t):
            why = _unmapped(req, mapped)
            if kc.assumed and why:
                why[-1] += f" ({kc.assumed} maps none; the cluster's may)"
            key = f"{ref(o)}/{ref(t)}"
            if why and key not in seen:
                seen.add(key)
                out.append(finding(
                    "warning" if kc.assumed and not _shape(req) else "error",
                    "kueue-dra-mapping", ref(o),
                    f"claim template {name(t)}: {'; '.join(why)}: Kueue marks the workload "
                    "inadmissible", "map each DeviceClass in Kueue's Configuration "
                    "(resources.deviceClassMappings) and ask for an ExactCount of one class"))
    return out


def _shape(req: Obj) -> list[str]:
    """What Kueue's DRA accounting refuses whatever its Configuration maps."""
    why = []
    if "firstAvailable" in req:
        why.append("uses firstAvailable")
    for ex in device_subrequests(req) if "firstAvailable" not in req else []:
        if ex.get("allocationMode") == "All":
            why.append("uses allocationMode: All")
        if ex.get("adminAccess"):
            why.append("asks for adminAccess")
    return why


def _unmapped(req: Obj, mapped: set[str]) -> list[str]:
    why = _shape(req)
    for ex in device_subrequests(req) if "firstAvailable" not in req else []:
        cls = ex.get("deviceClassName")
        if cls and cls not in mapped:
            why.append(f"names DeviceClass {cls!r}, which Kueue's Configuration does not map")
    return why


@rule("resourcequota-dra", "a namespace's ResourceQuota caps the DeviceClasses its claims use",
      severities=("warning",))
def resourcequota_dra(ctx: Context) -> list[Finding]:
    hard = {namespace(q): set((q.get("spec") or {}).get("hard") or {})
            for q in ctx.kind("ResourceQuota")}
    out = []
    for t in ctx.kind("ResourceClaimTemplate"):
        ns = namespace(t)
        if ns not in hard:
            continue
        for req in claim_requests(t):
            cls = (req.get("exactly") or {}).get("deviceClassName")
            key = f"{cls}.deviceclass.resource.k8s.io/devices"
            if cls and key not in hard[ns]:
                out.append(finding(
                    "warning", "resourcequota-dra", f"ResourceQuota/{ns}",
                    f"claims on DeviceClass {cls} (template {name(t)}) are not capped: the "
                    "quota has no entry for them", f"add {key} to spec.hard"))
    return out


@rule("dra-device-plugin", "a DRA pool's nodes do not also run the device plugin",
      severities=("warning",))
def dra_device_plugin(ctx: Context) -> list[Finding]:
    return [finding("warning", "dra-device-plugin", f"Pool/{p.name}",
                    "the pool publishes DRA devices but its nodes do not carry "
                    "nvidia.com/gpu.deploy.device-plugin=false: the GPU operator would run the "
                    "device plugin beside the DRA driver on them, handing the same GPUs out "
                    "twice", "label the pool's nodes nvidia.com/gpu.deploy.device-plugin=false "
                    "(cluster/nodes/<pool>/node-patch.yaml)")
            for p in ctx.inventory.pools
            if p.devices and p.labels.get("nvidia.com/gpu.deploy.device-plugin") != "false"]


@rule("tas-autoscaled", "topology-aware placement on an autoscaled pool has a "
      "ProvisioningRequest check", severities=("warning",))
def tas_autoscaled(ctx: Context) -> list[Finding]:
    provisioning = {name(a) for a in ctx.kind("AdmissionCheck")
                    if (a.get("spec") or {}).get("controllerName") == PROVISIONING}
    checked: set[str] = set()
    for cq in ctx.kind("ClusterQueue"):
        spec = cq.get("spec") or {}
        checks = set(spec.get("admissionChecks") or []) | {
            c.get("name") for c in (spec.get("admissionChecksStrategy") or {}).get(
                "admissionChecks") or []}
        if checks & provisioning:
            checked |= {fl.get("name") for rg in spec.get("resourceGroups") or []
                        for fl in rg.get("flavors") or []}
    autoscaled = {p.name for p in ctx.inventory.pools if p.autoscaled}
    out = []
    for fl in ctx.kind("ResourceFlavor"):
        spec = fl.get("spec") or {}
        pool = (spec.get("nodeLabels") or {}).get(POOL_LABEL)
        if spec.get("topologyName") and pool in autoscaled and name(fl) not in checked:
            out.append(finding(
                "warning", "tas-autoscaled", ref(fl),
                f"topology-aware placement on autoscaled pool {pool}: Kueue places only on "
                "nodes that exist, so work beyond them waits unadmitted and the autoscaler "
                "never sees a pending pod", "drop topologyName on autoscaled pools, or add a "
                "ProvisioningRequest AdmissionCheck to the ClusterQueues using the flavor"))
    return out


def _mixed_topology_queues(ctx: Context) -> set[tuple[str, str]]:
    """(namespace, LocalQueue) whose ClusterQueue mixes topology and plain flavors. Kueue
    implies a topology request only where every flavor has one (a TAS-only queue)."""
    tas = {name(fl) for fl in ctx.kind("ResourceFlavor")
           if (fl.get("spec") or {}).get("topologyName")}
    mixed = set()
    for cq in ctx.kind("ClusterQueue"):
        flavors = {fl.get("name") for rg in (cq.get("spec") or {}).get("resourceGroups") or []
                   for fl in rg.get("flavors") or []}
        if flavors & tas and flavors - tas:
            mixed.add(name(cq))
    return {(namespace(lq), name(lq)) for lq in ctx.kind("LocalQueue")
            if (lq.get("spec") or {}).get("clusterQueue") in mixed}


@rule("workload-shape", "Job pods restart Never/OnFailure, queued jobs are not rendered "
      "suspended, pods on a mixed queue ask for a topology", severities=("error", "warning"))
def workload_shape(ctx: Context) -> list[Finding]:
    tas_pools = {(fl.get("spec") or {}).get("nodeLabels", {}).get(POOL_LABEL)
                 for fl in ctx.kind("ResourceFlavor") if (fl.get("spec") or {}).get(
                     "topologyName")}
    mixed = _mixed_topology_queues(ctx)
    out = []
    for o in ctx.objects:
        kind = o.get("kind")
        queue = ((o.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL)
        queued = queue is not None
        if queued and kind in ("Job", "JobSet") and (o.get("spec") or {}).get("suspend"):
            out.append(finding(
                "warning", "workload-shape", ref(o),
                "rendered with suspend: true: Kueue's webhook suspends queued jobs itself, and "
                "a server-side apply of this file takes the field back and stops the job once "
                "Kueue has started it", "drop spec.suspend"))
        for tpl in pod_templates(o):
            spec = tpl.get("spec") or {}
            # JobSet's webhook sets OnFailure where the template has none (jobset_webhook.go).
            restart = spec.get("restartPolicy") or ("OnFailure" if kind == "JobSet" else None)
            if kind in ("Job", "JobSet") and restart not in ("Never", "OnFailure"):
                out.append(finding(
                    "error", "workload-shape", ref(o),
                    "its pod template has no restartPolicy Never or OnFailure: the API server "
                    "refuses the Job (spec.template.spec.restartPolicy: Required value)",
                    "set restartPolicy: Never"))
            ann = (tpl.get("metadata") or {}).get("annotations") or {}
            if (namespace(o), queue) in mixed and pool_of(spec) in tas_pools and not any(
                    a in ann for a in TOPOLOGY_ANNOTATIONS):
                out.append(finding(
                    "error", "workload-shape", ref(o),
                    f"its pods go to pool {pool_of(spec)}, whose flavor has a Topology, ask "
                    "for no topology, and its ClusterQueue also has plain flavors (so Kueue "
                    "implies none): Kueue refuses them ('supports only "
                    "TopologyAwareScheduling')", "annotate the pod template with "
                    "kueue.x-k8s.io/podset-unconstrained-topology: \"true\" (or a required "
                    "or preferred level)"))
    return out
@rule("resourcequota-admits",
      "a namespace's ResourceQuota admits what its ClusterQueue can admit")
def resourcequota_admits(ctx: Context) -> list[Finding]:
    out = []
    quotas: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for rq in ctx.kind("ResourceQuota"):
        for k, v in ((rq.get("spec") or {}).get("hard") or {}).items():
            quotas[namespace(rq)][k] = min(quotas[namespace(rq)].get(k, quantity(v)), quantity(v))
    for lq in ctx.kind("LocalQueue"):
        ns = namespace(lq)
        cq = next((c for c in ctx.kind("ClusterQueue")
                   if name(c) == (lq.get("spec") or {}).get("clusterQueue")), None)
        if cq is None or ns not in quotas:
            continue
        admits: dict[str, Decimal] = defaultdict(Decimal)
        for _fl, r in flavor_resources(cq):
            admits[r["name"]] += (quantity(r.get("nominalQuota", 0))
                                  + quantity(r.get("borrowingLimit", 0)))
        for res, amount in admits.items():
            if res in ("cpu", "memory"):
                keys = [f"requests.{res}", res]
            elif "/" in res:
                keys = [f"requests.{res}"]
            else:
                keys = [f"{res}.deviceclass.resource.k8s.io/devices"]
            hard = next((quotas[ns][k] for k in keys if k in quotas[ns]), None)
            if hard is not None and hard < amount:
                out.append(finding("error", "resourcequota-admits", f"ResourceQuota/{ns}",
                                   f"allows {hard:g} {res} but ClusterQueue {name(cq)} can "
                                   f"admit {amount:g}: admitted pods fail quota at creation",
                                   f"raise {keys[0]} to at least {amount:g}"))
    return out


# Capabilities baseline lets a container add (k8s.io/pod-security-admission policy/
# check_capabilities_baseline.go); restricted allows only NET_BIND_SERVICE.
_BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                  "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}


_RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                       "persistentVolumeClaim", "projected", "secret", "name"}


def pod_security_violations(spec: Obj, level: str) -> list[str]:
    """What the Pod Security Standards level forbids in a pod spec (the checks that matter
    for GPU workloads and agents; not the full list of the admission plugin)."""
    if level == "privileged":
        return []
    out = [f"{key}: true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    for v in spec.get("volumes") or []:
        if "hostPath" in v:
            out.append(f"hostPath volume {v.get('name')!r}")
        elif level == "restricted" and not set(v) <= _RESTRICTED_VOLUMES:
            out.append(f"volume {v.get('name')!r} of a type restricted does not allow")
    pod_sc = spec.get("securityContext") or {}
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        out += _baseline_violations(c, level)
        if level == "restricted":
            out += _restricted_violations(c, pod_sc)
    return out


def _baseline_violations(c: Obj, level: str) -> list[str]:
    sc = c.get("securityContext") or {}
    name = c.get("name")
    out = []
    if sc.get("privileged"):
        out.append(f"container {name!r} is privileged")
    if any(p.get("hostPort") for p in c.get("ports") or []):
        out.append(f"container {name!r} uses a hostPort")
    added = set((sc.get("capabilities") or {}).get("add") or [])
    allowed = {"NET_BIND_SERVICE"} if level == "restricted" else _BASELINE_CAPS
    if added - allowed:  # e.g. IPC_LOCK for RDMA memory registration
        out.append(f"container {name!r} adds capabilities {sorted(added - allowed)}")
    return out


def _restricted_violations(c: Obj, pod_sc: Obj) -> list[str]:
    sc = c.get("securityContext") or {}
    name = c.get("name")
    out = []
    if sc.get("allowPrivilegeEscalation") is not False:
        out.append(f"container {name!r} does not set allowPrivilegeEscalation: false")
    if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
        out.append(f"container {name!r} does not drop ALL capabilities")
    if not (sc.get("runAsNonRoot") or pod_sc.get("runAsNonRoot")):
        out.append(f"container {name!r} does not set runAsNonRoot: true")
    seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        out.append(f"container {name!r} has no RuntimeDefault seccomp profile")
    return out


@rule("pod-security", "pods pass their namespace's Pod Security level")
def pod_security(ctx: Context) -> list[Finding]:
    levels = {name(n): ((n.get("metadata") or {}).get("labels") or {}).get(
        "pod-security.kubernetes.io/enforce", "privileged") for n in ctx.kind("Namespace")}
    out = []
    for o in ctx.objects:
        level = levels.get(namespace(o))
        if level is None:
            continue
        for spec in pod_specs(o):
            problems = pod_security_violations(spec, level)
            if problems:
                out.append(finding("error", "pod-security", ref(o),
                                   f"namespace {namespace(o)} enforces Pod Security "
                                   f"'{level}', which rejects its pods: {'; '.join(problems)}",
                                   "fix the pod's securityContext/volumes, or run it in a "
                                   "namespace with the level it needs"))
    return out
