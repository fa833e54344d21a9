"""Node roles and network zones: the non-compute nodes a GPU platform needs, and who attaches where.

Design. From the compute pools (name, nodes, GPUs per node), the tenant count and which
services exist, derive each non-compute role with its node count, CPU/memory (and disk where
it holds data) guidance and the reason, then the network zones with the roles attached to
each and their MTU/RDMA guidance. The rules are tables and small functions with their
sources, so a site with other numbers changes a constant, not the logic.

Sources and stated rules:
- Control plane: etcd needs 2f + 1 members (3 tolerate one failure; etcd FAQ), so 3 nodes
  unless the provider manages it. CPU/memory by worker count follows Red Hat's measured
  control-plane sizing for OpenShift (25 workers: 4 cores / 16 GB, 100: 8 / 32, 250: 16 / 96;
  "Recommended control plane practices"); etcd alone wants 2-4 cores, 8 GB and an SSD
  (etcd hardware guide). Past 250 workers we keep the top row and say so.
- System nodes run the operators and controllers (GPU operator, network operator, Kueue,
  ingress, cert-manager): two replicas of each on two nodes survive one node (N+1).
- Model store / registry: capacity = sum of model sizes x versions kept x (1 + headroom);
  headroom because a distribution registry frees deleted blobs only by an offline garbage
  collection run, and uploads in flight take space. Replicas on local disks each hold a copy.
- Monitoring: Prometheus disk = retention seconds x samples per second x bytes per sample
  (Prometheus storage docs: 1-2 bytes per sample; we take 2); memory about 3 kB per active
  series in the head (Robust Perception, "Why does Prometheus use so much RAM", Prometheus
  2.20+), doubled for queries. Two identical replicas give HA (each holds everything).
  Series counts per node and per GPU are stated assumptions: dcgm-exporter's default
  counters file enables about 21 fields per GPU (more with profiling metrics).
- Zones: management 1500 (BMC/PXE/SSH; nothing there needs jumbo frames and every odd device
  speaks 1500), service 1500 (north-south client paths are 1500; an overlay CNI takes 50 bytes
  for VXLAN), storage 9000 (bulk transfers; every hop must carry it), high-performance:
  InfiniBand MTU 4096 (the IB maximum, set in the subnet manager) or RoCE on Ethernet MTU 9000,
  where the RDMA path MTU is the largest IB MTU not above the netdev MTU, i.e. 4096, with
  PFC/ECN for a lossless class.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from aiplat.errors import InputError
from aiplat.sizing.reserve import quorum_members
from aiplat.sizing.result import Result, require_positive

ZoneName = Literal["management", "service", "storage", "high_performance"]
Fabric = Literal["infiniband", "roce", "none"]

SECONDS_PER_DAY = 86_400

CONTROL_PLANE_SIZING: tuple[tuple[int, int, int], ...] = (
    # (up to N worker nodes, CPU cores, memory GiB) - Red Hat's measured OpenShift table
    (25, 4, 16),
    (100, 8, 32),
    (250, 16, 96),
)

SYSTEM_NODES_BASE = 2
"""Two nodes hold two replicas of each operator/ingress: one node may fail (N+1)."""
SYSTEM_NODES_LARGE = 3
LARGE_FLEET_NODES = 100
MANY_TENANTS = 10
"""Past these, controllers watch many more objects and ingress carries more tenants: 3 nodes."""
SYSTEM_NODE_CPU_CORES = 8
SYSTEM_NODE_MEMORY_GIB = 32

REGISTRY_REPLICAS = 2
REGISTRY_VERSIONS_KEPT = 2
"""The serving version and the one before it, for rollback."""
REGISTRY_HEADROOM = 0.25
"""Deleted blobs stay until an offline garbage collection; uploads in flight need room."""
REGISTRY_CPU_CORES = 8
REGISTRY_MEMORY_GIB = 32

MONITORING_REPLICAS = 2
PROMETHEUS_RETENTION_DAYS = 15.0
"""Prometheus' default --storage.tsdb.retention.time."""
PROMETHEUS_SCRAPE_INTERVAL_S = 30.0
PROMETHEUS_BYTES_PER_SAMPLE = 2.0
"""Upper end of the 1-2 bytes per sample in Prometheus' storage documentation."""
PROMETHEUS_BYTES_PER_SERIES = 3_000.0
"""Head memory per active series, Prometheus 2.20+ rule of thumb (Robust Perception)."""
PROMETHEUS_QUERY_HEADROOM = 2.0
SERIES_PER_NODE = 2_000
"""Assumption: node-exporter on a many-core, many-NIC server plus kubelet/cAdvisor series."""
SERIES_PER_GPU = 30
"""Assumption: dcgm-exporter's ~21 default fields per GPU plus profiling fields."""
BASE_SERIES = 50_000
"""Assumption: API server, kube-state-metrics, Kueue and operators, independent of node count."""
MONITORING_CPU_CORES = 8

