"""Serving inputs in the spec reach the plan: request-length percentiles, disaggregated
prefill, multi-LoRA, and GPUs and models given inline instead of from the catalog."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.errors import SpecError
from aiplat.plan import Plan, build_plan
from aiplat.plan.models import WorkloadPlan
from aiplat.sizing.lengths import lognormal_lengths
from aiplat.spec import example_text, parse_platform

CATALOG = load_catalog()
Edit = Callable[[dict[str, Any]], None]


def _plan(edit: Edit) -> Plan:
    data = yaml.safe_load(example_text())
    edit(data)
    return build_plan(parse_platform(yaml.safe_dump(data, sort_keys=False), "t.yaml", CATALOG),
                      CATALOG)


def _assistant(plan: Plan) -> WorkloadPlan:
    return next(w for w in plan.workloads if w.name == "assistant")


def _edit_assistant(**changes: Any) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        w = next(x for x in d["workloads"] if x["name"] == "assistant")
        for k, v in changes.items():
            w.setdefault(k, {}).update(v)
    return edit


def test_length_percentiles_size_on_the_lognormal_mean_and_hold_the_p95() -> None:
    """promptTokens 1500 as the median with a p95 of 6000: throughput from the lognormal
    mean (about 2,000 tokens), the context must hold a p95 prompt and output."""
    plan = _plan(_edit_assistant(slo={"promptTokensP95": 6000, "outputTokensP95": 900}))
    w = _assistant(plan)
    mean = lognormal_lengths(p50=1500, p95=6000).mean
    assert w.results["slo"]["inputs"]["prompt_tokens"] == round(mean)
    assert "prompt tokens p50 / mean / p95" in w.key_figures
    assert "prefill of a p95 prompt" in w.key_figures
    base = _assistant(_plan(lambda d: None))
    assert w.gpus >= base.gpus  # longer mean prompts never need fewer GPUs


def test_p95_request_beyond_the_context_is_an_error() -> None:
    plan = _plan(_edit_assistant(slo={"promptTokensP95": 9000}))  # contextLength 8192
    assert any(f.severity == "error" and "p95 request" in f.message
               for f in _assistant(plan).findings)


def test_p95_below_median_is_refused_at_load() -> None:
    with pytest.raises(SpecError, match="promptTokensP95"):
        _plan(_edit_assistant(slo={"promptTokensP95": 100}))


def test_disaggregated_prefill_sizes_two_groups() -> None:
    plan = _plan(_edit_assistant(serving={"disaggregatedPrefill": True, "kvTransferGbps": 400}))
    w = _assistant(plan)
    d = w.results["disaggregated"]
    assert d["feasible"]
    assert w.gpus == (d["prefill_replicas"] + d["decode_replicas"]) * 4
    assert "prefill replicas" in w.key_figures and "decode replicas" in w.key_figures
    assert d["inputs"]["kv_transfer_bps"] == pytest.approx(50e9)


def test_multi_lora_adapters_take_memory_and_bandwidth() -> None:
    """100 rank-16 adapters on every linear layer of Llama-3-70B: each ~207M parameters
    (r·(d_in + d_out) per matrix, 7 matrices, 80 layers), all resident."""
    plan = _plan(_edit_assistant(serving={"loraAdapters": 100, "loraRank": 16}))
    w = _assistant(plan)
    per = w.results["lora_adapter"]["adapter_params"]
    h, f, kv = 8192, 28672, 1024
    assert per == 80 * 16 * (2 * (h + h) + 2 * (h + kv) + 2 * (h + f) + (f + h))
    base = _assistant(_plan(lambda d: None))
    extra = w.results["layout"]["weights_bytes"] - base.results["layout"]["weights_bytes"]
    assert extra == pytest.approx(100 * per * 2)
    assert w.results["slo"]["inputs"]["lora_adapters"] == 100
    assert w.gpus >= base.gpus


def _inline_gpu_pool(d: dict[str, Any]) -> None:
    d["pools"][0]["node"].pop("nodeType")
    d["pools"][0]["node"]["powerKW"] = 14
    d["pools"][0]["node"]["gpu"] = {"model": "Acme-X1", "count": 8, "memoryGB": 192,
                                    "memoryBandwidthTBps": 8.0, "bf16Tflops": 2250,
                                    "fp8Tflops": 4500, "tdpW": 1000}


def test_gpu_outside_the_catalog_given_inline() -> None:
    plan = _plan(_inline_gpu_pool)
    w = _assistant(plan)
    assert w.gpu_model == "Acme-X1"
    assert w.results["slo"]["inputs"]["memory_bandwidth_bps"] == 8.0e12
    assert w.gpu_memory_bytes == 192e9
    assert w.results["layout"]["tensor_parallel"] == 1  # 141 GB of BF16 weights fit 192 GB


def test_unknown_gpu_without_figures_says_how_to_give_it_inline() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][0]["node"].pop("nodeType")
        d["pools"][0]["node"]["gpu"]["model"] = "Acme-X1"
    with pytest.raises(SpecError, match="memoryBandwidthTBps"):
        _plan(edit)


def test_partial_inline_gpu_is_refused() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][0]["node"]["gpu"]["memoryGB"] = 96
    with pytest.raises(SpecError, match="inline GPU needs"):
        _plan(edit)


def test_model_outside_the_catalog_given_inline() -> None:
    """An architecture in full instead of a catalog name plans like the catalog's entry."""
    def edit(d: dict[str, Any]) -> None:
        w = next(x for x in d["workloads"] if x["name"] == "assistant")
        w["model"] = {"params": 70.55e9, "layers": 80, "hidden": 8192, "ffnHidden": 28672,
                      "heads": 64, "kvHeads": 8, "vocab": 128256, "maxContext": 8192}
    inline = _assistant(_plan(edit))
    catalog = _assistant(_plan(lambda d: None))
    assert inline.model.startswith("custom-")
    assert inline.gpus == catalog.gpus
    assert inline.results["slo"]["replicas"] == catalog.results["slo"]["replicas"]


