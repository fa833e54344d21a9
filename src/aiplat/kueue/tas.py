"""Kueue v0.19's topology-aware scheduling (TAS): where a pod set's pods go in a topology.

``pkg/cache/scheduler/tas_flavor_snapshot.go`` ``FindTopologyAssignmentsForFlavor``, on the
tree and capacities of ``tas_topology_tree.go``, ``tas_flavor.go``, ``tas_nodes_cache.go``
and ``tas_non_tas_pod_cache.go``, with the feature gates at their v0.19 defaults:

- the tree: the flavor's nodes (its ``nodeLabels``, every level label present; a node that
  is not Ready or is ``unschedulable`` is dropped, ``SchedulerLibraryIntegration`` being
  off), one domain per distinct value path, leaves keyed by hostname when it is the lowest
  level; a leaf's capacity is its nodes' allocatable minus the requests (and one ``pods``
  each) of the non-TAS pods bound to them and of the TAS workloads already admitted there
  (summed over every hostname-level flavor: ``TASHandleOverlappingFlavors``);
- node filters, only when the lowest level is the hostname: an untolerated ``NoSchedule``
  or ``NoExecute`` taint (the pod's and the flavor's tolerations), the pod's
  ``nodeSelector``, its required node affinity; preferred affinity is ignored
  (``TASRespectNodeAffinityPreferred`` is off);
- placement (``tas_place``): required, preferred (climbing to the levels above) or
  unconstrained, BestFit, or LeastFreeCapacity for unconstrained (``TASProfileMixed``),
  slices and multi-layer slices (``TASMultiLayerTopology``), a leader and its workers
  grouped by ``podSetGroupName``; balanced placement is off (``TASBalancedPlacement``).

``admitted_domains`` reads an admitted Workload's ``topologyAssignment`` (v1beta1 or
v1beta2) back as the usage it holds.

Not modelled here (a caller answers "unknown" for them): failed-node replacement
(``status.unhealthyNodes``), elastic workload slices, delayed topology requests
(ProvisioningRequest, MultiKueue), pod set updates from admission checks (pass them merged),
the scheduler-library integration. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiplat.kueue import tas_place, tas_tree
from aiplat.kueue.tas_admitted import admitted_domains
from aiplat.kueue.tas_model import (
    HOSTNAME,
    TAS_ANNOTATIONS,
    AdmittedDomain,
    DomainAssignment,
    Node,
    PlacedPod,
    PodSetRequest,
    PodSetResult,
    Requirement,
    SliceLayer,
    Taint,
    TasFlavor,
    TasInput,
    Toleration,
    TopologyAssignment,
    TopologyRequest,
)

__all__ = [
    "HOSTNAME",
    "TAS_ANNOTATIONS",
    "AdmittedDomain",
    "DomainAssignment",
    "Node",
    "PlacedPod",
    "PodSetRequest",
    "PodSetResult",
    "Requirement",
    "SliceLayer",
    "Taint",
    "TasFlavor",
    "TasInput",
    "Toleration",
    "TopologyAssignment",
    "TopologyRequest",
    "admitted_domains",
    "find_assignments",
    "find_for_workload",
]


def find_assignments(inp: TasInput, podsets: tuple[PodSetRequest, ...], *,
                     simulate_empty: bool = False) -> dict[str, PodSetResult]:
    """``FindTopologyAssignmentsForFlavor``: each pod set (or leader/worker group) in turn,
    each later one seeing what the earlier ones took; stops at the first that does not fit,
    so the pod sets after it have no result. ``simulate_empty``: as if every admitted TAS
    workload were gone (the preemption search's first question)."""
    return _for_flavor(inp, podsets, {}, simulate_empty)


def find_for_workload(requests: Mapping[str, tuple[TasInput, tuple[PodSetRequest, ...]]], *,
                      simulate_empty: bool = False) -> dict[str, tuple[str, PodSetResult]]:
    """``FindTopologyAssignmentsForWorkload``: a workload's pod sets, by TAS flavor (in
    name order); pod set name -> (flavor, result). Flavors whose lowest level is the
    hostname share what the earlier ones took (``TASHandleOverlappingFlavors``). Kueue's
    flavor assigner asks this for a workload whose quota fits (a failure turns it into
    Preempt), then again with ``simulate_empty`` (a failure there is NoFit)."""
    shared: dict[str, dict[str, int]] = {}
    out: dict[str, tuple[str, PodSetResult]] = {}
    for name in sorted(requests):
        inp, podsets = requests[name]
        on_hosts = bool(inp.flavor.levels) and inp.flavor.levels[-1] == HOSTNAME
        got = _for_flavor(inp, podsets, shared if on_hosts else {}, simulate_empty)
        out.update({ps: (name, r) for ps, r in got.items()})
    return out


def _for_flavor(inp: TasInput, podsets: tuple[PodSetRequest, ...],
                assumed: dict[str, dict[str, int]], simulate_empty: bool
                ) -> dict[str, PodSetResult]:
    tree = tas_tree.build(inp)
    result: dict[str, PodSetResult] = {}
    for group in _groups(podsets):
        workers, leader = _leader_and_workers(group)
        got, reason = tas_place.place(tree, workers, leader, assumed, simulate_empty)
        for ps in group:
            result[ps.name] = PodSetResult(got.get(ps.name), reason)
        if reason:
            return result
        for ps in group:
            tas_tree.add_usage(assumed, got[ps.name], ps.requests)
    return result


def _groups(podsets: tuple[PodSetRequest, ...]) -> list[list[PodSetRequest]]:
    """Pod sets sharing a ``podSetGroupName`` are placed together, in first-seen order."""
    groups: dict[str, list[PodSetRequest]] = {}
    for i, ps in enumerate(podsets):
        key = ps.topology.group if ps.topology and ps.topology.group is not None else str(i)
        groups.setdefault(key, []).append(ps)
    return list(groups.values())


def _leader_and_workers(group: list[PodSetRequest]) -> tuple[PodSetRequest,
                                                            PodSetRequest | None]:
    """``findLeaderAndWorkers``: of two grouped pod sets the smaller one leads."""
    if len(group) == 1:
        return group[0], None
    workers, leader = group[0], group[1]
    if leader.count > workers.count:
        return leader, workers
    return workers, leader
