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
import uuid as _uuid
from dataclasses import dataclass, field
from typing import Any

from aiplat.catalog.models import GpuModel
from aiplat.devices.mig import layouts as mig_layouts
from aiplat.plan.resolve import Resolved, ResolvedPool
from aiplat.sizing.power import rack_of
from aiplat.spec.models import Platform, PoolSpec, SharingStrategy, Taint

POOL_LABEL = "aiplat.io/pool"
TENANT_LABEL = "aiplat.io/tenant"
GPU_MODE_LABEL = "aiplat.io/gpu-resources"
GPU_OPERATOR_NS = "gpu-operator"  # the GPU operator's namespace: its operands and ConfigMaps
MANAGED_BY = {"app.kubernetes.io/managed-by": "aiplat"}
HOSTNAME_LABEL = "kubernetes.io/hostname"
NVIDIA_DRIVER = "gpu.nvidia.com"
GPU_RESOURCE = "nvidia.com/gpu"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
# The NVIDIA network operator's RDMA shared device plugin (rdmaSharedDevicePlugin, its
# example config: resourceName rdma_shared_device_a, rdmaHcaMax 63): every pod on the node
# may open the HCAs through /dev/infiniband, counted so the kubelet hands out the devices.
RDMA_RESOURCE = "rdma/rdma_shared_device_a"
RDMA_PODS_PER_NODE = 63

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
    """A resolved pool (hardware, node count, rack layout: ``plan/``'s) and how Kubernetes
    hands out its GPUs. The spec-derived figures are the ``ResolvedPool``'s, delegated, never
    copied: one pool type per layer, not two that can drift."""

    resolved: ResolvedPool
    gpu_mode: str  # device-plugin | dra
    driver_version: str | None
    cuda_version: str | None = None
    # resource name -> units per GPU (device plugin) or devices per GPU (DRA)
    units_per_gpu: dict[str, int] = field(default_factory=dict)

    @property
    def spec(self) -> PoolSpec:
        return self.resolved.spec

    @property
    def gpu(self) -> GpuModel | None:
        return self.resolved.gpu

    @property
    def name(self) -> str:
        return self.resolved.name

    @property
    def nodes(self) -> int:
        return self.resolved.nodes

    @property
    def gpus_per_node(self) -> int:
        return self.resolved.gpus_per_node

    @property
    def nodes_per_rack(self) -> int:
        return self.resolved.nodes_per_rack

    @property
    def rdma(self) -> str | None:
        """'infiniband' or 'roce' when the nodes have RDMA NICs (GPUDirect RDMA for NCCL)."""
        kinds = {n.type.value for n in self.spec.node.nics}
        return next((k for k in ("infiniband", "roce") if k in kinds), None)

    @property
    def taints(self) -> list[Taint]:
        return list(self.spec.taints)

    @property
    def node_labels(self) -> dict[str, str]:
        """What the node patch and label script put on each node of the pool: the pool,
        its zone, how its GPUs are handed out, on DRA pools the GPU operator's switch that
        keeps the device plugin off those nodes, and on MIG pools the MIG Manager config."""
        labels = {POOL_LABEL: self.name}
        if self.spec.zone:
            labels["topology.kubernetes.io/zone"] = self.spec.zone
        if self.gpu is not None:
            labels[GPU_MODE_LABEL] = self.gpu_mode
            if self.gpu_mode == "dra":
                labels["nvidia.com/gpu.deploy.device-plugin"] = "false"
            if self.spec.sharing.strategy is SharingStrategy.MIG:
                # MIG Manager applies the mig-parted config the node names: without the
                # label it keeps the default, all-disabled, and the pool has no MIG devices.
                labels[MIG_CONFIG_LABEL] = self.name
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
        gpus = self.resolved.gpus
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
        return self.resolved.cpu_allocatable

    @property
    def memory_allocatable_gib(self) -> int:
        return self.resolved.memory_allocatable_gib

    def node_name(self, index: int) -> str:
        return f"{self.name}-{index}"

    def rack_labels(self, index: int) -> dict[str, str]:
        """Rack and block of the pool's ``index``-th node, as the label script sets them."""
        rack = rack_of(index, self.nodes_per_rack)
        t = self.spec.topology
        return {t.rack_label: f"{self.name}-rack-{rack}",
                t.block_label: f"{self.name}-block-{rack // t.racks_per_block}"}

    def devices(self, node_index: int = 0) -> list[dict[str, Any]]:
        """ResourceSlice ``devices`` the NVIDIA DRA driver (v25.12) publishes for one node:
        ``gpu-<minor>`` per GPU, or per created MIG device
        ``gpu-<minor>-mig-<profile>-<gi profile id>-<placement start>`` (a GPU in MIG mode is
        not published whole). Attribute names, value types and formats follow the driver's
        ``deviceinfo.go``: versions as semver (``580.95.5``, ``13.0.0``), the PCI bus id under
        ``resource.kubernetes.io/pciBusID``, memory as NVML's total."""
        if self.gpu is None or self.gpu.vendor != "nvidia":
            return []
        gpu = self.gpu
        out: list[dict[str, Any]] = []
        driver = semver_of(self.driver_version or "580.95.05")
        cuda = semver_of(self.cuda_version or "13.0")
        cc = semver_of(gpu.compute_capability or "9.0")
        node = self.node_name(node_index)
        for minor in range(self.gpus_per_node):
            bus = 0x18 + 0x10 * minor
            uuid = "GPU-" + str(_uuid.uuid5(_uuid.NAMESPACE_URL, f"{node}/gpu/{minor}"))
            base: dict[str, Any] = {
                "productName": {"string": gpu.product_name or gpu.name},
                "brand": {"string": "Nvidia"},
                "architecture": {"string": gpu.architecture_name},
                "cudaComputeCapability": {"version": cc},
                "driverVersion": {"version": driver},
                "cudaDriverVersion": {"version": cuda},
                "resource.kubernetes.io/pciBusID": {"string": f"0000:{bus:02x}:00.0"},
                # Two GPUs share a PCIe switch under one root complex on HGX boards.
                "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{bus - bus % 0x20:02x}"},
            }
            if self.spec.sharing.strategy is SharingStrategy.MIG:
                out += _mig_devices(gpu, self.spec.sharing.mig_layout or [], minor, uuid, base)
            else:
                out.append({
                    "name": f"gpu-{minor}",
                    "attributes": {"type": {"string": "gpu"}, "uuid": {"string": uuid},
                                   **base},
                    "capacity": {"memory": {"value": f"{gpu.reported_memory_mib}Mi"}},
                })
        return out


