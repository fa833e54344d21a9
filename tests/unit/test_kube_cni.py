"""The pod network from the plan (``plan/netpath.pod_network``): the CNI plugin's Helm values
(``kube/render_cni.py``), the findings for a ``network.cni`` that contradicts the underlay,
and the spec errors for a plugin asked for an overlay it does not have.

What the values cannot show here: that Cilium or Calico start with them (no cluster is
started for these tests) or that the switches carry the pod MTU."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.kube.render import render
from aiplat.kube.render_cni import CNI_VALUES, cni_files
from aiplat.plan.netpath import network_findings, pod_network
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform


def platform_from(cni: dict[str, Any] | None = None, edit: Any = None) -> Platform:
    data = yaml.safe_load(example_text())
    if cni is not None:
        data["network"]["cni"] = cni
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), "test.yaml", load_catalog())


def values(p: Platform) -> tuple[str, dict[str, Any]]:
    text = cni_files(p)[CNI_VALUES]
    return text, yaml.safe_load(text)


def cni_findings(p: Platform) -> list[tuple[str, str]]:
    return [(f.severity, f.message) for f in network_findings(p) if f.subject == "network.cni"]


def no_cidr(segment: str) -> Any:
    def edit(d: dict[str, Any]) -> None:
        for s in d["network"]["segments"]:
            if s["name"] == segment:
                s.pop("cidr", None)
    return edit


def test_the_example_has_no_cni_section_so_no_values_and_no_findings() -> None:
    p = platform_from()
    assert cni_files(p) == {} and cni_findings(p) == []
    pn = pod_network(p)
    # h100 has no service NIC, so the pods ride management; its /24 holds all 12 nodes
    assert (pn.purpose.value, pn.routing, pn.mtu, pn.native_possible) == (
        "management", "native", 1500, True)
    assert CNI_VALUES not in render(p, load_catalog()).files()


def test_cilium_native_where_every_node_is_on_one_subnet() -> None:
    text, v = values(platform_from({"plugin": "cilium"}))
    assert v == {"MTU": 1500, "routingMode": "native", "autoDirectNodeRoutes": True,
                 "ipv4NativeRoutingCIDR": "10.244.0.0/16",
                 "ipam": {"mode": "cluster-pool",
                          "operator": {"clusterPoolIPv4PodCIDRList": ["10.244.0.0/16"]}}}
    assert "helm install cilium cilium/cilium" in text and "every node (12) is on 10.10.0.0/24" \
        in text


def test_cilium_tunnels_when_the_subnet_is_unknown() -> None:
    p = platform_from({"plugin": "cilium"}, no_cidr("mgmt"))
    text, v = values(p)
    assert (v["routingMode"], v["tunnelProtocol"], v["MTU"]) == ("tunnel", "vxlan", 1500)
    assert "native routing is not possible: segment mgmt has no cidr" in text
    assert "pod MTU 1450 (vxlan's 50-byte header off)" in text
    assert cni_findings(p) == []


@pytest.mark.parametrize(("routing", "mtu", "encap", "bgp"), [
    ("vxlan", 1450, "VXLAN", "Disabled"),
    ("ipip", 1480, "IPIP", "Enabled"),
    ("native", 1500, "None", "Enabled"),
])
def test_calico_pod_mtu_under_its_overlay(routing: str, mtu: int, encap: str, bgp: str) -> None:
    _, v = values(platform_from({"plugin": "calico", "routing": routing,
                                 "podCidr": "172.16.0.0/16"}))
    net = v["installation"]["calicoNetwork"]
    assert (net["mtu"], net["bgp"], net["ipPools"][0]["encapsulation"]) == (mtu, bgp, encap)
    assert net["ipPools"][0]["cidr"] == "172.16.0.0/16"


def test_jumbo_service_segment_gives_jumbo_pods() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][0]["node"]["nics"].append(
            {"type": "ethernet", "rateGbps": 100, "count": 2, "segment": "service"})
        for s in d["network"]["segments"]:
            if s["name"] == "service":
                s["mtu"] = 9000
    p = platform_from({"plugin": "calico", "routing": "vxlan"}, edit)
    assert pod_network(p).segment is not None and pod_network(p).purpose.value == "service"
    assert values(p)[1]["installation"]["calicoNetwork"]["mtu"] == 8950


def test_an_explicit_pod_mtu_above_the_underlay_is_an_error_with_the_limit() -> None:
    found = cni_findings(platform_from({"routing": "vxlan", "mtu": 1500}))
    assert found == [("error", "pod MTU 1500 + vxlan's 50-byte header exceeds segment mgmt's "
                               "MTU 1500: full-size pod packets are dropped or fragmented on "
                               "the way")]
    fix = next(f.fix for f in network_findings(platform_from({"routing": "vxlan", "mtu": 1500}))
               if f.subject == "network.cni")
    assert fix.startswith("set network.cni.mtu to at most 1450")
    assert cni_findings(platform_from({"routing": "vxlan", "mtu": 1450})) == []
    assert cni_findings(platform_from({"routing": "native", "mtu": 1500})) == []


def test_a_pod_segment_some_pool_lacks_native_it_cannot_have_and_an_overlapping_cidr() -> None:
    found = cni_findings(platform_from({"segment": "storage"}))
    assert [s for s, _ in found] == ["error"]
    assert found[0][1].startswith("pool(s) l40s have no NIC on segment storage")
    found = cni_findings(platform_from({"routing": "native"}, no_cidr("mgmt")))
    assert [s for s, _ in found] == ["warning"]
    assert "segment mgmt has no cidr" in found[0][1]
    found = cni_findings(platform_from({"podCidr": "10.0.0.0/8"}))
    assert [m.split(":")[0] for _, m in found] == [
        f"pod CIDR 10.0.0.0/8 overlaps segment {s} (10.{n}.0.0/24)"
        for s, n in (("mgmt", 10), ("storage", 20), ("service", 30))]


def test_no_segment_of_the_purpose_is_an_error_and_renders_no_values() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["network"]["segments"] = [s for s in d["network"]["segments"]
                                    if s["purpose"] != "management"]
    p = platform_from({"plugin": "cilium"}, edit)
    assert cni_files(p) == {}
    assert cni_findings(p) == [("error", "the pod network rides the management segment, but "
                                         "the spec has none")]


@pytest.mark.parametrize(("cni", "wanted"), [
    ("{plugin: calico, routing: geneve}", r"network\.cni\.routing: calico has no geneve overlay "
                                          r"\(fix: use native, vxlan or ipip\)"),
    ("{plugin: cilium, routing: ipip}", r"network\.cni\.routing: cilium has no ipip overlay"),
    ("{podCidr: 5}", r"network\.cni\.podCidr: 5 is not a network"),
    ("{mtu: 100000}", r"network\.cni\.mtu: 100000 is out of range"),
    ("{plugin: flannel}", r"network\.cni\.plugin: "),
])
def test_contradictory_cni_is_a_spec_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           cni: str, wanted: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(example_text().replace("network:\n  segments:",
                                           f"network:\n  cni: {cni}\n  segments:"))
    assert main(["spec", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert re.search(rf"{re.escape(str(path))}:\d+:\d+: {wanted}", err), err
    assert "Traceback" not in err


def test_the_values_ride_in_the_tree_outside_every_kustomization() -> None:
    files = render(platform_from({"plugin": "cilium"}), load_catalog()).files()
    assert yaml.safe_load(files[CNI_VALUES])["routingMode"] == "native"
    assert not any("cni" in text for path, text in files.items()
                   if path.endswith("kustomization.yaml"))
