"""The secondary RDMA network (``kube/render_rdma.rdma_networks``): a Multus
NetworkAttachmentDefinition per rail for each tenant that trains across nodes on an RDMA
pool, its IPAM in the upper half of the rail's subnet (``plan/netpath.rail_subnets``), the
hosts' rail addresses in the lower half (the netplan's header), checked by the packaged NAD
CRD (network-attachment-definition-client v1.7.7), ``kube validate`` and ``kube lint``.

What this cannot show: Multus, whereabouts and the ipoib/macvlan plugins attaching a real
pod to a real HCA (no Multus runs here; this kernel has no RDMA)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.kube.crds import CrdIndex
from aiplat.kube.facts import RDMA_RESOURCE
from aiplat.kube.pipeline import rendered_items
from aiplat.kube.render import render
from aiplat.kube.render_netplan import netplan_files, netplan_path
from aiplat.kube.validate import validate_objects
from aiplat.plan.netpath import network_findings
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform

NADS = "tenants/research/rdma-networks.yaml"


def hpc(**fields: Any) -> Any:
    def edit(d: dict[str, Any]) -> None:
        for s in d["network"]["segments"]:
            if s["name"] == "hpc":
                s.update(fields)
    return edit


def platform_from(*edits: Any) -> Platform:
    data = yaml.safe_load(example_text())
    for e in edits:
        e(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), "test.yaml", load_catalog())


def nads(p: Platform) -> list[dict[str, Any]]:
    return list(render(p, load_catalog()).manifests.get(NADS, []))


def roce_rails(d: dict[str, Any]) -> None:
    d["pools"][0]["node"]["nics"][0]["type"] = "roce"


def test_the_example_hpc_has_no_cidr_so_no_secondary_network() -> None:
    p = platform_from()
    assert nads(p) == []
    assert not any("rdma-networks" in path for path in render(p, load_catalog()).manifests)


def test_one_ipoib_network_per_rail_in_the_training_tenant() -> None:
    objs = nads(platform_from(hpc(cidr="10.40.0.0/16")))
    assert [o["metadata"]["name"] for o in objs] == [f"h100-rail{i}" for i in range(8)]
    # assistant-finetune fits one node: only research trains across nodes, and only there
    assert {o["metadata"]["namespace"] for o in objs} == {"research"}
    for i, o in enumerate(objs):
        assert o["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == RDMA_RESOURCE
        conf = json.loads(o["spec"]["config"])
        assert (conf["type"], conf["master"], conf["name"]) == ("ipoib", f"rail{i}",
                                                               f"h100-rail{i}")
        # rail i owns 10.40.(32 i).0/19: hosts the lower /20, pods the upper
        assert conf["ipam"] == {"type": "whereabouts", "range": f"10.40.{32 * i + 16}.0/20"}


def test_the_hosts_rail_addresses_take_the_other_half() -> None:
    text = netplan_files(platform_from(hpc(cidr="10.40.0.0/16")))[netplan_path("h100")]
    assert ("RAIL1_ADDR    this node's rail1 address in 10.40.32.0/20 with prefix /19 "
            "(pods on rail1 take 10.40.48.0/20)") in text


def test_roce_rails_get_macvlan_at_the_rail_mtu() -> None:
    objs = nads(platform_from(roce_rails, hpc(cidr="10.40.0.0/16", rdma="roce", mtu=9000)))
    conf = json.loads(objs[3]["spec"]["config"])
    assert (conf["type"], conf["master"], conf["mode"], conf["mtu"]) == (
        "macvlan", "rail3", "bridge", 9000)


def test_rails_that_cannot_do_the_segments_rdma_get_none() -> None:
    assert nads(platform_from(roce_rails, hpc(cidr="10.40.0.0/16"))) == []


def test_a_cidr_too_small_for_the_rails_is_a_finding() -> None:
    found = [f for f in network_findings(platform_from(hpc(cidr="10.40.0.0/26")))
             if f.subject == "segment hpc"]
    assert len(found) == 1 and found[0].message == (
        "10.40.0.0/26 cut into 8 rail subnets leaves 2 host and 2 pod addresses per rail, "
        "for 6 nodes and up to 48 pods (one per GPU) on each rail")
    assert [f for f in network_findings(platform_from(hpc(cidr="10.40.0.0/16")))
            if f.subject == "segment hpc"] == []


def test_the_packaged_crd_checks_them() -> None:
    items = [(path, o) for path, o in rendered_items(render(
        platform_from(hpc(cidr="10.40.0.0/16")), load_catalog())) if path == NADS]
    assert len(items) == 8
    assert validate_objects(items, "1.34", CrdIndex()).issues == []
    broken = json.loads(json.dumps(items[0][1]))
    broken["spec"]["config"] = {"type": "ipoib"}  # the config is a JSON string
    res = validate_objects([(NADS, broken)], "1.34", CrdIndex())
    assert [(i.severity, i.path) for i in res.issues] == [("error", "spec.config")]


def test_kube_validate_and_lint_accept_the_tree(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "p.yaml"
    spec.write_text(example_text().replace(
        "{name: hpc, purpose: hpc, mtu: 4096, rdma: infiniband, rateGbps: 400}",
        "{name: hpc, purpose: hpc, mtu: 4096, rdma: infiniband, rateGbps: 400, "
        "cidr: 10.40.0.0/16}"))
    tree = tmp_path / "kube"
    assert main(["kube", "render", str(spec), "-d", str(tree)]) == 0
    assert (tree / NADS).is_file()
    capsys.readouterr()
    assert main(["kube", "validate", str(tree)]) == 0
    out = capsys.readouterr().out
    assert " 0 errors, 0 warnings" in out, out
    assert main(["kube", "lint", str(tree)]) == 0
    assert "NetworkAttachmentDefinition" not in capsys.readouterr().out


def _pod_networks(manifests: dict[str, list[dict[str, Any]]]) -> dict[tuple[str, str], str]:
    """(namespace, workload) -> the Multus networks its pods ask for, over every rendered
    JobSet, Job and Deployment."""
    out = {}
    for objs in manifests.values():
        for o in objs:
            for job in ([r["template"] for r in o["spec"]["replicatedJobs"]]
                        if o.get("kind") == "JobSet" else
                        [o] if o.get("kind") in ("Job", "Deployment") else []):
                ann = job["spec"]["template"]["metadata"].get("annotations") or {}
                if "k8s.v1.cni.cncf.io/networks" in ann:
                    out[(o["metadata"]["namespace"], o["metadata"]["name"])] = \
                        ann["k8s.v1.cni.cncf.io/networks"]
    return out


@pytest.mark.parametrize("edits", [(), (roce_rails, hpc(rdma="roce", mtu=9000))],
                         ids=["infiniband", "roce"])
def test_a_gang_across_nodes_attaches_to_its_pools_rails_and_only_to_nads_that_exist(
        edits: tuple[Any, ...]) -> None:
    manifests = render(platform_from(hpc(cidr="10.40.0.0/16"), *edits),
                       load_catalog()).manifests
    asked = _pod_networks(manifests)
    assert asked, "the example's multi-node training should attach to the rails"
    have = {(o["metadata"]["namespace"], o["metadata"]["name"])
            for objs in manifests.values() for o in objs
            if o.get("kind") == "NetworkAttachmentDefinition"}
    for (ns, _w), names in asked.items():
        listed = names.split(",")
        assert listed == [f"h100-rail{i}" for i in range(8)], names
        assert {(ns, n) for n in listed} <= have, (ns, listed)


def test_without_a_cidr_no_pod_asks_for_a_secondary_network() -> None:
    assert _pod_networks(render(platform_from(), load_catalog()).manifests) == {}
