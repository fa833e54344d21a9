"""Lint rules for pods that can never fit what they ask for: a node, a device, a volume.
Each class, with its page at night and the rule's source:

  gpu-per-node      a pod asks for more GPUs (an extended resource, or a DRA claim's
                    device count) than one node of any pool has. Symptom: Kueue admits it
                    (quota is pooled), the scheduler leaves it Pending, 'Insufficient
                    nvidia.com/gpu' / 'cannot allocate all claims'; on a flavor with a
                    Topology Kueue itself refuses it ('topology ... doesn't allow to fit
                    any of 1 pod(s)', pkg/cache/scheduler/tas_flavor_snapshot.go). Source:
                    kube-scheduler
                    NodeResourcesFit filter (pkg/scheduler/framework/plugins/noderesources/
                    fit.go), DRA allocates a claim's devices from one node's slices
                    (staging/src/k8s.io/dynamic-resource-allocation/structured).
  resource-unserved a pod asks for a resource no pool provides, e.g. a MIG profile
                    (nvidia.com/mig-3g.40gb) on pools where MIG is off. Symptom: Kueue marks
                    it inadmissible ('resource ... unavailable in ClusterQueue') or, outside
                    Kueue, the scheduler never places it. Source: Kueue pkg/scheduler/
                    flavorassigner (resources not covered by the ClusterQueue); the GPU
                    operator's mig-manager names MIG resources nvidia.com/mig-<profile>
                    only with the mixed strategy on MIG-enabled nodes.
  pvc-access-mode   a PersistentVolumeClaim (or an ephemeral volume's claim template) asks
                    for an access mode its StorageClass's CSI driver cannot serve, or sits on
                    a static-only driver (Mountpoint for S3) with no PersistentVolume for
                    it. Symptom: the PVC stays Pending, the pod with it never starts.
                    Source: each driver's capabilities, with their sources, in
                    catalog/storage.py. A StorageClass the tree does not define is a
                    warning (the cluster may have it; if not, 'storageclass.storage.k8s.io
                    not found').
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from aiplat.catalog.storage import driver
from aiplat.findings import Finding
from aiplat.kube import cel
from aiplat.kube.facts import POOL_LABEL
from aiplat.kube.inventory import PoolInventory
from aiplat.kube.lint.base import Context, Obj, finding, name, namespace, rule
from aiplat.kube.lint.objects import (
    claim_counts,
    node_resources,
    pod_specs,
    transformations,
)
from aiplat.kube.quantity import pod_requests
from aiplat.kube.validate import ref

NOT_EXTENDED = {"cpu", "memory", "ephemeral-storage"}


def _extended(spec: Obj) -> Iterable[tuple[str, Decimal]]:
    for k, v in sorted(pod_requests(spec).items()):
        if k not in NOT_EXTENDED and not k.startswith("hugepages-") and v > 0:
            yield k, v


def _class_devices(ctx: Context, cls: str) -> dict[str, int]:
    """Devices one node of each pool offers to a DeviceClass (its CEL selectors)."""
    dc = next((d for d in ctx.kind("DeviceClass") if name(d) == cls), None)
    if dc is None:
        return {}
    exprs = [(s.get("cel") or {}).get("expression", "")
             for s in (dc.get("spec") or {}).get("selectors") or []]
    out: dict[str, int] = {}
    for p in ctx.inventory.pools:
        try:
            n = sum(all(cel.evaluate(e, p.driver, d) for e in exprs) for d in p.devices)
        except cel.CelError:
            continue  # deviceclass-matches reports a selector that does not evaluate
        if n:
            out[p.name] = n
    return out


def _largest(pools: list[PoolInventory], res: str) -> tuple[int, str]:
    return max(((p.per_node(res), p.name) for p in pools if p.capacity.get(res)),
               default=(0, ""))


def _never(ctx: Context, pool: str, res: str) -> str:
    """How the cluster says no: Kueue's topology-aware admission counts node capacity, plain
    quota does not (then the scheduler does)."""
    topo = next((str(fl["spec"]["topologyName"]) for fl in ctx.kind("ResourceFlavor")
                 if ((fl.get("spec") or {}).get("nodeLabels") or {}).get(POOL_LABEL) == pool
                 and fl["spec"].get("topologyName")), None)
    if topo:
        return (f"Kueue never admits it (topology {topo!r} doesn't allow to fit any of the "
                "pods)")
    return f"it is admitted and then Pending forever (Insufficient {res})"


@rule("gpu-per-node", "a pod asks for no more GPUs or claimed devices than one node has")
def gpu_per_node(ctx: Context) -> list[Finding]:
    out = []
    for o in ctx.objects:
        for spec in pod_specs(o):
            for res, want in _extended(spec):
                most, pool = _largest(ctx.inventory.pools, res)
                if most and want > most:
                    out.append(finding(
                        "error", "gpu-per-node", ref(o),
                        f"one pod asks for {want:g} {res} but the largest node (pool {pool}) "
                        f"has {most}: {_never(ctx, pool, res)}", f"ask for at most {most} "
                        "per pod and add pods (parallelism or replicas) for the rest"))
            for tname, cls, count in claim_counts(ctx, o, spec):
                per_pool = _class_devices(ctx, cls)
                if per_pool and count > max(per_pool.values()):
                    out.append(finding(
                        "error", "gpu-per-node", ref(o),
                        f"claim template {tname} asks for {count} devices of {cls} but one "
                        f"node has at most {max(per_pool.values())} ({per_pool}): the claim "
                        "never allocates ('cannot allocate all claims')",
                        f"lower the request's count to {max(per_pool.values())} or less"))
    return out


@rule("resource-unserved", "a pod asks only for resources some pool provides",
      severities=("error", "warning"))
def resource_unserved(ctx: Context) -> list[Finding]:
    served = node_resources(ctx)
    if not ctx.inventory.pools:
        return []
    transforms = transformations(ctx)
    out = []
    for o in ctx.objects:
        for spec in pod_specs(o):
            for res, _ in _extended(spec):
                if res in served:
                    continue
                if res in transforms:
                    # Kueue charges its outputs instead; a scheduler extender (HAMi's
                    # gpucores, gpumem) may place it where no node publishes it.
                    out.append(finding(
                        "warning", "resource-unserved", ref(o),
                        f"asks for {res}, which no pool of the inventory publishes; Kueue "
                        f"charges it as {sorted(transforms[res].get('outputs') or {})}: "
                        "unless a scheduler extender manages it, no node could run it",
                        f"add {res} to the pools' capacity if the nodes publish it"))
                    continue
                mig = res.startswith("nvidia.com/mig-")
                why = (f"asks for {res}, a MIG profile no pool has: MIG is off (or laid out "
                       "otherwise) on every pool" if mig else
                       f"asks for {res}, which no pool provides")
                out.append(finding(
                    "error", "resource-unserved", ref(o),
                    why + ": Kueue finds it no flavor ('unavailable in ClusterQueue') and "
                    "no node could run it", f"ask for one of {sorted(served)}" + (
                        ", or enable MIG with this profile on a pool (sharing: mig, "
                        "migLayout)" if mig else "")))
    return out


def _claims(ctx: Context) -> Iterable[tuple[Obj, str, Obj]]:
    """(object, claim label, PVC spec) for PVCs and pods' ephemeral claim templates."""
    for pvc in ctx.kind("PersistentVolumeClaim"):
        yield pvc, "", pvc.get("spec") or {}
    for o in ctx.objects:
        for spec in pod_specs(o):
            for v in spec.get("volumes") or []:
                tpl = ((v.get("ephemeral") or {}).get("volumeClaimTemplate") or {})
                if tpl:
                    yield o, f"ephemeral volume {v.get('name')!r}: ", tpl.get("spec") or {}


