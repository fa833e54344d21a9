"""Storage planning: model store and cache tiers, and each pool's node cache size (pure;
part of the Plan).

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

from pydantic import Field

from aiplat.plan.findings import Finding, PlanModel
from aiplat.plan.resolve import Resolved, ResolvedPool
from aiplat.sizing.result import precision_bytes
from aiplat.spec.models import SegmentPurpose

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


class ModelWeights(PlanModel):
    name: str
    bytes: float


class PoolCache(PlanModel):
    pool: str
    nodes: int
    models: list[ModelWeights]
    cache_bytes: float
    nvme_bytes: float
    storage_gbps: float
    """Gbit/s of the node's storage-segment NICs (or all NICs)."""
    cold_start_s: float | None
    """One node, the largest model, NIC-bound."""
    burst_start_s: float | None
    """Every node at once, store-bound."""


class StorageTier(PlanModel):
    tier: str
    role: str
    pattern: str
    classes: list[str]
    """The spec's storage classes of this tier."""


class StorageGuidance(PlanModel):
    pools: list[PoolCache]
    tiers: list[StorageTier]
    store_read_gbytes: float | None
    findings: list[Finding] = Field(default_factory=list)


def _weights(resolved: Resolved, pool: str) -> list[ModelWeights]:
    seen: dict[str, ModelWeights] = {}
    for w in resolved.workloads_on(pool):
        spec = w.spec
        name = spec.model.name or f"{spec.name}-model"
        key = f"{name}/{spec.precision.value}"
        seen[key] = ModelWeights(name=f"{name} ({spec.precision.value})",
                                 bytes=w.arch.params * precision_bytes(spec.precision.value))
    return sorted(seen.values(), key=lambda m: -m.bytes)


def _storage_gbps(pool: ResolvedPool) -> float:
    nics = pool.spec.node.nics
    storage = [n for n in nics if n.segment is SegmentPurpose.STORAGE]
    chosen = storage or nics
    return sum(n.rate_gbps * n.count for n in chosen)


def plan_storage(resolved: Resolved) -> StorageGuidance:
    classes = resolved.spec.storage.classes
    store_rates = [c.read_gbps for c in classes if c.tier == "object" and c.read_gbps]
    store_read = max(store_rates) if store_rates else None
    findings: list[Finding] = []
    pools: list[PoolCache] = []
    for pool in resolved.pools:
        models = _weights(resolved, pool.name)
        if not models:
            continue
        cache = _pool_cache(pool, models, store_read)
        pools.append(cache)
        findings += _cache_findings(cache)
    tiers = [StorageTier(tier=tier, role=role, pattern=pattern,
                         classes=[c.name for c in classes if c.tier == tier])
             for tier, (role, pattern) in TIER_ROLES.items()]
    if pools and not any(c.tier == "object" for c in classes):
        findings.append(Finding(
            severity="info", subject="storage", message="no object-tier storage class: the "
            "registry's storage needs a durable home",
            fix="add a storage class with tier: object for the model store"))
    return StorageGuidance(pools=pools, tiers=tiers, store_read_gbytes=store_read,
                           findings=findings)


def _pool_cache(pool: ResolvedPool, models: list[ModelWeights],
                store_read: float | None) -> PoolCache:
    nvme_spec = pool.spec.node.nvme
    nvme = nvme_spec.count * nvme_spec.size_tb * 1e12 if nvme_spec else 0.0
    gbps = _storage_gbps(pool)
    largest = models[0].bytes
    cold = largest / (gbps * 1e9 / 8) if gbps else None
    burst = None
    if store_read:
        rate = store_read * 1e9
        if gbps:
            rate = min(rate, pool.nodes * gbps * 1e9 / 8)
        burst = pool.nodes * largest / rate
    return PoolCache(pool=pool.name, nodes=pool.nodes, models=models,
                     cache_bytes=sum(m.bytes for m in models) * ROLLOUT_COPIES * HEADROOM,
                     nvme_bytes=nvme, storage_gbps=gbps, cold_start_s=cold,
                     burst_start_s=burst)


def _cache_findings(c: PoolCache) -> list[Finding]:
    out = []
    subject = f"pool {c.pool}"
    if c.nvme_bytes == 0:
        out.append(Finding(
            severity="warning", subject=subject, message="nodes have no local NVMe for the "
            f"model cache; every cold start reads {c.models[0].bytes / 1e9:.0f} GB over the "
            "network", fix="add node.nvme, or give the cache a block-tier PVC per node"))
    elif c.cache_bytes > c.nvme_bytes * 0.8:
        out.append(Finding(
            severity="warning", subject=subject, message=f"the model cache needs "
            f"{c.cache_bytes / 1e12:.2f} TB, more than 80% of the {c.nvme_bytes / 1e12:.2f} TB "
            "local NVMe", fix="add NVMe, run fewer models per pool, or cap the cache with "
            "--max-cache-size and accept evictions"))
    if not c.storage_gbps:
        out.append(Finding(
            severity="warning", subject=subject, message="nodes have no NICs in the spec; "
            "cold-start time cannot be estimated", fix="add node.nics with a storage segment"))
    return out
