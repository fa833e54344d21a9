"""Node labels and taints from ``pools[].nodeNames`` (``kube/render_nodes.py``): the spec's
checks of the inventory, the NodeFeatureRules per rack, the NFD values they need, and the
script kept for the pools without an inventory. nfd-master itself applies the rules in
``tests/integration/test_nfd_inventory_live.py``."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.errors import InputError
from aiplat.kube.facts import pool_facts
from aiplat.kube.render_cluster import render_cluster
from aiplat.ops.runbook import replace_node
from aiplat.plan.resolve import resolve
from aiplat.spec import example_text, parse_platform

H100 = [f"gpu-r{r}-n{n}" for r in (3, 1, 2) for n in (2, 1)]  # physical order, not sorted


def _doc(edit: Any = None) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(example_text())
    doc["pools"][0]["nodeNames"] = list(H100)
    if edit is not None:
        edit(doc)
    return doc


def _render(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    catalog = load_catalog()
    platform = parse_platform(yaml.safe_dump(doc, sort_keys=False), "spec.yaml", catalog)
    return render_cluster(platform, pool_facts(resolve(platform, catalog)))


def _error(doc: dict[str, Any]) -> str:
    with pytest.raises(InputError) as e:
        _render(doc)
    return str(e.value) + " " + str(getattr(e.value, "hint", ""))


def test_rules_follow_the_physical_order_rack_by_rack() -> None:
    manifests, files = _render(_doc())
    [rule] = [o for o in manifests["cluster/nodefeaturerules.yaml"]
              if o["metadata"]["name"] == "aiplat-pool-h100"]
    got = {}
    for r in rule["spec"]["rules"]:
        [m] = r["matchFeatures"]
        assert m["feature"] == "system.name"
        assert m["matchExpressions"]["nodename"]["op"] == "In"
        got[r["labels"]["topology.aiplat.io/rack"]] = (
            m["matchExpressions"]["nodename"]["value"], r["labels"]["topology.aiplat.io/block"])
        assert r["labels"]["aiplat.io/pool"] == "h100"
        assert r["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    # The example's h100 pool: nodesPerRack 2, racksPerBlock 3.
    assert got == {"h100-rack-0": (["gpu-r3-n2", "gpu-r3-n1"], "h100-block-0"),
                   "h100-rack-1": (["gpu-r1-n2", "gpu-r1-n1"], "h100-block-0"),
                   "h100-rack-2": (["gpu-r2-n2", "gpu-r2-n1"], "h100-block-0")}
    values = yaml.safe_load(files["cluster/gpu-operator/values.yaml"])
    assert values["node-feature-discovery"]["master"] == {
        "enableTaints": True, "extraLabelNs": ["topology.kubernetes.io"]}
    # The script is kept for l40s only, and the README says which pool uses which.
    script = files["cluster/nodes/label-and-taint.sh"]
    assert "  l40s)" in script and "  h100)" not in script
    readme = files["cluster/nodes/README.md"]
    assert "`h100`" in readme.split("label-and-taint.sh")[0]
    assert "- `l40s`: no `nodeNames`" in readme and "enable-taints" in readme


def test_without_an_inventory_the_tree_keeps_the_script_and_nfds_defaults() -> None:
    manifests, files = _render(_doc(lambda d: d["pools"][0].pop("nodeNames")))
    assert not [o for o in manifests["cluster/nodefeaturerules.yaml"]
                if o["metadata"]["name"].startswith("aiplat-pool-")]
    assert "node-feature-discovery" not in yaml.safe_load(
        files["cluster/gpu-operator/values.yaml"])
    script = files["cluster/nodes/label-and-taint.sh"]
    assert "  h100)" in script and "  l40s)" in script
    assert "- `h100`: no `nodeNames`" in files["cluster/nodes/README.md"]


def test_every_pool_inventoried_needs_no_script() -> None:
    def both(d: dict[str, Any]) -> None:
        d["pools"][1]["nodeNames"] = [f"l40s-{i}" for i in range(6)]  # autoscaling max 6
    manifests, files = _render(_doc(both))
    assert "cluster/nodes/label-and-taint.sh" not in files
    names = {o["metadata"]["name"] for o in manifests["cluster/nodefeaturerules.yaml"]}
    assert {"aiplat-pool-h100", "aiplat-pool-l40s"} <= names


def test_a_key_nfd_refuses_keeps_the_pool_on_the_script() -> None:
    def unprefixed(d: dict[str, Any]) -> None:
        d["pools"][0]["taints"].append({"key": "dedicated", "effect": "NoSchedule"})
    manifests, files = _render(_doc(unprefixed))
    assert not [o for o in manifests["cluster/nodefeaturerules.yaml"]
                if o["metadata"]["name"].startswith("aiplat-pool-")]
    assert "  h100)" in files["cluster/nodes/label-and-taint.sh"]
    assert "taint 'dedicated' has no prefix" in files["cluster/nodes/README.md"]
    assert "node-feature-discovery" not in yaml.safe_load(
        files["cluster/gpu-operator/values.yaml"])


@pytest.mark.parametrize(("names", "words"), [
    (H100[:5], "nodeNames lists 5 nodes but the pool's count is 6"),
    ([*H100[:5], H100[0]], "node 'gpu-r3-n2' is listed twice"),
    ([*H100[:5], "Bad_Name"], "is not a Kubernetes node name"),
    ([*H100[:5], "x" * 254], "at most 253 characters"),
])
def test_a_bad_inventory_is_refused_with_the_fix(names: list[str], words: str) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][0]["nodeNames"] = names
    assert words in _error(_doc(edit))


def test_a_node_in_two_pools_is_refused() -> None:
    def edit(d: dict[str, Any]) -> None:
        d["pools"][1]["nodeNames"] = [H100[0], *[f"l40s-{i}" for i in range(5)]]
    msg = _error(_doc(edit))
    assert "node 'gpu-r3-n2' is in the nodeNames of pools 'h100' and 'l40s'" in msg


def test_the_runbooks_replacement_follows_the_inventory() -> None:
    """Replacing a node of an inventoried pool edits nodeNames and applies the rules; the
    script would not know the pool."""
    def both(d: dict[str, Any]) -> None:
        d["pools"][1]["nodeNames"] = [f"l40s-{i}" for i in range(6)]
    catalog = load_catalog()
    for doc, script in ((_doc(both), False), (_doc(), True)):
        platform = parse_platform(yaml.safe_dump(doc, sort_keys=False), "site.yaml", catalog)
        steps = replace_node(platform, "site.yaml").steps
        text = " ".join(f"{s.action} {s.command} {s.expect}" for s in steps)
        assert ("label-and-taint.sh --at $POS $POOL $NODE" in text) is script, text
        assert "nodefeaturerules.yaml" in text and "nodeNames" in text


def _run_script(script: str, tmp_path: Any, *args: str) -> tuple[int, list[str], str]:
    """Run the tree's script with a kubectl that records its arguments (bash is the script's
    interpreter; the recording shows which labels each node would get)."""
    import os
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "kubectl.log"
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(f'#!/usr/bin/env bash\necho "$*" >> {log}\n')
    kubectl.chmod(0o755)
    (tmp_path / "label.sh").write_text(script)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    r = subprocess.run(["bash", str(tmp_path / "label.sh"), *args], env=env,
                       capture_output=True, text=True, check=False)
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return r.returncode, lines, r.stderr


def test_a_replacement_node_gets_the_rack_of_the_node_it_replaces(tmp_path: Any) -> None:
    """The runbook labels one replaced node; without --at it would be rack 0 whatever its
    place. The example's l40s pool: nodesPerRack from the plan, so place 9 is rack 9 // n."""
    _, files = _render(_doc())
    script = files["cluster/nodes/label-and-taint.sh"]
    per_rack = int(script.split("  l40s)")[1].split("per_rack=")[1].split(";")[0])
    code, calls, _ = _run_script(script, tmp_path, "l40s", "a", "b")
    assert code == 0 and "l40s-rack-0" in calls[0]
    code, calls, err = _run_script(script, tmp_path, "--at", "9", "l40s", "new-node")
    assert code == 0, err
    label = next(c for c in calls if c.startswith("label node new-node"))
    assert f"l40s-rack-{9 // per_rack} " in label + " ", label
    for bad in (["--at", "x", "l40s", "n"], ["--at", "-1", "l40s", "n"], ["--at"]):
        code, calls, err = _run_script(script, tmp_path, *bad)
        assert code != 0 and calls == [], (bad, err)
