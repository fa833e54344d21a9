"""A Mixtral-class and a DeepSeek-V3-class workload against more published figures: memory
to serve and to fine-tune Mixtral, Megatron-Core's Mixtral training throughput, DeepSeek-V3's
long-context training GPU-hours. One test per figure, source and tolerance in its docstring;
tests/unit/test_moe_sizing.py holds the first set, docs/sizing-coverage.md lists them all."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.plan import build_plan
from aiplat.plan.models import WorkloadPlan
from aiplat.spec import parse_platform

CATALOG = load_catalog()

SPEC = """
apiVersion: aiplat/v1alpha1
kind: Platform
metadata: {name: moe-figures}
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
    count: 8
  - name: a100
    node:
      gpu: {model: A100-SXM4-80GB, count: 8}
      cpuCores: 128
      memoryGiB: 1024
    count: 1
tenants:
  - name: r
    quota: {h800: {gpus: 2048}, h100: {gpus: 64}, a100: {gpus: 8}}
"""


def plan_one(workload: dict[str, Any]) -> WorkloadPlan:
    data = yaml.safe_load(SPEC)
    data["workloads"] = [{"name": "w", "tenant": "r", **workload}]
    platform = parse_platform(yaml.safe_dump(data, sort_keys=False), "t.yaml", CATALOG)
    return build_plan(platform, CATALOG).workloads[0]


def _errors(w: WorkloadPlan) -> list[str]:
    return [f.message for f in w.findings if f.severity == "error"]


# --- Mixtral-8x7B: serving memory ------------------------------------------------------------


@pytest.mark.parametrize(("precision", "published_gb"), [
    ("bf16", 90), ("int8", 45), ("int4", 23)])
def test_mixtral_weights_against_hugging_faces_vram_table(
    precision: str, published_gb: float
) -> None:
    """Hugging Face blog "Welcome Mixtral" (huggingface/blog mixtral.md, Inference): required
    VRAM float16 > 90 GB, 8-bit > 45 GB, 4-bit > 23 GB. The plan's weights: 93.4 / 46.7 /
    23.4 GB (all 46.7B parameters; every expert is resident): above each bound by under 5 %."""
    w = plan_one({"kind": "online-inference", "pool": "a100", "model": "mixtral-8x7b",
                  "precision": precision, "slo": {"queriesPerSecond": 1}})
    weights = w.results["layout"]["weights_bytes"] / 1e9
    assert published_gb < weights < published_gb * 1.05


def test_mixtral_bf16_is_served_on_two_a100s_as_tgi_does() -> None:
    """Same blog: Text Generation Inference runs Mixtral-8x7B-Instruct on 2 x A100 80GB
    (`--num-shard 2`). The plan lays it out at tensor parallelism 2 on A100-80GB."""
    w = plan_one({"kind": "online-inference", "pool": "a100", "model": "mixtral-8x7b",
                  "slo": {"queriesPerSecond": 1, "contextLength": 32000}})
    assert w.results["layout"]["tensor_parallel"] == 2


# --- Mixtral-8x7B: fine-tuning -------------------------------------------------------------


def test_mixtral_qlora_on_attention_fits_one_a100() -> None:
    """Same blog, "Fine-tuning with TRL": QLoRA (4-bit base) with r = 16 on q, k, v, o,
    batch 2, "on a single A100 GPU". The plan fits it on one A100-80GB with no error: 24.5 GB
    of NF4 weights (the blog's > 23 GB at 4 bits) and well under 80 GB in all."""
    w = plan_one({"kind": "lora", "pool": "a100", "model": "mixtral-8x7b",
                  "lora": {"rank": 16, "quantizedBase": True, "target": "attention"},
                  "parallelism": {"data": 1, "microBatch": 2, "recompute": "full",
                                  "sequenceLength": 2048},
                  "data": {"tokens": 1e8}})
    assert w.gpus == 1 and not _errors(w)
    assert w.memory_per_gpu_bytes["weights"] / 1e9 == pytest.approx(24.5, abs=0.1)
    assert sum(w.memory_per_gpu_bytes.values()) < 0.5 * w.gpu_memory_bytes


# --- Mixtral-8x7B: pre-training ------------------------------------------------------------


def test_mixtral_pretraining_at_megatron_cores_published_throughput() -> None:
    """NVIDIA Megatron-LM megatron/core/transformer/moe/README.md: "With MCore v0.9, we've
    achieved remarkable performance of 468 TFLOPS for Mixtral 8X7B bf16 training" (H100,
    Megatron's model-FLOPs count). Given as achievedTflopsPerGpu (selective recompute: 6 FLOPs
    per parameter and token), the plan derives MFU 468 / 989 = 47.3 % (±0.5 point) and a run
    time 989·0.40 / 468 = 0.845 of the compute at aiplat's default MFU 0.40; the default's
    step also carries the EP 8 all-to-all (2.5 % more), so it plans 21 % longer (−18 %
    throughput) than this published figure (a measured rate already holds its communication)."""
    base: dict[str, Any] = {"kind": "pretrain", "pool": "h100", "model": "mixtral-8x7b",
                            "parallelism": {"tensor": 1, "pipeline": 4, "expert": 8,
                                            "data": 16, "globalBatch": 256,
                                            "sequenceLength": 4096},
                            "data": {"tokens": 1e11}}
    measured = plan_one({**base, "achievedTflopsPerGpu": 468})
    default = plan_one(base)
    assert measured.results["time"]["flops_per_param_token"] == 6
    mfu = float(measured.key_figures["MFU / HFU"].split(" / ")[0].strip("%"))
    assert mfu == pytest.approx(100 * 468 / 989, abs=0.5)
    ratio = measured.results["time"]["seconds"] / default.results["time"]["seconds"]
    # the default adds the EP 8 all-to-all over NVLink to its step; the measured rate has it
    slowdown = default.results["step_communication"]["slowdown"]
    assert measured.results["step_communication"]["slowdown"] == 1
    assert ratio * slowdown == pytest.approx(0.4 * 989 / 468, rel=1e-6)


# --- DeepSeek-V3: long-context (continued) training -----------------------------------------


def test_deepseek_v3_context_extension_gpu_hours_match_the_report() -> None:
    """DeepSeek-V3 technical report (arXiv:2412.19437) Table 1: context extension took 119K
    H800 GPU-hours; section 4.3: two phases of 1,000 steps each, 32K tokens at batch 1,920,
    then 128K at batch 480 (full-parameter training of the pre-trained model, the same 2,048
    GPUs). Planned as fine-tuning at MFU 0.40 (the value the pre-training figure holds at) with
    6·N_active + the attention term (PaLM's 12·l·s·d, which grows with the sequence): 106.7K
    GPU-hours, 10 % under; held within 15 %."""
    total = 0.0
    for seq, batch, dp, cp, ep in ((32768, 1920, 128, 1, 64), (131072, 480, 32, 4, 32)):
        w = plan_one({"kind": "finetune", "pool": "h800", "model": "deepseek-v3", "mfu": 0.4,
                      "parallelism": {"tensor": 1, "pipeline": 16, "expert": ep, "data": dp,
                                      "context": cp, "zeroStage": 1, "recompute": "full",
                                      "globalBatch": batch, "sequenceLength": seq,
                                      # DualPipe hides the all-to-all (report 3.2.1)
                                      "expertOverlap": 1},
                      "data": {"tokens": 1000 * batch * seq}})
        assert w.gpus == 2048 and not _errors(w)
        total += w.gpus * w.results["time"]["seconds"] / 3600
    assert total == pytest.approx(119e3, rel=0.15)
    assert total < 119e3  # 10.3 % under: the report's figure includes what MFU does not


B200_POOL = {"name": "b200", "node": {
    "gpu": {"model": "B200-SXM-180GB", "count": 8}, "cpuCores": 112, "memoryGiB": 2048,
    "nics": [{"type": "infiniband", "rateGbps": 400, "count": 8, "segment": "hpc"}]},
    "count": 32}


def _deepseek_on_b200(extra: dict[str, Any]) -> WorkloadPlan:
    data = yaml.safe_load(SPEC)
    data["pools"].append(B200_POOL)
    data["tenants"][0]["quota"]["b200"] = {"gpus": 256}
    data["workloads"] = [{"name": "w", "tenant": "r", "pool": "b200", "kind": "pretrain",
                          "model": "deepseek-v3", "precision": "fp8", "data": {"tokens": 1e10},
                          "parallelism": {"tensor": 1, "pipeline": 16, "expert": 8,
                                          "data": 16, "globalBatch": 2048,
                                          "sequenceLength": 4096}, **extra}]
    platform = parse_platform(yaml.safe_dump(data, sort_keys=False), "t.yaml", CATALOG)
    return build_plan(platform, CATALOG).workloads[0]


def test_deepseek_v3_fp8_pretraining_on_b200_against_megatron_bridge() -> None:
    """NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md (25.11, DGX-B200): DeepSeekV3,
    256 GPUs, FP8-MX, GBS 2048, MBS 1, sequence 4096, PP 16, EP 8: 2,139 tokens/s/GPU, 557
    model TFLOP/s/GPU (12 % of the 4,500 FP8 peak).
    - Given that throughput (achievedTflopsPerGpu 557), the plan's FLOP count (6·N_active +
      12·l·s·d: 2.744e11 per token; Megatron's implies 2.604e11) gives 2,030: −5.1 %, held
      within 10 %.
    - At the dense default MFU 0.40 it gives 2.46x the published figure (3.07x before the
      EP 8 all-to-all was added to the step): recorded here, and the plan says so in a
      finding (the default is not a prediction for an MoE)."""
    measured = _deepseek_on_b200({"achievedTflopsPerGpu": 557})
    tps = 1e10 / measured.results["time"]["seconds"] / measured.gpus
    assert measured.gpus == 256
    assert tps == pytest.approx(2139, rel=0.10)
    assert not any("dense default MFU" in f.message for f in measured.findings)
    default = _deepseek_on_b200({})
    ratio = measured.results["time"]["seconds"] / default.results["time"]["seconds"]
    assert ratio * tps / 2139 == pytest.approx(2.46, abs=0.05)
    assert any("dense default MFU" in f.message and f.severity == "info"
               for f in default.findings)


def test_qwen3_235b_fp8_pretraining_on_b200_against_megatron_bridge() -> None:
    """Megatron-Bridge docs/performance-summary.md (25.11, DGX-B200): Qwen3_235B_a22B, 64 GPUs,
    FP8-MX, GBS 1024, MBS 1, sequence 4096, PP 8, VP 2, EP 8: 3,269 tokens/s/GPU at 484 model
    TFLOP/s. Given that throughput the plan gives 2,831: −13.4 %, held within 15 % and on the
    slow side. The gap is the attention convention: aiplat counts PaLM's 12·l·s·d (d = 64
    heads x 128 = 8,192, twice the hidden size here), Megatron the causal half; with the half
    the plan would be 2.6 % under."""
    data = yaml.safe_load(SPEC)
    data["pools"].append(B200_POOL)
    data["tenants"][0]["quota"]["b200"] = {"gpus": 256}
    data["workloads"] = [{"name": "w", "tenant": "r", "pool": "b200", "kind": "pretrain",
                          "model": "qwen3-235b-a22b", "precision": "fp8",
                          "achievedTflopsPerGpu": 484, "data": {"tokens": 1e10},
                          "parallelism": {"tensor": 1, "pipeline": 8, "virtualStages": 2,
                                          "expert": 8, "data": 8, "globalBatch": 1024,
                                          "sequenceLength": 4096}}]
    w = build_plan(parse_platform(yaml.safe_dump(data, sort_keys=False), "t.yaml", CATALOG),
                   CATALOG).workloads[0]
    assert w.gpus == 64 and not _errors(w)
    tps = 1e10 / w.results["time"]["seconds"] / w.gpus
    assert tps == pytest.approx(3269, rel=0.15)
    assert tps < 3269
    causal = 484e12 / (6 * 22189965312 + 6 * 94 * 4096 * 8192)
    assert causal == pytest.approx(3269, rel=0.03)


# --- DeepSeek-R1: small-batch decode ---------------------------------------------------------


@pytest.mark.parametrize(("setting", "published", "error"), [
    (0, 158.12, 0.31), (2, 274.72, -0.25)], ids=["h200-fp8", "b200-fp4"])
def test_deepseek_r1_min_latency_with_the_moe_layer_floor(
        setting: int, published: float, error: float) -> None:
    """TensorRT-LLM "Best perf practice on DeepSeek-R1", min-latency (batch 1, 1K / 2K, TP8,
    3-layer MTP): 158.12 tokens/s per user on 8xH200 (FP8), 274.72 on 8xB200 (NVFP4). With
    MTP3's published acceptance, 2.82 tokens per step (tech_blog/blog1, 8xB200, a real
    dataset: α = 0.77 over 3 drafts), and a draft step at 4 % of a target step (one MTP layer
    of 61 plus the head), the decode step is bound by ``DEFAULT_MOE_LAYER_FLOOR_S`` per layer:
    +31 % and −25 %, the floor being fitted on these two (their geometric mean). Without the
    floor the roofline gives 434 and 1,275 (2.7x and 4.6x)."""
    from dataclasses import replace

    from aiplat.sizing import calibration as cal
    from aiplat.sizing.inference import ServingEfficiency, decode_throughput

    mtp = ServingEfficiency(draft_tokens=3, acceptance_rate=0.77, draft_cost=0.04)
    assert mtp.tokens_per_step == pytest.approx(2.82, abs=0.01)
    m = replace(cal.MOE[setting], attention_data_parallel=False)
    d = decode_throughput(cal._replica(m, mtp), batch=1, context_tokens=2048)
    assert d.tokens_per_second_per_sequence / published - 1 == pytest.approx(error, abs=0.01)
    unfloored = decode_throughput(cal._replica(m, replace(mtp, moe_layer_floor=0.0)),
                                  batch=1, context_tokens=2048)
    assert unfloored.tokens_per_second_per_sequence / published > 2.5


# --- Qwen3-235B-A22B max throughput: the MoE share held out ------------------------------------

QWEN3_ROWS = {  # (ISL, OSL): (H200 TP8 FP8, B200 TP8 NVFP4) total output tokens/s
    (128, 128): (30_429, 63_362), (128, 2048): (42_821, 66_057), (500, 2000): (28_026, 57_117),
    (1000, 1000): (23_789, 42_391), (1000, 2000): (22_061, 34_105),
    (2048, 2048): (16_672, 26_854), (5000, 500): (3_623, 8_190)}


def _qwen3_error(gpu: str, isl: int, osl: int) -> float:
    """The calibrated roofline on TensorRT-LLM's setting: TP8 with attention data
    parallelism (its MoE options), FP8 KV cache, as many sequences per rank as 90 % of the
    GPU holds after the weights and 3 GiB (the benchmark queues every request at once)."""
    from aiplat.sizing import calibration as cal
    from aiplat.sizing.inference import ServingHardware
    from aiplat.sizing.result import precision_bytes

    shape = cal.catalog_shape("qwen3-235b-a22b")
    h200, b200 = QWEN3_ROWS[(isl, osl)]
    if gpu == "h200":
        hw, precision, memory, published = ServingHardware(4.8e12, 1979), "fp8", 141e9, h200
    else:
        hw, precision, memory, published = (ServingHardware(8.0e12, 9000, 4500), "fp4", 180e9,
                                            b200)
    w = precision_bytes(precision)
    weights = (shape.params - shape.attention_weights) * w / 8 + shape.attention_weights * w
    kv_per_token = shape.kv_values_per_token() * shape.layers * 1.0
    per_rank = int((0.9 * memory - weights - 3 * 2**30) / (kv_per_token * (isl + osl)))
    m = cal.Measurement("qwen3", "perf-overview", shape, hw, precision, 8, 8 * per_rank, isl,
                        osl, "out_tokens_per_s_per_gpu", published / 8, kv_precision="fp8",
                        attention_data_parallel=True)
    return cal.error(m)


@pytest.mark.parametrize(("isl", "osl"), list(QWEN3_ROWS),
                         ids=[f"{i}-{o}" for i, o in QWEN3_ROWS])
def test_qwen3_235b_on_h200_holds_the_moe_share_out_of_its_fit(isl: int, osl: int) -> None:
    """TensorRT-LLM docs/source/performance/perf-overview.md, Qwen3-235B-A22B, H200 TP8 FP8
    (nvidia/Qwen3-235B-A22B-FP8), Total Output Throughput at maximum load, seven ISL/OSL
    rows. Another MoE than the three DeepSeek-R1 figures the share was fitted on: every
    row within 30 % (−28 % at 128/128 to +20 % at 1000/2000)."""
    assert abs(_qwen3_error("h200", isl, osl)) <= 0.30


@pytest.mark.parametrize(("isl", "osl"), list(QWEN3_ROWS),
                         ids=[f"{i}-{o}" for i, o in QWEN3_ROWS])
def test_qwen3_235b_on_b200_fp4_is_a_recorded_gap(isl: int, osl: int) -> None:
    """The same table's B200 TP8 NVFP4 rows: the model is 1.5x to 2.7x over them, held in a
    band so that a change shows. The DeepSeek-R1 B200 figures fit because MLA's attention,
    at the KV cache's precision, carries much of their compute; Qwen3's grouped-query
    attention leaves the FP4 expert GEMMs, and the stack reaches far less of the FP4 peak
    there than the share assumes (docs/sizing-coverage.md, Gaps)."""
    assert 0.4 < _qwen3_error("b200", isl, osl) < 1.8


def test_nvfp4_moe_without_mla_is_warned() -> None:
    """The B200 gap above reaches the plan: NVFP4 weights on an MoE without MLA (Qwen3) get
    the warning; FP8 on the same model, or NVFP4 on DeepSeek-V3 (MLA), does not."""
    data = yaml.safe_load(SPEC)
    data["pools"].append({"name": "b200", "node": {
        "gpu": {"model": "B200-SXM-180GB", "count": 8}, "cpuCores": 112, "memoryGiB": 2048},
        "count": 2})
    data["tenants"][0]["quota"]["b200"] = {"gpus": 16}

    def warned(model: str, precision: str) -> bool:
        d = {**data, "workloads": [{"name": "w", "tenant": "r", "kind": "online-inference",
                                    "pool": "b200", "model": model, "precision": precision,
                                    "slo": {"queriesPerSecond": 1}}]}
        w = build_plan(parse_platform(yaml.safe_dump(d, sort_keys=False), "t.yaml", CATALOG),
                       CATALOG).workloads[0]
        return any("NVFP4 weights on a mixture of experts" in f.message for f in w.findings)
    assert warned("qwen3-235b-a22b", "fp4")
    assert not warned("qwen3-235b-a22b", "fp8")
    assert not warned("deepseek-v3", "fp4")


def test_the_moe_layer_floor_reaches_the_plan_and_binds_a_small_batch() -> None:
    """Mixtral-8x7B FP8 on 2 x H100 at one query/s: the plan's decode carries the floor
    (``serving.moeLayerFloorUs``, 200 µs default); raised to 2 ms per layer it binds the
    small batch (32 layers: 64 ms a step) and the per-user speed drops to it."""
    def decode(serving: dict[str, Any]) -> dict[str, Any]:
        w = plan_one({"kind": "online-inference", "pool": "h100", "model": "mixtral-8x7b",
                      "precision": "fp8", "serving": serving,
                      "slo": {"queriesPerSecond": 1, "tokensPerSecond": 5}})
        return w.results["slo"]
    default, slow = decode({}), decode({"moeLayerFloorUs": 2000})
    assert default["inputs"]["moe_layer_floor_s"] == pytest.approx(200e-6)
    assert slow["inputs"]["moe_layer_floor_s"] == pytest.approx(2e-3)
    assert slow["decode_tokens_per_second_per_user"] <= 1 / (32 * 2e-3) + 1e-6
    assert slow["decode_tokens_per_second_per_user"] < default["decode_tokens_per_second_per_user"]
