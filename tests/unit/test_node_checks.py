"""Health checks on the fixtures: every planted fault is found, clean nodes report nothing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from aiplat.errors import InputError
from aiplat.node.checks import (
    CHECKS,
    CheckContext,
    CheckResult,
    Expectations,
    node_condition,
    node_taints,
    register,
    run_checks,
)
from aiplat.node.collect import collect_inventory
from aiplat.node.inventory import Inventory
from aiplat.node.kernlog import parse_xids, read_xids
from aiplat.node.pciaddr import acs_control
from aiplat.spec import load_platform
from aiplat.spec.models import NodeChecksSpec, Platform
from fixtures.nodes import FakeHost, acs_config, gpu_less_vm, hgx_h100, l40s_4, mi300x_8
from fixtures.nvsmi_outputs import GpuState, nvlink_status, smi_xml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BUS = [0x19, 0x2b, 0x3b, 0x5e, 0x9b, 0xac, 0xbb, 0xdc]


@pytest.fixture(scope="module")
def platform() -> Platform:
    return load_platform(FIXTURES / "platform-nodes.yaml")


def _hgx(tmp: Path, *, degraded: bool = False, gpus: list[GpuState] | None = None,
         inactive: dict[int, list[int]] | None = None) -> Inventory:
    root = hgx_h100(tmp / "root", degraded=degraded)
    (tmp / "smi.xml").write_text(smi_xml(gpus))
    (tmp / "nvl.txt").write_text(nvlink_status(inactive))
    return collect_inventory(root, {"smi-xml": tmp / "smi.xml", "nvlink": tmp / "nvl.txt"})


def _problems(inv: Inventory, exp: Expectations, xids: list[object] | None = None
              ) -> list[tuple[str, str, str]]:
    report = run_checks(CheckContext(inv=inv, exp=exp, xids=xids or []))  # type: ignore[arg-type]
    return [(r.name, r.status, r.subject) for r in report.results if r.status in ("warn", "fail")]


def test_clean_fixtures_report_nothing(tmp_path: Path, platform: Platform) -> None:
    inv = _hgx(tmp_path / "hgx")
    assert _problems(inv, Expectations.from_platform(platform, "h100")) == []
    mi = collect_inventory(mi300x_8(tmp_path / "mi"))
    assert _problems(mi, Expectations.from_platform(platform, "mi300x")) == []
    l40s = collect_inventory(l40s_4(tmp_path / "l40s"))
    assert _problems(l40s, Expectations.from_platform(platform, "l40s")) == []
    vm = collect_inventory(gpu_less_vm(tmp_path / "vm"))
    assert _problems(vm, Expectations()) == []


def test_degraded_hgx_fails_exactly_on_the_x8_gpu_and_the_down_port(
        tmp_path: Path, platform: Platform) -> None:
    inv = _hgx(tmp_path, degraded=True)
    exp = Expectations.from_platform(platform, "h100")
    assert _problems(inv, exp) == [("pcie-link", "fail", "gpu 0000:5e:00.0"),
                                   ("ib-port", "fail", "mlx5_5/1")]
    report = run_checks(CheckContext(inv=inv, exp=exp, xids=[]))
    assert report.failed
    cond = node_condition(report, "2026-11-29T17:00:00Z")
    assert cond["type"] == "AiplatNodeHealthy" and cond["status"] == "False"
    assert "mlx5_5/1" in cond["message"]
    assert node_taints(report) == [{"key": "node.aiplat.io/unhealthy", "value": "checks-failed",
                                    "effect": "NoSchedule"}]


def test_gpu_faults_from_the_driver(tmp_path: Path, platform: Platform) -> None:
    gpus = [GpuState(b + 1 - 1) for b in BUS]
    gpus[0] = GpuState(BUS[0], dram_uncorrectable=3)
    gpus[1] = GpuState(BUS[1], remap_pending=True)
    gpus[2] = GpuState(BUS[2], remap_failure=True)
    gpus[3] = GpuState(BUS[3], temp_c=92, active_reasons=["hw_thermal_slowdown"])
    gpus[4] = GpuState(BUS[4], temp_c=82, active_reasons=["sw_thermal_slowdown"])
    inv = _hgx(tmp_path, gpus=gpus, inactive={6: [4, 5]})
    found = _problems(inv, Expectations.from_platform(platform, "h100"))
    assert found == [
        ("gpu-ecc", "fail", "GPU0 0000:19:00.0"),
        ("gpu-ecc", "warn", "GPU1 0000:2b:00.0"),
        ("gpu-ecc", "fail", "GPU2 0000:3b:00.0"),
        ("nvlink", "fail", "GPU6 0000:bb:00.0"),
        ("gpu-clocks", "fail", "GPU3 0000:5e:00.0"),
        ("gpu-clocks", "warn", "GPU4 0000:9b:00.0"),
        ("gpu-temperature", "fail", "GPU3 0000:5e:00.0"),
        ("gpu-temperature", "warn", "GPU4 0000:9b:00.0"),
    ]


def test_gpu_missing_from_pci_or_from_the_driver(tmp_path: Path, platform: Platform) -> None:
    exp = Expectations.from_platform(platform, "h100")
    l40s = collect_inventory(l40s_4(tmp_path / "l40s"))
    assert ("gpu-count", "fail", "node") in _problems(l40s, exp)
    inv = _hgx(tmp_path / "hgx", gpus=[GpuState(b) for b in BUS[:7]])  # GPU7 lost by the driver
    assert _problems(inv, exp) == [("gpu-count", "fail", "0000:dc:00.0")]


def test_xids_in_the_window(tmp_path: Path, platform: Platform) -> None:
    root = hgx_h100(tmp_path)
    (root / "proc/uptime").write_text("10000.00 30000.00\n")
    (root / "var/log").mkdir(parents=True)
    (root / "var/log/kern.log").write_text((FIXTURES / "recorded/kmsg-xid.txt").read_text())
    assert read_xids(tmp_path / "nothing") is None  # no log at all: "not read", not "none"
    xids = read_xids(root)
    assert xids is not None
    assert [(e.xid, e.address) for e in xids] == [(79, "0000:5e:00.0"), (13, "0000:19:00.0"),
                                                  (31, "0000:9b:00.0")]
    assert xids[0].age_s == pytest.approx(10000 - 812.331910)
    inv = collect_inventory(root)
    exp = Expectations.from_platform(platform, "h100")
    found = [p for p in _problems(inv, exp, list(xids)) if p[0] == "gpu-xid"]
    assert found == [("gpu-xid", "fail", "0000:5e:00.0"), ("gpu-xid", "warn", "0000:19:00.0"),
                     ("gpu-xid", "warn", "0000:9b:00.0")]
    one_hour = Expectations(thresholds=NodeChecksSpec(xidWindowHours=1))
    found = [p for p in _problems(inv, one_hour, list(xids)) if p[0] == "gpu-xid"]
    assert [p[1] for p in found] == ["warn", "warn"]  # the XID 79 is 2.6 h old
    kmsg = parse_xids("4,1234,812331910,-;NVRM: Xid (PCI:0000:5e:00): 79, pid=0", 1000.0)
    assert kmsg[0].age_s == pytest.approx(1000 - 812.33191)


def test_host_configuration_faults(tmp_path: Path, platform: Platform) -> None:
    root = hgx_h100(tmp_path)
    h = FakeHost(root)
    os.chmod(root / "dev/nvidia3", 0o666)
    (root / f"sys/firmware/efi/efivars/{'SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c'}"
     ).write_bytes(b"\x06\x00\x00\x00\x00")
    for g in (root / "sys/kernel/iommu_groups").iterdir():
        g.rmdir()
    h.modules({"nvidia": "580.95.05", "nvidia_uvm": "580.95.05", "mlx5_core": None})
    inv = collect_inventory(root)
    exp = Expectations.from_platform(platform, "h100")
    assert _problems(inv, exp) == [
        ("kernel-modules", "fail", "nvidia_peermem"),
        ("kernel-modules", "fail", "mlx5_ib"),
        ("secure-boot", "fail", "node"),
        ("device-permissions", "fail", "/dev/nvidia3"),
        ("iommu", "fail", "node"),
    ]
    full = Expectations(thresholds=NodeChecksSpec(minFreeDiskPercent=100))
    assert ("disk-space", "fail", "/") in _problems(inv, full)


def test_mtu_on_rdma_interfaces(tmp_path: Path) -> None:
    inv = collect_inventory(l40s_4(tmp_path))
    assert _problems(inv, Expectations(mtu=4096)) == [("mtu", "fail", "ens1f0np0")]
    assert _problems(inv, Expectations(mtu=9000)) == []


def test_pluggable_checks_and_selection(tmp_path: Path) -> None:
    inv = collect_inventory(gpu_less_vm(tmp_path))
    register("site-motd", lambda ctx: [CheckResult(name="site-motd", status="warn")])
    try:
        report = run_checks(CheckContext(inv=inv, exp=Expectations(), xids=[]),
                            only=["site-motd"])
        assert [(r.name, r.status) for r in report.results] == [("site-motd", "warn")]
        assert report.status == "warn"
    finally:
        del CHECKS["site-motd"]
    with pytest.raises(InputError, match="does not exist"):
        run_checks(CheckContext(inv=inv, exp=Expectations()), only=["nope"])
    with pytest.raises(InputError, match="no such pool"):
        Expectations.from_platform(load_platform(FIXTURES / "platform-nodes.yaml"), "nope")


def test_acs_on_switch_ports(tmp_path: Path) -> None:
    disabled = Expectations(thresholds=NodeChecksSpec(acs="disabled"))
    inv = collect_inventory(hgx_h100(tmp_path / "clean"))
    assert {d.acs_control for d in inv.pci if d.kind.value == "bridge"} == {0}
    assert _problems(inv, disabled) == []
    root = hgx_h100(tmp_path / "acs")
    port = root / "sys/bus/pci/devices/0000:18:00.0"  # the switch port above GPU0
    port.joinpath("config").write_bytes(acs_config(0x1D))  # SV RR CR UF: BIOS default
    inv = collect_inventory(root)
    assert _problems(inv, disabled) == [("acs", "fail", "0000:18:00.0")]
    result = next(r for r in run_checks(CheckContext(inv=inv, exp=disabled)).results
                  if r.name == "acs")
    assert result.observed == "ACS SV,RR,CR,UF" and "ECAP_ACS+6.w=0000" in result.remediation
    enabled = Expectations(thresholds=NodeChecksSpec(acs="enabled"))
    assert len(_problems(collect_inventory(tmp_path / "clean"), enabled)) > 0
    short = acs_config(0x1D)[:64]  # what a non-root reader gets
    assert acs_control(short) is None and acs_control(acs_config(0x4)) == 0x4


def test_a_gpu_outside_the_nvswitch_fabric_fails_with_the_fabric_manager_fix(
        tmp_path: Path, platform: Platform) -> None:
    exp = Expectations.from_platform(platform, "h100")
    clean = run_checks(CheckContext(inv=_hgx(tmp_path / "ok"), exp=exp, xids=[]))
    (fabric,) = [r for r in clean.results if r.name == "nvswitch-fabric"]
    assert (fabric.status, fabric.observed) == ("pass", "8 GPUs joined the fabric")
    gpus = [GpuState(bus + 1) for bus in BUS]
    gpus[3] = GpuState(BUS[3] + 1, fabric_state="In Progress", fabric_status="N/A")
    gpus[5] = GpuState(BUS[5] + 1, fabric_state="Completed",
                       fabric_status="NVML_ERROR_INSUFFICIENT_RESOURCES")
    report = run_checks(CheckContext(inv=_hgx(tmp_path / "bad", gpus=gpus), exp=exp, xids=[]))
    bad = [r for r in report.results if r.name == "nvswitch-fabric"]
    assert [(r.status, r.subject.split()[0]) for r in bad] == [("fail", "GPU3"), ("fail", "GPU5")]
    assert bad[0].observed == "fabric In Progress, status unknown"
    assert "nvidia-fabricmanager" in bad[0].remediation and "802" in bad[0].remediation
    l40s = run_checks(CheckContext(inv=collect_inventory(l40s_4(tmp_path / "l40s")),
                                   exp=Expectations.from_platform(platform, "l40s"), xids=[]))
    assert [r.status for r in l40s.results if r.name == "nvswitch-fabric"] == ["skip"]

