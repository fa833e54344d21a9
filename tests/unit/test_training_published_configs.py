"""NVIDIA-shipped training configurations plan: Megatron's distributed optimizer shards over
data × context parallelism.

Source: NVIDIA Megatron-Bridge performance summary (NVIDIA-NeMo/Megatron-Bridge
docs/performance-summary.md, "25.11 NeMo Container", Pre-Training Performance). Each spec
copies the row's model, GPUs, precision, GBS, MBS, sequence length and TP/PP/CP/VP
(DP = GPUs / (TP·PP·CP)).
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
]


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

