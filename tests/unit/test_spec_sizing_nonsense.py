"""Issue 21's "silent nonsense accepted" list, case by case, through the CLI on a spec file:
each is refused (exit 2; file:line, the key, the rule and the fix where the spec alone decides
it, the key and the fix where the catalog model does) or flagged (a finding in plan.json).

Jain's index "unfair when nobody waits" is the scheduler's, tested where it is computed:
tests/unit/test_sched_kueue.py::test_jain_counts_no_unfairness_when_nobody_waits."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.cli.main import main

BASE = """
apiVersion: aiplat/v1alpha1
kind: Platform
metadata: {name: nonsense}
site: {powerBudgetKW: 10000, rackPowerLimitKW: 130}
pools:
  - name: h100
    node:
      gpu: {model: H100-SXM-80GB, count: 8}
      cpuCores: 112
      memoryGiB: 2048
      nics: [{type: ethernet, rateGbps: 25, count: 1, segment: hpc}]
    count: 8
tenants:
  - name: t
    quota: {h100: {gpus: 64}}
"""


def _spec(tmp_path: Path, workload: dict[str, Any], edit: Any = None) -> Path:
    data = yaml.safe_load(BASE)
    data["workloads"] = [{"name": "w", "tenant": "t", "pool": "h100", **workload}]
    if edit is not None:
        edit(data)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def _plan(tmp_path: Path, spec: Path) -> dict[str, Any]:
    out = tmp_path / "out"
    assert main(["plan", str(spec), "-d", str(out)]) == 0
    return json.loads((out / "plan.json").read_text())


def _messages(plan: dict[str, Any]) -> list[str]:
    found = [f["message"] for f in plan["findings"]]
    for w in plan["workloads"]:
        found += [f["message"] for f in w["findings"]]
    return found


PRETRAIN: dict[str, Any] = {"kind": "pretrain", "model": "llama-3-8b", "data": {"tokens": 1e9}}

# Cases the spec alone decides: `aiplat spec validate` and `aiplat plan` both refuse them with
# file:line, the key and the fix.
SPEC_REFUSED = [
    # globalBatch 1 with microBatch 4 on 8 data-parallel ranks (the issue's own case) ...
    ({"data": 8, "microBatch": 4, "globalBatch": 1}, "parallelism.globalBatch",
     "globalBatch (1) is not a multiple of microBatch (4) × data parallel (8) = 32",
     "globalBatch 32"),
    # ... and any global batch that is not whole micro-batches on every rank.
    ({"data": 8, "globalBatch": 100}, "parallelism.globalBatch",
     "globalBatch (100) is not a multiple", "globalBatch 104"),
    ({"data": 8, "context": 3, "sequenceLength": 4096}, "parallelism.context",
     "context (3) does not divide sequenceLength (4096)", "a divisor of the sequence length"),
]


@pytest.mark.parametrize("case", SPEC_REFUSED, ids=[c[1] + ":" + c[3] for c in SPEC_REFUSED])
def test_impossible_layouts_the_spec_decides_are_refused_at_their_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
    case: tuple[dict[str, Any], str, str, str],
) -> None:
    parallelism, key, rule, fix = case
    spec = _spec(tmp_path, {**PRETRAIN, "parallelism": parallelism})
    for argv in (["spec", "validate", str(spec)], ["plan", str(spec), "-d", str(tmp_path / "o")]):
        err = _refused(capsys, argv)
        assert re.search(rf"spec\.yaml:\d+:\d+: workloads\[0\]\.{re.escape(key)}: ", err), err
        assert rule in err and f"(fix: {fix}" in err


def test_64_pipeline_stages_on_32_layers_refused_for_an_inline_model_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model given in the spec: its 32 layers are known to the spec, so validate refuses."""
    model = {"params": 8e9, "layers": 32, "hidden": 4096, "heads": 32, "kvHeads": 8,
             "vocab": 128256}
    spec = _spec(tmp_path, {**PRETRAIN, "model": model,
                            "parallelism": {"data": 1, "pipeline": 64}})
    err = _refused(capsys, ["spec", "validate", str(spec)])
    assert re.search(r"spec\.yaml:\d+:\d+: workloads\[0\]\.parallelism\.pipeline: ", err)
    assert "pipeline (64) exceeds the model's 32 layers" in err and "(fix: pipeline ≤ 32" in err


