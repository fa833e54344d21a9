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
kubeconfig, ``aiplat.kube.live.read_live`` lists the same resources through lightkube
(read-only ``list`` calls, nothing else). Reasoning (``aiplat.kube.pending``) sees only
``Snapshot``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiplat import inputs
from aiplat.errors import InputError

Obj = dict[str, Any]

RESOURCES = ("nodes", "pods", "workloads", "clusterqueues", "localqueues", "resourceflavors",
             "cohorts", "topologies", "resourceslices", "resourceclaims", "deviceclasses",
             "jobs", "configmaps", "admissionchecks", "resourceclaimtemplates")


@dataclass
class Snapshot:
    items: dict[str, list[Obj]] = field(default_factory=dict)

    def list(self, resource: str) -> list[Obj]:
        return self.items.get(resource, [])

    def get(self, resource: str, name: str, namespace: str | None = None) -> Obj | None:
        for o in self.list(resource):
            m = o.get("metadata") or {}
            if m.get("name") == name and (namespace is None or m.get("namespace") == namespace):
                return o
        return None


def snapshot_from_lists(lists: dict[str, Any]) -> Snapshot:
    """From ``{resource: <List object or list of objects>}`` (pure)."""
    items: dict[str, list[Obj]] = {}
    for resource, value in lists.items():
        if resource not in RESOURCES:
            continue
        objs = value.get("items", []) if isinstance(value, dict) else list(value)
        items[resource] = [o for o in objs if isinstance(o, dict)]
    return Snapshot(items)


def load_snapshot(directory: str | Path) -> Snapshot:
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
