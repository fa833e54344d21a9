"""Node inventory: readers on fake sysfs/procfs trees, recorded nvidia-smi/lstopo parsers,
the published JSON Schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from aiplat.cli._output import camel, camel_schema
from aiplat.errors import InputError
from aiplat.node.collect import collect_inventory, parse_from_options
from aiplat.node.inventory import DeviceKind, inventory_json_schema
from aiplat.node.lstopo import parse_lstopo
from aiplat.node.nvsmi import parse_nvlink_status, parse_smi_xml, parse_topo
from aiplat.node.pciaddr import format_cpulist, normalise, parse_cpulist
from aiplat.node.software import parse_nvidia_version, version_from_output
from fixtures.nodes import gpu_less_vm, hgx_h100, l40s_4, mi300x_8
from fixtures.nvsmi_outputs import GpuState, hgx_topo, nvlink_status, smi_xml

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"
SCHEMA_FILE = (Path(__file__).resolve().parents[2] / "src" / "aiplat" / "node" / "schema"
               / "node-inventory-v1.schema.json")


def test_bus_ids_from_every_source_normalise_to_the_sysfs_form() -> None:
    assert normalise("00000000:1B:00.0") == "0000:1b:00.0"
    assert normalise("0000:1b:00.0") == "0000:1b:00.0"
    assert normalise("PCI:0000:1b:00") == "0000:1b:00.0"
    assert normalise("1b:00.1") == "0000:1b:00.1"
    with pytest.raises(ValueError):
        normalise("GPU-1234")
    assert parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert format_cpulist([5, 0, 1, 2, 8]) == "0-2,5,8"


def test_hgx_h100_inventory(tmp_path: Path) -> None:
    inv = collect_inventory(hgx_h100(tmp_path))
    assert len(inv.gpus) == 8
    assert {g.vendor for g in inv.gpus} == {"0x10de"}
    assert sum(d.kind is DeviceKind.NVSWITCH for d in inv.pci) == 4
    assert sum(d.kind is DeviceKind.INFINIBAND for d in inv.pci) == 8
    assert sum(d.kind is DeviceKind.NVME for d in inv.pci) == 8
    gpu0 = inv.gpus[0]
    assert gpu0.address == "0000:19:00.0" and gpu0.numa_node == 0
    assert gpu0.host_bridge == "pci0000:16"
    assert gpu0.parents == ["0000:16:01.0", "0000:17:00.0", "0000:18:00.0"]
    assert gpu0.driver == "nvidia" and gpu0.iommu_group is not None
    assert gpu0.link is not None and gpu0.link.current_width == 16
    assert not gpu0.link.width_degraded
    assert [g.numa_node for g in inv.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    h = inv.host
    assert h.cpu is not None and (h.cpu.sockets, h.cpu.cores, h.cpu.threads) == (2, 112, 224)
    assert h.cpu.smt and [0, 112] in h.cpu.core_threads
    assert [n.cpulist for n in h.numa] == ["0-55,112-167", "56-111,168-223"]
    assert h.numa[0].distances == [10, 21]
    assert h.hugepages == {"2048kB": 8192}
    assert "intel_iommu=on" in (h.cmdline or "") and h.iommu_groups > 0
    ports = inv.ib_ports
    assert len(ports) == 8 and all(p.state == "ACTIVE" and p.phys_state == "LinkUp" for p in ports)
    assert ports[0].rate_gbps == 400 and ports[0].link_layer == "InfiniBand"
    assert ports[0].pci_address == "0000:1a:00.0"
    net = {n.name: n for n in inv.net}
    assert net["eno1"].bond_master == "bond0" and net["eno1"].pci_address == "0000:01:00.0"
    assert net["bond0"].bond_slaves == ["eno1", "eno2"] and net["bond0"].virtual
    assert (net["bond0.100"].vlan_parent, net["bond0.100"].vlan_id) == ("bond0", 100)
    sw = inv.software
    assert sw.nvidia_driver is not None
    assert (sw.nvidia_driver.version, sw.nvidia_driver.flavor) == ("580.95.05", "open")
    assert sw.secure_boot == "enabled"
    assert sw.module("nvidia_peermem") is not None
    assert sw.runtimes["containerd"] == "2.1.4-1"
    assert sw.runtimes["nvidia-container-toolkit"] == "1.18.0-1"
    assert sw.cdi_specs == ["/etc/cdi/nvidia.yaml"]
    modes = {d.path: d.mode for d in sw.device_nodes}
    assert modes["/dev/nvidia0"] == "0660" and modes["/dev/infiniband/uverbs7"] == "0660"
    assert inv.gpu_details == [] and inv.warnings  # no NVML here: said, not hidden


def test_degraded_hgx_shows_the_x8_gpu_and_the_down_port(tmp_path: Path) -> None:
    inv = collect_inventory(hgx_h100(tmp_path, degraded=True))
    degraded = [g.address for g in inv.gpus if g.link and g.link.width_degraded]
    assert degraded == ["0000:5e:00.0"]
    down = [(p.device, p.state, p.phys_state, p.rate_gbps) for p in inv.ib_ports
            if p.state != "ACTIVE"]
    assert down == [("mlx5_5", "DOWN", "Polling", 10.0)]


def test_l40s_mi300x_and_vm(tmp_path: Path) -> None:
    l40s = collect_inventory(l40s_4(tmp_path / "l40s"))
    assert [g.numa_node for g in l40s.gpus] == [0, 0, 1, 1]
    assert l40s.software.nvidia_driver is not None
    assert l40s.software.nvidia_driver.flavor == "proprietary"
    assert l40s.software.secure_boot == "disabled"
    assert l40s.ib_ports[0].link_layer == "Ethernet"  # RoCE
    mi = collect_inventory(mi300x_8(tmp_path / "mi"))
    assert len(mi.gpus) == 8 and {g.class_code for g in mi.gpus} == {"0x120000"}
    assert {g.vendor_name for g in mi.gpus} == {"AMD"}
    assert "/dev/kfd" in {d.path for d in mi.software.device_nodes}
    assert mi.warnings == []  # no NVIDIA GPU: nothing to miss
    vm = collect_inventory(gpu_less_vm(tmp_path / "vm"))
    assert vm.gpus == [] and vm.software.secure_boot == "legacy-boot"
    assert {d.numa_node for d in vm.pci} == {None}  # -1 means unknown, never node 0
    eth0 = next(n for n in vm.net if n.name == "eth0")
    assert eth0.pci_address == "0000:00:03.0"  # found through the virtio child device


def test_topo_matrix_hgx_with_nic_legend_and_double_tabs() -> None:
    topo = parse_topo(hgx_topo())
    assert topo.devices[:2] == ["GPU0", "GPU1"] and len(topo.devices) == 16
    assert topo.cells["GPU0"]["NIC0"] == "PIX" and topo.cells["GPU0"]["NIC4"] == "SYS"
    assert topo.cells["GPU0"]["GPU1"] == "NV18" and topo.cells["GPU0"]["GPU0"] == "X"
    assert topo.nic_names["NIC7"] == "mlx5_7"
    assert topo.cpu_affinity["GPU5"] == "56-111,168-223" and topo.numa_affinity["GPU5"] == 1


def test_topo_vm_blank_affinity_and_old_soc() -> None:
    vm = parse_topo((RECORDED / "topo-vm-blank-affinity.txt").read_text())
    assert vm.cpu_affinity == {"GPU0": None, "GPU1": None}
    assert vm.numa_affinity == {"GPU0": None, "GPU1": None}
    old = parse_topo((RECORDED / "topo-old-soc.txt").read_text())
    assert old.devices[-1] == "mlx5_0"  # ANSI codes stripped, old NIC naming kept
    assert old.cells["GPU0"]["GPU3"] == "SYS" and old.cells["GPU0"]["mlx5_0"] == "PIX"
    assert old.cpu_affinity["GPU2"] == "12-23,36-47" and old.numa_affinity["GPU2"] is None
    with pytest.raises(InputError, match="topo -m"):
        parse_topo("GPU0 GPU1\nnot a matrix\n")


def test_smi_xml_new_and_old_layouts() -> None:
    gpus, driver, cuda = parse_smi_xml(smi_xml([GpuState(0x19, dram_uncorrectable=2,
                                                          remap_pending=True, temp_c=88,
                                                          active_reasons=["hw_slowdown"])]))
    g = gpus[0]
    assert (driver, cuda) == ("580.95.05", "13.0")
    assert g.address == "0000:19:00.0" and g.uuid and g.uuid.startswith("GPU-")
    assert g.ecc_uncorrected_volatile == 2 and g.ecc_enabled is True
    assert g.remapped_rows is not None and g.remapped_rows.pending
    assert g.temperature_c == 88 and g.clock_event_reasons == ["hw_slowdown"]
    assert g.memory_mib == 81559 and g.power_w == pytest.approx(71.23)
    old, driver, cuda = parse_smi_xml((RECORDED / "smi-q-x-r470.xml").read_text())
    assert (driver, cuda) == ("470.256.02", "11.4")
    o = old[0]
    assert o.address == "0000:3b:00.0" and o.ecc_uncorrected_volatile == 2
    assert o.ecc_corrected_volatile == 3 and o.remapped_rows is None
    assert o.clock_event_reasons == ["hw_slowdown"] and o.power_w == pytest.approx(44.12)
    assert (g.fabric_state, g.fabric_status) == ("Completed", "Success")
    assert (o.fabric_state, o.fabric_status) == (None, None)  # R470 has no <fabric>
    na = parse_smi_xml(smi_xml([GpuState(0x19, fabric_state="N/A", fabric_status="N/A")]))[0]
    assert (na[0].fabric_state, na[0].fabric_status) == (None, None)  # PCIe GPUs say N/A
    with pytest.raises(InputError, match="not XML"):
        parse_smi_xml("<nvidia_smi_log>")


def test_nvlink_status() -> None:
    links = parse_nvlink_status(nvlink_status({2: [3, 17]}))
    assert len(links) == 8 and len(links[0]) == 18
    assert [link.link for link in links[2] if not link.active] == [3, 17]
    assert links[0][0].speed_gbps == pytest.approx(26.562)


def test_lstopo_gives_pci_tree_and_numa() -> None:
    devs = {d.address: d for d in parse_lstopo((RECORDED / "lstopo-2gpu.xml").read_text())}
    gpu, nic, far = devs["0000:19:00.0"], devs["0000:1a:00.0"], devs["0000:9b:00.0"]
    assert gpu.kind is DeviceKind.GPU and nic.kind is DeviceKind.INFINIBAND
    assert gpu.parents == ["0000:16:01.0", "0000:17:00.0", "0000:18:00.0"]
    assert gpu.numa_node == 0 and far.numa_node == 1
    assert gpu.host_bridge == "pci0000:16" and far.host_bridge == "pci0000:9a"


def test_recordings_join_the_sysfs_inventory(tmp_path: Path) -> None:
    root = hgx_h100(tmp_path / "root")
    (tmp_path / "smi.xml").write_text(smi_xml())
    (tmp_path / "topo.txt").write_text(hgx_topo())
    (tmp_path / "nvl.txt").write_text(nvlink_status({1: [0]}))
    rec = parse_from_options([f"smi-xml={tmp_path / 'smi.xml'}", f"topo={tmp_path / 'topo.txt'}",
                              f"nvlink={tmp_path / 'nvl.txt'}"])
    inv = collect_inventory(root, rec)
    assert {d.address for d in inv.gpu_details} == {g.address for g in inv.gpus}
    assert inv.driver_cuda_version == "13.0" and inv.topology is not None
    gpu1 = next(d for d in inv.gpu_details if d.index == 1)
    assert [link.link for link in gpu1.nvlinks if not link.active] == [0]
    assert inv.warnings == []


def test_lstopo_supplies_pci_when_sysfs_is_absent(tmp_path: Path) -> None:
    inv = collect_inventory(tmp_path, {"lstopo": RECORDED / "lstopo-2gpu.xml"})
    assert len(inv.gpus) == 2 and "lstopo" in inv.sources


def test_bad_recordings_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="KIND=FILE"):
        parse_from_options(["nvsmi=x"])
    with pytest.raises(InputError, match=r"cannot read.*nvidia-smi -q -x"):
        collect_inventory(tmp_path, {"smi-xml": tmp_path / "missing.xml"})


def test_driver_version_forms_and_tool_versions() -> None:
    prop = parse_nvidia_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.03  "
                                "Tue Sep 24 2024\nGCC version: 12")
    assert prop is not None and (prop.version, prop.flavor) == ("535.216.03", "proprietary")
    open_ = parse_nvidia_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                 "580.95.05  Release Build")
    assert open_ is not None and (open_.version, open_.flavor) == ("580.95.05", "open")
    assert parse_nvidia_version("garbage") is None
    assert version_from_output("runc version 1.1.12\ncommit: v1.1.12") == "1.1.12"
    assert version_from_output("containerd containerd.io v2.1.4 75cb2b7") == "2.1.4"
    assert version_from_output("NVIDIA Container Toolkit CLI version 1.18.0") == "1.18.0"


def test_published_schema_is_the_model_schema_and_validates_fixtures(tmp_path: Path) -> None:
    published = json.loads(SCHEMA_FILE.read_text())
    # the schema of what `node inventory -o json` prints: the model's, its fields camelCase
    assert published == json.loads(json.dumps(camel_schema(inventory_json_schema()))), (
        "schema drifted: regenerate node-inventory-v1.schema.json (and bump the version if "
        "the change is incompatible)")
    jsonschema.Draft202012Validator.check_schema(published)
    for build in (hgx_h100, l40s_4, mi300x_8, gpu_less_vm):
        inv = collect_inventory(build(tmp_path / build.__name__))
        jsonschema.validate(camel(inv.model_dump(mode="json")), published)
