"""Topology-aware scheduling as the real Kueue v0.19.2 decided it on generated scenarios
(``bench/kueue_diff.py --tas``: a lab control plane, kwok nodes in blocks and racks): each
recorded snapshot, replayed, gives every workload Kueue's admission, flavors and, for the
workloads the replay admits, Kueue's topology domains; none is left "unknown (feature)".

The cases are those that showed what the replay lacked: a pending TAS workload whose pods
fit only once lower-priority ones go (Kueue's preemption asks TAS for each victim set), an
evicted workload's domains given back, and a placement found at nomination that an earlier
head of the cycle took (Kueue assigns the workload again). The ``fair-*`` cases ran on Kueue
with fair sharing (``--tas --fair``): quota preemptors whose victims would not free the
domains their pods need, and pods that fit the topology only without other workloads'
domains: Kueue's fair-sharing victim search asks TAS as the classic one does, finds no
candidates and leaves them pending (the replay left them "unknown" before); and a flavor
scan that resumes across cycles, which fair sharing's shares must not outdate
(``fair-seed5``, see ``test_kueue_generation.py``). ``fair-seed21``: a head whose nominated
pod set borrowed a flavor an earlier head of the cycle then took, in quota and in domains;
Kueue checks the quota first and skips it ("no longer fits"), with no new assignment, and
admits it a cycle later beside another queue's head, both on the same node (its in-cycle
check takes each pod set's domains on their own); assigned again at once, it left that
node to the other head, and a third workload no room (Kueue's log at ``--zap-log-level=4``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aiplat.kueue.snapshot import parse
from aiplat.kueue.tas_world import TasReplay
from aiplat.kueue.unknown import decide
from aiplat.ops.kueue_input import tas_cluster

DATA = Path(__file__).resolve().parents[1] / "data" / "kueue_tas_live"
CASES = sorted(p.stem for p in DATA.glob("*.json"))


def _replay(case: str) -> tuple[dict[str, Any], TasReplay, dict[str, Any]]:
    data = json.loads((DATA / f"{case}.json").read_text())
    objs = data["snapshot"]
    cluster = tas_cluster([(case, o) for o in objs], case, pods_listed=True)
    assert cluster is not None
    r, outcomes = decide(parse(objs, case), cluster=cluster)
    assert isinstance(r, TasReplay)
    return data["kueue"], r, {o.workload.split("/", 1)[1]: o for o in outcomes}


@pytest.mark.parametrize("case", CASES)
def test_replay_decides_as_kueue(case: str) -> None:
    kueue, r, sim = _replay(case)
    for name, want in kueue.items():
        o = sim[name]
        assert not o.unknown, (name, o.unknown)
        assert (o.decision == "admitted") == want["admitted"], (name, o.decision, o.message)
        if want["admitted"]:
            assert o.flavors == want["flavors"], name
        if o.decision == "admitted" and o.cycle is not None:  # placed by the replay
            got = {ps: sorted([list(d.values), d.count] for d in a.domains)
                   for ps, a in r.assignments.get(f"default/{name}", {}).items()}
            assert got == {ps: sorted(d) for ps, d in want["topology"].items()}, name



def test_pods_no_empty_topology_fits_are_nofit_at_nomination() -> None:
    """``open/fair-seed18`` (one run on Kueue with fair sharing, its log at
    ``--zap-log-level=4``): workloads whose pods fit the flavor's topology not even empty
    are NoFit at nomination, as Kueue's flavor assigner makes them, so they end on the
    message of Kueue's check against the cluster as it is (``allows to fit only 1 out of
    3``, ``excluded: resource "cpu": 4``), word for word; decided at processing instead, the
    replay wrote the empty topology's message, and a head the quota no longer fitted was
    skipped and requeued at once (w08 in Kueue's cycle 2: NoFit, so w02 was its queue's head
    in cycle 3). The snapshot sits apart from ``CASES``: this seed's outcome varies between
    Kueue's runs, and where w00's preemption differs here w03 ends on another node (why is
    not settled: pinning the replay's in-cycle reassignment to the nominated flavors, as
    Kueue's nomination mapping does, left 4 of the 12 workloads apart instead of 1)."""
    data = json.loads((DATA / "open" / "fair-seed18.json").read_text())
    objs = data["snapshot"]
    cluster = tas_cluster([("seed18", o) for o in objs], "seed18", pods_listed=True)
    _, outcomes = decide(parse(objs, "seed18"), cluster=cluster)
    sim = {o.workload.split("/", 1)[1]: o for o in outcomes}
    topo = {n: w["message"] for n, w in data["kueue"].items() if "topology" in w["message"]}
    assert len(topo) == 3
    assert {n: sim[n].message for n in topo} == topo
