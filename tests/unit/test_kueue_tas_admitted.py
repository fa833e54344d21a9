"""``aiplat.kueue.tas.admitted_domains``: an admitted Workload's topologyAssignment read back as the
usage it holds, on the four examples of Kueue v0.19.2's API documentation
(``apis/kueue/v1beta2/workload_types.go``, ``PodSetAssignment.topologyAssignment``,
Examples 1-4, transcribed) and the v1beta1 form (``apis/kueue/v1beta1``: ``domains``)."""

from __future__ import annotations

import re

import pytest

from aiplat.kueue import tas

BLOCK, RACK = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"
EXAMPLE_1 = {"levels": [BLOCK, RACK], "slices": [{
    "domainCount": 2,
    "valuesPerLevel": [{"individual": {"roots": ["block-1", "block-1"]}},
                       {"individual": {"roots": ["rack-1", "rack-2"]}}],
    "podCounts": {"individual": [4, 2]}}]}
EXAMPLE_2 = {"levels": [BLOCK, RACK], "slices": [{
    "domainCount": 2,
    "valuesPerLevel": [{"universal": "block-1"},
                       {"individual": {"prefix": "rack-", "roots": [1, 2]}}],  # as YAML reads them
    "podCounts": {"individual": [4, 2]}}]}
NODES = ["1-node-1", "1-node-2", "1-node-3", "1-node-4", "2-node-1", "2-node-2"]
EXAMPLE_3 = {"levels": [tas.HOSTNAME], "slices": [{
    "domainCount": 6, "valuesPerLevel": [{"individual": {"prefix": "block-1-rack-",
                                                         "roots": NODES}}],
    "podCounts": {"universal": 1}}]}
EXAMPLE_4 = {"levels": [tas.HOSTNAME], "slices": [
    {"domainCount": 4, "valuesPerLevel": [{"individual": {"prefix": "block-1-rack-1-node-",
                                                          "roots": ["1", "2", "3", "4"]}}],
     "podCounts": {"universal": 1}},
    {"domainCount": 2, "valuesPerLevel": [{"individual": {"prefix": "block-1-rack-2-node-",
                                                          "roots": ["1", "2"]}}],
     "podCounts": {"universal": 1}}]}
V1BETA1 = {"levels": [BLOCK, RACK], "domains": [{"values": ["block-1", "rack-1"], "count": 4},
                                                {"values": ["block-1", "rack-2"], "count": 2}]}


def _domains(ta: dict[str, object]) -> list[tuple[tuple[str, ...], int]]:
    return [(d.values, d.count) for d in tas.admitted_domains(["f"], ta, {"cpu": 1000})]


def test_the_documented_encodings_read_back_as_the_same_domains() -> None:
    racks = [(("block-1", "rack-1"), 4), (("block-1", "rack-2"), 2)]
    assert _domains(EXAMPLE_1) == racks
    assert _domains(EXAMPLE_2) == racks
    assert _domains(V1BETA1) == racks
    hosts = [((f"block-1-rack-{n}",), 1) for n in NODES]
    assert _domains(EXAMPLE_3) == hosts
    assert _domains(EXAMPLE_4) == hosts


def test_each_distinct_flavor_of_the_pod_set_holds_the_usage() -> None:
    """``TASUsage``: the pod set's usage goes to every distinct flavor it was assigned."""
    got = tas.admitted_domains(["tas", "tas", "cpu-only"], V1BETA1, {"cpu": 1000})
    assert sorted({d.flavor for d in got}) == ["cpu-only", "tas"]
    assert len(got) == 4


def test_admitted_usage_takes_its_nodes_capacity() -> None:
    """Example 3's pods, one per node, leave room for one more 1-CPU pod on each 2-CPU
    node: a required-hostname pod set of 2 does not fit, and says why."""
    nodes = tuple(tas.Node(f"block-1-rack-{n}", {tas.HOSTNAME: f"block-1-rack-{n}"},
                           {"cpu": 2000, "pods": 10}) for n in NODES)
    flavor = tas.TasFlavor("f", "default", (tas.HOSTNAME,))
    used = tas.admitted_domains(["f"], EXAMPLE_3, {"cpu": 1000})
    ps = (tas.PodSetRequest("main", 2, {"cpu": 1000}, tas.TopologyRequest(required=tas.HOSTNAME)),)
    got = tas.find_assignments(tas.TasInput(flavor, nodes, (), used), ps)
    assert got["main"].reason == 'topology "default" allows to fit only 1 out of 2 pod(s)'


@pytest.mark.parametrize(("ta", "message"), [
    ({"levels": [BLOCK]}, "topologyAssignment.slices: a list is required"),
    ({"levels": [BLOCK], "slices": [{"domainCount": 2, "valuesPerLevel": [{"individual": {
        "roots": ["a"]}}], "podCounts": {"universal": 1}}]},
     "topologyAssignment.slices[0].valuesPerLevel[0].individual.roots: 1 roots, domain 1 asked"),
    ({"levels": [BLOCK, RACK], "slices": [{"domainCount": 1, "valuesPerLevel": [
        {"universal": "a"}], "podCounts": {"universal": 1}}]},
     "topologyAssignment.slices[0].valuesPerLevel: 1 entries for 2 levels"),
    ({"levels": [BLOCK], "domains": [{"values": ["a"], "count": -1}]},
     "topologyAssignment.domains[0].count: a non-negative integer is required, not -1"),
])
def test_a_malformed_assignment_names_the_field(ta: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        tas.admitted_domains(["f"], ta, {"cpu": 1000})
