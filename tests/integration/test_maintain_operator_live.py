"""``aiplat maintain run`` on the operator-owned path (issue #42), against the GPU Operator's
own upgrade controller: the real controller (``gpuoperator.py``; its ``UpgradeReconciler``,
controllers/upgrade_controller.go, drives k8s-operator-libs' ``pkg/upgrade`` state machine)
on the lab of ``test_gpu_operator_live`` (its ``lab`` fixture: one lab, the same pattern),
the example with ``kubernetes.components`` giving the driver to the operator, its
ClusterPolicy rendered from aiplat's values (``driver.upgradePolicy.autoUpgrade: true``).

The driver DaemonSet's pods run on the 8 kwok GPU nodes (the lab's DaemonSet controller
creates them, kwok makes them Running with ready containers). The admin's steps before a
run, as ``maintain plan`` lists them: every GPU node ``nvidia.com/gpu-driver-upgrade.skip
=true``, then the new ``driver.version`` in the ClusterPolicy: the DaemonSet template
changes (``OnDelete``), the controller finds each pod's ``controller-revision-hash`` behind
the DaemonSet's newest ControllerRevision and marks every node ``upgrade-required``, and
skips them (``ProcessUpgradeRequiredNodes``). Then ``maintain run --nodes h100-0,h100-1``:
a canary, then a batch; each node is cordoned, drained and released; the controller takes
it through cordon-required, wait-for-jobs-required, pod-deletion-required,
pod-restart-required (it deletes the old driver pod, the DaemonSet controller makes the new
one), validation-required (the validator pod on the node ready) to upgrade-done; maintain
follows and gates it (a thread plays the node agent: h100-0 healthy, h100-1 not). Shown:
only the released nodes leave ``upgrade-required`` and get a new driver pod; a node
maintain cordoned stays cordoned through the controller's states until maintain's own
uncordon (the controller would uncordon it before aiplat's gate otherwise:
``ProcessDoneOrUnknownNodes`` records a node as initially unschedulable only when it was
cordoned as the driver changed; maintain sets that annotation on release); the node
failing its gate is rolled back (skip label set again) and left cordoned; a node the
controller marks ``upgrade-failed`` is held again and left cordoned.

The controller watches nodes' labels, the ClusterPolicy and the driver DaemonSet, not pods:
after it deletes a driver pod, its next pass comes with the planned requeue (2 min,
``plannedRequeueInterval``) or any node label change. On a real cluster the new driver pod
needs minutes to build and load anyway; here a thread relabels another node while a
released node waits in pod-restart-required. About 2 min on 2 cores (110-122 s measured:
the lab's start 35-80 s, the operator's first reconciles, the run itself 8-12 s). Why a
lab of its own: the GPU Operator's lab (``test_gpu_operator_live``'s module fixture, reused
here, so never two at once) installs the operator's CRDs, runs the controller and relabels
every GPU node; the session's example lab has none of that, and this test leaves nodes
cordoned, held and upgrade-failed that no other test should find.

What fake nodes cannot show: the driver pod's real work (compile, unload and load the
modules; ``isDriverPodFailing`` wants a container restarted more than 10 times, which kwok
never does, so ``upgrade-failed`` is never reached by the controller itself here), the
validator's real checks (its pod is just Ready), the safe driver load handshake (the
driver pod's init container sets ``driver-wait-for-safe-load``; no container runs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import test_gpu_operator_live
import yaml
from gpuoperator import cluster_policy
from test_cluster_live import _eventually
from test_gpu_operator_live import (
    DRIVER,
    NFD_OS_LABELS,
    NS,
    Lab,
    _placed,
    _reconciled,
    _variant,
)

from aiplat.maintain.plan import SKIP_LABEL
from aiplat.maintain.run import (
    INITIAL_UNSCHEDULABLE,
    REASON_ANNOTATION,
    UPGRADE_STATE,
    merge_patch,
)
from aiplat.spec import example_text

pytestmark = pytest.mark.integration
OLD, NEW = "570.172.08", "580.95.05"
RELEASED = ["h100-0", "h100-1"]
BAD = "h100-1"
GPU_NODES = [f"h100-{i}" for i in range(6)] + ["l40s-0", "l40s-1"]
Obj = dict[str, Any]
# The GPU Operator test's lab, its controller running (a module fixture: torn down after).
operator_lab = test_gpu_operator_live.lab


def _doc() -> Obj:
    doc = yaml.safe_load(example_text())
    doc["kubernetes"]["components"] = {"driver": "operator", "toolkit": "operator"}
    doc["versions"]["approved"].append(
        {**doc["versions"]["approved"][0], "name": "r570", "driver": OLD, "cuda": "12.8"})
    return dict(doc)


def _node(lab: Lab, name: str) -> Obj:
    n = lab.api.get({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    assert n is not None
    return n


def _state(node: Obj) -> str:
    return str((node["metadata"].get("labels") or {}).get(UPGRADE_STATE, ""))


def _driver_pods(lab: Lab) -> dict[str, tuple[str, str]]:
    """node -> (pod name, controller-revision-hash) of the live driver pods."""
    out = {}
    for p in lab.api.objects("v1", "Pod", NS):
        if p["metadata"]["labels"].get("app") == DRIVER and not p["metadata"].get(
                "deletionTimestamp") and p["spec"].get("nodeName"):
            out[p["spec"]["nodeName"]] = (p["metadata"]["name"],
                                          p["metadata"]["labels"]["controller-revision-hash"])
    return out


def _patch_node(lab: Lab, name: str, patch: Obj) -> None:
    merge_patch(lab.api, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}, patch)


def _settle(lab: Lab, what: str, probe: Callable[[], Any], timeout: float) -> None:
    """``_eventually``, nudging the controller (it watches no pods: a node label change
    brings its next pass forward), and saying where the nodes, the driver pods and the
    controller stand if ``probe`` never holds."""
    def nudged() -> Any:
        _nudge(lab)
        return probe()

    try:
        _eventually(what, nudged, timeout)
    except AssertionError as e:
        states = {n: _state(_node(lab, n)) for n in GPU_NODES}
        log = [ln for ln in lab.log.read_text(errors="replace").splitlines()
               if "pgrade" in ln][-25:]
        raise AssertionError(f"{e}\nstates {states}\ndriver pods {_driver_pods(lab)}\n"
                             + "\n".join(log)) from None


@dataclass
class Rollout:
    cp: subprocess.CompletedProcess[str]
    before: dict[str, tuple[str, str]]
    after: dict[str, tuple[str, str]]
    seen: dict[str, list[str]] = field(default_factory=dict)  # node -> states in order
    nodes: dict[str, Obj] = field(default_factory=dict)  # every GPU node after the run


def _nudge(lab: Lab) -> None:
    """A label change on a node the tests leave alone otherwise: the upgrade controller
    reconciles on any node's label change (``SetupWithManager``), not on pods'."""
    _patch_node(lab, "h100-5", {"metadata": {"labels": {
        "test.aiplat.io/nudge": str(time.monotonic_ns())}}})


def _agent(lab: Lab, stop: threading.Event, seen: dict[str, list[str]]) -> None:
    """The node agent's verdict once the controller is done with a released node, and a
    nudge (another node's label) while one waits for the controller's next pass."""
    verdict: set[str] = set()
    while not stop.is_set():
        waiting = False
        for n in RELEASED:
            node = _node(lab, n)
            st = _state(node)
            if not seen[n] or seen[n][-1] != st:
                seen[n].append(st)
            if st in ("pod-restart-required", "validation-required", "wait-for-jobs-required",
                      "pod-deletion-required"):
                waiting = True
            if st == "upgrade-done" and len(seen[n]) > 1 and n not in verdict:
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1))
                ok = "False" if n == BAD else "True"
                r = lab.api._request(
                    "PATCH", f"/api/v1/nodes/{n}/status",
                    content=json.dumps({"status": {"conditions": [{
                        "type": "AiplatNodeHealthy", "status": ok, "reason": "Lab",
                        "message": f"driver {NEW}", "lastHeartbeatTime": now,
                        "lastTransitionTime": now}]}}),
                    headers={"Content-Type": "application/strategic-merge-patch+json"})
                assert r.status_code == 200, r.text
                verdict.add(n)
        if waiting:
            _nudge(lab)
        time.sleep(0.5 if waiting else 0.2)


def _env(lab: Lab) -> dict[str, str]:
    runs = lab.log.parent / "runs"  # the fixture's AIPLAT_CLUSTER_DIR
    return {**os.environ, "NO_COLOR": "1", "AIPLAT_CLUSTER_DIR": str(runs),
            "KUBECONFIG": str(runs / "gpuop" / "kubeconfig")}


def _maintain(lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aiplat.cli.main", "maintain", *args],
                          env=_env(lab), capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.fixture(scope="module")
def rollout(operator_lab: Lab) -> Iterator[Rollout]:
    lab = operator_lab
    v = _variant(_doc())
    assert v.driver_owner == "operator" and v.values["driver"]["version"] == NEW
    assert v.values["driver"]["upgradePolicy"]["autoUpgrade"] is True
    lab.label_as_nfd(v.pools, NFD_OS_LABELS)
    lab.api.apply_all(v.config)
    old = {**v.values, "driver": {**v.values["driver"], "version": OLD}}
    offset = lab.log.stat().st_size
    lab.install(cluster_policy(lab.cache / "chart", old))
    _reconciled(lab, offset, lambda s: s["state-driver"] != "disabled")
    _placed(lab, {DRIVER})
    _settle(lab, "the driver pods on every GPU node, every node upgrade-done", lambda: (
        set(_driver_pods(lab)) == set(GPU_NODES)
        and all(_state(_node(lab, n)) == "upgrade-done" for n in GPU_NODES)), 90)
    # The admin's steps: hold every GPU node, then the new version in the ClusterPolicy.
    for n in GPU_NODES:
        _patch_node(lab, n, {"metadata": {"labels": {SKIP_LABEL: "true"}}})
    before = _driver_pods(lab)
    lab.install(cluster_policy(lab.cache / "chart", v.values))
    _settle(lab, "every GPU node upgrade-required", lambda: all(
        _state(_node(lab, n)) == "upgrade-required" for n in GPU_NODES), 60)
    assert _driver_pods(lab) == before  # OnDelete: nothing restarted yet

    spec = lab.log.parent / "spec.yaml"
    spec.write_text(yaml.safe_dump(_doc()))
    env = _env(lab)
    seen: dict[str, list[str]] = {n: [] for n in RELEASED}
    stop = threading.Event()
    agent = threading.Thread(target=_agent, args=(lab, stop, seen), daemon=True)
    agent.start()
    t0 = time.monotonic()
    try:
        cp = subprocess.run([sys.executable, "-m", "aiplat.cli.main", "maintain", "run",
                             str(spec), "--pool", "h100", "--nodes", ",".join(RELEASED),
                             "--change", f"driver={NEW}", "--max-unavailable", "1",
                             "--ignore-windows", "--deadline", "120", "--gate-timeout", "60",
                             "-o", "json"],
                            env=env, capture_output=True, text=True, timeout=400, check=False)
    finally:
        stop.set()
        agent.join(timeout=10)
    print(f"\nmaintain run through the upgrade controller: {time.monotonic() - t0:.1f} s",
          file=sys.stderr)
    # The nodes as the run left them: a later test (in any order) changes h100-2.
    yield Rollout(cp, before, _driver_pods(lab), seen, {n: _node(lab, n) for n in GPU_NODES})


def test_released_nodes_go_through_the_controller_and_the_run_follows(operator_lab: Lab,
                                                                      rollout: Rollout) -> None:
    cp = rollout.cp
    assert cp.returncode == 1, (cp.stderr[-3000:], operator_lab.tail())
    assert "Traceback" not in cp.stderr
    phases = {n["name"]: n["phase"] for n in json.loads(cp.stdout)["nodes"]}
    assert phases == {"h100-0": "done", BAD: "rolled-back"}, cp.stderr[-3000:]
    for n in RELEASED:  # each went through the controller's states, in its order
        states = [s for s in rollout.seen[n] if s]
        assert states[0] == "upgrade-required" and states[-1] == "upgrade-done", states
        assert len(states) >= 3, states  # the sampling may miss a short-lived one
        # a new driver pod, at the DaemonSet's new revision
        assert rollout.after[n][0] != rollout.before[n][0]
        assert rollout.after[n][1] != rollout.before[n][1]


def test_nodes_not_released_are_untouched(rollout: Rollout) -> None:
    for n in set(GPU_NODES) - set(RELEASED):
        node = rollout.nodes[n]
        assert _state(node) == "upgrade-required", n
        assert node["metadata"]["labels"][SKIP_LABEL] == "true"
        assert not node["spec"].get("unschedulable"), n
        assert rollout.after[n] == rollout.before[n], n  # the old pod, still running


def test_the_canary_is_uncordoned_by_maintain_after_its_gate(operator_lab: Lab,
                                                           rollout: Rollout) -> None:
    node = _node(operator_lab, "h100-0")
    assert not node["spec"].get("unschedulable")
    assert SKIP_LABEL not in node["metadata"]["labels"]  # released: the next change too
    assert node["metadata"]["annotations"]["maintain.aiplat.io/driver-version"] == NEW
    assert INITIAL_UNSCHEDULABLE not in node["metadata"]["annotations"]  # the controller's


def test_a_node_failing_its_gate_is_held_again_and_left_cordoned(operator_lab: Lab,
                                                                 rollout: Rollout) -> None:
    """The controller finished the node (upgrade-done); aiplat's gate failed: the skip label
    is back, and the node is still cordoned — the controller did not uncordon a node
    maintain had cordoned before releasing it."""
    node = _node(operator_lab, BAD)
    assert node["metadata"]["labels"][SKIP_LABEL] == "true"
    assert node["spec"].get("unschedulable") is True
    assert "health gate failed" in node["metadata"]["annotations"][REASON_ANNOTATION]
    assert "uncordon-required" not in rollout.seen[BAD]


def test_a_node_the_controller_marks_failed_is_rolled_back(operator_lab: Lab,
                                                           rollout: Rollout) -> None:
    """``upgrade-failed`` from the controller: set here by hand, since the controller sets
    it only for a driver pod whose container restarted more than 10 times
    (``isDriverPodFailing``), which no kwok pod does. While the node's driver pod is behind
    the DaemonSet the controller leaves the state as it is (``ProcessUpgradeFailedNodes``
    moves on only a node whose pod is in sync), so the run finds it there on release:
    the node is held again (skip label), left cordoned, the reason names the state."""
    lab, node = operator_lab, "h100-2"
    done = _maintain(lab, "resume", "--skip", BAD, "-o", "json")  # close the first run
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "done", done.stderr
    _patch_node(lab, node, {"metadata": {"labels": {UPGRADE_STATE: "upgrade-failed"}}})
    spec = lab.log.parent / "spec.yaml"
    cp = _maintain(lab, "run", str(spec), "--pool", "h100", "--nodes", node, "--change",
                   f"driver={NEW}", "--ignore-windows", "--deadline", "60", "-o", "json")
    assert cp.returncode == 1, cp.stderr[-3000:]
    assert "Traceback" not in cp.stderr
    assert {n["name"]: n["phase"] for n in json.loads(cp.stdout)["nodes"]} == {
        node: "rolled-back"}
    n = _node(lab, node)
    assert n["metadata"]["labels"][SKIP_LABEL] == "true"
    assert n["spec"].get("unschedulable") is True
    assert f"{UPGRADE_STATE}=upgrade-failed" in n["metadata"]["annotations"][REASON_ANNOTATION]
    assert _driver_pods(lab)[node] == rollout.before[node]  # the controller did not restart it
