"""Lint rules for what a live cluster refuses although every schema accepts it: each one a
defect class the lab cluster (``aiplat lab cluster``) revealed, so users without a cluster
are warned too. Rules, by name:

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

from collections.abc import Callable, Iterable
from typing import Any

import yaml

from aiplat.kube.facts import POOL_LABEL
from aiplat.kube.lint import Context, Finding, _pod_specs, _q, name, namespace
from aiplat.kube.quantity import pod_requests
from aiplat.kube.shape import value_problems
from aiplat.kube.validate import ref

Obj = dict[str, Any]
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
TOPOLOGY_ANNOTATIONS = ("kueue.x-k8s.io/podset-required-topology",
                        "kueue.x-k8s.io/podset-preferred-topology",
                        "kueue.x-k8s.io/podset-unconstrained-topology")
KUEUE_CONFIG_MAP = "kueue-manager-config"
PROVISIONING = "kueue.x-k8s.io/provisioning-request"
_STRINGS = {"type": "array", "items": {"type": "string"}}
LABEL_SELECTOR = {"type": "object", "properties": {
    "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
    "matchExpressions": {"type": "array", "items": {"type": "object", "properties": {
        "key": {"type": "string"}, "operator": {"type": "string"}, "values": _STRINGS}}}}}
# The fields of Kueue's Configuration (apis/config/v1beta2) lint reads, with their types:
# Kueue decodes it strictly and does not start on a wrong one.
KUEUE_CONFIGURATION = {"type": "object", "properties": {
    "namespace": {"type": "string"},
    "manageJobsWithoutQueueName": {"type": "boolean"},
    "managedJobsNamespaceSelector": LABEL_SELECTOR,
    "integrations": {"type": "object", "properties": {"frameworks": _STRINGS}},
    "resources": {"type": "object", "properties": {"deviceClassMappings": {
        "type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "deviceClassNames": _STRINGS}}}}}}}


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


def _templates(o: Obj) -> list[Obj]:
    """Pod templates (with metadata) of a workload object."""
    spec = o.get("spec") or {}
    if o.get("kind") == "JobSet":
        return [((r.get("template") or {}).get("spec") or {}).get("template") or {}
                for r in spec.get("replicatedJobs") or []]
    if o.get("kind") in ("Job", "Deployment", "StatefulSet", "DaemonSet"):
        return [spec.get("template") or {}]
    return []


def limitrange_admits(ctx: Context) -> list[Finding]:
    items: dict[str, list[Obj]] = {}
    out = []
    for lr in ctx.kind("LimitRange"):
        limits = (lr.get("spec") or {}).get("limits") or []
        items.setdefault(namespace(lr), []).extend(limits)
        default, maximum = _container_limits(limits)
        for r in ("cpu", "memory"):
            if r in default and r in maximum and _q(default[r]) < _q(maximum[r]):
                out.append(Finding(
                    "warning", "limitrange-admits", ref(lr),
                    f"default {r} limit {default[r]} is below the max {maximum[r]}: a "
                    f"container that requests more {r} and sets no limit gets {default[r]} "
                    "as its limit, and the API server refuses the pod (request above limit)",
                    f"set default.{r} to the max ({maximum[r]}) or drop it"))
    for o in ctx.objects:
        lr_items = items.get(namespace(o), [])
        default, maximum = _container_limits(lr_items)
        for spec in _pod_specs(o):
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
            if r in requests and _q(requests[r]) < _q(low):
                out.append(Finding(
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
            if r in total and total[r] > _q(high):
                out.append(Finding(
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
        if r in requests and limit is not None and _q(requests[r]) > _q(limit):
            given = "its limit" if r in limits else "the LimitRange's default limit"
            out.append(Finding(
                "error", "limitrange-admits", ref(o),
                f"container {c.get('name')!r} requests {requests[r]} {r} but {given} is "
                f"{limit}: the API server refuses its pods ('must be less than or equal to "
                f"{r} limit')", f"set resources.limits.{r} to at least {requests[r]}"))
        if r in maximum and limit is not None and _q(limit) > _q(maximum[r]):
            out.append(Finding(
                "error", "limitrange-admits", ref(o),
                f"container {c.get('name')!r} has {r} limit {limit} above the LimitRange max "
                f"{maximum[r]}: its pods are refused", f"lower the {r} limit"))
    return out


def _kueue_configuration(ctx: Context) -> Obj | None:
    """The tree's Kueue Configuration; None without one, or with one Kueue cannot read
    (``kueue_configuration_problems`` says why)."""
    doc, problems = _read_kueue_configuration(ctx)
    return None if problems else doc


def kueue_configuration_problems(ctx: Context) -> list[str]:
    """Why Kueue cannot decode the tree's Configuration (and so does not start)."""
    return _read_kueue_configuration(ctx)[1]


