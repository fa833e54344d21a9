"""``aiplat.kueue.tas`` on what Kueue's table (test_kueue_tas_upstream.py) does not set up:
TAS pods and their admitted workloads' usage, the preemption search's empty cluster, taint
effects and toleration operators, required node affinity, the flavor's tolerations. Each
expectation is Kueue v0.19's rule, named in the test."""

from __future__ import annotations

from aiplat.kueue import tas

BLOCK, RACK, HOST = "cloud.com/topology-block", "cloud.com/topology-rack", tas.HOSTNAME


def _node(name: str, cpu: int = 1000, **labels: str) -> tas.Node:
    return tas.Node(name, {HOST: name, **labels}, {"cpu": cpu, "pods": 10})


def _flavor(levels: tuple[str, ...] = (HOST,), **kw: object) -> tas.TasFlavor:
    return tas.TasFlavor("tas", "default", levels, **kw)  # type: ignore[arg-type]


def _one(count: int = 1, cpu: int = 1000, req: tas.TopologyRequest | None = None,
         **kw: object) -> tuple[tas.PodSetRequest, ...]:
    req = req or tas.TopologyRequest(required=HOST)
    return (tas.PodSetRequest("main", count, {"cpu": cpu}, req, **kw),)  # type: ignore[arg-type]


def _hosts(result: dict[str, tas.PodSetResult]) -> dict[str, int] | str:
    r = result["main"]
    if r.assignment is None:
        return r.reason
    return {d.values[-1]: d.count for d in r.assignment.domains}


def test_a_tas_pod_is_charged_through_its_workload_not_as_a_pod() -> None:
    """``belongsToNonTASCache``: a pod with a TAS annotation is left out of the node's
    non-TAS usage (its workload's assignment counts instead), so is an unbound one."""
    tas_pod = tas.PlacedPod("x1", {"cpu": 1000}, "Running",
                            {"kueue.x-k8s.io/podset-required-topology": HOST})
    unbound = tas.PlacedPod("", {"cpu": 1000}, "Pending")
    inp = tas.TasInput(_flavor(), (_node("x1"),), (tas_pod, unbound))
    assert _hosts(tas.find_assignments(inp, _one())) == {"x1": 1}
    plain = tas.PlacedPod("x1", {"cpu": 1000}, "Pending")
    inp = tas.TasInput(_flavor(), (_node("x1"),), (plain,))
    assert _hosts(tas.find_assignments(inp, _one())) == (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). '
        'Total nodes: 1; excluded: resource "cpu": 1')


def test_admitted_usage_counts_by_hostname_across_flavors_and_simulate_empty_drops_it() -> None:
    """``TASHandleOverlappingFlavors``: a hostname-level topology sees every hostname-level
    flavor's admitted pods; ``WithSimulateEmpty`` (the preemption search) sees none."""
    admitted = (tas.AdmittedDomain("other", (HOST,), ("x1",), 1, {"cpu": 600}),)
    inp = tas.TasInput(_flavor(), (_node("x1"), _node("x2", cpu=500)), (), admitted)
    assert _hosts(tas.find_assignments(inp, _one(cpu=500))) == {"x2": 1}
    assert _hosts(tas.find_assignments(inp, _one(cpu=600))).startswith(
        'topology "default" doesn\'t allow to fit any of 1 pod(s)')
    assert _hosts(tas.find_assignments(inp, _one(cpu=600), simulate_empty=True)) == {"x1": 1}


def test_a_rack_level_topology_sees_only_its_own_flavors_usage() -> None:
    """Below-hostname usage is kept per flavor: another flavor's pods on the same rack do
    not count (``snapshotTopologyDomainUsages`` skips non-hostname topologies)."""
    nodes = (tas.Node("n1", {BLOCK: "b1", RACK: "r1"}, {"cpu": 1000, "pods": 10}),)
    levels = (BLOCK, RACK)
    ps = (tas.PodSetRequest("main", 1, {"cpu": 1000}, tas.TopologyRequest(required=RACK)),)
    other = tas.AdmittedDomain("other", levels, ("b1", "r1"), 1, {"cpu": 1000})
    own = tas.AdmittedDomain("tas", levels, ("b1", "r1"), 1, {"cpu": 1000})
    free = tas.find_assignments(tas.TasInput(_flavor(levels), nodes, (), (other,)), ps)
    assert free["main"].assignment == tas.TopologyAssignment(
        levels, (tas.DomainAssignment(("b1", "r1"), 1),))
    full = tas.find_assignments(tas.TasInput(_flavor(levels), nodes, (), (own,)), ps)
    assert full["main"].reason.startswith('topology "default" doesn\'t allow to fit any')


