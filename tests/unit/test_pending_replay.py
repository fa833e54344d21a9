"""why-pending with Kueue's next cycles (``aiplat.ops.why_pending``): the replay of Kueue
v0.19's scheduler over the same snapshot decides what the per-resource walk cannot (queue
order, other heads in the same cycle, preemption, requeues), and the answer never says
"fits" or "next cycle" where the replay keeps the workload pending.

Each case below is one where the old answer ("quota is available in flavor h100; Kueue
should admit it on its next cycle", or a bare quota figure) was wrong or incomplete.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from aiplat.cli.main import main
from aiplat.errors import InputError
from aiplat.kube import load_snapshot, snapshot_from_lists, why_pending
from aiplat.ops.why_pending import explain, kueue_objects, next_cycles
from aiplat.samples.snapshots import workload

SNAPSHOTS = Path(__file__).parents[1] / "data" / "snapshots"
SCENARIOS = sorted(p.name for p in SNAPSHOTS.iterdir() if (p / "expected.json").exists())
Obj = dict[str, Any]


def _lists(scenario: str, tas: bool = False) -> dict[str, Any]:
    """A sample's lists; without ``tas`` its flavors lose their topologyName: the replay
    leaves a workload on a topology-aware flavor unknown (Kueue places its pods there), and
    these cases pin the cycle's other rules."""
    snap = load_snapshot(SNAPSHOTS / scenario)
    lists = {k: copy.deepcopy(v) for k, v in snap.items.items()}
    for f in lists.get("resourceflavors", []) if not tas else []:
        f.get("spec", {}).pop("topologyName", None)
    return lists


def _owned(lists: dict[str, Any], job: str) -> Obj:
    return next(w for w in lists["workloads"]
                if w["metadata"]["ownerReferences"][0]["name"] == job)


def _untried(wl: Obj) -> Obj:
    """A Workload Kueue's scheduler has not looked at yet: no QuotaReserved condition."""
    wl["status"] = {}
    return wl


def _finish(lists: dict[str, Any], job: str) -> None:
    _owned(lists, job)["status"]["conditions"].append(
        {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done",
         "lastTransitionTime": "2026-11-29T09:00:00Z"})


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_samples_keep_their_cause_and_agree_with_the_replay(scenario: str) -> None:
    """The shipped scenarios keep their code; no answer promises admission the replay
    does not make."""
    expected = json.loads((SNAPSHOTS / scenario / "expected.json").read_text())
    a = explain(load_snapshot(SNAPSHOTS / scenario), expected["name"], expected["namespace"])
    assert a.code == expected["code"], a
    text = a.reason + " ".join(a.evidence)
    assert expected["contains"] in text
    assert "next cycle" not in text and "should admit" not in text
    if a.kueue is not None and a.kueue.decision == "pending":
        assert not a.reason.startswith("quota is available"), a


def test_tas_sample_names_topology_and_the_replay_keeps_it_pending_as_kueue() -> None:
    """The README tour's snapshot (an idle cluster: its Pod list is empty): the replay
    places it as Kueue's TAS does, pending with Kueue's message; the answer stays Kueue's
    own TopologyDomainTooSmall."""
    a = explain(load_snapshot(SNAPSHOTS / "tas-rack-too-small"), "pretrain-big", "research")
    assert a.code == "TopologyDomainTooSmall"
    assert a.kueue is not None and a.kueue.decision == "pending", a.kueue
    line = next(x for x in a.evidence if x.startswith("replay of Kueue's cycle"))
    assert 'topology "h100" allows to fit only 2 out of 3 pod(s)' in line, line


def test_a_higher_priority_head_takes_the_quota_first() -> None:
    """Two untried workloads each fit the 8 free GPUs alone: the old walk said both fit;
    Kueue admits the higher-priority one and the other stays pending."""
    lists = _lists("quota-exhausted")
    _finish(lists, "pretrain-a")
    _untried(_owned(lists, "finetune"))
    lists["workloads"].append(_untried(workload("urgent", "research", "research",
                                                priority=900, count=1, gpus=8)))
    snap = snapshot_from_lists(lists)
    assert why_pending(snap, "finetune", "research").code == "Fits"  # the old answer
    a = explain(snap, "finetune", "research")
    assert a.kueue is not None and a.kueue.decision == "pending", a
    assert a.code in ("NoFit", "PreemptionNoCandidates"), a
    assert a.reason.startswith("Kueue keeps it pending"), a.reason
    assert "quota is available" not in a.reason
    assert explain(snap, "urgent", "research").code == "WouldAdmit"


