"""Version matrix: range matching, approved entries, built-in driver/CUDA facts, images."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from aiplat.errors import InputError
from aiplat.node.collect import collect_inventory
from aiplat.node.matrix import (
    check_image,
    driver_facts,
    evaluate_matrix,
    image_cuda_version,
    observe,
    version_matches,
)
from aiplat.spec import load_platform
from fixtures.nodes import hgx_h100, l40s_4
from fixtures.nvsmi_outputs import smi_xml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TODAY = date(2026, 11, 29)


@pytest.mark.parametrize(("expected", "observed", "ok"), [
    ("580.95.05", "580.95.05", True),
    ("580.95.05", "580.95.0", False),
    ("1.34", "1.34.2-1.1", True),
    ("1.34", "1.35.0", False),
    (">=6.1,<6.13", "6.8.0-49-generic", True),
    (">=6.1,<6.13", "6.13.0", False),
    (">=6.1,<6.13", "6.1", True),
    ("containerd 2.1", "containerd 2.1.4-1", True),
    ("containerd 2.1", "cri-o 2.1.4", False),
    ("v25.8.0", "25.8.0", True),
    ("!=1.2.3", "1.2.3", False),
])
def test_version_matches(expected: str, observed: str, ok: bool) -> None:
    assert version_matches(expected, observed) is ok


def _entries() -> list[dict[str, str | None]]:
    platform = load_platform(FIXTURES / "platform-nodes.yaml")
    return [e.model_dump() for e in platform.versions.approved]


def test_hgx_matches_the_r580_entry(tmp_path: Path) -> None:
    (tmp_path / "smi.xml").write_text(smi_xml())
    inv = collect_inventory(hgx_h100(tmp_path / "root"), {"smi-xml": tmp_path / "smi.xml"})
    report = evaluate_matrix(_entries(), observe(inv), TODAY)
    assert report.matched == "r580-k8s134" and report.ok
    entry = report.entries[0]
    assert entry.unobserved == ["gpu_operator", "dra_driver", "kueue"]
    assert report.observed["firmware"] == "96.00.99.00.01"
    assert report.observed["container_runtime"] == "containerd 2.1.4-1"
    cluster = observe(inv, {"kueue": "0.18.0"})
    report = evaluate_matrix(_entries(), cluster, TODAY)
    assert report.matched is None and report.closest == "r580-k8s134"
    assert [(d.key, d.expected, d.observed) for d in report.entries[0].differences] == [
        ("kueue", "0.19.2", "0.18.0")]
    with pytest.raises(InputError, match="unknown key"):
        observe(inv, {"cuda_toolkit": "1"})


def test_l40s_matches_its_own_entry_and_reports_what_differs(tmp_path: Path) -> None:
    inv = collect_inventory(l40s_4(tmp_path))
    report = evaluate_matrix(_entries(), observe(inv), TODAY)
    assert report.matched == "r570-l40s"
    r580 = report.entries[0]
    assert [d.key for d in r580.differences] == ["driver", "container_toolkit",
                                                 "container_runtime", "kubernetes"]
    assert [f.message for f in report.facts] == [
        "branch R570 is not in aiplat's lifecycle table"]


def test_driver_facts_eol_and_cuda_minimum() -> None:
    facts = driver_facts({"driver": "535.216.03", "cuda": "13.0"}, TODAY)
    assert [(f.severity, f.message) for f in facts] == [
        ("warning", "R535 LTSB reached end of life on 2026-06-30"),
        ("error", "CUDA 13.0 needs driver >= 580, node has 535.216.03")]
    assert driver_facts({"driver": "535.216.03", "cuda": "12.2"}, date(2026, 1, 1)) == []
    assert [f.severity for f in driver_facts({"driver": "520.61.05", "cuda": "12.0"}, TODAY)
            if f.subject.startswith("cuda")] == ["error"]


def test_image_cuda_against_the_driver() -> None:
    cfg = {"config": {"Env": ["PATH=/usr/bin", "CUDA_VERSION=12.4.1"]}}
    assert image_cuda_version(cfg, "img.json") == "12.4.1"
    req = {"config": {"Env": ["NVIDIA_REQUIRE_CUDA=cuda>=13.0 brand=tesla,driver>=535"]}}
    assert image_cuda_version(req, "img.json") == "13.0"
    with pytest.raises(InputError, match="CUDA_VERSION"):
        image_cuda_version({"config": {"Env": []}}, "img.json")
    assert check_image("12.4.1", "580.95.05", "13.0").severity == "info"
    assert check_image("13.0.1", "570.172.08", "12.8").severity == "error"
    assert check_image("12.9", "550.54.14", "12.4").severity == "warning"  # minor-version compat
    assert check_image("12.4", None, None).severity == "warning"
