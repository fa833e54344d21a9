"""Published serving measurements the default serving efficiencies are fitted to.

Design. Each ``Measurement`` is one published figure with the setting it was taken in (model
shape from the model's config.json, GPU, precision, tensor parallelism, batch or concurrency,
prompt and output lengths) and its source. ``predict`` runs the same roofline
(``sizing.inference``) on that setting, so the defaults in ``sizing.inference`` can be refitted
(``fit``, coordinate descent over bandwidth, 8-bit compute, 16-bit compute and TP
efficiency) and every figure is a test (tests/unit/test_sizing_calibration.py) that says how far
the model is from it.

Three kinds of figure, each with the benchmark's own timing rule:

- ``itl_ms``: inter-token latency at concurrency 1 (NIM's AIPerf tables): one decode step at
  the mean context, prompt + output/2.
- ``ttft_ms``: first-token latency of one prompt on an idle server.
- ``latency_ms`` and ``out_tokens_per_s_per_gpu``: a static batch (vLLM ``benchmark_latency``,
  TensorRT-LLM ``gptSessionBenchmark``): the batch's prompts prefill together, then
  output − 1 decode steps at the mean context; throughput is batch · output over that time,
  per GPU.

A mixture of experts served at scale is fitted apart (``MOE``, ``fit_moe_share``): one
factor, ``DEFAULT_MOE_COMPUTE_SHARE`` of the dense compute efficiency, over TensorRT-LLM's
three published DeepSeek-R1 max-throughput figures (H200 FP8, B200 NVFP4 with FP8 and with
BF16 KV cache; attention data parallelism as the blog's configs set it). The dense fit
keeps its own figures; its one MoE figure (Mixtral, batch 8) is bound by memory either way.

Model shapes come from the catalog (aiplat/catalog/data/models.yaml, each with its
config.json source); Falcon-180B's stays here (see ``FALCON_180B``).

Left out, with the reason: TensorRT-LLM v0.6.1's long-output LLaMA-70B and Falcon-180B rows
(128/2048 and 2048/2048 at TP2-8) imply 27-40 % bandwidth utilisation, below anything the
NIM 1.8 and vLLM figures of the same GPUs and models show; fitting to them would make every
current stack look half as fast. Their errors are ``EXCLUDED`` for the record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import product
from typing import Literal

from aiplat.catalog import load_catalog
from aiplat.sizing.inference import (
    DEFAULT_MOE_COMPUTE_SHARE,
    Replica,
    ServingEfficiency,
    ServingHardware,
    decode_throughput,
    default_compute_efficiency,
    prefill_time,
)
from aiplat.sizing.result import precision_bytes
from aiplat.sizing.shape import MlaShape, ModelShape, MoeShape

Metric = Literal["itl_ms", "ttft_ms", "latency_ms", "out_tokens_per_s_per_gpu"]


def catalog_shape(name: str) -> ModelShape:
    """The shape of a catalog model (its config.json, source in the catalog entry)."""
    m = load_catalog().model(name)
    if m is None:
        raise KeyError(f"calibration model {name!r} is not in the catalog")
    moe = MoeShape(m.experts, m.experts_per_token, m.shared_experts) if m.experts > 1 else None
    latent = m.mla.kv_lora_rank + m.mla.qk_rope_head_dim if m.mla else None
    return ModelShape(params=m.params, layers=m.layers, hidden=m.hidden, heads=m.heads,
                      kv_heads=m.kv_heads, head_dim=m.head_dim,
                      active_params=m.active_params if moe else None, moe=moe,
                      kv_latent_dim=latent, ffn_hidden=m.ffn_hidden,
                      kv_lora_rank=m.mla.kv_lora_rank if m.mla else None,
                      expert_ffn_hidden=m.expert_ffn_hidden if moe else None,
                      attention_params=(m.layers * MlaShape(
                                          m.mla.q_lora_rank, m.mla.kv_lora_rank,
                                          m.mla.qk_nope_head_dim, m.mla.qk_rope_head_dim,
                                          m.mla.v_head_dim).attention_params(m.hidden, m.heads)
                                        if m.mla else None))


LLAMA2_7B = catalog_shape("llama-2-7b")
LLAMA2_70B = catalog_shape("llama-2-70b")
LLAMA3_8B = catalog_shape("llama-3-8b")
LLAMA3_70B = catalog_shape("llama-3-70b")
MIXTRAL_8X7B = catalog_shape("mixtral-8x7b")
DEEPSEEK_V3 = catalog_shape("deepseek-v3")
# Falcon-180B stays inline: its GELU MLP (4h, two matrices) and tied embeddings are outside
# the catalog's SwiGLU/classic parameter-count conventions (tests/unit/test_catalog.py).
# tiiuae/falcon-180B config.json: num_hidden_layers 80, hidden_size 14848, num_attention_heads
# 232, num_kv_heads 8 (head dim 64); 179.5B parameters as the model card's count.
FALCON_180B = ModelShape(params=179.5e9, layers=80, hidden=14848, heads=232, kv_heads=8,
                         head_dim=64)

# Datasheet rooflines: H100 SXM 3.35 TB/s, 989 BF16 / 1979 FP8 dense TFLOP/s; H200 4.8 TB/s.
H100_FP8 = ServingHardware(memory_bandwidth_bps=3.35e12, dense_tflops=1979)
H200_BF16 = ServingHardware(memory_bandwidth_bps=4.8e12, dense_tflops=989)
A100_FP16 = ServingHardware(memory_bandwidth_bps=2.039e12, dense_tflops=312)
H200_FP8 = ServingHardware(memory_bandwidth_bps=4.8e12, dense_tflops=1979)
H200_FP8_BF16_KV = ServingHardware(memory_bandwidth_bps=4.8e12, dense_tflops=1979,
                                   attention_tflops=989)
# B200 (HGX, 1,000 W): 8 TB/s, NVFP4 9,000 dense TFLOP/s (144 PFLOPS sparse per 8 GPUs).
B200_FP4_FP8_KV = ServingHardware(memory_bandwidth_bps=8.0e12, dense_tflops=9000,
                                  attention_tflops=4500)
B200_FP4_BF16_KV = ServingHardware(memory_bandwidth_bps=8.0e12, dense_tflops=9000,
                                   attention_tflops=2250)

NIM = ("NVIDIA NIM LLM benchmarking, Performance, Llama-3.3-70b-instruct NIM 1.8.0, 2 x H100 "
       "80G, fp8 TP2 (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance)")
VLLM = ("vLLM nightly performance benchmark, latency tests: batch 8, 32 input / 128 output "
        "tokens, H200 (buildkite.com/vllm/performance-benchmark/builds/9515)")
TRT_PEAK = ("TensorRT-LLM docs/source/performance.md (v0.6.1), Peak Throughput, H100 GPUs "
            "(FP8, FP8 KV cache), out tok/s/GPU")
TRT_PEAK_A100 = ("TensorRT-LLM docs/source/performance.md (v0.6.1), Peak Throughput, A100 GPUs "
                 "(FP16), out tok/s (TP 1 rows)")
TRT_LATENCY_A100 = ("TensorRT-LLM docs/source/performance.md (v0.5), Low Latency, A100 GPUs "
                    "(FP16), batch 1, 1st token latency")
TRT_DEEPSEEK_H200 = (
    "TensorRT-LLM docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md, "
    "H200 max-throughput: deepseek-ai/DeepSeek-R1 (FP8 weights, KV cache at the checkpoint's "
    "BF16), 8 x H200, tp 8 / ep 8 with attention data parallelism, concurrency 1024, ISL 1K / "
    "OSL 2K: Per GPU Output Throughput 1436.1584 tokens/sec/gpu")
TRT_DEEPSEEK_B200 = (
    "TensorRT-LLM docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md, "
    "B200 max-throughput, 8 x B200, tp 8 / ep 8, enable_attention_dp: true, ISL 1K / OSL 2K, "
    "synthetic dataset, commit b6261862: ")
TRT_LATENCY = ("TensorRT-LLM docs/source/performance.md (v0.5), Low Latency, H100 GPUs (FP8), "
               "batch 1, 1st token latency")


@dataclass(frozen=True)
class Measurement:
    name: str
    source: str
    model: ModelShape
    hardware: ServingHardware
    precision: str
    tensor_parallel: int
    batch: int
    prompt_tokens: int
    output_tokens: int
    metric: Metric
    value: float
    kv_precision: str | None = None
    """The KV cache's precision where it differs from the weights'."""
    attention_data_parallel: bool = False
    """The stack ran attention data parallel (TensorRT-LLM enable_attention_dp)."""


Setting = tuple[ModelShape, ServingHardware, str]
"""Model, GPU and the precision of weights and KV cache."""


def _m(name: str, source: str, setting: Setting, layout: tuple[int, int, int, int],
       figure: tuple[Metric, float]) -> Measurement:
    """``layout`` is (TP, batch or concurrency, prompt tokens, output tokens)."""
    model, hw, precision = setting
    tp, batch, prompt, output = layout
    metric, value = figure
    return Measurement(name, source, model, hw, precision, tp, batch, prompt, output, metric,
                       value)


L2_7B_H100: Setting = (LLAMA2_7B, H100_FP8, "fp8")
L2_70B_H100: Setting = (LLAMA2_70B, H100_FP8, "fp8")
F180B_H100: Setting = (FALCON_180B, H100_FP8, "fp8")
L3_70B_H100: Setting = (LLAMA3_70B, H100_FP8, "fp8")
L3_8B_H200: Setting = (LLAMA3_8B, H200_BF16, "bf16")
L3_70B_H200: Setting = (LLAMA3_70B, H200_BF16, "bf16")
MIXTRAL_H200: Setting = (MIXTRAL_8X7B, H200_BF16, "bf16")
L2_7B_A100: Setting = (LLAMA2_7B, A100_FP16, "fp16")
L2_70B_A100: Setting = (LLAMA2_70B, A100_FP16, "fp16")

MEASUREMENTS: tuple[Measurement, ...] = (
    _m("nim-70b-tp2-itl-5000-500", NIM, L3_70B_H100, (2, 1, 5000, 500),
       ("itl_ms", 18.58)),
    _m("nim-70b-tp2-itl-500-2000", NIM, L3_70B_H100, (2, 1, 500, 2000),
       ("itl_ms", 18.91)),
    _m("nim-70b-tp2-ttft-5000", NIM, L3_70B_H100, (2, 1, 5000, 500),
       ("ttft_ms", 406.77)),
    _m("nim-70b-tp2-ttft-500", NIM, L3_70B_H100, (2, 1, 500, 2000),
       ("ttft_ms", 47.77)),
    _m("vllm-h200-llama8b-tp1-b8", VLLM, L3_8B_H200, (1, 8, 32, 128),
       ("latency_ms", 833.42)),
    _m("vllm-h200-llama70b-tp4-b8", VLLM, L3_70B_H200, (4, 8, 32, 128),
       ("latency_ms", 2077.53)),
    _m("vllm-h200-mixtral-tp2-b8", VLLM, MIXTRAL_H200, (2, 8, 32, 128),
       ("latency_ms", 1917.44)),
    _m("trt-7b-tp1-b768-128-128", TRT_PEAK, L2_7B_H100, (1, 768, 128, 128),
       ("out_tokens_per_s_per_gpu", 19694)),
    _m("trt-7b-tp1-b112-128-2048", TRT_PEAK, L2_7B_H100, (1, 112, 128, 2048),
       ("out_tokens_per_s_per_gpu", 6818)),
    _m("trt-7b-tp1-b80-2048-128", TRT_PEAK, L2_7B_H100, (1, 80, 2048, 128),
       ("out_tokens_per_s_per_gpu", 2244)),
    _m("trt-7b-tp1-b48-2048-2048", TRT_PEAK, L2_7B_H100, (1, 48, 2048, 2048),
       ("out_tokens_per_s_per_gpu", 2740)),
    _m("trt-70b-tp2-b1024-128-128", TRT_PEAK, L2_70B_H100, (2, 1024, 128, 128),
       ("out_tokens_per_s_per_gpu", 2657)),
    _m("trt-70b-tp2-b96-2048-128", TRT_PEAK, L2_70B_H100, (2, 96, 2048, 128),
       ("out_tokens_per_s_per_gpu", 306)),
    _m("trt-180b-tp4-b1024-128-128", TRT_PEAK, F180B_H100, (4, 1024, 128, 128),
       ("out_tokens_per_s_per_gpu", 987)),
    _m("trt-180b-tp4-b64-2048-128", TRT_PEAK, F180B_H100, (4, 64, 2048, 128),
       ("out_tokens_per_s_per_gpu", 112)),
    _m("trt-7b-tp1-ttft-2048", TRT_LATENCY, L2_7B_H100, (1, 1, 2048, 1),
       ("ttft_ms", 36)),
    _m("trt-70b-tp4-ttft-2048", TRT_LATENCY, L2_70B_H100, (4, 1, 2048, 1),
       ("ttft_ms", 109)),
    _m("a100-7b-tp1-b384-128-128", TRT_PEAK_A100, L2_7B_A100, (1, 384, 128, 128),
       ("out_tokens_per_s_per_gpu", 5586)),
    _m("a100-7b-tp1-b60-128-2048", TRT_PEAK_A100, L2_7B_A100, (1, 60, 128, 2048),
       ("out_tokens_per_s_per_gpu", 1928)),
    _m("a100-7b-tp1-b52-2048-128", TRT_PEAK_A100, L2_7B_A100, (1, 52, 2048, 128),
       ("out_tokens_per_s_per_gpu", 591)),
    _m("a100-7b-tp1-ttft-2048", TRT_LATENCY_A100, L2_7B_A100, (1, 1, 2048, 1),
       ("ttft_ms", 133)),
    _m("a100-70b-tp4-ttft-2048", TRT_LATENCY_A100, L2_70B_A100, (4, 1, 2048, 1),
       ("ttft_ms", 377)),
    _m("trt-180b-tp8-ttft-2048", TRT_LATENCY, F180B_H100, (8, 1, 2048, 1),
       ("ttft_ms", 205)),
)

EXCLUDED: tuple[Measurement, ...] = (
    _m("trt-70b-tp4-b480-128-2048", TRT_PEAK, L2_70B_H100, (4, 480, 128, 2048),
       ("out_tokens_per_s_per_gpu", 1486)),
    _m("trt-70b-tp2-b64-2048-2048", TRT_PEAK, L2_70B_H100, (2, 64, 2048, 2048),
       ("out_tokens_per_s_per_gpu", 547)),
    _m("trt-180b-tp8-b1024-128-2048", TRT_PEAK, F180B_H100, (8, 1024, 128, 2048),
       ("out_tokens_per_s_per_gpu", 724)),
)


def _deepseek(name: str, source: str, setting: tuple[ServingHardware, str, str],
              concurrency: int, value: float) -> Measurement:
    """DeepSeek-R1 at TP8 / EP8 with attention DP, 1K in / 2K out; ``setting`` = (hardware,
    weight precision, KV precision)."""
    hw, precision, kv = setting
    return Measurement(name, source, DEEPSEEK_V3, hw, precision, 8, concurrency, 1024, 2048,
                       "out_tokens_per_s_per_gpu", value, kv_precision=kv,
                       attention_data_parallel=True)


MOE: tuple[Measurement, ...] = (
    _deepseek("trt-deepseek-r1-h200-fp8-c1024-1k-2k", TRT_DEEPSEEK_H200,
              (H200_FP8_BF16_KV, "fp8", "bf16"), 1024, 1436.16),
    _deepseek("trt-deepseek-r1-b200-fp4-fp8kv-c7168-1k-2k", TRT_DEEPSEEK_B200 + (
        "nvidia/DeepSeek-R1-0528-FP4, kv_cache_dtype fp8, concurrency 7168 (max_batch_size "
        "896 per rank): Per GPU Output Throughput 5393.2755 tps/gpu"),
              (B200_FP4_FP8_KV, "fp4", "fp8"), 7168, 5393.28),
    _deepseek("trt-deepseek-r1-b200-fp4-bf16kv-c3072-1k-2k", TRT_DEEPSEEK_B200 + (
        "nvidia/DeepSeek-R1-FP4, FP16 KV cache, concurrency 3072 (max_batch_size 384 per "
        "rank): Per GPU Output Throughput 4548.0105 tps/gpu"),
              (B200_FP4_BF16_KV, "fp4", "bf16"), 3072, 4548.01),
)
"""A DeepSeek-V3-class mixture of experts (R1 shares V3's architecture) at the scale it is
served, TP8 / EP8 with attention data parallelism (128, 896 and 384 sequences per rank, no
MTP in these runs), fitted by ``fit_moe_share``: −7 %, +12 %, −4 % at the default. At the
dense compute efficiency the roofline is 42 %, 161 % and 124 % over them: what it leaves out
(ranks waiting for the slowest, the expert AllGather/ReduceScatter, expert imbalance,
CUDA-graph padding) is what ``DEFAULT_MOE_COMPUTE_SHARE`` lumps, each with its source there.

Not used: TensorRT-LLM's ADP balance blog (tech_blog/blog10, 8 x GB200, DeepSeek V3, a real
dataset of 803 / 3,653 mean tokens, 25,664 "TPS"): it states neither the precision, the KV
cache's, whether TPS counts output or all tokens, nor the concurrency; what it measures
within one run (35 % lost to ranks waiting for the slowest, 33 % regained by balancing) is
in the plan's warning on attention data parallelism."""