STORAGE_GATEWAY_NODES = 2
STORAGE_GATEWAY_CPU_CORES = 16
STORAGE_GATEWAY_MEMORY_GIB = 64

GIB = 2**30


class ZoneRule(BaseModel):
    """MTU and RDMA rule of one network zone."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mtu_bytes: int
    rdma: bool
    guidance: str


ZONE_RULES: dict[str, ZoneRule] = {
    "management": ZoneRule(
        mtu_bytes=1500,
        rdma=False,
        guidance=(
            "1500: BMC/IPMI, PXE and SSH need no throughput and every device speaks 1500; "
            "keep it routed apart from tenant traffic"
        ),
    ),
    "service": ZoneRule(
        mtu_bytes=1500,
        rdma=False,
        guidance=(
            "1500: north-south client paths (API, ingress, inference endpoints) are 1500; an "
            "overlay CNI (VXLAN) takes 50 bytes, so pods get 1450"
        ),
    ),
    "storage": ZoneRule(
        mtu_bytes=9000,
        rdma=False,
        guidance=(
            "9000 jumbo frames for datasets, checkpoints and weights; every hop (NICs, "
            "switches, storage ports) must carry 9000 or large packets are dropped; NFS over "
            "RDMA or GPUDirect Storage additionally need RoCE with a lossless class"
        ),
    ),
    "high_performance:infiniband": ZoneRule(
        mtu_bytes=4096,
        rdma=True,
        guidance=(
            "InfiniBand MTU 4096, the IB maximum, set in the subnet manager's partition; "
            "GPU-to-GPU traffic only, one HCA per GPU on the same PCIe switch"
        ),
    ),
    "high_performance:roce": ZoneRule(
        mtu_bytes=9000,
        rdma=True,
        guidance=(
            "Ethernet MTU 9000 so the RoCE path MTU reaches 4096 (the largest IB MTU below the "
            "netdev MTU); PFC and ECN on a lossless traffic class; GPU-to-GPU traffic only"
        ),
    ),
}
"""Zone rules; the high-performance zone has one rule per fabric."""


class ComputePool(BaseModel):
    """A pool of identical compute nodes (``gpus_per_node`` 0 for CPU pools)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    nodes: int
    gpus_per_node: int
    hpc_nics: bool = True
    """Whether the pool's nodes have NICs on the high-performance fabric."""


class PrometheusEstimate(Result):
    """Prometheus disk and memory for a series count, per replica."""

    series: int
    samples_per_second: float
    disk_bytes: float
    memory_bytes: float


def prometheus_estimate(
    *,
    series: int,
    scrape_interval_s: float = PROMETHEUS_SCRAPE_INTERVAL_S,
    retention_days: float = PROMETHEUS_RETENTION_DAYS,
    bytes_per_sample: float = PROMETHEUS_BYTES_PER_SAMPLE,
    bytes_per_series: float = PROMETHEUS_BYTES_PER_SERIES,
    query_headroom: float = PROMETHEUS_QUERY_HEADROOM,
) -> PrometheusEstimate:
    """Disk = retention x samples/s x bytes per sample; memory = series x 3 kB x headroom."""
    if series < 0:
        raise InputError(f"series must be >= 0, got {series}")
    require_positive(scrape_interval_s=scrape_interval_s, retention_days=retention_days,
                     bytes_per_sample=bytes_per_sample, bytes_per_series=bytes_per_series,
                     query_headroom=query_headroom)
    rate = series / scrape_interval_s
    disk = retention_days * SECONDS_PER_DAY * rate * bytes_per_sample
    return PrometheusEstimate(
        series=series,
        samples_per_second=rate,
        disk_bytes=disk,
        memory_bytes=series * bytes_per_series * query_headroom,
        formula=(
            "disk = retention seconds x (series / scrape interval) x bytes per sample "
            "(Prometheus storage docs); memory = series x bytes per head series x query headroom"
        ),
        inputs={
            "series": series,
            "scrape_interval_s": scrape_interval_s,
            "retention_days": retention_days,
            "bytes_per_sample": bytes_per_sample,
            "bytes_per_series": bytes_per_series,
            "query_headroom": query_headroom,
        },
        notes=["blocks only: the WAL adds at least 3 x 128 MiB segments (about 2 h of samples)"],
    )