def test_64_pipeline_stages_on_a_catalog_32_layer_model_refused_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A catalog model's layers are looked up by the reference check: spec validate and plan
    both exit 2 at the key's line with the rule and the fix."""
    spec = _spec(tmp_path, {**PRETRAIN, "parallelism": {"data": 1, "pipeline": 64}})
    for argv in (["spec", "validate", str(spec)], ["plan", str(spec), "-d", str(tmp_path / "o")]):
        err = _refused(capsys, argv)
        assert re.search(r"spec\.yaml:\d+:\d+: workloads\[0\]\.parallelism\.pipeline: ", err)
        assert "pipeline (64) exceeds the model's 32 layers" in err and "(llama-3-8b)" in err
        assert "(fix: pipeline ≤ 32)" in err
    assert not (tmp_path / "o").exists()


def test_tensor_and_expert_parallelism_against_a_catalog_model_at_their_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, {**PRETRAIN, "parallelism": {"data": 1, "tensor": 3}})
    err = _refused(capsys, ["spec", "validate", str(spec)])
    assert "workloads[0].parallelism.tensor: tensor (3) does not divide the model's 32" in err
    spec = _spec(tmp_path, {**PRETRAIN, "parallelism": {"data": 2, "expert": 2}})
    err = _refused(capsys, ["spec", "validate", str(spec)])
    assert "workloads[0].parallelism.expert: expert (2) is set but the model is dense" in err


def test_tensor_parallelism_across_nodes_is_flagged(tmp_path: Path) -> None:
    # an InfiniBand rail per GPU: over the base pool's one 25 GbE port the TP traffic, now in
    # the step, would make the run too long for the pool (exit 1)
    ib = [{"type": "infiniband", "rateGbps": 400, "count": 8, "segment": "hpc"}]
    spec = _spec(tmp_path, {**PRETRAIN, "model": "llama-3-70b",
                            "parallelism": {"tensor": 16, "pipeline": 2, "data": 1}},
                 edit=lambda d: d["pools"][0]["node"].update(nics=ib))
    assert any("spans nodes" in m for m in _messages(_plan(tmp_path, spec)))


def test_run_and_step_time_count_the_same_flops_at_128k(tmp_path: Path) -> None:
    """The issue's 2.3x at 128K: steps x step time is the run time, from one FLOP count."""
    seq, gb = 131072, 16
    spec = _spec(tmp_path, {**PRETRAIN, "model": "llama-3.1-8b", "data": {"tokens": 1e10},
                            "parallelism": {"data": 2, "context": 8, "tensor": 2, "recompute":
                                            "full", "globalBatch": gb, "sequenceLength": seq}},
                 edit=lambda d: d["tenants"][0]["quota"]["h100"].update(gpus=64))
    w = _plan(tmp_path, spec)["workloads"][0]["results"]
    steps = 1e10 / (gb * seq)
    assert steps * w["step"]["seconds"] == pytest.approx(w["time"]["seconds"], rel=1e-9)


def test_full_recompute_keeps_no_attention_scores(tmp_path: Path) -> None:
    """FlashAttention never stores the a·s² scores: with recompute full the one-layer working
    set is 34·s·b·h bytes (Korthikanti Table 2 without 5as/h), not 34 + 5·a·s/h (here 5x)."""
    spec = _spec(tmp_path, {**PRETRAIN, "parallelism": {"data": 8, "recompute": "full",
                                                        "sequenceLength": 8192}})
    acts = _plan(tmp_path, spec)["workloads"][0]["results"]["memoryActivations"]
    assert acts["inputs"]["flashAttention"] is True
    sbh = 8192 * 1 * 4096
    assert acts["recomputeWorkingBytes"] == pytest.approx(34 * sbh)
    assert acts["perLayerBytes"] == pytest.approx(2 * sbh)


