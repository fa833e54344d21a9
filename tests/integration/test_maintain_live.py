"""``aiplat maintain run|status|resume|rollback`` on a real control plane (issue #42): a
16-node GPU pool of kwok nodes, aiplat's tree applied (queues, the node agent's DaemonSet),
three Kueue Jobs and a Deployment whose PodDisruptionBudget wants 3 of its 4 pods.

First a run outside the spec's maintenance windows waits, naming the next opening, and
touches no node. Then one rollout of a driver change, with ``--apply-with`` a small script
(it records each call and sets the node agent's ``AiplatNodeHealthy`` condition the way the
agent would) and ``--gate-with`` another (it records that it ran, on each healthy node):

- a node whose gate the script sets False stops the rollout after its batch (exit 1); the
  node is rolled back (the script runs again with AIPLAT_ACTION=rollback and the previous
  version), left cordoned, the reason on it; later batches are untouched;
- while a run holds the lease a second ``resume`` is refused (exit 2, the holder named);
- ``resume --skip NODE`` killed with SIGKILL mid-rollout, then ``resume`` again, finishes it:
  no node finished before the kill is changed twice;
- at the end every Kueue workload that ran is admitted with its pods running (none lost),
  and the Deployment never had fewer available pods than its budget's minAvailable (a
  watcher samples it throughout), while DaemonSet pods were left in place.

What kwok cannot show: a real driver install or reboot, the node agent's real checks (the
condition is set by the script), kubelet-side eviction (pods go as soon as they are
deleted: no graceful termination), and the GPU Operator's upgrade controller (the
operator-owned path is not exercised here). About a minute on two cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from examplelab import example_lab
from test_cluster_live import _aiplat, _eventually

from aiplat.cluster.assets import locate
from aiplat.kube.apply import Api
from aiplat.maintain.run import REASON_ANNOTATION, load, merge_patch, version_annotation

pytestmark = pytest.mark.integration
OLD, NEW = "570.172.08", "580.95.05"
BAD = "gpu-3"
SPEC = f"""\
apiVersion: aiplat/v1alpha1
kind: Platform
metadata: {{name: maint}}
kubernetes: {{version: "1.34", kueueVersion: 0.19.2}}
site: {{powerBudgetKW: 400, rackPowerLimitKW: 40, cooling: air, pue: 1.3}}
reserve: {{nodeFailuresPerYear: 0.25, replacementLeadTimeDays: 14, targetAvailability: 0.99}}
pools:
  - name: gpu
    node:
      nodeType: hgx-h100-8
      gpu: {{model: H100-SXM-80GB, count: 8}}
      cpuCores: 112
      memoryGiB: 2048
    count: 16
    topology: {{nodesPerRack: 2, racksPerBlock: 4}}
tenants:
  - name: research
    weight: 1
    quota:
      gpu: {{gpus: 64}}
versions:
  approved:
    - {{name: r570, kernel: ">=6.1,<6.13", driver: {OLD}, cuda: "12.8",
       containerToolkit: 1.17.8, containerRuntime: containerd 2.1, kubernetes: "1.34"}}
    - {{name: r580, kernel: ">=6.1,<6.13", driver: {NEW}, cuda: "13.0",
       containerToolkit: 1.18.0, containerRuntime: containerd 2.1, kubernetes: "1.34"}}
"""
# The admin's own gate (--gate-with): log the call; a real one compares the node's baseline.
GATE = """\
#!/bin/bash
echo "$AIPLAT_ACTION $1 $AIPLAT_VERSION" >> {log}
"""
# The lab's node prepare: log the call, take a moment, publish the agent's verdict.
APPLY = """\
#!/bin/bash
set -eu
node=$1
echo "$AIPLAT_ACTION $node $AIPLAT_VERSION" >> {log}
sleep 0.4
status=True
[ "$AIPLAT_ACTION" = apply ] && [ -e "{bad}/$node" ] && status=False
if [ -e "{bad}/nogpu-$node" ]; then  # the change loses the node's GPUs; the rollback restores them
  gpus=8; [ "$AIPLAT_ACTION" = apply ] && gpus=0
  g='{{"nvidia.com/gpu":"'$gpus'"}}'
  {kubectl} patch node "$node" --subresource=status --type=merge -p \
    '{{"status":{{"capacity":'"$g"',"allocatable":'"$g"'}}}}' >/dev/null
