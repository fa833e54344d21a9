"""An overlay is applied as kustomize builds it (issue #45): ``aiplat kube apply`` of a
kustomization that names the example's rendered tree as its base (``../../plan/kube``) and
patches ClusterQueue research's GPU quota puts the patched ClusterQueue in the lab's API
server (it was applied as its base). The streams too: ``aiplat kube render -o yaml`` piped
into ``aiplat kube apply -`` applies the tree it renders (the quota as rendered again).

Needs the components built (``aiplat lab cluster build``); fails, not skips, in CI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from examplelab import example_lab
from test_cluster_live import _aiplat

KUEUE = "kueue.x-k8s.io/v1beta2"
PATCH = """- op: replace
  path: /spec/resourceGroups/0/flavors/0/resources/2/nominalQuota
  value: "400"
"""


def _gpu_quota(cq: dict) -> str:
    resources = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    return next(str(r["nominalQuota"]) for r in resources if r["name"] == "nvidia.com/gpu")


def test_an_overlay_is_applied_as_patched_and_a_rendered_stream_applies(
        tmp_path: Path) -> None:
    with example_lab(tmp_path, "overlay") as lab:
        base = lab.plan / "kube"
        cq = next(o for f, o in lab.items if o["kind"] == "ClusterQueue"
                  and o["metadata"]["name"] == "research")
        assert _gpu_quota(cq) != "400"
        overlay = tmp_path / "overlays" / "big"
        overlay.mkdir(parents=True)
        (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
            "resources": [str(Path("..") / ".." / base.relative_to(tmp_path))],
            "patches": [{"target": {"group": "kueue.x-k8s.io", "kind": "ClusterQueue",
                                    "name": "research"}, "patch": PATCH}]}))
        lint = _aiplat(lab.env, "kube", "lint", str(overlay), "-o", "json")
        assert lint.returncode in (0, 1), lint.stderr
        assert json.loads(lint.stdout)[0]["source"] == "kustomize"
        cp = _aiplat(lab.env, "kube", "apply", str(overlay), "-o", "json")
        assert cp.returncode == 0, cp.stdout + cp.stderr
        live = lab.api.get({"apiVersion": KUEUE, "kind": "ClusterQueue",
                            "metadata": {"name": "research"}})
        assert live is not None and _gpu_quota(live) == "400"

        # kube render -o yaml | kube apply -: the whole tree, as one stream.
        render = subprocess.run(
            [sys.executable, "-m", "aiplat.cli.main", "kube", "render", "-o", "yaml",
             "--with-examples"],
            env=lab.env, capture_output=True, timeout=300, check=True)
        applied = subprocess.run(
            [sys.executable, "-m", "aiplat.cli.main", "kube", "apply", "-", "-o", "json"],
            input=render.stdout, env=lab.env,
            capture_output=True, timeout=300, check=False)
        outcomes = json.loads(applied.stdout)
        assert applied.returncode == 0, [o for o in outcomes if "refused" in o["action"]]
        assert len(outcomes) >= len(lab.items)
        live = lab.api.get({"apiVersion": KUEUE, "kind": "ClusterQueue",
                            "metadata": {"name": "research"}})
        assert live is not None and _gpu_quota(live) == _gpu_quota(cq)
