"""Inference sizing: KV cache, weights, GPUs per replica, decode and prefill speed, replicas.

Design. A serving replica meets two physical ceilings, and every figure here derives from one
of them (a roofline):

- Memory capacity. Weights (all experts of a mixture of experts are resident), the KV cache of
  every sequence in flight and a runtime overhead must fit in ``gpu_memory_utilization`` of
  each GPU, the rule vLLM uses when it pre-allocates its KV cache.
- Decode is memory-bandwidth bound: each step streams the weights once for the whole batch
  (for a mixture of experts, the experts the batch's tokens touch) plus every sequence's KV
  cache. Prefill is compute bound: 2·P FLOPs per prompt token plus the causal-attention term.

How close a stack gets to those ceilings is a property of the software, not of the GPU, so the
efficiencies are inputs with stated defaults (bandwidth utilisation, MFU-like compute
efficiency, a tensor-parallel factor) that a measurement on the target stack should replace.
Functions take plain numbers so each formula can be checked against its source in isolation.

Sources:
- KV cache per token = 2 · layers · kv_heads · head_dim · bytes: NVIDIA, "Mastering LLM
  Techniques: Inference Optimization" (developer.nvidia.com/blog/mastering-llm-techniques-
  inference-optimization/): Llama 2 7B, batch 1, 4096 tokens, 16-bit, "~2 GB"; Kwon et al.,
  "Efficient Memory Management for LLM Serving with PagedAttention" (SOSP 2023,
  arXiv:2309.06180) §3: OPT-13B "800 KB" per token, "1.6 GB" for 2048 tokens.
- Tensor-parallel rules: vLLM ``QKVParallelLinear`` divides the query heads by the TP size and,
  when TP exceeds the KV heads, replicates each KV head over TP / kv_heads ranks.
- Memory budget and runtime overhead: vLLM memory profiling (vllm-project/vllm PR #10511):
  Llama-3-8B on an H100-80GB sees 79.22 GiB, may use 0.90 × that = 71.29 GiB, weights take
  14.96 GiB, non-torch memory 1.79 GiB (3.58 GiB at TP=2: NCCL), activation peak 1.26 GiB.
- Bandwidth utilisation (MBU = (weights + KV bytes) / TPOT / peak bandwidth) as defined by
  Databricks, "LLM Inference Performance Engineering: Best Practices"; the defaults of the
  three efficiencies are fitted to published NIM, vLLM and TensorRT-LLM measurements
  (``sizing.calibration``, each figure and its error a test).
- Time to first token under load: Pollaczek–Khinchine mean wait of an M/D/1 queue,
  W = ρ·S / (2(1 − ρ)), with Poisson arrivals and a deterministic prefill time S.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from aiplat.errors import InputError
from aiplat.sizing.result import (
    InputValue,
    Result,
    precision_bytes,
    require_fraction,
    require_non_negative,
    require_positive,
)
from aiplat.sizing.shape import ModelShape

GIB = float(2**30)

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
"""vLLM's default ``gpu_memory_utilization``."""

DEFAULT_OVERHEAD_BYTES_PER_GPU = 3 * GIB
"""Activation peak + CUDA context/NCCL + CUDA graphs; vLLM measured ~3.05 GiB for Llama-3-8B."""

# Serving efficiencies, calibrated (``sizing.calibration``) by least squares on the log error
# against 23 published measurements: NVIDIA NIM 1.8 benchmark tables (Llama-3.3-70B FP8, TP2,
# 2×H100: inter-token latency and TTFT at concurrency 1), vLLM's nightly latency benchmark
# (H200, BF16, batch 8: Llama-3.1-8B TP1, Llama-3-70B TP4, Mixtral-8x7B TP2) and TensorRT-LLM's
# performance tables (H100 FP8 and A100 FP16: peak throughput at batch 48-1024, TP1/2/4, and
# batch-1 first token latency at TP1/4/8). Root-mean-square error over them 14 % (was 29 %
# with the former 0.75 / 0.5 / flat 0.9, which made TP2 decode 18 % too fast against NIM);
# every figure within 25 %, each a test in tests/unit/test_sizing_calibration.py.

DEFAULT_BANDWIDTH_EFFICIENCY = 0.68
"""Fraction of peak HBM bandwidth a decode step sustains (MBU): NIM 1.8, Llama-3.3-70B FP8 on
2×H100 at concurrency 1 (18.6 ms per token for 35 GB of weights per GPU) is 0.57 overall,
0.68 before the TP2 factor below."""

DEFAULT_COMPUTE_EFFICIENCY_8BIT = 0.45
"""Fraction of the dense FP8/INT8 peak that prefill and compute-bound decode reach
(TensorRT-LLM H100 FP8: LLaMA-70B TP4 2048-token first token in 109 ms). Lower than at 16
bits: attention, norms and activations do not run at the doubled 8-bit rate."""

DEFAULT_COMPUTE_EFFICIENCY_16BIT = 0.76
"""Fraction of the dense BF16/FP16 peak (TensorRT-LLM A100 FP16: LLaMA-7B 2048-token first
token in 133 ms, 69 % of 312 TFLOP/s). One figure for both precisions fits the A100 rows
with 40 % RMS error instead of 15 %."""


DEFAULT_MOE_COMPUTE_SHARE = 0.43
"""A mixture of experts served at scale reaches this share of the dense compute efficiency
(0.19 of the peak at 8 bits or fewer). Fitted (``sizing.calibration.fit_moe_share``) to
TensorRT-LLM's published DeepSeek-R1 max-throughput figures on 8 GPUs, TP8/EP8 with
attention data parallelism, 1K in / 2K out: H200 FP8 1,436 tok/s/GPU, B200 NVFP4 with FP8 KV
5,393 and with BF16 KV 4,548 (errors −7 %, +12 %, −4 %); at the dense efficiency the
roofline is 42 %, 161 % and 124 % over them. It lumps what a roofline leaves out, each
published in TensorRT-LLM's tech blogs (docs/source/blogs/tech_blog): attention-DP ranks
waiting for the slowest one, a context phase on one rank stalling the others (35 % lost
without ADP balance, blog10), the expert AllGather and ReduceScatter at about 80 % of NVLink
(blog18), expert load imbalance (the hottest rank 1.56x the mean at EP32, blog4), CUDA-graph
padding and host overhead (up to 50 %, blog20). With the absorbed MLA attention at the KV
cache's precision (ModelShape.decode_attention_dim, ServingHardware.attention_tflops) one
share fits all three (RMS 8 %); without them it was 15 %. Decode of a small batch stays
bound by streaming the experts."""


DEFAULT_MOE_LAYER_FLOOR_S = 200e-6
"""Shortest time a decode step spends in one layer of a mixture of experts, however small
the batch: the router, top-k, permutation, grouped GEMM and expert-parallel communication
kernels each take microseconds that no bandwidth or FLOP count shows. Fitted to
TensorRT-LLM's two published DeepSeek-R1 min-latency runs (Best_perf_practice_on_DeepSeek-R1,
batch 1, 1K in / 2K out, TP8, 3-layer MTP at the 2.82 tokens per step tech_blog/blog1
publishes): 158 tokens/s per user on 8xH200 and 275 on 8xB200 imply 261 and 150 µs per
layer; this, their geometric mean rounded, gives +31 % and −25 %. Without it the roofline
was 2.7x and 4.6x faster. Dense models keep none: their batch-1 figures (NIM, TensorRT-LLM)
are explained by bandwidth."""


