"""Bad Kueue objects given to ``sim replay``, ``sim run --kueue`` and ``kube why-pending``: exit
2 with the file, the object and the field, never a traceback (Kueue's CRD schema first, then
the reader's own value checks: what Kueue's webhooks refuse)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.cli.main import main

Obj = dict[str, Any]
API = "kueue.x-k8s.io/v1beta2"


def _cq(name: str, gpus: int) -> Obj:
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": "co", "namespaceSelector": {},
                     "preemption": {"reclaimWithinCohort": "Any",
                                    "withinClusterQueue": "LowerPriority"},
                     "resourceGroups": [
                         {"coveredResources": ["nvidia.com/gpu"],
                          "flavors": [{"name": "h100", "resources": [
                              {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}]},
                         {"coveredResources": ["cpu"],
                          "flavors": [{"name": "cpuf", "resources": [
                              {"name": "cpu", "nominalQuota": 16}]}]}]}}


def _wl(name: str, queue: str, gpus: str, admitted: bool = False) -> Obj:
    ns = queue.removeprefix("lq")
    wl: Obj = {"apiVersion": API, "kind": "Workload",
               "metadata": {"name": name, "namespace": ns, "uid": name,
                            "creationTimestamp": "2026-01-01T00:00:00Z"},
               "spec": {"queueName": queue, "priority": 0, "podSets": [
                   {"name": "main", "count": 2, "template": {"spec": {"containers": [
                       {"name": "c", "resources": {"requests": {
                           "nvidia.com/gpu": gpus, "cpu": "1"}}}]}}}]}}
    if admitted:
        wl["status"] = {
            "admission": {"clusterQueue": "qb", "podSetAssignments": [
                {"name": "main", "count": 2,
                 "flavors": {"nvidia.com/gpu": "h100", "cpu": "cpuf"}}]},
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                            "message": "Quota reserved in ClusterQueue qb",
                            "lastTransitionTime": "2026-01-01T00:00:01Z"}]}
    return wl


def base() -> list[Obj]:
    return [
        *({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": n}}
          for n in ("h100", "cpuf")),
        {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "co"}},
        _cq("qa", 4), _cq("qb", 4),
        *({"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": f"lq{t}",
                                                                  "namespace": t},
           "spec": {"clusterQueue": f"q{t}"}} for t in ("a", "b")),
        {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"},
         "value": 1000},
        _wl("borrower", "lqb", "4", admitted=True),
        _wl("reclaimer", "lqa", "2"),
    ]


def _kind(objs: list[Obj], kind: str, name: str) -> Obj:
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def _set(kind: str, name: str, path: str, value: Any) -> Callable[[list[Obj]], None]:
    def edit(objs: list[Obj]) -> None:
        node: Any = _kind(objs, kind, name)
        *head, last = path.split(".", path.count(".") - path.count("/"))
        for p in head:
            node = node[int(p)] if p.isdigit() else node[p]
        node[int(last) if last.isdigit() else last] = value
    return edit


def _append(obj: Obj) -> Callable[[list[Obj]], None]:
    return lambda objs: objs.append(copy.deepcopy(obj))


GPU_REQ = "spec.podSets.0.template.spec.containers.0.resources.requests.nvidia.com/gpu"
# (the last key holds a dot: the split keeps it whole)
CASES: dict[str, tuple[Callable[[list[Obj]], None], list[str]]] = {
    # the CRD schema: wrong types and unknown fields, named by object and field path
    "count is text": (_set("Workload", "reclaimer", "spec.podSets.0.count", "one"),
                      ["Workload a/reclaimer spec.podSets[0].count: 'one' is not a pod "
                       "count"]),
    "priority is text": (_set("Workload", "reclaimer", "spec.priority", "urgent"),
                         ["Workload a/reclaimer at spec.priority"]),
    "maxPriorityThreshold is text": (
        _set("ClusterQueue", "qa", "spec.preemption.borrowWithinCohort",
             {"policy": "LowerPriority", "maxPriorityThreshold": "high"}),
        ["ClusterQueue qa at spec.preemption.borrowWithinCohort.maxPriorityThreshold"]),
    "priority class value is text": (
        _set("WorkloadPriorityClass", "high", "value", "high"),
        ["WorkloadPriorityClass high at value"]),
    "LocalQueue spec is a list": (_set("LocalQueue", "lqb", "spec", ["clusterQueue", "qb"]),
                                  ["LocalQueue b/lqb at spec", "is not of type 'object'"]),
    "preemption is text": (_set("ClusterQueue", "qa", "spec.preemption", "always"),
                           ["ClusterQueue qa at spec.preemption"]),
    "requests is a list": (
        _set("Workload", "reclaimer",
             "spec.podSets.0.template.spec.containers.0.resources.requests", ["gpu", "4"]),
        ["Workload a/reclaimer at spec.podSets[0].template.spec.containers[0].resources."
         "requests"]),
    # a null in a list of objects: the API server prunes nulls in maps, not in lists
    # (apiextensions' PruneNonNullableNullsWithoutDefaults), so the schema refuses it
    "a null node selector term": (
        _set("Workload", "reclaimer", "spec.podSets.0.template.spec.affinity",
             {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                 "nodeSelectorTerms": [None]}}}),
        ["Workload a/reclaimer at spec.podSets[0].template.spec.affinity.nodeAffinity."
         "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"]),
    "unknown field": (_set("ClusterQueue", "qb", "spec.nominalQuotaa", 4),
                      ["ClusterQueue qb at spec", "'nominalQuotaa' was unexpected"]),
    "typo in a kind": (_append({"apiVersion": API, "kind": "ClusterQueues",
                                "metadata": {"name": "qc"}}),
                       ["ClusterQueues qc: kind 'ClusterQueues' is not a kind of "
                        "kueue.x-k8s.io"]),
    # the reader: values of the right type that Kueue's webhooks or the API server refuse
    "negative request": (_set("Workload", "reclaimer", GPU_REQ, "-4"),
                         ["Workload a/reclaimer", "requests.nvidia.com/gpu: '-4' is "
                          "negative"]),
    "negative count": (_set("Workload", "reclaimer", "spec.podSets.0.count", -3),
                       ["Workload a/reclaimer spec.podSets[0].count: -3"]),
    "a ClusterQueue twice": (_append(_cq("qb", 8)), ["ClusterQueue qb: given twice"]),
    "a Workload twice": (_append(_wl("reclaimer", "lqa", "2")),
                         ["Workload a/reclaimer: given twice"]),
    "flavor resources differ from coveredResources": (
        _set("ClusterQueue", "qa", "spec.resourceGroups.1.coveredResources",
             ["cpu", "memory"]),
        ["ClusterQueue qa spec.resourceGroups[1].flavors[0].resources: lists cpu, not the "
         "group's coveredResources cpu, memory"]),
    "a flavor in two groups": (
        _set("ClusterQueue", "qa", "spec.resourceGroups.1.flavors.0.name", "h100"),
        ["ClusterQueue qa spec.resourceGroups: h100 given twice"]),
    "a resource in two groups": (
        _set("ClusterQueue", "qa", "spec.resourceGroups.1",
             {"coveredResources": ["nvidia.com/gpu"], "flavors": [
                 {"name": "cpuf", "resources": [{"name": "nvidia.com/gpu",
                                                 "nominalQuota": 1}]}]}),
        ["ClusterQueue qa spec.resourceGroups: nvidia.com/gpu given twice"]),
    "admission of a pod set the spec lacks": (
        _set("Workload", "borrower", "status.admission.podSetAssignments.0.name", "other"),
        ["Workload b/borrower: status.admission.podSetAssignments: pod set 'other' is not "
         "in spec.podSets"]),
    "Configuration in a ConfigMap is text": (
        _append({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
                 "data": {"controller_manager_config.yaml": "just text\n"}}),
        ["ConfigMap kueue-system/kueue-manager-config: data.controller_manager_config.yaml "
         "holds no Configuration mapping"]),
    "fairSharing is a list": (
        _append({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                 "fairSharing": [1]}),
        ["fairSharing: [1] is not a mapping"]),
    "a List whose items are not a list": (
        _append({"apiVersion": "v1", "kind": "List", "items": 5}),
        ["items: 5 is not a list"]),
}


def _write(tmp: Path, objs: list[Obj]) -> Path:
    f = tmp / "snap.yaml"
    f.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    return f


def test_the_base_snapshot_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The cases below each break this valid snapshot in one place."""
    assert main(["sim", "replay", str(_write(tmp_path, base())), "-o", "json"]) == 0
    assert '"decision": "preempted"' in capsys.readouterr().out