def test_a_blocked_strict_fifo_head_holds_the_queue() -> None:
    """StrictFIFO: an older head that does not fit blocks a small one that would."""
    lists = _lists("quota-exhausted")
    _finish(lists, "pretrain-a")
    research = next(c for c in lists["clusterqueues"] if c["metadata"]["name"] == "research")
    research["spec"]["queueingStrategy"] = "StrictFIFO"
    big = _untried(workload("big", "research", "research", priority=900, count=3, gpus=8))
    small = _untried(workload("small", "research", "research", priority=100, count=1, gpus=1))
    lists["workloads"] = [w for w in lists["workloads"] if "finetune" not in
                          w["metadata"]["name"]] + [big, small]
    snap = snapshot_from_lists(lists)
    assert why_pending(snap, "small", "research").code == "Fits"  # the old answer
    a = explain(snap, "small", "research")
    assert a.kueue is not None and a.kueue.decision == "pending", a
    assert a.code == "BehindQueueHead" and "waiting behind the head" in a.reason, a


def test_lower_priority_victims_are_named() -> None:
    """withinClusterQueue LowerPriority: the old answer was the bare quota figure; Kueue
    preempts a lower-priority research job to admit it."""
    lists = _lists("quota-exhausted")
    _owned(lists, "finetune")["spec"]["priority"] = 1000
    snap = snapshot_from_lists(lists)
    assert why_pending(snap, "finetune", "research").code == "QuotaExhausted"
    a = explain(snap, "finetune", "research")
    assert a.code == "WouldPreempt", a
    assert a.kueue is not None and a.kueue.victims, a
    assert "after preempting research/job-pretrain-" in a.reason
    assert "InClusterQueue" in a.reason


def test_victims_with_a_topology_request_carry_the_caveat() -> None:
    """The same preemption for a podset that asks for a rack: the replay does not replay
    topology-aware scheduling, so the answer says Kueue may still refuse it there."""
    lists = _lists("quota-exhausted", tas=True)
    wl = _owned(lists, "finetune")
    wl["spec"]["priority"] = 1000
    wl["spec"]["podSets"][0]["topologyRequest"] = {"required": "topology.aiplat.io/rack"}
    a = explain(snapshot_from_lists(lists), "finetune", "research")
    assert a.code == "WouldPreempt", a
    assert any("may still refuse it" in x and "topologyRequest" in x for x in a.evidence), a


def test_a_workload_kueue_set_aside_waits_for_a_requeue() -> None:
    """Quota was freed but Kueue tried the workload before (QuotaReserved False, reason
    Pending): the replay admits it once requeued; the answer says why it is still
    pending instead of promising the next cycle."""
    lists = _lists("quota-exhausted")
    _finish(lists, "pretrain-a")
    snap = snapshot_from_lists(lists)
    a = explain(snap, "finetune", "research")
    assert a.code == "WouldAdmit", a
    assert "among the inadmissible" in a.reason and "requeue" in a.reason, a.reason
    assert a.kueue is not None and a.kueue.evaluated and a.kueue.next_cycle == "pending"


def test_an_untried_workload_is_admitted_on_the_next_cycle() -> None:
    lists = _lists("quota-exhausted")
    _finish(lists, "pretrain-a")
    _untried(_owned(lists, "finetune"))
    a = explain(snapshot_from_lists(lists), "finetune", "research")
    assert a.code == "WouldAdmit" and "on its next cycle in flavor h100" in a.reason, a
    assert "has not run a cycle" in a.reason


def test_a_queue_without_its_cluster_queue_does_not_stop_the_replay() -> None:
    """The typo'd LocalQueue's workload is left out of the replay (Kueue cannot schedule
    it); the others still replay."""
    snap = load_snapshot(SNAPSHOTS / "missing-localqueue")
    kinds = {o["kind"] for o in kueue_objects(snap)}
    assert "Workload" not in kinds and {"ClusterQueue", "LocalQueue"} <= kinds
    assert explain(snap, "typo", "research").code == "LocalQueueMissing"


def test_the_configuration_from_kueues_configmap_is_read() -> None:
    """excludeResourcePrefixes (the rendered tree excludes rdma/): a request the queue does
    not cover is no quota at all once Kueue's ConfigMap is in the snapshot."""
    lists = _lists("quota-exhausted")
    _finish(lists, "pretrain-a")
    wl = _untried(_owned(lists, "finetune"))
    c = wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
    c["resources"]["requests"]["rdma/ib"] = "1"
    key = f"research/{wl['metadata']['name']}"
    assert next_cycles(snapshot_from_lists(lists), key).decision == "pending"
    lists["configmaps"] = [{"metadata": {"name": "kueue-manager-config",
                                         "namespace": "kueue-system"},
                            "data": {"controller_manager_config.yaml": (
                                "apiVersion: config.kueue.x-k8s.io/v1beta2\n"
                                "kind: Configuration\nresources:\n"
                                "  excludeResourcePrefixes: [rdma/]\n")}}]
    assert next_cycles(snapshot_from_lists(lists), key).decision == "admitted"