fi
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
{kubectl} patch node "$node" --subresource=status --type=strategic -p \\
  '{{"status":{{"conditions":[{{"type":"AiplatNodeHealthy","status":"'$status'",
  "reason":"Lab","message":"'"$AIPLAT_ACTION $AIPLAT_VERSION"'",
  "lastHeartbeatTime":"'$now'","lastTransitionTime":"'$now'"}}]}}}}' >/dev/null
"""


def _job(i: int) -> dict[str, Any]:
    # Each eviction counts as a failed pod (and the Job controller's backoff delays its
    # replacement): a real Job should ignore DisruptionTarget in a podFailurePolicy, but with
    # one the controller waits for a terminal phase that a kwok pod never reaches.
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"train-{i}", "namespace": "research",
                         "labels": {"kueue.x-k8s.io/queue-name": "research"}},
            "spec": {"parallelism": 2, "completions": 2, "backoffLimit": 100, "suspend": True,
                     "template": {"spec": {
                         "restartPolicy": "Never",
                         "securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                             "seccompProfile": {"type": "RuntimeDefault"}},
                         "containers": [{
                             "name": "c", "image": "busybox",
                             "resources": {"requests": {"cpu": "1", "memory": "1Gi",
                                                        "nvidia.com/gpu": "4"},
                                           "limits": {"nvidia.com/gpu": "4"}},
                             "securityContext": {"allowPrivilegeEscalation": False,
                                                 "capabilities": {"drop": ["ALL"]}}}]}}}}


WEB = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}},
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "web", "namespace": "web"},
     "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}},
                           "spec": {"nodeSelector": {"aiplat.io/pool": "gpu"},
                                    "containers": [{"name": "c", "image": "busybox",
                                                    "resources": {"requests":
                                                                  {"cpu": "100m"}}}]}}}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
     "metadata": {"name": "web", "namespace": "web"},
     "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "web"}}}},
]


@dataclass
class Lab:
    tmp: Path
    env: dict[str, str]
    api: Api
    log: Path
    samples: list[int] = field(default_factory=list)

    def aiplat(self, *args: str) -> subprocess.CompletedProcess[str]:
        return _aiplat(self.env, *args)

    def maintain(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "aiplat.cli.main", "maintain", *args]

    def node(self, name: str) -> dict[str, Any]:
        n = self.api.get({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        assert n is not None
        return n

    def applies(self) -> list[tuple[str, str, str]]:
        lines = self.log.read_text().split("\n") if self.log.exists() else []
        return [(a, n, v) for a, n, v in (ln.split() for ln in lines if ln.strip())]


def _available(api: Api) -> int:
    pods = api.objects("v1", "Pod", namespace="web")
    return sum(1 for p in pods if not p["metadata"].get("deletionTimestamp")
               and any(c["type"] == "Ready" and c["status"] == "True"
                       for c in (p.get("status") or {}).get("conditions") or []))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("maintain")
    (tmp / "spec.yaml").write_text(SPEC)
    (tmp / "bad").mkdir()
    with example_lab(tmp, f"maint{os.getpid()}", tmp / "spec.yaml") as ex:
        script = tmp / "apply.sh"
        script.write_text(APPLY.format(log=tmp / "applies.log", bad=tmp / "bad",
                                       kubectl=locate().bin("kubectl")))
        script.chmod(0o755)
        gate = tmp / "gate.sh"
        gate.write_text(GATE.format(log=tmp / "applies.log"))
        gate.chmod(0o755)
        api, stop = ex.api, threading.Event()
        lab = Lab(tmp, ex.env, api, tmp / "applies.log")
        try:
            _aiplat(ex.env, "kube", "apply", str(ex.plan / "kube"), check=True)
            for i in range(16):
                merge_patch(api, {"apiVersion": "v1", "kind": "Node",
                                  "metadata": {"name": f"gpu-{i}"}},
                            {"metadata": {"labels": {
                                "nvidia.com/cuda.driver-version.full": OLD}}})
            for o in [_job(i) for i in range(3)] + WEB:
                api.apply(o)
            _eventually("web available", lambda: _available(api) == 4, 60)
            _eventually("jobs admitted and running", lambda: len(_running_jobs(api)) == 3, 60)

            def watch() -> None:
                with Api.from_kubeconfig(ex.kubeconfig) as own:
                    while not stop.is_set():
                        lab.samples.append(_available(own))
                        time.sleep(0.1)

            threading.Thread(target=watch, daemon=True).start()
            yield lab
        finally:
            stop.set()


def _running_jobs(api: Api) -> set[str]:
    """The Jobs whose Workload is admitted and whose pods all run."""
    out = set()
    pods = api.objects("v1", "Pod", namespace="research")
    for w in api.objects("kueue.x-k8s.io/v1beta2", "Workload", namespace="research"):
        conds = {c["type"]: c["status"] for c in (w.get("status") or {}).get("conditions") or []}
        job = (w["metadata"].get("ownerReferences") or [{}])[0].get("name", "")
        mine = [p for p in pods if p["metadata"].get("annotations", {}).get(
            "kueue.x-k8s.io/workload") == w["metadata"]["name"]
            and not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") == "Running"]
        if conds.get("Admitted") == "True" and len(mine) == 2:
            out.add(job)
    return out


def test_outside_every_maintenance_window_the_run_waits_and_touches_nothing(lab: Lab) -> None:
    # One window, an hour long, opening 12 hours from now (UTC): closed now.
    opens = time.gmtime(time.time() + 12 * 3600)
    spec = lab.tmp / "windowed.yaml"
    spec.write_text(SPEC + "operations:\n  maintenanceWindows:\n    - {name: night, schedule: "
                    f"\"{opens.tm_min} {opens.tm_hour} * * *\", durationHours: 1}}\n")
    cp = subprocess.run(lab.maintain("run", str(spec), "--pool", "gpu", "--change",
                                     f"driver={NEW}", "--apply-with", str(lab.tmp / "apply.sh"),
                                     "-o", "json"),
                        env=lab.env, capture_output=True, text=True, timeout=120, check=False)
    assert cp.returncode == 0, cp.stderr
    out = json.loads(cp.stdout)
    assert out["status"] == "waiting" and out["phases"] == {"pending": 16}
    assert f"the next, night, opens {time.strftime('%Y-%m-%d %H:%M', opens)} UTC for 1 h" \
        in cp.stderr, cp.stderr
    assert "--ignore-windows" in cp.stderr and "Traceback" not in cp.stderr
    assert not lab.applies()
    assert not any(lab.node(f"gpu-{i}")["spec"].get("unschedulable") for i in range(16))
    back = lab.aiplat("maintain", "rollback")  # nothing started: the run is closed
    assert back.returncode == 0, back.stderr


def test_failed_gate_stops_the_rollout_and_rolls_the_node_back(lab: Lab) -> None:
    (lab.tmp / "bad" / BAD).touch()
    t0 = time.monotonic()
    cp = subprocess.run(lab.maintain("run", str(lab.tmp / "spec.yaml"), "--pool", "gpu",
                                     "--change", f"driver={NEW}", "--apply-with",
                                     str(lab.tmp / "apply.sh"), "--gate-with",
                                     str(lab.tmp / "gate.sh"), "--validate-queue",
                                     "research/research", "--gate-timeout", "30",
                                     "--deadline", "60", "-o", "json"),
                        env=lab.env, capture_output=True, text=True, timeout=300, check=False)
    print(f"\nrun to the failed gate: {time.monotonic() - t0:.1f} s", file=sys.stderr)
    assert cp.returncode == 1, cp.stderr
    assert "rollout stopped" in cp.stderr and f"--skip {BAD}" in cp.stderr, cp.stderr[-3000:]
    assert "Traceback" not in cp.stderr
    out = json.loads(cp.stdout)
    phases = {n["name"]: n["phase"] for n in out["nodes"]}
    assert phases[BAD] == "rolled-back"
    assert all(phases[f"gpu-{i}"] == "done" for i in (0, 1, 2, 4))  # its batch finished
    assert all(phases[f"gpu-{i}"] == "pending" for i in range(5, 16))  # no later batch
    node = lab.node(BAD)
    assert node["spec"].get("unschedulable") is True
    assert "health gate failed" in node["metadata"]["annotations"][REASON_ANNOTATION]
    assert node["metadata"]["annotations"][version_annotation("driver")] == OLD
    assert ("rollback", BAD, OLD) in lab.applies()
    # --gate-with ran after the agent's verdict, on the healthy nodes only
    assert {n for a, n, _v in lab.applies() if a == "gate"} == {f"gpu-{i}" for i in (0, 1, 2, 4)}
    assert lab.node("gpu-0")["metadata"]["annotations"][version_annotation("driver")] == NEW
    # each gated node ran a validation Job through Kueue asking for its 8 GPUs, then gone
    state, _v = load(lab.api)
    assert state is not None
    validated = {e.split(":")[0] for e in state.events
                 if "validation Job research/" in e and "nvidia.com/gpu=8" in e}
    assert validated == {f"gpu-{i}" for i in (0, 1, 2, 4)}, state.events[-20:]
    again = lab.aiplat("maintain", "run", str(lab.tmp / "spec.yaml"), "--pool", "gpu",
                       "--change", f"driver={NEW}")
    assert again.returncode == 2 and "is failed, not finished" in again.stderr


def test_kill_9_mid_rollout_then_resume_finishes_it(lab: Lab) -> None:
    before = len(lab.applies())
    first, _v = load(lab.api)
    assert first is not None
    done_first = {n.name for n in first.nodes if n.phase == "done"}
    t0 = time.monotonic()
    with (lab.tmp / "killed.err").open("w") as err:
        proc = subprocess.Popen(lab.maintain("resume", "--skip", BAD), env=lab.env,
                                stdout=subprocess.DEVNULL, stderr=err)

    def past_batch_5() -> bool:
        state, _v = load(lab.api)
        return state is not None and any(n.batch == 5 and n.phase != "pending"
                                         for n in state.nodes)

    _eventually("the resumed run reaches batch 5", past_batch_5, 120)
    second = lab.aiplat("maintain", "resume")  # the lease is held by a live process
    assert second.returncode == 2 and "is held by" in second.stderr, second.stderr
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    state, _v = load(lab.api)
    assert state is not None and state.lease is not None  # killed: nobody released it
    finished = {n.name for n in state.nodes if n.phase == "done"}
    cp = subprocess.run(lab.maintain("resume", "-o", "json"), env=lab.env,
                        capture_output=True, text=True, timeout=300, check=False)
    print(f"\nresume, kill -9, resume: {time.monotonic() - t0:.1f} s", file=sys.stderr)
    assert cp.returncode == 0, cp.stderr
    out = json.loads(cp.stdout)
    assert out["status"] == "done"
    phases = {n["name"]: n["phase"] for n in out["nodes"]}
    assert phases.pop(BAD) == "rolled-back"
    assert set(phases.values()) == {"done"}
    applied = [n for a, n, _v in lab.applies()[before:] if a == "apply"]
    # A node finished before the kill was applied once, by the killed run; never again.
    assert not done_first & set(applied)
    assert finished - done_first
    assert all(applied.count(n) == 1 for n in finished - done_first)
    assert all(applied.count(n) <= 2 for n in applied)  # at most the step in flight again
    assert sorted(set(applied)) == sorted(f"gpu-{i}" for i in range(5, 16))
    gated = {n for a, n, _v in lab.applies() if a == "gate"}  # kept in the run's options
    assert gated == {f"gpu-{i}" for i in range(16)} - {BAD}
    for i in range(16):
        n = lab.node(f"gpu-{i}")
        assert bool(n["spec"].get("unschedulable")) is (f"gpu-{i}" == BAD)
    # DaemonSet pods are never evicted: one node agent per node, still there.
    agents = lab.api.objects("v1", "Pod", namespace="aiplat-system")
    assert len({p["spec"].get("nodeName") for p in agents}) >= 16


def test_no_workload_lost_and_no_budget_violated(lab: Lab) -> None:
    _eventually("every Kueue Job admitted with its pods running again",
                lambda: _running_jobs(lab.api) == {"train-0", "train-1", "train-2"}, 120)
    assert lab.samples and min(lab.samples) >= 3, sorted(set(lab.samples))
    status = lab.aiplat("maintain", "status", "-o", "json")
    assert status.returncode == 0
    data = json.loads(status.stdout)
    assert data["status"] == "done" and "lease" not in data
    evicted = [p for n in data["nodes"] for p in n["evicted"]]
    assert sum(p.startswith("web/") for p in evicted) >= 4  # the budget was exercised
    assert sum(p.startswith("research/") for p in evicted) >= 3  # so was Kueue's requeue


def test_without_apply_with_the_run_waits_for_the_admin_and_resume_applied_goes_on(lab: Lab
                                                                                    ) -> None:
    """The host-owned path by hand: the run drains the node and waits, naming the command;
    the admin runs it on the node (here the lab's script, which publishes the agent's
    verdict as node prepare and the agent would) and says so with ``resume --applied``."""
    node = "gpu-9"
    cp = subprocess.run(lab.maintain("run", str(lab.tmp / "spec.yaml"), "--pool", "gpu",
                                     "--change", f"driver={OLD}", "--nodes", node,
                                     "--gate-timeout", "30", "-o", "json"),
                        env=lab.env, capture_output=True, text=True, timeout=120, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    out = json.loads(cp.stdout)
    assert out["status"] == "waiting", out
    assert f"then `aiplat maintain resume --applied {node}`" in cp.stderr, cp.stderr[-2000:]
    assert lab.node(node)["spec"].get("unschedulable") is True
    assert not [a for a in lab.applies() if a[1] == node and a[2] == OLD]  # nothing ran yet
    subprocess.run([str(lab.tmp / "apply.sh"), node], check=True, timeout=60,
                   env={**lab.env, "AIPLAT_ACTION": "apply", "AIPLAT_VERSION": OLD})
    cp = subprocess.run(lab.maintain("resume", "--applied", node, "-o", "json"), env=lab.env,
                        capture_output=True, text=True, timeout=120, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    out = json.loads(cp.stdout)
    assert out["status"] == "done" and [n["phase"] for n in out["nodes"]] == ["done"]
    n = lab.node(node)
    assert not n["spec"].get("unschedulable")
    assert n["metadata"]["annotations"][version_annotation("driver")] == OLD


def test_a_node_back_without_its_gpus_fails_the_validation_job_and_is_rolled_back(lab: Lab
                                                                                    ) -> None:
    """The agent finds the node healthy, but the change left it publishing no GPU: the
    validation Job asks for the 8 it had at cordon, Kueue or the scheduler cannot place it,
    and the gate fails in their words; the rollback gives the GPUs back."""
    node = "gpu-7"
    (lab.tmp / "bad" / f"nogpu-{node}").touch()
    cp = subprocess.run(lab.maintain("run", str(lab.tmp / "spec.yaml"), "--pool", "gpu",
                                     "--change", f"driver={OLD}", "--nodes", node,
                                     "--apply-with", str(lab.tmp / "apply.sh"),
                                     "--validate-queue", "research/research",
                                     "--gate-timeout", "15", "--deadline", "60", "-o", "json"),
                        env=lab.env, capture_output=True, text=True, timeout=300, check=False)
    assert cp.returncode == 1, cp.stderr[-3000:]
    assert "Traceback" not in cp.stderr
    out = json.loads(cp.stdout)
    assert {n["name"]: n["phase"] for n in out["nodes"]} == {node: "rolled-back"}
    n = lab.node(node)
    reason = n["metadata"]["annotations"][REASON_ANNOTATION]
    assert "the validation Job did not complete within --gate-timeout 15 s" in reason, reason
    assert "not admitted by Kueue" in reason or "not scheduled" in reason, reason
    assert n["spec"].get("unschedulable") is True
    assert n["status"]["allocatable"]["nvidia.com/gpu"] == "8"  # the rollback's doing
    left = [j for j in lab.api.objects("batch/v1", "Job", namespace="research")
            if j["metadata"]["name"].startswith("aiplat-validate-")
            and not j["metadata"].get("deletionTimestamp")]
    assert not left, [j["metadata"]["name"] for j in left]
