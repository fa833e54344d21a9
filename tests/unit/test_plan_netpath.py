"""The spec's contradictions along its network paths as plan findings, and the interface
MTU each segment gives (``plan/netpath.py``): once in plan.findings, on the CLI and in
plan.json; what the netplan renders and what ``node check`` expects follow the same rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.node.checks import Expectations
from aiplat.plan import build_plan
from aiplat.plan.netpath import interface_mtu, network_findings
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import NicType, Platform, SegmentSpec


def spec_data(edit: Any = None) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return data


def platform_from(edit: Any = None) -> Platform:
    return parse_platform(yaml.safe_dump(spec_data(edit), sort_keys=False), "test.yaml",
                          load_catalog())


def segment(d: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in d["network"]["segments"] if s["name"] == name)


def test_example_roce_on_ethernet_nics_is_one_finding_with_the_fix() -> None:
    plan = build_plan(platform_from(), load_catalog())
    mine = [f for f in plan.findings if "RoCE" in f.message]
    assert len(mine) == 1
    f = mine[0]
    assert (f.severity, f.subject) == ("warning", "pool h100")
    assert "segment storage asks for RoCE" in f.message and "2 storage NIC(s) are ethernet" \
        in f.message
    assert f.fix == ("fit RoCE NICs (pools[h100].node.nics[1].type: roce), or set rdma: none "
                     "on segment storage")
    assert not [r for r in plan.network.recommendations if "RoCE NIC" in r.advice]


def test_the_finding_on_the_cli_and_in_plan_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["plan", "-d", str(out)]) == 0
    # findings go to stderr, the tables to stdout
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "asks for RoCE" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning: pool h100: segment storage")
    data = json.loads((out / "plan.json").read_text())
    assert sum("asks for RoCE" in f["message"] for f in data["findings"]) == 1


@pytest.mark.parametrize(("nics", "rdma", "expect"), [
    ("roce", "roce", None),
    ("infiniband", "roce", "RoCE"),
    ("ethernet", "infiniband", "InfiniBand"),
    ("roce", "infiniband", "InfiniBand"),
])
def test_nic_type_against_the_segments_rdma(nics: str, rdma: str, expect: str | None) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][0]["node"]["nics"][1]["type"] = nics
        segment(d, "storage")["rdma"] = rdma
    found = [f for f in network_findings(platform_from(edit)) if "segment storage" in f.message]
    if expect is None:
        assert found == []
    else:
        assert len(found) == 1 and f"asks for {expect}" in found[0].message


def test_hpc_rails_of_the_wrong_kind_and_no_rdma_asked() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][0]["node"]["nics"][0]["type"] = "roce"
        segment(d, "storage")["rdma"] = "none"
    found = network_findings(platform_from(edit))
    assert [f.message.split(":")[0] for f in found] == [
        "segment hpc asks for InfiniBand, but the pool's 8 hpc NIC(s) are roce, which cannot "
        "carry it"]
    assert "pools[h100].node.nics[0].type: infiniband" in found[0].fix


@pytest.mark.parametrize(("rdma", "mtu", "nic", "want"), [
    ("infiniband", 4096, NicType.INFINIBAND, 4092),  # IPoIB datagram: 4 bytes less
    ("infiniband", 2048, NicType.INFINIBAND, 2044),
    ("infiniband", 9000, NicType.INFINIBAND, 9000),  # connected mode
    ("roce", 9000, NicType.ROCE, 9000),
    ("infiniband", 4096, NicType.ETHERNET, 4096),  # not IPoIB: the segment's MTU
    ("none", 1500, NicType.ETHERNET, 1500),
])
def test_interface_mtu(rdma: str, mtu: int, nic: NicType, want: int) -> None:
    seg = SegmentSpec.model_validate({"name": "s", "purpose": "hpc", "mtu": mtu, "rdma": rdma})
    assert interface_mtu(seg, nic) == want


def test_node_check_expects_what_ipoib_shows() -> None:
    assert Expectations.from_platform(platform_from(), "h100").mtu == 4092


@pytest.mark.parametrize(("checks_mtu", "finding"), [(4096, True), (4092, False), (None, False)])
def test_checks_mtu_against_the_segment(checks_mtu: int | None, finding: bool) -> None:
    def edit(d: dict[str, Any]) -> None:
        if checks_mtu is not None:
            d["pools"][0]["node"]["checks"] = {"mtu": checks_mtu}
    found = [f for f in network_findings(platform_from(edit)) if "checks.mtu" in f.message]
    assert bool(found) is finding
    if finding:
        assert found[0].message.startswith(
            "node.checks.mtu expects 4096 on the RDMA NICs' interfaces, but hpc gives 4092")
