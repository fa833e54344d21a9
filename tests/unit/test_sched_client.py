"""``sim run`` is a client of Kueue's cycle, not a subclass: it brings the cycle's declared
extension points (``Queues``, ``World``) and touches nothing private of ``aiplat.kueue``."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from aiplat.kueue.cycle import Entry, Flavors, KueueQueues, Pending, Replay
from aiplat.kueue.quota import Admitted
from aiplat.kueue.snapshot import Workload, parse
from aiplat.sched.admission import Admission
from aiplat.sched.buckets import Buckets

SCHED = Path(__file__).resolve().parents[2] / "src" / "aiplat" / "sched"
API = "kueue.x-k8s.io/v1beta2"


def test_sched_imports_nothing_private_from_kueue() -> None:
    private = []
    for path in sorted(SCHED.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aiplat.kueue"):
                private += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert private == []


def test_admission_is_no_replay() -> None:
    assert not issubclass(Admission, Replay)
    assert not issubclass(Buckets, KueueQueues)


class Recorder:
    """A world that keeps its own clock and evicts later, as ``sim run`` does."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.replay: Replay | None = None

    def now(self) -> float:
        return 42.0

    def unplaceable(self, wl: Workload, flavors: Flavors, victims: list[Admitted]) -> str:
        self.calls.append(("unplaceable", wl.key, [v.wl.key for v in victims]))
        return ""

    def admitted(self, wl: Workload, flavors: Flavors) -> None:
        self.calls.append(("admitted", wl.key, flavors))

    def requeued(self, e: Entry) -> None:
        self.calls.append(("requeued", e.p.wl.key, e.p.reason))

    def preempting(self, victim: Admitted, reason: str, by: Workload) -> None:
        self.calls.append(("preempting", victim.wl.key, reason, by.key))

    def evictions_quiet(self, victims: list[str]) -> bool:
        self.calls.append(("quiet", victims))
        return False  # they complete when the caller says so

    def evict(self, victim: Admitted, again: bool) -> None:
        assert self.replay is not None
        self.calls.append(("evict", victim.wl.key, again))
        self.replay.release(victim)
        self.replay.add(Pending(victim.wl), hold=again)


def _objects() -> list[dict[str, Any]]:
    def wl(name: str, prio: int, admitted: bool) -> dict[str, Any]:
        o: dict[str, Any] = {
            "apiVersion": API, "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns", "uid": name,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"queueName": "q", "priority": prio, "podSets": [
                {"name": "main", "count": 1, "template": {"spec": {"containers": [
                    {"name": "c", "resources": {"requests": {"cpu": "4"}}}]}}}]}}
        if admitted:
            o["status"] = {"admission": {"clusterQueue": "q", "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "f"}}]},
                "conditions": [{"type": "QuotaReserved", "status": "True",
                                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        return o
    return [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
            {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": "q"},
             "spec": {"namespaceSelector": {},
                      "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                 {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 4}]}]}],
                 "preemption": {"withinClusterQueue": "LowerPriority"}}},
            {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "ns"},
             "spec": {"clusterQueue": "q"}},
            wl("low", 0, True), wl("high", 10, False)]


def test_the_cycle_asks_its_world_for_time_placement_and_evictions() -> None:
    world = Recorder()
    r = Replay(parse(_objects(), "t"), world=world)
    world.replay = r
    r.until_quiet()
    # the preemptor marks its victim, which keeps its quota until the world says it stopped
    assert ("unplaceable", "ns/high", ["ns/low"]) in world.calls
    assert ("preempting", "ns/low", "InClusterQueue", "ns/high") in world.calls
    assert ("quiet", ["ns/low"]) in world.calls
    assert "ns/low" in r.tree.cqs["q"].workloads
    assert not any(c[0] == "admitted" for c in world.calls)
    r.evicted("ns/low")  # its pods stopped: the world releases and requeues it
    r.until_quiet()
    assert ("evict", "ns/low", False) in world.calls
    got = r.tree.cqs["q"].workloads["ns/high"]
    assert got.reserved_at == 42.0  # the world's clock, not the cycle count
    assert ("admitted", "ns/high", {"main": {"cpu": "f"}}) in world.calls
