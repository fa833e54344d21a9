"""Cluster objects -> the TAS module's inputs (``aiplat.kueue.tas_input``), end to end
against Kueue v0.19.2's own scheduler.

The objects are Kueue's TAS site examples (tests/data/corpus/kueue/v0.19.2/site/static/
examples/tas), the Workloads Kueue's job reconciler makes of its example Jobs, and nodes and
pods as kubectl prints them (tests/data/kueue_tas/objects, README.md there says how each
was made). ``kueue_results.json`` is what Kueue's scheduler decided for each scenario in one
cycle: the adapter's inputs must make ``tas.find_for_workload`` decide the same.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.errors import InputError
from aiplat.kueue import tas, tas_input

DATA = Path(__file__).parent.parent / "data"
OBJECTS = DATA / "kueue_tas" / "objects"
EXAMPLES = "corpus/kueue/v0.19.2/site/static/examples/tas"
SCENARIOS: dict[str, dict[str, Any]] = json.loads((OBJECTS / "scenarios.json").read_text())
RESULTS: dict[str, dict[str, Any]] = json.loads((OBJECTS / "kueue_results.json").read_text())
BOTH = {"cpu": "tas-flavor", "memory": "tas-flavor"}


def _docs(name: str) -> list[dict[str, Any]]:
    path = DATA / name if name.startswith("corpus/") else OBJECTS / name
    out: list[dict[str, Any]] = []
    for d in yaml.safe_load_all(path.read_text()):
        if d:
            out += d["items"] if d.get("kind") == "List" else [d]
    return out


def _workload(key: str) -> dict[str, Any]:
    return next(w for w in _docs("workloads.yaml")
                if f"{w['metadata']['namespace']}/{w['metadata']['name']}" == key)


def _scenario(name: str) -> list[dict[str, Any]]:
    sc = SCENARIOS[name]
    return [o for f in sc["files"] for o in _docs(f)] + [_workload(sc["pending"])]


def _place(cluster: tas_input.TasCluster, key: str,
           assigned: dict[str, dict[str, str]]) -> dict[str, tuple[str, tas.PodSetResult]]:
    asks = tas_input.requests_for(cluster, key, assigned)
    assert not asks.errors and not asks.not_modelled
    return tas.find_for_workload(asks.by_flavor)


def _domains(levels: tuple[str, ...] | list[str], domains: Any) -> dict[tuple[str, ...], int]:
    return {tuple(d.values): d.count for d in domains} | {("levels", *levels): 0}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_objects_are_placed_as_kueues_scheduler_placed_them(name: str) -> None:
    key = SCENARIOS[name]["pending"]
    kueue = RESULTS[name]
    cluster = tas_input.read(_scenario(name), name)
    psas = (kueue.get("admission") or {}).get("podSetAssignments") or []
    assigned = ({p["name"]: p["flavors"] for p in psas} if psas
                else {p["name"]: BOTH for p in _workload(key)["spec"]["podSets"]})
    got = _place(cluster, key, assigned)
    assert {f for f, _ in got.values()} == {"tas-flavor"}
    for psa in psas:
        result = got[psa["name"]][1]
        ta = psa["topologyAssignment"]
        want = tas.admitted_domains(["f"], ta, {})
        assert result.assignment is not None, result.reason
        assert (_domains(result.assignment.levels, result.assignment.domains)
                == _domains(ta["levels"], want))
    if not psas:
        (cond,) = [c for c in kueue["conditions"] if c["type"] == "QuotaReserved"]
        (result,) = [r for _, r in got.values() if r.reason]
        assert result.assignment is None
        assert cond["message"].endswith(f": {result.reason}")


def test_the_scenarios_cover_fits_and_a_refusal_on_every_example() -> None:
    admitted = [n for n, r in RESULTS.items() if r.get("admission")]
    assert len(admitted) >= 5 and len(RESULTS) - len(admitted) >= 1
    used = {f for sc in SCENARIOS.values() for f in sc["files"]}
    assert {f"{EXAMPLES}/sample-queues.yaml", f"{EXAMPLES}/sample-gpu-queues.yaml"} <= used


def test_upstream_examples_read_as_kueue_holds_them() -> None:
    cluster = tas_input.read(_docs(f"{EXAMPLES}/sample-gpu-queues.yaml")
                             + _docs("nodes-gpu.yaml"), "gpu")
    flavor = cluster.flavors["tas-flavor"]
    assert flavor.topology == "default"
    assert flavor.levels == ("cloud.provider.com/topology-block",
                             "cloud.provider.com/topology-rack", tas.HOSTNAME)
    assert flavor.node_labels == {"cloud.provider.com/node-group": "tas-group"}
    assert flavor.tolerations == (tas.Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),)
    nodes = {n.name: n for n in cluster.nodes}
    assert nodes["kind-worker2"].allocatable["cpu"] == 2000
    assert nodes["kind-worker2"].allocatable["memory"] == 8148772 * 1024
    assert nodes["kind-worker2"].taints == (tas.Taint("nvidia.com/gpu", "NoSchedule", "present"),)
    assert not nodes["kind-worker5"].ready and nodes["kind-worker5"].unschedulable is False
    assert nodes["kind-worker7"].unschedulable
    assert cluster.tas_only == {"tas-cluster-queue": True}


def test_the_workloads_kueue_makes_of_the_example_jobs_ask_what_the_annotations_say() -> None:
    cluster = tas_input.read(_docs("workloads.yaml"), "w")
    asks = {k.split("/")[1].split("x7k2p")[0]: w.podsets[0] for k, w in cluster.workloads.items()}
    block, rack = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"
    assert asks["job-tas-sample-required"].request.topology == tas.TopologyRequest(required=rack)
    assert asks["job-tas-sample-preferred"].request.topology == tas.TopologyRequest(
        preferred=block)
    assert asks["job-tas-sample-unconstrained"].request.topology == tas.TopologyRequest(
        unconstrained=True)
    assert asks["job-tas-sample-sliced"].request.topology == tas.TopologyRequest(
        required=block, slices=(tas.SliceLayer(rack, 4),))
    assert all(ps.explicit for ps in asks.values())
    req = asks["job-tas-sample-preferred"].request
    assert (req.count, dict(req.requests)) == (40, {"cpu": 1000, "memory": 200 * 2**20})
    pinned = asks["job-tas-sample-pinned"].request
    assert pinned.node_selector == {"beta.kubernetes.io/arch": "amd64"}
    assert pinned.tolerations == (tas.Toleration("dedicated", "Equal", "infra", "NoSchedule"),)
    assert pinned.affinity == ((tas.Requirement(tas.HOSTNAME, "NotIn", ("kind-worker2",)),),)


def test_v1beta1_objects_read_as_their_v1beta2_forms() -> None:
    """v1beta1.yaml: Kueue's own conversion of the required-busy scenario's objects after
    the cycle (the pending Workload admitted, as kueue_results.json has it)."""
    objects = _scenario("required-busy")
    objects[-1] = {**objects[-1], "status": RESULTS["required-busy"]}
    new = tas_input.read(objects, "new")
    old_objects = [o for o in objects
                   if o["kind"] not in ("Workload", "Topology", "ResourceFlavor")]
    old = tas_input.read(old_objects + _docs("v1beta1.yaml"), "old")
    assert old.flavors == new.flavors
    assert sorted(old.admitted, key=repr) == sorted(new.admitted, key=repr)
    assert len(new.admitted) == 4
    assert old.workloads.keys() == new.workloads.keys()
    for key, wl in new.workloads.items():
        assert old.workloads[key].podsets == wl.podsets


def test_admitted_usage_and_pods_take_capacity_and_the_cycle_can_add_its_own() -> None:
    objects = _scenario("required")
    key = SCENARIOS["required"]["pending"]
    cluster = tas_input.read(objects, "r")
    first = _place(cluster, key, {"main": BOTH})
    after = tas_input.with_admitted(cluster, key, first)
    assert len(after.admitted) == len(first["main"][1].assignment.domains)  # type: ignore[union-attr]
    second = _place(after, key, {"main": BOTH})
    hosts = {d.values for _, r in (first["main"], second["main"])
             for d in r.assignment.domains}  # type: ignore[union-attr]
    assert len(hosts) == 4  # the second lands on another rack's two nodes


def _tas_only_cluster(*extra_flavor: str) -> list[dict[str, Any]]:
    objects = _docs(f"{EXAMPLES}/sample-queues.yaml") + _docs("nodes.yaml")
    wl = copy.deepcopy(_workload(SCENARIOS["required"]["pending"]))
    del wl["spec"]["podSets"][0]["topologyRequest"]
    objects.append(wl)
    for name in extra_flavor:
        objects.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                        "metadata": {"name": name}, "spec": {}})
        cq = next(o for o in objects if o["kind"] == "ClusterQueue")
        cq["spec"]["resourceGroups"][0]["flavors"].append(
            {"name": name, "resources": [{"name": "cpu", "nominalQuota": 1},
                                         {"name": "memory", "nominalQuota": "1Gi"}]})
    return objects


def test_a_pod_set_that_does_not_ask_uses_tas_only_in_a_tas_only_cluster_queue() -> None:
    key = SCENARIOS["required"]["pending"]
    only = tas_input.requests_for(tas_input.read(_tas_only_cluster(), "a"), key, {"main": BOTH})
    (ps,) = only.by_flavor["tas-flavor"][1]
    assert ps.implied and ps.topology is None
    mixed = tas_input.read(_tas_only_cluster("plain"), "b")
    assert mixed.tas_only == {"tas-cluster-queue": False}
    assert tas_input.requests_for(mixed, key, {"main": BOTH}).by_flavor == {}


def test_counts_flavors_and_missing_topologies_as_the_flavor_assigner_sees_them() -> None:
    objects = _scenario("required")
    key = SCENARIOS["required"]["pending"]
    objects.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                    "metadata": {"name": "other"}, "spec": {"topologyName": "gone"}})
    cluster = tas_input.read(objects, "c")
    assert cluster.missing == {"other": "there is no Topology 'gone' for TAS flavor 'other'"}
    partial = tas_input.requests_for(cluster, key, {"main": BOTH}, {"main": 3})
    assert partial.by_flavor["tas-flavor"][1][0].count == 3
    assert tas_input.requests_for(cluster, key, {"main": BOTH}, {"main": 0}).by_flavor == {}
    assert tas_input.requests_for(cluster, key, {}).by_flavor == {}  # no quota: no TAS ask
    two = tas_input.requests_for(cluster, key, {"main": {"cpu": "tas-flavor", "memory": "other"}})
    assert two.errors == {"main": "more than one TAS flavor assigned: other, tas-flavor"}
    none = tas_input.requests_for(cluster, key, {"main": {"cpu": "x"}})
    assert none.errors == {"main": "no TAS flavor assigned"}


def _with(objects: list[dict[str, Any]], kind: str, change: Any) -> list[dict[str, Any]]:
    out = copy.deepcopy(objects)
    change(next(o for o in out if o["kind"] == kind))
    return out


def test_what_is_not_modelled_is_named_for_the_callers_unknown() -> None:
    objects = _scenario("required")
    key = SCENARIOS["required"]["pending"]

    def unhealthy(w: dict[str, Any]) -> None:
        w["status"] = {"unhealthyNodes": [{"name": "kind-worker"}]}
        w["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}

    def checks(q: dict[str, Any]) -> None:
        q["spec"]["admissionChecks"] = ["prov"]

    for changed, words in ((_with(objects, "Workload", unhealthy),
                            ("unhealthyNodes", "elastic")),
                           (_with(objects, "ClusterQueue", checks), ("admission checks",))):
        notes = tas_input.requests_for(tas_input.read(changed, "n"), key,
                                       {"main": BOTH}).not_modelled
        assert len(notes) == len(words)
        assert all(w in n for w, n in zip(words, notes, strict=True))


def test_a_feature_gate_off_its_default_is_not_modelled_for_every_workload() -> None:
    key = SCENARIOS["required"]["pending"]
    config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
              "featureGates": {"TASBalancedPlacement": True, "TASCacheTopologyTree": True,
                               "TASMultiLayerTopology": True}}
    cluster = tas_input.read([*_scenario("required"), config], "g")
    assert cluster.everywhere == ("feature gate TASBalancedPlacement=true (Kueue v0.19's "
                                  "default is false)",)
    assert tas_input.requests_for(cluster, key, {"main": BOTH}).not_modelled == cluster.everywhere
    told = tas_input.read(_scenario("required"), "g", {"TopologyAwareScheduling": False})
    assert told.everywhere == ("feature gate TopologyAwareScheduling=false (Kueue v0.19's "
                               "default is true)",)
    with pytest.raises(InputError, match=r"Configuration \?: featureGates.X: 'on'"):
        tas_input.read([{**config, "featureGates": {"X": "on"}}], "g")


def _set(path: str, value: Any) -> Any:
    def change(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        at: Any = obj
        for p in parents:
            at = at[int(p)] if p.isdigit() else at[p]
        if value is KeyError:
            del at[last]
        else:
            at[int(last) if last.isdigit() else last] = value
    return change


BUSY_PSA = "status.admission.podSetAssignments.0"
HOSTILE = [
    ("Topology", "spec.levels", KeyError, "Topology default: spec.levels: a list of 1 to 16"),
    ("Topology", "spec.levels", "rack", "Topology default: spec.levels: a list of 1 to 16"),
    ("Topology", "spec.levels", [{"nodeLabel": tas.HOSTNAME}, {"nodeLabel": "rack"}],
     "spec.levels: kubernetes.io/hostname can only be the lowest level"),
    ("Topology", "spec.levels.1.nodeLabel", "cloud.provider.com/topology-block",
     "spec.levels: cloud.provider.com/topology-block given twice"),
    ("Topology", "spec.levels.0", {"label": "x"}, "spec.levels[0].nodeLabel: None"),
    ("Topology", "apiVersion", "kueue.x-k8s.io/v1alpha1", "apiVersion 'kueue.x-k8s.io/v1alpha1'"),
    ("Topology", "metadata.name", KeyError, "Topology ?: metadata.name is missing"),
    ("ResourceFlavor", "spec.topologyName", 5, "ResourceFlavor tas-flavor: spec.topologyName: 5"),
    ("ResourceFlavor", "spec.nodeLabels", {"zone": 1}, "spec.nodeLabels.zone: 1 is not a string"),
    ("ResourceFlavor", "spec.tolerations", [{"key": "k", "operator": "Maybe"}],
     "spec.tolerations[0].operator: 'Maybe'"),
    ("Node", "status.allocatable.cpu", "lots", "Node kind-worker: status.allocatable.cpu: 'lots'"),
    ("Node", "spec.taints", [{"key": "k", "effect": "Sometimes"}],
     "Node kind-worker: spec.taints[0].effect: 'Sometimes'"),
    ("Node", "spec.unschedulable", "yes", "spec.unschedulable: 'yes' is not true or false"),
    ("Pod", "spec.containers.0.resources.requests.cpu", "-1",
     "Pod default/web-0: spec.containers[0].resources.requests.cpu: '-1' is negative"),
    ("Workload", "spec.podSets.0.count", "ten", "spec.podSets[0].count: 'ten' is not a pod count"),
    ("Workload", "spec.podSets", [], "spec.podSets is empty"),
    ("Workload", "spec.podSets.0.topologyRequest.required", 7,
     "spec.podSets[0].topologyRequest.required: 7"),
    ("Workload", "spec.podSets.0.topologyRequest.unconstrained", "true",
     "topologyRequest.unconstrained: 'true' is not true or false"),
    ("Workload", "spec.podSets.0.topologyRequest.podSetSliceSize", 0,
     "topologyRequest.podSetSliceSize: 0 is not a pod count of 1 or more"),
    ("Workload", "spec.podSets.0.topologyRequest.podsetSliceRequiredTopologyConstraints",
     [{"topology": "r", "size": 1}] * 4, "podsetSliceRequiredTopologyConstraints: 4 layers"),
    ("Workload", "spec.podSets.0.template.spec.affinity",
     {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
         {"matchExpressions": [{"key": "z", "operator": "In", "values": [1]}]}]}}},
     "nodeSelectorTerms[0].matchExpressions[0].values: [1]: each value is a string"),
    ("Workload", f"{BUSY_PSA}.topologyAssignment.levels", KeyError,
     "podSetAssignments[0].topologyAssignment.levels: a list is required"),
    ("Workload", f"{BUSY_PSA}.name", "other", "podSetAssignments[0].name: pod set 'other'"),
    ("Workload", "status.admission", [], "status.admission: list [] is not a mapping"),
]


@pytest.mark.parametrize(("kind", "path", "value", "message"), HOSTILE,
                         ids=[f"{k}-{p}-{v!r}"[:60] for k, p, v, _ in HOSTILE])
def test_a_malformed_object_is_refused_naming_it_and_the_field(kind: str, path: str,
                                                               value: Any, message: str) -> None:
    objects = [o for o in _scenario("required-busy")
               if o["kind"] != "Workload" or o["status"].get("admission")]
    with pytest.raises(InputError) as err:
        tas_input.read(_with(objects, kind, _set(path, value)), "cluster.yaml")
    assert str(err.value).startswith("cluster.yaml: ")
    assert message in str(err.value)


def test_kinds_tas_does_not_read_are_skipped_and_lists_unpacked() -> None:
    objects = [{"apiVersion": "v1", "kind": "List", "items": _scenario("required")},
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]
    assert len(tas_input.read(objects, "l").nodes) == 8
