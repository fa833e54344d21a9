"""The node-agent image built for real (debootstrap, pip, ``podman import``) and run in Podman.

- the agent in the image, run the way the DaemonSet runs it (its user, a read-only root file
  system, no capabilities, no network, the host tree mounted read-only), prints the same
  Node patch as the agent run on this host over the same fake sysfs/procfs tree: a degraded
  HGX node (failing, tainted) and a healthy L40S node; the degraded node's labels and
  condition are also asserted on their own, not only against the host run;
- the image contains what its manifest says, the agent's cluster client imports, and none
  of what the agent does not need (CRD schemas, signing, docs, apt lists);
- a second build builds nothing; the saved archive loads back under the tag;
- the rendered DaemonSet's own container args, run against the image: expected to fail until
  render_cluster passes the agent an option it has (``--root``, not ``--sysfs``).

Builds into the user's cache (``$XDG_CACHE_HOME/aiplat/agent-image``), so a second local run
is quick; the test tag is removed at the end. Locally the tests skip without root,
debootstrap or Podman; in CI (CI=true) they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import need

from aiplat.cluster import agent_image as ai
from aiplat.devices.verify import PodmanOptions
from aiplat.kube.render_cluster import node_agent

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixtures.nodes import hgx_h100, l40s_4

pytestmark = pytest.mark.integration

TAG = f"localhost/aiplat-node-agent-test:{os.getpid()}"
OPTS = PodmanOptions()
AIPLAT = [sys.executable, "-c", "import sys; from aiplat.cli.main import main; sys.exit(main())"]



@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One wheel of this checkout for the module: the tree may change while it runs."""
    reason = ai.missing()
    need(reason)
    return ai.build_wheel(ai.find_source(), tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def image(wheel: Path) -> Iterator[ai.BuildReport]:
    t0 = time.monotonic()
    report = ai.build_image(wheel=wheel, tag=TAG, progress=lambda m: print(m, file=sys.stderr))
    print(f"\nnode-agent image built ({', '.join(report.built) or 'cached'}) in "
          f"{time.monotonic() - t0:.1f} s: {report.size_bytes / 2**20:.1f} MiB",
          file=sys.stderr)
    try:
        yield report
    finally:  # by id too: the archive loaded back under TAG leaves the first image untagged
        subprocess.run(["podman", "rmi", "--force", TAG, report.image_id], capture_output=True,
                       timeout=120, check=False)


def _daemonset_container() -> dict[str, Any]:
    ds = next(o for o in node_agent([]) if o["kind"] == "DaemonSet")
    return dict(ds["spec"]["template"]["spec"]["containers"][0])


def _podman_run(host: Path, args: list[str], mount: str = "/host",
                entrypoint: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the image as the DaemonSet does: its securityContext, the tree mounted read-only."""
    sc = _daemonset_container()["securityContext"]
    cmd = [*OPTS.run_args(), "--user", str(sc["runAsUser"]), "--cap-drop", "all",
           "--security-opt", "no-new-privileges", "-v", f"{host}:{mount}:ro"]
    if sc.get("readOnlyRootFilesystem"):
        cmd.append("--read-only")
    if entrypoint:
        cmd += ["--entrypoint", entrypoint]
    return subprocess.run([*cmd, TAG, *args], capture_output=True, text=True, timeout=300,
                          check=False)


def _tree(tmp: Path, kind: str) -> Path:
    root = hgx_h100(tmp / kind, degraded=True) if kind == "hgx-degraded" else l40s_4(tmp / kind)
    for d in [root, *root.rglob("*")]:  # readable by the image's non-root user
        if d.is_dir() and not d.is_symlink():
            d.chmod(0o755)
    return root


def _untimed(out: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(out)
    for c in data["statusPatch"]["status"]["conditions"]:
        assert c.pop("lastHeartbeatTime") == c.pop("lastTransitionTime")
    return data


@pytest.mark.parametrize("kind", ["hgx-degraded", "l40s"])
def test_the_image_prints_the_patch_the_host_agent_computes(image: ai.BuildReport,
                                                            tmp_path: Path, kind: str) -> None:
    root = _tree(tmp_path, kind)
    args = ["--once", "--dry-run", "--node-name", "gpu-node-7"]
    inside = _podman_run(root, ["--root", "/host", *args])
    host = subprocess.run([*AIPLAT, "node", "agent", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=300, check=False)
    assert host.returncode in (0, 1), host.stderr
    assert inside.returncode == host.returncode, inside.stderr
    assert _untimed(inside.stdout) == _untimed(host.stdout)


def test_the_degraded_node_is_labelled_tainted_and_explained(image: ai.BuildReport,
                                                             tmp_path: Path) -> None:
    root = _tree(tmp_path, "hgx-degraded")
    r = _podman_run(root, ["--root", "/host", "--once", "--dry-run", "--node-name", "n"])
    assert r.returncode == 1, r.stderr  # a failed check
    out = _untimed(r.stdout)
    labels = out["patch"]["metadata"]["labels"]
    assert labels["node.aiplat.io/gpu-count"] == "8"
    assert labels["node.aiplat.io/gpu-vendor"] == "nvidia"
    assert labels["node.aiplat.io/rdma"] == "true"
    assert labels["node.aiplat.io/pcie-degraded"] == "true"
    assert labels["node.aiplat.io/health"] == "fail"
    assert out["patch"]["spec"]["taints"] == [
        {"key": "node.aiplat.io/unhealthy", "value": "checks-failed", "effect": "NoSchedule"}]
    (cond,) = out["statusPatch"]["status"]["conditions"]
    assert cond["status"] == "False" and cond["reason"] == "ChecksFailed"
    assert "link trained at x8" in cond["message"] and "mlx5_5/1: DOWN" in cond["message"]


def test_the_image_holds_what_its_manifest_says_and_nothing_the_agent_does_not_need(
        image: ai.BuildReport, tmp_path: Path) -> None:
    r = _podman_run(tmp_path, ["/" + ai.MANIFEST_PATH], entrypoint="cat")
    assert r.returncode == 0, r.stderr
    inside = json.loads(r.stdout)
    assert inside == image.manifest
    py = {ai.normalise(k) for k in inside["python"]}
    assert {"aiplat", "lightkube", "pydantic", "click"} <= py
    assert not py & {"kubernetes-validate", "cryptography", "cel-python", "jsonschema", "pip"}
    assert "python3" in inside["debian"] and inside["aiplat"] == "0.1.0"
    probe = ("import os\n"
             "assert not os.listdir('/usr/share/man') + os.listdir('/var/lib/apt/lists')\n"
             "docs = {f for _d, _s, fs in os.walk('/usr/share/doc') for f in fs}\n"
             "assert docs == {'copyright'}, docs\n"
             "from aiplat.node.agent import LightkubeNodeClient\n"
             "try:\n    LightkubeNodeClient()\n"
             "except Exception as e:\n    print(type(e).__name__)\n")
    r = _podman_run(tmp_path, ["-c", probe], entrypoint="/usr/bin/python3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ConfigError"  # imported, then no cluster to talk to
    assert image.size_bytes < 300 * 2**20, image.size_bytes / 2**20


def test_a_second_build_builds_nothing_and_the_archive_loads(image: ai.BuildReport,
                                                             wheel: Path, tmp_path: Path) -> None:
    t0 = time.monotonic()
    again = ai.build_image(wheel=wheel, tag=TAG, out=tmp_path / "agent.tar")
    assert again.built == [] and again.key == image.key and again.image_id == image.image_id
    assert time.monotonic() - t0 < 120
    r = subprocess.run(["podman", "load", "-i", str(tmp_path / "agent.tar")],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0 and TAG in r.stdout, r.stdout + r.stderr


def test_the_rendered_daemonset_args_run_in_the_image(image: ai.BuildReport,
                                                      tmp_path: Path) -> None:
    c = _daemonset_container()
    root = _tree(tmp_path, "hgx-degraded")
    args = [a.replace("$(NODE_NAME)", "gpu-node-7") for a in c["args"]]
    # The DaemonSet mounts the host's sys, proc and dev under the root its args name.
    (root_arg,) = [a.removeprefix("--root=") for a in args if a.startswith("--root=")]
    assert {m["mountPath"] for m in c["volumeMounts"]} == {
        f"{root_arg}/{d}" for d in ("sys", "proc", "dev")}
    r = _podman_run(root, [*args, "--once", "--dry-run"], mount=root_arg)
    assert r.returncode in (0, 1), r.stderr
    assert json.loads(r.stdout)["node"] == "gpu-node-7"
