"""Issue #44: an inline GPU given with ``interconnectGBps`` plans (it crashed: the value was
passed twice to the GPU model in ``plan/resolve.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiplat.cli.main import main
from aiplat.spec import example_text

INLINE = ("gpu: {model: H100-SXM-80GB, count: 8}",
          "gpu: {model: Acme-X1, count: 8, memoryGB: 96, memoryBandwidthTBps: 4, "
          "bf16Tflops: 900, tdpW: 700, interconnectGBps: 600}")


@pytest.mark.parametrize("model", ["Acme-X1", "H100-SXM-80GB"])
def test_an_inline_gpu_with_interconnect_plans(
    model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = example_text()
    assert INLINE[0] in text
    spec = tmp_path / "platform.yaml"
    spec.write_text(text.replace(INLINE[0], INLINE[1].replace("Acme-X1", model)))
    assert main(["plan", str(spec), "-d", str(tmp_path / "out"), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {p["name"] for p in data["pools"]} == {"h100", "l40s"}
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["pools"][0]["gpuModel"] == model


def test_the_inline_interconnect_is_the_gpus() -> None:
    from aiplat.catalog import load_catalog
    from aiplat.plan.resolve import PCIE5_X16_GBPS, pool_gpu
    from aiplat.spec import EXAMPLE, parse_platform

    catalog = load_catalog()
    for given, expected in (("interconnectGBps: 600", 600.0), ("", PCIE5_X16_GBPS)):
        line = INLINE[1].replace(", interconnectGBps: 600", f", {given}" if given else "")
        platform = parse_platform(example_text().replace(INLINE[0], line), EXAMPLE, catalog)
        gpu = pool_gpu(platform.pools[0], catalog)
        assert gpu is not None and gpu.interconnect_gbps == expected
