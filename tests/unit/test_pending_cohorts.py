"""Hierarchical cohorts in why-pending: a Cohort with ``spec.parentName`` and its own
``resourceGroups`` quota, and the level whose limit caps a queue.

The walk reads Kueue's quota tree (``aiplat.kueue.quota``, tested against the real Kueue);
on random cohort trees its verdict is the replay's decision for the workload, and the answers
on a 2-level tree are checked against that decision.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from aiplat.errors import InputError
from aiplat.kube import load_snapshot, snapshot_from_lists, why_pending
from aiplat.kueue.quota import Tree
from aiplat.kueue.snapshot import parse
from aiplat.ops.why_pending import explain

SNAPSHOTS = Path(__file__).parents[1] / "data" / "snapshots"
KUEUE = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
Obj = dict[str, Any]


def _res(nominal: int, borrow: int | None = None, lend: int | None = None) -> Obj:
    r: Obj = {"name": GPU, "nominalQuota": str(nominal)}
    if borrow is not None:
        r["borrowingLimit"] = str(borrow)
    if lend is not None:
        r["lendingLimit"] = str(lend)
    return r


def _groups(r: Obj) -> list[Obj]:
    return [{"coveredResources": [GPU], "flavors": [{"name": "h100", "resources": [r]}]}]


def _cohort(name: str, parent: str | None, r: Obj | None) -> Obj:
    spec: Obj = {}
    if parent:
        spec["parentName"] = parent
    if r is not None:
        spec["resourceGroups"] = _groups(r)
    return {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def _cq(name: str, cohort: str | None, r: Obj) -> Obj:
    spec: Obj = {"namespaceSelector": {}, "resourceGroups": _groups(r)}
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": spec}


# ---------------------------------------------------------------- random trees

limits = st.tuples(st.integers(0, 16), st.one_of(st.none(), st.integers(0, 16)),
                   st.one_of(st.none(), st.integers(0, 16)))


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[Obj], list[Obj], dict[str, int]]:
    """A root cohort, 1-3 child cohorts (some with quota), 1-4 queues, random usage."""
    n_cohorts = draw(st.integers(1, 3))
    cohorts = [_cohort("root", None, _res(*draw(limits)[:1]) if draw(st.booleans()) else None)]
    for i in range(n_cohorts):
        parent = draw(st.sampled_from([c["metadata"]["name"] for c in cohorts]))
        quota = _res(*draw(limits)) if draw(st.booleans()) else None
        cohorts.append(_cohort(f"c{i}", parent, quota))
    cqs, usage = [], {}
    for i in range(draw(st.integers(1, 4))):
        nominal, borrow, lend = draw(limits)
        cohort = draw(st.sampled_from([c["metadata"]["name"] for c in cohorts]))
        lend = None if lend is None else min(lend, nominal)  # Kueue's CEL rule
        cqs.append(_cq(f"q{i}", cohort, _res(nominal, borrow, lend)))
        usage[f"q{i}"] = draw(st.integers(0, 24))
    return cohorts, cqs, usage


# ---------------------------------------------------------------- a 2-level tree


def _two_level(*, root_quota: int | None, labs_borrow: int | None, research_used: int,
               serving_used: int = 0) -> dict[str, Any]:
    """The quota-exhausted sample's queues under a 2-level tree: research in Cohort labs
    (parent example), serving directly in example; example may carry its own quota, labs
    a borrowingLimit towards example."""
    snap = load_snapshot(SNAPSHOTS / "cohort-borrowing-limit")
    lists: dict[str, Any] = {k: copy.deepcopy(v) for k, v in snap.items.items()}
    lists["workloads"] = [w for w in lists["workloads"] if "eval" in w["metadata"]["name"]]
    lists["pods"] = []
    research, serving = lists["clusterqueues"]
    research["spec"]["cohortName"] = "labs"
    for cq, used in ((research, research_used), (serving, serving_used)):
        if used:
            wl = copy.deepcopy(snap.list("workloads")[0])  # an admitted one to copy from
            wl["metadata"]["name"] = f"running-{cq['metadata']['name']}"
            wl["metadata"]["namespace"] = cq["metadata"]["name"]
            wl["metadata"]["ownerReferences"][0]["name"] = wl["metadata"]["name"]
            wl["spec"]["queueName"] = cq["metadata"]["name"]
            psa = wl["status"]["admission"]["podSetAssignments"][0]
            wl["status"]["admission"]["clusterQueue"] = cq["metadata"]["name"]
            psa["resourceUsage"][GPU] = str(used)
            psa["count"] = wl["spec"]["podSets"][0]["count"] = used // 8
            lists["workloads"].insert(0, wl)
    labs: Obj = {"name": GPU, "nominalQuota": "0"}
    if labs_borrow is not None:
        labs["borrowingLimit"] = str(labs_borrow)
    lists["cohorts"] = [
        _cohort("example", None, None if root_quota is None else _res(root_quota)),
        _cohort("labs", "example", labs)]
    for c in lists["cohorts"]:  # a Cohort covers cpu and memory too (one resource group)
        for g in c["spec"].get("resourceGroups") or []:
            g["coveredResources"] = [GPU]
    for f in lists.get("resourceflavors", []):  # quota only: a topology leaves it unknown
        f.get("spec", {}).pop("topologyName", None)
    return lists


def test_a_parent_cohorts_borrowing_limit_is_named_with_its_figures() -> None:
    """research may borrow 8 but Cohort labs may take only 4 from example: the old flat
    pool (32, 16 free) said it fits; Kueue (the replay) keeps it pending."""
    lists = _two_level(root_quota=8, labs_borrow=4, research_used=16)
    snap = snapshot_from_lists(lists)
    e = why_pending(snap, "eval", "research")
    assert e.code == "BorrowingLimit", e
    assert "Cohort labs's borrowingLimit 4" in e.reason and "4 more than" in e.reason, e.reason
    assert any(x.startswith("Cohort labs (parent example)") for x in e.evidence), e.evidence
    a = explain(snap, "eval", "research")
    assert a.kueue is not None and a.kueue.decision == "pending", a
    assert a.code == "BorrowingLimit"
    assert "insufficient unused quota" in a.kueue.message


def test_a_root_cohorts_own_quota_is_lent_to_the_tree() -> None:
    """research and serving use all 32 of their nominal; example's own 8 GPUs make room:
    the old pool (queues only) said exhausted; Kueue admits it."""
    snap = snapshot_from_lists(_two_level(root_quota=8, labs_borrow=None, research_used=16,
                                          serving_used=16))
    e = why_pending(snap, "eval", "research")
    assert e.code == "Fits", e
    assert any("own nominal 8" in x for x in e.evidence), e.evidence
    a = explain(snap, "eval", "research")
    assert a.kueue is not None and a.kueue.decision == "admitted", a
    assert a.code == "WouldAdmit" and "Kueue admits it" in a.reason, a.reason


def test_the_root_pool_caps_when_no_level_has_a_tighter_limit() -> None:
    snap = snapshot_from_lists(_two_level(root_quota=4, labs_borrow=None, research_used=16,
                                          serving_used=16))
    e = why_pending(snap, "eval", "research")
    assert e.code == "QuotaExhausted", e
    assert "cohort example has 4 free" in e.reason and "4 more needed" in e.reason, e.reason
    a = explain(snap, "eval", "research")
    assert a.kueue is not None and a.kueue.decision == "pending"


def test_never_fits_names_the_capping_cohort() -> None:
    lists = _two_level(root_quota=0, labs_borrow=4, research_used=0)
    for w in lists["workloads"]:
        w["spec"]["podSets"][0]["count"] = 3  # 24 GPUs: research's 16 + labs' 4 at most
    e = why_pending(snapshot_from_lists(lists), "eval", "research")
    assert e.code == "NeverFits", e
    assert "can never hold more than 20" in e.reason and "Cohort labs" in e.reason, e.reason


def test_expected_json_cases_are_unchanged() -> None:
    """The flat 1-level samples keep their figures (the README tour quotes one)."""
    exp = json.loads((SNAPSHOTS / "cohort-borrowing-limit" / "expected.json").read_text())
    e = why_pending(load_snapshot(SNAPSHOTS / "cohort-borrowing-limit"), exp["name"],
                    exp["namespace"])
    assert e.reason == ("would borrow 16 nvidia.com/gpu in flavor h100 but ClusterQueue "
                        "research's borrowingLimit is 8 (cohort example has 8 free)")


# ---------------------------------------------------------------- the walk and the replay


def _admitted(name: str, cq: str, gpus: int) -> Obj:
    ps = {"name": "main", "count": 1, "template": {"spec": {"containers": [{
        "name": "c", "resources": {"requests": {GPU: str(gpus)}}}]}}}
    return {"apiVersion": KUEUE, "kind": "Workload",
            "metadata": {"name": name, "namespace": cq, "uid": name,
                         "creationTimestamp": "2026-11-29T08:00:00Z"},
            "spec": {"queueName": cq, "priority": 0, "podSets": [ps]},
            "status": {"admission": {"clusterQueue": cq, "podSetAssignments": [{
                "name": "main", "flavors": {GPU: "h100"},
                "resourceUsage": {GPU: str(gpus)}, "count": 1}]},
                "conditions": [{"type": "QuotaReserved", "status": "True",
                                "reason": "QuotaReserved", "message": "",
                                "lastTransitionTime": "2026-11-29T08:00:00Z"}]}}


@settings(max_examples=400, deadline=None)
@given(trees(), st.integers(1, 16), st.data())
def test_the_walks_quota_verdict_is_the_replays(
        t: tuple[list[Obj], list[Obj], dict[str, int]], ask: int, data: st.DataObject) -> None:
    """One untried workload on a random tree (no preemption anywhere): the walk says it
    fits exactly when the replayed cycle admits it, and the answer never says it fits when
    the replay keeps it pending."""
    cohorts, cqs, usage = t
    fr = ("h100", GPU)
    empty = Tree(parse(cohorts + cqs))
    for q in usage:  # usage within what the tree could have admitted
        usage[q] = min(usage[q], empty.potential(empty.cqs[q], fr))
    tree = Tree(parse(cohorts + cqs))
    for q, u in usage.items():
        tree.add_usage(tree.cqs[q], {fr: u})
    if any(tree.available(n, fr) < 0 for n in tree.cqs.values()):
        event("overcommitted")
        return  # an overcommitted tree (quota lowered under running work): not this test
    target = data.draw(st.sampled_from([c["metadata"]["name"] for c in cqs]))
    pending = _admitted("asked", target, ask)
    pending["status"] = {}
    lists = {
        "resourceflavors": [{"apiVersion": KUEUE, "kind": "ResourceFlavor",
                             "metadata": {"name": "h100"}, "spec": {}}],
        "cohorts": cohorts, "clusterqueues": cqs,
        "localqueues": [{"apiVersion": KUEUE, "kind": "LocalQueue",
                         "metadata": {"name": c["metadata"]["name"],
                                      "namespace": c["metadata"]["name"]},
                         "spec": {"clusterQueue": c["metadata"]["name"]}} for c in cqs],
        "workloads": [_admitted(f"run-{q}", q, u) for q, u in usage.items() if u]
        + [pending], "pods": []}
    snap = snapshot_from_lists(lists)
    walk = why_pending(snap, "asked", target)
    a = explain(snap, "asked", target)
    assert a.kueue is not None
    event(f"walk {walk.code}, replay {a.kueue.decision}")
    assert (walk.code == "Fits") == (a.kueue.decision == "admitted"), (walk, a.kueue)
    if a.kueue.decision == "pending":
        assert "quota is available" not in a.reason and "next cycle" not in a.reason
    else:
        assert a.code == "WouldAdmit" and "on its next cycle" in a.reason, a


def test_a_queue_kueue_would_refuse_is_named_not_guessed() -> None:
    """The walk reads the queues as the replay does: a flavor listing other resources than
    its group covers is an input error naming the field (Kueue's webhook refuses it)."""
    lists = _two_level(root_quota=8, labs_borrow=4, research_used=0)
    group = lists["clusterqueues"][0]["spec"]["resourceGroups"][0]
    group["coveredResources"] = [*group["coveredResources"], "example.com/fpga"]
    with pytest.raises(InputError, match=r"ClusterQueue research spec\.resourceGroups\[0\]"):
        why_pending(snapshot_from_lists(lists), "eval", "research")
