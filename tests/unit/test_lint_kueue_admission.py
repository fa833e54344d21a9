"""Lint decides what a ClusterQueue admits as Kueue's flavor assigner does (issue #40), on
Kueue's own site examples: a ResourceFlavor's ``nodeTaints`` keep away workloads that do not
tolerate them (they were ignored); partial admission (``kueue.x-k8s.io/job-min-parallelism``,
a Workload's ``podSets[].minCount``) admits a job at its minimum count (lint called it "never
fits"); quota-only resources (HAMi's ``nvidia.com/total-gpucores``, a resource
transformation's outputs) are not node capacity (lint said the pool "has 0").
Upstream files: tests/data/upstream/kueue/PROVENANCE.md."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from aiplat.kube.inventory import Inventory
from aiplat.kube.lint import lint

KUEUE = Path(__file__).parent.parent / "data" / "upstream" / "kueue" / "v0.19.2"
Obj = dict[str, Any]
# Kueue's HAMi guide (site/content/en/docs/tasks/run/using_hami.md, v0.19.2): the
# transformations it asks the admin to configure, in the release's Configuration.
HAMI_TRANSFORMATIONS = [
    {"input": "nvidia.com/gpucores", "strategy": "Replace", "multiplyBy": "nvidia.com/gpu",
     "outputs": {"nvidia.com/total-gpucores": "1"}},
    {"input": "nvidia.com/gpumem", "strategy": "Replace", "multiplyBy": "nvidia.com/gpu",
     "outputs": {"nvidia.com/total-gpumem": "1"}}]


def docs(name: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all((KUEUE / name).read_text()) if d]


def run(objs: list[Obj], pools: list[Obj] | None = None) -> list[tuple[str, str, str]]:
    inv = Inventory.from_dict({"pools": pools or []})
    return [(f.severity, f.source, f.message) for f in lint(objs, inv)]


def rule_hits(got: list[tuple[str, str, str]], rule: str) -> list[tuple[str, str, str]]:
    return [g for g in got if g[1] == rule]


def spot_queue() -> list[Obj]:
    """The quick start's queues on Kueue's tainted 'spot' flavor."""
    setup = docs("quick-start-setup.yaml")
    setup = [o for o in setup if o["kind"] != "ResourceFlavor"]
    for o in setup:
        if o["kind"] == "ClusterQueue":
            o["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "spot"
    return setup + docs("resource-flavor-taints.yaml")


def job(**annotations: str) -> Obj:
    j = docs("sample-job-partial-admission.yaml")[0]
    j["metadata"]["annotations"] = annotations
    return j


# --- item 2: nodeTaints ----------------------------------------------------------------


def test_a_flavor_whose_taint_the_pods_do_not_tolerate_admits_nothing() -> None:
    got = run([*spot_queue(), job()])
    hits = rule_hits(got, "flavor-node-taints")
    assert [s for s, *_ in hits] == ["error"], got
    assert "spot=true:NoSchedule" in hits[0][2] and "untolerated" in hits[0][2]


def test_a_toleration_on_the_pods_or_the_flavor_lets_them_in() -> None:
    tolerating = job()
    tolerating["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    assert not rule_hits(run([*spot_queue(), tolerating]), "flavor-node-taints")
    queue = spot_queue()
    queue[-1]["spec"]["tolerations"] = [{"key": "spot", "operator": "Exists"}]
    assert not rule_hits(run([*queue, job()]), "flavor-node-taints")


def test_another_flavor_without_the_taint_is_used_instead() -> None:
    queue = spot_queue() + [d for d in docs("quick-start-setup.yaml")
                            if d["kind"] == "ResourceFlavor"]
    cq = next(o for o in queue if o["kind"] == "ClusterQueue")
    flavors = cq["spec"]["resourceGroups"][0]["flavors"]
    flavors.append({**copy.deepcopy(flavors[0]), "name": "default-flavor"})
    assert not rule_hits(run([*queue, job()]), "flavor-node-taints")


# --- item 3: partial admission ---------------------------------------------------------


def test_a_job_that_fits_at_its_minimum_parallelism_is_admitted() -> None:
    """Kueue's partial-admission example: 20 pods of 1 CPU on a queue of 9 CPUs, at least 5:
    Kueue admits it with fewer pods."""
    setup = docs("quick-start-setup.yaml")
    got = run(setup + docs("sample-job-partial-admission.yaml"))
    assert not rule_hits(got, "workload-quota"), got
    whole = run([*setup, job()])
    assert [s for s, *_ in rule_hits(whole, "workload-quota")] == ["error"]


def test_a_minimum_that_still_does_not_fit_never_fits() -> None:
    got = run([*docs("quick-start-setup.yaml"), job(**{
        "kueue.x-k8s.io/job-min-parallelism": "10"})])
    hits = rule_hits(got, "workload-quota")
    assert hits and "10 pods" in hits[0][2], got


def test_a_workload_is_admitted_at_its_min_count() -> None:
    setup = docs("quick-start-setup.yaml")
    template = job()["spec"]["template"]
    wl = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
          "metadata": {"name": "w", "namespace": "default"},
          "spec": {"queueName": "user-queue", "podSets": [
              {"name": "main", "count": 20, "minCount": 5, "template": template}]}}
    assert not rule_hits(run([*setup, wl]), "workload-quota")
    del wl["spec"]["podSets"][0]["minCount"]
    assert rule_hits(run([*setup, wl]), "workload-quota")


# --- item 4: virtual resources ---------------------------------------------------------

HAMI_POOL = {"name": "gpu", "nodes": 2, "labels": {"gpu": "on"},
             "capacity": {"nvidia.com/gpu": 20}, "cpu": 64, "memoryGiB": 256}


def test_quota_only_resources_are_not_node_capacity() -> None:
    got = run(docs("sample-hami.yaml"), [HAMI_POOL])
    assert not rule_hits(got, "quota-capacity"), got


def test_hami_with_its_transformations_lints_without_an_error() -> None:
    cfg = yaml.safe_load((KUEUE / "controller_manager_config.yaml").read_text())
    cfg["resources"] = {"transformations": HAMI_TRANSFORMATIONS}
    got = run([cfg, *docs("sample-hami.yaml")], [HAMI_POOL])
    assert [g for g in got if g[0] == "error"] == [], got


def test_transformed_demand_is_checked_against_the_quota() -> None:
    """2 vGPUs of 30 cores each are 60 total-gpucores: above a quota of 50."""
    cfg = yaml.safe_load((KUEUE / "controller_manager_config.yaml").read_text())
    cfg["resources"] = {"transformations": HAMI_TRANSFORMATIONS}
    objs = docs("sample-hami.yaml")
    cq = next(o for o in objs if o["kind"] == "ClusterQueue")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] = 50
    hits = rule_hits(run([cfg, *objs], [HAMI_POOL]), "workload-quota")
    assert hits and "60 nvidia.com/total-gpucores" in hits[0][2], hits