def monitoring_series(
    *,
    nodes: int,
    gpus: int,
    series_per_node: int = SERIES_PER_NODE,
    series_per_gpu: int = SERIES_PER_GPU,
    base_series: int = BASE_SERIES,
) -> int:
    """Active series = base + nodes x per-node series + GPUs x per-GPU series (stated rule)."""
    if min(nodes, gpus, series_per_node, series_per_gpu, base_series) < 0:
        raise InputError("nodes, gpus and series counts must be >= 0")
    return base_series + nodes * series_per_node + gpus * series_per_gpu


class ModelStoreCapacity(Result):
    """Capacity of the model store / registry."""

    models_bytes: int
    capacity_bytes_per_replica: int
    replicas: int
    raw_capacity_bytes: int
    """Per-replica capacity x replicas: what local disks must hold in all."""


def model_store_capacity(
    *,
    model_sizes_bytes: Sequence[int],
    versions_kept: int = REGISTRY_VERSIONS_KEPT,
    headroom: float = REGISTRY_HEADROOM,
    replicas: int = REGISTRY_REPLICAS,
) -> ModelStoreCapacity:
    """Capacity per replica = sum of model sizes x versions kept x (1 + headroom)."""
    if any(s < 0 for s in model_sizes_bytes):
        raise InputError("model sizes must be >= 0 bytes")
    if versions_kept < 1:
        raise InputError(f"versions_kept must be >= 1, got {versions_kept}")
    if not headroom >= 0 or math.isinf(headroom):
        raise InputError(f"headroom must be >= 0, got {headroom!r}")
    if replicas < 1:
        raise InputError(f"replicas must be >= 1, got {replicas}")
    total = sum(model_sizes_bytes)
    per_replica = math.ceil(total * versions_kept * (1.0 + headroom))
    notes = []
    if not model_sizes_bytes:
        notes.append("no model sizes given: capacity is 0; pass the sizes of the served models")
    return ModelStoreCapacity(
        models_bytes=total,
        capacity_bytes_per_replica=per_replica,
        replicas=replicas,
        raw_capacity_bytes=per_replica * replicas,
        formula=(
            "per replica = sum of model sizes x versions kept x (1 + headroom); raw = per "
            "replica x replicas (local disks; with shared object storage count it once)"
        ),
        inputs={
            "models": len(model_sizes_bytes),
            "models_bytes": total,
            "versions_kept": versions_kept,
            "headroom": headroom,
            "replicas": replicas,
        },
        notes=notes,
    )


class RoleSpec(BaseModel):
    """One role: how many nodes, how big, which zones, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str
    nodes: int
    cpu_cores: int | None
    memory_gib: int | None
    disk_bytes: int | None
    zones: list[ZoneName]
    reason: str


class ZoneSpec(BaseModel):
    """One network zone with the roles attached and its MTU/RDMA guidance."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    zone: ZoneName
    mtu_bytes: int
    rdma: bool
    roles: list[str]
    guidance: str


class RolePlan(Result):
    """Non-compute roles, compute pools as roles, and the zones they attach to."""

    roles: list[RoleSpec]
    zones: list[ZoneSpec]
    compute_nodes: int
    non_compute_nodes: int
    monitoring: PrometheusEstimate | None
    model_store: ModelStoreCapacity | None

    def role(self, name: str) -> RoleSpec:
        return next(r for r in self.roles if r.role == name)

    def zone(self, name: ZoneName) -> ZoneSpec:
        return next(z for z in self.zones if z.zone == name)


def control_plane_size(worker_nodes: int) -> tuple[int, int, bool]:
    """(CPU cores, memory GiB, within the measured table) for a control-plane node."""
    for limit, cores, mem in CONTROL_PLANE_SIZING:
        if worker_nodes <= limit:
            return cores, mem, True
    _, cores, mem = CONTROL_PLANE_SIZING[-1]
    return cores, mem, False


def _gib_for(bytes_: float) -> int:
    # round up to a multiple of 16 GiB: what server memory comes in
    return max(16, 16 * math.ceil(bytes_ / GIB / 16))


@dataclass(frozen=True)
class Services:
    """The non-compute services a platform runs: the model store (with the model sizes it
    keeps), monitoring (retention and scrape interval) and a storage gateway."""

    model_store: bool = True
    model_sizes_bytes: Sequence[int] = ()
    monitoring: bool = True
    storage_gateway: bool = False
    retention_days: float = PROMETHEUS_RETENTION_DAYS
    scrape_interval_s: float = PROMETHEUS_SCRAPE_INTERVAL_S