def default_compute_efficiency(precision: str, *, moe: bool = False) -> float:
    """The calibrated compute efficiency for weights in ``precision`` (8 bits or fewer, or
    16+), times ``DEFAULT_MOE_COMPUTE_SHARE`` for a mixture of experts."""
    dense = (DEFAULT_COMPUTE_EFFICIENCY_8BIT if precision_bytes(precision) <= 1
             else DEFAULT_COMPUTE_EFFICIENCY_16BIT)
    return dense * DEFAULT_MOE_COMPUTE_SHARE if moe else dense

DEFAULT_TP_EFFICIENCY = 0.86
"""Throughput factor per doubling of tensor parallelism (two all-reduces per layer per step):
TP2 0.86, TP4 0.74, TP8 0.64. One factor for all degrees fits the figures worse (RMS 19 %
at its best, 0.8, on the first 18)."""


def tp_factor(efficiency: float, tensor_parallel: int) -> float:
    """The throughput factor at ``tensor_parallel`` GPUs: efficiency^log2(TP), 1 at TP 1."""
    return float(efficiency ** math.log2(tensor_parallel)) if tensor_parallel > 1 else 1.0


@dataclass(frozen=True)
class ServingEfficiency:
    """How close the serving stack gets to the roofline, and speculative decoding if it
    drafts: measure and override per stack.

    Speculative decoding (Leviathan et al. 2023, "Fast Inference from Transformers via
    Speculative Decoding", ICML, section 3): a draft proposes ``draft_tokens`` γ tokens, each
    step of the target verifies γ + 1 positions per sequence and keeps on average
    (1 − α^(γ+1)) / (1 − α) of them (α: ``acceptance_rate``); each draft token costs
    ``draft_cost`` c of a target step.
    """

    bandwidth: float = DEFAULT_BANDWIDTH_EFFICIENCY
    compute: float | None = None
    """None: ``default_compute_efficiency`` of the weights' precision (0.45 at 8 bits, 0.76
    at 16; times ``DEFAULT_MOE_COMPUTE_SHARE`` for a mixture of experts)."""
    tensor_parallel: float = DEFAULT_TP_EFFICIENCY
    draft_tokens: int = 0
    acceptance_rate: float = 0.0
    draft_cost: float = 0.0
    moe_layer_floor: float = DEFAULT_MOE_LAYER_FLOOR_S
    """Seconds: a mixture of experts' decode step takes at least this per layer."""
    prefix_cache_hit: float = 0.0
    """Share of each prompt found in the prefix cache (vLLM automatic prefix caching): those
    tokens are not recomputed; the rest still attend to them."""
    attention_data_parallel: bool = False
    """Attention data parallelism (TensorRT-LLM ``enable_attention_dp``, SGLang
    ``--enable-dp-attention``): each of the TP ranks runs attention for its own share of the
    batch with the attention weights whole, the FFN/experts stay split over the ranks (expert
    parallelism). A rank then caches and reads only its own sequences' KV: an MLA latent,
    which TP cannot split by heads, or GQA heads fewer than the ranks, no longer sit on
    every GPU."""

    def __post_init__(self) -> None:
        require_fraction(bandwidth_efficiency=self.bandwidth,
                          compute_efficiency=1.0 if self.compute is None else self.compute,
                          tp_efficiency=self.tensor_parallel)
        if not 0 <= self.moe_layer_floor < 1:
            raise InputError(f"moe_layer_floor must be in [0, 1) s, got {self.moe_layer_floor!r}")
        if not 0 <= self.prefix_cache_hit < 1:
            raise InputError(f"prefix_cache_hit must be in [0, 1), got {self.prefix_cache_hit!r}")
        if self.draft_tokens < 0 or not 0 <= self.acceptance_rate < 1 or self.draft_cost < 0:
            raise InputError("speculative decoding needs draft_tokens >= 0, 0 <= "
                             "acceptance_rate < 1 and draft_cost >= 0")

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens kept per target step (Leviathan et al. 2023, eq. 1)."""
        a, g = self.acceptance_rate, self.draft_tokens
        return (1 - a ** (g + 1)) / (1 - a)


@dataclass(frozen=True)
class ServingHardware:
    """One GPU's roofline: memory bandwidth (bytes/s) and dense peak (TFLOP/s) at the
    weights' precision, and at the KV cache's where it differs (``attention_tflops``: the
    attention's scores and values run at the cache's precision, FP4 weights or not)."""

    memory_bandwidth_bps: float
    dense_tflops: float
    attention_tflops: float | None = None






def _resolve_head_dim(hidden: int, heads: int, kv_heads: int, head_dim: int | None) -> int:
    require_positive(hidden=hidden, heads=heads, kv_heads=kv_heads)
    if kv_heads > heads or heads % kv_heads:
        raise InputError(
            f"kv_heads {kv_heads} must divide heads {heads} (grouped-query attention) "
            "(fix: take num_key_value_heads from the model's config.json)"
        )
    if head_dim is not None:
        require_positive(head_dim=head_dim)
        return head_dim
    if hidden % heads:
        raise InputError(
            f"hidden {hidden} is not divisible by heads {heads} "
            "(fix: pass head_dim from the model's config.json)"
        )
    return hidden // heads


DEFAULT_EFFICIENCY = ServingEfficiency()


@dataclass(frozen=True)
class LoraServing:
    """Multi-LoRA serving (S-LoRA, Sheng et al. 2023; vLLM --enable-lora): ``adapters`` of
    ``params_per_adapter`` each on one base model, at most ``max_loras`` distinct ones per
    batch. With uniform popularity a batch of B sequences uses N·(1 − (1 − 1/N)^B) distinct
    adapters (each missed by one sequence with probability 1 − 1/N), capped at max_loras."""

    adapters: int
    params_per_adapter: float
    max_loras: int | None = None

    def __post_init__(self) -> None:
        require_positive(adapters=self.adapters, params_per_adapter=self.params_per_adapter)
        if self.max_loras is not None:
            require_positive(max_loras=self.max_loras)

    def touched(self, batch: float) -> float:
        n = self.adapters
        used = float(n * (1 - (1 - 1 / n) ** max(batch, 0.0)))
        return min(used, float(self.max_loras)) if self.max_loras is not None else used

    @property
    def resident_params(self) -> float:
        """Every adapter is kept in GPU memory (vLLM's GPU cache holds max_loras; the rest
        would be swapped in from host memory per request, which this does not model)."""
        return self.adapters * self.params_per_adapter


@dataclass(frozen=True)
class Replica:
    """One serving replica: the model, its GPU's roofline, the precisions of weights and KV
    cache, its tensor × pipeline layout and the stack's efficiencies. Decode, prefill, the
    SLO sizing and batch inference all take one instead of seven loose arguments."""

    model: ModelShape
    hardware: ServingHardware
    weight_precision: str = "bf16"
    kv_precision: str = "bf16"
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY
    lora: LoraServing | None = None

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel


@dataclass(frozen=True)
class Traffic:
    """Requests arriving at ``qps`` (Poisson), each a prompt and an output of mean length."""

    qps: float
    prompt_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class LatencyTarget:
    """Time to first token, and the decode target as tokens/s per user or time per token."""

    ttft_seconds: float
    decode_tokens_per_second: float | None = None
    tpot_seconds: float | None = None

    def __post_init__(self) -> None:
        require_positive(target_ttft_seconds=self.ttft_seconds)
        if (self.decode_tokens_per_second is None) == (self.tpot_seconds is None):
            raise InputError("give exactly one of target_decode_tokens_per_second, "
                             "target_tpot_seconds")
        require_positive(target_rate=self.rate)

    @property
    def rate(self) -> float:
        """Decode tokens/s each user must see."""
        if self.tpot_seconds is not None:
            return 1 / self.tpot_seconds
        assert self.decode_tokens_per_second is not None
        return self.decode_tokens_per_second


# --- KV cache and weights ---------------------------------------------------------------


class KvCachePerToken(Result):
    head_dim: int
    kv_bytes_per_token: float


def kv_cache_per_token(
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    kv_precision: str = "bf16",
    *,
    head_dim: int | None = None,
) -> KvCachePerToken:
    """Bytes the KV cache grows by per token of one sequence.

    ``head_dim`` defaults to hidden / heads; pass the config's own value where it differs
    (some model families publish a head_dim that is not hidden / heads).
    """
    require_positive(layers=layers)
    hd = _resolve_head_dim(hidden, heads, kv_heads, head_dim)
    per_token = 2 * layers * kv_heads * hd * precision_bytes(kv_precision)
    return KvCachePerToken(
        head_dim=hd,
        kv_bytes_per_token=per_token,
        formula=(
            "2 (K and V) · layers · kv_heads · head_dim · bytes per value "
            "(NVIDIA 'Mastering LLM Techniques: Inference Optimization'; vLLM paper §3)"
        ),
        inputs={
            "layers": layers,
            "hidden": hidden,
            "heads": heads,
            "kv_heads": kv_heads,
            "kv_precision": kv_precision,
            "head_dim": head_dim,
        },
    )


class KvCache(Result):
    kv_bytes_per_token: float
    kv_bytes_per_sequence: float
    tokens: int
    kv_cache_bytes: float


def kv_cache(
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    *,
    context_tokens: int,
    concurrency: int,
    kv_precision: str = "bf16",
    head_dim: int | None = None,
) -> KvCache:
    """KV cache of ``concurrency`` sequences each holding ``context_tokens`` tokens."""
    require_positive(context_tokens=context_tokens, concurrency=concurrency)
    per_token = kv_cache_per_token(
        layers, hidden, heads, kv_heads, kv_precision, head_dim=head_dim
    ).kv_bytes_per_token
    tokens = context_tokens * concurrency
    return KvCache(
        kv_bytes_per_token=per_token,
        kv_bytes_per_sequence=per_token * context_tokens,
        tokens=tokens,
        kv_cache_bytes=per_token * tokens,
        formula="kv_bytes_per_token · context_tokens · concurrency",
        inputs={
            "layers": layers,
            "hidden": hidden,
            "heads": heads,
            "kv_heads": kv_heads,
            "context_tokens": context_tokens,
            "concurrency": concurrency,
            "kv_precision": kv_precision,
            "head_dim": head_dim,
        },
        notes=["a reservation for full contexts; paged allocation only holds tokens in use"],
    )


class Weights(Result):
    weights_bytes: float


def weights_memory(params: float, precision: str = "bf16") -> Weights:
    """Resident weight bytes; for a mixture of experts pass the total, not the active, count."""
    require_positive(params=params)
    return Weights(
        weights_bytes=params * precision_bytes(precision),
        formula="params · bytes per parameter (mixture of experts: every expert resident)",
        inputs={"params": params, "precision": precision},
    )


# --- GPUs per replica -------------------------------------------------------------------


def tp_compatible(tp: int, heads: int, kv_heads: int) -> bool:
    """Whether ``tp`` ranks can split ``heads`` query and ``kv_heads`` KV heads (vLLM's rule:
    query heads evenly, KV heads evenly or each replicated a whole number of times)."""
    return _tp_compatible(tp, heads, kv_heads)


def _tp_compatible(tp: int, heads: int, kv_heads: int) -> bool:
    # vLLM: query heads split evenly; KV heads split evenly or replicated a whole number of times
    if heads % tp:
        return False
    return kv_heads % tp == 0 if tp <= kv_heads else tp % kv_heads == 0


def _kv_heads_per_gpu(tp: int, kv_heads: int) -> tuple[int, int]:
    """(KV heads held by each GPU, replicas of each KV head)."""
    if tp <= kv_heads:
        return kv_heads // tp, 1
    return 1, tp // kv_heads


@dataclass(frozen=True)
class _PerGpu:
    weights: float
    kv: float
    needed: float
    kv_per_token: float


class ReplicaLayout(Result):
    tensor_parallel: int
    pipeline_parallel: int
    gpus: int
    nodes: int
    fits: bool
    weights_bytes: float
    kv_cache_bytes: float
    weights_bytes_per_gpu: float
    kv_cache_bytes_per_gpu: float
    overhead_bytes_per_gpu: float
    needed_bytes_per_gpu: float
    usable_bytes_per_gpu: float
    kv_heads_per_gpu: int
    kv_head_replicas: int
    kv_budget_bytes_per_gpu: float
    kv_token_capacity: int
    max_concurrency: int


@dataclass(frozen=True)
class MemoryBudget:
    """What a replica's GPUs may hold: the memory the runtime sees per GPU (vLLM reports
    79.22 GiB on an "80GB" H100), GPUs per node (tensor parallelism stays inside one),
    the server's share of it and a runtime overhead per GPU, fixed and proportional."""

    gpu_memory_bytes: float
    gpus_per_node: int = 8
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    overhead_bytes_per_gpu: float = DEFAULT_OVERHEAD_BYTES_PER_GPU
    overhead_fraction: float = 0.0
    nvlink_gpus: int | None = None
    """GPUs one NVLink domain joins when larger than a node (a GB200 NVL72: 72): tensor
    parallelism may grow to it; unset: the node."""

    @property
    def tp_limit(self) -> int:
        """The largest span tensor parallelism keeps on NVLink."""
        return max(self.nvlink_gpus or 0, self.gpus_per_node)

    def __post_init__(self) -> None:
        require_positive(gpu_memory_bytes=self.gpu_memory_bytes,
                          gpus_per_node=self.gpus_per_node)
        require_fraction(gpu_memory_utilization=self.gpu_memory_utilization)
        require_non_negative(overhead_bytes_per_gpu=self.overhead_bytes_per_gpu,
                              overhead_fraction=self.overhead_fraction)

    @property
    def usable(self) -> float:
        return self.gpu_memory_utilization * self.gpu_memory_bytes


