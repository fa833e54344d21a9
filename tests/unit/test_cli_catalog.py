"""`aiplat catalog`: every entry listed, JSON/YAML as the data files write it, clear misses."""

from __future__ import annotations

import json
from importlib import resources

import pytest
import yaml

from aiplat.catalog import GpuModel, ModelArchitecture, NodeType, load_catalog
from aiplat.cli.main import main

CAT = load_catalog()
KINDS = {"gpus": ("gpus.yaml", GpuModel, CAT.gpus),
         "models": ("models.yaml", ModelArchitecture, CAT.models),
         "node-types": ("node_types.yaml", NodeType, CAT.node_types)}


def _out(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["catalog", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("kind", list(KINDS))
def test_json_is_the_data_file_entry_by_entry(kind: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    data_file, model, _ = KINDS[kind]
    raw = yaml.safe_load((resources.files("aiplat.catalog") / "data" / data_file).read_text())
    listed = json.loads(_out(capsys, kind, "-o", "json"))
    assert [e["name"] for e in listed] == [e["name"] for e in raw]
    for shown, written in zip(listed, raw, strict=True):
        # camelCase keys the data files use (headDim: derived as hidden / heads when the
        # file leaves it out), and the same entry once read back
        assert set(shown) - set(written) <= {"headDim"}, set(shown) - set(written)
        assert model.model_validate(shown) == model.model_validate(written)
    assert all(e["source"] for e in listed)


@pytest.mark.parametrize("kind", list(KINDS))
def test_yaml_equals_json_and_the_table_has_a_row_per_entry(
        kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    as_json = json.loads(_out(capsys, kind, "-o", "json"))
    assert yaml.safe_load(_out(capsys, kind, "-o", "yaml")) == as_json
    lines = _out(capsys, kind).splitlines()
    assert lines[0].startswith("NAME ")
    assert [line.split()[0] for line in lines[1:]] == [e.name for e in KINDS[kind][2]]


def test_gpu_table_shows_the_sizing_figures(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _out(capsys, "gpus").splitlines()
    header = lines[0].split()
    for line, g in zip(lines[1:], CAT.gpus, strict=True):
        row = dict(zip(header, line.split(), strict=False))
        assert row["MEMORY-GB"] == f"{g.memory_gb:g}"
        assert row["BF16-TFLOPS"] == f"{g.bf16_tflops:g}"
        assert row["FP8-TFLOPS"] == ("-" if g.fp8_tflops is None else f"{g.fp8_tflops:g}")


def test_node_type_table_names_each_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _out(capsys, "node-types").splitlines()
    for line, n in zip(lines[1:], CAT.node_types, strict=True):
        assert line.split()[:3] == [n.name, n.gpu or "-", str(n.gpus)]


def test_name_selects_one_entry_by_alias_in_any_case(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    shown = json.loads(_out(capsys, "gpus", "H100", "-o", "json"))
    assert [e["name"] for e in shown] == ["H100-SXM-80GB"]
    shown = json.loads(_out(capsys, "models", "Meta-Llama/Meta-Llama-3-8B", "-o", "json"))
    assert [e["name"] for e in shown] == ["llama-3-8b"]


def test_unknown_names_exit_2_with_a_hint_that_keeps_the_gpu(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "node-types", "pcie-l4-4"]) == 2
    err = capsys.readouterr().err
    assert "no node type 'pcie-l4-4' in the catalog" in err
    assert "no built-in node type carries L4-24GB" in err and "pcie-l40s-4" not in err
    assert main(["catalog", "gpus", "h100-smx"]) == 2
    assert "did you mean 'h100-sxm'?" in capsys.readouterr().err
    # another number is another product: no hint that turns an H20 into an H200
    assert main(["catalog", "gpus", "h20"]) == 2
    err = capsys.readouterr().err
    assert "did you mean" not in err and "use one of: A100-SXM4-40GB" in err
    assert main(["catalog", "switches"]) == 2
    assert "'switches' is not one of" in capsys.readouterr().err
