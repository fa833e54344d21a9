"""Attention data parallelism (serving.attentionDataParallel; TensorRT-LLM enable_attention_dp,
SGLang --enable-dp-attention): each TP rank runs attention for its own share of the batch
with the attention weights whole, so a rank caches and reads only its own sequences' KV.
The published figure (TensorRT-LLM DeepSeek-R1 on 8 x H200) is in test_sizing_calibration.py."""

from __future__ import annotations

import pytest

from aiplat.sizing import calibration as cal
from aiplat.sizing.inference import (
    MemoryBudget,
    Replica,
    ServingEfficiency,
    decode_throughput,
    gpus_per_replica,
)
from aiplat.spec.models import ServingSpec

GIB = 2**30
DP = ServingEfficiency(attention_data_parallel=True)


def test_mla_latent_is_split_over_the_ranks_by_sequence() -> None:
    """TP8 on DeepSeek-V3: without attention DP every GPU caches the whole 576-value latent of
    every token; with it each GPU holds 1/8 of the tokens, so the replica holds 8x as many."""
    budget = MemoryBudget(gpu_memory_bytes=141e9, gpus_per_node=8)
    args = dict(context_tokens=3072, concurrency=128, budget=budget,
                weight_precision="fp8", kv_precision="bf16")
    off = gpus_per_replica(cal.DEEPSEEK_V3, **args)  # type: ignore[arg-type]
    on = gpus_per_replica(cal.DEEPSEEK_V3, attention_data_parallel=True,
                          **args)  # type: ignore[arg-type]
    assert off.tensor_parallel == on.tensor_parallel == 8
    per_token = 61 * 576 * 2  # layers · latent · bf16 bytes
    assert off.kv_cache_bytes_per_gpu == pytest.approx(per_token * 3072 * 128)
    assert on.kv_cache_bytes_per_gpu == pytest.approx(per_token * 3072 * 128 / 8)
    # the attention projections (11.4B, MLA) are whole on each rank: 7/8 of them added
    attention = cal.DEEPSEEK_V3.attention_weights
    assert attention == pytest.approx(11.41e9, rel=1e-3)
    assert on.weights_bytes_per_gpu - off.weights_bytes_per_gpu == pytest.approx(
        attention * 7 / 8)
    # fewer bytes left for the cache, but each byte caches 8x the tokens: 6x the replica's
    assert on.kv_budget_bytes_per_gpu < off.kv_budget_bytes_per_gpu
    assert on.kv_token_capacity == int(on.kv_budget_bytes_per_gpu // (per_token / 8))
    assert on.kv_token_capacity > 5 * off.kv_token_capacity  # 6x here
    assert any("attention data parallelism" in n for n in on.notes)


def test_decode_reads_only_its_own_sequences_cache() -> None:
    """Per step and GPU the KV read falls to 1/TP; the weight read grows by the attention
    weights each rank now holds whole."""
    base = Replica(model=cal.DEEPSEEK_V3, hardware=cal.H200_FP8, weight_precision="fp8",
                   kv_precision="bf16", tensor_parallel=8)
    on = Replica(model=base.model, hardware=base.hardware, weight_precision="fp8",
                 kv_precision="bf16", tensor_parallel=8, efficiency=DP)
    a = decode_throughput(base, batch=1024, context_tokens=2048)
    b = decode_throughput(on, batch=1024, context_tokens=2048)
    assert b.kv_read_bytes_per_gpu == pytest.approx(a.kv_read_bytes_per_gpu / 8)
    assert b.weights_read_bytes_per_gpu - a.weights_read_bytes_per_gpu == pytest.approx(
        cal.DEEPSEEK_V3.attention_weights * 7 / 8)  # fp8: one byte each
    assert b.tokens_per_second > 1.5 * a.tokens_per_second
    assert b.inputs["attention_data_parallel"] is True
    assert "attention_data_parallel" not in a.inputs


def test_on_a_dense_gqa_model_it_costs_memory() -> None:
    """Llama-3-70B's 8 KV heads already split over TP: attention DP saves no cache there, and
    its 12B attention weights whole on every rank push the layout from TP4 to TP8."""
    budget = MemoryBudget(gpu_memory_bytes=80e9, gpus_per_node=8)
    off = gpus_per_replica(cal.LLAMA3_70B, context_tokens=4096, concurrency=64, budget=budget)
    on = gpus_per_replica(cal.LLAMA3_70B, context_tokens=4096, concurrency=64, budget=budget,
                          attention_data_parallel=True)
    assert (off.tensor_parallel, on.tensor_parallel) == (4, 8)
    # same bytes of cache per token of the replica: 1/TP of the tokens, all 8 heads each
    assert on.kv_cache_bytes_per_gpu * 8 == pytest.approx(off.kv_cache_bytes_per_gpu * 4)
    assert on.weights_bytes_per_gpu > off.weights_bytes_per_gpu / 2


def test_one_gpu_is_unchanged() -> None:
    """At TP1 there is nothing to split: the figures are the same."""
    budget = MemoryBudget(gpu_memory_bytes=80e9)
    off = gpus_per_replica(cal.LLAMA3_8B, context_tokens=4096, concurrency=8, budget=budget)
    on = gpus_per_replica(cal.LLAMA3_8B, context_tokens=4096, concurrency=8, budget=budget,
                          attention_data_parallel=True)
    assert (on.tensor_parallel, on.needed_bytes_per_gpu) == (1, off.needed_bytes_per_gpu)


def test_spec_key_defaults_off_and_is_in_the_schema() -> None:
    """serving.attentionDataParallel: a documented boolean, off unless set."""
    assert ServingSpec().attention_data_parallel is False
    assert ServingSpec.model_validate({"attentionDataParallel": True}).attention_data_parallel
    prop = ServingSpec.model_json_schema(by_alias=True)["properties"]["attentionDataParallel"]
    assert prop["type"] == "boolean" and "enable_attention_dp" in prop["description"]
