"""``aiplat sim replay`` counts DRA devices as Kueue v0.19.2 does.

A pod set's ResourceClaimTemplates give devices per DeviceClass; the Configuration's
``resources.deviceClassMappings`` names the quota resource they are charged to (count per
pod x pods). Kueue's workload controller refuses a claim by name, an unmapped DeviceClass,
allocationMode All and firstAvailable: the workload waits, inadmissible, with the field error
as its message. The live check against the real Kueue: tests/integration/test_replay_dra_live.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from aiplat.errors import InputError
from aiplat.kueue.cycle import replay
from aiplat.kueue.snapshot import parse

API = "kueue.x-k8s.io/v1beta2"
Obj = dict[str, Any]
GPU = "gpu-l40s-48gb"


def _config(mapped: bool = True, **res: Any) -> Obj:
    r: Obj = dict(res)
    if mapped:
        r["deviceClassMappings"] = [{"name": GPU, "deviceClassNames": [GPU]}]
    return {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "resources": r}


def _template(name: str, count: int = 1, device_class: str = GPU, **exactly: Any) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": device_class, "allocationMode": "ExactCount",
                "count": count, **exactly}}]}}}}


def _queue(gpus: int, cpu: int = 64) -> list[Obj]:
    return [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "l40s"}},
            {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": "q"},
             "spec": {"namespaceSelector": {},
                      "resourceGroups": [{"coveredResources": ["cpu", GPU, "memory"],
                                          "flavors": [{"name": "l40s", "resources": [
                                              {"name": "cpu", "nominalQuota": cpu},
                                              {"name": GPU, "nominalQuota": gpus},
                                              {"name": "memory", "nominalQuota": "256Gi"}]}]}]}},
            {"apiVersion": API, "kind": "LocalQueue",
             "metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "q"}}]


def _workload(name: str, pods: int, claims: list[Obj], cpu: str = "1",
              memory: str = "1Gi") -> Obj:
    return {"apiVersion": API, "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "uid": name,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": pods, "template": {
                "spec": {"containers": [{"name": "c", "resources": {
                    "requests": {"cpu": cpu, "memory": memory},
                    "claims": [{"name": c["name"]} for c in claims]}}],
                         "resourceClaims": claims}}}]}}


def _by_template(name: str) -> Obj:
    return {"name": "gpu", "resourceClaimTemplateName": name}


def _run(objs: list[Obj]) -> dict[str, Any]:
    return {o.workload.split("/")[1]: o for o in replay(parse(objs, "t"))}


def test_devices_are_counted_per_pod_times_pods_and_admitted_when_they_fit() -> None:
    snap = parse([_config(), _template("pair", 2), *_queue(8),
                  _workload("a", 4, [_by_template("pair")])], "t")
    assert snap.workloads[0].podsets[0].requests[GPU] == 2
    assert snap.workloads[0].podsets[0].total()[GPU] == 8
    out = _run([_config(), _template("pair", 2), *_queue(8),
                _workload("a", 4, [_by_template("pair")])])
    assert out["a"].decision == "admitted"
    assert out["a"].flavors == {"main": {"cpu": "l40s", GPU: "l40s", "memory": "l40s"}}


def test_over_the_device_quota_is_pending_with_kueues_message_in_its_order() -> None:
    # Kueue sorts a pod set's reasons (Status.Message): the device resource sits between
    # cpu and memory although it is added to the requests last
    objs = [_config(), _template("eight", 8), *_queue(12, cpu=8),
            _workload("a", 1, [_by_template("eight")], cpu="4", memory="200Gi"),
            _workload("b", 1, [_by_template("eight")], cpu="6", memory="100Gi")]
    objs[-1]["metadata"]["creationTimestamp"] = "2026-01-01T00:00:01Z"
    out = _run(objs)
    assert out["a"].decision == "admitted"
    assert (out["b"].decision, out["b"].pending) == ("pending", "inadmissible")
    assert out["b"].message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        f"l40s, 2 more needed, insufficient unused quota for {GPU} in flavor l40s, 4 more "
        "needed, insufficient unused quota for memory in flavor l40s, 44Gi more needed")


def test_second_workload_waits_for_the_devices_the_first_holds() -> None:
    objs = [_config(), _template("one"), *_queue(4),
            _workload("a", 3, [_by_template("one")]),
            _workload("b", 2, [_by_template("one")])]
    objs[-1]["metadata"]["creationTimestamp"] = "2026-01-01T00:00:01Z"
    out = _run(objs)
    assert out["a"].decision == "admitted"
    assert out["b"].decision == "pending"
    assert out["b"].message == ("couldn't assign flavors to pod set main: insufficient unused "
                                f"quota for {GPU} in flavor l40s, 1 more needed")


def test_two_claims_and_two_requests_add_up() -> None:
    two = _template("two", 1)
    two["spec"]["spec"]["devices"]["requests"].append(
        {"name": "more", "exactly": {"deviceClassName": GPU, "count": 2}})  # defaults
    snap = parse([_config(), two, _template("one"), *_queue(8),
                  _workload("a", 1, [_by_template("two"),
                                     {"name": "x", "resourceClaimTemplateName": "one"}])], "t")
    assert snap.workloads[0].podsets[0].requests[GPU] == 4


def test_excluded_prefixes_do_not_drop_mapped_devices() -> None:
    # Kueue adds the DRA resources after dropping excludeResourcePrefixes
    snap = parse([_config(excludeResourcePrefixes=["gpu-"]), _template("one"), *_queue(8),
                  _workload("a", 1, [_by_template("one")])], "t")
    assert snap.workloads[0].podsets[0].requests[GPU] == 1


def test_unmapped_device_class_is_inadmissible_with_kueues_field_error() -> None:
    out = _run([_config(mapped=False), _template("one"), *_queue(8),
                _workload("a", 1, [_by_template("one")])])["a"]
    assert (out.decision, out.pending, out.reason) == ("pending", "inadmissible", "Inadmissible")
    assert out.message == (
        "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not "
        f"found: \"DeviceClass {GPU} is not mapped in DRA configuration for podset main\"")


@pytest.mark.parametrize(("exactly", "request_", "message"), [
    ({"allocationMode": "All"}, None,
     "devices.requests[0].exactly.allocationMode: Invalid value: \"All\": "
     "ResourceClaimTemplate t1: AllocationMode 'All' is not supported"),
    ({"adminAccess": True}, None,
     "devices.requests[0].exactly.adminAccess: Invalid value: null: "
     "ResourceClaimTemplate t1: AdminAccess is not supported"),
    (None, {"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": GPU}]},
     "devices.requests[0]: Invalid value: null: ResourceClaimTemplate t1: "
     "FirstAvailable device selection is not supported"),
])
def test_claims_kueue_refuses(exactly: Obj | None, request_: Obj | None, message: str) -> None:
    t = _template("t1", **(exactly or {}))
    if request_ is not None:
        t["spec"]["spec"]["devices"]["requests"] = [request_]
    out = _run([_config(), t, *_queue(8), _workload("a", 1, [_by_template("t1")])])["a"]
    assert (out.decision, out.pending) == ("pending", "inadmissible")
    assert out.message == f"spec.podSets[0].template.spec.resourceClaims[0].{message}"


def test_a_claim_by_name_is_not_supported_by_kueue() -> None:
    out = _run([_config(), *_queue(8),
                _workload("a", 1, [{"name": "gpu", "resourceClaimName": "shared"}])])["a"]
    assert (out.decision, out.pending) == ("pending", "inadmissible")
    assert out.message == "KueueDRAIntegration feature does not support use of resource claims"


def test_a_missing_template_is_kueues_internal_error() -> None:
    out = _run([_config(), _template("one"), *_queue(8),
                _workload("a", 1, [_by_template("gone")])])["a"]
    assert (out.decision, out.pending) == ("pending", "inadmissible")
    assert out.message == (
        "spec.podSets[0].template.spec.resourceClaims[0]: Internal error: failed to get claim "
        "spec for ResourceClaimTemplate gone in podset main: "
        "ResourceClaimTemplate.resource.k8s.io \"gone\" not found")


def test_a_snapshot_without_templates_is_warned_not_refused() -> None:
    snap = parse([_config(), *_queue(8), _workload("a", 1, [_by_template("gone")])], "t")
    assert GPU not in snap.workloads[0].podsets[0].requests
    assert snap.workloads[0].refused is None
    assert any("ResourceClaimTemplate ns/gone is not in the snapshot" in u
               and "kubectl get resourceclaimtemplates -A -o yaml" in u
               for u in snap.unsupported)


def test_other_api_version_is_a_clear_error() -> None:
    old = _template("one")
    old["apiVersion"] = "resource.k8s.io/v1beta1"
    with pytest.raises(InputError, match=r"resource\.k8s\.io/v1 "):
        parse([old], "t")


def test_counter_sourced_classes_are_reported_not_counted() -> None:
    cfg = _config()
    cfg["resources"]["deviceClassMappings"][0]["sources"] = [
        {"counter": {"driver": "gpu.example.com", "name": "memory"}}]
    snap = parse([cfg, _template("one"), *_queue(8), _workload("a", 1, [_by_template("one")])],
                 "t")
    assert GPU not in snap.workloads[0].podsets[0].requests
    assert any("counters" in u for u in snap.unsupported)
