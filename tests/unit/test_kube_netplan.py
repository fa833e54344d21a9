"""The pools' netplan files (``kube/render_netplan.py``): bonds, rails, MTU, VLANs and the
placeholders, from the example spec and edits of it. netplan's own generator reads these
files in tests/integration/test_netplan_generate.py."""

from __future__ import annotations

import re
from typing import Any

import yaml

from aiplat.catalog import load_catalog
from aiplat.kube.render import render
from aiplat.kube.render_netplan import BOND_PARAMETERS, netplan_files, netplan_path
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform


def platform_from(edit: Any = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), "test.yaml", load_catalog())


def net(platform: Platform, pool: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(netplan_files(platform)[netplan_path(pool)])
    return dict(doc["network"])


def segment(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in data["network"]["segments"] if s["name"] == name)


def test_example_h100_rails_unbonded_ipoib_and_tcp_storage_bonded() -> None:
    n = net(platform_from(), "h100")
    rails = [k for k in n["ethernets"] if k.startswith("rail")]
    assert rails == [f"rail{i}" for i in range(8)]  # one interface per GPU's NIC
    for r in rails:
        e = n["ethernets"][r]
        # IB link MTU 4096 less IPoIB's 4-byte header, datagram mode
        assert (e["mtu"], e["infiniband-mode"], e["set-name"]) == (4092, "datagram", r)
        assert e["addresses"] == ["${" + r.upper() + "_ADDR}"]
    assert not any(r in b["interfaces"] for b in n["bonds"].values() for r in rails)
    # the storage segment asks for RoCE but the NICs are plain Ethernet: TCP, LACP bond
    bond = n["bonds"]["bond-stor"]
    assert bond["interfaces"] == ["stor0", "stor1"]
    assert bond["parameters"] == BOND_PARAMETERS == {
        "mode": "802.3ad", "transmit-hash-policy": "layer3+4", "lacp-rate": "fast",
        "mii-monitor-interval": 100}
    assert bond["mtu"] == 9000 and n["ethernets"]["stor0"]["mtu"] == 9000
    assert "addresses" not in n["ethernets"]["stor0"]
    # one management port: no bond, the default route there (no service NICs)
    assert n["ethernets"]["mgmt0"]["routes"] == [{"to": "default", "via": "${MGMT_GATEWAY}"}]
    assert "bond-mgmt" not in n["bonds"]


def test_example_l40s_service_bond_carries_the_default_route() -> None:
    n = net(platform_from(), "l40s")
    assert n["bonds"]["bond-svc"]["routes"] == [{"to": "default", "via": "${SVC_GATEWAY}"}]
    assert "routes" not in n["ethernets"]["mgmt0"]
    assert not [k for k in n["ethernets"] if k.startswith("rail")]


def test_every_placeholder_is_explained_in_the_header_and_quoted() -> None:
    for text in netplan_files(platform_from()).values():
        head = [line for line in text.splitlines() if line.startswith("#")]
        body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
        used = set(re.findall(r"\$\{([A-Z0-9_]+)\}", body))
        listed = {m.group(1) for line in head if (m := re.match(r"#   ([A-Z0-9_]+) ", line))}
        assert used and used == listed
        assert not re.search(r"[^\"]\$\{", body)  # each one a quoted scalar
    assert "in 10.20.0.0/24" in netplan_files(platform_from())[netplan_path("h100")]


def test_vlan_carries_the_address_and_the_bond_is_not_smaller() -> None:
    def edit(d: dict[str, Any]) -> None:
        segment(d, "storage")["vlan"] = 20
    n = net(platform_from(edit), "h100")
    vlan = n["vlans"]["bond-stor.20"]
    assert (vlan["id"], vlan["link"], vlan["mtu"]) == (20, "bond-stor", 9000)
    assert vlan["addresses"] == ["${STOR_ADDR}"]
    assert "addresses" not in n["bonds"]["bond-stor"]
    assert n["bonds"]["bond-stor"]["mtu"] >= vlan["mtu"]


def test_rdma_capable_storage_ports_are_not_bonded() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][0]["node"]["nics"][1]["type"] = "roce"
        segment(d, "storage")["vlan"] = 20
    n = net(platform_from(edit), "h100")
    assert "bond-stor" not in n.get("bonds", {})
    assert n["vlans"]["stor0.20"]["addresses"] == ["${STOR0_ADDR}"]
    assert n["vlans"]["stor1.20"]["link"] == "stor1"
    assert n["ethernets"]["stor1"]["mtu"] == 9000


def test_roce_rails_and_a_large_ib_mtu() -> None:
    def roce(d: dict[str, Any]) -> None:
        d["pools"][0]["node"]["nics"][0]["type"] = "roce"
        hpc = segment(d, "hpc")
        hpc.update(rdma="roce", mtu=9000)
    e = net(platform_from(roce), "h100")["ethernets"]["rail3"]
    assert e["mtu"] == 9000 and "infiniband-mode" not in e

    def big(d: dict[str, Any]) -> None:
        segment(d, "hpc")["mtu"] = 9000
    e = net(platform_from(big), "h100")["ethernets"]["rail0"]
    assert (e["infiniband-mode"], e["mtu"]) == ("connected", 9000)


def test_nics_without_a_segment_are_left_out_and_said_so() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["network"]["segments"] = [s for s in d["network"]["segments"]
                                    if s["purpose"] != "storage"]
    p = platform_from(edit)
    text = netplan_files(p)[netplan_path("h100")]
    assert "# not configured: storage NICs (stor0, stor1): the spec has no storage segment" in text
    assert "stor0" not in net(p, "h100")["ethernets"]


def test_a_pool_without_nics_gets_no_file_and_the_tree_carries_the_rest() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][1]["node"]["nics"] = []
    p = platform_from(edit)
    assert list(netplan_files(p)) == [netplan_path("h100")]
    files = render(p, load_catalog()).files()
    assert netplan_path("h100") in files and netplan_path("l40s") not in files
    # node-side files: no kustomization lists them
    assert not any("netplan" in text for path, text in files.items()
                   if path.endswith("kustomization.yaml"))