def moe_errors(share: float) -> list[float]:
    """Each ``MOE`` figure's error with the MoE compute efficiency at ``share`` of the dense."""
    out = []
    for m in MOE:
        c = default_compute_efficiency(m.precision) * share
        out.append(error(m, ServingEfficiency(compute=c)))
    return out


def fit_moe_share(step: float = 0.01) -> tuple[float, float]:
    """The share in (0, 1] minimising the RMS log error over ``MOE``: (RMS, share)."""
    def rms(share: float) -> float:
        return math.sqrt(sum(math.log1p(e) ** 2 for e in moe_errors(share)) / len(MOE))
    grid = [round(step * k, 4) for k in range(1, round(1 / step) + 1)]
    best = min(grid, key=rms)
    return rms(best), best


def _replica(m: Measurement, eff: ServingEfficiency) -> Replica:
    if m.attention_data_parallel:
        eff = replace(eff, attention_data_parallel=True)
    return Replica(model=m.model, hardware=m.hardware, weight_precision=m.precision,
                   kv_precision=m.kv_precision or m.precision,
                   tensor_parallel=m.tensor_parallel, efficiency=eff)


def _prefill_seconds(m: Measurement, eff: ServingEfficiency) -> float:
    """A batch of prompts prefilled together: compute adds up, the weights are read once."""
    p = prefill_time(_replica(m, eff), prompt_tokens=m.prompt_tokens)
    return max(m.batch * p.compute_seconds, p.memory_seconds)


