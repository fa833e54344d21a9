"""sim replay with topology-aware scheduling wired in (``kueue/tas_world.py``): on Kueue's
TAS site examples as Kueue v0.19.2's own scheduler decided them (the scenarios and results
recorded in tests/data/kueue_tas/objects, see its README), the replay admits what Kueue
admitted, on the same flavors, and keeps pending what it kept, with Kueue's message; without
the cluster's Nodes and Pods the same workloads are unknown, never guessed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_kueue_tas_input import RESULTS, SCENARIOS, _scenario

from aiplat.cli.main import cli
from aiplat.kueue.snapshot import parse
from aiplat.kueue.unknown import decide
from aiplat.ops import kueue_input

Obj = dict[str, Any]


def _replay(objs: list[Obj], name: str, pods_listed: bool = True) -> Any:
    """The replay of ``objs``; ``pods_listed``: the snapshot lists the cluster's Pods (an
    idle cluster's list is empty)."""
    items = [(name, o) for o in objs]
    snap = kueue_input.read(items, name, lambda ob: parse(ob, name), "x")
    return decide(snap, None, kueue_input.tas_cluster(items, name, pods_listed=pods_listed))[1]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_tas_examples_are_decided_as_kueue_decided_them(name: str) -> None:
    key = SCENARIOS[name]["pending"]
    row = next(o for o in _replay(_scenario(name), name) if o.workload == key)
    kueue = RESULTS[name]
    psas = (kueue.get("admission") or {}).get("podSetAssignments") or []
    if psas:
        assert row.shown == "admitted", row
        assert row.flavors == {p["name"]: p["flavors"] for p in psas}
    else:
        (cond,) = [c for c in kueue["conditions"] if c["type"] == "QuotaReserved"]
        assert row.shown == "pending", row
        assert row.message == cond["message"]


def test_without_the_clusters_pod_list_tas_is_unknown() -> None:
    """No Pod list at all (not an empty one): what the nodes' other pods take is unknown."""
    name = next(n for n in sorted(SCENARIOS) if RESULTS[n].get("admission"))
    objs = [o for o in _scenario(name) if o["kind"] != "Pod"]
    rows = _replay(objs, name, pods_listed=False)
    row = next(o for o in rows if o.workload == SCENARIOS[name]["pending"])
    assert row.shown == "unknown (topology-aware scheduling)"


def _sample(tmp_path: Path) -> Path:
    out = tmp_path / "snap"
    r = CliRunner().invoke(cli, ["samples", "get", "snapshot-tas-rack-too-small", "-d",
                                  str(out)])
    assert r.exit_code == 0, r.output
    return out


def _recorded(snap: Path, name: str) -> str:
    wl = next(w for w in json.loads((snap / "workloads.json").read_text())["items"]
              if w["metadata"]["name"].startswith(f"job-{name}-"))
    (cond,) = [c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved"]
    return str(cond["message"])


def test_an_idle_clusters_tas_is_decided_with_kueues_message(tmp_path: Path) -> None:
    """The sample's Pod list is empty (an idle cluster): TAS is decided, and the replay's
    message is the one the sample records as Kueue's (a required rack of 2 nodes, 8 GPUs
    each, for 3 whole-node pods: Kueue v0.19.2 says it "allows to fit only 2 out of 3")."""
    snap = _sample(tmp_path)
    r = CliRunner().invoke(cli, ["sim", "replay", str(snap), "-o", "json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["decision"] == "pending", row
    assert row["message"] == _recorded(snap, "pretrain-big")
    assert "allows to fit only 2 out of 3 pod(s)" in row["message"]
    assert "topology-aware" not in r.stderr


def test_a_snapshot_without_pods_json_says_tas_lacks_the_pod_list(tmp_path: Path) -> None:
    snap = _sample(tmp_path)
    (snap / "pods.json").unlink()
    r = CliRunner().invoke(cli, ["sim", "replay", str(snap), "-o", "json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["decision"] == "unknown (topology-aware scheduling)"
    assert "no Pod list in the snapshot" in r.stderr, r.stderr
    assert "not replayed" not in r.stderr.split("namespaceSelector")[0], r.stderr


def test_why_pending_decides_tas_on_an_idle_cluster(tmp_path: Path) -> None:
    from aiplat.kube import load_snapshot
    from aiplat.ops.why_pending import explain

    snap = _sample(tmp_path)
    a = explain(load_snapshot(snap), "pretrain-big", "research")
    assert a.kueue is not None and a.kueue.decision == "pending", a
    assert a.kueue.message == _recorded(snap, "pretrain-big")


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


def test_why_pending_without_a_pod_list_says_so(tmp_path: Path) -> None:
    from aiplat.kube import load_snapshot
    from aiplat.ops.why_pending import explain

    snap = _sample(tmp_path)
    (snap / "pods.json").unlink()
    a = explain(load_snapshot(snap), "pretrain-big", "research")
    assert a.kueue is not None and a.kueue.unknown == "topology-aware scheduling", a
    line = next(x for x in a.evidence if x.startswith("replay of Kueue's cycle"))
    assert "no Pod list in the snapshot" in line and "not modelled" not in line, line
    assert "is not replayed" not in line, line
    assert "no Pod list" in a.as_dict()["replay"]["unknownWhy"]
