"""The plan's "Model storage and cache" section: renders the Plan's storage guidance
(:mod:`aiplat.plan.storage`; pure: data in, a Section out).

PVCs for caches and the prefetch DaemonSet come from the Kubernetes builders, which this
section points to.
"""

from __future__ import annotations

from aiplat.plan.storage import StorageGuidance
from aiplat.report.document import Section, Table


def _gb(n: float) -> str:
    return f"{n / 1e9:,.0f} GB" if n < 1e12 else f"{n / 1e12:,.2f} TB"


def _s(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds:,.0f} s" if seconds < 120 else f"{seconds / 60:,.1f} min"


def storage_section(g: StorageGuidance) -> Section:
    cache = Table(
        title="Model cache per node",
        columns=["pool", "nodes", "models (weights)", "cache per node", "local NVMe",
                 "storage NICs", "cold start, 1 node", "all nodes at once"],
        rows=[[p.pool, str(p.nodes), "; ".join(f"{m.name} {_gb(m.bytes)}" for m in p.models),
               _gb(p.cache_bytes), _gb(p.nvme_bytes) if p.nvme_bytes else "none",
               f"{p.storage_gbps:g} Gbit/s" if p.storage_gbps else "–",
               _s(p.cold_start_s), _s(p.burst_start_s)] for p in g.pools],
        align=["left", "right", "left", "right", "right", "right", "right", "right"],
    )
    tiers = Table(
        title="Storage tiers for models",
        columns=["tier", "use for models", "access pattern", "classes in the spec"],
        rows=[[t.tier, t.role, t.pattern, ", ".join(t.classes) or "–"] for t in g.tiers],
    )
    store = (f"{g.store_read_gbytes:g} GB/s" if g.store_read_gbytes
             else "not given (add readGBps to the object class)")
    return Section(
        id="model-storage",
        title="Model storage and cache",
        paragraphs=[
            "Models live in an OCI registry (ModelPack artifacts, signed) on the object tier"
            " and are pulled into a node-local cache, verified blob by blob; jobs mount the"
            " cache's snapshot directory read-only. Cache per node = distinct models of the"
            " pool x 2 (a rollout holds two versions) x 1.1 headroom.",
            "Cold start, 1 node: the largest model over the node's storage NICs, a lower"
            " bound (the store, the NVMe write rate and sha256 verification at about 2 GB/s"
            " per core bound it too; `aiplat model bench` measures them on a node).",
            f"Object store read rate: {store}. 'All nodes at once' is the burst when every"
            " node of a pool cold-starts the largest model together; a prefetch DaemonSet"
            " that warms caches before jobs start turns that burst into a background copy.",
        ],
        tables=[cache, tiers],
        notes=[f"{f.severity}: {f.subject}: {f.message} (fix: {f.fix})" for f in g.findings]
        + ["Cache PVCs and the prefetch DaemonSet are rendered by the Kubernetes manifests"
           " (kube builders), not by this section."],
    )