# NVML GPU-instance profile ids by (compute slices, memory eighths), as `nvidia-smi mig -lgip`
# lists them; the driver puts the id in MIG device names.
GI_PROFILE_IDS = {(1, 1): 19, (1, 2): 15, (2, 2): 14, (3, 4): 9, (4, 4): 5, (7, 8): 0}


def _mig_devices(gpu: GpuModel, layout: list[str], minor: int, parent: str,
                 base: dict[str, Any]) -> list[dict[str, Any]]:
    """The MIG devices of one GPU partitioned by ``layout``, at placements the profiles
    allow together (the MIG planner's feasible layout for these counts)."""
    counts = tuple(layout.count(p.name) for p in gpu.mig_profiles)
    placements = mig_layouts(gpu).get(counts)
    if placements is None:  # the spec loader refuses infeasible layouts; be safe anyway
        return []
    out = []
    for i, pl in enumerate(placements):
        p = next(x for x in gpu.mig_profiles if x.name == pl.profile)
        gi = GI_PROFILE_IDS.get((p.compute_slices, p.memory_slices), 0)
        mem_mib = gpu.reported_memory_mib * p.memory_slices // 8
        uuid = "MIG-" + str(_uuid.uuid5(_uuid.NAMESPACE_URL, f"{parent}/mig/{i}"))
        out.append({
            "name": f"gpu-{minor}-mig-{slug(pl.profile.replace('.', ''))}-{gi}-{pl.start}",
            "attributes": {"type": {"string": "mig"}, "uuid": {"string": uuid},
                           "parentUUID": {"string": parent}, "profile": {"string": pl.profile},
                           **base},
            "capacity": {"memory": {"value": f"{mem_mib}Mi"},
                         **{f"memorySlice{s}": {"value": "1"}
                            for s in range(pl.start, pl.start + p.memory_slices)}},
        })
    return out


def uses_tas(pool: PoolFacts) -> bool:
    """Topology-aware placement only on fixed-size pools: Kueue's TAS places on nodes that
    exist, so on an autoscaled pool (without a ProvisioningRequest admission check) a
    workload beyond today's nodes would wait without the autoscaler ever seeing a pod."""
    return pool.spec.autoscaling is None


def approved_driver(platform: Platform) -> str | None:
    return next((v.driver for v in platform.versions.approved if v.driver), None)


def approved_cuda(platform: Platform) -> str | None:
    return next((v.cuda for v in platform.versions.approved if v.cuda), None)


def pool_facts(resolved: Resolved) -> list[PoolFacts]:
    """Each pool's Kubernetes facts; hardware and rack layout as ``plan/`` resolved them."""
    platform = resolved.spec
    out = []
    for rp in resolved.pools:
        pool, gpu = rp.spec, rp.gpu
        mode = pool.gpu_resources or platform.kubernetes.gpu_resources
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
        out.append(PoolFacts(resolved=rp, gpu_mode=mode, driver_version=approved_driver(platform),
                             cuda_version=approved_cuda(platform), units_per_gpu=units))
    return out
