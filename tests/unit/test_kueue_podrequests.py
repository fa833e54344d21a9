"""The pod-request rule (aiplat.kueue.podrequests), case by case as Kubernetes states it:
the cases mirror k8s.io/component-helpers/resource/helpers_test.go (TestPodResourceRequests,
TestPodLevelResourceRequests) and Kueue's UseLimitsAsMissingRequestsInPod."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from aiplat.errors import InputError
from aiplat.kube import quantity
from aiplat.kueue.podrequests import pod_requests
from aiplat.kueue.snapshot import amount, parse

Obj = dict[str, Any]
ALWAYS = {"restartPolicy": "Always"}


def milli(resource: str, value: object, where: str) -> int:
    return amount(value, resource, where)


def c(cpu: str | None = None, *, limit: str | None = None, **extra: Any) -> Obj:
    res: Obj = {}
    if cpu is not None:
        res["requests"] = {"cpu": cpu}
    if limit is not None:
        res["limits"] = {"cpu": limit}
    return {"resources": res, **extra}


def cpu(spec: Obj) -> int:
    return pod_requests(spec, milli).get("cpu", 0)


def test_containers_add_up() -> None:
    assert cpu({"containers": [c("1"), c("500m"), c()]}) == 1500


def test_a_limit_stands_in_for_a_missing_request_not_for_a_given_one() -> None:
    assert cpu({"containers": [c(limit="2"), c("1", limit="3")]}) == 3000


def test_an_init_container_runs_alone_so_the_pod_needs_the_larger() -> None:
    assert cpu({"containers": [c("2"), c("1")], "initContainers": [c("4")]}) == 4000
    assert cpu({"containers": [c("2"), c("1")], "initContainers": [c("2")]}) == 3000


def test_each_init_container_is_compared_alone_not_summed() -> None:
    assert cpu({"containers": [c("1")], "initContainers": [c("2"), c("2")]}) == 2000


def test_a_sidecar_runs_beside_the_containers() -> None:
    # "container-level resources and sidecar container set": 2m + 4m
    assert cpu({"containers": [c("2m")], "initContainers": [c("4m", **ALWAYS)]}) == 6


def test_an_init_container_needs_the_sidecars_started_before_it() -> None:
    # "container-level resources, init and sidecar container set": max(2+4, 4+8) = 12m
    spec = {"containers": [c("2m")], "initContainers": [c("4m", **ALWAYS), c("8m")]}
    assert cpu(spec) == 12


def test_sidecars_started_after_an_init_container_do_not_count_for_it() -> None:
    # "multiple restartable and regular init containers": init-2 needs 5 + (1 + 2) = 8;
    # the sidecar started after it (3) runs with the containers: 1+2+3 + 1 = 7
    spec = {"containers": [c("1")],
            "initContainers": [c("5"), c("1", **ALWAYS), c("2", **ALWAYS), c("5"),
                               c("3", **ALWAYS)]}
    assert cpu(spec) == 8000


def test_many_sidecars_add_up_with_the_containers() -> None:
    # "multiple restartable init containers": max(5, 3+2+1 + 1) = 7
    spec = {"containers": [c("1")],
            "initContainers": [c("5"), c("1", **ALWAYS), c("2", **ALWAYS), c("3", **ALWAYS)]}
    assert cpu(spec) == 7000


def test_a_resource_only_an_init_container_asks_for_is_requested() -> None:
    spec = {"containers": [c("1")],
            "initContainers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    assert pod_requests(spec, milli) == {"cpu": 1000, "nvidia.com/gpu": 1}


def test_overhead_is_added_after_the_larger_is_taken() -> None:
    spec = {"containers": [c("1")], "initContainers": [c("3")],
            "overhead": {"cpu": "250m", "memory": "64Mi"}}
    assert pod_requests(spec, milli) == {"cpu": 3250, "memory": 64 * 2**20}


def test_pod_level_resources_replace_cpu_and_memory_not_extended_resources() -> None:
    # "pod-level resources, container-level resources, init and sidecar container set"
    spec = {"resources": {"requests": {"cpu": "18m"}, "limits": {"memory": "15Mi"}},
            "containers": [{"resources": {"requests": {"cpu": "2m", "memory": "3Mi",
                                                       "nvidia.com/gpu": 1}}}],
            "initContainers": [c("4m", **ALWAYS), c("8m")], "overhead": {"cpu": "1m"}}
    assert pod_requests(spec, milli) == {"cpu": 19, "memory": 15 * 2**20,
                                         "nvidia.com/gpu": 1}


def test_pod_level_extended_resources_are_not_pod_level() -> None:
    spec = {"resources": {"requests": {"nvidia.com/gpu": 8}},
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    assert pod_requests(spec, milli) == {"nvidia.com/gpu": 1}


def test_the_callers_units_decimal_and_the_field_path() -> None:
    seen: list[str] = []

    def dec(resource: str, value: object, where: str) -> Decimal:
        seen.append(where)
        return Decimal(str(value))
    spec = {"containers": [c("1.5")], "initContainers": [c("2", **ALWAYS)],
            "overhead": {"cpu": "0.25"}}
    assert pod_requests(spec, dec, "t.spec") == {"cpu": Decimal("3.75")}
    assert seen == ["t.spec.containers[0].resources.requests.cpu",
                    "t.spec.initContainers[0].resources.requests.cpu", "t.spec.overhead.cpu"]


def test_an_empty_spec_requests_nothing() -> None:
    assert pod_requests({}, milli) == {}


def test_a_bad_quantity_is_the_callers_error_naming_the_field() -> None:
    with pytest.raises(InputError, match=r"spec\.initContainers\[0\]\.resources\.requests\.cpu"):
        pod_requests({"initContainers": [c("lots")]}, milli)


def test_without_overhead_as_the_limit_ranger_counts_a_pod() -> None:
    spec = {"containers": [c("1")], "overhead": {"cpu": "250m"}}
    assert pod_requests(spec, milli, overhead=False) == {"cpu": 1000}


def workload(spec: Obj) -> list[Obj]:
    """A ClusterQueue, its LocalQueue and a Workload of one pod with ``spec``."""
    api = "kueue.x-k8s.io/v1beta2"
    return [
        {"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": {}},
        {"apiVersion": api, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "ns"},
         "spec": {"clusterQueue": "q"}},
        {"apiVersion": api, "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
         "spec": {"queueName": "q", "podSets": [{"name": "p", "count": 1,
                                                  "template": {"spec": spec}}]}}]


def test_the_snapshot_reader_and_kube_take_the_same_answer() -> None:
    """The three readers that had three rules (the snapshot, why-pending, lint) read one."""
    spec = {"containers": [c("1", limit="2")],
            "initContainers": [c("500m", **ALWAYS), c("2")], "overhead": {"cpu": "100m"}}
    [wl] = parse(workload(spec), "t").workloads
    assert wl.podsets[0].requests == {"cpu": 2600}  # max(1 + 0.5, 2 + 0.5) + 0.1
    assert quantity.pod_requests(spec) == {"cpu": Decimal("2.6")}


def test_a_negative_request_is_refused_by_the_snapshot_reader() -> None:
    with pytest.raises(InputError, match=r"initContainers\[0\]\.resources\.requests\.cpu: "
                                         r"'-1' is negative"):
        parse(workload({"initContainers": [c("-1")]}), "t")
