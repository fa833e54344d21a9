"""``aiplat kube why-pending`` on the shipped snapshot scenarios (kubectl-format JSON lists
with status fields, built by tests/data/snapshots/build.py)."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from aiplat.errors import InputError
from aiplat.kube import load_snapshot, snapshot_from_lists, why_pending

SNAPSHOTS = Path(__file__).parents[1] / "data" / "snapshots"
SCENARIOS = sorted(p.name for p in SNAPSHOTS.iterdir() if (p / "expected.json").exists())


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("snapshot_build", SNAPSHOTS / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_at_least_eight_scenarios_are_shipped_and_up_to_date() -> None:
    assert len(SCENARIOS) >= 8
    built: dict[str, str] = _builder().files()
    shipped = {str(p.relative_to(SNAPSHOTS)): p.read_text()
               for p in SNAPSHOTS.rglob("*.json")}
    assert shipped == built  # regenerate with: python tests/data/snapshots/build.py


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_reason(scenario: str) -> None:
    expected = json.loads((SNAPSHOTS / scenario / "expected.json").read_text())
    e = why_pending(load_snapshot(SNAPSHOTS / scenario), expected["name"],
                    expected["namespace"])
    assert e.code == expected["code"], (e.reason, e.evidence)
    assert expected["contains"] in e.reason + " ".join(e.evidence)
    assert "\n" not in e.reason and e.evidence


def test_workload_pod_and_job_names_reach_the_same_answer() -> None:
    snap = load_snapshot(SNAPSHOTS / "quota-exhausted")
    wl = next(w for w in snap.list("workloads")
              if w["metadata"]["ownerReferences"][0]["name"] == "finetune")
    by_job = why_pending(snap, "finetune")
    by_wl = why_pending(snap, wl["metadata"]["name"], "research")
    assert by_job == by_wl and by_job.object == f"Workload/research/{wl['metadata']['name']}"


def test_freeing_quota_changes_the_answer() -> None:
    """The reasoning reads the state: finish one research job and the workload fits."""
    snap = load_snapshot(SNAPSHOTS / "quota-exhausted")
    lists: dict[str, Any] = {k: copy.deepcopy(v) for k, v in snap.items.items()}
    done = next(w for w in lists["workloads"]
                if w["metadata"]["ownerReferences"][0]["name"] == "pretrain-a")
    done["status"]["conditions"].append({"type": "Finished", "status": "True",
                                         "reason": "Succeeded", "message": "Job finished"})
    e = why_pending(snapshot_from_lists(lists), "finetune", "research")
    assert e.code == "Fits"


def test_lower_priority_holders_mean_kueue_will_preempt() -> None:
    snap = load_snapshot(SNAPSHOTS / "quota-exhausted")
    lists: dict[str, Any] = {k: copy.deepcopy(v) for k, v in snap.items.items()}
    for w in lists["workloads"]:
        if w["metadata"]["ownerReferences"][0]["name"] == "finetune":
            w["spec"]["priority"] = 1000
    e = why_pending(snapshot_from_lists(lists), "finetune", "research")
    assert e.code == "QuotaExhausted"
    assert not any("preemption cannot help" in x for x in e.evidence)


def test_unknown_name() -> None:
    e = why_pending(load_snapshot(SNAPSHOTS / "quota-exhausted"), "nope")
    assert e.code == "NotFound"


def test_snapshot_folder_without_workloads_or_pods_is_refused(tmp_path: Path) -> None:
    (tmp_path / "nodes.json").write_text('{"kind": "List", "items": []}')
    with pytest.raises(InputError, match=r"workloads\.json"):
        load_snapshot(tmp_path)


def test_live_read_fails_cleanly(tmp_path: Path) -> None:
    from aiplat.kube.apply import Api, UnreachableError
    from aiplat.kube.live import read_cluster

    with pytest.raises(InputError, match=r"missing: cannot read it: no such file \(fix: give "
                                         r"the path of a kubeconfig\)"):
        Api.from_kubeconfig(str(tmp_path / "missing"))
    cfg = tmp_path / "kubeconfig"
    cfg.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
    with Api.from_kubeconfig(str(cfg), timeout=2) as api, \
            pytest.raises(UnreachableError, match=r"is the API server at https://127\.0\.0\.1:1"):
        read_cluster(api)


def _with_cohorts(parented: bool) -> dict[str, Any]:
    snap = load_snapshot(SNAPSHOTS / "cohort-borrowing-limit")
    lists: dict[str, Any] = {k: copy.deepcopy(v) for k, v in snap.items.items()}
    for cq in lists["clusterqueues"]:
        cq["spec"]["cohortName"] = "training" if cq["metadata"]["name"] == "research" \
            else "inference"
    lists["cohorts"] = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                         "metadata": {"name": n},
                         "spec": {"parentName": "example"} if parented else {}}
                        for n in ("training", "inference")]
    return lists


def test_nested_cohorts_lend_through_their_root() -> None:
    e = why_pending(snapshot_from_lists(_with_cohorts(parented=True)), "eval", "research")
    assert e.code == "BorrowingLimit" and "has 8 free" in e.reason
    # Unlinked cohorts share nothing: research is on its own and over its nominal quota.
    e = why_pending(snapshot_from_lists(_with_cohorts(parented=False)), "eval", "research")
    assert e.code == "QuotaExhausted", e.reason
    assert "cohort training" in e.reason