@dataclass(frozen=True)
class _Fit:
    """Per-GPU memory of a model at (tp, pp) for ``tokens`` cached tokens."""

    model: ModelShape
    budget: MemoryBudget
    weights: float
    kv_value_bytes: float
    tokens: int
    replicated: float = 0.0
    """Weight bytes every TP rank holds whole (attention under attention data parallelism)."""
    attention_dp: bool = False

    def per_gpu(self, tp: int, pp: int) -> _PerGpu:
        layers = self.model.layers
        stage_layers = math.ceil(layers / pp)
        kv_heads_gpu, _ = _kv_heads_per_gpu(tp, self.model.kv_heads)
        kv_per_token = stage_layers * self.model.kv_values_per_token(kv_heads_gpu) * (
            self.kv_value_bytes)
        if self.attention_dp and tp > 1:  # a rank caches whole tokens, 1/tp of them
            kv_per_token = stage_layers * self.model.kv_values_per_token() * (
                self.kv_value_bytes) / tp
        shared = self.replicated if tp > 1 else 0.0
        w = (shared + (self.weights - shared) / tp) * stage_layers / layers
        kv = kv_per_token * self.tokens
        b = self.budget
        needed = (w + kv) * (1 + b.overhead_fraction) + b.overhead_bytes_per_gpu
        return _PerGpu(weights=w, kv=kv, needed=needed, kv_per_token=kv_per_token)

    def fits(self, tp: int, pp: int) -> bool:
        return self.per_gpu(tp, pp).needed <= self.budget.usable