def _decode_seconds(m: Measurement, eff: ServingEfficiency, batch: int) -> float:
    d = decode_throughput(_replica(m, eff), batch=batch,
                          context_tokens=m.prompt_tokens + m.output_tokens / 2)
    return d.time_per_output_token_seconds


def predict(m: Measurement, eff: ServingEfficiency | None = None) -> float:
    """The model's figure for ``m``'s setting, in ``m.metric``'s unit."""
    e = eff or ServingEfficiency()
    if m.metric == "itl_ms":
        return _decode_seconds(m, e, 1) * 1000
    if m.metric == "ttft_ms":
        return _prefill_seconds(m, e) * 1000
    total = _prefill_seconds(m, e) + (m.output_tokens - 1) * _decode_seconds(m, e, m.batch)
    if m.metric == "latency_ms":
        return total * 1000
    return m.batch * m.output_tokens / total / m.tensor_parallel


def error(m: Measurement, eff: ServingEfficiency | None = None) -> float:
    """Relative error of the predicted figure: +0.1 is 10 % above the published one."""
    return predict(m, eff) / m.value - 1


def rms_log_error(eff: ServingEfficiency | None = None,
                  measurements: tuple[Measurement, ...] = MEASUREMENTS) -> float:
    """Root mean square of ln(predicted / published): symmetric in over and under."""
    return math.sqrt(sum(math.log(predict(m, eff) / m.value) ** 2 for m in measurements)
                     / len(measurements))




