"""What every layer needs to know about a pool, derived once from the spec and the catalog.

One name per concept: the pool ``h100`` is the node label value ``aiplat.io/pool=h100``, the
ResourceFlavor ``h100``, the Topology ``h100`` and the simulator's pool. The GPU units a
pool offers depend on how pods ask for GPUs:

- device plugin: ``nvidia.com/gpu`` × sharing replicas (time-slicing, MPS), or one
  ``nvidia.com/mig-<profile>`` resource per MIG profile (mixed strategy);
- DRA: one device per GPU or MIG instance, counted by Kueue under the DeviceClass name
  (``deviceClassMappings``); time-sliced sharing is a claim config, not extra devices.

``devices()`` derives the ResourceSlice devices the NVIDIA DRA driver would publish for a
node of the pool (attributes and capacities), so lint can evaluate DeviceClass CEL selectors
without a cluster.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from aiplat.catalog.models import Catalog, GpuModel
from aiplat.spec.models import Platform, PoolSpec, SharingStrategy, Taint

POOL_LABEL = "aiplat.io/pool"
TENANT_LABEL = "aiplat.io/tenant"
MANAGED_BY = {"app.kubernetes.io/managed-by": "aiplat"}
HOSTNAME_LABEL = "kubernetes.io/hostname"
NVIDIA_DRIVER = "gpu.nvidia.com"
GPU_RESOURCE = "nvidia.com/gpu"

# productName as nvidia-smi and the DRA driver report it; models missing here are selected
# by architecture and memory instead.
PRODUCT_NAMES = {
    "A100-SXM4-40GB": "NVIDIA A100-SXM4-40GB",
    "A100-SXM4-80GB": "NVIDIA A100-SXM4-80GB",
    "A10-24GB": "NVIDIA A10",
    "L40S-48GB": "NVIDIA L40S",
    "L4-24GB": "NVIDIA L4",
    "H100-SXM-80GB": "NVIDIA H100 80GB HBM3",
    "H100-PCIe-80GB": "NVIDIA H100 PCIe",
    "H100-NVL-94GB": "NVIDIA H100 NVL",
    "H200-SXM-141GB": "NVIDIA H200",
    "B200-SXM-180GB": "NVIDIA B200",
}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def gpu_device_class(gpu: GpuModel) -> str:
    return f"gpu-{slug(gpu.name)}"


def mig_device_class(gpu: GpuModel, profile: str) -> str:
    return f"mig-{profile}-{slug(gpu.name)}"


def semver_of(version: str) -> str:
    """A driver version as semver without leading zeros: 580.95.05 -> 580.95.5."""
    parts = [str(int(p)) for p in re.findall(r"\d+", version)[:3]]
    return ".".join(parts + ["0"] * (3 - len(parts)))


@dataclass(frozen=True)
class PoolFacts:
    spec: PoolSpec
    gpu: GpuModel | None
    gpu_mode: str  # device-plugin | dra
    nodes_per_rack: int
    driver_version: str | None
    # resource name -> units per GPU (device plugin) or devices per GPU (DRA)
    units_per_gpu: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def nodes(self) -> int:
        return self.spec.nodes

    @property
    def gpus_per_node(self) -> int:
        return self.spec.node.gpu.count if self.spec.node.gpu else 0

    @property
    def taints(self) -> list[Taint]:
        return list(self.spec.taints)

    @property
    def node_labels(self) -> dict[str, str]:
        labels = {POOL_LABEL: self.name}
        if self.spec.zone:
            labels["topology.kubernetes.io/zone"] = self.spec.zone
        labels.update(self.spec.labels)
        return labels

    @property
    def topology_levels(self) -> list[str]:
        t = self.spec.topology
        return [t.block_label, t.rack_label, HOSTNAME_LABEL]

    @property
    def gpu_resources(self) -> list[str]:
        return list(self.units_per_gpu)

    def capacity(self) -> dict[str, int]:
        """Physical units of each GPU resource in the pool at its planned size."""
        gpus = self.spec.gpus
        return {r: gpus * n for r, n in self.units_per_gpu.items()}

    def units_total_per_gpu(self) -> int:
        return sum(self.units_per_gpu.values())

    def split_quota(self, units: float) -> dict[str, float]:
        """A tenant's quota in pool units spread over the pool's GPU resources by share."""
        total = self.units_total_per_gpu()
        if not total:
            return {}
        return {r: math.floor(units * n / total + 1e-9) if len(self.units_per_gpu) > 1
                else units for r, n in self.units_per_gpu.items()}

    @property
    def cpu_allocatable(self) -> int:
        return self.spec.node.cpu_cores - reserved_cpus(self.spec.node.cpu_cores)

    @property
    def memory_allocatable_gib(self) -> int:
        return self.spec.node.memory_gib - reserved_memory_gib(self.spec.node.memory_gib)

    def devices(self, node_index: int = 0) -> list[dict[str, Any]]:
        """ResourceSlice ``devices`` the NVIDIA DRA driver publishes for one node."""
        if self.gpu is None or self.gpu.vendor != "nvidia":
            return []
        out: list[dict[str, Any]] = []
        product = PRODUCT_NAMES.get(self.gpu.name, self.gpu.name)
        mem_mib = int(self.gpu.memory_gb * 1024 * 0.995)
        driver = semver_of(self.driver_version or "580.95.05")
        for minor in range(self.gpus_per_node):
            root = f"pci0000:{minor // 2:02x}"
            base: dict[str, Any] = {
                "productName": {"string": product},
                "brand": {"string": "Nvidia"},
                "architecture": {"string": self.gpu.architecture.capitalize()},
                "uuid": {"string": f"GPU-{self.name}-{node_index}-{minor}"},
                "driverVersion": {"version": driver},
                "cudaComputeCapability": {"version": "9.0.0"},
                "resource.kubernetes.io/pcieRoot": {"string": root},
            }
            if self.spec.sharing.strategy is SharingStrategy.MIG:
                seen: dict[str, int] = {}
                for profile in self.spec.sharing.mig_layout or []:
                    p = next(x for x in self.gpu.mig_profiles if x.name == profile)
                    start = seen.get(profile, 0)
                    seen[profile] = start + 1
                    out.append({
                        "name": f"gpu-{minor}-mig-{profile}-{start}",
                        "attributes": {**base, "type": {"string": "mig"},
                                       "profile": {"string": profile},
                                       "parentUUID": base["uuid"]},
                        "capacity": {"memory": {"value": f"{int(p.memory_gb * 1024)}Mi"}},
                    })
            else:
                out.append({
                    "name": f"gpu-{minor}",
                    "attributes": {**base, "type": {"string": "gpu"}},
                    "capacity": {"memory": {"value": f"{mem_mib}Mi"}},
                })
        return out


def reserved_cpus(cores: int) -> int:
    """Cores kept for the OS and kubelet: 2, plus 1 per 32 cores above 64."""
    return 2 + max(0, cores - 64) // 32


def reserved_memory_gib(memory_gib: int) -> int:
    """Memory kept for the OS and kubelet (system 4 GiB, kube 2 GiB, eviction 1 GiB minimum;
    2% of large nodes)."""
    return max(7, math.ceil(memory_gib * 0.02))


def approved_driver(platform: Platform) -> str | None:
    return next((v.driver for v in platform.versions.approved if v.driver), None)


def _nodes_per_rack(platform: Platform, pool: PoolSpec, catalog: Catalog) -> int:
    if pool.topology.nodes_per_rack:
        return pool.topology.nodes_per_rack
    power = pool.node.power_kw
    if power is None and pool.node.node_type:
        nt = catalog.node_type(pool.node.node_type)
        power = nt.system_power_kw if nt else None
    power = power or 1.0
    return max(1, min(64, int(platform.site.rack_power_limit_kw // power)))


def pool_facts(platform: Platform, catalog: Catalog) -> list[PoolFacts]:
    mode = platform.kubernetes.gpu_resources
    out = []
    for pool in platform.pools:
        gpu = catalog.gpu(pool.node.gpu.model) if pool.node.gpu else None
        units: dict[str, int] = {}
        sharing = pool.sharing
        if gpu is not None:
            if sharing.strategy is SharingStrategy.MIG:
                for profile in sharing.mig_layout or []:
                    key = (f"nvidia.com/mig-{profile}" if mode == "device-plugin"
                           else mig_device_class(gpu, profile))
                    units[key] = units.get(key, 0) + 1
            elif mode == "device-plugin":
                units[GPU_RESOURCE] = sharing.replicas or 1
            else:
                units[gpu_device_class(gpu)] = 1
        out.append(PoolFacts(spec=pool, gpu=gpu, gpu_mode=mode,
                             nodes_per_rack=_nodes_per_rack(platform, pool, catalog),
                             driver_version=approved_driver(platform), units_per_gpu=units))
    return out