def _tp_candidates(model: ModelShape, gpus_per_node: int, notes: list[str]) -> list[int]:
    """Powers of two up to a node that split the query heads and split or replicate the KV
    heads evenly (vLLM QKVParallelLinear); TP 1 always qualifies."""
    candidates: list[int] = []
    tp = 1
    while tp <= gpus_per_node:
        if _tp_compatible(tp, model.heads, model.kv_heads):
            candidates.append(tp)
        else:
            notes.append(
                f"tensor parallel {tp} skipped: {model.heads} attention heads / "
                f"{model.kv_heads} KV heads cannot be split evenly")
        tp *= 2
    return candidates


def _choose_layout(fit: _Fit, candidates: list[int], notes: list[str]) -> tuple[int, int, bool]:
    """(tp, pp, fits): the smallest fitting TP; else the largest TP and the fewest pipeline
    stages that fit; else one layer per stage, not fitting."""
    for tp in candidates:
        if fit.fits(tp, 1):
            return tp, 1, True
    tp, layers = candidates[-1], fit.model.layers
    for pp in range(2, layers + 1):
        if fit.fits(tp, pp):
            notes.append(
                f"no tensor-parallel degree up to {fit.budget.tp_limit} GPUs (one NVLink "
                f"domain) fits; pipeline parallel over {pp} stages (across nodes), each holding "
                f"≤ {math.ceil(layers / pp)} layers")
            return tp, pp, True
    notes.append(
        "does not fit even with one layer per pipeline stage (fix: lower the "
        "context or concurrency, quantise weights or KV cache, or use larger GPUs)")
    return tp, layers, False


