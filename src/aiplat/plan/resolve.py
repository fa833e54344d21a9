"""The one place the spec is interpreted: every default decided once, typed (pure).

``resolve(platform, catalog)`` turns a validated spec into a ``Resolved`` platform that
sizing, the Kubernetes renderer, the simulator, device planning and the reports read:

- each workload's pool (the spec's rule "unset: the first pool with GPUs") and its model's
  merged shape (``Arch``: a catalog model, a full architecture, or a catalog model with
  overrides such as a longer context);
- each pool's hardware (GPU model, node type, GPUs per node), node power (measured beats
  the vendor's figure beats an estimate), spares, and rack layout: nodes per rack is what
  power and space allow, or ``topology.nodesPerRack`` when it fits — the one figure the plan,
  the node rack labels, the Topology levels and the simulator all use;
- a rack-scale pool's NVLink domain (the spec's ``node.rackScale``, else the node type's):
  its racks are whole domains, a node's power is its share of the domain's, its spare trays
  wait on the shelf (a domain has no free slot to rack them in), and ``nvlink_gpus`` — the
  span tensor and expert parallelism keep on NVLink — is the domain, not the node.

Nothing downstream re-derives these from the raw spec; a rule changes here or nowhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aiplat.catalog import Catalog, GpuModel, ModelArchitecture, NodeType
from aiplat.catalog.models import RackScale
from aiplat.sizing import power, reserve
from aiplat.sizing.shape import MlaShape, ModelShape, MoeShape
from aiplat.spec.models import (
    Cooling,
    ModelRef,
    Platform,
    PoolSpec,
    Precision,
    WorkloadSpec,
)
from aiplat.spec.refs import pool_rack_scale

GB = 1e9
HOURS_PER_MONTH = 730.0


@dataclass(frozen=True)
class Arch:
    name: str
    params: float
    active_params: float
    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    kv_heads: int
    vocab: int
    max_context: int
    embedding_dim: int | None = None
    explicit_head_dim: int | None = None
    moe: MoeShape | None = None
    mla: MlaShape | None = None
    """MLA (DeepSeek-V3): its projections, whose weights attention data parallelism
    replicates, and the latent cached per token and layer instead of K and V per head."""
    expert_ffn_hidden: int | None = None
    dense_layers: int = 0
    """Mixture of experts: layers with a dense FFN (``ffn_hidden`` wide) instead of experts."""

    @property
    def kv_latent_dim(self) -> int | None:
        return self.mla.latent_dim if self.mla else None

    @property
    def head_dim(self) -> int:
        return self.explicit_head_dim or self.hidden // self.heads

    @property
    def shape(self) -> ModelShape:
        """The value object the sizing functions take."""
        return ModelShape(
            params=self.params, layers=self.layers, hidden=self.hidden, heads=self.heads,
            kv_heads=self.kv_heads, head_dim=self.head_dim,
            active_params=self.active_params if self.moe else None, moe=self.moe,
            kv_latent_dim=self.kv_latent_dim, ffn_hidden=self.ffn_hidden,
            expert_ffn_hidden=self.expert_ffn_hidden,
            attention_params=(self.layers * self.mla.attention_params(self.hidden, self.heads)
                              if self.mla else None),
            kv_lora_rank=self.mla.kv_lora_rank if self.mla else None)


def _moe(ref: ModelRef, base: ModelArchitecture | None, params_overridden: bool) -> MoeShape | None:
    experts = ref.experts or (base.experts if base else 1)
    per_token = ref.experts_per_token or (base.experts_per_token if base else 1)
    shared = ref.shared_experts if ref.shared_experts is not None else (
        base.shared_experts if base else 0)
    if experts <= 1 or (params_overridden and ref.experts is None and ref.active_params is None):
        return None
    return MoeShape(experts=experts, experts_per_token=per_token, shared_experts=shared)


def resolve_arch(ref: ModelRef, catalog: Catalog) -> Arch:
    base = catalog.model(ref.name) if ref.name else None
    layers = ref.layers or (base.layers if base else None)
    hidden = ref.hidden or (base.hidden if base else None)
    heads = ref.heads or (base.heads if base else None)
    vocab = ref.vocab or (base.vocab if base else None)
    # The spec's validators and the reference check guarantee a complete shape here.
    assert layers and hidden and heads and vocab, "unresolved model shape"
    ffn = ref.ffn_hidden or (base.ffn_hidden if base else 4 * hidden)
    kv_heads = ref.kv_heads or (base.kv_heads if base else heads)
    # Without a published count, a dense decoder has about 12·l·h² + 2·V·h parameters
    # (attention 4h², MLP 8h² at ffn = 4h; input and output embeddings).
    params = ref.params or (base.params if base else 12 * layers * hidden**2 + 2 * vocab * hidden)
    # A mixture of experts touches only its active parameters per token; an override of
    # params means a different model, so the catalog's active count no longer applies unless
    # the spec gives its own.
    moe = _moe(ref, base, ref.params is not None)
    active = ref.active_params or (
        base.active_params if base and base.active_params and not ref.params else params)
    if moe is None:
        active = params
    mla = base.mla if base and not ref.params else None
    return Arch(
        name=base.name if base else (ref.name or f"custom-{params / 1e9:.1f}b"),
        params=params,
        active_params=active,
        layers=layers,
        hidden=hidden,
        ffn_hidden=ffn,
        heads=heads,
        kv_heads=kv_heads,
        vocab=vocab,
        max_context=ref.max_context or (base.max_context if base else 4096),
        embedding_dim=base.embedding_dim if base else None,
        explicit_head_dim=ref.head_dim or (base.head_dim if base else None),
        moe=moe,
        mla=MlaShape(mla.q_lora_rank, mla.kv_lora_rank, mla.qk_nope_head_dim,
                     mla.qk_rope_head_dim, mla.v_head_dim) if mla else None,
        expert_ffn_hidden=(base.expert_ffn_hidden if base and moe else None),
        dense_layers=base.dense_layers if base and moe else 0,
    )


POD_SHARE = 0.9
"""Of a node's allocatable CPU and memory, what its GPU pods ask for together: the rest is
left for DaemonSets (GPU operator, CNI, node agent, exporters); a whole-node pod asking for
all of allocatable would never schedule."""


def reserved_cpus(cores: int) -> int:
    """Cores kept for the OS and kubelet: 2, plus 1 per 32 cores above 64."""
    return 2 + max(0, cores - 64) // 32


def reserved_memory_gib(memory_gib: int) -> int:
    """Memory kept for the OS and kubelet (system 4 GiB, kube 2 GiB, eviction 1 GiB minimum;
    2% of large nodes)."""
    return max(7, math.ceil(memory_gib * 0.02))


def cpu_allocatable(cores: int) -> int:
    """Cores a node of ``cores`` offers pods (the kubelet's reservation taken off)."""
    return cores - reserved_cpus(cores)


def memory_allocatable_gib(memory_gib: int) -> int:
    """GiB a node of ``memory_gib`` offers pods."""
    return memory_gib - reserved_memory_gib(memory_gib)


CPU_NODE_W = 800.0
"""A two-socket CPU server under load, when the spec gives no power (catalog cpu-mgmt-2s)."""
NODE_HEIGHT_U = {0: 2, 1: 2, 2: 2, 4: 4, 8: 8}
"""Rack units by GPUs per node when no node type says (typical 2U/4U/8U chassis)."""


@dataclass(frozen=True)
class ResolvedPool:
    """A pool with its hardware looked up and its rack layout decided."""

    spec: PoolSpec
    gpu: GpuModel | None
    node_type: NodeType | None
    node_power_w: float
    spares: reserve.SpareNodes
    racks: power.RackLayout
    """What power and space allow per rack, for the pool's nodes plus spares."""
    nodes_per_rack: int
    """``topology.nodesPerRack`` when it fits a rack, else what the rack holds."""
    rack_scale: RackScale | None = None
    """The NVLink domain the nodes are trays of (GB200 NVL72), None for standalone nodes."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def nodes(self) -> int:
        return self.spec.nodes

    @property
    def gpus_per_node(self) -> int:
        return gpus_per_node(self.spec)

    @property
    def gpus(self) -> int:
        return self.spec.gpus

    @property
    def cpu_allocatable(self) -> int:
        """Cores a node offers pods (the kubelet's reservation taken off)."""
        return cpu_allocatable(self.spec.node.cpu_cores)

    @property
    def memory_allocatable_gib(self) -> int:
        return memory_allocatable_gib(self.spec.node.memory_gib)

    @property
    def racked_nodes(self) -> int:
        """Nodes racked and cabled: the pool's and its spares, except a rack-scale pool's
        spare trays, which wait on the shelf (every slot of a domain is a working tray)."""
        return self.nodes + (0 if self.rack_scale else self.spares.spare_nodes)

    @property
    def switch_trays_per_rack(self) -> int:
        """NVLink switch trays in each rack of a rack-scale pool (0 otherwise)."""
        rs = self.rack_scale
        return math.ceil(rs.switch_trays / rs.racks) if rs else 0

    @property
    def rack_count(self) -> int:
        if self.rack_scale is not None:
            return self.racks.racks
        return math.ceil(self.racked_nodes / self.nodes_per_rack) if self.nodes else 0

    @property
    def nvlink_gpus(self) -> int:
        """GPUs one NVLink domain joins: the rack-scale domain, else one node's."""
        return self.rack_scale.gpus if self.rack_scale else self.gpus_per_node

    @property
    def nodes_per_rack_too_high(self) -> bool:
        """The spec asks for more nodes per rack than power or space allow."""
        wanted = self.spec.topology.nodes_per_rack
        return wanted is not None and wanted > self.racks.nodes_per_rack

    @property
    def gpu_memory_bytes(self) -> float:
        # Vendors' "80 GB" is at least 80e9 usable bytes; decimal keeps the estimate safe.
        assert self.gpu is not None
        return self.gpu.memory_gb * GB

    def peak_tflops(self, precision: Precision) -> float:
        gpu = self.gpu
        assert gpu is not None
        if precision is Precision.FP4 and gpu.fp4_tflops:
            return gpu.fp4_tflops
        # Without FP4 tensor cores, NVFP4 weights are dequantized into the FP8 (or 16-bit) path.
        if precision in (Precision.FP8, Precision.FP4) and gpu.fp8_tflops:
            return gpu.fp8_tflops
        if precision is Precision.FP32:
            return gpu.fp32_tflops
        if precision in (Precision.INT8, Precision.INT4) and gpu.int8_tops:
            return gpu.int8_tops
        return gpu.bf16_tflops

    def hpc_bytes_per_second_per_gpu(self) -> float:
        nics = [n for n in self.spec.node.nics if n.segment.value == "hpc"]
        total_gbps = sum(n.rate_gbps * n.count for n in nics)
        return total_gbps * 1e9 / 8 / self.gpus_per_node

    @property
    def hpc_nics(self) -> bool:
        return any(n.segment.value == "hpc" for n in self.spec.node.nics)


def gpu_of(pool: ResolvedPool) -> GpuModel:
    """The GPU of a pool a workload runs on (the spec loader refuses GPU-less ones)."""
    assert pool.gpu is not None, f"pool {pool.name} has no GPUs"
    return pool.gpu


@dataclass(frozen=True)
class ResolvedWorkload:
    """A workload with its pool and its model's shape decided."""

    spec: WorkloadSpec
    pool: ResolvedPool
    arch: Arch

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class Resolved:
    """The platform as every stage after ``plan/`` reads it."""

    spec: Platform
    catalog: Catalog
    pools: tuple[ResolvedPool, ...]
    workloads: tuple[ResolvedWorkload, ...]

    def pool(self, name: str) -> ResolvedPool:
        return next(p for p in self.pools if p.name == name)

    def workload(self, name: str) -> ResolvedWorkload:
        return next(w for w in self.workloads if w.name == name)

    @property
    def default_pool(self) -> ResolvedPool | None:
        """Where a workload without ``pool`` runs: the first pool with GPUs (the spec's
        documented rule; this is its only implementation)."""
        return next((p for p in self.pools if p.gpu is not None), None)

    def workloads_on(self, pool: str) -> list[ResolvedWorkload]:
        return [w for w in self.workloads if w.pool.name == pool]


def resolve(platform: Platform, catalog: Catalog) -> Resolved:
    # Pools first: a workload's pool (named, or the default rule) is one of them.
    pools_only = Resolved(platform, catalog, tuple(resolve_pool(p, platform, catalog)
                                                   for p in platform.pools), ())
    workloads = []
    for w in platform.workloads:
        pool = pools_only.pool(w.pool) if w.pool else pools_only.default_pool
        assert pool is not None, "the spec loader refuses workloads without a GPU pool"
        workloads.append(ResolvedWorkload(w, pool, resolve_arch(w.model, catalog)))
    return Resolved(platform, catalog, pools_only.pools, tuple(workloads))


def node_watts(pool: PoolSpec, gpu: GpuModel | None, node_type: NodeType | None,
               rack_scale: RackScale | None = None) -> float:
    """A node's power: measured (spec) beats the vendor's figure (catalog) beats an estimate;
    a tray of a rack-scale domain draws its share of the domain's (switch trays included)."""
    if pool.node.power_kw:
        return pool.node.power_kw * 1000
    if rack_scale is not None:
        return rack_scale.power_kw * 1000 / rack_scale.nodes
    if node_type is not None:
        return node_type.system_power_kw * 1000
    if gpu is None:
        return CPU_NODE_W
    return power.node_power(gpus_per_node=gpus_per_node(pool), gpu_tdp_w=gpu.tdp_w).node_power_w


PCIE5_X16_GBPS = 128.0
"""GB/s both directions of a PCIe 5 x16 link: an inline GPU's interconnect when unstated."""


def pool_gpu(pool: PoolSpec, catalog: Catalog) -> GpuModel | None:
    """The pool's GPU: the catalog's entry, with any figures the spec gives inline replacing
    its own; a GPU outside the catalog is built from the inline figures alone."""
    spec = pool.node.gpu
    if spec is None:
        return None
    base = catalog.gpu(spec.model)
    if not spec.inline:
        return base
    figures = {"memory_gb": spec.memory_gb, "memory_bandwidth_tbps": spec.memory_bandwidth_tbps,
               "bf16_tflops": spec.bf16_tflops, "tdp_w": spec.tdp_w}
    optional = {"fp8_tflops": spec.fp8_tflops, "fp4_tflops": spec.fp4_tflops,
                "interconnect_gbps": spec.interconnect_gbps}
    figures |= {k: v for k, v in optional.items() if v is not None}
    if base is not None:
        return base.model_copy(update=figures)
    assert spec.bf16_tflops is not None
    figures.setdefault("interconnect_gbps", PCIE5_X16_GBPS)  # given inline, or PCIe 5 x16
    return GpuModel(
        name=spec.model, vendor="unknown", architecture="unknown", form_factor="pcie",
        fp32_tflops=spec.bf16_tflops / 16, interconnect="inline", pcie_gen=5,
        source="inline in the spec (pools[].node.gpu)", **figures)


def gpus_per_node(pool: PoolSpec) -> int:
    return pool.node.gpu.count if pool.node.gpu else 0


def node_height_u(pool: PoolSpec, node_type: NodeType | None) -> int:
    """One node's height: the spec's, the node type's, else by GPUs per node."""
    if pool.node.rack_units:
        return pool.node.rack_units
    if node_type is not None:
        return node_type.rack_units
    return NODE_HEIGHT_U.get(gpus_per_node(pool), 4)


def resolve_pool(pool: PoolSpec, platform: Platform, catalog: Catalog) -> ResolvedPool:
    gpn = gpus_per_node(pool)
    gpu = pool_gpu(pool, catalog)
    node_type = catalog.node_type(pool.node.node_type) if pool.node.node_type else None
    rack_scale = pool_rack_scale(pool, node_type)
    node_w = node_watts(pool, gpu, node_type, rack_scale)
    spares = reserve.spare_nodes(
        nodes=pool.nodes, failures_per_node_year=platform.reserve.node_failures_per_year,
        lead_time_days=platform.reserve.replacement_lead_time_days,
        target_availability=platform.reserve.target_availability, gpus_per_node=gpn,
    )
    cooling: power.CoolingKind = "air" if platform.site.cooling is Cooling.AIR else "liquid"
    if rack_scale is not None:
        racks = power.rack_scale_layout(
            nodes=pool.nodes, nodes_per_domain=rack_scale.nodes,
            racks_per_domain=rack_scale.racks,
            domain_power_w=node_w * rack_scale.nodes,
            rack_power_limit_w=platform.site.rack_power_limit_kw * 1000, cooling=cooling)
    else:
        racks = power.rack_layout(
            nodes=pool.nodes + spares.spare_nodes, node_power_w=node_w,
            node_height_u=node_height_u(pool, node_type),
            rack_power_limit_w=platform.site.rack_power_limit_kw * 1000,
            rack_units=platform.site.rack_units, cooling=cooling,
        )
    wanted = pool.topology.nodes_per_rack
    per_rack = wanted if wanted is not None and wanted <= racks.nodes_per_rack \
        else racks.nodes_per_rack
    return ResolvedPool(pool, gpu, node_type, node_w, spares, racks, per_rack, rack_scale)
