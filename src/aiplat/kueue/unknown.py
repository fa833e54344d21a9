"""What the replay cannot decide: a pending workload that something unmodelled concerns
(a :class:`~aiplat.kueue.snapshot.Gap`: topology-aware scheduling, a field the replay does
not read, a namespaceSelector without the Namespace's labels) is "unknown (feature)", never
decided; so is a workload whose outcome depends on one.

Dependence is found by replaying twice: once with the unknown workloads taken as the
replay's quota rules admit them, once with them never fitting (what the feature may do:
topology-aware scheduling only adds refusals), still queued, so a StrictFIFO head that never
fits still blocks its queue. A workload decided the same both ways is decided; one whose
decision, flavors or counts differ is unknown, naming the workloads it depends on. (Kueue
might also admit an unknown one on other flavors than the quota rules pick; the two runs
bound the common cases, not every one.) Pure.
"""

from __future__ import annotations

import dataclasses

from aiplat.kueue.cycle import Outcome, Replay
from aiplat.kueue.snapshot import TAS, ClusterQueue, Gap, Snapshot, Workload
from aiplat.kueue.tas_input import TasCluster
from aiplat.kueue.tas_world import TasReplay
from aiplat.kueue.timing import decision


def _cohorts_above(snap: Snapshot, cq: ClusterQueue) -> set[str]:
    out: set[str] = set()
    c = cq.cohort
    while c is not None and c not in out:
        out.add(c)
        c = snap.cohorts[c].parent if c in snap.cohorts else None
    return out


def _concerns(g: Gap, wl: Workload, cq: ClusterQueue, cohorts: set[str]) -> bool:
    return (g.everywhere or g.workload == wl.key or g.cluster_queue == cq.name
            or g.cohort in cohorts
            or (g.flavor != "" and any(f.flavor == g.flavor for rg in cq.groups
                                       for f in rg.flavors)))


def unknown_workloads(snap: Snapshot) -> dict[str, str]:
    """The workloads the replay leaves undecided, with the feature: pending ones (an
    admission, a deactivation or a refusal in the snapshot is a fact, not a decision)."""
    out: dict[str, str] = {}
    if not snap.gaps:
        return out
    for wl in snap.workloads:
        if wl.admission is not None or not wl.active or wl.refused:
            continue
        cq = snap.cluster_queues[wl.cluster_queue]
        cohorts = _cohorts_above(snap, cq)
        got = next((g.feature for g in snap.gaps if _concerns(g, wl, cq, cohorts)), None)
        if got is not None:
            out[wl.key] = got
    return out


NEVER = "aiplat.io/never-fits"  # a resource no queue has: the workload is NoFit, queued


def _never_fits(wl: Workload) -> Workload:
    return dataclasses.replace(wl, podsets=tuple(
        dataclasses.replace(ps, requests={**ps.requests, NEVER: 1}) for ps in wl.podsets))


def _replay(snap: Snapshot, cluster: TasCluster | None) -> Replay:
    return Replay(snap) if cluster is None else TasReplay(snap, cluster)


def decide(snap: Snapshot, cycles: int | None = None, cluster: TasCluster | None = None
           ) -> tuple[Replay, list[Outcome]]:
    """The replay and its outcomes, those it cannot decide marked unknown. ``cluster``:
    the topology, nodes and pods (:mod:`aiplat.kueue.tas_input`): TAS then decides where
    it can (:mod:`aiplat.kueue.tas_world`), instead of every TAS workload being unknown."""
    if cluster is not None:
        snap = dataclasses.replace(snap, gaps=[g for g in snap.gaps if g.feature != TAS])
    r = _replay(snap, cluster)
    rows = r.run(cycles)
    unknown = {**unknown_workloads(snap), **(r.unknown if isinstance(r, TasReplay) else {})}
    if not unknown:
        return r, rows
    without = dataclasses.replace(snap, workloads=[
        _never_fits(w) if w.key in unknown else w for w in snap.workloads])
    other = {o.workload: o for o in _replay(without, cluster).run(cycles)}
    tree = _trees(snap)
    for o in rows:
        if o.workload in unknown:
            o.unknown = unknown[o.workload]
        elif decision(o) != decision(other[o.workload]):
            near = [k for k in unknown if tree[k] == tree[o.workload]]
            deps = sorted(near or unknown)  # the unknown ones sharing its quota, else all
            o.unknown = unknown[deps[0]]
            o.depends_on = deps
    return r, rows


def _trees(snap: Snapshot) -> dict[str, str]:
    """Workload -> the root of its ClusterQueue's cohort tree (its queue when alone)."""
    out = {}
    for wl in snap.workloads:
        cq = snap.cluster_queues.get(wl.cluster_queue)
        chain = _cohorts_above(snap, cq) if cq is not None else set()
        top = next((c for c in chain if c not in snap.cohorts
                    or snap.cohorts[c].parent not in chain), None)
        out[wl.key] = top or wl.cluster_queue
    return out


__all__ = ["decide", "unknown_workloads"]
