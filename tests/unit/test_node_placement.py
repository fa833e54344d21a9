"""Placement: path types, NIC locality, NUMA alignment and the kubelet/NCCL advice."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from aiplat.node.collect import collect_inventory
from aiplat.node.inventory import DeviceKind, PciDevice
from aiplat.node.placement import evaluate_placement, path_between
from fixtures.nodes import gpu_less_vm, hgx_h100, l40s_4, mi300x_8
from fixtures.nvsmi_outputs import hgx_topo, smi_xml


def _dev(addr: str, host: str, parents: list[str], numa: int | None) -> PciDevice:
    return PciDevice(address=addr, class_code="0x030200", kind=DeviceKind.GPU, vendor="0x10de",
                     device="0x2330", host_bridge=host, parents=parents, numa_node=numa)


def test_path_types_from_bridge_chains() -> None:
    rp, usp = "0000:16:01.0", "0000:17:00.0"
    gpu = _dev("0000:19:00.0", "pci0000:16", [rp, usp, "0000:18:00.0"], 0)
    nic = _dev("0000:1a:00.0", "pci0000:16", [rp, usp, "0000:18:01.0"], 0)
    assert path_between(gpu, nic, 2) == "PIX"  # one switch
    deep = _dev("0000:1c:00.0", "pci0000:16", [rp, usp, "0000:18:02.0", "0000:1b:00.0",
                                               "0000:1b:01.0"], 0)
    assert path_between(gpu, deep, 2) == "PXB"  # two switch levels
    other_rp = _dev("0000:20:00.0", "pci0000:16", ["0000:16:02.0"], 0)
    assert path_between(gpu, other_rp, 2) == "PHB"
    assert path_between(gpu, _dev("0000:30:00.0", "pci0000:2f", [], 0), 2) == "NODE"
    assert path_between(gpu, _dev("0000:90:00.0", "pci0000:8f", [], 1), 2) == "SYS"
    unknown = _dev("0000:90:00.0", "pci0000:8f", [], None)
    assert path_between(_dev("0000:30:00.0", "pci0000:2f", [], None), unknown, 1) == "NODE"


def test_hgx_rail_aligned_is_clean_and_recommends_restricted(tmp_path: Path) -> None:
    p = evaluate_placement(collect_inventory(hgx_h100(tmp_path)))
    assert p.findings == []
    assert [(g.best_path, [n.name for n in g.nearest_nics]) for g in p.gpus] == [
        ("PIX", [f"mlx5_{i}"]) for i in range(8)]
    r = p.recommendation
    assert (r.topology_manager_policy, r.topology_manager_scope) == ("restricted", "pod")
    assert r.cpu_manager_policy == "static"
    assert r.reserved_system_cpus == "0,56,112,168"  # first core of each NUMA node + SMT sibling
    assert p.gpus[0].cpuset == "1-13,113-125" and p.gpus[4].cpuset == "57-69,169-181"
    cpus = [set(g.cpuset.split(",")) for g in p.gpus if g.cpuset]
    assert len(cpus) == 8
    assert r.nccl_ib_hca == ",".join(f"mlx5_{i}:1" for i in range(8))
    assert p.labels["node.aiplat.io/gpu-nic-path"] == "pix"
    assert p.labels["node.aiplat.io/gpu-numa-aligned"] == "true"
    assert p.labels["node.aiplat.io/pcie-degraded"] == "false"


def test_degraded_hgx_flags_the_x8_gpu(tmp_path: Path) -> None:
    p = evaluate_placement(collect_inventory(hgx_h100(tmp_path, degraded=True)))
    assert [(f.severity, f.source, f.subject) for f in p.findings] == [
        ("error", "pcie-width-degraded", "GPU3 0000:5e:00.0"),
        ("warning", "nearest-nic-down", "GPU5 0000:ac:00.0")]
    assert p.labels["node.aiplat.io/pcie-degraded"] == "true"


def test_l40s_without_nic_locality(tmp_path: Path) -> None:
    p = evaluate_placement(collect_inventory(l40s_4(tmp_path)))
    codes = [(f.subject.split()[0], f.source) for f in p.findings]
    assert codes == [("GPU0", "no-local-nic"), ("GPU1", "no-local-nic"),
                     ("GPU2", "no-local-nic"), ("GPU2", "numa-mismatch"),
                     ("GPU3", "no-local-nic"), ("GPU3", "numa-mismatch")]
    assert [g.best_path for g in p.gpus] == ["NODE", "NODE", "SYS", "SYS"]
    assert p.recommendation.topology_manager_policy == "best-effort"
    assert p.labels["node.aiplat.io/gpu-numa-aligned"] == "false"


def test_mi300x_and_vm(tmp_path: Path) -> None:
    mi = evaluate_placement(collect_inventory(mi300x_8(tmp_path / "mi")))
    assert mi.findings == [] and mi.labels["node.aiplat.io/gpu-vendor"] == "amd"
    vm = evaluate_placement(collect_inventory(gpu_less_vm(tmp_path / "vm")))
    assert vm.gpus == [] and vm.findings == []
    assert vm.recommendation.topology_manager_policy == "none"
    assert vm.labels["node.aiplat.io/gpu-count"] == "0"


def test_recorded_topo_overrides_the_derived_path(tmp_path: Path) -> None:
    root = hgx_h100(tmp_path / "root")
    topo = hgx_topo().replace("GPU0\t X \t", "GPU0\t X \t", 1)
    lines = topo.splitlines()
    # Mark GPU0 -> NIC0 as PHB in the recording: the recording must win.
    row = lines[1].split("\t")
    row[9] = "PHB"
    lines[1] = "\t".join(row)
    (tmp_path / "topo.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "smi.xml").write_text(smi_xml())
    inv = collect_inventory(root, {"topo": tmp_path / "topo.txt", "smi-xml": tmp_path / "smi.xml"})
    p = evaluate_placement(inv)
    assert p.gpus[0].best_path == "PHB"
    assert [f.source for f in p.findings] == ["no-local-nic"]
