"""The platform's nodes as kwok fakes: Node objects with the labels, taints, capacity and
allocatable a real node of each pool gets, and for DRA pools the ResourceSlice the NVIDIA
DRA driver's kubelet plugin publishes (one per node, pool named after the node, the devices
of ``PoolFacts.devices``). Pure: ``run`` creates them.

Which nodes exist: a fixed pool's ``count``; an autoscaled pool's ``autoscaling.min`` (what is
there before the autoscaler adds any: work beyond it waits, as on a real cluster).

What a fake node cannot show: the kubelet's side (device preparation through the DRA
driver's NodePrepareResources, CDI injection, the device plugin's allocation), GPU health,
and real resource usage; kwok marks pods Running once they are bound.
"""

from __future__ import annotations

from typing import Any

from aiplat.kube.facts import (
    GPU_RESOURCE,
    HOSTNAME_LABEL,
    NVIDIA_DRIVER,
    RDMA_PODS_PER_NODE,
    RDMA_RESOURCE,
    PoolFacts,
)
from aiplat.spec.models import SharingStrategy

Obj = dict[str, Any]
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}


def lab_node_count(pool: PoolFacts) -> int:
    a = pool.spec.autoscaling
    return a.min if a is not None else pool.nodes


def gpu_extended_resources(pool: PoolFacts) -> dict[str, int]:
    """Extended resources a device-plugin node advertises (none on DRA pools)."""
    if pool.gpu is None or pool.gpu_mode != "device-plugin":
        return {}
    n = pool.gpus_per_node
    s = pool.spec.sharing
    if s.strategy is SharingStrategy.MIG:
        out: dict[str, int] = {}
        for profile in s.mig_layout or []:
            key = f"nvidia.com/mig-{profile}"
            out[key] = out.get(key, 0) + n
        return out
    return {GPU_RESOURCE: n * (s.replicas or 1)}


def node_labels(pool: PoolFacts, index: int) -> dict[str, str]:
    labels = {**pool.node_labels, **pool.rack_labels(index),
              HOSTNAME_LABEL: pool.node_name(index),
              "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"}
    if pool.gpu is not None:
        # What GPU feature discovery adds on a real node.
        labels |= {"nvidia.com/gpu.present": "true",
                   "nvidia.com/gpu.product": (pool.gpu.product_name or pool.gpu.name
                                              ).replace(" ", "-"),
                   "nvidia.com/gpu.count": str(pool.gpus_per_node),
                   "nvidia.com/gpu.memory": str(pool.gpu.reported_memory_mib)}
    return labels


def node(pool: PoolFacts, index: int) -> Obj:
    node_spec = pool.spec.node
    storage_gi = (int(node_spec.nvme.count * node_spec.nvme.size_tb * 1000**4 / 1024**3)
                  if node_spec.nvme else 500)
    common = {"pods": "110", "ephemeral-storage": f"{storage_gi}Gi",
              **{k: str(v) for k, v in gpu_extended_resources(pool).items()},
              **({RDMA_RESOURCE: str(RDMA_PODS_PER_NODE)} if pool.rdma else {})}
    taints = [{"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect.value}
              for t in pool.taints]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": pool.node_name(index), "labels": node_labels(pool, index),
                     "annotations": {**KWOK_ANNOTATION, "node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"taints": taints} if taints else {},
        "status": {
            "capacity": {"cpu": str(node_spec.cpu_cores),
                         "memory": f"{node_spec.memory_gib}Gi", **common},
            "allocatable": {"cpu": str(pool.cpu_allocatable),
                            "memory": f"{pool.memory_allocatable_gib}Gi", **common},
        },
    }


def resource_slice(pool: PoolFacts, index: int, node_uid: str | None = None) -> Obj | None:
    """The DRA driver's slice for one node (None when the pool does not use DRA)."""
    if pool.gpu_mode != "dra":
        return None
    devices = pool.devices(index)
    if not devices:
        return None
    name = pool.node_name(index)
    meta: Obj = {"name": f"{name}-{NVIDIA_DRIVER}"}
    if node_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": name,
                                    "uid": node_uid, "controller": True}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta,
            "spec": {"driver": NVIDIA_DRIVER, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


SYSTEM_NODES = 2
"""Untainted CPU nodes for what every cluster runs beside the GPU pools (the inference
endpoint pickers, operators): in a real cluster the system role's nodes."""


def system_node(index: int) -> Obj:
    cap = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "200Gi"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"system-{index}",
                         "labels": {"kubernetes.io/hostname": f"system-{index}",
                                    "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                                    "aiplat.io/role": "system", "type": "kwok"},
                         "annotations": {**KWOK_ANNOTATION, "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {}, "status": {"capacity": dict(cap), "allocatable": dict(cap)}}


def lab_nodes(pools: list[PoolFacts]) -> list[tuple[PoolFacts, int]]:
    return [(p, i) for p in pools for i in range(lab_node_count(p))]


def local_volumes(pool: PoolFacts, index: int, storage_class: str) -> list[Obj]:
    """What the local static provisioner publishes for a node's NVMe: one PersistentVolume
    per disk on the class, pinned to the node (static: the local-nvme class has no dynamic
    provisioner; the serving pods' model caches bind to these, one pod per disk)."""
    name = pool.node_name(index)
    nvme = pool.spec.node.nvme
    disks, gi = (nvme.count, int(nvme.size_tb * 1000**4 / 1024**3)) if nvme else (1, 500)
    return [{"apiVersion": "v1", "kind": "PersistentVolume",
             "metadata": {"name": f"{storage_class}-{name}-{d}"},
             "spec": {"capacity": {"storage": f"{gi}Gi"}, "accessModes": ["ReadWriteOnce"],
                      "persistentVolumeReclaimPolicy": "Delete",
                      "storageClassName": storage_class, "local": {"path": f"/mnt/nvme{d}"},
                      "nodeAffinity": {"required": {"nodeSelectorTerms": [{
                          "matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In",
                                                "values": [name]}]}]}}}}
            for d in range(disks)]
