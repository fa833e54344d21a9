"""``aiplat sim replay``: Kueue's decisions on small hand-made snapshots, and bad input.

The broad check is the differential test against the real Kueue
(tests/integration/test_kueue_diff_live.py); these pin single rules so a regression names
the rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from aiplat.cli.main import cli, main
from aiplat.errors import InputError
from aiplat.kueue.cycle import replay
from aiplat.kueue.quota import Tree
from aiplat.kueue.snapshot import amount, parse

API = "kueue.x-k8s.io/v1beta2"
Obj = dict[str, Any]


def rf(name: str) -> Obj:
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}}


def cq(name: str, groups: list[tuple[list[str], list[tuple[str, dict[str, Any]]]]],
       cohort: str | None = None, **spec: Any) -> list[Obj]:
    rgs = [{"coveredResources": cov, "flavors": [
        {"name": f, "resources": [{"name": r, **(q if isinstance(q, dict) else
                                                 {"nominalQuota": q})}
                                  for r, q in res.items()]} for f, res in fl]}
           for cov, fl in groups]
    s: Obj = {"namespaceSelector": {}, "resourceGroups": rgs, **spec}  # {}: every namespace
    if cohort:
        s["cohortName"] = cohort
    return [{"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": s},
            {"apiVersion": API, "kind": "LocalQueue",
             "metadata": {"name": name, "namespace": "ns"}, "spec": {"clusterQueue": name}}]


def wl(name: str, queue: str, *podsets: tuple[int, dict[str, str]], priority: int = 0,
       created: str = "2026-01-01T00:00:00Z", admitted: dict[str, dict[str, str]] | None = None
       ) -> Obj:
    o: Obj = {"apiVersion": API, "kind": "Workload",
              "metadata": {"name": name, "namespace": "ns", "uid": name,
                           "creationTimestamp": created},
              "spec": {"queueName": queue, "priority": priority, "podSets": [
                  {"name": f"ps{i}", "count": n, "template": {"spec": {"containers": [
                      {"name": "c", "resources": {"requests": req}}]}}}
                  for i, (n, req) in enumerate(podsets)]}}
    if admitted is not None:
        o["status"] = {"admission": {"clusterQueue": queue, "podSetAssignments": [
            {"name": ps, "flavors": fl} for ps, fl in admitted.items()]},
            "conditions": [{"type": "QuotaReserved", "status": "True",
                            "lastTransitionTime": created}]}
    return o


def run(objs: list[Obj], cycles: int | None = None) -> dict[str, Any]:
    return {o.workload.split("/")[1]: o for o in replay(parse(objs, "t"), cycles)}


def test_amounts_are_kueue_units() -> None:
    assert amount("500m", "cpu", "x") == 500
    assert amount("2", "cpu", "x") == 2000
    assert amount("1Gi", "memory", "x") == 2**30
    assert amount("1.5", "example.com/gpu", "x") == 2  # rounded up, as Quantity.Value()
    with pytest.raises(InputError, match="not a quantity"):
        amount("lots", "cpu", "where")


def test_each_resource_group_gets_its_own_flavor_and_every_resource_is_charged() -> None:
    objs = [rf("f0"), rf("f1"), rf("g0"),
            *cq("q", [(["cpu", "memory"], [("f0", {"cpu": 2, "memory": "8Gi"}),
                                             ("f1", {"cpu": 8, "memory": "8Gi"})]),
                      (["example.com/gpu"], [("g0", {"example.com/gpu": 4})])]),
            wl("w", "q", (3, {"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"}))]
    out = run(objs)["w"]
    assert out.decision == "admitted"
    assert out.flavors == {"ps0": {"cpu": "f1", "memory": "f1", "example.com/gpu": "g0"}}


def test_a_resource_no_group_covers_keeps_the_workload_pending() -> None:
    objs = [rf("f0"), *cq("q", [(["cpu"], [("f0", {"cpu": 8})])]),
            wl("w", "q", (1, {"cpu": "1", "example.com/fpga": "1"}))]
    out = run(objs)["w"]
    assert out.decision == "pending"
    assert "resource example.com/fpga unavailable in ClusterQueue" in out.message


def test_pod_sets_may_land_on_different_flavors() -> None:
    objs = [rf("f0"), rf("f1"),
            *cq("q", [(["cpu"], [("f0", {"cpu": 2}), ("f1", {"cpu": 4})])]),
            wl("w", "q", (2, {"cpu": "1"}), (3, {"cpu": "1"}))]
    assert run(objs)["w"].flavors == {"ps0": {"cpu": "f0"}, "ps1": {"cpu": "f1"}}


def test_preemption_admits_only_in_a_later_cycle() -> None:
    objs = [rf("f0"), *cq("q", [(["cpu"], [("f0", {"cpu": 4})])],
                          preemption={"withinClusterQueue": "LowerPriority"}),
            wl("low", "q", (3, {"cpu": "1"}), priority=1, admitted={"ps0": {"cpu": "f0"}}),
            wl("high", "q", (3, {"cpu": "1"}), priority=9)]
    one = run(objs, cycles=1)
    assert one["low"].decision == "preempted" and one["low"].preempted == ["InClusterQueue"]
    assert one["high"].decision == "pending"
    assert one["high"].reason == "PendingPreemption"
    assert run(objs)["high"].decision == "admitted"


def _borrowers(bwc: dict[str, Any] | None) -> list[Obj]:
    pre: Obj = {"reclaimWithinCohort": "Any"}
    if bwc:
        pre["borrowWithinCohort"] = bwc
    return [rf("f0"),
            *cq("a", [(["cpu"], [("f0", {"cpu": 2})])], "co", preemption=pre),
            *cq("b", [(["cpu"], [("f0", {"cpu": 2})])], "co"),
            # b borrows a's quota with a low-priority workload
            wl("lowb", "b", (3, {"cpu": "1"}), priority=1, admitted={"ps0": {"cpu": "f0"}}),
            wl("biga", "a", (3, {"cpu": "1"}), priority=5)]  # above a's nominal 2


def test_a_preemptor_above_nominal_needs_borrow_within_cohort() -> None:
    out = run(_borrowers(None))
    assert out["biga"].decision == "pending" and out["lowb"].decision == "admitted"
    out = run(_borrowers({"policy": "LowerPriority"}))
    assert out["lowb"].preempted == ["InCohortReclaimWhileBorrowing"]
    assert out["biga"].decision == "admitted"


def test_classic_order_puts_heads_that_do_not_borrow_first() -> None:
    objs = [rf("f0"),
            *cq("a", [(["cpu"], [("f0", {"cpu": 2})])], "co"),
            *cq("b", [(["cpu"], [("f0", {"cpu": 2})])], "co"),
            wl("borrower", "a", (3, {"cpu": "1"}), priority=100),
            wl("within", "b", (2, {"cpu": "1"}), priority=1)]
    out = run(objs)
    assert out["within"].decision == "admitted"
    assert out["borrower"].decision == "pending"


def test_lending_limit_keeps_quota_local() -> None:
    objs = [rf("f0"),
            *cq("a", [(["cpu"], [("f0", {"cpu": {"nominalQuota": 4, "lendingLimit": 1}})])],
                "co"),
            *cq("b", [(["cpu"], [("f0", {"cpu": 0})])], "co")]
    tree = Tree(parse(objs, "t"))
    assert tree.available(tree.cqs["b"], ("f0", "cpu")) == 1000
    assert tree.available(tree.cqs["a"], ("f0", "cpu")) == 4000


@pytest.mark.parametrize(("obj", "needle"), [
    ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "p"}}, "kind 'Service'"),
    ({"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "ClusterQueue",
      "metadata": {"name": "q"}}, "apiVersion 'kueue.x-k8s.io/v1alpha1'"),
])
def test_bad_snapshots_name_object_and_field(obj: Obj, needle: str) -> None:
    with pytest.raises(InputError, match=needle.replace("(", r"\(")):
        parse([obj], "snap.yaml")


def test_cli_bad_snapshot_exits_2_without_traceback(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [
        {**rf("f0"), "spec": {"nodeLabels": "x"}}]}))
    assert main(["sim", "replay", str(f)]) == 2
    err = capsys.readouterr().err
    assert "ResourceFlavor f0" in err and "nodeLabels" in err
    assert "Traceback" not in err


def test_a_workload_whose_local_queue_is_missing_is_pending_inadmissible(
        tmp_path: Path) -> None:
    """A normal cluster state, not a bad snapshot: Kueue's workload controller leaves it
    with QuotaReserved False, "LocalQueue nowhere doesn't exist"; the others are decided."""
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [
        rf("f0"), *cq("q", [(["cpu"], [("f0", {"cpu": 1})])]),
        wl("w", "nowhere", (1, {"cpu": "1"})), wl("x", "q", (1, {"cpu": "1"}))]}))
    r = CliRunner().invoke(cli, ["sim", "replay", str(f), "-o", "json"])
    assert r.exit_code == 0, r.output
    rows = {row["workload"]: row for row in yaml.safe_load(r.stdout)}
    assert rows["ns/x"]["decision"] == "admitted"
    assert rows["ns/w"]["decision"] == "pending"
    assert rows["ns/w"]["pending"] == "inadmissible"
    assert rows["ns/w"]["reason"] == "Inadmissible"
    assert rows["ns/w"]["message"] == "LocalQueue nowhere doesn't exist"
    assert rows["ns/w"]["clusterQueue"] == ""


def test_a_local_queue_whose_cluster_queue_is_missing_leaves_its_workloads_pending() -> None:
    objs = [rf("f0"), *cq("q", [(["cpu"], [("f0", {"cpu": 1})])]),
            {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "lq",
                                                                   "namespace": "ns"},
             "spec": {"clusterQueue": "gone"}},
            wl("w", "lq", (1, {"cpu": "1"}))]
    out = run(objs)["w"]
    assert (out.decision, out.pending, out.reason) == ("pending", "inadmissible",
                                                       "Inadmissible")
    assert out.message == "ClusterQueue gone doesn't exist"


def test_cli_replay_json(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump_all([rf("f0"), *cq("q", [(["cpu"], [("f0", {"cpu": 1})])]),
                                     wl("w", "q", (1, {"cpu": "1"})),
                                     wl("x", "q", (1, {"cpu": "1"}),
                                        created="2026-01-01T00:00:05Z")]))
    r = CliRunner().invoke(cli, ["sim", "replay", str(f), "-o", "json"])
    assert r.exit_code == 0, r.output
    assert '"decision": "admitted"' in r.output and '"inadmissible"' in r.output


def _two_borrowers(fair: bool) -> list[Obj]:
    objs = [rf("f0"),
            {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "co"}, "spec": {
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": "f0", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]}},
            *cq("a", [(["cpu"], [("f0", {"cpu": 3})])], "co"),
            *cq("b", [(["cpu"], [("f0", {"cpu": 3})])], "co"),
            wl("a-old", "a", (4, {"cpu": "1"}), priority=5, admitted={"ps0": {"cpu": "f0"}}),
            wl("b-old", "b", (2, {"cpu": "1"}), priority=5, admitted={"ps0": {"cpu": "f0"}}),
            wl("a-new", "a", (2, {"cpu": "1"}), priority=100),
            wl("b-new", "b", (2, {"cpu": "1"}), priority=1)]
    if fair:
        objs.append({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                     "fairSharing": {}})
    return objs


def test_fair_sharing_orders_heads_by_share_not_priority() -> None:
    """Both heads borrow from the cohort's last 2 CPUs: classic takes the higher priority,
    fair sharing the queue whose share would stay lower (b borrows 1, a would borrow 3)."""
    classic = run(_two_borrowers(fair=False))
    assert classic["a-new"].decision == "admitted"
    assert classic["b-new"].decision == "pending"
    fair = run(_two_borrowers(fair=True))
    assert fair["b-new"].decision == "admitted"
    assert fair["a-new"].decision == "pending"


def test_a_held_local_queue_admits_nothing_in_kueue_words() -> None:
    objs = [rf("f0"), *cq("q", [(["cpu"], [("f0", {"cpu": 4})])]),
            wl("w", "q", (1, {"cpu": "1"}))]
    objs[2]["spec"]["stopPolicy"] = "Hold"  # the LocalQueue
    out = run(objs)["w"]
    assert out.decision == "pending" and out.message == "LocalQueue q is inactive"


def test_excluded_resource_prefixes_are_not_quota() -> None:
    objs = [rf("f0"), *cq("q", [(["cpu"], [("f0", {"cpu": 4})])]),
            wl("w", "q", (1, {"cpu": "1", "rdma/hca": "1"}))]
    assert run(objs)["w"].decision == "pending"  # rdma/hca: no group covers it
    objs.append({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                 "resources": {"excludeResourcePrefixes": ["rdma/"]}})
    assert run(objs)["w"].decision == "admitted"


RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def test_an_admission_requeues_the_cohort_tree_with_fresh_flavor_scans() -> None:
    """Recorded from the real Kueue v0.19.2 (bench/kueue_diff.py seed 15, the snapshot its
    harness took; ``--zap-log-level=6``): s15-w10 (q2, priority 712) is skipped in a cycle
    where other heads took f0, resumes its flavor scan at f1 next cycle, fits nowhere there
    and waits as inadmissible. Another queue's admission then updates the ClusterQueue's
    status; the cohort controller updates the cohort tree, which requeues its inadmissible
    workloads with their scan progress outdated: w10 scans f0 again and preempts s15-w04
    (priority 57) in its own queue. Kueue's final state: w10 admitted on f0, w04 preempted."""
    import json

    objs = json.loads((RECORDED / "kueue-seed15-snapshot.json").read_text())["items"]
    out = {o.workload.split("/")[1]: o for o in replay(parse(objs, "seed 15"))}
    assert out["s15-w10"].decision == "admitted"
    assert out["s15-w10"].flavors == {"ps0": {"cpu": "s15-f0", "memory": "s15-f0"}}
    assert out["s15-w04"].decision == "preempted"
    assert out["s15-w04"].preempted == ["InClusterQueue"]