def rms_log_error_split(c8: float, c16: float, eff: ServingEfficiency,
                        measurements: tuple[Measurement, ...] = MEASUREMENTS) -> float:
    """``rms_log_error`` with one compute efficiency for 8-bit figures and one for 16-bit."""
    total = 0.0
    for m in measurements:
        c = c8 if precision_bytes(m.precision) <= 1 else c16
        if m.model.moe is not None:
            c *= DEFAULT_MOE_COMPUTE_SHARE
        at = ServingEfficiency(bandwidth=eff.bandwidth, compute=c,
                               tensor_parallel=eff.tensor_parallel)
        total += math.log(predict(m, at) / m.value) ** 2
    return math.sqrt(total / len(measurements))


def fit(start: tuple[float, float, float, float], step: float = 0.02
        ) -> tuple[float, tuple[float, float, float, float]]:
    """Coordinate descent from ``start`` = (bandwidth, 8-bit compute, 16-bit compute, TP per
    doubling) in ``step``s, minimising ``rms_log_error_split``; returns (RMS, point)."""
    def score(p: tuple[float, float, float, float]) -> float:
        return rms_log_error_split(p[1], p[2], ServingEfficiency(bandwidth=p[0],
                                                                 tensor_parallel=p[3]))
    point, best = start, score(start)
    improved = True
    while improved:
        improved = False
        for i, delta in product(range(4), (-step, step)):
            q = tuple(round(v + (delta if j == i else 0.0), 4) for j, v in enumerate(point))
            if not all(0 < v <= 1 for v in q):
                continue
            cand = (q[0], q[1], q[2], q[3])
            s = score(cand)
            if s < best - 1e-12:
                point, best, improved = cand, s, True
    return best, point
