"""The node-agent image with a real control plane (``aiplat lab cluster up``: upstream
kube-apiserver, controller-manager, scheduler; kwok nodes for the example's pools).

- the rendered node-agent objects, with the image's tag, are accepted by the API server
  (Pod Security ``privileged`` namespace, RBAC, DaemonSet) and the DaemonSet controller
  schedules one agent pod on each pool node (kwok marks them Running: no container starts);
- the agent in the image, run in Podman with a kubeconfig, patches a real Node over the API:
  labels, the NoSchedule taint (the node's other taints kept) and the condition;
- the agent's ServiceAccount token may patch its Node (RBAC on nodes and nodes/status), and
  the DaemonSet tolerates the taint its own agent sets, so when its pod on a tainted node is
  replaced (rolling update, eviction) a new one comes back to lift the taint.

Needs the components (``aiplat lab cluster build``) and the image tools; fails in CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cluster import agent_image as ai
from aiplat.cluster.assets import locate
from aiplat.devices.verify import PodmanOptions
from aiplat.errors import InputError
from aiplat.kube.apply import Api
from aiplat.kube.facts import pool_facts
from aiplat.kube.render_cluster import SYSTEM_NS, node_agent
from aiplat.plan.resolve import resolve
from aiplat.spec import EXAMPLE, example_text, parse_platform

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixtures.nodes import hgx_h100

pytestmark = pytest.mark.integration

NAME = "agentimg"
TAG = f"localhost/aiplat-node-agent-live:{os.getpid()}"
POOL_NODES = [*(f"h100-{i}" for i in range(6)), "l40s-0", "l40s-1"]


def _need(reason: str | None) -> None:
    if reason is not None:
        if os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}:
            pytest.fail(f"{reason} (CI=true: integration tests must run, not skip)",
                        pytrace=False)
        pytest.skip(reason)


def _eventually(what: str, probe: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"{what}: not true within {timeout:.0f} s (last: {last!r})")


@dataclass
class Lab:
    api: Api
    server: str
    kube: Path  # a folder the container reads: CA, admin certificate and key, kubeconfigs
    kubeconfig: Path  # the host's


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _need(ai.missing())
    wheel = ai.build_wheel(ai.find_source(), tmp_path_factory.mktemp("wheel"))
    ai.build_image(wheel=wheel, tag=TAG)
    try:
        yield TAG
    finally:
        subprocess.run(["podman", "rmi", "--force", TAG], capture_output=True, timeout=120,
                       check=False)


@pytest.fixture(scope="module")
def lab(image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    try:
        locate()
    except InputError as e:
        _need(str(e))
    tmp = tmp_path_factory.mktemp("lab")
    env = {**os.environ, "AIPLAT_CLUSTER_DIR": str(tmp / "runs"), "NO_COLOR": "1"}
    aiplat = [sys.executable, "-m", "aiplat.cli.main", "lab", "cluster"]
    up = subprocess.run([*aiplat, "up", "--name", NAME], env=env, capture_output=True,
                        text=True, timeout=600, check=False)
    assert up.returncode == 0, up.stderr
    kubeconfig = Path(up.stdout.strip().removeprefix("export KUBECONFIG="))
    api = Api.from_kubeconfig(str(kubeconfig))
    try:
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        yield Lab(api, server, _container_kubeconfigs(kubeconfig, tmp / "kube"), kubeconfig)
    finally:
        api.close()
        subprocess.run([*aiplat, "down", "--name", NAME], env=env, capture_output=True,
                       timeout=300, check=False)


def _container_kubeconfigs(kubeconfig: Path, out: Path) -> Path:
    """The admin kubeconfig with its files under /kube, readable by the image's user."""
    out.mkdir(mode=0o755)
    text = kubeconfig.read_text()
    for name in ("ca.crt", "admin.crt", "admin.key"):
        src = kubeconfig.parent / "pki" / name
        shutil.copy(src, out / name)
        (out / name).chmod(0o644)  # a throwaway test cluster's credentials
        text = text.replace(str(src), f"/kube/{name}")
    (out / "admin").write_text(text)
    (out / "admin").chmod(0o644)
    return out


def _token_kubeconfig(lab: Lab, token: str) -> str:
    (lab.kube / "token").write_text(token)
    (lab.kube / "token").chmod(0o644)
    (lab.kube / "sa").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "lab", "cluster": {"server": lab.server,
                                                 "certificate-authority": "/kube/ca.crt"}}],
        "users": [{"name": "sa", "user": {"tokenFile": "/kube/token"}}],
        "contexts": [{"name": "sa", "context": {"cluster": "lab", "user": "sa"}}]}))
    (lab.kube / "sa").chmod(0o644)
    return "/kube/sa"


def _agent(lab: Lab, host: Path, node: str, kubeconfig: str) -> subprocess.CompletedProcess[str]:
    """The image's agent, one round, patching ``node`` through ``kubeconfig``."""
    args = PodmanOptions().run_args()
    args[args.index("--network") + 1] = "host"  # the API server is on 127.0.0.1
    cmd = [*args, "--user", "65534", "--read-only", "--cap-drop", "all",
           "-v", f"{host}:/host:ro", "-v", f"{lab.kube}:/kube:ro", "-e",
           f"KUBECONFIG={kubeconfig}", TAG, "--root", "/host", "--once", "--node-name", node]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)


