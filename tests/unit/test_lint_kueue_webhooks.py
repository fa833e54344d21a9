"""What Kueue's admission webhooks refuse, lint says before ``kubectl apply`` does (issue #40,
item 4): the refusals of pkg/webhooks (ClusterQueue, Cohort, ResourceFlavor, Workload) and of
the job webhooks (pkg/controller/jobframework, jobs/job) that lint had no rule for, each shown
on Kueue's own site examples with one field changed. The full list of refusals and the rule
that covers each: docs/lint-classes.md ("Kueue's admission webhooks")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.kube.inventory import Inventory
from aiplat.kube.lint import lint

KUEUE = Path(__file__).parent.parent / "data" / "upstream" / "kueue" / "v0.19.2"
Obj = dict[str, Any]


def docs(name: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all((KUEUE / name).read_text()) if d]


def hits(objs: list[Obj], rule: str) -> list[tuple[str, str]]:
    return [(f.severity, f.message) for f in lint(objs, Inventory(pools=[]))
            if f.source == rule]


def setup() -> tuple[list[Obj], Obj]:
    objs = docs("quick-start-setup.yaml")
    return objs, next(o for o in objs if o["kind"] == "ClusterQueue")


def test_the_examples_as_published_pass_the_webhooks() -> None:
    objs = docs("quick-start-setup.yaml") + docs("sample-job-partial-admission.yaml") \
        + docs("resource-flavor-taints.yaml") + docs("sample-hami.yaml")
    for rule in ("kueue-job-webhook", "kueue-queue-webhook", "quota-without-cohort"):
        assert hits(objs, rule) == [], rule


def test_lending_limit_without_cohort_is_refused() -> None:
    """validateLimit applies to lendingLimit as to borrowingLimit (the CRD's CEL rule only
    to borrowingLimit): 'must be nil when cohort is empty'."""
    objs, cq = setup()
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = 5
    got = hits(objs, "quota-without-cohort")
    assert got and got[0][0] == "error" and "must be nil when cohort is empty" in got[0][1]


@pytest.mark.parametrize(("change", "words"), [
    (lambda cq: cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"].reverse(),
     "must match the name in coveredResources"),
    (lambda cq: cq["spec"]["resourceGroups"][0]["flavors"].append(
        cq["spec"]["resourceGroups"][0]["flavors"][0]), "Duplicate value"),
    (lambda cq: cq["spec"]["resourceGroups"].append(
        {"coveredResources": ["cpu"], "flavors": []}), "Duplicate value"),
    (lambda cq: cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(
        nominalQuota="-1"), "must be greater than or equal to 0"),
    (lambda cq: cq["spec"].update(cohortName="c") or cq["spec"]["resourceGroups"][0][
        "flavors"][0]["resources"][0].update(lendingLimit=10),
     "must be less than or equal to the nominalQuota"),
    (lambda cq: cq["spec"].update(preemption={"reclaimWithinCohort": "Never",
                                              "borrowWithinCohort": {"policy": "LowerPriority"}}),
     "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
    (lambda cq: cq["spec"].update(admissionChecksStrategy={"admissionChecks": [
        {"name": "prov", "onFlavors": ["spot"]}]}), "Unsupported value: \"spot\""),
])
def test_clusterqueue_refusals(change: Any, words: str) -> None:
    objs, cq = setup()
    change(cq)
    got = hits(objs, "kueue-queue-webhook")
    assert any(s == "error" and words in m for s, m in got), got


def test_a_taint_twice_by_key_and_effect_is_refused() -> None:
    fl = docs("resource-flavor-taints.yaml")[0]
    fl["spec"]["nodeTaints"].append({**fl["spec"]["nodeTaints"][0], "value": "false"})
    got = hits([fl], "kueue-queue-webhook")
    assert any("taints must be unique by key and effect pair" in m for _s, m in got), got


def test_a_workload_with_two_variable_pod_sets_is_refused() -> None:
    job = docs("sample-job-partial-admission.yaml")[0]
    ps = {"count": 4, "minCount": 2, "template": job["spec"]["template"]}
    wl = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
          "metadata": {"name": "w", "namespace": "default"},
          "spec": {"queueName": "user-queue", "podSets": [{"name": "a", **ps},
                                                          {"name": "b", **ps}]}}
    got = hits([wl], "kueue-queue-webhook")
    assert any("at most one podSet can use minCount" in m for _s, m in got), got


@pytest.mark.parametrize(("annotations", "labels", "words"), [
    ({"kueue.x-k8s.io/job-min-parallelism": "five"}, {}, "invalid syntax"),
    ({"kueue.x-k8s.io/job-min-parallelism": "20"}, {}, "should be between 0 and 19"),
    ({"kueue.x-k8s.io/job-min-parallelism": "0"}, {}, "should be between 0 and 19"),
    ({}, {"kueue.x-k8s.io/queue-name": "User_Queue"}, "RFC 1123 subdomain"),
    ({}, {"kueue.x-k8s.io/max-exec-time-seconds": "0"}, "should be greater than 0"),
])
def test_job_refusals(annotations: dict[str, str], labels: dict[str, str], words: str) -> None:
    job = docs("sample-job-partial-admission.yaml")[0]
    job["metadata"]["annotations"] = annotations
    job["metadata"]["labels"].update(labels)
    got = hits([job], "kueue-job-webhook")
    assert [s for s, _m in got] == ["error"] and words in got[0][1], got


def test_two_topology_annotations_on_a_pod_template_are_refused() -> None:
    job = docs("sample-job-partial-admission.yaml")[0]
    job["spec"]["template"]["metadata"] = {"annotations": {
        "kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname",
        "kueue.x-k8s.io/podset-preferred-topology": "kubernetes.io/hostname"}}
    got = hits([job], "kueue-job-webhook")
    assert any("must not contain more than one topology annotation" in m for _s, m in got)


@pytest.mark.parametrize(("change", "words"), [
    (lambda cq: cq["spec"]["resourceGroups"][0]["coveredResources"].append("gpu count"),
     'Invalid value: "gpu count": not a qualified name'),
    (lambda cq: cq["spec"].update(namespaceSelector={"matchExpressions": [
        {"key": "team", "operator": "Exists", "values": ["a"]}]}),
     "may not be specified when `operator` is 'Exists'"),
    (lambda cq: cq["spec"].update(namespaceSelector={"matchExpressions": [
        {"key": "team", "operator": "In"}]}), "must be specified when `operator` is 'In'"),
    (lambda cq: cq["spec"].update(namespaceSelector={"matchExpressions": [
        {"key": "team", "operator": "Equals", "values": ["a"]}]}),
     "not a valid selector operator"),
    (lambda cq: cq["spec"].update(fairSharing={"weight": "-1"}),
     "spec.fairSharing: Invalid value"),
    (lambda cq: cq["spec"]["resourceGroups"][0].update(flavors=[
        {"name": f"f{i}", "resources": []} for i in range(257)]),
     "total number of flavors across all resourceGroups must be ≤ 256"),
])
def test_more_clusterqueue_refusals(change: Any, words: str) -> None:
    objs, cq = setup()
    change(cq)
    got = hits(objs, "kueue-queue-webhook")
    assert any(words in m for _s, m in got), got


def test_cohort_limits_need_a_parent() -> None:
    cohort = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
              "metadata": {"name": "root"}, "spec": {"resourceGroups": [
                  {"coveredResources": ["cpu"], "flavors": [{"name": "default-flavor",
                   "resources": [{"name": "cpu", "nominalQuota": 4, "lendingLimit": 8}]}]}]}}
    got = hits([cohort], "kueue-queue-webhook")
    assert [m for _s, m in got if "must be nil when parent is empty" in m], got
    cohort["spec"]["parentName"] = "org"
    assert hits([cohort], "kueue-queue-webhook") == []  # no lending <= nominal for a Cohort


def test_flavor_labels_and_workload_resources_are_validated() -> None:
    fl = docs("resource-flavor-taints.yaml")[0]
    fl["spec"]["nodeLabels"] = {"instance type": "spot"}
    assert hits([fl], "kueue-queue-webhook")
    job = docs("sample-job-partial-admission.yaml")[0]
    template = job["spec"]["template"]
    template["spec"]["containers"][0]["resources"]["requests"]["pods"] = "1"
    wl = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
          "metadata": {"name": "w", "namespace": "default"},
          "spec": {"queueName": "user-queue", "podSets": [
              {"name": "main", "count": 1, "template": template}]}}
    got = hits([wl], "kueue-queue-webhook")
    assert any("the key is reserved for internal kueue use" in m for _s, m in got), got


def test_a_fungibility_preference_needs_try_next_flavor_on_both() -> None:
    """whenCanBorrow defaults to MayStopSearch: a preference alone is refused."""
    objs, cq = setup()
    cq["spec"]["flavorFungibility"] = {"preference": "BorrowingOverPreemption"}
    assert any("requires both whenCanBorrow" in m for _s, m in hits(objs, "kueue-queue-webhook"))
    cq["spec"]["flavorFungibility"]["whenCanBorrow"] = "TryNextFlavor"
    assert hits(objs, "kueue-queue-webhook") == []