def _bound(ctx: Context, pvc: Obj, sc: str) -> bool:
    """A PersistentVolume of the tree that this claim can bind (its class, and its claimRef
    or the claim's volumeName when either is set)."""
    want = (pvc.get("spec") or {}).get("volumeName")
    for pv in ctx.kind("PersistentVolume"):
        spec = pv.get("spec") or {}
        ref_ = spec.get("claimRef") or {}
        if spec.get("storageClassName") == sc and (not want or want == name(pv)) and (
                not ref_ or (ref_.get("name"), ref_.get("namespace")) == (name(pvc),
                                                                          namespace(pvc))):
            return True
    return False


@rule("pvc-access-mode", "a claim's StorageClass exists, its driver serves the access "
      "modes, a static driver has the claim's PersistentVolume", severities=("error", "warning"))
def pvc_access_mode(ctx: Context) -> list[Finding]:
    classes = {name(sc): str(sc.get("provisioner", "")) for sc in ctx.kind("StorageClass")}
    out = []
    for o, label, spec in _claims(ctx):
        sc = spec.get("storageClassName")
        if not sc:
            continue  # the cluster's default class; the tree cannot tell which
        if sc not in classes:
            out.append(finding(
                "warning", "pvc-access-mode", ref(o),
                f"{label}storageClassName {sc!r} is not a StorageClass of this tree: unless "
                "the cluster has one by that name the claim stays Pending",
                f"use one of {sorted(classes)} or add the StorageClass"))
            continue
        d = driver(classes[sc])
        if d is None:
            continue  # the admin's own provisioner: nothing known about it
        bad = sorted(set(spec.get("accessModes") or []) - set(d.access_modes))
        if bad:
            out.append(finding(
                "error", "pvc-access-mode", ref(o),
                f"{label}asks for {', '.join(bad)} on StorageClass {sc}, whose driver "
                f"{d.name} serves only {sorted(d.access_modes)}: the claim stays Pending "
                "and its pods never start",
                f"use {sorted(d.access_modes)[0]} or a StorageClass whose driver serves "
                f"{bad[0]}"))
        # Local disks come from the local static provisioner, whose PVs no tree holds.
        if not label and not d.dynamic and d.name != "kubernetes.io/no-provisioner" \
                and not _bound(ctx, o, sc):
            out.append(finding(
                "error", "pvc-access-mode", ref(o),
                f"StorageClass {sc}'s driver {d.name} provisions nothing (static only) and "
                "no PersistentVolume of the tree is there for this claim: it stays Pending "
                "('waiting for a volume to be created')", "add a PersistentVolume for it "
                "(claimRef to this claim, the class's name), or use a dynamic class"))
    return out