def _objects() -> list[dict[str, Any]]:
    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    objs = node_agent(pool_facts(resolve(platform, catalog)))
    for o in objs:
        if o["kind"] == "DaemonSet":
            o["spec"]["template"]["spec"]["containers"][0]["image"] = TAG
    return objs


def _host(tmp: Path) -> Path:
    root = hgx_h100(tmp / "host", degraded=True)
    for d in [root, *root.rglob("*")]:
        if d.is_dir() and not d.is_symlink():
            d.chmod(0o755)
    return root


def _node(lab: Lab, name: str) -> dict[str, Any]:
    return next(n for n in lab.api.objects("v1", "Node") if n["metadata"]["name"] == name)


def _daemonset(lab: Lab) -> dict[str, Any]:
    (ds,) = lab.api.objects("apps/v1", "DaemonSet", SYSTEM_NS)
    return ds


def test_the_daemonset_with_the_image_tag_is_accepted_and_scheduled(lab: Lab) -> None:
    for o in _objects():
        lab.api.apply(o)
    status = _eventually("the DaemonSet schedules a pod on every pool node", lambda: (
        s if (s := _daemonset(lab).get("status", {})).get("currentNumberScheduled")
        == len(POOL_NODES) else None))
    assert status["desiredNumberScheduled"] == len(POOL_NODES)
    pods = lab.api.objects("v1", "Pod", SYSTEM_NS)
    assert sorted(p["spec"]["nodeName"] for p in pods) == POOL_NODES
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {TAG}


def test_the_agent_in_the_image_patches_its_node(lab: Lab, tmp_path: Path) -> None:
    before = _node(lab, "h100-0")["spec"].get("taints") or []
    r = _agent(lab, _host(tmp_path), "h100-0", "/kube/admin")
    assert r.returncode == 1, r.stderr  # the degraded tree fails its checks
    assert "error" not in r.stderr, r.stderr
    node = _node(lab, "h100-0")
    labels = node["metadata"]["labels"]
    assert labels["node.aiplat.io/health"] == "fail"
    assert labels["node.aiplat.io/gpu-count"] == "8"
    assert labels["node.aiplat.io/pcie-degraded"] == "true"
    assert node["spec"]["taints"] == [*before, {"key": "node.aiplat.io/unhealthy",
                                                "value": "checks-failed",
                                                "effect": "NoSchedule"}]
    (cond,) = [c for c in node["status"]["conditions"] if c["type"] == "AiplatNodeHealthy"]
    assert cond["status"] == "False" and "link trained at x8" in cond["message"]


def test_the_agents_service_account_may_patch_its_node(lab: Lab, tmp_path: Path) -> None:
    token = lab.api._json(
        "POST", f"/api/v1/namespaces/{SYSTEM_NS}/serviceaccounts/aiplat-node-agent/token",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": 600}})["status"]["token"]
    r = _agent(lab, _host(tmp_path), "h100-1", _token_kubeconfig(lab, token))
    assert "forbidden" not in r.stderr, r.stderr
    assert _node(lab, "h100-1")["metadata"]["labels"].get("node.aiplat.io/health") == "fail"


def test_the_daemonset_keeps_its_pod_on_a_node_its_agent_tainted(lab: Lab,
                                                                 tmp_path: Path) -> None:
    r = _agent(lab, _host(tmp_path), "h100-2", "/kube/admin")
    assert r.returncode == 1 and any(t["key"] == "node.aiplat.io/unhealthy" for t in
                                     _node(lab, "h100-2")["spec"].get("taints") or []), r.stderr
    (pod,) = [p for p in lab.api.objects("v1", "Pod", SYSTEM_NS)
              if p["spec"]["nodeName"] == "h100-2"]
    lab.api.delete({**pod, "apiVersion": "v1", "kind": "Pod"})  # as an eviction would
    _eventually("a new agent pod on the tainted node", lambda: [
        p for p in lab.api.objects("v1", "Pod", SYSTEM_NS)
        if p["spec"].get("nodeName") == "h100-2"
        and p["metadata"]["uid"] != pod["metadata"]["uid"]], timeout=45)


def test_the_agent_on_the_host_takes_kubeconfig_and_context(lab: Lab, tmp_path: Path) -> None:
    """``aiplat node agent --kubeconfig --context`` (as an admin runs it off-cluster, like
    kubectl): the named context's cluster gets the patch; an unknown context is exit 2."""
    context = yaml.safe_load(lab.kubeconfig.read_text())["current-context"]
    base = [sys.executable, "-m", "aiplat.cli.main", "node", "agent", "--root",
            str(_host(tmp_path)), "--once", "--node-name", "h100-2", "--kubeconfig",
            str(lab.kubeconfig)]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    bad = subprocess.run([*base, "--context", "nope"], capture_output=True, text=True,
                         timeout=300, check=False, env=env)
    assert bad.returncode == 2 and "nope" in bad.stderr, bad.stderr
    r = subprocess.run([*base, "--context", context], capture_output=True, text=True,
                       timeout=300, check=False, env=env)
    assert r.returncode == 1, r.stderr  # the degraded tree fails its checks
    assert _node(lab, "h100-2")["metadata"]["labels"]["node.aiplat.io/health"] == "fail"
