"""Partial admission (``podSets[].minCount``) as Kueue v0.19 decides it: when the full
counts neither fit nor can preempt, the scheduler binary-searches the counts down towards
``minCount`` (``pkg/scheduler/flavorassigner/podset_reducer.go``) and admits the largest that
fits or can preempt. The cases are Kueue's own (``pkg/scheduler/scheduler_test.go``
TestSchedule, "partial admission ..."), on the same queues."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from aiplat.cli.main import cli
from aiplat.errors import InputError
from aiplat.kueue.assign import reduced_counts
from aiplat.kueue.cycle import Outcome, replay
from aiplat.kueue.snapshot import PodSet, parse

API = "kueue.x-k8s.io/v1beta2"
Obj = dict[str, Any]
T0 = "2026-01-01T00:00:00Z"


def _queue(name: str, flavor: str, resource: str, nominal: str, **spec: Any) -> list[Obj]:
    return [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": flavor}},
            {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
             "spec": {"namespaceSelector": {}, "queueingStrategy": "StrictFIFO",
                      "resourceGroups": [{"coveredResources": [resource], "flavors": [
                          {"name": flavor, "resources": [{"name": resource,
                                                          "nominalQuota": nominal}]}]}],
                      **spec}},
            {"apiVersion": API, "kind": "LocalQueue",
             "metadata": {"name": "main", "namespace": name}, "spec": {"clusterQueue": name}}]


def _workload(name: str, ns: str, *podsets: tuple[str, int, int | None, str, str],
              priority: int = 0, admitted: dict[str, tuple[str, int]] | None = None) -> Obj:
    """podsets: (name, count, minCount, resource, per-pod request)."""
    o: Obj = {"apiVersion": API, "kind": "Workload",
              "metadata": {"name": name, "namespace": ns, "uid": f"wl-{name}",
                           "creationTimestamp": T0},
              "spec": {"queueName": "main", "priority": priority, "podSets": [
                  {"name": ps, "count": n, **({"minCount": m} if m is not None else {}),
                   "template": {"spec": {"containers": [
                       {"name": "c", "resources": {"requests": {res: q}}}]}}}
                  for ps, n, m, res, q in podsets]}}
    if admitted:
        res = podsets[0][3]
        o["status"] = {"admission": {"clusterQueue": ns, "podSetAssignments": [
            {"name": ps, "flavors": {res: fl}, "count": n}
            for ps, (fl, n) in admitted.items()]},
            "conditions": [{"type": "QuotaReserved", "status": "True",
                            "lastTransitionTime": T0}]}
    return o


def _run(objs: list[Obj], cycles: int | None = None) -> dict[str, Outcome]:
    return {o.workload: o for o in replay(parse(objs, "t"), cycles)}


def test_single_variable_pod_set_is_admitted_with_the_largest_count_that_fits() -> None:
    out = _run([*_queue("sales", "default", "cpu", "50"),
                _workload("new", "sales", ("one", 50, 20, "cpu", "2"))])["sales/new"]
    assert out.decision == "admitted"
    assert out.counts == {"one": 25}
    assert out.as_dict()["counts"] == {"one": 25}


def test_multiple_variable_pod_sets_shrink_together() -> None:
    """Kueue's search over several variable pod sets (its scheduler test; a cluster cannot
    hold such a Workload, the webhook allows minCount on one pod set): 20 fixed, 30 down to
    10 and 15 down to 5 in 50 cpu -> 20/20/10."""
    podsets = (PodSet("one", 20, {"cpu": 1000}), PodSet("two", 30, {"cpu": 1000}, min_count=10),
               PodSet("three", 15, {"cpu": 1000}, min_count=5))
    got = reduced_counts(podsets, lambda c: c if sum(c) <= 50 else None)
    assert got == [20, 20, 10]


def _eng(new: tuple[str, int, int | None, str, str]) -> list[Obj]:
    return [*_queue("eng-beta", "model-a", "example.com/gpu", "20",
                    preemption={"withinClusterQueue": "LowerPriority"}),
            _workload("new", "eng-beta", new, priority=4),
            _workload("old", "eng-beta", ("one", 10, None, "example.com/gpu", "1"),
                      priority=-4, admitted={"one": ("model-a", 10)})]


def test_full_count_that_can_preempt_preempts_rather_than_shrinks() -> None:
    first = _run(_eng(("one", 20, 10, "example.com/gpu", "1")), cycles=1)
    assert first["eng-beta/old"].decision == "preempted"
    new = first["eng-beta/new"]
    assert (new.decision, new.reason) == ("pending", "PendingPreemption")
    assert new.message == ("couldn't assign flavors to pod set one: insufficient unused "
                           "quota for example.com/gpu in flavor model-a, 10 more needed. "
                           "Pending the preemption of 1 workload(s)")
    final = _run(_eng(("one", 20, 10, "example.com/gpu", "1")))["eng-beta/new"]
    assert final.decision == "admitted" and final.counts == {}


def test_a_count_over_the_quota_preempts_with_a_reduced_count() -> None:
    first = _run(_eng(("one", 30, 10, "example.com/gpu", "1")), cycles=1)
    assert first["eng-beta/old"].decision == "preempted"
    assert first["eng-beta/new"].reason == "PendingPreemption"
    assert "10 more needed" in first["eng-beta/new"].message
    final = _run(_eng(("one", 30, 10, "example.com/gpu", "1")))["eng-beta/new"]
    assert final.decision == "admitted"
    assert final.counts == {"one": 20}


def test_without_min_count_the_full_counts_or_nothing() -> None:
    out = _run([*_queue("sales", "default", "cpu", "50"),
                _workload("new", "sales", ("one", 20, None, "cpu", "1"),
                          ("two", 30, None, "cpu", "1"), ("three", 15, None, "cpu", "1"))]
               )["sales/new"]
    assert out.decision == "pending"
    assert out.message == (
        "couldn't assign flavors to pod set three: insufficient quota for cpu in flavor "
        "default, previously considered podsets requests (50) + current podset request "
        "(15) > maximum capacity (50)")


def test_an_admitted_partial_count_holds_only_its_pods_quota() -> None:
    """The admission's count, not the spec's, is what the workload holds."""
    objs = [*_queue("sales", "default", "cpu", "50"),
            _workload("big", "sales", ("one", 50, 20, "cpu", "1"),
                      admitted={"one": ("default", 30)}),
            _workload("small", "sales", ("one", 20, None, "cpu", "1"))]
    assert _run(objs)["sales/small"].decision == "admitted"


def test_min_count_above_count_is_refused_by_name() -> None:
    with pytest.raises(InputError, match=r"spec.podSets\[0\].minCount"):
        parse([*_queue("sales", "default", "cpu", "50"),
               _workload("new", "sales", ("one", 5, 6, "cpu", "1"))], "t")


def test_cli_shows_the_admitted_count(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump_all([*_queue("sales", "default", "cpu", "50"),
                                     _workload("new", "sales", ("one", 50, 20, "cpu", "2"))]))
    r = CliRunner().invoke(cli, ["sim", "replay", str(f), "-o", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["counts"] == {"one": 25}
    assert "partial admission" not in r.stderr
    r = CliRunner().invoke(cli, ["sim", "replay", str(f)])
    assert "one: cpu=default (25 pods, partial admission)" in r.stdout


def test_min_count_on_two_pod_sets_is_refused_as_kueues_webhook_does() -> None:
    with pytest.raises(InputError, match="at most one podSet can use minCount"):
        parse([*_queue("sales", "default", "cpu", "50"),
               _workload("new", "sales", ("one", 5, 2, "cpu", "1"), ("two", 5, 2, "cpu", "1"))],
              "t")