ALL_SERVICES = Services()


def _check_inputs(pools: Sequence[ComputePool], tenants: int, fabric: Fabric) -> None:
    if not pools:
        raise InputError("plan_roles needs at least one compute pool")
    if tenants < 1:
        raise InputError(f"tenants must be >= 1, got {tenants}")
    names = [p.name for p in pools]
    if len(set(names)) != len(names):
        raise InputError(f"pool names must be unique, got {names}")
    for p in pools:
        if p.nodes < 0 or p.gpus_per_node < 0:
            raise InputError(f"pool {p.name!r}: nodes and gpus_per_node must be >= 0")
    if fabric not in ("infiniband", "roce", "none"):
        raise InputError(f"fabric must be infiniband, roce or none, got {fabric!r}")


def _control_plane(compute_nodes: int, managed: bool, notes: list[str]) -> RoleSpec:
    if managed:
        return RoleSpec(
            role="control-plane", nodes=0, cpu_cores=None, memory_gib=None, disk_bytes=None,
            zones=["management", "service"],
            reason="managed by the provider; the API endpoint sits in the service zone")
    cores, mem, measured = control_plane_size(compute_nodes)
    members = quorum_members(1)
    if not measured:
        notes.append(
            f"{compute_nodes} workers is past the measured control-plane table (250): "
            "start at 16 cores / 96 GiB, watch API server and etcd latency, consider 5 "
            "etcd members and a separate etcd for events"
        )
    return RoleSpec(
        role="control-plane", nodes=members, cpu_cores=cores, memory_gib=mem, disk_bytes=None,
        zones=["management", "service"],
        reason=(
            f"etcd quorum: {members} members survive one failure; {cores} cores / "
            f"{mem} GiB for {compute_nodes} workers (measured control-plane sizing); "
            "etcd on a local SSD"
        ),
    )


def _system(compute_nodes: int, tenants: int) -> RoleSpec:
    large = compute_nodes > LARGE_FLEET_NODES or tenants > MANY_TENANTS
    system_nodes = SYSTEM_NODES_LARGE if large else SYSTEM_NODES_BASE
    return RoleSpec(
        role="system", nodes=system_nodes, cpu_cores=SYSTEM_NODE_CPU_CORES,
        memory_gib=SYSTEM_NODE_MEMORY_GIB, disk_bytes=None, zones=["management", "service"],
        reason=(
            "GPU and network operators, Kueue, ingress and cert-manager off the GPU nodes; "
            + (
                f"{system_nodes} nodes: {compute_nodes} workers / {tenants} tenants mean "
                "more objects to watch and more ingress traffic"
                if large
                else f"{system_nodes} nodes hold two replicas of each: one node may fail"
            )
        ),
    )


def _registry(store: ModelStoreCapacity) -> RoleSpec:
    return RoleSpec(
        role="registry", nodes=store.replicas, cpu_cores=REGISTRY_CPU_CORES,
        memory_gib=REGISTRY_MEMORY_GIB, disk_bytes=store.capacity_bytes_per_replica,
        zones=["management", "service", "storage"],
        reason=(
            f"OCI registry / model store: {store.replicas} replicas (one may fail); "
            f"{store.capacity_bytes_per_replica / 1e12:.2f} TB each = models x "
            f"{REGISTRY_VERSIONS_KEPT} versions x {1 + REGISTRY_HEADROOM:.2f}; pulls "
            "to GPU nodes go over the storage zone"
        ),
    )


def _monitoring(prom: PrometheusEstimate, services: Services) -> RoleSpec:
    return RoleSpec(
        role="monitoring", nodes=MONITORING_REPLICAS, cpu_cores=MONITORING_CPU_CORES,
        memory_gib=_gib_for(prom.memory_bytes), disk_bytes=math.ceil(prom.disk_bytes),
        zones=["management", "service"],
        reason=(
            f"{MONITORING_REPLICAS} identical Prometheus replicas (HA); {prom.series} series "
            f"at {services.scrape_interval_s:g} s kept {services.retention_days:g} d: "
            f"{prom.disk_bytes / 1e9:.0f} GB disk, {prom.memory_bytes / GIB:.1f} GiB "
            "for head and queries, each"
        ),
    )


