"""The spec is interpreted once (issue 16): the plan, the Kubernetes tree, the lab cluster's
nodes and the simulator read the same resolved figures, so they cannot disagree."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cluster.nodes import node_labels
from aiplat.kube.facts import pool_facts
from aiplat.kube.render import render_plan
from aiplat.plan.build import plan_resolved
from aiplat.plan.resolve import resolve
from aiplat.sched.platform import platform_nodes
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform

CATALOG = load_catalog()
Edit = Callable[[dict], None]


def _no_node_types(doc: dict) -> None:
    for p in doc["pools"]:
        p["node"].pop("nodeType", None)


def _no_nodes_per_rack(doc: dict) -> None:
    for p in doc["pools"]:
        p.get("topology", {}).pop("nodesPerRack", None)


def _both(doc: dict) -> None:
    _no_node_types(doc)
    _no_nodes_per_rack(doc)


def _bigger(doc: dict) -> None:
    _both(doc)
    for p in doc["pools"]:
        if "count" in p:
            p["count"] = p["count"] * 3


def _spec(edit: Edit | None) -> Platform:
    doc = yaml.safe_load(example_text())
    if edit:
        edit(doc)
    return parse_platform(yaml.safe_dump(doc, sort_keys=False), EXAMPLE, CATALOG)


VARIANTS = [None, _no_node_types, _no_nodes_per_rack, _both, _bigger]


@pytest.mark.parametrize("edit", VARIANTS, ids=lambda e: e.__name__ if e else "example")
def test_plan_rack_labels_topology_and_simulator_agree_on_nodes_per_rack(edit: Edit) -> None:
    resolved = resolve(_spec(edit), CATALOG)
    plan = plan_resolved(resolved)
    planned = {p.name: p.nodes_per_rack for p in plan.pools}
    # The node label script the tree ships with.
    script = render_plan(resolved, plan).other["cluster/nodes/label-and-taint.sh"]
    scripted = {m[0]: int(m[1]) for m in re.findall(
        r"^\s*(\S+)\)\s*\n\s*per_rack=(\d+);", script, flags=re.M)}
    assert scripted == {p: n for p, n in planned.items() if p in scripted} and scripted
    # The rack labels of the lab cluster's nodes (what TAS's rack level groups by).
    for facts in pool_facts(resolved):
        label = facts.spec.topology.rack_label
        racks = Counter(node_labels(facts, i)[label]
                        for i in range(facts.nodes))
        if racks:
            assert max(racks.values()) == min(planned[facts.name], facts.nodes)
    # The simulator's racks.
    sim = Counter((n.pool, n.rack) for n in platform_nodes(resolved.spec, plan))
    for (pool, _rack), count in sim.items():
        assert count <= planned[pool]
        assert max(c for (p, _r), c in sim.items() if p == pool) == min(
            planned[pool], resolved.pool(pool).nodes)


def test_a_workload_without_pool_runs_on_the_first_gpu_pool_everywhere() -> None:
    def unpinned(doc: dict) -> None:
        for w in doc["workloads"]:
            w.pop("pool", None)

    resolved = resolve(_spec(unpinned), CATALOG)
    first = next(p.name for p in resolved.spec.pools if p.node.gpu)
    assert resolved.default_pool is not None and resolved.default_pool.name == first
    plan = plan_resolved(resolved)
    assert {w.pool for w in plan.workloads} == {first}
    rendered = render_plan(resolved, plan)
    for o in rendered.manifests["workloads/examples.yaml"]:
        spec = o.get("spec") or {}
        if o["kind"] not in ("Job", "JobSet", "Deployment"):
            continue  # a PodDisruptionBudget, a Service
        template = (spec.get("template") or
                    spec["replicatedJobs"][0]["template"]["spec"]["template"])
        terms = template["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        pools = {v for t in terms for e in t["matchExpressions"]
                 if e["key"] == "aiplat.io/pool" for v in e["values"]}
        assert pools == {first}, o["metadata"]["name"]
    assert {c.pool for c in plan.storage.pools} == {first}


def test_model_sizes_come_from_the_resolved_shape() -> None:
    # A custom architecture without a parameter count: the plan estimates it, and the
    # tree's cache volumes and the storage plan use that same estimate (not 0 or nothing).
    def custom(doc: dict) -> None:
        w = next(w for w in doc["workloads"] if w["name"] == "docs-search")
        w["model"] = {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000}

    resolved = resolve(_spec(custom), CATALOG)
    plan = plan_resolved(resolved)
    sized = next(w for w in plan.workloads if w.name == "docs-search")
    assert sized.params == resolved.workload("docs-search").arch.params > 6e9
    names = [m.name for c in plan.storage.pools for m in c.models]
    assert any(n.startswith("docs-search-model") for n in names)


def test_pool_facts_hold_their_resolved_pool_instead_of_copying_it() -> None:
    """One pool type fewer (issue 16): the Kubernetes facts delegate the spec-derived figures
    to ``plan/``'s ResolvedPool, so the two cannot drift (nodes per rack had two formulas)."""
    import dataclasses

    from aiplat.kube.facts import PoolFacts

    resolved = resolve(_spec(_both), CATALOG)
    facts = pool_facts(resolved)
    copied = {"spec", "gpu", "name", "nodes", "gpus_per_node", "nodes_per_rack"}
    assert copied.isdisjoint(f.name for f in dataclasses.fields(PoolFacts))
    for f, rp in zip(facts, resolved.pools, strict=True):
        assert f.resolved is rp
        assert (f.name, f.nodes, f.gpus_per_node, f.nodes_per_rack, f.spec, f.gpu) == (
            rp.name, rp.nodes, rp.gpus_per_node, rp.nodes_per_rack, rp.spec, rp.gpu)
