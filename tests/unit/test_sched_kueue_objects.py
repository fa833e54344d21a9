"""Reading rendered Kueue objects into the simulator's configuration."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from aiplat.errors import InputError
from aiplat.sched import GPU, PodSet, Request, sim_units, simulate
from aiplat.sched.kueue_objects import duration, from_objects, quantity

OBJECTS = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a}
spec: {nodeLabels: {aiplat.io/pool: a}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: org}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: a, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: research}
spec:
  cohortName: org
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  stopPolicy: Hold
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: a
      resources:
      - {name: cpu, nominalQuota: 500m}
      - {name: memory, nominalQuota: 64Gi}
      - {name: nvidia.com/gpu, nominalQuota: "2", borrowingLimit: 2, lendingLimit: 1}
  preemption:
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: Preempt}
  fairSharing: {weight: "2"}
---
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
fairSharing: {enable: true, preemptionStrategies: [LessThanInitialShare]}
waitForPodsReady:
  enable: true
  timeout: 10m
  requeuingStrategy: {backoffBaseSeconds: 30, backoffMaxSeconds: 600, backoffLimitCount: 3}
"""


def test_reads_queue_cohort_and_configuration() -> None:
    """The simulator's queues are the snapshot as read, in Kueue's units (GPUs in milli-GPUs:
    a time-sliced share is charged what it holds); reports convert with sim_units."""
    cfg = from_objects(yaml.safe_load_all(OBJECTS), "kueue.yaml")
    (q,) = cfg.snapshot.cluster_queues.values()
    assert (q.name, q.cohort, q.queueing_strategy, q.weight) == ("research", "org", "StrictFIFO",
                                                                 2.0)
    res = q.groups[0].flavors[0].resources
    assert (res[GPU].nominal, res[GPU].borrowing_limit, res[GPU].lending_limit) == (
        2000, 2000, 1000)
    assert res["cpu"].nominal == 500 and res["memory"].nominal == 64 * 2**30
    assert sim_units(GPU, res[GPU].nominal) == 2 and sim_units("cpu", res["cpu"].nominal) == 0.5
    assert sim_units("memory", res["memory"].nominal) == 64
    assert q.preemption.borrow_within_cohort == "LowerPriority"
    assert q.preemption.max_priority_threshold == 100
    # v1beta1's Preempt reads as v1beta2's MayStopSearch
    assert (q.fungibility.when_can_borrow, q.fungibility.when_can_preempt) == (
        "TryNextFlavor", "MayStopSearch")
    assert cfg.fair_sharing and cfg.snapshot.strategies == ("LessThanInitialShare",)
    assert cfg.wait_for_pods_ready is not None and cfg.wait_for_pods_ready.timeout_s == 600
    (org,) = cfg.snapshot.cohorts.values()
    assert org.groups[0].flavors[0].resources[GPU].nominal == 4000
    assert cfg.snapshot.flavors["a"].node_labels == {"aiplat.io/pool": "a"}


def test_whole_gpu_names_of_a_flavor_are_one_resource() -> None:
    """A device-plugin and a DRA name on one flavor add up to its GPUs (nvidia.com/gpu)."""
    text = OBJECTS.replace("      - {name: nvidia.com/gpu, nominalQuota: \"2\", borrowingLimit: 2, "
                           "lendingLimit: 1}\n", "      - {name: nvidia.com/gpu, nominalQuota: 2}"
                           "\n      - {name: gpu.nvidia.com, nominalQuota: 3}\n")
    text = text.replace("coveredResources: [cpu, memory, nvidia.com/gpu]",
                        "coveredResources: [cpu, memory, nvidia.com/gpu, gpu.nvidia.com]")
    cfg = from_objects(yaml.safe_load_all(text), "kueue.yaml")
    group = cfg.snapshot.cluster_queues["research"].groups[0]
    assert group.covered == ("cpu", "memory", GPU)
    assert group.flavors[0].resources[GPU].nominal == 5000


def test_unsupported_fields_are_reported_not_dropped() -> None:
    cfg = from_objects(yaml.safe_load_all(OBJECTS), "kueue.yaml")
    assert any("spec.namespaceSelector" in u for u in cfg.unsupported)
    assert not any("spec.stopPolicy" in u for u in cfg.unsupported)  # simulated: below