def test_taint_effects_and_toleration_operators() -> None:
    """``IsSchedulingTaint``: NoSchedule and NoExecute exclude a node, PreferNoSchedule
    does not; ``ToleratesTaint``: Exists with an empty key tolerates all, Gt compares
    integers; the flavor's tolerations count beside the pod's."""
    soft = tas.Node("soft", {HOST: "soft"}, {"cpu": 1000, "pods": 10},
                    (tas.Taint("a", "PreferNoSchedule"),))
    hard = tas.Node("hard", {HOST: "hard"}, {"cpu": 2000, "pods": 10},
                    (tas.Taint("gen", "NoExecute", "5"),))
    inp = tas.TasInput(_flavor(), (soft, hard))
    assert _hosts(tas.find_assignments(inp, _one())) == {"soft": 1}
    assert _hosts(tas.find_assignments(inp, _one(2))) == (
        'topology "default" allows to fit only 1 out of 2 pod(s). '
        'Total nodes: 2; excluded: taint "gen=5:NoExecute": 1')
    for tol in (tas.Toleration(operator="Exists"), tas.Toleration("gen", "Gt", "4")):
        assert _hosts(tas.find_assignments(inp, _one(2, tolerations=(tol,)))) == {"hard": 2}
    assert _hosts(tas.find_assignments(inp, _one(2, tolerations=(
        tas.Toleration("gen", "Gt", "5"),)))).startswith('topology "default" allows')
    flavored = tas.TasInput(_flavor(tolerations=(tas.Toleration("gen", "Exists"),)),
                            (soft, hard))
    assert _hosts(tas.find_assignments(flavored, _one(2))) == {"hard": 2}


def test_required_node_affinity_terms_are_ored_and_requirements_anded() -> None:
    """``nodeaffinity.NodeSelector``: a node matching one term passes; an empty term
    matches nothing; ``matchFields`` reads the node's name."""
    nodes = (_node("x1", zone="a"), _node("x2", zone="b"), _node("x3"))
    inp = tas.TasInput(_flavor(), nodes)
    zone_b = (tas.Requirement("zone", "In", ("b",)),)
    by_name = (tas.Requirement("metadata.name", "In", ("x3",), field=True),)
    spread = tas.TopologyRequest(unconstrained=True)
    got = tas.find_assignments(inp, _one(2, req=spread, affinity=(zone_b, by_name)))
    assert _hosts(got) == {"x2": 1, "x3": 1}
    got = tas.find_assignments(inp, _one(1, affinity=((),)))
    assert _hosts(got) == ('topology "default" doesn\'t allow to fit any of 1 pod(s). '
                           "Total nodes: 3; excluded: affinity: 3")
    not_a = ((tas.Requirement("zone", "NotIn", ("a",)),
              tas.Requirement("zone", "Exists")),)
    assert _hosts(tas.find_assignments(inp, _one(1, affinity=not_a))) == {"x2": 1}


def test_a_topology_request_naming_no_level_is_refused_unless_implied() -> None:
    """``levelKeyWithImpliedFallback``: no level and not implied is Kueue's "topology level
    not specified"; implied TAS takes the lowest level, unconstrained."""
    inp = tas.TasInput(_flavor(), (_node("x1"), _node("x2")))
    bare = (tas.PodSetRequest("main", 2, {"cpu": 1000}, tas.TopologyRequest()),)
    assert tas.find_assignments(inp, bare)["main"].reason == "topology level not specified"
    implied = (tas.PodSetRequest("main", 2, {"cpu": 1000}, None, implied=True),)
    assert _hosts(tas.find_assignments(inp, implied)) == {"x1": 1, "x2": 1}


def test_a_workloads_hostname_level_flavors_see_each_others_placements() -> None:
    """``FindTopologyAssignmentsForWorkload``: flavors in name order; with
    ``TASHandleOverlappingFlavors`` the hostname-level ones share what the earlier pod sets
    took, a rack-level one keeps its own count."""
    node = tas.Node("x1", {HOST: "x1", BLOCK: "b1"}, {"cpu": 2000, "pods": 10})
    first = tas.PodSetRequest("a", 1, {"cpu": 1500}, tas.TopologyRequest(required=HOST))
    second = tas.PodSetRequest("b", 1, {"cpu": 1000}, tas.TopologyRequest(required=BLOCK))
    on_hosts = {"fa": (tas.TasInput(_flavor(), (node,)), (first,)),
                "fb": (tas.TasInput(_flavor((BLOCK, HOST)), (node,)), (second,))}
    got = tas.find_for_workload(on_hosts)
    assert got["a"] == ("fa", tas.PodSetResult(tas.TopologyAssignment(
        (HOST,), (tas.DomainAssignment(("x1",), 1),))))
    assert got["b"][0] == "fb"
    assert got["b"][1].reason == ('topology "default" doesn\'t allow to fit any of 1 pod(s). '
                                  'Total nodes: 1; excluded: resource "cpu": 1')
    by_block = {**on_hosts, "fb": (tas.TasInput(_flavor((BLOCK,)), (node,)), (second,))}
    assert tas.find_for_workload(by_block)["b"][1].assignment == tas.TopologyAssignment(
        (BLOCK,), (tas.DomainAssignment(("b1",), 1),))
