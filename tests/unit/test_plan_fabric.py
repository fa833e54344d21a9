"""The plan sizes the fabrics (issue #44): ``Plan.fabric`` from the pools' NICs and
``network.fabric``, folded into the facility's racks and power; the spec's fabric fields
fail as every spec error does (file, line, field, fix; exit 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.plan import Plan
from aiplat.plan.build import build_plan
from aiplat.spec import EXAMPLE, example_text, parse_platform


def _plan(text: str) -> Plan:
    catalog = load_catalog()
    return build_plan(parse_platform(text, EXAMPLE, catalog), catalog)


def superpod_4su(extra: str = "") -> str:
    """The example's H100 pool grown to NVIDIA's 4-SU DGX H100 SuperPOD: 127 DGX H100 with 8
    NDR rails, SUs of 32, 4 UFM ports (DGX SuperPOD H100 RA, Table 4), four per rack."""
    t = example_text()
    for old, new in (("powerBudgetKW: 160", "powerBudgetKW: 2000"),
                     ("rackPowerLimitKW: 30", "rackPowerLimitKW: 45"),
                     ("nodeFailuresPerYear: 0.25", "nodeFailuresPerYear: 0"),
                     ("    count: 6\n    topology:\n      nodesPerRack: 2",
                      "    count: 127\n    topology:\n      nodesPerRack: 4"),
                     ("network:\n  segments:", "network:\n  fabric:\n    compute: "
                      "{scalableUnitNodes: 32, ufmAppliances: 4" + extra + "}\n  segments:")):
        assert old in t
        t = t.replace(old, new)
    return t


def test_the_example_plans_one_switch_and_its_management_fabrics() -> None:
    plan = _plan(example_text())
    c = plan.fabric.compute
    assert c is not None and c.technology == "infiniband-ndr" and c.pools == ["h100"]
    # 6 nodes + 1 spare, 8 hpc NICs each: 56 ports on one 64-port switch, no UFM
    assert (c.sized.tiers, c.sized.switches, c.sized.ports_spare, c.ufm_appliances) == \
        (1, 1, 8, 0)
    assert plan.fabric.storage.sized.ports_needed == 14  # 7 h100 nodes x 2 storage NICs
    assert plan.fabric.out_of_band.sized.switches >= 1


def test_the_facility_adds_the_fabrics_racks_and_power() -> None:
    plan = _plan(example_text())
    f, fab = plan.facility, plan.fabric
    mgmt_w = f.results["management_power_w"]["value"]
    assert fab.power_w > 0 and fab.racks >= 1
    assert f.it_power_kw * 1000 == pytest.approx(
        sum(p.pool_power_kw for p in plan.pools) * 1000 + mgmt_w + fab.power_w)
    assert f.racks == sum(p.racks for p in plan.pools) + 1 + fab.racks  # one management rack
    assert f.results["fabric"]["racks"] == fab.racks


def test_a_4su_h100_superpod_plans_nvidias_compute_fabric_and_counts_its_racks() -> None:
    plan = _plan(superpod_4su())
    c = plan.fabric.compute
    assert c is not None
    f = c.sized
    # DGX SuperPOD H100 RA, Table 4, 4 SUs: 127 nodes, 32 leaf, 16 spine, 1020 compute and
    # UFM cables, 1024 spine-leaf cables
    assert (f.nodes, f.leaves, f.spines, f.cores, c.ufm_appliances) == (127, 32, 16, 0, 4)
    assert (f.node_leaf_cables, f.cables_between("leaf-spine")) == (1020, 1024)
    h100 = next(p for p in plan.pools if p.name == "h100")
    assert h100.racks == 32
    # racks and power include the network: before #44 the facility counted the pools and the
    # management rack alone
    assert plan.fabric.racks >= 2
    assert plan.facility.racks == sum(p.racks for p in plan.pools) + 1 + plan.fabric.racks
    assert plan.facility.it_power_kw > sum(p.pool_power_kw for p in plan.pools) + \
        plan.fabric.power_w / 1000


def test_the_spec_sets_the_switch_power_and_the_assumption_goes() -> None:
    assumed = _plan(superpod_4su())
    given = _plan(superpod_4su(", switchPowerW: 500"))
    assert given.fabric.compute is not None and assumed.fabric.compute is not None
    assert given.fabric.compute.switch_power_w == 500
    assert assumed.fabric.power_w - given.fabric.power_w == pytest.approx(48 * 500)
    assert not any("compute switch" in a for a in given.fabric.assumptions)
    assert any("compute switch" in a for a in assumed.fabric.assumptions)


def test_plan_json_and_the_summary_carry_the_fabric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "-d", str(tmp_path / "out"), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fabric"]["compute"]["technology"] == "infiniband-ndr"
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["fabric"]["compute"]["sized"]["portsUsed"] == 56
    md = (tmp_path / "out" / "report.md").read_text()
    assert "**Network fabrics**" in md and "| compute (infiniband-ndr, 8 rails, 1 tier) |" in md
    assert main(["plan", "-d", str(tmp_path / "out")]) == 0
    assert re.search(r"^fabric: compute infiniband-ndr 1 switch .* 7 switches, 1 network rack",
                     capsys.readouterr().out, re.M)


@pytest.mark.parametrize(("field", "wanted"), [
    ("switchPorts: 1",
     r"network\.fabric\.compute\.switchPorts: 1 is out of range \(fix: use a value ≥ 2\)"),
    ("planes: diagonal", r"network\.fabric\.compute\.planes: "),
    ("radix: 64", r"network\.fabric\.compute\.radix: unknown field 'radix'"),
])
def test_a_wrong_fabric_field_is_a_spec_error(
    field: str, wanted: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "platform.yaml"
    path.write_text(example_text().replace(
        "network:\n  segments:", "network:\n  fabric:\n    compute:\n      " + field
        + "\n  segments:"))
    assert main(["spec", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert re.search(rf"{re.escape(str(path))}:\d+:\d+: {wanted}", err), err
    assert "(fix: " in err


def test_full_scalable_units_leave_the_default_ufm_no_port_and_the_plan_says_so() -> None:
    t = superpod_4su().replace("count: 127", "count: 128").replace(
        "compute: {scalableUnitNodes: 32, ufmAppliances: 4}", "compute: {scalableUnitNodes: 32}")
    plan = _plan(t)
    c = plan.fabric.compute
    assert c is not None and c.ufm_appliances == 2 and c.sized.manager_ports == 0
    assert (c.sized.leaves, c.sized.spines, c.sized.node_leaf_cables) == (32, 16, 1024)
    assert any(f.subject == "fabric compute" and "no free leaf port" in f.message
               for f in plan.findings)
