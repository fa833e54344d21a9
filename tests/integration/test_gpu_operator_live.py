"""The GPU Operator's own controller reconciles the ClusterPolicy made from aiplat's values, on
the lab cluster: the real controller (``cmd/gpu-operator`` of github.com/NVIDIA/gpu-operator,
built from its pinned module by ``gpuoperator.py``), its CRDs and state manifests from the
same module, the ClusterPolicy rendered from its chart's template with the tree's
``cluster/gpu-operator/values.yaml``, and the kwok GPU nodes labelled as the chart's NFD
labels them (``feature.node.kubernetes.io/pci-10de.present``: its worker config's
``deviceLabelFields: [vendor]``). The controller labels the nodes, creates the operand
DaemonSets, and the real DaemonSet controller and scheduler place their pods (kwok runs them).

Proven for the example (the host owns driver and toolkit, an H100 device-plugin pool, an L40S
DRA pool) and a MIG variant (the example plus an H100 MIG pool, added to the same cluster and
reconciled from the updated ClusterPolicy), then that variant with the operator owning driver
and toolkit: which DaemonSets exist, on which nodes their pods land, which node labels the
controller sets and which of aiplat's it keeps — each compared with the plan read from
aiplat's own pool model — and each state's outcome in the controller's pass.

Nothing stops the controller on fake nodes: each pass steps through every state whatever the
last one's readiness (``ClusterPolicyReconciler.Reconcile``, controllers/clusterpolicy_
controller.go), so every DaemonSet and label is produced. It needs what its Deployment gives
it: the states at the hard-coded ``/opt/gpu-operator`` and the node's os-release at
``/host-etc/os-release`` (without it the DCGM exporter's transform fails the pass, "failed to
get os-release", and no later state — GFD, MIG Manager — is reached); ``gpuoperator.command``
provides both. Its ClusterPolicy does not reach ``ready`` on this lab as it is, so the
placement tests do not ask for it: operand pods are Running with ready containers (kwok), but
the lab's kwok renews no node Lease (kube-node-lease is empty) and posts node status every
10-20 min, so the node lifecycle controller finds every node's heartbeat stale about once a
minute ("all Nodes are not-Ready" in its log) and marks their pods Ready=False; kwok's
node-initialize stage flips the nodes back but nothing re-readies the pods, and
``isDaemonSetReady`` (NumberUnavailable != 0) keeps the states notReady, requeued every 5 s.
With kwok's ``--node-lease-duration-seconds=40`` it is ready in seconds and stays so; the
readiness test runs where the nodes hold Leases and says why it skips where they do not.

What fake nodes cannot show: the operands themselves (no image is pulled: the driver and
toolkit validations, the device plugin's registration with a kubelet, MIG Manager applying a
mig-parted config, DCGM reading a GPU), and GFD's own labels (the lab's nodes carry the
product, count and memory labels, not ``nvidia.com/mig.capable``: the controller falls back
to the product name to find MIG-capable GPUs).

Runs in CI: scripts/test.sh builds the controller right after the lab (``gpuoperator.py``);
its module pins the lab's library versions, so that build compiles ~40 packages on top of the
lab's (under a minute on 2 cores; about 10 min from empty Go caches). The test builds it too
when missing or stale (a no-op otherwise). A missing prerequisite — the lab's components, Go,
the built controller, ``unshare`` with user namespaces — skips it locally and fails it in CI.
About two minutes on 2 cores, most of it the controller's passes over three variants, on a lab
of its own: it installs the operator's CRDs, adds a MIG pool's nodes and lets the controller
relabel every GPU node.
"""

from __future__ import annotations

import copy
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
from conftest import need
from gooracle import go_on_path
from gpuoperator import RELEASE, build, cluster_policy, command, locate
from test_cluster_live import _aiplat, _eventually, _need_components, _zombie