@pytest.mark.parametrize("case", CASES)
def test_a_bad_snapshot_is_refused_by_object_and_field(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objs = base()
    edit, expected = CASES[case]
    edit(objs)
    f = _write(tmp_path, objs)
    assert main(["sim", "replay", str(f)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert str(f) in err
    for text in expected:
        assert text in err, err


def test_an_admission_on_a_flavor_the_queue_lacks_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The queue was edited after the admission: Kueue keeps the admission; the replay says
    what it cannot count."""
    objs = base()
    _set("Workload", "borrower", "status.admission.podSetAssignments.0.flavors",
         {"nvidia.com/gpu": "a100", "cpu": "cpuf"})(objs)
    assert main(["sim", "replay", str(_write(tmp_path, objs))]) == 0
    assert ("nvidia.com/gpu on flavor a100, which ClusterQueue qb has no quota for"
            in capsys.readouterr().err)


def test_sim_run_refuses_a_bad_tree_the_same_way(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "kueue"
    tree.mkdir()
    objs = [o for o in base() if o["kind"] != "Workload"]
    objs.append({"apiVersion": API, "kind": "ClusterQueu", "metadata": {"name": "qc"}})
    (tree / "queues.yaml").write_text(yaml.safe_dump_all(objs))
    assert main(["sim", "run", "--kueue", str(tree), "--months", "0.05"]) == 2
    err = capsys.readouterr().err
    assert "queues.yaml: ClusterQueu qc: kind 'ClusterQueu' is not a kind of" in err
