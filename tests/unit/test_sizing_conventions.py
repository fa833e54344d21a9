"""Figures in the conventions of the well-known estimators, beside aiplat's, with the
difference named: accelerate's ``estimate-memory`` here (DeepSpeed's ZeRO estimators are in
tests/unit/test_moe_sizing.py, ``test_pure_data_parallel_plan_shows_deepspeeds_figure_too``)."""

from __future__ import annotations

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.errors import InputError
from aiplat.plan import build_plan
from aiplat.sizing.memory import accelerate_training_estimate
from aiplat.spec import parse_platform

SPEC = """
apiVersion: aiplat/v1alpha1
kind: Platform
metadata: {name: conventions}
site: {powerBudgetKW: 1000, rackPowerLimitKW: 130}
pools:
  - name: h100
    node: {gpu: {model: H100-SXM-80GB, count: 8}, cpuCores: 112, memoryGiB: 2048}
    count: 1
tenants:
  - name: t
    quota: {h100: {gpus: 8}}
"""

MIB, GIB = 2**20, 2**30
# bert-base-cased: 108,310,272 parameters plus two int64 buffers of 512 positions
# (position_ids, token_type_ids) = 8,192 bytes that accelerate's module sizes include; sized
# in fp32 as the command does, that is 2,048 more 4-byte values.
BERT_BASE_FP32_VALUES = 108_310_272 + 2_048


@pytest.mark.parametrize(("precision", "published", "unit"), [
    ("fp32", 1.61, GIB),     # "float32 | 84.95 MB | 413.18 MB | 1.61 GB"
    ("fp16", 826.36, MIB),   # "float16 | 42.47 MB | 206.59 MB | 826.36 MB"
])
def test_accelerate_estimate_memory_bert_base_cased(
    precision: str, published: float, unit: int
) -> None:
    """huggingface/accelerate docs/source/usage_guides/model_size_estimator.md: `accelerate
    estimate-memory bert-base-cased`, column "Training using Adam", printed in binary units
    labelled MB/GB and rounded to 2 decimals: matched exactly at that rounding."""
    e = accelerate_training_estimate(BERT_BASE_FP32_VALUES, precision=precision,
                                     aiplat_bytes=16 * BERT_BASE_FP32_VALUES)
    assert round(e.accelerate_bytes / unit, 2) == published


def test_accelerate_prints_the_largest_component_not_the_sum() -> None:
    """The named difference: for bf16 mixed-precision Adam accelerate prints 8 bytes per
    parameter (its fp32 Adam moments, the largest component); its own components add up to
    4 + 6 + 8 = 18; aiplat (the ZeRO paper) holds 2 + 2 + 12 = 16. In fp32 the largest
    component (the 4x-model step) is 16, as aiplat's 4 + 4 + 8."""
    p = 8.03e9
    bf16 = accelerate_training_estimate(p, precision="bf16", aiplat_bytes=16 * p)
    assert (bf16.accelerate_bytes, bf16.components_sum_bytes) == (8 * p, 18 * p)
    assert bf16.difference_bytes == -8 * p
    fp32 = accelerate_training_estimate(p, precision="fp32", aiplat_bytes=16 * p)
    assert fp32.difference_bytes == 0
    with pytest.raises(InputError, match="N/A"):
        accelerate_training_estimate(p, precision="int4", aiplat_bytes=0)


def test_plan_shows_accelerates_figure_beside_deepspeeds() -> None:
    """A pure data-parallel Llama-3-8B pre-training: the plan names both tools' figures and
    how they differ from its own."""
    catalog = load_catalog()
    data = yaml.safe_load(SPEC)
    data["workloads"] = [{"name": "w", "tenant": "t", "kind": "pretrain", "pool": "h100",
                          "model": "llama-3-8b", "parallelism": {"data": 8, "zeroStage": 3},
                          "data": {"tokens": 1e9}}]
    plan = build_plan(parse_platform(yaml.safe_dump(data), "t.yaml", catalog), catalog)
    w = plan.workloads[0]
    est = w.results["accelerate_estimate"]
    p = 8030261248
    assert est["accelerate_bytes"] == pytest.approx(8 * p)
    assert est["aiplat_bytes"] == pytest.approx(16 * p)  # unsharded, the tool's scope
    line = w.key_figures["model states, accelerate estimate-memory"]
    assert "largest component" in line and "unsharded" in line
    assert "model states, DeepSpeed's estimator" in w.key_figures


def test_fp8_difference_is_named() -> None:
    """accelerate's comment: "With native TransformersEngine, there is no memory savings with
    FP8": its fp8 row is the bf16 one; aiplat agrees (2 + 2 + 12 bytes) and says so."""
    e = accelerate_training_estimate(1e9, precision="fp8", aiplat_bytes=16e9)
    assert e.accelerate_bytes == 8e9
    assert any("no saving" in n for n in e.notes)
