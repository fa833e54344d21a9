"""Mixture-of-experts workloads planned end to end (pre-training, fine-tuning, serving) and
checked against published figures; each test names its source and the tolerance it holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.errors import InputError, SpecError
from aiplat.plan import build_plan
from aiplat.plan.models import WorkloadPlan
from aiplat.plan.resolve import resolve_arch
from aiplat.sizing.inference import Replica, ServingHardware, decode_throughput, prefill_time
from aiplat.sizing.layout import Parallelism, TrainingBatch
from aiplat.sizing.memory import activation_memory, mlp_activation_factors
from aiplat.sizing.shape import ModelShape, MoeShape
from aiplat.spec import parse_platform
from aiplat.spec.models import ModelRef

CATALOG = load_catalog()

SPEC = """
apiVersion: aiplat/v1alpha1
kind: Platform
metadata: {name: moe}
site: {powerBudgetKW: 100000, rackPowerLimitKW: 130}
pools:
  - name: h800
    node:
      gpu: {model: H800-SXM-80GB, count: 8}
      cpuCores: 192
      memoryGiB: 2048
      nics: [{type: infiniband, rateGbps: 400, count: 8, segment: hpc}]
    count: 256
  - name: h100
    node:
      gpu: {model: H100-SXM-80GB, count: 8}
      cpuCores: 112
      memoryGiB: 2048
      nics: [{type: infiniband, rateGbps: 400, count: 8, segment: hpc}]
    count: 64
  - name: h200
    node:
      gpu: {model: H200-SXM-141GB, count: 8}
      cpuCores: 112
      memoryGiB: 2048
    count: 4
tenants:
  - name: research
    quota: {h800: {gpus: 2048}, h100: {gpus: 512}, h200: {gpus: 32}}