@pytest.mark.parametrize("preference", ["BorrowingOverPreemption", "PreemptionOverBorrowing"])
def test_preemption_over_borrowing_can_leave_a_preemptor_skipped_every_cycle(
        preference: str) -> None:
    """Kueue v0.19.2 (seen on bench/kueue_diff.py seed 34, ``--zap-log-level=6``): a flavor's
    mode is its least preferred resource's. Under PreemptionOverBorrowing memory that fits
    by borrowing ranks below cpu that needs preemption inside the queue, so the flavor
    "fits", the pod set gets no status, and the workload is Fit with cpu still to preempt
    for: no preemption targets are searched, and every cycle it is skipped as no longer
    fitting. The other preference preempts the low-priority workload and admits."""
    fung = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
            "preference": preference}
    objs = [rf("f0"),
            *cq("q", [(["cpu", "memory"], [("f0", {"cpu": 3, "memory": "1Gi"})])], "co",
                flavorFungibility=fung, preemption={"withinClusterQueue": "LowerPriority"}),
            *cq("lender", [(["cpu", "memory"], [("f0", {"cpu": 0, "memory": "4Gi"})])],
                "co"),
            wl("low", "q", (1, {"cpu": "2", "memory": "1Gi"}), priority=1,
               admitted={"ps0": {"cpu": "f0", "memory": "f0"}}),
            wl("high", "q", (1, {"cpu": "2", "memory": "1Gi"}), priority=10)]
    out = run(objs)
    if preference == "BorrowingOverPreemption":
        assert out["high"].decision == "admitted" and out["low"].decision == "preempted"
    else:
        assert out["high"].decision == "pending" and out["low"].decision == "admitted"
        assert out["high"].message == \
            "Workload no longer fits after processing another workload"


