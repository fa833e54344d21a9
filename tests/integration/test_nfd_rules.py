"""The tree's NodeFeatureRules against node-feature-discovery itself: NFD's own feature
sources (pci, memory) read each sample host tree and NFD's own rule engine runs the rendered
rules (``nfd/nfd-labels``, a main of ours around NFD v0.19.0, built here with ``go build``);
every label they give must be the one aiplat's node agent computes on the same tree, so the
two writers of a node's labels never disagree. What a fake tree cannot show: NFD's worker and
master talking to a real API server (the lab cluster applies the rule object itself).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import need
from gooracle import go_on_path, user_cache

from aiplat.catalog import load_catalog
from aiplat.gobuild import Component, go_build
from aiplat.kube.facts import pool_facts
from aiplat.kube.render_cluster import node_feature_rules
from aiplat.node.collect import collect_inventory
from aiplat.node.placement import evaluate_placement
from aiplat.plan.resolve import resolve
from aiplat.samples import catalogue, get
from aiplat.spec import EXAMPLE, example_text, parse_platform

pytestmark = pytest.mark.integration
TOOLS = Path(__file__).parent / "nfd"
PROGRAM = Component("nfd-labels", "sigs.k8s.io/node-feature-discovery",
                    "aiplat.local/tools/nfd/nfd-labels")
NFD_KEYS = {"node.aiplat.io/gpu-vendor", "node.aiplat.io/gpu-count", "node.aiplat.io/numa-nodes"}


@pytest.fixture(scope="module")
def nfd_labels() -> Path:
    go_on_path()
    if shutil.which("go") is None:
        need("go is not installed")
    cache = user_cache() / "aiplat" / "nfd" / "nfd-v0.19.0"
    source = hashlib.sha256((TOOLS / "nfd-labels" / "main.go").read_bytes()).hexdigest()
    go_build(TOOLS, [PROGRAM], cache, "-s -w", stamp_extra={"source": source})
    return cache / "bin" / PROGRAM.name


@pytest.fixture(scope="module")
def rule(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rendered NodeFeatureRule of a platform with an NVIDIA and an AMD pool."""
    catalog = load_catalog()
    doc = yaml.safe_load(example_text())
    amd = json.loads(json.dumps(next(p for p in doc["pools"] if p["name"] == "l40s")))
    amd["name"] = "mi300x"
    amd["node"]["gpu"] = {"model": "MI300X", "count": 8}
    amd["node"].pop("nodeType", None)
    doc["pools"].append(amd)
    platform = parse_platform(yaml.safe_dump(doc), EXAMPLE, catalog)
    [obj] = node_feature_rules(pool_facts(resolve(platform, catalog)))
    vendors = {r["labels"]["node.aiplat.io/gpu-vendor"] for r in obj["spec"]["rules"]
               if "labels" in r}
    assert vendors == {"nvidia", "amd"}
    path = tmp_path_factory.mktemp("nfd") / "rule.json"
    path.write_text(json.dumps(obj))
    return path


@pytest.mark.parametrize("sample", [s.name for s in catalogue() if s.name.startswith("node-")])
def test_nfd_labels_equal_the_node_agents(sample: str, nfd_labels: Path, rule: Path,
                                          tmp_path: Path) -> None:
    root = get(sample, tmp_path / sample)
    done = subprocess.run([str(nfd_labels), str(root), str(rule)], capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    nfd = json.loads(done.stdout)["labels"]
    agent = evaluate_placement(collect_inventory(root)).labels
    assert set(nfd) <= NFD_KEYS, nfd
    assert {k: agent[k] for k in nfd} == nfd, (nfd, agent)
    gpus = int(agent["node.aiplat.io/gpu-count"])
    # NFD labels GPU nodes fully; on a node without GPUs only the NUMA count.
    assert set(nfd) == (NFD_KEYS if gpus else {"node.aiplat.io/numa-nodes"}), nfd
