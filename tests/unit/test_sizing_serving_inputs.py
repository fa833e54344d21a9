"""Serving inputs beyond mean lengths: length distributions and disaggregated prefill."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aiplat.errors import InputError
from aiplat.plan.models import WorkloadPlan
from aiplat.sizing.disaggregated import disaggregated_replicas
from aiplat.sizing.inference import (
    LatencyTarget,
    Replica,
    ServingHardware,
    Traffic,
    decode_throughput,
    prefill_time,
    replicas_for_slo,
)
from aiplat.sizing.lengths import lognormal_lengths
from aiplat.sizing.shape import ModelShape

H100 = ServingHardware(memory_bandwidth_bps=3.35e12, dense_tflops=989)
M70B = ModelShape(params=70.55e9, layers=80, hidden=8192, heads=64, kv_heads=8)
TP4 = Replica(model=M70B, hardware=H100, tensor_parallel=4)


def test_lognormal_through_two_percentiles_matches_numpy_samples() -> None:
    """The closed form against a million samples of numpy's lognormal with the same σ."""
    d = lognormal_lengths(p50=1000, p95=3000)
    assert d.sigma == pytest.approx(math.log(3) / 1.6448536, rel=1e-6)
    x = np.random.default_rng(7).lognormal(mean=math.log(1000), sigma=d.sigma, size=1_000_000)
    assert np.percentile(x, 95) == pytest.approx(3000, rel=0.01)
    assert x.mean() == pytest.approx(d.mean, rel=0.01)
    assert np.percentile(x, 99) == pytest.approx(d.p99, rel=0.02)
    assert d.mean > d.p50  # right-skewed: the mean sits above the median


def test_length_percentiles_out_of_order_are_refused() -> None:
    with pytest.raises(InputError, match="p50 <= p95"):
        lognormal_lengths(p50=2000, p95=1000)


def test_disaggregated_prefill_follows_its_formulas() -> None:
    """DistServe's split: prefill replicas from the M/D/1 TTFT bound plus the KV transfer,
    decode replicas from Little's law over decode time alone; checked by hand."""
    traffic = Traffic(qps=20, prompt_tokens=2000, output_tokens=300)
    target = LatencyTarget(ttft_seconds=1.0, decode_tokens_per_second=20)
    link = 50e9  # 400 Gbit/s
    r = disaggregated_replicas(TP4, traffic, target, max_batch_per_replica=64,
                               kv_transfer_bps=link)
    assert r.feasible
    t_p = prefill_time(TP4, prompt_tokens=2000).ttft_seconds
    kv = 80 * 2 * 8 * 128 * 2 * 2000  # layers · (K, V) · KV heads · head dim · bf16 · tokens
    assert r.kv_transfer_seconds == pytest.approx(kv / link)
    rho = 20 * t_p / r.prefill_replicas
    assert r.ttft_seconds == pytest.approx(t_p * (1 + rho / (2 * (1 - rho))) + kv / link)
    assert r.ttft_seconds <= 1.0
    # One prefill replica fewer breaks the TTFT bound (or saturates).
    fewer = 20 * t_p / (r.prefill_replicas - 1)
    assert fewer >= 1 or t_p * (1 + fewer / (2 * (1 - fewer))) + kv / link > 1.0
    rate = decode_throughput(TP4, batch=r.batch_per_replica, context_tokens=2150
                             ).tokens_per_second_per_sequence
    assert rate >= 20
    assert r.decode_replicas == math.ceil(20 * 300 / rate / r.batch_per_replica - 1e-9)
    assert r.gpus == 4 * (r.prefill_replicas + r.decode_replicas)


def test_disaggregated_decode_runs_faster_per_user_than_colocated() -> None:
    """With long prompts colocated decode loses the prefill share of each GPU (rate·(1 − ρ));
    the decode replicas of a disaggregated deployment do not."""
    traffic = Traffic(qps=8, prompt_tokens=8000, output_tokens=200)
    target = LatencyTarget(ttft_seconds=3.0, decode_tokens_per_second=20)
    colo = replicas_for_slo(TP4, traffic, target, max_batch_per_replica=32)
    dis = disaggregated_replicas(TP4, traffic, target, max_batch_per_replica=32,
                                 kv_transfer_bps=50e9)
    assert colo.feasible and dis.feasible
    assert colo.prefill_utilization > 0.1
    assert dis.decode_tokens_per_second_per_user > colo.decode_tokens_per_second_per_user


