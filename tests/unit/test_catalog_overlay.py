"""``--catalog FILE`` (issue #45 item 5): a site's own GPUs, models and node types on top of
the built-in catalog, checked as a spec is (file, line, field, fix; exit 2), an entry named
like a built-in one replacing it with a notice; $AIPLAT_CATALOG too; nothing carried over to
the next invocation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.spec.load import example_text

H20 = """\
gpus:
  - name: H20-96GB
    aliases: [h20]
    vendor: nvidia
    architecture: hopper
    formFactor: sxm
    memoryGb: 96
    memoryBandwidthTbps: 4.0
    bf16Tflops: 148
    fp8Tflops: 296
    fp32Tflops: 44
    tdpW: 400
    interconnect: NVLink 4
    interconnectGbps: 900
    pcieGen: 5
    source: https://www.nvidia.com/ (the H20's published figures, for this test)
"""


def _spec(tmp_path: Path) -> Path:
    """The example's l40s pool as an inline H20 node (no node type)."""
    text = example_text().replace("      nodeType: pcie-l40s-4\n      gpu: {model: L40S, count: 4}",
                                  "      gpu: {model: H20-96GB, count: 4}\n      powerKW: 3")
    assert "H20-96GB" in text
    path = tmp_path / "platform.yaml"
    path.write_text(text)
    return path


def test_a_gpu_from_the_site_catalog_plans(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    spec, extra = _spec(tmp_path), tmp_path / "site.yaml"
    extra.write_text(H20)
    assert main(["spec", "validate", str(spec)]) == 2
    assert "H20-96GB" in capsys.readouterr().err
    assert main(["--catalog", str(extra), "spec", "validate", str(spec)]) == 0
    assert "valid" in capsys.readouterr().out
    assert main(["--catalog", str(extra), "catalog", "gpus", "h20", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["memoryGb"] == 96
    # the next invocation without it has the packaged catalog only
    assert main(["catalog", "gpus"]) == 0
    assert "H20-96GB" not in capsys.readouterr().out and load_catalog().gpu("h20") is None


def test_the_environment_names_catalog_files_too(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    extra = tmp_path / "site.yaml"
    extra.write_text(H20)
    monkeypatch.setenv("AIPLAT_CATALOG", str(extra))
    assert main(["spec", "validate", str(_spec(tmp_path))]) == 0
    capsys.readouterr()


def test_an_entry_named_like_a_built_in_one_replaces_it_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra = tmp_path / "site.yaml"
    extra.write_text(H20.replace("H20-96GB", "L40S").replace("aliases: [h20]", "aliases: []"))
    assert main(["--catalog", str(extra), "catalog", "gpus", "L40S", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert "note: --catalog replaces the built-in GPU L40S" in err
    assert json.loads(out)[0]["tdpW"] == 400


@pytest.mark.parametrize("case", [
    (("memoryGb: 96", "memoryGB: 96"), ":7:5: gpus[0].memoryGB", "unknown field 'memoryGB'",
     "did you mean 'memoryGb'?"),
    (("pcieGen: 5", "pcieGen: 9"), ":15:5: gpus[0].pcieGen", "9 is out of range",
     "use a value ≤ 6"),
    (("gpus:", "gpu:"), ":1:1: gpu", "unknown field 'gpu'", "did you mean 'gpus'?"),
    (("    source: https", "    # source: https"), ":2:5: gpus[0].source",
     "required field is missing", "add 'source'"),
])
def test_a_bad_catalog_file_names_line_field_and_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        case: tuple[tuple[str, str], str, str, str]) -> None:
    edit, where, says, fix = case
    extra = tmp_path / "site.yaml"
    extra.write_text(H20.replace(*edit))
    assert main(["--catalog", str(extra), "catalog", "gpus"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert f"site.yaml{where}" in err and says in err and fix in err, err


def test_a_missing_catalog_file_is_an_input_error(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--catalog", str(tmp_path / "nope.yaml"), "catalog", "gpus"]) == 2
    err = capsys.readouterr().err
    assert "nope.yaml" in err and "cannot read the catalog" in err and "fix:" in err
