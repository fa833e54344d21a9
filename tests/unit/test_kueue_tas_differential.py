"""``aiplat.kueue.tas`` against Kueue v0.19.2's own code on 300 random scenarios: Kueue's
answers were recorded by running ``FindTopologyAssignmentsForFlavor`` (the TAS cache,
snapshot and default feasibility checker, feature gates at their defaults) on each one
(``tests/data/kueue_tas/README.md``). Random topologies of one to four levels, nodes
not Ready, unschedulable, tainted or missing a level label, flavor labels and tolerations,
bound, unbound, terminated and TAS pods, admitted usage of this and a sibling flavor, the
empty-cluster simulation, required, preferred, unconstrained and implied requests, slices
and two-layer slices, two pod sets, a leader and its workers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kueue_tas_cases import podset, tas_input

from aiplat.kueue import tas

DATA = Path(__file__).parent.parent / "data" / "kueue_tas" / "random_differential.jsonl"
RECORDS = [json.loads(line) for line in DATA.read_text().splitlines()]


def _shown(result: dict[str, tas.PodSetResult]) -> dict[str, dict[str, Any]]:
    """Our results in the recorded form."""
    out: dict[str, dict[str, Any]] = {}
    for name, r in result.items():
        a = r.assignment
        out[name] = {"hasAssignment": a is not None, "reason": r.reason}
        if a is not None:
            out[name]["levels"] = list(a.levels)
            out[name]["domains"] = [{"values": list(d.values), "count": d.count}
                                    for d in a.domains]
    return out


def _kueue(recorded: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Kueue's, with Go's omitted empty fields put back."""
    out = {}
    for name, r in recorded.items():
        out[name] = {"hasAssignment": r["hasAssignment"], "reason": r["reason"]}
        if r["hasAssignment"]:
            out[name]["levels"] = r.get("levels") or []
            out[name]["domains"] = r.get("domains") or []
    return out


@pytest.mark.parametrize("record", RECORDS, ids=[r["case"]["name"] for r in RECORDS])
def test_agrees_with_kueue(record: dict[str, Any]) -> None:
    case = record["case"]
    got = tas.find_assignments(tas_input(case), tuple(podset(ps) for ps in case["podSets"]),
                               simulate_empty=bool(case.get("simulateEmpty")))
    assert _shown(got) == _kueue(record["kueue"])


def test_the_scenarios_reach_every_outcome() -> None:
    """The recorded answers include placements, each kind of refusal, and groups."""
    reasons = [r["reason"] for rec in RECORDS for r in rec["kueue"].values()]
    assert sum(not r for r in reasons) >= 100
    for start in ("topology \"default\" doesn't allow", 'topology "default" allows to fit only',
                  "no topology domains at level"):
        assert any(r.startswith(start) for r in reasons), start
    assert sum(any(p.get("podSetGroupName") for p in rec["case"]["podSets"])
               for rec in RECORDS) >= 30
