"""The replay with topology-aware scheduling: Kueue's flavor assigner asks TAS where a
workload whose quota fits would go (``pkg/scheduler/flavorassigner``: ``assignFlavors``
calls ``FindTopologyAssignmentsForWorkload``), on :mod:`aiplat.kueue.tas` over the
cluster's Topologies, Nodes and Pods (:mod:`aiplat.kueue.tas_input`).

Through the cycle's placement extension point (``World.unplaceable``): a workload whose
quota fits and whose pod sets TAS places is admitted, its pods' domains then taken for the
workloads after it (``with_admitted``); one TAS cannot place even on an empty topology
(``simulate_empty``) is NoFit with TAS's message, as in Kueue. What TAS leaves to a
preemption Kueue would search by topology (fits empty, not now; or a quota preemption
whose victims' domains would be freed), what ``tas_input`` does not model, and placements
after the eviction of a workload holding topology domains are not decided: the workload is
named in ``unknown`` ("unknown (feature)", :mod:`aiplat.kueue.unknown`). Pure.
"""

from __future__ import annotations

from aiplat.kueue import tas
from aiplat.kueue.cycle import Flavors, Replay
from aiplat.kueue.quota import Admitted
from aiplat.kueue.snapshot import TAS, Snapshot, Workload
from aiplat.kueue.tas_input import TasCluster, requests_for, with_admitted

PREEMPTION = "topology-aware preemption"


class TasReplay(Replay):
    """:class:`~aiplat.kueue.cycle.Replay` whose placement is Kueue's TAS."""

    def __init__(self, snap: Snapshot, cluster: TasCluster) -> None:
        self.cluster = cluster
        self.unknown: dict[str, str] = {}  # workload -> what TAS leaves undecided
        self._placed: dict[str, dict[str, tuple[str, tas.PodSetResult]]] = {}
        self._stale = False  # an evicted workload's domains are still counted
        super().__init__(snap)

    def unplaceable(self, wl: Workload, flavors: Flavors, victims: list[Admitted]) -> str:
        if wl.key not in self.cluster.workloads:
            return ""
        asks = requests_for(self.cluster, wl.key, flavors, self.placing or None)
        if not asks.by_flavor and not asks.errors:
            return ""  # no pod set TAS places
        if asks.not_modelled:
            self.unknown[wl.key] = f"{TAS}: {'; '.join(asks.not_modelled)}"
            return ""
        if asks.errors:
            name, message = next(iter(sorted(asks.errors.items())))
            return f"couldn't assign flavors to pod set {name}: {message}"
        empty = _failure(tas.find_for_workload(asks.by_flavor, simulate_empty=True))
        if empty:
            return empty  # not even on an empty topology: NoFit
        if victims or self._stale:
            self.unknown[wl.key] = PREEMPTION if victims else TAS
            return ""
        got = tas.find_for_workload(asks.by_flavor)
        now = _failure(got)
        if now:  # Kueue would look for victims by topology
            self.unknown[wl.key] = PREEMPTION
            return now
        self._placed[wl.key] = got
        return ""

    def admitted(self, wl: Workload, flavors: Flavors) -> None:
        super().admitted(wl, flavors)
        got = self._placed.pop(wl.key, None)
        if got is not None:
            self.cluster = with_admitted(self.cluster, wl.key, got)

    def evict(self, victim: Admitted, again: bool) -> None:
        tw = self.cluster.workloads.get(victim.wl.key)
        if tw is not None and (any(ps.explicit for ps in tw.podsets)
                               or self.cluster.tas_only.get(tw.cluster_queue, False)):
            self._stale = True  # its domains are not released here: later placements unknown
        super().evict(victim, again)


def _failure(got: dict[str, tuple[str, tas.PodSetResult]]) -> str:
    for name, (_, r) in got.items():
        if r.reason:
            return f"couldn't assign flavors to pod set {name}: {r.reason}"
    return ""