def _read_kueue_configuration(ctx: Context) -> tuple[Obj | None, list[str]]:
    for cm in ctx.kind("ConfigMap"):
        if name(cm) == KUEUE_CONFIG_MAP:
            text = ((cm.get("data") or {}).get("controller_manager_config.yaml")) or ""
            try:
                doc = yaml.safe_load(text)
            except yaml.YAMLError as e:
                return None, [f"it is not YAML ({str(e).splitlines()[0]})"]
            if not isinstance(doc, dict):
                return None, []
            return doc, [f"{p} {m}" for p, m in value_problems(doc, KUEUE_CONFIGURATION)]
    return None, []


def _queued_claims(ctx: Context) -> Iterable[tuple[Obj, Obj]]:
    """(workload, claim template) for every claim template a queued workload uses."""
    templates = {(namespace(t), name(t)): t for t in ctx.kind("ResourceClaimTemplate")}
    for o in ctx.objects:
        if QUEUE_LABEL not in ((o.get("metadata") or {}).get("labels") or {}):
            continue
        for spec in _pod_specs(o):
            for rc in spec.get("resourceClaims") or []:
                t = templates.get((namespace(o), rc.get("resourceClaimTemplateName", "")))
                if t is not None:
                    yield o, t


def _requests(template: Obj) -> list[Obj]:
    spec = ((template.get("spec") or {}).get("spec") or {})
    return list((spec.get("devices") or {}).get("requests") or [])


def kueue_dra_mapping(ctx: Context) -> list[Finding]:
    cfg = _kueue_configuration(ctx)
    mapped = {c for m in ((cfg or {}).get("resources") or {}).get("deviceClassMappings") or []
              for c in m.get("deviceClassNames") or []}
    out = []
    seen: set[str] = set()
    for o, t in _queued_claims(ctx):
        for req in _requests(t):
            why = []
            if "firstAvailable" in req:
                why.append("uses firstAvailable")
            exactly = req.get("exactly") or {}
            if exactly.get("allocationMode") == "All":
                why.append("uses allocationMode: All")
            if exactly.get("adminAccess"):
                why.append("asks for adminAccess")
            cls = exactly.get("deviceClassName")
            if cls and cls not in mapped:
                why.append(f"names DeviceClass {cls!r}, which "
                           + ("the tree's Kueue Configuration does not map" if cfg else
                              "the tree has no Kueue Configuration to map"))
            key = f"{ref(o)}/{ref(t)}"
            if why and key not in seen:
                seen.add(key)
                out.append(Finding(
                    "error", "kueue-dra-mapping", ref(o),
                    f"claim template {name(t)}: {'; '.join(why)}: Kueue marks the workload "
                    "inadmissible", "map each DeviceClass in Kueue's Configuration "
                    "(resources.deviceClassMappings) and ask for an ExactCount of one class"))
    return out