from aiplat.catalog import load_catalog
from aiplat.cluster.assets import locate as locate_lab
from aiplat.cluster.nodes import lab_node_count, node
from aiplat.errors import InputError
from aiplat.kube.apply import Api
from aiplat.kube.facts import PoolFacts, pool_facts
from aiplat.kube.render_cluster import render_cluster
from aiplat.plan.resolve import resolve
from aiplat.spec import EXAMPLE, example_text, parse_platform
from aiplat.spec.models import SharingStrategy

pytestmark = pytest.mark.integration
NAME = "gpuop"
NS = "gpu-operator"
NFD_LABEL = "feature.node.kubernetes.io/pci-10de.present"
NFD_OS_LABELS = {"feature.node.kubernetes.io/kernel-version.full": "6.8.0-60-generic",
                 "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
                 "feature.node.kubernetes.io/system-os_release.VERSION_ID": "24.04"}
Obj = dict[str, Any]
# Each operand DaemonSet the ClusterPolicy can create (its name in the module's assets/) and
# the pools it belongs on according to aiplat's plan.
DRIVER = "nvidia-driver-daemonset"
TOOLKIT = "nvidia-container-toolkit-daemonset"
PLUGIN = "nvidia-device-plugin-daemonset"
MIG_MANAGER = "nvidia-mig-manager"
DCGM_EXPORTER = "nvidia-dcgm-exporter"
GFD = "gpu-feature-discovery"
VALIDATOR = "nvidia-operator-validator"
OPERANDS = {DRIVER, TOOLKIT, PLUGIN, MIG_MANAGER, DCGM_EXPORTER, GFD, VALIDATOR}
LAST_STATE = "state-cc-manager"  # the last addState in ClusterPolicyController.init
MIG_POOL = {"name": "h100mig", "node": {"nodeType": "hgx-h100-8",
                                         "gpu": {"model": "H100-SXM-80GB", "count": 8},
                                         "cpuCores": 112, "memoryGiB": 2048},
            "count": 2, "sharing": {"strategy": "mig",
                                    "migLayout": ["3g.40gb", "2g.20gb", "2g.20gb"]},
            "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}


def _need_operator() -> Path:
    """The built operator (built here when missing or stale, where Go is) and unshare; a
    missing prerequisite skips locally and fails in CI; a failing build fails."""
    go_on_path()
    try:
        if shutil.which("go") is not None:
            build()
    except InputError as e:
        pytest.fail(str(e), pytrace=False)
    try:
        cache = locate()
    except InputError as e:
        need(str(e))
        raise
    reason = None
    if shutil.which("unshare") is None:
        reason = "unshare is not installed (util-linux)"
    elif subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"],
                        capture_output=True, check=False).returncode != 0:
        reason = "unshare cannot create a user and mount namespace here"
    need(reason)
    return cache


@dataclass
class Variant:
    """A spec as the operator is handed it: aiplat's values, the operator namespace's
    objects, and the pools (the plan's model of each node)."""
    values: Obj
    config: list[Obj]
    pools: list[PoolFacts]
    driver_owner: str


def _variant(doc: Obj) -> Variant:
    catalog = load_catalog()
    platform = parse_platform(yaml.safe_dump(doc), EXAMPLE, catalog)
    pools = pool_facts(resolve(platform, catalog))
    manifests, files = render_cluster(platform, pools)
    return Variant(yaml.safe_load(files["cluster/gpu-operator/values.yaml"]),
                   manifests["cluster/gpu-operator-config.yaml"], pools,
                   platform.kubernetes.components.driver)


def _mig_doc() -> Obj:
    doc = yaml.safe_load(example_text())
    doc["pools"].append(copy.deepcopy(MIG_POOL))
    return dict(doc)