def test_fair_sharing_preemptor_within_nominal_reclaims_whatever_the_shares() -> None:
    """FairSharingPreemptWithinNominal (beta, on in Kueue v0.19.2; seen on bench fair seed
    11): q's share is 1000 (all the cohort's accelerators borrowed), b's is 1000 (all its
    cpu borrowed), so neither strategy lets q preempt b (1000 < 1000 fails); but q stays
    within its nominal cpu with the new workload, so it reclaims b's borrowed cpu."""
    objs = [rf("f0"), rf("x0"),
            *cq("q", [(["cpu"], [("f0", {"cpu": 4})]),
                      (["example.com/accel"], [("x0", {"example.com/accel": 0})])], "co",
                preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"}),
            *cq("b", [(["cpu"], [("f0", {"cpu": 0})]),
                      (["example.com/accel"], [("x0", {"example.com/accel": 2})])], "co"),
            wl("qa", "q", (1, {"example.com/accel": "2"}), priority=5,
               admitted={"ps0": {"example.com/accel": "x0"}}),
            wl("bw", "b", (1, {"cpu": "4"}), priority=5, admitted={"ps0": {"cpu": "f0"}}),
            wl("w", "q", (1, {"cpu": "2"}), priority=1),
            {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
             "fairSharing": {}}]
    out = run(objs)
    assert out["bw"].preempted == ["InCohortReclamation"]
    assert out["w"].decision == "admitted"


def test_a_preemption_churn_ends_with_the_preemptor_admitted(tmp_path: Path) -> None:
    """Fair sharing, Kueue v0.19.2 (bench fair seed 6): P (a weight-0 queue, borrowing
    accelerators) reclaims V's borrowed cpu, being within its nominal cpu; once V's eviction
    completes both are heads, V's finite share beats P's infinite one, V is admitted again
    and P preempts it again. Kueue left that loop after about 300 rounds by a race (the
    quota released a cycle before V was back in its queue) and then stayed there: P
    admitted, V pending, as V may not reclaim."""
    objs = [rf("f0"), rf("x0"),
            *cq("qp", [(["cpu"], [("f0", {"cpu": 4})]),
                       (["example.com/accel"], [("x0", {"example.com/accel": 0})])], "co",
                fairSharing={"weight": "0"},
                preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"}),
            *cq("qv", [(["cpu"], [("f0", {"cpu": 0})]),
                       (["example.com/accel"], [("x0", {"example.com/accel": 2})])], "co"),
            wl("v", "qv", (1, {"cpu": "4"}), priority=5, admitted={"ps0": {"cpu": "f0"}}),
            wl("p", "qp", (1, {"cpu": "2", "example.com/accel": "1"}), priority=1),
            {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
             "fairSharing": {}}]
    out = run(objs)
    assert out["p"].decision == "admitted"
    assert out["v"].decision == "preempted"
    assert out["v"].preempted == ["InCohortReclamation", "InCohortReclamation"]
    # the loop is said: the real Kueue would keep repeating it
    f = tmp_path / "snap.yaml"
    f.write_text(yaml.safe_dump_all(objs))
    r = CliRunner().invoke(cli, ["sim", "replay", str(f)])
    assert r.exit_code == 0, r.output
    assert ("warning: preemption loop: ns/p preempts ns/v, which is admitted again "
            "before it and preempted again, over and over") in r.stderr
    assert "preemption loop" not in CliRunner().invoke(
        cli, ["sim", "replay", str(f), "--cycles", "1"]).stderr  # not yet a loop