def resourcequota_dra(ctx: Context) -> list[Finding]:
    hard = {namespace(q): set((q.get("spec") or {}).get("hard") or {})
            for q in ctx.kind("ResourceQuota")}
    out = []
    for t in ctx.kind("ResourceClaimTemplate"):
        ns = namespace(t)
        if ns not in hard:
            continue
        for req in _requests(t):
            cls = (req.get("exactly") or {}).get("deviceClassName")
            key = f"{cls}.deviceclass.resource.k8s.io/devices"
            if cls and key not in hard[ns]:
                out.append(Finding(
                    "warning", "resourcequota-dra", f"ResourceQuota/{ns}",
                    f"claims on DeviceClass {cls} (template {name(t)}) are not capped: the "
                    "quota has no entry for them", f"add {key} to spec.hard"))
    return out


def dra_device_plugin(ctx: Context) -> list[Finding]:
    return [Finding("warning", "dra-device-plugin", f"Pool/{p.name}",
                    "the pool publishes DRA devices but its nodes do not carry "
                    "nvidia.com/gpu.deploy.device-plugin=false: the GPU operator would run the "
                    "device plugin beside the DRA driver on them, handing the same GPUs out "
                    "twice", "label the pool's nodes nvidia.com/gpu.deploy.device-plugin=false "
                    "(cluster/nodes/<pool>/node-patch.yaml)")
            for p in ctx.inventory.pools
            if p.devices and p.labels.get("nvidia.com/gpu.deploy.device-plugin") != "false"]


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
            out.append(Finding(
                "warning", "tas-autoscaled", ref(fl),
                f"topology-aware placement on autoscaled pool {pool}: Kueue places only on "
                "nodes that exist, so work beyond them waits unadmitted and the autoscaler "
                "never sees a pending pod", "drop topologyName on autoscaled pools, or add a "
                "ProvisioningRequest AdmissionCheck to the ClusterQueues using the flavor"))
    return out


def _pool_of(spec: Obj) -> str | None:
    sel = (spec.get("nodeSelector") or {}).get(POOL_LABEL)
    if sel:
        return str(sel)
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
    for t in terms:
        for e in t.get("matchExpressions") or []:
            if e.get("key") == POOL_LABEL and e.get("operator") == "In" and e.get("values"):
                return str(e["values"][0])
    return None


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
            out.append(Finding(
                "warning", "workload-shape", ref(o),
                "rendered with suspend: true: Kueue's webhook suspends queued jobs itself, and "
                "a server-side apply of this file takes the field back and stops the job once "
                "Kueue has started it", "drop spec.suspend"))
        for tpl in _templates(o):
            spec = tpl.get("spec") or {}
            if kind in ("Job", "JobSet") and spec.get("restartPolicy") not in ("Never",
                                                                                "OnFailure"):
                out.append(Finding(
                    "error", "workload-shape", ref(o),
                    "its pod template has no restartPolicy Never or OnFailure: the API server "
                    "refuses the Job (spec.template.spec.restartPolicy: Required value)",
                    "set restartPolicy: Never"))
            ann = (tpl.get("metadata") or {}).get("annotations") or {}
            if (namespace(o), queue) in mixed and _pool_of(spec) in tas_pools and not any(
                    a in ann for a in TOPOLOGY_ANNOTATIONS):
                out.append(Finding(
                    "error", "workload-shape", ref(o),
                    f"its pods go to pool {_pool_of(spec)}, whose flavor has a Topology, ask "
                    "for no topology, and its ClusterQueue also has plain flavors (so Kueue "
                    "implies none): Kueue refuses them ('supports only "
                    "TopologyAwareScheduling')", "annotate the pod template with "
                    "kueue.x-k8s.io/podset-unconstrained-topology: \"true\" (or a required "
                    "or preferred level)"))
    return out


ADMISSION_RULES: tuple[Callable[[Context], list[Finding]], ...] = (
    limitrange_admits, kueue_dra_mapping, resourcequota_dra, dra_device_plugin,
    tas_autoscaled, workload_shape,
)
