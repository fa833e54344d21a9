"""The pools' NodeFeatureRules (``pools[].nodeNames``, ``kube/render_nodes.py``) against the
real nfd-master on the lab cluster: each node ends with exactly the labels and taints the
reviewed script ``label-and-taint.sh`` gives it, so the two ways of labelling the floor plan
never disagree.

- NFD: ``cmd/nfd-master`` of node-feature-discovery v0.19.0 (the module ``nfd/`` pins for
  ``test_nfd_rules``), built here with ``go build`` and run against the session lab's API
  server with the flags the rendered GPU Operator values give its subchart
  (``node-feature-discovery.master``: ``-enable-taints``, ``-extra-label-ns``).
- The nodes: kwok nodes of the test's own (no label or taint of a pool), created in the
  session's lab and deleted after; one NodeFeature per node, as nfd-worker publishes it
  (``nfd.node.kubernetes.io/node-name`` label, the ``system.name`` attribute ``nodename``).
- The script: the one the tree renders for the same pools, run by bash with a fake
  ``kubectl`` first on PATH that records its arguments; its ``label``/``taint`` calls are
  the expected result.

What the fake NodeFeature cannot show: that a real nfd-worker publishes the name the node
registered with (the worker reads NODE_NAME, which NFD's DaemonSet sets from
``spec.nodeName``; a kubelet started with ``--hostname-override`` registers that name, and it
is the one ``nodeNames`` must list). The taints the node lifecycle controller puts on kwok
nodes whose status goes stale (``node.kubernetes.io/*``) are not the pool's and are left out
of the comparison.

Duration: the first run builds nfd-master (about 3 min on 2 cores with the Go module cache
warm, cached after); the check itself takes seconds on the session's lab cluster.
"""

from __future__ import annotations

import copy
import hashlib
import os
import shlex
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import need
from examplelab import ExampleLab
from gooracle import go_on_path, user_cache

from aiplat.catalog import load_catalog
from aiplat.cluster.nodes import KWOK_ANNOTATION
from aiplat.gobuild import Component, go_build
from aiplat.kube.facts import pool_facts
from aiplat.kube.render_cluster import render_cluster
from aiplat.kube.render_nodes import label_script
from aiplat.plan.resolve import resolve
from aiplat.spec import EXAMPLE, example_text, parse_platform

pytestmark = pytest.mark.integration
TOOLS = Path(__file__).parent / "nfd"
MASTER = Component("nfd-master", "sigs.k8s.io/node-feature-discovery",
                   "sigs.k8s.io/node-feature-discovery/cmd/nfd-master")
NS = "aiplat-nfd-inventory"
NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"
Obj = dict[str, Any]
# Physical order deliberately unlike the names' sort order, so a rack assigned by name would
# differ from one assigned by position.
INVENTORY = {"h100": ["inv-c", "inv-a", "inv-f", "inv-b", "inv-e", "inv-d"],
             "l40s": ["inv-l4", "inv-l1", "inv-l6", "inv-l2", "inv-l5", "inv-l3"]}


@pytest.fixture(scope="module")
def nfd_master() -> Path:
    go_on_path()
    if shutil.which("go") is None:
        need("go is not installed")
    cache = user_cache() / "aiplat" / "nfd" / "nfd-master-v0.19.0"
    go_build(TOOLS, [MASTER], cache, "-s -w",
             stamp_extra={"go.sum": hashlib.sha256((TOOLS / "go.sum").read_bytes()).hexdigest()})
    return cache / "bin" / MASTER.name


def _rendered() -> tuple[list[Obj], Obj, str]:
    """The inventoried example's pool NodeFeatureRules, GPU Operator values and the script
    the tree would have rendered for the same pools without an inventory."""
    doc = yaml.safe_load(example_text())
    for p in doc["pools"]:
        p["nodeNames"] = INVENTORY[p["name"]]
    doc["pools"][0]["labels"] = {"example.com/owner": "research"}
    doc["pools"][0]["taints"].append({"key": "example.com/burnin", "value": "pending",
                                      "effect": "NoExecute"})
    catalog = load_catalog()
    platform = parse_platform(yaml.safe_dump(doc), EXAMPLE, catalog)
    pools = pool_facts(resolve(platform, catalog))
    manifests, files = render_cluster(platform, pools)
    assert "cluster/nodes/label-and-taint.sh" not in files  # every pool is inventoried
    rules = [o for o in manifests["cluster/nodefeaturerules.yaml"]
             if o["metadata"]["name"].startswith("aiplat-pool-")]
    assert len(rules) == len(pools)
    return rules, yaml.safe_load(files["cluster/gpu-operator/values.yaml"]), label_script(pools)