def test_disaggregated_ttft_below_transfer_is_infeasible_with_the_reason() -> None:
    traffic = Traffic(qps=1, prompt_tokens=32_000, output_tokens=100)
    r = disaggregated_replicas(TP4, traffic, LatencyTarget(ttft_seconds=2.0,
                                                          decode_tokens_per_second=10),
                               max_batch_per_replica=8, kv_transfer_bps=1e9)
    assert not r.feasible and r.gpus == 0
    assert any("KV cache" in reason for reason in r.reasons)


def test_prefill_replicas_take_their_own_tensor_parallelism() -> None:
    """DistServe (OSDI 2024, section 4) chooses each phase's parallelism apart. Prefill at
    TP 8, decode at TP 4: the TTFT side is the TP-8 prefill time, its replicas count 8 GPUs,
    the decode side is the same as with one layout."""
    traffic = Traffic(qps=20, prompt_tokens=8000, output_tokens=300)
    target = LatencyTarget(ttft_seconds=2.0, decode_tokens_per_second=20)
    wide = Replica(model=M70B, hardware=H100, tensor_parallel=8)
    one = disaggregated_replicas(TP4, traffic, target, max_batch_per_replica=64,
                                 kv_transfer_bps=50e9)
    apart = disaggregated_replicas(TP4, traffic, target, max_batch_per_replica=64,
                                   kv_transfer_bps=50e9, prefill=wide)
    assert apart.prefill_seconds == pytest.approx(
        prefill_time(wide, prompt_tokens=8000).ttft_seconds)
    assert apart.prefill_seconds < one.prefill_seconds
    assert (apart.decode_replicas, apart.batch_per_replica) == (
        one.decode_replicas, one.batch_per_replica)
    assert apart.gpus == 8 * apart.prefill_replicas + 4 * apart.decode_replicas
    assert apart.inputs["prefill_tensor_parallel"] == 8


def _assistant_with(serving: dict[str, object]) -> WorkloadPlan:
    """Plan the built-in example with the assistant's serving block changed."""
    import yaml

    from aiplat.catalog import load_catalog
    from aiplat.plan import build_plan
    from aiplat.spec import example_text, parse_platform

    catalog = load_catalog()
    data = yaml.safe_load(example_text())
    w = next(x for x in data["workloads"] if x["name"] == "assistant")
    w.setdefault("serving", {}).update(serving)
    plan = build_plan(parse_platform(yaml.safe_dump(data, sort_keys=False), "t.yaml",
                                     catalog), catalog)
    return next(x for x in plan.workloads if x.name == "assistant")


def test_plan_sizes_prefill_at_its_own_tensor_parallelism() -> None:
    w = _assistant_with({"disaggregatedPrefill": True, "prefillTensorParallel": 8})
    d = w.results["disaggregated"]
    assert d["feasible"] and d["inputs"]["prefill_tensor_parallel"] == 8
    assert w.gpus == 8 * d["prefill_replicas"] + 4 * d["decode_replicas"]
    assert w.key_figures["prefill replicas"].endswith("× 8 GPU")


@pytest.mark.parametrize(("serving", "match"), [
    ({"prefillTensorParallel": 8}, "prefillTensorParallel is set but disaggregatedPrefill"),
    ({"disaggregatedPrefill": True, "prefillTensorParallel": 3}, "does not split"),
    ({"disaggregatedPrefill": True, "prefillTensorParallel": 16}, "exceeds the 8 GPUs of a node"),
    ({"disaggregatedPrefill": True, "prefillTensorParallel": 1}, "the weights take"),
])
def test_impossible_prefill_layouts_are_refused(serving: dict[str, object], match: str) -> None:
    with pytest.raises(InputError, match=match):
        _assistant_with(serving)
