"""Cluster state for why-pending: a pure model over API objects, and two ways to fill it.

A snapshot is a folder of ``kubectl get -o json`` lists, one file per resource::

    kubectl get nodes -o json > nodes.json
    kubectl get pods -A -o json > pods.json
    kubectl get workloads.kueue.x-k8s.io -A -o json > workloads.json
    kubectl get clusterqueues,localqueues,resourceflavors,cohorts,topologies ...
    kubectl get resourceslices,resourceclaims,deviceclasses ... (resource.k8s.io/v1)
    kubectl get configmap kueue-manager-config -n kueue-system -o json > configmaps.json

(the last is optional: Kueue's Configuration, which the replay of Kueue's cycle reads for
fair sharing and excluded resources).

Files are matched by name (``nodes.json``, ``pods.json``, ...); a missing file is an empty
list, except that a snapshot without ``workloads.json`` and ``pods.json`` is refused. With a
kubeconfig, ``aiplat.kube.live.read_cluster`` lists the same resources (``LISTS``: the one
kind list of every live command, why-pending and ``sim replay``) with read-only GETs.
Reasoning (``aiplat.kube.pending``) sees only ``ClusterObjects``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiplat import inputs
from aiplat.errors import InputError

Obj = dict[str, Any]

KUEUE = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")  # as kueue.snapshot reads them

LISTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "nodes": ("Node", ("v1",)),
    "namespaces": ("Namespace", ("v1",)),  # their labels: ClusterQueues' namespaceSelector
    "pods": ("Pod", ("v1",)),
    "jobs": ("Job", ("batch/v1",)),
    "workloads": ("Workload", KUEUE),
    "clusterqueues": ("ClusterQueue", KUEUE),
    "localqueues": ("LocalQueue", KUEUE),
    "resourceflavors": ("ResourceFlavor", KUEUE),
    "cohorts": ("Cohort", KUEUE),
    "topologies": ("Topology", KUEUE),
    "admissionchecks": ("AdmissionCheck", KUEUE),
    "workloadpriorityclasses": ("WorkloadPriorityClass", KUEUE),
    # DRA in resource.k8s.io/v1 only: the beta versions' claims are shaped differently, and
    # the reasoning reads v1's (a cluster serving only a beta has none it could judge).
    "resourceslices": ("ResourceSlice", ("resource.k8s.io/v1",)),
    "resourceclaims": ("ResourceClaim", ("resource.k8s.io/v1",)),
    "resourceclaimtemplates": ("ResourceClaimTemplate", ("resource.k8s.io/v1",)),
    "deviceclasses": ("DeviceClass", ("resource.k8s.io/v1",)),
    "configmaps": ("ConfigMap", ("v1",)),  # Kueue's manager ConfigMap only (KUEUE_CONFIGMAP)
}
"""What a snapshot holds and a live read lists: resource -> (kind, API versions, preferred
first)."""
RESOURCES = tuple(LISTS)
KUEUE_CONFIGMAP = ("kueue-system", "controller_manager_config.yaml")
"""Where Kueue's Configuration lives: the namespace and the ConfigMap data key."""


@dataclass
class ClusterObjects:
    items: dict[str, list[Obj]] = field(default_factory=dict)

    def list(self, resource: str) -> list[Obj]:
        return self.items.get(resource, [])

    def get(self, resource: str, name: str, namespace: str | None = None) -> Obj | None:
        for o in self.list(resource):
            m = o.get("metadata") or {}
            if m.get("name") == name and (namespace is None or m.get("namespace") == namespace):
                return o
        return None


def snapshot_from_lists(lists: dict[str, Any]) -> ClusterObjects:
    """From ``{resource: <List object or list of objects>}`` (pure)."""
    items: dict[str, list[Obj]] = {}
    for resource, value in lists.items():
        if resource not in RESOURCES:
            continue
        objs = value.get("items", []) if isinstance(value, dict) else list(value)
        items[resource] = [o for o in objs if isinstance(o, dict)]
    return ClusterObjects(items)


def load_snapshot(directory: str | Path) -> ClusterObjects:
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"--snapshot {root}: not a directory (fix: a folder of "
                         "`kubectl get -o json` lists: nodes.json, pods.json, ...)")
    lists: dict[str, Any] = {}
    for resource in RESOURCES:
        path = root / f"{resource}.json"
        if path.exists():
            value = inputs.load_json(path, f"the output of `kubectl get {resource} -o json`")
            objs = value.get("items", []) if isinstance(value, dict) else value
            if not isinstance(objs, list):
                raise InputError(f"{path}: not a list from `kubectl get {resource} -o json` "
                                 "('items' must be a list) (fix: record it again)")
            lists[resource] = value
    if "workloads" not in lists and "pods" not in lists:
        raise InputError(f"{root}: neither workloads.json nor pods.json found (fix: "
                         "kubectl get workloads.kueue.x-k8s.io -A -o json > workloads.json)")
    return snapshot_from_lists(lists)