def _script_result(script: str, tmp: Path) -> dict[str, tuple[dict[str, str], set[str]]]:
    """Per node (labels, taints as key[=value]:effect) from running the script per pool with
    a kubectl that records its arguments."""
    bindir = tmp / "bin"
    bindir.mkdir()
    log = tmp / "kubectl.log"
    kubectl = bindir / "kubectl"
    kubectl.write_text(f'#!/bin/sh\nprintf "%s\\0" "$@" >> {shlex.quote(str(log))}\n'
                       f'printf "\\n" >> {shlex.quote(str(log))}\n')
    kubectl.chmod(0o755)
    (tmp / "label-and-taint.sh").write_text(script)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    for pool, names in INVENTORY.items():
        done = subprocess.run(["bash", str(tmp / "label-and-taint.sh"), pool, *names], env=env,
                              capture_output=True, text=True, check=False, timeout=60)
        assert done.returncode == 0, done.stderr
    out: dict[str, tuple[dict[str, str], set[str]]] = {}
    for line in log.read_text().splitlines():
        verb, kind, node, flag, *args = line.rstrip("\0").split("\0")
        assert (kind, flag) == ("node", "--overwrite"), line
        labels, taints = out.setdefault(node, ({}, set()))
        if verb == "label":
            labels.update(a.split("=", 1) for a in args)
        else:
            assert verb == "taint", line
            taints.update(args)
    return out


def _taint_text(t: Obj) -> str:
    return f"{t['key']}{'=' + t['value'] if t.get('value') else ''}:{t['effect']}"


def _kwok_node(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": dict(KWOK_ANNOTATION),
                         "labels": {"kubernetes.io/hostname": name, "type": "kwok"}},
            "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}


def _node_feature(name: str) -> Obj:
    """What nfd-worker publishes, reduced to the feature the rules match on."""
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
            "metadata": {"name": name, "namespace": NS, "labels": {NODE_NAME_LABEL: name}},
            "spec": {"features": {"attributes": {
                "system.name": {"elements": {"nodename": name}}}}}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def nodes(lab: ExampleLab) -> Iterator[list[str]]:
    """The test's kwok nodes and their NodeFeatures in the session's lab, removed after."""
    names = [n for ns in INVENTORY.values() for n in ns]
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    lab.api.create_or_get(ns)
    try:
        for n in names:
            lab.api.create(_kwok_node(n))
            lab.api.create(_node_feature(n))
        yield names
    finally:
        for n in names:
            lab.api.delete(_kwok_node(n))
        lab.api.delete(ns)


def test_nfd_master_labels_and_taints_each_node_as_the_script_does(
        lab: ExampleLab, nfd_master: Path, nodes: list[str], tmp_path: Path) -> None:
    rules, values, script = _rendered()
    master = values["node-feature-discovery"]["master"]
    assert master == {"enableTaints": True, "extraLabelNs": ["topology.kubernetes.io"]}
    expected = _script_result(script, tmp_path)
    assert set(expected) == set(nodes)
    # Each node starts with none of the pool's labels or taints.
    before = {n: (lab.api.get(_kwok_node(n)) or {}) for n in nodes}
    for n, o in before.items():
        assert not set(expected[n][0]) & set(o["metadata"].get("labels", {})), n
    flags = ["-enable-taints"] if master.get("enableTaints") else []
    flags += [f"-extra-label-ns={','.join(master.get('extraLabelNs', []))}"]
    log = tmp_path / "nfd-master.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(nfd_master), f"-kubeconfig={lab.kubeconfig}", f"-port={_free_port()}",
             *flags],
            # The node nfd-master runs on (its Deployment's spec.nodeName), where it patches
            # its version annotation: one of the test's own.
            env={**os.environ, "KUBERNETES_NAMESPACE": NS, "NODE_NAME": nodes[0]},
            stdout=out, stderr=subprocess.STDOUT)
    try:
        for r in rules:
            lab.api.create(copy.deepcopy(r))

        def actual() -> dict[str, tuple[dict[str, str], set[str]]]:
            got = {}
            for n in nodes:
                o = lab.api.get(_kwok_node(n)) or {}
                labels = {k: v for k, v in o["metadata"].get("labels", {}).items()
                          if k not in before[n]["metadata"]["labels"]}
                taints = {_taint_text(t) for t in o.get("spec", {}).get("taints", [])
                          if not t["key"].startswith("node.kubernetes.io/")}
                got[n] = (labels, taints)
            return got

        deadline = time.monotonic() + 60
        got = actual()
        while got != expected and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            got = actual()
        assert got == expected, log.read_text()[-4000:]
        # Rack by position in nodeNames (the h100 pool has nodesPerRack: 2), not by name.
        rack = {n: got[n][0]["topology.aiplat.io/rack"] for n in INVENTORY["h100"]}
        assert rack["inv-c"] == rack["inv-a"] == "h100-rack-0" != rack["inv-b"], rack
    finally:
        for r in rules:
            lab.api.delete(r)
        proc.terminate()
        proc.wait(timeout=30)
