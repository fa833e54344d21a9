"""Model store and cache tiers, and the node cache size, from the platform spec (pure).

Why these rules:

- The **object** tier (or the OCI registry backed by it) is the model store of record:
  versioned, immutable digests, durable, cheap per TB; large sequential reads scale with
  parallel range requests. It is never read by a starting job directly when a node cache
  exists, because N replicas starting at once would each pull the full model from it.
- The **local NVMe** tier is the node cache (``aiplat model pull``): cold start pays the
  network once per node, warm starts read at page-cache/NVMe speed, and hard-link snapshots
  cost no space per version that shares shards.
- The **file** tier (parallel/NFS) is for data shared read-write across nodes: datasets and
  checkpoints; fine as a model source for few nodes, a hot spot for many cold starts.
- The **block** tier is per-node (RWO) volumes: a cache PVC where nodes have no NVMe.

Cache size per node = (sum of the distinct models the pool runs) x 2 (a rollout holds the
old and the new version) x 1.1 (eviction headroom); weights = parameters x bytes per
parameter of the workload's precision. Cold-start times are bytes over the slowest link:
the node's storage NICs for one node, and the store's read rate shared by all nodes of the
pool starting at once (the burst a prefetch DaemonSet avoids).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiplat.catalog.models import Catalog
from aiplat.sizing.memory import precision_bytes
from aiplat.spec.models import Platform, PoolSpec, SegmentPurpose

ROLLOUT_COPIES = 2
HEADROOM = 1.1

TIER_ROLES: dict[str, tuple[str, str]] = {
    # tier: (role for models, access pattern it serves)
    "object": ("model store of record (registry storage): versions, immutable digests",
               "large sequential reads, parallel range GETs; throughput scales with clients"),
    "file": ("datasets and checkpoints; a model source only for a few nodes",
             "shared read-write; many simultaneous cold starts make it the hot spot"),
    "block": ("per-node cache volume (RWO PVC) where nodes have no local NVMe",
              "one node, sequential; survives pod restarts, not node loss"),
    "local-nvme": ("node-local model cache (aiplat model pull --cache)",
                   "warm starts at local speed; cold start pays the network once per node"),
}


@dataclass(frozen=True)
class ModelWeights:
    name: str
    bytes: float


@dataclass(frozen=True)
class PoolCache:
    pool: str
    nodes: int
    models: list[ModelWeights]
    cache_bytes: float
    nvme_bytes: float
    storage_gbps: float  # Gbit/s of the node's storage-segment NICs (or all NICs)
    cold_start_s: float | None  # one node, the largest model, NIC-bound
    burst_start_s: float | None  # every node at once, store-bound


@dataclass(frozen=True)
class Finding:
    severity: str
    subject: str
    message: str
    fix: str


@dataclass(frozen=True)
class StorageGuidance:
    pools: list[PoolCache]
    tiers: list[tuple[str, str, str, list[str]]]  # tier, role, pattern, spec classes
    store_read_gbytes: float | None
    findings: list[Finding] = field(default_factory=list)


def _pool_of(platform: Platform, pool: str | None) -> str | None:
    if pool:
        return pool
    return next((p.name for p in platform.pools if p.node.gpu is not None), None)


def _weights(platform: Platform, catalog: Catalog, pool: str) -> list[ModelWeights]:
    seen: dict[str, ModelWeights] = {}
    for w in platform.workloads:
        if _pool_of(platform, w.pool) != pool:
            continue
        arch = catalog.model(w.model.name) if w.model.name else None
        params = w.model.params or (arch.params if arch else None)
        if params is None:
            continue
        name = w.model.name or f"{w.name}-model"
        key = f"{name}/{w.precision.value}"
        seen[key] = ModelWeights(f"{name} ({w.precision.value})",
                                 params * precision_bytes(w.precision.value))
    return sorted(seen.values(), key=lambda m: -m.bytes)


def _storage_gbps(pool: PoolSpec) -> float:
    nics = pool.node.nics
    storage = [n for n in nics if n.segment is SegmentPurpose.STORAGE]
    chosen = storage or nics
    return sum(n.rate_gbps * n.count for n in chosen)


def storage_guidance(platform: Platform, catalog: Catalog) -> StorageGuidance:
    classes = platform.storage.classes
    store_rates = [c.read_gbps for c in classes if c.tier == "object" and c.read_gbps]
    store_read = max(store_rates) if store_rates else None
    findings: list[Finding] = []
    pools: list[PoolCache] = []
    for pool in platform.pools:
        models = _weights(platform, catalog, pool.name)
        if not models:
            continue
        cache = sum(m.bytes for m in models) * ROLLOUT_COPIES * HEADROOM
        nvme = (pool.node.nvme.count * pool.node.nvme.size_tb * 1e12) if pool.node.nvme else 0.0
        gbps = _storage_gbps(pool)
        largest = models[0].bytes
        cold = largest / (gbps * 1e9 / 8) if gbps else None
        burst = None
        if store_read:
            rate = store_read * 1e9
            if gbps:
                rate = min(rate, pool.nodes * gbps * 1e9 / 8)
            burst = pool.nodes * largest / rate
        pools.append(PoolCache(pool.name, pool.nodes, models, cache, nvme, gbps, cold, burst))
        if nvme == 0:
            findings.append(Finding(
                "warning", f"pool {pool.name}", "nodes have no local NVMe for the model cache;"
                f" every cold start reads {largest / 1e9:.0f} GB over the network",
                "add node.nvme, or give the cache a block-tier PVC per node"))
        elif cache > nvme * 0.8:
            findings.append(Finding(
                "warning", f"pool {pool.name}", f"the model cache needs {cache / 1e12:.2f} TB,"
                f" more than 80% of the {nvme / 1e12:.2f} TB local NVMe",
                "add NVMe, run fewer models per pool, or cap the cache with --max-cache-size"
                " and accept evictions"))
        if not gbps:
            findings.append(Finding(
                "warning", f"pool {pool.name}", "nodes have no NICs in the spec; cold-start"
                " time cannot be estimated", "add node.nics with a storage segment"))
    tiers = [(tier, role, pattern, [c.name for c in classes if c.tier == tier])
             for tier, (role, pattern) in TIER_ROLES.items()]
    if pools and not any(c.tier == "object" for c in classes):
        findings.append(Finding(
            "info", "storage", "no object-tier storage class: the registry's storage needs a"
            " durable home", "add a storage class with tier: object for the model store"))
    return StorageGuidance(pools, tiers, store_read, findings)
