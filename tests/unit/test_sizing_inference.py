"""Inference sizing checked against published figures and against the stated rules.

Model shapes are from the models' config.json files; GPU figures from NVIDIA's H100 SXM
datasheet (80 GB HBM3, 3.35 TB/s, 989 dense BF16 TFLOP/s).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiplat.errors import InputError
from aiplat.sizing.inference import (
    DEFAULT_COMPUTE_EFFICIENCY_16BIT,
    GIB,
    LatencyTarget,
    MemoryBudget,
    Replica,
    ServingEfficiency,
    ServingHardware,
    SloSizing,
    Traffic,
    batch_inference_duration,
    decode_throughput,
    gpus_per_replica,
    kv_cache,
    kv_cache_per_token,
    prefill_time,
    replicas_for_slo,
    weights_memory,
)
from aiplat.sizing.result import precision_bytes
from aiplat.sizing.shape import ModelShape, MoeShape

KIB = 2**10
MIB = 2**20

# Llama-3-8B / 70B: layers, hidden, heads, kv_heads (head_dim 128)
LLAMA3_8B: dict[str, Any] = {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8}
LLAMA3_8B_PARAMS = 8_030_261_248
LLAMA3_70B: dict[str, Any] = {"layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8}
LLAMA3_70B_PARAMS = 70.6e9
H100_BW = 3.35e12
H100_BF16_TFLOPS = 989.0
H100_MEMORY = 80 * GIB
H100 = ServingHardware(memory_bandwidth_bps=H100_BW, dense_tflops=H100_BF16_TFLOPS)
FULL_BW = ServingEfficiency(bandwidth=1.0)
TUNED_BW = ServingEfficiency(bandwidth=0.75)
M8B = ModelShape(params=LLAMA3_8B_PARAMS, **LLAMA3_8B)
M70B = ModelShape(params=LLAMA3_70B_PARAMS, **LLAMA3_70B)


# --- KV cache ---------------------------------------------------------------------------


def test_llama3_70b_kv_cache_is_320_kib_per_token() -> None:
    r = kv_cache_per_token(**LLAMA3_70B, kv_precision="bf16")
    assert r.head_dim == 128
    assert r.kv_bytes_per_token == 327_680 == 320 * KIB


def test_llama3_8b_kv_cache_is_128_kib_per_token() -> None:
    assert kv_cache_per_token(**LLAMA3_8B).kv_bytes_per_token == 128 * KIB


def test_llama_cpp_kv_allocation_at_2048_tokens() -> None:
    # llama.cpp's f16 KV allocation at n_ctx 2048, as tabulated in
    # huggingface.co/dranger003/c4ai-command-r-v01-iMat.GGUF/discussions/6:
    # Llama-3-8B 256 MiB, Llama-3-70B 640 MiB, Command-R 35B (no GQA: 64 KV heads) 2560 MiB.
    for shape, mib in (
        (LLAMA3_8B, 256),
        (LLAMA3_70B, 640),
        ({"layers": 40, "hidden": 8192, "heads": 64, "kv_heads": 64}, 2560),
    ):
        r = kv_cache(**shape, context_tokens=2048, concurrency=1, kv_precision="fp16")
        assert r.kv_cache_bytes == mib * MIB


def test_nvidia_blog_llama2_7b_batch1_4096_tokens_is_about_2_gb() -> None:
    # "Mastering LLM Techniques: Inference Optimization": 1 * 4096 * 2 * 32 * 4096 * 2 bytes,
    # "which is ~2 GB".
    r = kv_cache(layers=32, hidden=4096, heads=32, kv_heads=32, context_tokens=4096, concurrency=1)
    assert r.kv_bytes_per_token == 0.5 * MIB
    assert r.kv_cache_bytes == 1 * 4096 * 2 * 32 * 4096 * 2
    assert round(r.kv_cache_bytes / 1e9) == 2


def test_vllm_paper_opt_13b_800_kb_per_token_and_1_6_gb_per_request() -> None:
    # Kwon et al. 2023 §3: 2 × 5120 × 40 × 2 bytes = "800 KB"; 2048 tokens "as much as 1.6 GB".
    r = kv_cache(
        layers=40,
        hidden=5120,
        heads=40,
        kv_heads=40,
        context_tokens=2048,
        concurrency=1,
        kv_precision="fp16",
    )
    assert r.kv_bytes_per_token == 2 * 5120 * 40 * 2 == 800 * KIB
    assert r.kv_cache_bytes / 1e9 == pytest.approx(1.6, rel=0.06)


def test_fp8_kv_cache_halves_bf16() -> None:
    bf16 = kv_cache_per_token(**LLAMA3_70B).kv_bytes_per_token
    fp8 = kv_cache_per_token(**LLAMA3_70B, kv_precision="fp8").kv_bytes_per_token
    assert fp8 * 2 == bf16


def test_explicit_head_dim_overrides_hidden_over_heads() -> None:
    # A config whose head_dim (256) is not hidden / heads (3072 / 16 = 192).
    r = kv_cache_per_token(28, 3072, 16, 16, head_dim=256)
    assert r.head_dim == 256
    assert r.kv_bytes_per_token == 2 * 28 * 16 * 256 * 2


@given(
    context=st.integers(1, 200_000),
    concurrency=st.integers(1, 1_000),
    extra=st.integers(1, 1_000),
)
def test_kv_cache_grows_with_concurrency(context: int, concurrency: int, extra: int) -> None:
    small = kv_cache(**LLAMA3_70B, context_tokens=context, concurrency=concurrency)
    large = kv_cache(**LLAMA3_70B, context_tokens=context, concurrency=concurrency + extra)
    assert large.kv_cache_bytes > small.kv_cache_bytes


def test_bad_inputs_raise_actionable_errors() -> None:
    with pytest.raises(InputError, match="fix: use one of"):
        precision_bytes("fp12")
    with pytest.raises(InputError, match="kv_heads 5 must divide heads 32"):
        kv_cache_per_token(32, 4096, 32, 5)
    with pytest.raises(InputError, match="layers must be a positive finite number"):
        kv_cache_per_token(0, 4096, 32, 8)


# --- Weights and GPUs per replica -------------------------------------------------------


def test_llama3_8b_weights_match_vllm_log() -> None:
    # vLLM PR #10511 memory profile of meta-llama/Meta-Llama-3-8B: "model weights take 14.96GiB"
    r = weights_memory(LLAMA3_8B_PARAMS, "bf16")
    assert r.weights_bytes / GIB == pytest.approx(14.96, abs=0.005)


def test_vllm_kv_budget_for_llama3_8b_on_h100() -> None:
    # Same log: total 79.22 GiB × 0.90 = 71.29 GiB usable; weights 14.96, non-torch 1.79,
    # activation peak 1.26 GiB; "available_kv_cache_memory 53.29GiB".
    r = gpus_per_replica(
        ModelShape(params=LLAMA3_8B_PARAMS, **LLAMA3_8B),
        context_tokens=8192,
        concurrency=1,
        budget=MemoryBudget(
            gpu_memory_bytes=79.22 * GIB, overhead_bytes_per_gpu=(1.79 + 1.26) * GIB
        ),
    )
    assert r.tensor_parallel == 1
    assert r.usable_bytes_per_gpu / GIB == pytest.approx(71.29, abs=0.01)
    assert r.kv_budget_bytes_per_gpu / GIB == pytest.approx(53.29, abs=0.02)
    assert r.kv_token_capacity == int(r.kv_budget_bytes_per_gpu // (128 * KIB))


def test_llama3_70b_bf16_does_not_fit_one_80gb_gpu() -> None:
    w = weights_memory(LLAMA3_70B_PARAMS, "bf16").weights_bytes
    assert w / 1e9 == pytest.approx(141.2)
    assert w > 80 * GIB


def _need_per_gpu(weights: float, kv: float, tp: int, overhead: float) -> float:
    """The stated rule, written out independently: weights/TP + KV/TP + overhead per GPU."""
    return weights / tp + kv / tp + overhead


def test_llama3_70b_light_load_takes_tp2_heavy_load_tp4_on_h100() -> None:
    weights = LLAMA3_70B_PARAMS * 2
    usable = 0.9 * H100_MEMORY
    overhead = 3 * GIB

    light = gpus_per_replica(
        ModelShape(params=LLAMA3_70B_PARAMS, **LLAMA3_70B),
        context_tokens=4096,
        concurrency=1,
        budget=MemoryBudget(gpu_memory_bytes=H100_MEMORY),
    )
    kv_light = 4096 * 320 * KIB
    assert _need_per_gpu(weights, kv_light, 1, overhead) > usable
    assert _need_per_gpu(weights, kv_light, 2, overhead) <= usable
    assert (light.tensor_parallel, light.pipeline_parallel, light.gpus) == (2, 1, 2)

    heavy = gpus_per_replica(
        ModelShape(params=LLAMA3_70B_PARAMS, **LLAMA3_70B),
        context_tokens=8192,
        concurrency=32,
        budget=MemoryBudget(gpu_memory_bytes=H100_MEMORY),
    )
    kv_heavy = 32 * 8192 * 320 * KIB
    assert _need_per_gpu(weights, kv_heavy, 2, overhead) > usable
    assert _need_per_gpu(weights, kv_heavy, 4, overhead) <= usable
    assert (heavy.tensor_parallel, heavy.gpus, heavy.nodes) == (4, 4, 1)
    assert heavy.kv_cache_bytes == kv_heavy
    assert heavy.needed_bytes_per_gpu == pytest.approx(
        _need_per_gpu(weights, kv_heavy, 4, overhead)
    )
    assert heavy.fits
    assert heavy.max_concurrency >= 32


def test_llama31_405b_bf16_needs_two_nodes_fp8_fits_one() -> None:
    # 405B: 126 layers, hidden 16384, 128 heads, 8 KV heads. 810 GB of BF16 weights exceed
    # 8 × 80 GB, so tensor parallel 8 is kept and layers are pipelined over two nodes; Meta
    # published an FP8 checkpoint precisely so it fits one 8×H100 node.
    shape: dict[str, Any] = {"layers": 126, "hidden": 16384, "heads": 128, "kv_heads": 8}
    bf16 = gpus_per_replica(
        ModelShape(params=405e9, **shape),
        context_tokens=8192,
        concurrency=4,
        budget=MemoryBudget(gpu_memory_bytes=H100_MEMORY),
    )
    assert (bf16.tensor_parallel, bf16.pipeline_parallel, bf16.nodes) == (8, 2, 2)
    assert any("pipeline parallel" in n for n in bf16.notes)
    fp8 = gpus_per_replica(
        ModelShape(params=405e9, **shape),
        context_tokens=8192,
        concurrency=4,
        weight_precision="fp8",
        budget=MemoryBudget(gpu_memory_bytes=H100_MEMORY),
    )
    assert (fp8.tensor_parallel, fp8.pipeline_parallel, fp8.nodes) == (8, 1, 1)


def test_tp_above_kv_heads_replicates_them() -> None:
    # 32 query heads, 4 KV heads: at TP 8 each KV head lives on 2 GPUs (vLLM replication).
    r = gpus_per_replica(
        ModelShape(params=30e9, layers=48, hidden=4096, heads=32, kv_heads=4),
        context_tokens=32_768,
        concurrency=28,
        budget=MemoryBudget(gpu_memory_bytes=40 * GIB),
    )
    # TP 4: 15 GB weights + 22.5 GB KV + 3.2 GB overhead > 38.7 GB usable; TP 8 halves the
    # weights but, KV heads being replicated, not the KV cache.
    assert r.tensor_parallel == 8
    assert (r.kv_heads_per_gpu, r.kv_head_replicas) == (1, 2)
    # Replicated: each GPU holds a quarter of the KV heads' bytes, not an eighth.
    assert r.kv_cache_bytes_per_gpu == pytest.approx(r.kv_cache_bytes / 4)
    assert any("replicated" in n for n in r.notes)


def test_tp_that_does_not_divide_heads_is_skipped() -> None:
    # Qwen2.5-7B shape: 28 heads, 4 KV heads; TP 8 cannot split 28 heads.
    r = gpus_per_replica(
        ModelShape(params=7.6e9, layers=28, hidden=3584, heads=28, kv_heads=4),
        context_tokens=32_768,
        concurrency=64,
        budget=MemoryBudget(gpu_memory_bytes=24 * GIB),
    )
    assert r.tensor_parallel == 4
    assert r.pipeline_parallel > 1
    assert any("tensor parallel 8 skipped" in n for n in r.notes)


def test_layout_reports_when_nothing_fits() -> None:
    r = gpus_per_replica(
        ModelShape(params=1e9, **LLAMA3_8B),
        context_tokens=1024,
        concurrency=1,
        budget=MemoryBudget(gpu_memory_bytes=2 * GIB),
    )
    assert not r.fits
    assert any("(fix: " in n for n in r.notes)


@given(concurrency=st.integers(1, 512), extra=st.integers(1, 512))
def test_more_concurrency_never_needs_fewer_gpus(concurrency: int, extra: int) -> None:
    def layout(c: int) -> tuple[int, float]:
        r = gpus_per_replica(
            ModelShape(params=LLAMA3_70B_PARAMS, **LLAMA3_70B),
            context_tokens=4096,
            concurrency=c,
            budget=MemoryBudget(gpu_memory_bytes=H100_MEMORY),
        )
        return r.gpus, r.kv_cache_bytes

    gpus_small, kv_small = layout(concurrency)
    gpus_large, kv_large = layout(concurrency + extra)
    assert gpus_large >= gpus_small
    assert kv_large > kv_small


# --- Decode and prefill -----------------------------------------------------------------

DECODE_8B: dict[str, Any] = {"model": M8B, "hardware": H100}


def test_llama3_8b_decode_ceiling_on_h100_is_about_208_tokens_per_second() -> None:
    # 16.06 GB of weights streamed once per token at 3.35 TB/s.
    ceiling = H100_BW / (LLAMA3_8B_PARAMS * 2)
    assert ceiling == pytest.approx(208.6, abs=0.1)
    r = decode_throughput(Replica(**DECODE_8B, efficiency=FULL_BW), batch=1, context_tokens=0)
    assert r.bound == "memory"
    assert r.tokens_per_second_per_sequence == pytest.approx(ceiling)
    with_context = decode_throughput(
        Replica(**DECODE_8B, efficiency=FULL_BW), batch=1, context_tokens=8192
    )
    assert with_context.tokens_per_second_per_sequence < ceiling


def test_decode_scales_with_bandwidth_efficiency() -> None:
    full = decode_throughput(Replica(**DECODE_8B, efficiency=FULL_BW), batch=1, context_tokens=0)
    tuned = decode_throughput(Replica(**DECODE_8B, efficiency=TUNED_BW), batch=1, context_tokens=0)
    assert tuned.tokens_per_second == pytest.approx(0.75 * full.tokens_per_second)
    # MBU as Databricks defines it: bytes moved per token / TPOT / peak bandwidth.
    mbu = (tuned.weights_read_bytes_per_gpu + tuned.kv_read_bytes_per_gpu) / (
        tuned.time_per_output_token_seconds * H100_BW
    )
    assert mbu == pytest.approx(0.75)


def test_batching_trades_per_user_speed_for_aggregate_throughput() -> None:
    rates = [
        decode_throughput(Replica(**DECODE_8B), batch=b, context_tokens=2048)
        for b in (1, 8, 64, 256)
    ]
    per_user = [r.tokens_per_second_per_sequence for r in rates]
    aggregate = [r.tokens_per_second for r in rates]
    assert per_user == sorted(per_user, reverse=True)
    assert aggregate == sorted(aggregate)
    # At batch 1 the weights dominate; at 256 × 2048 tokens the KV cache (64 GiB) does.
    assert rates[0].weights_read_bytes_per_gpu > rates[0].kv_read_bytes_per_gpu
    assert rates[-1].kv_read_bytes_per_gpu > rates[-1].weights_read_bytes_per_gpu


def test_tensor_parallel_splits_reads_and_pays_its_factor() -> None:
    one = decode_throughput(Replica(**DECODE_8B), batch=1, context_tokens=0)
    two = decode_throughput(Replica(**DECODE_8B, tensor_parallel=2), batch=1, context_tokens=0)
    four = decode_throughput(Replica(**DECODE_8B, tensor_parallel=4), batch=1, context_tokens=0)
    # The factor compounds per doubling: 0.86 at TP2, 0.86² at TP4.
    assert two.tokens_per_second == pytest.approx(2 * 0.86 * one.tokens_per_second)
    assert four.tokens_per_second == pytest.approx(4 * 0.86**2 * one.tokens_per_second)


def test_large_batch_short_context_becomes_compute_bound() -> None:
    r = decode_throughput(Replica(**DECODE_8B), batch=4096, context_tokens=0)
    assert r.bound == "compute"


def test_moe_decode_reads_active_params_at_batch_1_and_all_experts_at_large_batch() -> None:
    # Mixtral 8x7B: 46.7B total, 12.9B active, 8 experts, top-2.
    mixtral = ModelShape(
        params=46.7e9,
        active_params=12.9e9,
        moe=MoeShape(8, 2),
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
    )
    moe: dict[str, Any] = {"model": mixtral, "hardware": H100, "tensor_parallel": 2}
    one = decode_throughput(Replica(**moe), batch=1, context_tokens=0)
    assert one.weights_read_bytes_per_gpu == pytest.approx(12.9e9 * 2 / 2)
    many = decode_throughput(Replica(**moe), batch=256, context_tokens=0)
    assert many.weights_read_bytes_per_gpu == pytest.approx(46.7e9 * 2 / 2, rel=1e-6)
    # Memory holds every expert regardless.
    assert weights_memory(46.7e9).weights_bytes == 46.7e9 * 2


def test_prefill_is_2_p_s_plus_causal_attention_over_compute() -> None:
    s = 4096
    r = prefill_time(
        Replica(
            model=M70B,
            hardware=H100,
            tensor_parallel=4,
            efficiency=ServingEfficiency(compute=0.5, tensor_parallel=0.9),
        ),
        prompt_tokens=s,
    )
    flops = 2 * LLAMA3_70B_PARAMS * s + 2 * 80 * s**2 * 64 * 128
    assert r.flops == pytest.approx(flops)
    assert r.bound == "compute"
    assert r.ttft_seconds == pytest.approx(flops / (4 * 989e12 * 0.5 * 0.9**2))  # TP4: 2 doublings


def test_one_token_prefill_is_bound_by_reading_weights() -> None:
    r = prefill_time(Replica(**DECODE_8B, efficiency=FULL_BW), prompt_tokens=1)
    assert r.bound == "memory"
    assert r.ttft_seconds == pytest.approx(LLAMA3_8B_PARAMS * 2 / H100_BW)


# --- Replicas for an SLO ----------------------------------------------------------------

SLO_70B: dict[str, Any] = {
    "model": M70B,
    "hardware": H100,
    "tensor_parallel": 4,
    "prompt_tokens": 2000,
    "output_tokens": 300,
    "target_ttft_seconds": 2.0,
    "target_decode_tokens_per_second": 20.0,
    "max_batch_per_replica": 200,
}


def _slo(qps: float, **override: Any) -> SloSizing:
    a = {**SLO_70B, **override}
    replica = Replica(
        model=a["model"], hardware=a["hardware"], tensor_parallel=a["tensor_parallel"]
    )
    target = LatencyTarget(
        ttft_seconds=a["target_ttft_seconds"],
        decode_tokens_per_second=a.get("target_decode_tokens_per_second"),
        tpot_seconds=a.get("target_tpot_seconds"),
    )
    return replicas_for_slo(
        replica,
        Traffic(qps, a["prompt_tokens"], a["output_tokens"]),
        target,
        max_batch_per_replica=a["max_batch_per_replica"],
    )


def test_slo_sizing_meets_its_own_constraints() -> None:
    r = _slo(20)
    assert r.feasible and not r.reasons
    assert r.ttft_seconds <= 2.0
    assert r.decode_tokens_per_second_per_user >= 20.0
    assert r.replicas * r.batch_per_replica >= r.concurrency  # Little's law
    assert r.concurrency == pytest.approx(20 * r.request_seconds)
    assert r.gpus == 4 * r.replicas


def test_slo_one_replica_fewer_breaks_a_stated_constraint() -> None:
    qps = 20.0
    r = _slo(qps)
    assert r.replicas > 1
    # Rebuild the rule by hand at r − 1 replicas and the chosen batch.
    rate = decode_throughput(
        Replica(model=M70B, hardware=H100, tensor_parallel=4),
        batch=r.batch_per_replica,
        context_tokens=2000 + 300 / 2,
    ).tokens_per_second_per_sequence
    fewer = r.replicas - 1
    rho = qps * r.prefill_seconds / fewer
    ttft = r.prefill_seconds * (1 + rho / (2 * (1 - rho))) if rho < 1 else math.inf
    user_rate = rate * (1 - rho)
    little_ok = fewer * r.batch_per_replica >= qps * (ttft + 300 / user_rate)
    assert not (ttft <= 2.0 and user_rate >= 20.0 and little_ok)


def test_slo_replicas_grow_with_qps() -> None:
    replicas = [_slo(q).replicas for q in (0.5, 2, 8, 32, 128)]
    assert replicas == sorted(replicas)
    assert replicas[-1] > replicas[0]


def test_slo_tpot_target_equals_rate_target() -> None:
    by_rate = _slo(10)
    by_tpot = _slo(10, target_decode_tokens_per_second=None, target_tpot_seconds=0.05)
    assert by_tpot.replicas == by_rate.replicas


def test_slo_infeasible_decode_rate_says_why() -> None:
    # Batch-1 ceiling of 70B on 4 × H100 is ~3.35e12·4·0.75·0.9 / 141 GB ≈ 64 tokens/s.
    r = _slo(1, target_decode_tokens_per_second=200.0)
    assert not r.feasible
    assert r.replicas == 0 and r.gpus == 0
    assert r.max_decode_tokens_per_second_per_user < 200
    assert any("even at batch 1" in reason for reason in r.reasons)


def test_slo_infeasible_ttft_says_why() -> None:
    # 32k-token prompt: 2·70.6e9·32768 + attention ≈ 5.3e15 FLOPs ≈ 3 s on 4 GPUs at 50 % MFU.
    r = _slo(1, prompt_tokens=32_768)
    assert not r.feasible
    assert r.prefill_seconds > 2.0
    assert any("TTFT target" in reason for reason in r.reasons)


def test_slo_needs_exactly_one_decode_target() -> None:
    with pytest.raises(InputError, match="exactly one"):
        _slo(1, target_tpot_seconds=0.05)


# --- Batch inference --------------------------------------------------------------------


def test_batch_inference_duration_is_tokens_over_throughput() -> None:
    common: dict[str, Any] = {
        "requests": 100_000,
        "prompt_tokens": 1000,
        "output_tokens": 200,
        "batch": 128,
    }
    r8 = batch_inference_duration(Replica(**DECODE_8B), **common, gpus=8)
    r64 = batch_inference_duration(Replica(**DECODE_8B), **common, gpus=64)
    assert r8.replicas == 8 and r64.replicas == 64
    assert r8.tokens == 100_000 * 1200
    assert r64.seconds == pytest.approx(r8.seconds / 8)
    # Decode part: output tokens over the aggregate rate of full batches on every replica.
    step = decode_throughput(Replica(**DECODE_8B), batch=128, context_tokens=1100)
    assert r8.decode_seconds == pytest.approx(100_000 * 200 / (8 * step.tokens_per_second))
    prefill_flops = 100_000 * (2 * LLAMA3_8B_PARAMS * 1000 + 2 * 32 * 1000**2 * 32 * 128)
    assert r8.prefill_seconds == pytest.approx(
        prefill_flops / (8 * 989e12 * DEFAULT_COMPUTE_EFFICIENCY_16BIT)
    )


def test_batch_inference_leaves_remainder_gpus_idle() -> None:
    r = batch_inference_duration(
        Replica(**DECODE_8B, tensor_parallel=4),
        requests=1000,
        prompt_tokens=500,
        output_tokens=500,
        batch=64,
        gpus=10,
    )
    assert r.replicas == 2
    assert any("idle" in n for n in r.notes)
    assert math.isfinite(r.seconds)


def test_speculative_decoding_matches_leviathans_improvement_factor() -> None:
    """Leviathan et al. 2023 (arXiv:2211.17192), Theorem 3.8: the walltime improvement is
    (1 − α^(γ+1)) / ((1 − α)(γc + 1)) when verifying γ + 1 tokens costs one target step, which
    holds while decode is memory-bound (batch 1 here). At a compute-bound batch the gain falls
    below it: verification multiplies the FLOPs."""
    spec = ServingEfficiency(draft_tokens=4, acceptance_rate=0.7, draft_cost=0.05)
    factor = (1 - 0.7**5) / ((1 - 0.7) * (4 * 0.05 + 1))
    base = decode_throughput(Replica(**DECODE_8B), batch=1, context_tokens=1000)
    fast = decode_throughput(Replica(**DECODE_8B, efficiency=spec), batch=1, context_tokens=1000)
    assert fast.tokens_per_second_per_sequence == pytest.approx(
        factor * base.tokens_per_second_per_sequence
    )
    busy = decode_throughput(Replica(**DECODE_8B), batch=1024, context_tokens=0)
    busy_fast = decode_throughput(
        Replica(**DECODE_8B, efficiency=spec), batch=1024, context_tokens=0
    )
    assert busy.bound == "compute"
    assert busy_fast.tokens_per_second < factor * busy.tokens_per_second


def test_prefix_cache_hits_are_not_recomputed() -> None:
    """A cached prefix of c = h·s tokens skips its 2·P·c FLOPs; the s − c new tokens still
    attend to everything before them: 2·layers·(s² − c²)·d of causal attention."""
    s, h = 4096, 0.75
    cached = ServingEfficiency(compute=0.5, tensor_parallel=0.9, prefix_cache_hit=h)
    r = prefill_time(
        Replica(model=M70B, hardware=H100, tensor_parallel=4, efficiency=cached), prompt_tokens=s
    )
    c = h * s
    flops = 2 * LLAMA3_70B_PARAMS * (s - c) + 2 * 80 * (s**2 - c**2) * 64 * 128
    assert r.flops == pytest.approx(flops)
    full = prefill_time(
        Replica(
            model=M70B,
            hardware=H100,
            tensor_parallel=4,
            efficiency=ServingEfficiency(compute=0.5, tensor_parallel=0.9),
        ),
        prompt_tokens=s,
    )
    assert r.ttft_seconds < 0.5 * full.ttft_seconds