def gpus_per_replica(
    model: ModelShape,
    *,
    context_tokens: int,
    concurrency: int,
    budget: MemoryBudget,
    weight_precision: str = "bf16",
    kv_precision: str = "bf16",
    lora: LoraServing | None = None,
    attention_data_parallel: bool = False,
    pinned: tuple[int, int] | None = None,
) -> ReplicaLayout:
    """Smallest tensor-parallel layout whose GPUs hold weights, KV cache and overhead, or
    the ``pinned`` (TP, PP) one, with whether it fits (the caller checks that it splits the
    heads and stays in a node).

    Rule: per GPU, (weights/TP + KV cache/TP) · (1 + overhead_fraction) + overhead_bytes_per_gpu
    must be ≤ gpu_memory_utilization · gpu_memory_bytes. TP is tried as 1, 2, 4, … up to
    the NVLink domain (``gpus_per_node``, or ``nvlink_gpus`` on a rack-scale system: tensor
    parallelism stays on NVLink), skipping degrees that
    do not divide the attention heads or cannot split/replicate the KV heads evenly. The
    smallest fitting TP wins (fewer GPUs per replica means more replicas for the same GPUs). If
    none fits, the largest valid TP is kept and layers are split into the fewest pipeline
    stages that fit, across nodes. Every expert of a mixture of experts is resident; a latent
    (MLA) cache is held whole by every tensor-parallel rank (vLLM's MLA backends). Served LoRA
    adapters are resident beside the base, split over TP like the layers they adapt.
    With ``attention_data_parallel`` each rank holds the attention weights whole and caches
    whole tokens (every head, or the latent) of 1/TP of the sequences.
    """
    require_positive(context_tokens=context_tokens, concurrency=concurrency)
    tokens = context_tokens * concurrency
    resident = model.params + (lora.resident_params if lora is not None else 0.0)
    fit = _Fit(model=model, budget=budget,
               weights=resident * precision_bytes(weight_precision),
               kv_value_bytes=precision_bytes(kv_precision), tokens=tokens,
               replicated=(model.attention_weights * precision_bytes(weight_precision)
                           if attention_data_parallel else 0.0),
               attention_dp=attention_data_parallel)
    notes: list[str] = []
    if pinned is not None:
        tp, pp = pinned
        fits = fit.fits(tp, pp)
        notes.append(f"layout pinned by the spec: TP {tp} x PP {pp}")
    else:
        tp, pp, fits = _choose_layout(
            fit, _tp_candidates(model, budget.tp_limit, notes), notes)
    kv_heads_gpu, replicas = _kv_heads_per_gpu(tp, model.kv_heads)
    if attention_data_parallel and tp > 1:
        kv_heads_gpu, replicas = model.kv_heads, 1
        notes.append(f"attention data parallelism: each of the {tp} GPUs caches whole tokens "
                     f"of 1/{tp} of the sequences and holds the attention weights "
                     f"({model.attention_weights / 1e9:.2f} billion parameters) whole")
    if replicas > 1:
        notes.append(
            f"tensor parallel {tp} > {model.kv_heads} KV heads: each KV head is replicated on "
            f"{replicas} GPUs, so the replica stores {replicas}× the model's KV cache"
        )
    if tp > 1 and budget.overhead_bytes_per_gpu < DEFAULT_OVERHEAD_BYTES_PER_GPU + 1.5 * GIB:
        notes.append(
            "at TP > 1 NCCL buffers add non-torch memory (vLLM measured 1.79 → 3.58 GiB for "
            "TP 1 → 2); consider a larger overhead_bytes_per_gpu"
        )
    g = fit.per_gpu(tp, pp)
    usable = budget.usable
    budget_kv = max(0.0, (usable - budget.overhead_bytes_per_gpu)
                    / (1 + budget.overhead_fraction) - g.weights)
    capacity = int(budget_kv // g.kv_per_token)
    gpus = tp * pp
    kv_total = model.layers * model.kv_values_per_token() * fit.kv_value_bytes * tokens
    return ReplicaLayout(
        tensor_parallel=tp,
        pipeline_parallel=pp,
        gpus=gpus,
        nodes=math.ceil(gpus / budget.gpus_per_node),
        fits=fits,
        weights_bytes=fit.weights,
        kv_cache_bytes=kv_total,
        weights_bytes_per_gpu=g.weights,
        kv_cache_bytes_per_gpu=g.kv,
        overhead_bytes_per_gpu=g.needed - g.weights - g.kv,
        needed_bytes_per_gpu=g.needed,
        usable_bytes_per_gpu=usable,
        kv_heads_per_gpu=kv_heads_gpu,
        kv_head_replicas=replicas,
        kv_budget_bytes_per_gpu=budget_kv,
        kv_token_capacity=capacity,
        max_concurrency=capacity // context_tokens,
        formula=(
            "smallest power-of-two TP ≤ gpus_per_node (dividing heads; KV heads split or "
            "replicated) with (weights/TP + KV/TP)·(1 + overhead_fraction) + "
            "overhead_bytes_per_gpu ≤ gpu_memory_utilization · gpu_memory_bytes; else "
            "pipeline stages (vLLM QKVParallelLinear, gpu_memory_utilization)"
        ),
        inputs={
            **_shape_inputs(model),
            "context_tokens": context_tokens,
            "concurrency": concurrency,
            "gpu_memory_bytes": budget.gpu_memory_bytes,
            "gpus_per_node": budget.gpus_per_node,
            "weight_precision": weight_precision,
            "kv_precision": kv_precision,
            "gpu_memory_utilization": budget.gpu_memory_utilization,
            "overhead_bytes_per_gpu": budget.overhead_bytes_per_gpu,
            "overhead_fraction": budget.overhead_fraction,
            "lora_adapters": lora.adapters if lora else 0,
            "lora_params_per_adapter": lora.params_per_adapter if lora else 0.0,
            # only when on: plans without it keep their recorded inputs
            **({"attention_data_parallel": True} if attention_data_parallel else {}),
        },
        notes=notes,
    )


# --- Decode and prefill -----------------------------------------------------------------


def _shape_inputs(model: ModelShape) -> dict[str, InputValue]:
    moe = model.moe
    return {
        "params": model.params,
        "active_params": model.active_params,
        "experts": moe.experts if moe else 1,
        "experts_per_token": moe.experts_per_token if moe else 1,
        "shared_experts": moe.shared_experts if moe else 0,
        "layers": model.layers,
        "hidden": model.hidden,
        "heads": model.heads,
        "kv_heads": model.kv_heads,
        "head_dim": model.dim_per_head,
        "kv_latent_dim": model.kv_latent_dim,
    }


@dataclass(frozen=True)
class _Step:
    weights_read_per_gpu: float
    kv_read_per_gpu: float
    memory_seconds: float
    compute_seconds: float
    stage_seconds: float
    step_seconds: float
    flops_per_token: float
    experts_touched: float


@dataclass(frozen=True)
class _Model:
    """Model, hardware and layout figures shared by the decode/prefill helpers."""

    shape: ModelShape
    weight_bytes: float
    kv_bytes: float
    bandwidth_bps: float
    peak_flops: float
    attention_peak_flops: float
    tp: int
    pp: int
    bandwidth_efficiency: float
    compute_efficiency: float
    tp_factor: float
    speculation: ServingEfficiency
    weight_precision: str
    kv_precision: str
    lora: LoraServing | None = None
    attention_dp: bool = False

    @property
    def layers(self) -> int:
        return self.shape.layers


def _decode_step(m: _Model, batch: int, context_tokens: float) -> _Step:
    # With pipeline stages the batch is split into pp micro-batches so every stage stays busy;
    # one sequence's token passes all pp stages in turn.
    shape = m.shape
    micro = math.ceil(batch / m.pp)
    stage_layers = math.ceil(shape.layers / m.pp)
    layer_share = stage_layers / shape.layers
    kv_heads_gpu, _ = _kv_heads_per_gpu(m.tp, shape.kv_heads)
    dp = m.attention_dp and m.tp > 1
    # Speculative decoding verifies γ + 1 positions per sequence in one step.
    spec = m.speculation
    positions = micro * (spec.draft_tokens + 1)
    # A mixture of experts streams the experts the micro-batch's tokens route to (shape.py).
    weights_read = shape.params_read(positions) * m.weight_bytes * layer_share / m.tp
    if dp:  # attention weights whole on every rank, the rest still split
        weights_read += shape.attention_weights * m.weight_bytes * layer_share * (1 - 1 / m.tp)
    if m.lora is not None:  # the distinct adapters this micro-batch's sequences use
        weights_read += (m.lora.touched(micro) * m.lora.params_per_adapter * m.weight_bytes
                         * layer_share / m.tp)
    kv_per_token = stage_layers * shape.kv_values_per_token(kv_heads_gpu) * m.kv_bytes
    if dp:  # each rank holds all heads (or the latent) of its micro / tp own sequences
        kv_per_token = stage_layers * shape.kv_values_per_token() * m.kv_bytes / m.tp
    kv_read = micro * context_tokens * kv_per_token
    memory_s = (weights_read + kv_read) / (m.bandwidth_bps * m.bandwidth_efficiency)
    # 2 FLOPs per active parameter, plus QK^T and AV over the cached context: 4·layers·ctx·d
    # (d: the decode attention width; MLA's absorbed latent is 4.25x GQA's at DeepSeek-V3).
    adapter_flops = 2 * m.lora.params_per_adapter if m.lora is not None else 0.0
    attention_flops = 4 * shape.layers * context_tokens * shape.decode_attention_dim
    flops_per_token = 2 * shape.flops_params + adapter_flops + attention_flops
    compute_s = positions * layer_share / m.tp * (
        (flops_per_token - attention_flops) / m.peak_flops
        + attention_flops / m.attention_peak_flops) / m.compute_efficiency
    stage_s = max(memory_s, compute_s) / m.tp_factor
    if shape.moe is not None:  # the per-layer kernels bind a small batch
        stage_s = max(stage_s, stage_layers * spec.moe_layer_floor)
    # Per output token: the target step plus γ draft steps of cost c, over the tokens kept.
    per_token = stage_s * m.pp * (1 + spec.draft_tokens * spec.draft_cost) / (
        spec.tokens_per_step)
    return _Step(
        weights_read_per_gpu=weights_read,
        kv_read_per_gpu=kv_read,
        memory_seconds=memory_s,
        compute_seconds=compute_s,
        stage_seconds=stage_s,
        step_seconds=per_token,
        flops_per_token=flops_per_token,
        experts_touched=shape.moe.experts_touched(positions) if shape.moe else 0.0,
    )


def _prefill(m: _Model, prompt_tokens: int) -> tuple[float, float, float]:
    """(FLOPs, compute seconds, memory seconds) of one prompt on one replica.

    Pipeline stages run one after another for a single prompt, so TTFT sees only TP GPUs.
    """
    shape = m.shape
    # Causal attention: QK^T and AV over the lower triangle, 2·layers·s²·(heads·head_dim);
    # with c cached prefix tokens only s − c are computed, attending to all before them:
    # 2·layers·(s² − c²)·d.
    cached = m.speculation.prefix_cache_hit * prompt_tokens
    flops = 2 * shape.flops_params * (prompt_tokens - cached) + (
        2 * shape.layers * (prompt_tokens**2 - cached**2) * shape.attention_dim
    )
    compute_s = flops / (m.tp * m.peak_flops * m.compute_efficiency * m.tp_factor)
    memory_s = (
        shape.params_read(prompt_tokens)
        * m.weight_bytes
        / m.tp
        / (m.bandwidth_bps * m.bandwidth_efficiency * m.tp_factor)
    )
    return flops, compute_s, memory_s


def _model(replica: Replica, *, pipeline: bool = True) -> _Model:
    hardware, model = replica.hardware, replica.model
    tp = replica.tensor_parallel
    pp = replica.pipeline_parallel if pipeline else 1
    require_positive(
        memory_bandwidth_bps=hardware.memory_bandwidth_bps,
        dense_tflops=hardware.dense_tflops,
        tensor_parallel=tp,
        pipeline_parallel=pp,
    )
    if not _tp_compatible(tp, model.heads, model.kv_heads):
        raise InputError(
            f"tensor_parallel {tp} cannot split {model.heads} heads / "
            f"{model.kv_heads} KV heads (fix: use a TP that divides the heads "
            "(see gpus_per_replica))"
        )
    if pp > model.layers:
        raise InputError(f"pipeline_parallel {pp} exceeds layers {model.layers}")
    # Prefill alone stores no KV cache of its own: its precision is the weights'.
    kv = replica.kv_precision if pipeline else replica.weight_precision
    return _Model(
        shape=model,
        weight_bytes=precision_bytes(replica.weight_precision),
        kv_bytes=precision_bytes(kv),
        bandwidth_bps=hardware.memory_bandwidth_bps,
        peak_flops=hardware.dense_tflops * 1e12,
        attention_peak_flops=(hardware.attention_tflops or hardware.dense_tflops) * 1e12,
        tp=tp,
        pp=pp,
        bandwidth_efficiency=replica.efficiency.bandwidth,
        compute_efficiency=(replica.efficiency.compute if replica.efficiency.compute is not None
                            else default_compute_efficiency(
                                replica.weight_precision, moe=model.moe is not None)),
        tp_factor=tp_factor(replica.efficiency.tensor_parallel, tp),
        speculation=replica.efficiency,
        weight_precision=replica.weight_precision,
        kv_precision=kv,
        lora=replica.lora,
        attention_dp=replica.efficiency.attention_data_parallel,
    )


def _model_inputs(m: _Model) -> dict[str, InputValue]:
    return {
        **_shape_inputs(m.shape),
        "weight_precision": m.weight_precision,
        "kv_precision": m.kv_precision,
        "memory_bandwidth_bps": m.bandwidth_bps,
        "dense_tflops": m.peak_flops / 1e12,
        **({"attention_tflops": m.attention_peak_flops / 1e12}
           if m.attention_peak_flops != m.peak_flops else {}),
        "tensor_parallel": m.tp,
        "pipeline_parallel": m.pp,
        "bandwidth_efficiency": m.bandwidth_efficiency,
        "compute_efficiency": m.compute_efficiency,
        "tp_efficiency": m.tp_factor,
        "draft_tokens": m.speculation.draft_tokens,
        "acceptance_rate": m.speculation.acceptance_rate,
        "draft_cost": m.speculation.draft_cost,
        "prefix_cache_hit": m.speculation.prefix_cache_hit,
        **({"moe_layer_floor_s": m.speculation.moe_layer_floor} if m.shape.moe else {}),
        "lora_adapters": m.lora.adapters if m.lora else 0,
        "lora_params_per_adapter": m.lora.params_per_adapter if m.lora else 0.0,
        **({"attention_data_parallel": True} if m.attention_dp else {}),
    }


class Decode(Result):
    batch: int
    context_tokens: float
    weights_read_bytes_per_gpu: float
    kv_read_bytes_per_gpu: float
    flops_per_token: float
    memory_seconds: float
    compute_seconds: float
    bound: Literal["memory", "compute"]
    time_per_output_token_seconds: float
    tokens_per_second_per_sequence: float
    tokens_per_second: float


def decode_throughput(replica: Replica, *, batch: int, context_tokens: float) -> Decode:
    """Decode speed at ``batch`` sequences of ``context_tokens`` cached tokens each.

    Per step and GPU: read weights/TP once (mixture of experts: the experts the batch touches)
    plus batch · context · KV bytes per token / TP; the step takes the longer of that over
    bandwidth · efficiency and the step's FLOPs over peak · compute efficiency, divided by
    the TP factor. ``memory_bandwidth_bps`` and ``dense_tflops`` are per GPU; ``context_tokens``
    is the mean cached length over the generation (prompt + output / 2), for which the mean
    step time is exact because step time is affine in the context.
    """
    require_positive(batch=batch)
    require_non_negative(context_tokens=context_tokens)
    m = _model(replica)
    s = _decode_step(m, batch, context_tokens)
    notes = []
    if m.pp > 1:
        notes.append(
            "pipeline stages: one token crosses every stage in turn, so per-sequence speed "
            "does not gain from them; the batch is split into micro-batches, one per stage"
        )
    if m.attention_dp and m.tp > 1:
        notes.append(
            f"attention data parallelism: each of the {m.tp} ranks reads only its own "
            f"{batch / m.tp:.4g} sequences' KV cache, with the attention weights whole "
            "(TensorRT-LLM enable_attention_dp)")
    inputs = _model_inputs(m)
    inputs.update({"batch": batch, "context_tokens": context_tokens})
    return Decode(
        batch=batch,
        context_tokens=context_tokens,
        weights_read_bytes_per_gpu=s.weights_read_per_gpu,
        kv_read_bytes_per_gpu=s.kv_read_per_gpu,
        flops_per_token=s.flops_per_token,
        memory_seconds=s.memory_seconds,
        compute_seconds=s.compute_seconds,
        bound="memory" if s.memory_seconds >= s.compute_seconds else "compute",
        time_per_output_token_seconds=s.step_seconds,
        tokens_per_second_per_sequence=1 / s.step_seconds,
        tokens_per_second=batch / s.step_seconds,
        formula=(
            "step = pp · max((weights_read/TP + batch·context·kv_bytes_per_token/TP) / "
            "(bandwidth · bandwidth_efficiency), batch·(2·active_params / peak + "
            "4·layers·context·attention_width / attention_peak)/TP / compute_efficiency) / "
            "tp_efficiency (attention_width: heads·head_dim, MLA's absorbed latent; "
            "attention_peak: at the KV cache's precision); a mixture of experts' step is at "
            "least layers·moe_layer_floor;"
            " tokens/s per sequence = 1/step, aggregate = batch/step (roofline; MBU as in "
            "Databricks 'LLM Inference Performance Engineering')"
        ),
        inputs=inputs,
        notes=notes,
    )


class Prefill(Result):
    prompt_tokens: int
    flops: float
    compute_seconds: float
    memory_seconds: float
    bound: Literal["memory", "compute"]
    ttft_seconds: float


def prefill_time(replica: Replica, *, prompt_tokens: int) -> Prefill:
    """Time to first token of one prompt on an idle replica (no queueing).

    FLOPs = 2 · active_params · prompt_tokens + 2 · layers · prompt_tokens² · heads · head_dim
    (causal attention), over TP GPUs at compute_efficiency · peak · tp_efficiency; a short
    prompt is bound instead by streaming the weights once. Pipeline stages run one after
    another for one prompt, so the replica's pipeline degree does not shorten it.
    """
    require_positive(prompt_tokens=prompt_tokens)
    m = _model(replica, pipeline=False)
    flops, compute_s, memory_s = _prefill(m, prompt_tokens)
    inputs = _model_inputs(m)
    del inputs["kv_precision"], inputs["pipeline_parallel"]
    inputs["prompt_tokens"] = prompt_tokens
    return Prefill(
        prompt_tokens=prompt_tokens,
        flops=flops,
        compute_seconds=compute_s,
        memory_seconds=memory_s,
        bound="compute" if compute_s >= memory_s else "memory",
        ttft_seconds=max(compute_s, memory_s),
        formula=(
            "max((2·active_params·s + 2·layers·s²·heads·head_dim) / (TP · peak · "
            "compute_efficiency · tp_efficiency), weights/TP / (bandwidth · "
            "bandwidth_efficiency · tp_efficiency))"
        ),
        inputs=inputs,
        notes=["excludes queueing, tokenisation and network time"],
    )


# --- Replicas for a latency SLO ---------------------------------------------------------


class SloSizing(Result):
    feasible: bool
    reasons: list[str]
    prefill_seconds: float
    ttft_seconds: float
    max_decode_tokens_per_second_per_user: float
    batch_per_replica: int
    decode_tokens_per_second_per_user: float
    request_seconds: float
    concurrency: float
    prefill_utilization: float
    replicas: int
    gpus: int


@dataclass(frozen=True)
class _SloPoint:
    replicas: int
    batch: int
    rho: float
    ttft: float
    rate: float
    request_seconds: float
    concurrency: float


def _replicas_at_batch(
    *,
    qps: float,
    prefill_s: float,
    output_tokens: int,
    rate: float,
    target_rate: float,
    rho_ttft_max: float,
    batch: int,
) -> _SloPoint:
    """Fewest replicas that keep ``batch`` sequences per replica within the SLO.

    Prefill work of λ/r requests per second takes ρ = λ·t_p/r of each replica's time and
    stretches decode to rate·(1 − ρ). Three floors on r: the per-user rate
    (r ≥ λ·t_p / (1 − target/rate)), the TTFT with M/D/1 queueing (ρ ≤ rho_ttft_max) and
    Little's law r·b ≥ λ·(ttft + out / (rate·(1 − ρ))). Every condition only gets easier as r
    grows, so the answer is bracketed in closed form and found by bisection.
    """
    lam, t_p, b = qps, prefill_s, batch

    def point(r: int) -> _SloPoint:
        rho = lam * t_p / r
        ttft = t_p * (1 + rho / (2 * (1 - rho)))
        eff_rate = rate * (1 - rho)
        request_s = ttft + output_tokens / eff_rate
        return _SloPoint(
            replicas=r,
            batch=b,
            rho=rho,
            ttft=ttft,
            rate=eff_rate,
            request_seconds=request_s,
            concurrency=lam * request_s,
        )

    def ok(r: int) -> bool:
        rho = lam * t_p / r
        if rho > rho_ttft_max or rate * (1 - rho) < target_rate:
            return False
        return r * b >= point(r).concurrency

    def little_root(ttft: float) -> float:
        # r·b ≥ λ·(ttft + out·r / (rate·(r − λ·t_p))) rearranged: b·r² − B·r + λ²·ttft·t_p ≥ 0
        big_b = b * lam * t_p + lam * ttft + lam * output_tokens / rate
        return (big_b + math.sqrt(big_b**2 - 4 * b * lam**2 * ttft * t_p)) / (2 * b)

    floors = (lam * t_p / (1 - target_rate / rate), lam * t_p / rho_ttft_max)
    # TTFT ≥ t_p, so Little's law with t_p gives a lower bound; the TTFT at that bound is the
    # worst any larger r sees, so Little's law with it gives an upper bound.
    lo = max(1, math.ceil(max(little_root(t_p), *floors) - 1e-9))
    hi = max(lo, math.ceil(little_root(point(lo).ttft)))
    while not ok(hi):  # float rounding only
        hi += 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return point(hi)


def replicas_for_slo(
    replica: Replica, traffic: Traffic, target: LatencyTarget, *, max_batch_per_replica: int,
) -> SloSizing:
    """Replicas of a given layout that serve ``qps`` within a TTFT and per-user decode SLO.

    Give the decode target as tokens/s per user or as time per output token. Steps: the
    largest batch whose per-user decode rate (at the mean context prompt + output/2) still
    meets the target bounds the search; for each batch up to it, the fewest replicas meeting
    the per-user rate with prefill interference, the TTFT with queueing and Little's law
    (concurrency = qps × request duration); the batch needing the fewest replicas wins (ties:
    the smaller batch, more headroom). ``max_batch_per_replica`` is the memory limit, e.g.
    ``gpus_per_replica(...).max_concurrency``. Infeasible when the prompt alone takes longer
    than the TTFT target or batch 1 decodes slower than the target on this hardware; then
    replicas and gpus are 0 and ``reasons`` says why.
    """
    qps, prompt_tokens, output_tokens = traffic.qps, traffic.prompt_tokens, traffic.output_tokens
    require_positive(qps=qps, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                      max_batch_per_replica=max_batch_per_replica)
    target_ttft_seconds = target.ttft_seconds
    m = _model(replica)
    context = prompt_tokens + output_tokens / 2
    _, prefill_compute, prefill_memory = _prefill(m, prompt_tokens)
    prefill_s = max(prefill_compute, prefill_memory)
    best_rate = 1 / _decode_step(m, 1, context).step_seconds

    reasons = _infeasible(m, traffic, target, prefill_s)
    inputs = _model_inputs(m)
    inputs.update(
        {
            "qps": qps,
            "prompt_tokens": prompt_tokens,
            "output_tokens": output_tokens,
            "target_ttft_seconds": target_ttft_seconds,
            "target_decode_tokens_per_second": target.decode_tokens_per_second,
            "target_tpot_seconds": target.tpot_seconds,
            "max_batch_per_replica": max_batch_per_replica,
        }
    )
    formula = (
        "per batch b ≤ largest meeting the per-user rate: fewest replicas r with "
        "rate(b)·(1 − ρ) ≥ target, ρ = qps·t_prefill/r, TTFT = t_prefill·(1 + ρ/(2(1 − ρ))) "
        "≤ target (M/D/1), r·b ≥ qps·(TTFT + output/(rate(b)·(1 − ρ))) (Little's law)"
    )
    notes = [
        "Poisson arrivals, prefill served one prompt at a time between decode steps; "
        "mean, not tail, latencies"
    ]
    if reasons:
        return SloSizing(
            feasible=False,
            reasons=reasons,
            prefill_seconds=prefill_s,
            ttft_seconds=prefill_s,
            max_decode_tokens_per_second_per_user=best_rate,
            batch_per_replica=0,
            decode_tokens_per_second_per_user=0.0,
            request_seconds=0.0,
            concurrency=0.0,
            prefill_utilization=0.0,
            replicas=0,
            gpus=0,
            formula=formula,
            inputs=inputs,
            notes=notes,
        )

    best = _best_batch(m, traffic, target, prefill_s, max_batch_per_replica)
    if best.batch == max_batch_per_replica:
        notes.append("batch limited by max_batch_per_replica (memory), not by the decode SLO")
    return SloSizing(
        feasible=True,
        reasons=[],
        prefill_seconds=prefill_s,
        ttft_seconds=best.ttft,
        max_decode_tokens_per_second_per_user=best_rate,
        batch_per_replica=best.batch,
        decode_tokens_per_second_per_user=best.rate,
        request_seconds=best.request_seconds,
        concurrency=best.concurrency,
        prefill_utilization=best.rho,
        replicas=best.replicas,
        gpus=best.replicas * m.tp * m.pp,
        formula=formula,
        inputs=inputs,
        notes=notes,
    )


def _infeasible(m: _Model, traffic: Traffic, target: LatencyTarget,
                prefill_s: float) -> list[str]:
    """Why no replica count meets the SLO: the prompt alone, or batch 1's decode rate."""
    reasons: list[str] = []
    if prefill_s >= target.ttft_seconds:
        reasons.append(
            f"prefill of {traffic.prompt_tokens} tokens alone takes {prefill_s:.3g} s on "
            f"{m.tp} GPU(s), not under the TTFT target {target.ttft_seconds:.3g} s (fix: "
            "a larger tensor-parallel degree, a faster GPU or FP8, or shorter prompts)"
        )
    step = _decode_step(m, 1, traffic.prompt_tokens + traffic.output_tokens / 2)
    best_rate = 1 / step.step_seconds
    if best_rate <= target.rate:
        reasons.append(
            f"even at batch 1 a decode step reads "
            f"{(step.weights_read_per_gpu + step.kv_read_per_gpu) / 1e9:.3g} GB per GPU: "
            f"at most {best_rate:.3g} tokens/s per user, not above the target "
            f"{target.rate:.3g} (fix: more tensor parallelism, lower-precision weights, "
            "or a GPU with more memory bandwidth)"
        )
    return reasons


def _best_batch(m: _Model, traffic: Traffic, target: LatencyTarget, prefill_s: float,
                max_batch: int) -> _SloPoint:
    """The batch per replica (1 … max_batch) that needs the fewest replicas."""
    a = target.ttft_seconds / prefill_s - 1
    rho_ttft_max = 2 * a / (1 + 2 * a)
    context = traffic.prompt_tokens + traffic.output_tokens / 2
    best: _SloPoint | None = None
    for b in range(1, max_batch + 1):
        rate = 1 / _decode_step(m, b, context).step_seconds
        if rate <= target.rate:
            break  # per-user rate only falls as the batch grows
        point = _replicas_at_batch(
            qps=traffic.qps,
            prefill_s=prefill_s,
            output_tokens=traffic.output_tokens,
            rate=rate,
            target_rate=target.rate,
            rho_ttft_max=rho_ttft_max,
            batch=b,
        )
        if best is None or point.replicas < best.replicas:
            best = point
    assert best is not None  # batch 1 passed the feasibility check (_infeasible)
    return best


# --- Batch (offline) inference ----------------------------------------------------------


class BatchInference(Result):
    replicas: int
    tokens: float
    prefill_seconds: float
    decode_seconds: float
    seconds: float
    tokens_per_second: float
    output_tokens_per_second: float


def batch_inference_duration(
    replica: Replica, *, requests: int, prompt_tokens: int, output_tokens: int, gpus: int,
    batch: int,
) -> BatchInference:
    """Wall time to run ``requests`` prompts through ``gpus`` GPUs kept at full ``batch``.

    Replicas = gpus // (TP · PP). Prefill FLOPs of all prompts run at compute efficiency on
    every GPU (pipeline stages overlap across prompts); decode produces output tokens at the
    aggregate rate of ``batch`` sequences of mean context prompt + output/2. Phases share the
    GPUs, so their times add. ``batch`` is the memory limit per replica
    (``gpus_per_replica(...).max_concurrency``); the tail where fewer than ``batch`` requests
    remain is ignored.
    """
    require_positive(
        requests=requests,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        gpus=gpus,
        batch=batch,
    )
    m = _model(replica)
    per_replica = m.tp * m.pp
    replicas = gpus // per_replica
    if replicas == 0:
        raise InputError(
            f"{gpus} GPU(s) cannot hold one replica of {per_replica} GPUs (TP {m.tp} × PP "
            f"{m.pp}) (fix: give at least {per_replica} GPUs)"
        )
    flops_per_prompt, _, _ = _prefill(m, prompt_tokens)
    replica_gpus = replicas * per_replica
    prefill_s = (
        requests
        * flops_per_prompt
        / (replica_gpus * m.peak_flops * m.compute_efficiency * m.tp_factor)
    )
    step = _decode_step(m, batch, prompt_tokens + output_tokens / 2)
    aggregate = replicas * batch / step.step_seconds
    decode_s = requests * output_tokens / aggregate
    total = prefill_s + decode_s
    tokens = float(requests * (prompt_tokens + output_tokens))
    notes = []
    if gpus % per_replica:
        notes.append(f"{gpus % per_replica} GPU(s) left idle: not enough for another replica")
    inputs = _model_inputs(m)
    inputs.update(
        {
            "requests": requests,
            "prompt_tokens": prompt_tokens,
            "output_tokens": output_tokens,
            "gpus": gpus,
            "batch": batch,
        }
    )
    return BatchInference(
        replicas=replicas,
        tokens=tokens,
        prefill_seconds=prefill_s,
        decode_seconds=decode_s,
        seconds=total,
        tokens_per_second=tokens / total,
        output_tokens_per_second=requests * output_tokens / total,
        formula=(
            "requests · prefill FLOPs / (GPUs · peak · compute_efficiency) + "
            "requests · output_tokens / (replicas · batch / decode step at full batch)"
        ),
        inputs=inputs,
        notes=notes,
    )