STORAGE_GATEWAY_ROLE = RoleSpec(
    role="storage-gateway", nodes=STORAGE_GATEWAY_NODES, cpu_cores=STORAGE_GATEWAY_CPU_CORES,
    memory_gib=STORAGE_GATEWAY_MEMORY_GIB, disk_bytes=None,
    zones=["management", "storage", "service"],
    reason=(
        "NFS/S3 gateway in front of the storage system: two nodes (one may fail); "
        "serves GPU nodes on the storage zone and clients on the service zone"
    ),
)


def _compute(p: ComputePool, hpc: bool) -> RoleSpec:
    zones: list[ZoneName] = ["management", "service", "storage"]
    if p.gpus_per_node > 0 and hpc and p.hpc_nics:
        zones.append("high_performance")
    kind = f"{p.gpus_per_node} GPUs per node" if p.gpus_per_node else "CPU only"
    fabric_note = ("joins the high-performance fabric for multi-node jobs"
                   if "high_performance" in zones else "no high-performance fabric")
    return RoleSpec(
        role=f"compute:{p.name}", nodes=p.nodes, cpu_cores=None, memory_gib=None,
        disk_bytes=None, zones=zones, reason=f"compute pool {p.name!r}, {kind}; {fabric_note}")


def _zones(roles: Sequence[RoleSpec], hpc: bool, fabric: Fabric) -> list[ZoneSpec]:
    zone_names: list[ZoneName] = ["management", "service", "storage"]
    if hpc:
        zone_names.append("high_performance")
    out = []
    for zone in zone_names:
        rule = ZONE_RULES[f"high_performance:{fabric}" if zone == "high_performance" else zone]
        out.append(ZoneSpec(zone=zone, mtu_bytes=rule.mtu_bytes, rdma=rule.rdma,
                            roles=[r.role for r in roles if zone in r.zones and r.nodes > 0],
                            guidance=rule.guidance))
    return out


def plan_roles(
    *,
    pools: Sequence[ComputePool],
    tenants: int,
    managed_control_plane: bool = False,
    fabric: Fabric = "infiniband",
    services: Services = ALL_SERVICES,
) -> RolePlan:
    """Derive non-compute roles and network zones for these pools and services."""
    _check_inputs(pools, tenants, fabric)
    compute_nodes = sum(p.nodes for p in pools)
    gpus = sum(p.nodes * p.gpus_per_node for p in pools)
    gpu_pools = [p for p in pools if p.gpus_per_node > 0]
    hpc = fabric != "none" and bool(gpu_pools)
    notes: list[str] = []
    roles = [_control_plane(compute_nodes, managed_control_plane, notes),
             _system(compute_nodes, tenants)]
    store: ModelStoreCapacity | None = None
    if services.model_store:
        store = model_store_capacity(model_sizes_bytes=services.model_sizes_bytes)
        notes.extend(store.notes)
        roles.append(_registry(store))
    prom: PrometheusEstimate | None = None
    if services.monitoring:
        prom = prometheus_estimate(
            series=monitoring_series(nodes=compute_nodes, gpus=gpus),
            scrape_interval_s=services.scrape_interval_s, retention_days=services.retention_days)
        roles.append(_monitoring(prom, services))
    if services.storage_gateway:
        roles.append(STORAGE_GATEWAY_ROLE)
    non_compute = sum(r.nodes for r in roles)
    roles += [_compute(p, hpc) for p in pools]
    if fabric != "none" and not gpu_pools:
        notes.append("a high-performance fabric was named but no pool has GPUs: zone omitted")
    return RolePlan(
        roles=roles,
        zones=_zones(roles, hpc, fabric),
        compute_nodes=compute_nodes,
        non_compute_nodes=non_compute,
        monitoring=prom,
        model_store=store,
        formula=(
            "control plane 2f+1 (f=1) or managed; system 2 (3 past 100 workers or 10 tenants); "
            "registry replicas x (models x versions x (1 + headroom)); monitoring 2 replicas "
            "sized by Prometheus' disk formula; gateway 2; zones by table"
        ),
        inputs={
            "pools": ", ".join(f"{p.name}:{p.nodes}x{p.gpus_per_node}" for p in pools),
            "tenants": tenants,
            "managed_control_plane": managed_control_plane,
            "model_store": services.model_store,
            "models_bytes": sum(services.model_sizes_bytes),
            "monitoring": services.monitoring,
            "storage_gateway": services.storage_gateway,
            "fabric": fabric,
            "retention_days": services.retention_days,
            "scrape_interval_s": services.scrape_interval_s,
        },
        notes=notes,
    )