"""


def plan_one(workload: dict[str, Any]) -> WorkloadPlan:
    data = yaml.safe_load(SPEC)
    data["workloads"] = [{"name": "w", "tenant": "research", **workload}]
    platform = parse_platform(yaml.safe_dump(data, sort_keys=False), "t.yaml", CATALOG)
    return build_plan(platform, CATALOG).workloads[0]


DEEPSEEK_PRETRAIN: dict[str, Any] = {
    "kind": "pretrain", "pool": "h800", "model": "deepseek-v3", "mfu": 0.4,
    # expertOverlap 1: the report's DualPipe overlaps the all-to-all with computation,
    # "near-zero all-to-all communication overhead" (section 3.2.1)
    "parallelism": {"tensor": 1, "pipeline": 16, "expert": 64, "data": 128, "zeroStage": 1,
                    "recompute": "full", "microBatch": 1, "globalBatch": 15360,
                    "sequenceLength": 4096, "expertOverlap": 1},
    "data": {"tokens": 14.8e12},
}  # fmt: skip


def test_deepseek_v3_pretraining_gpu_hours_match_the_report() -> None:
    """DeepSeek-V3 technical report (arXiv:2412.19437) Table 1: pre-training on 14.8T tokens
    took 2,664K H800 GPU-hours (2,048 GPUs, section 3.1). Planned at 6·N_active + attention
    with MFU 0.40 against the BF16 peak (Llama 3's published 38-43 % BF16 MFU on H100, Llama 3
    paper Table 4), within 10 % (here +7 %). Counting all 671B parameters, as the planner did
    before, is 15x off."""
    w = plan_one(DEEPSEEK_PRETRAIN)
    assert w.gpus == 2048
    compute_gpu_hours = w.gpus * w.results["time"]["seconds"] / 3600
    assert compute_gpu_hours == pytest.approx(2.664e6, rel=0.10)
    # With checkpoints (5 % of each hour, the default write budget) and ~61 interruptions at
    # Llama 3's rate the wall-clock GPU-hours are 16 % over the report's; it names no
    # interruption losses ("we did not experience any irrecoverable loss spikes").
    assert w.run_hours is not None and w.goodput is not None
    assert w.gpus * w.run_hours == pytest.approx(2.664e6, rel=0.20)
    assert 0.9 < w.goodput < 0.95
    total_param_rule = 6 * 671e9 * 14.8e12 / (0.4 * 989e12) / 3600
    assert total_param_rule > 15 * 2.664e6
    # The same count for every figure: 6 x active params plus the attention term.
    fpt = w.results["flops_per_token"]
    assert fpt["param_flops_per_token"] == pytest.approx(6 * 37.55e9, rel=0.001)


def test_deepseek_v3_published_layout_fits_an_80gb_h800() -> None:
    """Report section 3.2: 16-way pipeline, 64-way expert parallelism over 8 nodes, ZeRO-1 data
    parallelism, no tensor parallelism, on 80 GB H800s. Experts are sharded 64 ways, the dense
    part is not; the layout must fit (with recomputation; the report recomputes only norms and
    MLA up-projections, which the dense activation formula cannot express)."""
    w = plan_one(DEEPSEEK_PRETRAIN)
    assert not [f for f in w.findings if f.severity == "error"]
    assert sum(w.memory_per_gpu_bytes.values()) <= w.gpu_memory_bytes
    experts = w.results["memory_expert_states"]["inputs"]
    assert (experts["tp"], experts["dp"]) == (64, 2)  # ep x tp shards, dp/ep ZeRO ranks


def test_mixtral_pretraining_counts_active_params() -> None:
    """Mixtral of Experts (arXiv:2401.04088): 12.9B of 46.7B parameters active per token, so
    training costs 6 x 12.9B FLOPs per token (plus attention), not 6 x 46.7B."""
    w = plan_one({"kind": "pretrain", "pool": "h100", "model": "mixtral-8x7b",
                  "parallelism": {"tensor": 8, "pipeline": 1, "expert": 8, "data": 8,
                                  "sequenceLength": 4096},
                  "data": {"tokens": 1e12}})
    fpt = w.results["flops_per_token"]
    assert fpt["param_flops_per_token"] == pytest.approx(6 * 12.9e9, rel=0.002)
    expected_s = 1e12 * fpt["flops_per_token"] / (64 * 0.4 * 989e12)
    # compute at MFU 0.40, then the TP 8 and EP 8 traffic the step exposes on top
    slowdown = w.results["step_communication"]["slowdown"]
    assert slowdown > 1
    assert w.results["time"]["seconds"] == pytest.approx(expected_s * slowdown, rel=1e-9)


def test_deepseek_v3_fp8_serving_fits_one_8x_h200_node_not_one_h100_node() -> None:
    """SGLang benchmark/deepseek_v3/README.md, "Hardware Recommendation: 8 x NVIDIA H200 GPUs;
    if you do not have GPUs with large enough memory, try multi-node tensor parallelism":
    the 671 GB of FP8 weights fit 8 x 141 GB at TP 8, not 8 x 80 GB."""
    serve: dict[str, Any] = {"kind": "online-inference", "model": "deepseek-v3",
                             "precision": "fp8",
                             "slo": {"queriesPerSecond": 1, "promptTokens": 1000,
                                     "outputTokens": 300, "contextLength": 8192}}
    h200 = plan_one({**serve, "pool": "h200"}).results["layout"]
    assert (h200["tensor_parallel"], h200["pipeline_parallel"], h200["nodes"]) == (8, 1, 1)
    h100 = plan_one({**serve, "pool": "h100"}).results["layout"]
    assert h100["nodes"] >= 2


def test_deepseek_v3_latent_kv_cache_is_held_whole_by_every_tp_rank() -> None:
    """DeepSeek-V2 paper (arXiv:2405.04434) Table 1: MLA caches (d_c + d_h^R)·l = 576·61
    elements per token; vLLM/SGLang keep the latent unsplit on every tensor-parallel rank."""
    w = plan_one({"kind": "online-inference", "pool": "h200", "model": "deepseek-v3",
                  "precision": "fp8", "kvCachePrecision": "bf16",
                  "slo": {"queriesPerSecond": 1, "contextLength": 8192}})
    layout = w.results["layout"]
    per_token = 576 * 61 * 2
    assert layout["kv_cache_bytes"] == pytest.approx(per_token * 8192)
    assert layout["kv_cache_bytes_per_gpu"] == pytest.approx(per_token * 8192)


def test_mixtral_decode_reads_the_experts_a_batch_touches() -> None:
    """Issue 21: at batch 81 the planner read only the active parameters (~3x the per-user
    speed). With top-2 of 8 experts, a batch of b tokens touches 8·(1 − (3/4)^b) experts per
    layer (uniform routing): 2 at b = 1, 3.5 at b = 2, all 8 by b = 81."""
    shape = ModelShape(params=46.7e9, active_params=12.9e9, moe=MoeShape(8, 2), layers=32,
                       hidden=4096, heads=32, kv_heads=8)
    assert shape.moe is not None
    assert shape.moe.experts_touched(2) == pytest.approx(3.5)
    h100 = ServingHardware(memory_bandwidth_bps=3.35e12, dense_tflops=989)
    per_expert = (46.7e9 - 12.9e9) / 6
    for b in (1, 2, 8, 81):
        r = decode_throughput(Replica(model=shape, hardware=h100), batch=b, context_tokens=0)
        touched = 8 * (1 - 0.75**b)
        expected = (46.7e9 - 8 * per_expert + touched * per_expert) * 2
        assert r.weights_read_bytes_per_gpu == pytest.approx(expected)
    dense = ModelShape(params=12.9e9, layers=32, hidden=4096, heads=32, kv_heads=8)
    dense_rule = decode_throughput(Replica(model=dense, hardware=h100), batch=81,
                                   context_tokens=0)
    moe = decode_throughput(Replica(model=shape, hardware=h100), batch=81, context_tokens=0)
    assert dense_rule.tokens_per_second_per_sequence > 3 * moe.tokens_per_second_per_sequence


def test_mixtral_serving_plan_passes_the_experts_to_decode() -> None:
    w = plan_one({"kind": "online-inference", "pool": "h100", "model": "mixtral-8x7b",
                  "slo": {"queriesPerSecond": 20, "promptTokens": 1000, "outputTokens": 300,
                          "tokensPerSecond": 20}})
    inputs = w.results["slo"]["inputs"]
    assert (inputs["experts"], inputs["experts_per_token"]) == (8, 2)
    assert w.results["layout"]["tensor_parallel"] == 2  # 93.4 GB of BF16 weights > 72 GB


def test_lora_checkpoint_is_the_adapters_as_in_the_lora_paper() -> None:
    """Hu et al. 2021 (arXiv:2106.09685) section 4.2: LoRA on GPT-3 175B with r = 4 on q and v
    shrinks the checkpoint "from 350GB to 35MB". The plan sizes the adapter weights at 37.7 MB
    (96 layers x 2 x 4 x (12,288 + 12,288) parameters x 2 bytes; 36 MiB): within 8 %."""
    w = plan_one({"kind": "lora", "pool": "h100", "model": "gpt-3-175b",
                  "lora": {"rank": 4, "target": "qv"},
                  "parallelism": {"tensor": 8, "pipeline": 2, "data": 1, "recompute": "full",
                                  "sequenceLength": 2048},
                  "data": {"tokens": 1e8}})
    ckpt = w.results["checkpoint"]
    assert ckpt["weights_bytes"] == pytest.approx(35e6, rel=0.08)
    assert ckpt["total_bytes"] < 1e9  # not the 350 GB of full weights
    assert w.memory_per_gpu_bytes["adapters"] == ckpt["weights_bytes"]


def test_mixtral_qlora_quantizes_every_expert() -> None:
    """QLoRA (Dettmers et al. 2023, section 3) stores every linear weight in NF4, 4.127 bits
    with double quantization; embeddings and LM head stay 16-bit. For Mixtral that is every
    expert: (46.7B − 2·32000·4096)·0.516 + 2·32000·4096·2 bytes ≈ 24.5 GB, on one H100."""
    w = plan_one({"kind": "lora", "pool": "h100", "model": "mixtral-8x7b",
                  "lora": {"rank": 16, "quantizedBase": True},
                  "parallelism": {"data": 1, "recompute": "full"}, "data": {"tokens": 1e8}})
    emb = 2 * 32000 * 4096
    expected = (46702792704 - emb) * (4 + 8 / 64 + 32 / (64 * 256)) / 8 + emb * 2
    assert w.memory_per_gpu_bytes["weights"] == pytest.approx(expected)
    assert not [f for f in w.findings if f.severity == "error"]


# --- refused layouts (exit 2 from `aiplat plan`) -------------------------------------------


@pytest.mark.parametrize(
    ("parallelism", "match"),
    [
        ({"data": 8, "microBatch": 4, "globalBatch": 1}, r"globalBatch \(1\) is not a multiple"),
        ({"data": 1, "pipeline": 64}, r"pipeline \(64\) exceeds .* 32 layers"),
        ({"data": 1, "tensor": 3}, r"tensor \(3\) does not divide"),
        ({"data": 6, "expert": 3}, r"expert \(3\) does not divide the 8 experts"),
        ({"data": 2, "expert": 4}, r"does not divide the data-parallel degree 2"),
        ({"data": 1, "context": 3, "sequenceLength": 4096}, r"context \(3\) does not divide"),
    ],
)
def test_impossible_training_layouts_are_refused(parallelism: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        plan_one({"kind": "pretrain", "pool": "h100", "model": "mixtral-8x7b",
                  "parallelism": parallelism, "data": {"tokens": 1e9}})


def test_expert_parallelism_on_a_dense_model_is_refused() -> None:
    with pytest.raises(InputError, match="is dense"):
        plan_one({"kind": "pretrain", "pool": "h100", "model": "llama-3-8b",
                  "parallelism": {"data": 8, "expert": 2}, "data": {"tokens": 1e9}})


def test_tensor_parallelism_across_nodes_is_flagged() -> None:
    w = plan_one({"kind": "pretrain", "pool": "h100", "model": "llama-3-70b",
                  "parallelism": {"tensor": 16, "data": 1}, "data": {"tokens": 1e9}})
    assert any("spans nodes" in f.message for f in w.findings)


def test_inline_moe_model_outside_the_catalog() -> None:
    """A model given in full: total and active parameters, experts and top-k."""
    w = plan_one({"kind": "online-inference", "pool": "h100",
                  "model": {"params": 30.5e9, "activeParams": 3.3e9, "experts": 128,
                            "expertsPerToken": 8, "layers": 48, "hidden": 2048, "heads": 32,
                            "kvHeads": 4, "headDim": 128, "vocab": 151936},
                  "slo": {"queriesPerSecond": 5}})
    inputs = w.results["slo"]["inputs"]
    assert (inputs["experts"], inputs["active_params"], inputs["head_dim"]) == (128, 3.3e9, 128)


def test_aiplat_plan_refuses_a_bad_global_batch_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21's case: globalBatch 1 with microBatch 4 on 8 data-parallel ranks passed and
    then asked for a 1.8 TB/s all-reduce; now the spec is refused at the key's file:line with
    the rule and the fix, exit 2."""
    data = yaml.safe_load(SPEC)
    data["workloads"] = [{"name": "w", "tenant": "research", "kind": "pretrain", "pool": "h100",
                          "model": "llama-3-8b", "data": {"tokens": 1e9},
                          "parallelism": {"data": 8, "microBatch": 4, "globalBatch": 1}}]
    spec = tmp_path / "p.yaml"
    spec.write_text(yaml.safe_dump(data))
    assert main(["plan", str(spec), "-d", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "p.yaml:" in err and "workloads[0].parallelism.globalBatch: globalBatch (1)" in err
    assert "(fix: globalBatch 32" in err
    assert "Traceback" not in err


def test_measured_tflops_count_8_flops_per_param_with_full_recompute() -> None:
    """Narayanan et al. 2021 (arXiv:2104.04473) section 5.1: GPT-3 175B, 300B tokens, 1,024
    A100s at batch 1,536 and X = 140 TFLOP/s per GPU (counting recomputation, 8·P per token)
    train in "~34 days". The plan at achievedTflopsPerGpu 140 and recompute full: within 5 %
    (the attention term the paper's eq. 4 drops adds 2.8 %)."""
    w = plan_one({"kind": "pretrain", "pool": "h100", "model": "gpt-3-175b",
                  "achievedTflopsPerGpu": 140,
                  "parallelism": {"tensor": 8, "pipeline": 8, "data": 16, "recompute": "full",
                                  "globalBatch": 1536, "sequenceLength": 2048},
                  "data": {"tokens": 300e9}})
    assert w.results["time"]["flops_per_param_token"] == 8
    assert w.results["time"]["seconds"] / 86400 == pytest.approx(34, rel=0.05)
    # MFU derived back: 6/8 of the hardware FLOPs, against the H100's 989 TFLOP/s here.
    shares = w.key_figures["MFU / HFU"].split(" (")[0].split(" / ")
    mfu, hfu = (float(p.strip("%")) for p in shares)
    assert hfu == pytest.approx(100 * 140 / 989, abs=0.6)
    assert mfu == pytest.approx(hfu * 6 / 8, abs=0.6)


def test_hfu_and_measured_tflops_together_are_refused() -> None:
    with pytest.raises(SpecError, match="both given"):
        plan_one({"kind": "pretrain", "pool": "h100", "model": "llama-3-8b", "hfu": 0.5,
                  "achievedTflopsPerGpu": 400, "parallelism": {"data": 8},
                  "data": {"tokens": 1e9}})


def test_measured_tflops_above_peak_are_refused() -> None:
    with pytest.raises(InputError, match="above the GPU's dense peak"):
        plan_one({"kind": "pretrain", "pool": "h100", "model": "llama-3-8b",
                  "achievedTflopsPerGpu": 1500, "parallelism": {"data": 8},
                  "data": {"tokens": 1e9}})


def test_cost_per_run_and_per_million_tokens_at_a_gpu_hour_price() -> None:
    data = yaml.safe_load(SPEC)
    data["pools"][1]["node"]["gpu"]["pricePerGpuHour"] = 2.5
    data["workloads"] = [
        {"name": "t", "tenant": "research", "kind": "pretrain", "pool": "h100",
         "model": "llama-3-8b", "parallelism": {"data": 8}, "data": {"tokens": 1e10}},
        {"name": "s", "tenant": "research", "kind": "online-inference", "pool": "h100",
         "model": "llama-3-8b", "slo": {"queriesPerSecond": 10, "outputTokens": 200}},
    ]
    plan = build_plan(parse_platform(yaml.safe_dump(data), "t.yaml", CATALOG), CATALOG)
    train, serve = plan.workloads
    assert train.run_hours is not None
    assert train.cost_per_run == pytest.approx(8 * train.run_hours * 2.5)
    assert train.cost_per_million_tokens == pytest.approx(train.cost_per_run / 1e4)
    month = serve.gpus * 730 * 2.5
    assert serve.cost_per_run == pytest.approx(month)
    assert serve.cost_per_million_tokens == pytest.approx(month / (10 * 200 * 730 * 3600 / 1e6))


def test_tensor_parallel_traffic_by_hand_and_across_nodes() -> None:
    """Megatron TP: 4 all-reduces of b·s·h·2 bytes per layer and micro-batch, 2(t−1)/t of it
    sent by each GPU (Narayanan et al. 2021, 3.3). Llama-3-70B, TP 8 in a node: over NVLink
    (450 GB/s a direction on H100); TP 16 spans two nodes and goes over 50 GB/s of IB per GPU,
    9x slower, and is flagged."""
    base: dict[str, Any] = {"kind": "pretrain", "pool": "h100", "model": "llama-3-70b",
                            "data": {"tokens": 1e9}}
    w = plan_one({**base, "parallelism": {"tensor": 8, "data": 4, "globalBatch": 64,
                                          "sequenceLength": 4096}})
    t = w.results["model_parallel_traffic"]
    micro_steps = 64 // 4
    by_hand = 80 * 4 * 2 * 7 / 8 * (1 * 4096 * 8192 * 2) * micro_steps
    assert t["tp_bytes_per_step"] == pytest.approx(by_hand)
    assert t["tp_seconds"] == pytest.approx(by_hand / 450e9)
    wide = plan_one({**base, "parallelism": {"tensor": 16, "data": 2, "globalBatch": 32,
                                             "sequenceLength": 4096}})
    assert wide.results["model_parallel_traffic"]["inputs"]["tp_bytes_per_second"] == 50e9


def test_deepseek_v3_full_finetune_states_are_16_bytes_per_param_over_the_gpus() -> None:
    """ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054) Figure 1: mixed-precision Adam holds
    2 + 2 + 12 = 16 bytes per parameter, and stage 3 divides all of it by the data-parallel
    degree. DeepSeek-V3 fine-tuned on 256 GPUs with 8-way expert parallelism: the dense part
    is sharded over 256 ranks, each expert over 8 x 32; together 16 x 671B bytes."""
    w = plan_one({"kind": "finetune", "pool": "h800", "model": "deepseek-v3",
                  "parallelism": {"tensor": 1, "pipeline": 1, "expert": 8, "data": 256,
                                  "zeroStage": 3, "recompute": "full", "globalBatch": 256},
                  "data": {"tokens": 1e9}})
    m = w.memory_per_gpu_bytes
    states = m["weights"] + m["gradients"] + m["optimizer"]
    assert states * 256 == pytest.approx(16 * 671.025e9, rel=1e-4)


def test_p99_time_to_first_token_is_reported_and_a_miss_flagged() -> None:
    serve: dict[str, Any] = {"kind": "online-inference", "pool": "h100", "model": "mixtral-8x7b",
                             "slo": {"queriesPerSecond": 40, "promptTokens": 4000,
                                     "timeToFirstTokenMs": 2000}}
    w = plan_one(serve)
    p95, p99 = (float(x.replace(",", "")) for x in
                w.key_figures["TTFT p95 / p99"].removesuffix(" ms").split(" / "))
    assert w.results["slo"]["prefill_seconds"] * 1000 <= p95 <= p99
    tight = plan_one({**serve, "slo": {**serve["slo"], "timeToFirstTokenP99Ms": p99 / 2}})
    assert any("p99 time to first token" in f.message for f in tight.findings)


def test_pure_data_parallel_plan_shows_deepspeeds_figure_too() -> None:
    w = plan_one({"kind": "pretrain", "pool": "h100", "model": "llama-3-8b",
                  "parallelism": {"data": 8, "zeroStage": 3}, "data": {"tokens": 1e9}})
    est = w.results["deepspeed_estimate"]
    assert est["deepspeed_bytes"] == pytest.approx(4 * 128256 * 4096 + 18 * 8030261248 / 8)
    assert "DeepSpeed's estimator" in " ".join(w.key_figures)


def test_interleaved_schedule_divides_the_bubble() -> None:
    """Narayanan et al. 2021 eq. 1-2: 1F1B idles (p−1)/m of a step, interleaved with v chunks
    per stage (p−1)/(m·v)."""
    base: dict[str, Any] = {"kind": "pretrain", "pool": "h100", "model": "llama-3-70b",
                            "data": {"tokens": 1e9}}
    par = {"tensor": 8, "pipeline": 4, "data": 2, "globalBatch": 16}
    plain = plan_one({**base, "parallelism": par})
    inter = plan_one({**base, "parallelism": {**par, "virtualStages": 5}})
    assert plain.key_figures["pipeline bubble"].startswith("38%")  # 3/8
    assert inter.key_figures["pipeline bubble"].startswith("8%")  # 3/40
    assert any("pipeline bubble" in f.message for f in plain.findings)
    assert not any("pipeline bubble" in f.message for f in inter.findings)


def test_zero_offload_moves_the_optimizer_states_to_host_memory() -> None:
    """ZeRO-Offload (Ren et al. 2021, arXiv:2101.06840): the 12 bytes per parameter of fp32
    Adam states and master copy live in host memory; the GPU keeps 2 + 2 (bf16 weights,
    gradients). Llama-3-8B on one H100: 16 B/param = 128 GB does not fit, 4 B/param does."""
    base: dict[str, Any] = {"kind": "finetune", "pool": "h100", "model": "llama-3-8b",
                            "parallelism": {"data": 1, "zeroStage": 0, "recompute": "full"},
                            "data": {"tokens": 1e8}}
    on_gpu = plan_one(base)
    assert any(f.severity == "error" for f in on_gpu.findings)
    off = plan_one({**base, "parallelism": {**base["parallelism"], "offload": "optimizer"}})
    assert "optimizer" not in off.memory_per_gpu_bytes
    assert off.memory_per_gpu_bytes["weights"] == pytest.approx(2 * 8030261248)
    assert not any(f.severity == "error" for f in off.findings)
    assert off.key_figures["offloaded to host memory"].startswith("96.4 GB")


def test_serving_block_overrides_the_stack_efficiencies_and_speculation() -> None:
    base: dict[str, Any] = {"kind": "online-inference", "pool": "h100", "model": "llama-3-8b",
                            "slo": {"queriesPerSecond": 2, "tokensPerSecond": 20}}
    plain = plan_one(base).results["slo"]
    tuned = plan_one({**base, "serving": {"bandwidthEfficiency": 0.6, "draftTokens": 4,
                                          "acceptanceRate": 0.7}}).results["slo"]
    assert tuned["inputs"]["bandwidth_efficiency"] == 0.6
    assert tuned["inputs"]["draft_tokens"] == 4
    assert (tuned["max_decode_tokens_per_second_per_user"]
            > plain["max_decode_tokens_per_second_per_user"])
    with pytest.raises(SpecError, match="draftTokens without acceptanceRate"):
        plan_one({**base, "serving": {"draftTokens": 4}})


def test_moe_activations_count_the_experts_each_token_runs() -> None:
    """Korthikanti et al. 2022 Table 2 charges the MLP 19·sbh per layer (input 2, the 4h
    intermediates 16, dropout 1). Mixtral-8x7B routes each token through 2 experts of width
    14,336 = 3.5h: 2·2 + 16·(2·14336/16384) + 1 = 33 instead of 19, so 48 sbh per layer
    instead of 34 without the score term (our derivation; no published MoE figure)."""
    mixtral = ModelShape(
        params=46.7e9,
        active_params=12.9e9,
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        moe=MoeShape(8, 2),
        ffn_hidden=14336,
    )
    dense = ModelShape(params=7e9, layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336)
    batch = TrainingBatch(seq_len=4096, micro_batch=1, recompute="selective")
    sbh = 4096 * 4096
    assert mlp_activation_factors(dense) == (1.0, 1.0)
    assert mlp_activation_factors(mixtral) == (2.0, 1.75)
    assert activation_memory(dense, batch).per_layer_bytes == pytest.approx(34 * sbh)
    assert activation_memory(mixtral, batch).per_layer_bytes == pytest.approx(48 * sbh)
    # Tensor parallelism without sequence parallelism splits only the internals.
    tp = activation_memory(mixtral, batch, Parallelism(tp=4, sequence_parallel=False))
    assert tp.per_layer_bytes == pytest.approx(sbh * (8 + 4 + (8 + 28) / 4))


def test_plan_counts_moe_activations() -> None:
    """The plan's activation figure for a Mixtral pre-training carries the expert factors."""
    arch = resolve_arch(ModelRef(name="mixtral-8x7b"), load_catalog())
    copies, width = mlp_activation_factors(arch.shape)
    assert copies == 2 and width == pytest.approx(2 * arch.ffn_hidden / (4 * arch.hidden))


def test_moe_prefill_computes_active_params_and_streams_the_experts_its_prompt_touches() -> None:
    """Prefill of s tokens: 2·N_active·s FLOPs (each token runs its top-2), while the weights
    streamed are the shared part plus E·(1−(1−k/E)^s) experts per layer: 2 of 8 for a
    one-token prompt, all 8 for a 2,048-token one."""
    shape = ModelShape(params=46.7e9, active_params=12.9e9, moe=MoeShape(8, 2), layers=32,
                       hidden=4096, heads=32, kv_heads=8)
    h100 = ServingHardware(memory_bandwidth_bps=3.35e12, dense_tflops=989)
    r = Replica(model=shape, hardware=h100)
    rate = 3.35e12 * r.efficiency.bandwidth
    one, long = (prefill_time(r, prompt_tokens=s) for s in (1, 2048))
    assert one.memory_seconds == pytest.approx(12.9e9 * 2 / rate)
    assert long.memory_seconds == pytest.approx(46.7e9 * 2 / rate, rel=1e-9)
    attention = 2 * 32 * 2048**2 * 4096
    assert long.flops == pytest.approx(2 * 12.9e9 * 2048 + attention)