def test_attention_data_parallelism_reaches_the_plan_with_its_warning() -> None:
    """Mixtral-8x22B (GQA, 8 KV heads) at TP8 on H100: with attention DP each rank caches
    only its own sequences but holds the attention weights whole; the plan's layout says
    so, and an MoE model gets the warning that varied request lengths cost attention DP 35 %."""
    def edit(dp: bool) -> Edit:
        def e(d: dict[str, Any]) -> None:
            w = next(x for x in d["workloads"] if x["name"] == "assistant")
            w["model"] = "mixtral-8x22b"
            w["precision"] = "bf16"
            w.setdefault("serving", {})["attentionDataParallel"] = dp
        return e
    off, on = _assistant(_plan(edit(False))), _assistant(_plan(edit(True)))
    assert on.results["layout"]["inputs"].get("attention_data_parallel") is True
    assert "attention_data_parallel" not in off.results["layout"]["inputs"]
    # the attention weights whole on each of the 8 GPUs instead of an eighth of them
    assert (on.results["layout"]["weights_bytes_per_gpu"]
            > off.results["layout"]["weights_bytes_per_gpu"])
    assert any("4.93 billion parameters" in n for n in on.results["layout"]["notes"])
    warned = [f for f in on.findings if "attention data parallelism" in f.message]
    assert warned and warned[0].severity == "warning" and "1.5x" in warned[0].fix
    assert not [f for f in off.findings if "attention data parallelism" in f.message]


def _fp4_on(gpu: str) -> WorkloadPlan:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][0]["node"]["gpu"]["model"] = gpu
        d["pools"][0]["node"].pop("nodeType", None)
        w = next(x for x in d["workloads"] if x["name"] == "assistant")
        w["precision"] = "fp4"
    return _assistant(_plan(edit))


def test_nvfp4_weights_take_4_5_bits_and_run_at_blackwells_fp4_peak() -> None:
    """NVFP4 (NVIDIA's Blackwell format): 16 E2M1 values share one FP8 scale, 4.5 bits each,
    so Llama-3-70B's weights are 0.5625 bytes per parameter; B200's FP4 peak is 9,000 dense
    TFLOP/s (HGX B200: 144 PFLOPS sparse per 8 GPUs). A Hopper GPU has no FP4 tensor cores:
    the weights run at its FP8 rate (1,979 on H100)."""
    b200 = _fp4_on("B200-SXM-180GB")
    slo = b200.results["slo"]["inputs"]
    assert slo["weight_precision"] == "fp4" and slo["dense_tflops"] == 9000
    params = CATALOG.model("llama-3-70b").params  # type: ignore[union-attr]
    tp = slo["tensor_parallel"]
    assert b200.results["layout"]["weights_bytes_per_gpu"] == pytest.approx(
        params * 0.5625 / tp, rel=0.02)
    # the KV cache stays at 16 bits: its attention math at B200's BF16 peak
    assert slo["attention_tflops"] == 2250
    assert _fp4_on("H100-SXM-80GB").results["slo"]["inputs"]["dense_tflops"] == 1979


def test_fp4_peak_given_inline() -> None:
    """An inline GPU's fp4Tflops is what fp4 weights run at; without it, its FP8 rate."""
    def edit(fp4: float | None) -> Edit:
        def e(d: dict[str, Any]) -> None:
            d["pools"][0]["node"].pop("nodeType", None)
            d["pools"][0]["node"]["gpu"] = {
                "model": "future-gpu", "count": 8, "memoryGB": 288,
                "memoryBandwidthTBps": 8, "bf16Tflops": 2500, "fp8Tflops": 5000,
                "tdpW": 1400, **({"fp4Tflops": fp4} if fp4 else {})}
            next(x for x in d["workloads"] if x["name"] == "assistant")["precision"] = "fp4"
        return e
    assert _assistant(_plan(edit(15000))).results["slo"]["inputs"]["dense_tflops"] == 15000
    assert _assistant(_plan(edit(None))).results["slo"]["inputs"]["dense_tflops"] == 5000