@dataclass
class Lab:
    api: Api
    cache: Path
    log: Path

    def label_as_nfd(self, pools: list[PoolFacts], more: dict[str, str] | None = None
                     ) -> None:
        """What NFD's worker publishes on a node with an NVIDIA PCI device (and ``more``)."""
        labels = {NFD_LABEL: "true", **(more or {})}
        for p in pools:
            if p.gpu is None:
                continue
            for i in range(lab_node_count(p)):
                r = self.api._request(  # a merge patch: the node's other labels stay
                    "PATCH", f"/api/v1/nodes/{p.node_name(i)}",
                    content=json.dumps({"metadata": {"labels": labels}}),
                    headers={"Content-Type": "application/merge-patch+json"})
                assert r.status_code == 200, r.text

    def install(self, policy: Obj) -> None:
        """Create the ClusterPolicy, or replace its spec. Not server-side apply: the chart's
        template renders a key with nothing under it as null (``validator.plugin`` with the
        chart's own defaults), which create and update prune and an apply patch refuses
        ("spec.validator.plugin in body must be of type object")."""
        for _ in range(10):  # client-go's RetryOnConflict: the operator writes its status
            current = self.api.get(policy)  # between our read and our write (CI saw a 409)
            if current is None:
                self.api.create(policy)
                return
            current["spec"] = policy["spec"]
            r = self.api._request("PUT", self.api.path(policy), json=current)
            if r.status_code != 409:
                break
        assert r.status_code == 200, r.text

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    _need_components()
    cache = _need_operator()
    tmp = tmp_path_factory.mktemp("gpuop")
    env = {**os.environ, "AIPLAT_CLUSTER_DIR": str(tmp / "runs"), "NO_COLOR": "1"}
    t0 = time.monotonic()
    up = _aiplat(env, "lab", "cluster", "up", "--name", NAME, check=True)
    kubeconfig = up.stdout.strip().removeprefix("export KUBECONFIG=")
    print(f"\nlab cluster up in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    api = Api.from_kubeconfig(kubeconfig)
    proc = None
    try:
        crds = [d for f in sorted((cache / "crds").glob("*.yaml"))
                for d in yaml.safe_load_all(f.read_text()) if d]
        for crd in crds:
            api.apply(crd)
        api.wait_established([c["metadata"]["name"] for c in crds])
        log = tmp / "gpu-operator.log"
        with log.open("w") as out:
            # The environment its Deployment sets (templates/operator.yaml); no metrics or
            # probe listeners, no leader election: one controller, the test's.
            proc = subprocess.Popen(
                command(cache, Path(kubeconfig), "--metrics-bind-address=0",
                        "--health-probe-bind-address=0"),
                env={**env, "KUBECONFIG": kubeconfig, "OPERATOR_NAMESPACE": NS,
                     "WATCH_NAMESPACE": "", "DRIVER_MANAGER_IMAGE": _driver_manager(cache)},
                stdout=out, stderr=subprocess.STDOUT)
        yield Lab(api, cache, log)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        api.close()
        down = _aiplat(env, "lab", "cluster", "down", "--name", NAME)
        assert down.returncode == 0, down.stderr
        assert proc is None or not Path(f"/proc/{proc.pid}").exists() or _zombie(proc.pid)


def _driver_manager(cache: Path) -> str:
    m = yaml.safe_load((cache / "chart" / "values.yaml").read_text())["driver"]["manager"]
    return f"{m['repository']}/{m['image']}:{m['version']}"


# --- what the plan says and what the cluster shows ---------------------------------------

def _plan(v: Variant) -> dict[str, set[str]]:
    """Each operand DaemonSet aiplat intends, and the nodes its pods belong on: driver and
    toolkit only where the operator owns them, the device plugin on device-plugin pools (none
    on DRA pools), the exporter, GFD and the validator on every GPU node, nothing on the
    system nodes. MIG Manager, where a pool uses MIG, on those pools' nodes and — the
    operator's rule (``hasMIGCapableGPU``, controllers/state_manager.go: GFD's
    ``nvidia.com/mig.capable``, else an H100/A100/A30 product name) — on every node whose GPU
    can do MIG, which aiplat's catalog knows as the model's MIG profiles; there it holds the
    GPUs at ``all-disabled`` (see :func:`_check`)."""
    def nodes(keep: Any) -> set[str]:
        return {p.node_name(i) for p in v.pools if p.gpu is not None and keep(p)
                for i in range(lab_node_count(p))}
    gpu = nodes(lambda _p: True)
    out = {DCGM_EXPORTER: gpu, GFD: gpu, VALIDATOR: gpu,
           PLUGIN: nodes(lambda p: p.gpu_mode == "device-plugin")}
    if nodes(_is_mig):
        out[MIG_MANAGER] = nodes(lambda p: _is_mig(p) or bool(p.gpu.mig_profiles))
    if v.driver_owner == "operator":
        out[DRIVER] = out[TOOLKIT] = gpu
    return {k: s for k, s in out.items() if s}


def _is_mig(p: PoolFacts) -> bool:
    return p.spec.sharing.strategy is SharingStrategy.MIG


def _reconciled(lab: Lab, offset: int, until: Callable[[dict[str, str]], bool] = lambda _s: True
                ) -> dict[str, str]:
    """Wait for the controller's first full pass over its states that starts after byte
    ``offset`` of its log (after the ClusterPolicy changed) and satisfies ``until``; each
    state's outcome (``ready``, ``notReady``, ``disabled``) from its "ClusterPolicy step
    completed" lines. ``until`` tells the pass over the new spec from a requeued one that
    began before the controller's cache saw the change."""
    def probe() -> dict[str, str] | None:
        with lab.log.open("rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        states: dict[str, str] | None = None
        for line in text.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("msg") != "ClusterPolicy step completed":
                continue
            if rec["state:"] == "pre-requisites":
                states = {}
            if states is not None:
                states[rec["state:"]] = rec["status"]
                if rec["state:"] == LAST_STATE:
                    if until(states):
                        return states
                    states = None
        return None
    try:
        return dict(_eventually("a full reconcile of the ClusterPolicy", probe, timeout=90))
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- gpu-operator log ---\n{lab.tail()}") from None


def _placed(lab: Lab, want: set[str]) -> dict[str, set[str]]:
    """Each DaemonSet in the operator's namespace and the nodes its pods are bound to, once
    the DaemonSets in ``want`` exist and every DaemonSet has a bound pod per node it
    selects (the DaemonSet controller has caught up)."""
    def probe() -> dict[str, set[str]] | None:
        sets = lab.api.objects("apps/v1", "DaemonSet", NS)
        out: dict[str, set[str]] = {ds["metadata"]["name"]: set() for ds in sets}
        for pod in lab.api.objects("v1", "Pod", NS):
            owner = (pod["metadata"].get("ownerReferences") or [{}])[0]
            if (owner.get("kind") == "DaemonSet" and pod["spec"].get("nodeName")
                    and not pod["metadata"].get("deletionTimestamp")):
                out.setdefault(owner["name"], set()).add(pod["spec"]["nodeName"])
        settled = all(
            (ds.get("status") or {}).get("observedGeneration") == ds["metadata"]["generation"]
            and len(out[ds["metadata"]["name"]])
            == (ds.get("status") or {}).get("desiredNumberScheduled", -1) for ds in sets)
        return out if settled and want <= set(out) else None
    try:
        return dict(_eventually("the operand DaemonSets placed", probe, timeout=90))
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- gpu-operator log ---\n{lab.tail()}") from None


def _nodes(api: Api) -> dict[str, Obj]:
    return {n["metadata"]["name"]: n["metadata"] for n in api.objects("v1", "Node")}


def _check(v: Variant, states: dict[str, str], placed: dict[str, set[str]],
           nodes: dict[str, Obj]) -> None:
    plan = _plan(v)
    for state, ds in (("state-driver", DRIVER), ("state-container-toolkit", TOOLKIT),
                      ("state-device-plugin", PLUGIN), ("state-mig-manager", MIG_MANAGER)):
        assert (states[state] != "disabled") == (ds in plan), (state, states[state])
    assert {k: s for k, s in placed.items() if k in OPERANDS} == plan
    # Nothing on the system nodes; the MPS control daemon's selector needs mps.capable.
    assert set().union(*placed.values()) == set().union(*plan.values())
    for p in v.pools:
        if p.gpu is None:
            continue
        for i in range(lab_node_count(p)):
            got = nodes[p.node_name(i)]["labels"]
            assert got["nvidia.com/gpu.present"] == "true"
            for k, val in p.node_labels.items():  # aiplat's labels: kept, not overwritten
                assert got.get(k) == val, (p.node_name(i), k, got.get(k))
            assert got["nvidia.com/gpu.deploy.device-plugin"] == (
                "true" if p.gpu_mode == "device-plugin" else "false")
            if MIG_MANAGER in plan and not _is_mig(p) and p.gpu.mig_profiles:
                assert got["nvidia.com/mig.config"] == "all-disabled", p.node_name(i)


@dataclass
class Reconciled:
    variant: Variant
    states: dict[str, str]
    placed: dict[str, set[str]]
    nodes: dict[str, Obj]


@pytest.fixture(scope="module")
def example(lab: Lab) -> Reconciled:
    """The example's ClusterPolicy installed and reconciled."""
    v = _variant(yaml.safe_load(example_text()))
    lab.label_as_nfd(v.pools)
    lab.api.apply_all(v.config)
    offset = lab.log.stat().st_size
    lab.install(cluster_policy(lab.cache / "chart", v.values))
    states = _reconciled(lab, offset)
    placed = _placed(lab, {PLUGIN, DCGM_EXPORTER, GFD, VALIDATOR})
    return Reconciled(v, states, placed, _nodes(lab.api))


@pytest.mark.parametrize("variant", ["example", "mig"])
def test_cluster_policy_is_what_helm_renders(variant: str, tmp_path: Path) -> None:
    """The ClusterPolicy the tests install is the one Helm renders (the lab's ``helm
    template`` on the module's chart with aiplat's values), so mapping the values without
    Helm changes nothing."""
    cache = _need_operator()
    try:
        helm = locate_lab().bin("helm")
    except InputError as e:
        need(str(e))
    v = _variant(yaml.safe_load(example_text()) if variant == "example" else _mig_doc())
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(v.values))
    done = subprocess.run([helm, "template", RELEASE, str(cache / "chart"), "-n", NS,
                           "-f", str(tmp_path / "values.yaml"),
                           "--show-only", "templates/clusterpolicy.yaml"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout) == cluster_policy(cache / "chart", v.values)


def test_example_operands_land_on_the_planned_nodes(example: Reconciled) -> None:
    """The example: no driver or toolkit DaemonSet (the host owns both: their states are
    ``disabled``), the device plugin on the H100 nodes only (the L40S DRA pool's
    ``gpu.deploy.device-plugin=false`` kept), no MIG Manager, the exporter, GFD and the
    validator on every GPU node, nothing on the system nodes."""
    v, states, placed = example.variant, example.states, example.placed
    assert not v.values["driver"]["enabled"] and not v.values["toolkit"]["enabled"]
    _check(v, states, placed, example.nodes)
    assert states["state-driver"] == states["state-container-toolkit"] == "disabled"
    assert DRIVER not in placed and TOOLKIT not in placed and MIG_MANAGER not in placed
    assert placed[PLUGIN] == {f"h100-{i}" for i in range(6)}


def test_cluster_policy_ready_where_nodes_renew_leases(lab: Lab, example: Reconciled) -> None:
    """Every operand pod counted available, the ClusterPolicy reports ``ready`` — where the
    kwok nodes keep a Lease, so the node lifecycle controller leaves their pods Ready
    (measured with kwok's --node-lease-duration-seconds=40: ready 6 s after the install,
    still ready 90 s later)."""
    if not lab.api.objects("coordination.k8s.io/v1", "Lease", "kube-node-lease"):
        pytest.skip("the lab's kwok renews no node Lease (kube-node-lease is empty): the node "
                    "lifecycle controller marks every operand pod NotReady about once a "
                    "minute and the ClusterPolicy stays notReady")
    policy = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
              "metadata": {"name": "cluster-policy"}}
    _eventually("the ClusterPolicy ready", lambda: ((lab.api.get(policy) or {}).get(
        "status") or {}).get("state") == "ready", timeout=60)


def test_host_owned_driver_is_not_marked_for_operator_upgrades(example: Reconciled) -> None:
    """With the driver on the host, no GPU node carries the operator's driver-upgrade
    annotation after the example's reconcile."""
    marked = [n for n, m in example.nodes.items()
              if (m.get("annotations") or {}).get("nvidia.com/gpu-driver-upgrade-enabled")]
    assert not marked, marked


@pytest.fixture(scope="module")
def mig(lab: Lab, example: Reconciled) -> Reconciled:
    """The MIG variant's nodes joined to the example's cluster, its ClusterPolicy installed
    over the example's and reconciled."""
    v = _variant(_mig_doc())
    pool = next(p for p in v.pools if p.name == "h100mig")
    names = [pool.node_name(i) for i in range(lab_node_count(pool))]
    for i in range(lab_node_count(pool)):
        lab.api.create_or_get(node(pool, i))
    _eventually("the MIG pool's kwok nodes Ready", lambda: lab.api.nodes_ready(names))
    lab.label_as_nfd(v.pools)
    lab.api.apply_all(v.config)
    policy = cluster_policy(lab.cache / "chart", v.values)
    assert policy["spec"]["migManager"]["enabled"]
    offset = lab.log.stat().st_size
    lab.install(policy)
    states = _reconciled(lab, offset, lambda s: s["state-mig-manager"] != "disabled")
    placed = _placed(lab, {PLUGIN, MIG_MANAGER, DCGM_EXPORTER, GFD, VALIDATOR})
    return Reconciled(v, states, placed, _nodes(lab.api))


def test_mig_variant_runs_mig_manager_on_the_mig_pool(mig: Reconciled) -> None:
    """The example plus an H100 MIG pool, its nodes joining the same cluster: the updated
    ClusterPolicy brings MIG Manager to the MIG pool's nodes, their
    ``nvidia.com/mig.config=<pool>`` kept (the controller writes the default,
    ``all-disabled``, only where the label is missing: on the whole-GPU H100 pool, whose
    MIG-capable GPUs it also runs MIG Manager on), the device plugin to them too (their MIG
    devices are device-plugin resources), still none on the L40S DRA pool."""
    _check(mig.variant, mig.states, mig.placed, mig.nodes)
    names = {"h100mig-0", "h100mig-1"}
    assert names <= mig.placed[MIG_MANAGER]
    assert not {"l40s-0", "l40s-1"} & (mig.placed[PLUGIN] | mig.placed[MIG_MANAGER])
    assert all(mig.nodes[n]["labels"]["nvidia.com/mig.config"] == "h100mig" for n in names)


def test_operator_owned_driver_runs_on_every_gpu_node(lab: Lab, mig: Reconciled) -> None:
    """The MIG variant with ``kubernetes.components`` giving the driver and the toolkit to
    the operator: their DaemonSets on every GPU node (the DRA pool's too: its driver is the
    operator's), still nothing on the system nodes. The driver's state needs what NFD
    publishes on every node (kernel-version.full, system-os_release.ID and VERSION_ID: the
    image tag, ``resolveDriverTag``), here an Ubuntu 24.04 node's."""
    doc = _mig_doc()
    doc["kubernetes"]["components"] = {"driver": "operator", "toolkit": "operator"}
    v = _variant(doc)
    assert v.values["driver"]["enabled"] and v.values["toolkit"]["enabled"]
    lab.label_as_nfd(v.pools, NFD_OS_LABELS)
    lab.api.apply_all(v.config)
    offset = lab.log.stat().st_size
    lab.install(cluster_policy(lab.cache / "chart", v.values))
    states = _reconciled(lab, offset, lambda s: s["state-driver"] != "disabled")
    placed = _placed(lab, {DRIVER, TOOLKIT, PLUGIN, MIG_MANAGER})
    _check(v, states, placed, _nodes(lab.api))
    assert placed[DRIVER] == placed[TOOLKIT] == placed[DCGM_EXPORTER]