def test_lora_adapters_are_not_filed_as_optimizer_and_the_checkpoint_is_the_adapter(
    tmp_path: Path,
) -> None:
    spec = _spec(tmp_path, {"kind": "lora", "model": "llama-3-8b", "data": {"tokens": 1e8},
                            "lora": {"rank": 16}, "parallelism": {"data": 1}})
    w = _plan(tmp_path, spec)["workloads"][0]
    mem = w["memoryPerGpuBytes"]
    assert mem["adapters"] < 0.01 * mem["weights"]
    # Adam moments of the adapter parameters only (a full model's would be 4x its weights).
    assert mem["optimizer"] <= 8 * mem["adapters"]
    assert w["results"]["checkpoint"]["totalBytes"] < 0.05 * mem["weights"]


def test_gpu_only_node_power_is_flagged(tmp_path: Path) -> None:
    def l4(d: dict[str, Any]) -> None:
        d["pools"][0]["node"]["gpu"]["model"] = "L4"
    spec = _spec(tmp_path, {"kind": "online-inference", "model": "llama-3-8b",
                            "slo": {"queriesPerSecond": 1}}, edit=l4)
    assert any("estimate" in m and "kW" in m for m in _messages(_plan(tmp_path, spec)))


def test_rates_in_messages_have_no_exponent_and_no_zero(tmp_path: Path) -> None:
    """A data-parallel run over one 25 Gbit/s NIC per node: the all-reduce finding writes both
    rates as an admin does ("391 MB/s (3.12 Gbit/s)"), never "1.01e+03 Gbit/s" or "0 B/s"."""
    spec = _spec(tmp_path, {**PRETRAIN, "parallelism": {"data": 32}})
    messages = _messages(_plan(tmp_path, spec))
    allreduce = [m for m in messages if "all-reduce needs" in m]
    assert allreduce and "give 391 MB/s (3.12 Gbit/s) per GPU" in allreduce[0]
    for m in messages:
        assert not re.search(r"\de[+-]\d", m), m
        assert " 0 B/s" not in m, m


def test_mostly_idle_h200_pool_is_flagged(tmp_path: Path) -> None:
    def h200(d: dict[str, Any]) -> None:
        d["pools"][0]["node"]["gpu"]["model"] = "H200-SXM-141GB"
    spec = _spec(tmp_path, {"kind": "finetune", "model": "llama-3-8b", "data": {"tokens": 1e8},
                            "runsPerMonth": 1, "parallelism": {"data": 8, "zeroStage": 3}},
                 edit=h200)
    assert any("% use" in m for m in _messages(_plan(tmp_path, spec)))


@pytest.mark.parametrize(("model", "parallelism", "rule"), [
    ({"heads": 32}, {"data": 1, "tensor": 3}, "tensor (3) does not divide the model's 32"),
    ({"experts": 8, "expertsPerToken": 2, "activeParams": 2e9}, {"data": 6, "expert": 3},
     "expert (3) does not divide the 8 experts"),
    ({}, {"data": 2, "expert": 2}, "expert (2) is set but the model is dense"),
])
def test_inline_model_layout_limits_are_refused_at_their_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: dict[str, Any],
    parallelism: dict[str, Any], rule: str,
) -> None:
    inline = {"params": 8e9, "layers": 32, "hidden": 4096, "heads": 32, "kvHeads": 8,
              "vocab": 128256, **model}
    spec = _spec(tmp_path, {**PRETRAIN, "model": inline, "parallelism": parallelism})
    err = _refused(capsys, ["spec", "validate", str(spec)])
    assert re.search(r"spec\.yaml:\d+:\d+: workloads\[0\]\.parallelism\.\w+: ", err), err
    assert rule in err, err


def test_model_layout_problem_takes_a_catalog_models_figures() -> None:
    """The hook the catalog check (spec/refs.py) can call with a catalog model's shape."""
    from aiplat.catalog import load_catalog
    from aiplat.spec.models import ParallelismSpec, model_layout_problem

    m = load_catalog().model("mixtral-8x7b")
    assert m is not None
    par = ParallelismSpec.model_validate({"pipeline": 64})
    problem = model_layout_problem(par, layers=m.layers, heads=m.heads, experts=m.experts)
    assert problem is not None and problem[2] == ("parallelism", "pipeline")
    assert "exceeds the model's 32 layers" in problem[0]
    ok = ParallelismSpec.model_validate({"pipeline": 4, "expert": 8, "data": 8})
    assert model_layout_problem(ok, layers=m.layers, heads=m.heads, experts=m.experts) is None
