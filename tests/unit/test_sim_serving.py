"""The serving pools' day (sched.sim_serving, issue #43 item 2): replicas scale on a load
that moves over the day, after the start-up chain, and the strategies are judged by TTFT
misses and GPU-hours. Hand-made scales pin the decisions; the example's run through the CLI
shows the table and the itemised chain. What this cannot show: a real vLLM's TTFT past the
planned load (the model counts every such request a miss, an upper bound)."""

from __future__ import annotations

import json
from typing import Any

import yaml
from click.testing import CliRunner

from aiplat.cli.sim import sim
from aiplat.plan.serving_scale import ServingScale, StartupChain
from aiplat.sched.sim_serving import DEFAULT_DAY, load_at, serve_day
from aiplat.spec import example_text

# half the load until noon, all of it until 18:00, half again after
LOW_THEN_HIGH = (0.5,) * 12 + (1.0,) * 6 + (0.5,) * 6


def _scale(per_node: int = 1) -> ServingScale:
    return ServingScale(workload="w", tenant="t", pool="p", role="serve", floor=5, ceiling=20,
                        gpus_per_replica=1, pods_per_replica=1, replicas_per_node=per_node,
                        qps=10.0,
                        qps_per_replica=1.0, ttft_target_s=1.0, queue_allowance=9,
                        weight_bytes=1e9)


def _chain(boot: float) -> StartupChain:
    return StartupChain(node_boot_s=boot, driver_s=180.0, image_pull_s=126.0, model_load_s=60.0)


def _first_above(day: Any, replicas: int) -> float:
    return float(next(h for h, _, ready in day.timeline if ready > replicas))


def test_load_interpolates_between_hour_midpoints() -> None:
    assert load_at(LOW_THEN_HIGH, 6 * 3600 + 1800) == 0.5
    assert load_at(LOW_THEN_HIGH, 12 * 3600) == 0.75  # halfway from 11:30 to 12:30
    assert abs(sum(DEFAULT_DAY) / 24 - 1.0) < 0.01  # qps is the default day's mean


def test_scale_up_waits_for_the_chain_and_misses_meanwhile() -> None:
    short = serve_day(_scale(), _chain(600.0), "autoscale", LOW_THEN_HIGH)
    long = serve_day(_scale(), _chain(3000.0), "autoscale", LOW_THEN_HIGH)
    # load passes the floor's 5 qps at 11:30; replicas wanted a minute later (REACT_S) are
    # ready a whole chain after that, never before
    assert _first_above(short, 5) >= 11.5 + short.chain.total_s / 3600
    assert _first_above(long, 5) >= 11.5 + long.chain.total_s / 3600
    assert _first_above(long, 5) > _first_above(short, 5)
    assert 0 < short.ttft_misses < long.ttft_misses  # misses while the replicas start
    fixed = serve_day(_scale(), _chain(3000.0), "fixed", LOW_THEN_HIGH)
    assert fixed.ttft_misses == 0 and fixed.peak_replicas == 10
    assert short.peak_replicas == long.peak_replicas == 10


def test_autoscaled_uses_fewer_gpu_hours_than_fixed_at_peak_size() -> None:
    auto = serve_day(_scale(), _chain(600.0), "autoscale", LOW_THEN_HIGH)
    fixed = serve_day(_scale(), _chain(600.0), "fixed", LOW_THEN_HIGH)
    assert fixed.gpu_hours == 10 * 24  # the peak's 10 replicas all day
    assert auto.gpu_hours < fixed.gpu_hours
    assert auto.gpu_hours > 5 * 24  # never below the floor


def test_a_warm_node_or_a_free_slot_waits_only_the_model_load() -> None:
    cold = serve_day(_scale(), _chain(3000.0), "autoscale", LOW_THEN_HIGH)
    warm = serve_day(_scale(), _chain(3000.0), "warm", LOW_THEN_HIGH, warm_nodes=5)
    assert warm.ttft_misses < cold.ttft_misses
    assert warm.gpu_hours > cold.gpu_hours  # the warm nodes are paid for
    # five replicas on a node: the floor's node has no free slot, the next node boots once
    # and its free slots then take the rest at the model load's delay
    packed = serve_day(_scale(per_node=10), _chain(3000.0), "autoscale", LOW_THEN_HIGH)
    assert packed.ttft_misses < cold.ttft_misses


def test_sim_compare_prints_the_serving_day_and_the_chain_itemised() -> None:
    r = CliRunner().invoke(sim, ["compare", "--serving"])
    assert r.exit_code == 0, r.output
    assert "serving over a day" in r.stdout
    for item in ("node boot", "driver", "image pull", "model load"):
        assert item in r.stdout
    r = CliRunner().invoke(sim, ["compare", "--serving", "-o", "json"])
    rows = json.loads(r.stdout)
    assert [(x["workload"], x["strategy"]) for x in rows] == [
        (w, s) for w in ("assistant", "docs-search") for s in ("fixed", "autoscale", "warm")]
    by = {(x["workload"], x["strategy"]): x for x in rows}
    ds = by["docs-search", "autoscale"]
    assert ds["floor"] == 11 and ds["gpuHours"] < by["docs-search", "fixed"]["gpuHours"]
    assert ds["ttftMisses"] > by["docs-search", "warm"]["ttftMisses"] > 0
    assert by["docs-search", "fixed"]["ttftMisses"] == 0
    chain = ds["startupChainS"]
    assert chain["node boot"] == 420  # the l40s pool's autoscaling.startupSeconds
    assert chain["total"] == round(sum(v for k, v in chain.items() if k != "total"), 1)


def test_a_flat_day_from_the_spec_needs_no_scaling(tmp_path: Any) -> None:
    data = yaml.safe_load(example_text())
    for w in data["workloads"]:
        if w["name"] == "docs-search":
            w["slo"]["hourlyLoad"] = [1.0] * 24
    spec = tmp_path / "flat.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    r = CliRunner().invoke(sim, ["compare", str(spec), "--serving", "-o", "json"])
    assert r.exit_code == 0, r.output
    by = {(x["workload"], x["strategy"]): x for x in json.loads(r.stdout)}
    auto, fixed = by["docs-search", "autoscale"], by["docs-search", "fixed"]
    assert auto["ttftMisses"] == fixed["ttftMisses"] == 0
    assert auto["gpuHours"] == fixed["gpuHours"] == 11 * 24


def test_hourly_load_needs_24_hours(tmp_path: Any) -> None:
    data = yaml.safe_load(example_text())
    data["workloads"][-2]["slo"]["hourlyLoad"] = [1.0] * 23
    spec = tmp_path / "short.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    r = CliRunner().invoke(sim, ["compare", str(spec), "--serving"])
    assert getattr(r.exception, "exit_code", None) == 2  # the CLI's main exits 2 on it
    assert "hourlyLoad" in str(r.exception) and "short.yaml" in str(r.exception)
