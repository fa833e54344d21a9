"""The physical side lint checks the manifests against: pools with their node labels, taints,
GPU units per resource and the DRA devices one node publishes.

From a spec it is derived (``from_facts``); ``aiplat kube render`` writes it to
``cluster/nodes/inventory.yaml`` so ``aiplat kube lint DIR`` can check a tree on its own, and
an administrator can replace it with what the nodes really report.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from aiplat.errors import InputError
from aiplat.kube.facts import (
    HOSTNAME_LABEL,
    NVIDIA_DRIVER,
    RDMA_PODS_PER_NODE,
    RDMA_RESOURCE,
    PoolFacts,
)
from aiplat.kube.shape import value_problems
from aiplat.spec.models import Platform, SegmentPurpose

_STRINGS = {"type": "array", "items": {"type": "string"}}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
SCHEMA = {"type": "object", "properties": {
    "modelStoreCIDRs": _STRINGS, "secretsAllowed": _STRINGS,
    "pools": {"type": "array", "items": {"type": "object", "required": ["name", "nodes"],
                                         "properties": {
        "name": {"type": "string"}, "nodes": {"type": "integer"}, "labels": _STRING_MAP,
        "taints": {"type": "array", "items": {"type": "object", "required": ["key"],
                                              "properties": {
            "key": {"type": "string"}, "value": {"type": "string"},
            "effect": {"type": "string"}}}},
        "topologyLabels": _STRINGS,
        "capacity": {"type": "object", "additionalProperties": {"type": "integer"}},
        "cpu": {"type": "integer"}, "memoryGiB": {"type": "integer"},
        "driver": {"type": "string"},
        # What a ResourceSlice publishes per device (resource.k8s.io/v1 Device).
        "devices": {"type": "array", "items": {
            "$ref": "_definitions.json#/$defs/io.k8s.api.resource.v1.Device"}},
        "autoscaled": {"type": "boolean"}, "memlockUnlimited": {"type": "boolean"}}}}}}
"""The inventory's shape, which ``from_dict`` checks before reading it."""


@dataclass(frozen=True)
class PoolInventory:
    name: str
    nodes: int
    labels: dict[str, str]
    taints: list[dict[str, str]]
    topology_labels: list[str]
    capacity: dict[str, int]
    cpu: int
    memory_gib: int
    driver: str = NVIDIA_DRIVER
    devices: list[dict[str, Any]] = field(default_factory=list)  # DRA pools only
    autoscaled: bool = False
    memlock_unlimited: bool = False
    """The container runtime lifts RLIMIT_MEMLOCK (RDMA without IPC_LOCK works)."""

    @property
    def all_label_keys(self) -> set[str]:
        return set(self.labels) | set(self.topology_labels) | {HOSTNAME_LABEL}

    def per_node(self, resource: str) -> int:
        """Units of an extended resource one node has (pools are uniform; a pod must fit
        on one node, whatever the pool's total)."""
        return self.capacity.get(resource, 0) // max(self.nodes, 1)


@dataclass(frozen=True)
class Inventory:
    pools: list[PoolInventory]
    model_store_cidrs: list[str] = field(default_factory=list)
    secrets_allowed: list[str] = field(default_factory=list)  # tenants granted Secrets

    def to_dict(self) -> dict[str, Any]:
        return {
            "modelStoreCIDRs": self.model_store_cidrs,
            "secretsAllowed": self.secrets_allowed,
            "pools": [{
                "name": p.name, "nodes": p.nodes, "labels": p.labels, "taints": p.taints,
                "topologyLabels": p.topology_labels, "capacity": p.capacity, "cpu": p.cpu,
                "memoryGiB": p.memory_gib, "driver": p.driver, "devices": p.devices,
                "autoscaled": p.autoscaled, "memlockUnlimited": p.memlock_unlimited,
            } for p in self.pools],
        }

    @classmethod
    def from_dict(cls, d: Any, name: str = "inventory") -> Inventory:
        """From the YAML form ``kube render`` writes; a wrong shape is an ``InputError``."""
        if not isinstance(d, dict):
            raise InputError(f"{name}: an inventory is a mapping with 'pools', not "
                             f"{type(d).__name__} (fix: start from the cluster/nodes/"
                             "inventory.yaml that `aiplat kube render` writes)")
        fix = " (fix: compare it with the cluster/nodes/inventory.yaml `aiplat kube render` " \
              "writes)"
        pools = d.get("pools") or []
        if not isinstance(pools, list):
            raise InputError(f"{name}: 'pools' must be a list of pools{fix}")
        for i, p in enumerate(pools):
            if not isinstance(p, dict) or "name" not in p or "nodes" not in p:
                raise InputError(f"{name}: pools[{i}] must be a mapping with at least 'name' "
                                 f"and 'nodes'{fix}")
        wrong = value_problems(d, SCHEMA)
        if wrong:
            raise InputError(f"{name}: not the shape of an inventory: "
                             + "; ".join(f"{p} {m}" for p, m in wrong[:5]) + fix)
        for cidr in d.get("modelStoreCIDRs") or []:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise InputError(f"{name}: modelStoreCIDRs: {cidr!r} is not a CIDR (fix: "
                                 "e.g. 10.20.0.0/24)") from None
        try:
            return cls._from_dict(d)
        except (TypeError, ValueError, AttributeError, OverflowError) as e:
            raise InputError(f"{name}: not the shape of an inventory ({e}) (fix: compare it "
                             "with the cluster/nodes/inventory.yaml `aiplat kube render` "
                             "writes)") from e

    @classmethod
    def _from_dict(cls, d: dict[str, Any]) -> Inventory:
        return cls(
            pools=[PoolInventory(
                name=p["name"], nodes=int(p["nodes"]), labels=dict(p.get("labels") or {}),
                taints=list(p.get("taints") or []),
                topology_labels=list(p.get("topologyLabels") or []),
                capacity={k: int(v) for k, v in (p.get("capacity") or {}).items()},
                cpu=int(p.get("cpu", 0)), memory_gib=int(p.get("memoryGiB", 0)),
                driver=p.get("driver", NVIDIA_DRIVER), devices=list(p.get("devices") or []),
                autoscaled=bool(p.get("autoscaled", False)),
                memlock_unlimited=bool(p.get("memlockUnlimited", False)),
            ) for p in d.get("pools") or []],
            model_store_cidrs=list(d.get("modelStoreCIDRs") or []),
            secrets_allowed=list(d.get("secretsAllowed") or []),
        )


def from_facts(platform: Platform, pools: list[PoolFacts]) -> Inventory:
    return Inventory(
        pools=[PoolInventory(
            name=p.name, nodes=p.nodes, labels=p.node_labels,
            taints=[{"key": t.key, "value": t.value, "effect": t.effect.value} for t in p.taints],
            topology_labels=p.topology_levels,
            capacity={**p.capacity(),
                      **({RDMA_RESOURCE: RDMA_PODS_PER_NODE * p.nodes} if p.rdma else {})},
            cpu=p.cpu_allocatable * p.nodes, memory_gib=p.memory_allocatable_gib * p.nodes,
            devices=p.devices() if p.gpu_mode == "dra" else [],
            autoscaled=p.spec.autoscaling is not None,
            # kube render ships the runtime drop-in that lifts it on RDMA pools.
            memlock_unlimited=p.rdma is not None,
        ) for p in pools],
        model_store_cidrs=[str(s.cidr) for s in platform.network.segments
                           if s.purpose is SegmentPurpose.STORAGE and s.cidr is not None],
        secrets_allowed=[t.name for t in platform.tenants if t.secrets_access],
    )