def test_the_read_objects_simulate() -> None:
    from sched_helpers import job, nodes

    text = OBJECTS.replace("  stopPolicy: Hold\n", "")
    cfg = from_objects(yaml.safe_load_all(text), "kueue.yaml")
    # 2 own + up to 2 borrowed from the cohort's 4: a 4-GPU job fits, a 5-GPU one never
    r = simulate(nodes(), [job("j", "research", 4), job("big", "research", 5)], cfg)
    assert [x.first_start for x in r.records] == [0, None]
    # a pod asking for 1 CPU does not fit the 500m CPU quota: it waits forever
    one_cpu = dataclasses.replace(job("c", "research", 1), podsets=(
        PodSet(1, Request(1000, 0, 1, 1000)),))
    assert simulate(nodes(), [one_cpu], cfg).records[0].first_start is None


def test_a_held_cluster_queue_admits_nothing() -> None:
    from sched_helpers import job, nodes

    cfg = from_objects(yaml.safe_load_all(OBJECTS), "kueue.yaml")  # stopPolicy: Hold
    assert simulate(nodes(), [job("j", "research", 1)], cfg).records[0].first_start is None


@pytest.mark.parametrize(("text", "res", "value"), [("8", "nvidia.com/gpu", 8), ("500m", "cpu",
                         0.5), ("512Mi", "memory", 0.5), ("1.5", "cpu", 1.5)])
def test_quantities(text: str, res: str, value: float) -> None:
    assert quantity(text, res, "x") == value


def test_bad_values_name_the_object_and_field() -> None:
    bad = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "q"}, "spec": {"queueingStrategy": "Fifo"}}]
    with pytest.raises(InputError, match=r"ClusterQueue q spec.queueingStrategy: 'Fifo'"):
        from_objects(bad, "k.yaml")
    with pytest.raises(InputError, match="not a duration"):
        duration("ten minutes", "x")
    with pytest.raises(InputError, match="no ClusterQueue"):
        from_objects([], "k.yaml")


def test_reads_what_aiplat_kube_renders_for_the_example() -> None:
    from aiplat.catalog import load_catalog
    from aiplat.kube.render import render
    from aiplat.plan import build_plan
    from aiplat.sched.platform import platform_jobs, platform_nodes, platform_strategies
    from aiplat.spec import EXAMPLE, example_text, parse_platform

    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    rendered = render(platform, catalog)
    objects = [o for path, docs in rendered.manifests.items() if path.startswith("kueue/")
               for o in docs]
    cfg = from_objects(objects, "kueue/")
    assert set(cfg.snapshot.cluster_queues) == {t.name for t in platform.tenants}
    for q in cfg.snapshot.cluster_queues.values():
        tenant = platform.tenant(q.name)
        assert tenant is not None
        for fq in (f for g in q.groups for f in g.flavors):
            assert sim_units(GPU, fq.resources[GPU].nominal) == tenant.quota[fq.flavor].gpus
    plan = build_plan(platform, catalog)
    result = simulate(platform_nodes(platform, plan), platform_jobs(platform, plan, 0), cfg,
                      strategies=platform_strategies(platform), horizon=730 * 3600)
    # CPU and memory quotas as rendered leave room for the jobs' per-GPU requests
    assert result.never_fit == 0
    assert all(t.started > 0 for t in result.tenants)


def test_v1beta2_configuration_enables_fair_sharing_by_its_presence() -> None:
    """Kueue v0.19's v1beta2 Configuration has no ``enable``: the section turns it on (the
    rendered Configuration writes only preemptionStrategies)."""
    cq = ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: a}\n"
          "spec: {resourceGroups: []}\n")
    on = cq + ("---\napiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
               "fairSharing: {preemptionStrategies: [LessThanInitialShare]}\n")
    off = cq + "---\napiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
    assert from_objects(yaml.safe_load_all(on), "k").fair_sharing
    assert not from_objects(yaml.safe_load_all(off), "k").fair_sharing


def test_a_cohort_cycle_is_refused_naming_it() -> None:
    text = ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: a}\n"
            "spec: {cohortName: x, resourceGroups: []}\n---\n"
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: x}\n"
            "spec: {parentName: y}\n---\n"
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: y}\n"
            "spec: {parentName: x}\n")
    with pytest.raises(InputError, match="k: cohort x: parent chain has a cycle through x"):
        from_objects(yaml.safe_load_all(text), "k")
