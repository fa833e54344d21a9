"""why-pending's answer holds together (issue #40): a partial-admission job is not "never
fits" when Kueue admits it with fewer pods; a name that is not there exits non-zero and
says what was looked for and what exists; a line of figures uses one unit per resource
(Kubernetes quantities); the headline and the evidence never disagree on preemption."""

from __future__ import annotations

import re
from typing import Any

from click.testing import CliRunner
from test_pending_replay import SNAPSHOTS, _finish, _lists, _owned

from aiplat.cli.main import cli
from aiplat.kube import snapshot_from_lists
from aiplat.ops.why_pending import explain

Obj = dict[str, Any]


def _partial(count: int, min_count: int) -> dict[str, Any]:
    lists = _lists("quota-exhausted")
    ps = _owned(lists, "finetune")["spec"]["podSets"][0]
    ps["count"], ps["minCount"] = count, min_count
    ps["template"]["spec"]["containers"][0]["resources"]["requests"] = {
        "cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
    return lists


def test_a_partial_admission_job_kueue_admits_with_fewer_pods_is_not_never_fits() -> None:
    """30 pods of one GPU can never fit research's 24; with minCount 2 Kueue admits the
    8 pods the free quota holds."""
    lists = _partial(30, 2)
    _finish(lists, "pretrain-a")
    a = explain(snapshot_from_lists(lists), "finetune", "research")
    assert a.code == "WouldAdmit", a
    assert "8 of 30 pods" in a.reason and "partial admission" in a.reason, a.reason
    assert a.kueue is not None and a.kueue.counts == {"main": 8}
    assert a.as_dict()["replay"]["counts"] == {"main": 8}


def test_a_partial_job_that_cannot_fit_now_is_short_of_quota_not_never_fits() -> None:
    """Nothing free: Kueue keeps it pending for quota; minCount's 2 pods fit the queue's
    24, so it is not a job that can never fit."""
    a = explain(snapshot_from_lists(_partial(30, 2)), "finetune", "research")
    assert a.code != "NeverFits", a
    assert any("minCount" in x for x in a.evidence), a.evidence


def test_not_found_exits_non_zero_and_lists_what_exists() -> None:
    r = CliRunner().invoke(cli, ["kube", "why-pending", "fintune", "-n", "research",
                                 "--snapshot", str(SNAPSHOTS / "quota-exhausted")])
    assert r.exit_code != 0
    assert "[NotFound]" in r.output
    assert "looked for a Workload, a Job's Workload or a Pod named 'fintune'" in r.output
    assert "finetune" in r.output and "pretrain-a" in r.output  # the Jobs that exist
    assert "kubectl get workloads -n research" in r.output


def test_a_line_uses_one_unit_per_resource() -> None:
    """A 512Mi request beside quota in Gi: every memory figure of a line in the same
    Kubernetes unit, never a raw byte count beside Gi."""
    lists = _lists("quota-exhausted")
    _owned(lists, "finetune")["spec"]["podSets"][0]["template"]["spec"]["containers"][0][
        "resources"]["requests"]["memory"] = "512Mi"
    a = explain(snapshot_from_lists(lists), "finetune", "research")
    for line in [a.reason, *a.evidence]:
        assert not re.search(r"\b\d{7,}\b", line), line  # no raw bytes
        if line.startswith("memory"):
            units = set(re.findall(r"\d(Ki|Mi|Gi|Ti)\b", line))
            assert len(units) == 1, line


def test_the_headline_and_the_evidence_agree_on_preemption() -> None:
    """Kueue reclaims from serving, which borrows research's quota: the walk's own guess
    ("preemption cannot help" within the queue) must not stand beside that headline."""
    lists = _lists("quota-exhausted")
    _finish(lists, "pretrain-b")
    serving = next(c for c in lists["clusterqueues"] if c["metadata"]["name"] == "serving")
    serving["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = "8"
    a = explain(snapshot_from_lists(lists), "finetune", "research")
    assert a.code == "WouldPreempt", a
    assert "job-chat" in a.reason
    assert not any("preemption cannot help" in x for x in a.evidence), a.evidence
