"""Published training configurations plan (exit 0, no error finding) and land near their
published throughput.

Source of every row: NVIDIA Megatron-Bridge performance summary
(NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md, "25.11 NeMo Container",
Pre-Training Performance), tokens/s/GPU as published. Each spec copies the row's model,
GPUs, precision, GBS, MBS, sequence length and TP/PP/CP/VP (DP = GPUs / (TP·PP·CP)); the
plan's throughput is tokens / run compute time / GPUs at aiplat's default MFU (0.40 of the
dense peak at the precision) with the model-parallel traffic over the pool's links added.
Errors are (aiplat − published) / published; each test holds ±25 %. At this commit: B200
405B 618 vs 661 (−6.5 %), H100 405B 254 vs 292 (−13.0 %), B200 8B 29,476 vs 30,624 (−3.7 %),
H100 70B 1,414 vs 1,602 (−11.7 %); see docs/sizing-coverage.md.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.plan import build_plan
from aiplat.plan.models import WorkloadPlan
from aiplat.sizing import training
from aiplat.spec import parse_platform

CATALOG = load_catalog()
TOKENS = 1e10


def _spec(gpu: str, nodes: int, model: str, precision: str,
          parallelism: dict[str, Any]) -> dict[str, Any]:
    node = {"gpu": {"model": gpu, "count": 8}, "cpuCores": 112, "memoryGiB": 2048,
            "nics": [{"type": "infiniband", "rateGbps": 400, "count": 8, "segment": "hpc"}]}
    return {"apiVersion": "aiplat/v1alpha1", "kind": "Platform", "metadata": {"name": "pub"},
            "site": {"powerBudgetKW": 100000, "rackPowerLimitKW": 130},
            "pools": [{"name": "p", "node": node, "count": nodes}],
            "tenants": [{"name": "t", "quota": {"p": {"gpus": nodes * 8}}}],
            "workloads": [{"name": "w", "tenant": "t", "pool": "p", "kind": "pretrain",
                           "model": model, "precision": precision,
                           "parallelism": parallelism, "data": {"tokens": TOKENS}}]}


def _plan(data: dict[str, Any]) -> WorkloadPlan:
    plan = build_plan(parse_platform(yaml.safe_dump(data), "pub.yaml", CATALOG), CATALOG)
    w = plan.workloads[0]
    assert not [f.message for f in w.findings if f.severity == "error"]
    return w


def _tokens_per_second_per_gpu(w: WorkloadPlan) -> float:
    return TOKENS / w.results["time"]["seconds"] / w.gpus


class Row(NamedTuple):
    id: str
    gpu: str
    nodes: int
    model: str
    precision: str
    parallelism: dict[str, Any]
    published: float  # tokens/s/GPU

    def spec(self) -> dict[str, Any]:
        return _spec(self.gpu, self.nodes, self.model, self.precision, self.parallelism)


ROWS = [
    # DGX-B200: LLAMA3.1_405B, 128 GPUs, FP8-CS, GBS 64, MBS 1, 8192, TP 4, PP 8, CP 2, VP 8:
    # 661 tokens/s/GPU. DP is 2: sharded over DP only the optimizer needed 221 GB of 180.
    Row("b200-llama3.1-405b-fp8-128gpu", "B200-SXM-180GB", 16, "llama-3.1-405b", "fp8",
     {"tensor": 4, "pipeline": 8, "context": 2, "virtualStages": 8, "data": 2,
      "globalBatch": 64, "sequenceLength": 8192}, 661),
    # DGX-H100: LLAMA3.1_405B, 1024 GPUs, FP8-CS, GBS 512, MBS 1, 8192, TP 8, PP 8, CP 2,
    # VP 8: 292 tokens/s/GPU.
    Row("h100-llama3.1-405b-fp8-1024gpu", "H100-SXM-80GB", 128, "llama-3.1-405b", "fp8",
     {"tensor": 8, "pipeline": 8, "context": 2, "virtualStages": 8, "data": 8,
      "globalBatch": 512, "sequenceLength": 8192}, 292),
    # DGX-B200: LLAMA3_8B, 8 GPUs, FP8-CS, GBS 128, MBS 2, 8192, FSDP 0, TP/PP/CP 1:
    # 30,624 tokens/s/GPU (the FP8-CS figure, not the parenthesised FP8-MX one).
    Row("b200-llama3-8b-fp8-8gpu", "B200-SXM-180GB", 1, "llama-3-8b", "fp8",
        {"data": 8, "microBatch": 2, "globalBatch": 128, "sequenceLength": 8192}, 30624),
    # DGX-H100: LLAMA3_70B, 64 GPUs, FP8-CS, GBS 128, MBS 1, 8192, TP 4, PP 8, VP 5: 1,602.
    Row("h100-llama3-70b-fp8-64gpu", "H100-SXM-80GB", 8, "llama-3-70b", "fp8",
     {"tensor": 4, "pipeline": 8, "virtualStages": 5, "data": 2, "globalBatch": 128,
      "sequenceLength": 8192}, 1602),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_published_configuration_plans_within_25_percent(row: Row) -> None:
    w = _plan(row.spec())
    assert w.gpus == row.nodes * 8
    assert _tokens_per_second_per_gpu(w) == pytest.approx(row.published, rel=0.25)


def test_optimizer_states_are_sharded_over_data_times_context_parallelism() -> None:
    """Megatron's distributed optimizer shards over the data-parallel group with context
    parallelism (CP ranks hold the same weights): the 405B B200 row's optimizer states are
    half what DP 2 alone gives, and the row fits in 180 GB."""
    w = _plan(ROWS[0].spec())
    states = w.results["memory_states"]
    assert states["inputs"]["dp"] == 4  # DP 2 × CP 2
    shard = 405.85e9 / (4 * 8)
    assert states["optimizer_bytes"] == pytest.approx(shard * 12 / 4, rel=0.01)
    assert sum(w.memory_per_gpu_bytes.values()) <= w.gpu_memory_bytes


def test_the_published_b200_405b_row_exits_0(tmp_path: Path) -> None:
    """Through the CLI: the NVIDIA-shipped configuration is not refused (exit 0)."""
    path = tmp_path / "pub.yaml"
    path.write_text(yaml.safe_dump(ROWS[0].spec()))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["plan", str(path), "-o", "json"])
    assert rc == 0, err.getvalue()[-2000:]


def test_step_adds_the_exposed_communication_by_hand() -> None:
    """t = compute + (1−o)·(TP + PP + EP) + the gradient reduction beyond the backward."""
    traffic = training.ModelParallelTraffic(
        formula="", inputs={}, tp_bytes_per_step=0, pp_bytes_per_step=0, tp_seconds=3.0,
        pp_seconds=0.5, ep_seconds=1.0)
    step = training.step_with_communication(compute_seconds=6.0, traffic=traffic,
                                            dp_seconds=5.0)
    # DP: 5 s against a 4-s backward (2/3 of 6 s) shows 1 s
    assert step.seconds == pytest.approx(6 + 3 + 0.5 + 1 + 1)
    half = training.step_with_communication(
        compute_seconds=6.0, traffic=traffic, dp_seconds=3.0,
        overlap=training.Overlap(tp=0.5, ep=1.0))
    assert half.seconds == pytest.approx(6 + 1.5 + 0.5)
    assert half.slowdown == pytest.approx(8 / 6)


def _lora_on(gpu: str, tp: int, **extra: Any) -> WorkloadPlan:
    data = _spec(gpu, 1, "llama-3-8b", "bf16", {"tensor": tp, "data": 8 // tp,
                                                "globalBatch": 64, "sequenceLength": 4096})
    data["workloads"][0] |= {"kind": "lora", "data": {"tokens": 1e8}, **extra}
    return _plan(data)


def test_tensor_parallelism_over_pcie_costs_what_nvlink_does_not() -> None:
    """The same LoRA run at TP 8: on L40S the all-reduces cross PCIe 4 (32 GB/s a direction)
    and take most of the step; on H100 they cross NVLink 4 (450 GB/s). The step, the run and
    the MFU follow; the finding says the times include it."""
    l40s, h100 = _lora_on("L40S-48GB", 8), _lora_on("H100-SXM-80GB", 8)
    slow = l40s.results["step_communication"]["slowdown"]
    fast = h100.results["step_communication"]["slowdown"]
    assert slow > 2.5 and fast < 1.5 and slow > 2 * fast
    assert l40s.results["model_parallel_traffic"]["inputs"]["tp_bytes_per_second"] == 32e9
    assert h100.results["model_parallel_traffic"]["inputs"]["tp_bytes_per_second"] == 450e9
    assert any("PCIe 4" in f.message and "include it" in f.message for f in l40s.findings)
    # fewer TP ranks over PCIe: less of the step is traffic
    assert _lora_on("L40S-48GB", 2).results["step_communication"]["slowdown"] < slow
    # the overlap is the spec's to state
    hidden = _lora_on("L40S-48GB", 8, parallelism={
        "tensor": 8, "data": 1, "globalBatch": 64, "sequenceLength": 4096,
        "tensorOverlap": 1})
    assert hidden.results["step_communication"]["slowdown"] == pytest.approx(1.0)


def test_a_measured_rate_already_holds_its_communication() -> None:
    """achievedTflopsPerGpu is an end-to-end measurement: nothing is added to it."""
    w = _lora_on("L40S-48GB", 8, achievedTflopsPerGpu=100)
    assert w.results["step_communication"]["slowdown"] == 1
    assert w.results["time"]["inputs"]["achieved_tflops_per_gpu"] == 100
