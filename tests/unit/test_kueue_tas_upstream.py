"""Kueue v0.19.2's own TAS table, ``TestFindTopologyAssignments``
(``pkg/cache/scheduler/tas_cache_test.go``), case by case through ``aiplat.kueue.tas``.

The cases are the upstream table itself, dumped to JSON by Kueue's own test harness (see
``tests/data/kueue_tas/README.md``): the nodes, pods, levels, flavor labels, pod sets and the
assignment or message Kueue's test expects. A case runs here when everything it sets up is
modelled: feature gates at their v0.19 defaults, no failed-node replacement (a Workload
with unhealthy nodes) and no elastic-workload previous assignment; the skipped ones say why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kueue_tas_cases import podset, tas_input

from aiplat.kueue import tas

DATA = Path(__file__).parent.parent / "data" / "kueue_tas" / "find_topology_assignments.json"
CASES: list[dict[str, Any]] = json.loads(DATA.read_text())

# Kueue v0.19's defaults (pkg/features/kube_features.go) for the gates the table sets
DEFAULT_GATES = {
    "TASProfileMixed": True,
    "TASBalancedPlacement": False,
    "TASRespectNodeAffinityPreferred": False,
    "TASMultiLayerTopology": True,
    "TASHandleOverlappingFlavors": True,
    "TASCacheNodeMatchResults": True,
    "TASCachingRemainingResources": True,
    "SchedulerLibraryIntegration": False,
    "ElasticJobsViaWorkloadSlicesWithTAS": False,
    "SkipReassignmentForPodOwnedWorkloads": True,
    "TASFailedNodeReplacement": True,
}


def _why_skipped(case: dict[str, Any]) -> str:
    off = {k: v for k, v in (case.get("featureGates") or {}).items()
           if DEFAULT_GATES.get(k) != v}
    if off:
        return f"feature gates off their v0.19 defaults: {off}"
    if case.get("workload"):
        return "failed-node replacement (a Workload with unhealthy nodes) is not modelled"
    if any(ps.get("previousAssignment") for ps in case["podSets"]):
        return "elastic workload slices are not modelled"
    return ""


def _params() -> list[Any]:
    out = []
    for case in CASES:
        why = _why_skipped(case)
        marks = [pytest.mark.skip(reason=why)] if why else []
        out.append(pytest.param(case, id=case["name"], marks=marks))
    return out


def _want(ps: dict[str, Any]) -> tas.PodSetResult:
    wa = ps.get("wantAssignment")
    assignment = None if wa is None else tas.TopologyAssignment(
        tuple(wa["levels"]),
        tuple(tas.DomainAssignment(tuple(d["values"]), d["count"]) for d in wa["domains"]))
    return tas.PodSetResult(assignment, ps.get("wantReason", ""))


@pytest.mark.parametrize("case", _params())
def test_upstream_case(case: dict[str, Any]) -> None:
    podsets = tuple(podset(ps) for ps in case["podSets"])
    got = tas.find_assignments(tas_input(case), podsets)
    assert got == {ps["name"]: _want(ps) for ps in case["podSets"]}


def test_the_table_is_the_whole_upstream_table() -> None:
    """Every case of Kueue's table is here, and most of them run."""
    assert len(CASES) == 140
    ran = [c for c in CASES if not _why_skipped(c)]
    assert len(ran) == 95