# ---------------------------------------------------------------- the command


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``aiplat ARGS`` as the console script runs it (exit code, stdout + stderr)."""
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out + out.err


def _kubeconfig(tmp_path: Path) -> Path:
    cfg = tmp_path / "kubeconfig"
    cfg.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: broken\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: lab, context: {cluster: k, user: u}},\n"
        "           {name: broken, context: {cluster: k}}]\n")
    return cfg


def test_context_picks_the_kubeconfig_context(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The current context names no user (refused); --context lab is used instead and
    reaches for its server (nothing listens on port 1: exit 2, the server named)."""
    cfg = str(_kubeconfig(tmp_path))
    rc, out = _run(capsys, "kube", "why-pending", "x", "--kubeconfig", cfg)
    assert rc == 2 and "context 'broken' names no user" in out, out
    rc, out = _run(capsys, "kube", "why-pending", "x", "--kubeconfig", cfg, "--context", "lab")
    assert rc == 2 and "127.0.0.1:1" in out, out
    rc, out = _run(capsys, "kube", "why-pending", "x", "--kubeconfig", cfg, "--context",
                   "nosuch")
    assert rc == 2 and "nosuch" in out, out


def test_context_follows_kubeconfig_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path)))
    rc, out = _run(capsys, "kube", "why-pending", "x", "--context", "lab")
    assert rc == 2 and "127.0.0.1:1" in out, out


def test_context_with_snapshot_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _run(capsys, "kube", "why-pending", "x", "--snapshot",
                   str(SNAPSHOTS / "quota-exhausted"), "--context", "lab")
    assert rc == 2 and "not both" in out, out


def test_json_output_carries_the_replay(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["kube", "why-pending", "finetune", "-n", "research", "--snapshot",
               str(SNAPSHOTS / "quota-exhausted"), "-o", "json"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["code"] == "QuotaExhausted"
    # the sample's flavor is topology-aware: Kueue places the pods, the replay cannot say
    assert data["replay"]["decision"] == "unknown (topology-aware scheduling)"
    assert data["replay"]["onQuotaAlone"] == "pending"
    assert data["replay"]["reason"] == "PreemptionNoCandidates"


def test_claim_templates_reach_the_replay_as_kueue_counts_them() -> None:
    """A pod set that asks its GPUs through a ResourceClaimTemplate: Kueue charges them to the
    resource deviceClassMappings names. Without the templates in the snapshot the replay saw
    no GPU request and admitted it; with them it stays pending as Kueue keeps it."""
    lists = _lists("quota-exhausted")
    wl = _untried(_owned(lists, "finetune"))
    spec = wl["spec"]["podSets"][0]["template"]["spec"]
    gpus = spec["containers"][0]["resources"]["requests"].pop("nvidia.com/gpu")
    spec["containers"][0]["resources"].get("limits", {}).pop("nvidia.com/gpu", None)
    spec["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "gpus"}]
    spec["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
    lists["configmaps"] = [{"metadata": {"name": "kueue-manager-config",
                                         "namespace": "kueue-system"},
                            "data": {"controller_manager_config.yaml": (
                                "apiVersion: config.kueue.x-k8s.io/v1beta2\n"
                                "kind: Configuration\nresources:\n  deviceClassMappings:\n"
                                "  - {name: nvidia.com/gpu, deviceClassNames: [gpu-h100]}\n")}}]
    key = f"research/{wl['metadata']['name']}"
    assert next_cycles(snapshot_from_lists(lists), key).decision == "admitted"
    lists["resourceclaimtemplates"] = [{
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpus", "namespace": "research"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu-h100", "allocationMode": "ExactCount",
            "count": int(gpus)}}]}}}}]
    out = next_cycles(snapshot_from_lists(lists), key)
    assert out.decision == "pending", out
    assert "insufficient unused quota for nvidia.com/gpu in flavor h100" in out.message, out


def test_objects_the_api_server_would_refuse_are_named_before_the_walk() -> None:
    """A ClusterQueue the API server would refuse (a condition without its time, reason and
    message): no answer is given on it, the field is named (it used to answer from the walk
    alone, with Kueue's decision unknown)."""
    lists = _lists("quota-exhausted")
    serving = next(c for c in lists["clusterqueues"] if c["metadata"]["name"] == "serving")
    serving["status"]["conditions"] = [{"type": "Active", "status": "True"}]
    with pytest.raises(InputError) as e:
        explain(snapshot_from_lists(lists), "finetune", "research")
    assert ("clusterqueues.json: ClusterQueue serving at status.conditions[0]: "
            "'lastTransitionTime' is a required property") in str(e.value)
