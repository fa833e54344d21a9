"""The node commands on the real test machine (a GPU-less virtio VM here): the inventory must
describe it truthfully, validate against the published schema, and checks must run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from aiplat.cli.node import node
from aiplat.node.collect import collect_inventory
from aiplat.node.placement import evaluate_placement

pytestmark = pytest.mark.integration

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "src/aiplat/node/schema"
                     / "node-inventory-v1.schema.json").read_text())


def test_inventory_of_this_host_validates_and_matches_sysfs() -> None:
    r = CliRunner().invoke(node, ["inventory", "-o", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    jsonschema.validate(data, SCHEMA)
    sysfs = sorted(os.listdir("/sys/bus/pci/devices"))
    assert [d["address"] for d in data["pci"]] == sysfs
    for d in data["pci"]:
        vendor = Path(f"/sys/bus/pci/devices/{d['address']}/vendor").read_text().strip()
        assert d["vendor"] == vendor
    if any(d["vendor"] == "0x1af4" for d in data["pci"]):  # a virtio VM, as in CI
        assert any(d["vendorName"] == "virtio" for d in data["pci"])
    assert data["host"]["kernel"] == os.uname().release
    assert data["host"]["cpu"]["threads"] == os.cpu_count()
    # Other tests create and delete lab interfaces concurrently: compare the stable ones.
    names = {n["name"]: n for n in data["net"]}
    assert "lo" in names and names["lo"]["virtual"]
    for name in os.listdir("/sys/class/net"):
        if os.path.exists(f"/sys/class/net/{name}/device") and name in names:
            assert names[name]["pciAddress"] is not None


def test_placement_and_checks_run_on_this_host() -> None:
    inv = collect_inventory("/")
    p = evaluate_placement(inv)
    assert len(p.gpus) == len(inv.gpus)
    r = CliRunner().invoke(node, ["check", "-o", "json"])
    assert r.exit_code in (0, 1), r.output  # 1 only with a real finding, never a crash
    data = json.loads(r.stdout)
    assert {x["name"] for x in data["results"]} >= {"gpu-count", "pcie-link", "disk-space",
                                                    "iommu", "secure-boot"}
    failed = [x for x in data["results"] if x["status"] == "fail"]
    assert (r.exit_code == 1) == bool(failed)
