"""Issue #43: a pool's rendered kubelet config carries exactly what ``aiplat node placement``
recommends for that pool (the model of its node type) and for a recorded node of that type;
and it keeps the kubelet's own rules (whole reserved cores under full-pcpus-only, the Memory
Manager's reservedMemory adding up to the Node Allocatable reservation)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from aiplat.catalog import load_catalog
from aiplat.cli.node import node
from aiplat.kube import render
from aiplat.kube.quantity import parse_quantity
from aiplat.plan.kubelet import pool_layout
from aiplat.plan.resolve import reserved_cpus, resolve
from aiplat.spec import example_text, parse_platform
from fixtures.nodes import NV, FakeHost, hgx_h100, l40s_4

ONE_SOCKET = {"name": "edge", "zone": "zone-a",
              "node": {"gpu": {"model": "L40S", "count": 2}, "cpuCores": 24, "memoryGiB": 256},
              "count": 2}


def spec_text(edit: Any = None) -> str:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return yaml.safe_dump(data, sort_keys=False)


def kubelet_configs(text: str) -> dict[str, dict[str, Any]]:
    """pool -> the rendered cluster/nodes/<pool>/kubelet-config.yaml."""
    files = render(parse_platform(text, "test.yaml", load_catalog()), load_catalog()).files()
    return {path.split("/")[2]: yaml.safe_load(body) for path, body in files.items()
            if path.startswith("cluster/nodes/") and path.endswith("/kubelet-config.yaml")}


def placement_cli(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(node, ["placement", *args, "-o", "json"])
    assert result.exit_code == 0, result.output
    rec: dict[str, Any] = json.loads(result.output)["recommendation"]
    return rec


def from_placement(rec: dict[str, Any]) -> dict[str, Any]:
    """What the kubelet config must say, read off ``node placement``'s recommendation."""
    return {"topologyManagerPolicy": rec["topologyManagerPolicy"],
            "topologyManagerScope": rec["topologyManagerScope"],
            "topologyManagerPolicyOptions": rec["topologyManagerOptions"] or None,
            "cpuManagerPolicy": rec["cpuManagerPolicy"],
            "cpuManagerPolicyOptions": rec["cpuManagerPolicyOptions"] or None,
            "reservedSystemCPUs": rec["reservedSystemCpus"]}


def from_kubelet(config: dict[str, Any]) -> dict[str, Any]:
    """The same figures, read off the rendered kubelet config."""
    return {key: config.get(key) for key in (
        "topologyManagerPolicy", "topologyManagerScope", "topologyManagerPolicyOptions",
        "cpuManagerPolicy", "cpuManagerPolicyOptions", "reservedSystemCPUs")}


def write_spec(tmp_path: Path, text: str) -> str:
    path = tmp_path / "platform.yaml"
    path.write_text(text)
    return str(path)


def test_example_h100_pool_kubelet_is_what_node_placement_recommends(tmp_path: Path) -> None:
    text = spec_text()
    rendered = from_kubelet(kubelet_configs(text)["h100"])
    placed = from_placement(placement_cli(write_spec(tmp_path, text), "--pool", "h100"))
    assert rendered == placed
    # the figures: the HGX's analysis, no longer best-effort with 0-1,56
    assert rendered["topologyManagerPolicy"] == "restricted"
    assert rendered["topologyManagerScope"] == "pod"
    assert rendered["reservedSystemCPUs"] == "0,56,112,168"
    assert rendered["cpuManagerPolicyOptions"] == {"full-pcpus-only": "true"}


def test_example_l40s_pool_kubelet_is_what_node_placement_recommends(tmp_path: Path) -> None:
    text = spec_text()
    rendered = from_kubelet(kubelet_configs(text)["l40s"])
    assert rendered == from_placement(
        placement_cli(write_spec(tmp_path, text), "--pool", "l40s"))
    # four GPUs over two sockets: a 4-GPU pod spans both, which single-numa-node refuses
    assert rendered["topologyManagerPolicy"] == "restricted"
    assert rendered["reservedSystemCPUs"] == "0,32,64,96"


