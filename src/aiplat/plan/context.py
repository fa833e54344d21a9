"""Resolve a workload's spec against the catalog into the plain numbers sizing needs.

The spec allows a catalog model, a full architecture, or a catalog model with overrides (a
longer context, say); ``Arch`` is the merged result. GPU figures are looked up once per pool.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiplat.catalog import Catalog, GpuModel, ModelArchitecture, NodeType
from aiplat.sizing.shape import ModelShape, MoeShape
from aiplat.spec.models import ModelRef, Platform, PoolSpec, Precision, WorkloadSpec

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
    kv_latent_dim: int | None = None
    """MLA (DeepSeek-V3): values cached per token and layer instead of K and V per head."""
    expert_ffn_hidden: int | None = None
    dense_layers: int = 0
    """Mixture of experts: layers with a dense FFN (``ffn_hidden`` wide) instead of experts."""

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
            kv_latent_dim=self.kv_latent_dim)


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
        kv_latent_dim=mla.kv_lora_rank + mla.qk_rope_head_dim if mla else None,
        expert_ffn_hidden=(base.expert_ffn_hidden if base and moe else None),
        dense_layers=base.dense_layers if base and moe else 0,
    )


@dataclass(frozen=True)
class PoolHardware:
    pool: PoolSpec
    gpu: GpuModel
    node_type: NodeType | None

    @property
    def gpus_per_node(self) -> int:
        assert self.pool.node.gpu is not None
        return self.pool.node.gpu.count

    @property
    def gpu_memory_bytes(self) -> float:
        # Vendors' "80 GB" is at least 80e9 usable bytes; decimal keeps the estimate safe.
        return self.gpu.memory_gb * GB

    def peak_tflops(self, precision: Precision) -> float:
        if precision is Precision.FP8 and self.gpu.fp8_tflops:
            return self.gpu.fp8_tflops
        if precision is Precision.FP32:
            return self.gpu.fp32_tflops
        if precision in (Precision.INT8, Precision.INT4) and self.gpu.int8_tops:
            return self.gpu.int8_tops
        return self.gpu.bf16_tflops

    def hpc_bytes_per_second_per_gpu(self) -> float:
        nics = [n for n in self.pool.node.nics if n.segment.value == "hpc"]
        total_gbps = sum(n.rate_gbps * n.count for n in nics)
        return total_gbps * 1e9 / 8 / self.gpus_per_node


def pool_hardware(platform: Platform, catalog: Catalog, workload: WorkloadSpec) -> PoolHardware:
    pool = platform.pool(workload.pool) if workload.pool else next(
        p for p in platform.pools if p.node.gpu
    )
    assert pool is not None and pool.node.gpu is not None
    gpu = catalog.gpu(pool.node.gpu.model)
    assert gpu is not None
    node_type = catalog.node_type(pool.node.node_type) if pool.node.node_type else None
    return PoolHardware(pool, gpu, node_type)
