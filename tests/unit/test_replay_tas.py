"""sim replay with topology-aware scheduling wired in (``kueue/tas_world.py``): on Kueue's
TAS site examples as Kueue v0.19.2's own scheduler decided them (the scenarios and results
recorded in tests/data/kueue_tas/objects, see its README), the replay admits what Kueue
admitted, on the same flavors, and keeps pending what it kept, with Kueue's message; without
the cluster's Nodes and Pods the same workloads are unknown, never guessed."""

from __future__ import annotations

from typing import Any

import pytest
from test_kueue_tas_input import RESULTS, SCENARIOS, _scenario

from aiplat.kueue.snapshot import parse
from aiplat.kueue.unknown import decide
from aiplat.ops import kueue_input

Obj = dict[str, Any]
# A pod on no node: the snapshot holds the cluster's Pods (here none run on the TAS nodes).
IDLE: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "idle", "namespace": "x"},
             "spec": {"containers": [{"name": "c", "image": "x"}]},
             "status": {"phase": "Pending"}}


def _replay(objs: list[Obj], name: str) -> Any:
    items = [(name, o) for o in objs]
    snap = kueue_input.read(items, name, lambda ob: parse(ob, name), "x")
    return decide(snap, None, kueue_input.tas_cluster(items, name))[1]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_tas_examples_are_decided_as_kueue_decided_them(name: str) -> None:
    key = SCENARIOS[name]["pending"]
    objs = _scenario(name)
    if not any(o["kind"] == "Pod" for o in objs):
        objs.append(IDLE)
    row = next(o for o in _replay(objs, name) if o.workload == key)
    kueue = RESULTS[name]
    psas = (kueue.get("admission") or {}).get("podSetAssignments") or []
    if psas:
        assert row.shown == "admitted", row
        assert row.flavors == {p["name"]: p["flavors"] for p in psas}
    else:
        (cond,) = [c for c in kueue["conditions"] if c["type"] == "QuotaReserved"]
        assert row.shown == "pending", row
        assert row.message == cond["message"]


def test_without_the_clusters_pods_tas_is_unknown() -> None:
    name = next(n for n in sorted(SCENARIOS) if RESULTS[n].get("admission"))
    objs = [o for o in _scenario(name) if o["kind"] != "Pod"]
    row = next(o for o in _replay(objs, name) if o.workload == SCENARIOS[name]["pending"])
    assert row.shown == "unknown (topology-aware scheduling)"


_LISTS = {"Topology": "topologies", "ResourceFlavor": "resourceflavors",
          "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues", "Workload": "workloads",
          "Node": "nodes", "Pod": "pods"}


@pytest.mark.parametrize("name", ["required-busy", "required-nofit"])
def test_why_pendings_replay_decides_topology_as_kueue_did(name: str) -> None:
    from aiplat.kube import snapshot_from_lists
    from aiplat.ops.why_pending import next_cycles

    lists: dict[str, list[Obj]] = {}
    for o in _scenario(name):
        lists.setdefault(_LISTS[o["kind"]], []).append(o)
    k = next_cycles(snapshot_from_lists(lists), SCENARIOS[name]["pending"])
    assert not k.unknown, k
    kueue = RESULTS[name]
    if kueue.get("admission"):
        assert k.decision == "admitted"
    else:
        (cond,) = [c for c in kueue["conditions"] if c["type"] == "QuotaReserved"]
        assert (k.decision, k.message) == ("pending", cond["message"])