def test_one_socket_pool(tmp_path: Path) -> None:
    text = spec_text(lambda d: d["pools"].append(ONE_SOCKET))
    rendered = from_kubelet(kubelet_configs(text)["edge"])
    assert rendered == from_placement(
        placement_cli(write_spec(tmp_path, text), "--pool", "edge"))
    assert rendered["topologyManagerPolicy"] == "none"
    assert rendered["reservedSystemCPUs"] == "0,24"  # core 0 and its SMT sibling


def test_recorded_hgx_is_what_the_h100_pool_renders(tmp_path: Path) -> None:
    """The example's HGX (the node-hgx-h100 sample) analysed from its recording: the h100
    pool's kubelet config says the same."""
    recorded = placement_cli("--root", str(hgx_h100(tmp_path / "hgx")))
    assert from_placement(recorded) == from_kubelet(kubelet_configs(spec_text())["h100"])


def test_recorded_l40s_with_one_roce_nic_matches_its_pool(tmp_path: Path) -> None:
    """The node-l40s-4 sample has one RoCE NIC, on NUMA node 0: GPUs 2 and 3 have none on
    theirs, so best-effort; a pool that says so renders the same."""
    def one_roce(d: dict[str, Any]) -> None:
        pool = next(p for p in d["pools"] if p["name"] == "l40s")
        pool["node"]["nics"] = [{"type": "roce", "rateGbps": 100, "count": 1,
                                 "segment": "service"}]
    recorded = from_placement(placement_cli("--root", str(l40s_4(tmp_path / "l40s"))))
    assert recorded["topologyManagerPolicy"] == "best-effort"
    assert recorded == from_kubelet(kubelet_configs(spec_text(one_roce))["l40s"])


def test_recorded_one_socket_node_matches_its_pool(tmp_path: Path) -> None:
    h = FakeHost(tmp_path / "edge")
    h.host(hostname="edge-01", kernel="6.1.0-26-amd64", cmdline="ro", cpu_model="Xeon",
           sockets=1, cores_per_socket=24, smt=True, numa_cpus=["0-47"], mem_kib=264_000_000)
    for bus in (0x17, 0x65):
        h.pci(f"pci0000:{bus - 1:02x}", [f"0000:{bus - 1:02x}:01.0", f"0000:{bus:02x}:00.0"],
              "0x030200", NV, "0x26b9", 0, "0-47", driver="nvidia")
    recorded = from_placement(placement_cli("--root", str(h.root)))
    text = spec_text(lambda d: d["pools"].append(ONE_SOCKET))
    assert recorded == from_kubelet(kubelet_configs(text)["edge"])


@pytest.mark.parametrize("edit", [None, lambda d: d["pools"].append(ONE_SOCKET)])
def test_kubelet_rules_hold(edit: Any) -> None:
    """pkg/kubelet/cm: with full-pcpus-only the siblings of a reserved thread are lost to
    exclusive allocation, so reserved CPUs are whole cores; the Memory Manager's Static
    policy starts only when reservedMemory over the NUMA nodes equals system-reserved +
    kube-reserved + the hard eviction threshold."""
    text = spec_text(edit)
    configs = kubelet_configs(text)
    platform = parse_platform(text, "test.yaml", load_catalog())
    for pool in resolve(platform, load_catalog()).pools:
        config, layout = configs[pool.name], pool_layout(pool)
        reserved = set()
        for part in config["reservedSystemCPUs"].split(","):
            lo, _, hi = part.partition("-")
            reserved |= set(range(int(lo), int(hi or lo) + 1))
        if config.get("cpuManagerPolicyOptions", {}).get("full-pcpus-only") == "true":
            assert all(set(core) <= reserved or not set(core) & reserved
                       for core in layout.cores), pool.name
        assert len(reserved) >= reserved_cpus(pool.spec.node.cpu_cores)
        assert {r["numaNode"] for r in config["reservedMemory"]} == {n.id for n in layout.numa}
        total = sum(parse_quantity(r["limits"]["memory"]) for r in config["reservedMemory"])
        allocatable = (parse_quantity(config["systemReserved"]["memory"])
                       + parse_quantity(config["kubeReserved"]["memory"])
                       + parse_quantity(config["evictionHard"]["memory.available"]))
        assert total == allocatable, pool.name
