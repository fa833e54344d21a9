"""Chunked prefill (Sarathi-Serve, OSDI 2024): prompts in chunks beside the decode steps.
Formulas in aiplat.sizing.chunked; checked by hand here, against the colocated sizing, and
through the plan."""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.errors import SpecError
from aiplat.plan import build_plan
from aiplat.plan.models import WorkloadPlan
from aiplat.sizing.chunked import chunked_replicas
from aiplat.sizing.inference import (
    LatencyTarget,
    Replica,
    ServingHardware,
    Traffic,
    decode_throughput,
    prefill_time,
    replicas_for_slo,
)
from aiplat.sizing.shape import ModelShape
from aiplat.spec import example_text, parse_platform

H100 = ServingHardware(memory_bandwidth_bps=3.35e12, dense_tflops=989)
M70B = ModelShape(params=70.55e9, layers=80, hidden=8192, heads=64, kv_heads=8)
TP4 = Replica(model=M70B, hardware=H100, tensor_parallel=4)
TARGET = LatencyTarget(ttft_seconds=2.0, decode_tokens_per_second=20)


def test_chunked_prefill_follows_its_formulas() -> None:
    """T(C) from the decode step's memory and compute time plus C/s of the prefill compute;
    ρ, the per-user rate, the TTFT and Little's law by hand at the chosen point."""
    traffic = Traffic(qps=10, prompt_tokens=2000, output_tokens=300)
    r = chunked_replicas(TP4, traffic, TARGET, max_batch_per_replica=64, chunk_tokens=512)
    assert r.feasible and r.chunks_per_prompt == 4
    d = decode_throughput(TP4, batch=r.batch_per_replica, context_tokens=2150)
    p = prefill_time(TP4, prompt_tokens=2000)
    tpf = 0.86**2
    f_c = p.compute_seconds * tpf * 512 / 2000
    tc = d.time_per_output_token_seconds * max(d.memory_seconds, d.compute_seconds + f_c) / max(
        d.memory_seconds, d.compute_seconds)
    assert r.step_seconds_with_chunk == pytest.approx(tc)
    lam = 10 / r.replicas
    rho = lam * 4 * tc
    assert r.chunk_slot_utilization == pytest.approx(rho)
    rate = lam * 4 + (1 - rho) / d.time_per_output_token_seconds
    assert r.decode_tokens_per_second_per_user == pytest.approx(rate)
    assert r.ttft_seconds == pytest.approx(4 * tc * (1 + rho / (2 * (1 - rho))))
    assert r.replicas * r.batch_per_replica >= 10 * (r.ttft_seconds + 300 / rate)
    # One replica fewer breaks a target or Little's law at this batch.
    assert r.replicas > 1
    lam1 = 10 / (r.replicas - 1)
    rho1 = lam1 * 4 * tc
    if rho1 < 1:
        ttft1 = 4 * tc * (1 + rho1 / (2 * (1 - rho1)))
        rate1 = lam1 * 4 + (1 - rho1) / d.time_per_output_token_seconds
        assert (ttft1 > 2.0 or rate1 < 20
                or (r.replicas - 1) * r.batch_per_replica < 10 * (ttft1 + 300 / rate1))


def test_a_chunk_hidden_under_the_weight_read_costs_decode_nothing() -> None:
    """A small chunk's FLOPs fit under the memory-bound step (T(C) = T0): decode per user
    stays at 1/T0 however busy the chunk slot, which the colocated sizing cannot give."""
    traffic = Traffic(qps=10, prompt_tokens=2000, output_tokens=300)
    r = chunked_replicas(TP4, traffic, TARGET, max_batch_per_replica=64, chunk_tokens=128)
    assert r.step_seconds_with_chunk == pytest.approx(r.step_seconds_decode_only)
    assert r.decode_tokens_per_second_per_user == pytest.approx(1 / r.step_seconds_decode_only)
    assert r.chunks_per_prompt == math.ceil(2000 / 128)


def test_chunks_need_fewer_replicas_than_whole_prompts_at_high_load() -> None:
    """Sarathi-Serve's claim (higher serving capacity under a decode-latency target): at 40
    queries/s Llama-3-70B on TP4 H100 needs 12 colocated replicas with whole prompts
    between decode steps, 8 with 512-token chunks (TTFT stays within 2 s)."""
    traffic = Traffic(qps=40, prompt_tokens=2000, output_tokens=300)
    whole = replicas_for_slo(TP4, traffic, TARGET, max_batch_per_replica=64)
    chunks = chunked_replicas(TP4, traffic, TARGET, max_batch_per_replica=64, chunk_tokens=512)
    assert (whole.replicas, chunks.replicas) == (12, 8)
    assert chunks.ttft_seconds <= 2.0


def test_a_chunk_too_small_for_the_ttft_is_infeasible_with_the_reason() -> None:
    traffic = Traffic(qps=1, prompt_tokens=32000, output_tokens=100)
    r = chunked_replicas(TP4, traffic, LatencyTarget(ttft_seconds=0.5,
                                                     decode_tokens_per_second=20),
                         max_batch_per_replica=8, chunk_tokens=64)
    assert not r.feasible and r.replicas == 0
    assert "500 iterations" in r.reasons[0] and "(fix: " in r.reasons[0]


def _assistant(serving: dict[str, Any]) -> WorkloadPlan:
    catalog = load_catalog()
    data = yaml.safe_load(example_text())
    w = next(x for x in data["workloads"] if x["name"] == "assistant")
    w.setdefault("serving", {}).update(serving)
    plan = build_plan(parse_platform(yaml.safe_dump(data, sort_keys=False), "t.yaml",
                                     catalog), catalog)
    return next(x for x in plan.workloads if x.name == "assistant")


def test_plan_sizes_the_assistant_with_chunked_prefill() -> None:
    w = _assistant({"chunkedPrefillTokens": 512})
    c = w.results["chunked_prefill"]
    assert c["feasible"] and c["inputs"]["chunk_tokens"] == 512
    assert w.gpus == c["replicas"] * 4
    assert "prefill chunks" in w.key_figures
    assert not [f for f in w.findings if f.severity == "error"]


def test_chunked_and_disaggregated_prefill_together_are_refused_at_their_line() -> None:
    with pytest.raises(SpecError, match=r"t\.yaml:\d+:\d+: .*chunkedPrefillTokens and "
                                        r"disaggregatedPrefill are both set"):
        _assistant({"chunkedPrefillTokens": 512, "disaggregatedPrefill": True})


@pytest.mark.parametrize("serving", [{"chunkedPrefillTokens": 512},
                                     {"disaggregatedPrefill": True}])
def test_p99_ttft_target_is_checked_with_chunked_and_disaggregated_prefill(
    serving: dict[str, Any],
) -> None:
    """A p99 TTFT target is not silently ignored when prefill is chunked or disaggregated:
    the tail is reported and a 1 ms target is a finding."""
    from aiplat.spec import example_text as text

    catalog = load_catalog()
    data = yaml.safe_load(text())
    w = next(x for x in data["workloads"] if x["name"] == "assistant")
    w.setdefault("serving", {}).update(serving)
    w["slo"]["timeToFirstTokenP99Ms"] = 1
    plan = build_plan(parse_platform(yaml.safe_dump(data, sort_keys=False), "t.yaml",
                                     catalog), catalog)
    a = next(x for x in plan.workloads if x.name == "assistant")
    assert "TTFT p95 / p99" in a.key_figures
    assert any("p99 time to first token" in f.message for f in a.findings)
