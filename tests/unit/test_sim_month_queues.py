"""What is simulated is what would be applied (issue 16): the month ``aiplat plan`` simulates,
and ``aiplat sim run``'s queues, are the tree's kueue/ objects as rendered — checked here
against the written YAML read independently (plain PyYAML, own quantity arithmetic), for the
example and variants where the spec-derived queues (GPU only, fair sharing always on) were
wrong."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.ops.plan_outputs import PlanOutputs, plan_outputs
from aiplat.ops.sim_month import tree_queues
from aiplat.sched.kueue import GPU, KueueConfig, sim_units
from aiplat.sched.platform import simulate_platform
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform

CATALOG = load_catalog()
Edit = Callable[[dict[str, Any]], None]


def _classic(doc: dict[str, Any]) -> None:
    doc["kubernetes"]["fairSharing"] = False


def _cohorts_v1beta1(doc: dict[str, Any]) -> None:
    doc["kubernetes"]["kueueApi"] = "v1beta1"
    doc["kubernetes"]["cohorts"] = [{"name": "inference"}]
    for t in doc["tenants"]:
        if t["name"] in ("serving", "batch"):
            t["cohort"] = "inference"


def _spec(edit: Edit | None) -> Platform:
    doc = yaml.safe_load(example_text())
    if edit:
        edit(doc)
    return parse_platform(yaml.safe_dump(doc, sort_keys=False), EXAMPLE, CATALOG)


def _plan(platform: Platform) -> PlanOutputs:
    return plan_outputs(platform, CATALOG, today=date(2026, 12, 1))


def _amount(text: object, resource: str) -> float:
    """Independent of aiplat's readers: the few quantity forms the tree writes."""
    s = str(text)
    if s.endswith("Gi"):
        return float(s[:-2])
    assert s.replace(".", "", 1).isdigit(), f"unexpected quantity {s!r} for {resource}"
    return float(s)


def _written(files: dict[str, str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    cqs = list(yaml.safe_load_all(files["kube/kueue/clusterqueues.yaml"]))
    docs = list(yaml.safe_load_all(files["kube/kueue/kueue-manager-config.yaml"]))
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    return cqs, yaml.safe_load(cm["data"]["controller_manager_config.yaml"])


def _written_quotas(cq: dict[str, Any]) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for group in cq["spec"].get("resourceGroups", []):
        for f in group["flavors"]:
            for r in f["resources"]:
                name = r["name"]
                key = name if name in ("cpu", "memory") else GPU  # the rest are GPU names
                out[f["name"], key] = out.get((f["name"], key), 0.0) + _amount(
                    r["nominalQuota"], name)
    return out


def _simulated_quotas(cfg: KueueConfig, name: str) -> dict[tuple[str, str], float]:
    """The simulator's snapshot in GPUs, cores and GiB (converted here, at the edge)."""
    q = cfg.snapshot.cluster_queues[name]
    return {(fq.flavor, r): sim_units(r, quota.nominal) for g in q.groups for fq in g.flavors
            for r, quota in fq.resources.items()}


VARIANTS = [None, _classic, _cohorts_v1beta1]


@pytest.mark.parametrize("edit", VARIANTS, ids=lambda e: e.__name__ if e else "example")
def test_the_simulated_month_runs_on_the_written_kueue_objects(edit: Edit | None) -> None:
    platform = _spec(edit)
    out = _plan(platform)
    cqs, config = _written(out.files)
    assert list(out.queues.snapshot.cluster_queues) == [c["metadata"]["name"] for c in cqs]
    for cq in cqs:
        name, spec = cq["metadata"]["name"], cq["spec"]
        q = out.queues.snapshot.cluster_queues[name]
        assert q.cohort == spec.get("cohortName", spec.get("cohort"))
        tenant = platform.tenant(name)
        assert tenant is not None and q.weight == tenant.weight  # written "2", "1", "500m"
        # cpu, memory and GPUs per flavor, as written (the spec-derived queues had GPUs only)
        assert _simulated_quotas(out.queues, name) == _written_quotas(cq)
        assert {r for _, r in _written_quotas(cq)} == {"cpu", "memory", GPU}
    # fair sharing is what the written Configuration says (v1beta2: the section's presence)
    assert out.queues.fair_sharing == ("fairSharing" in config)
    assert out.queues.fair_sharing == platform.kubernetes.fair_sharing
    assert out.queues.wait_for_pods_ready is not None
    assert out.queues.wait_for_pods_ready.timeout_s == 600  # the written "10m"
    # the month ran on exactly these queues
    assert out.sim == simulate_platform(platform, out.plan, seed=0, queues=out.queues)
    # and the report says which mode ran
    assert f"## Simulated queues ({out.queues.mode}, as rendered in kube/kueue/)" \
        in out.files["report.md"]


def test_fair_sharing_off_in_the_spec_is_a_classic_month() -> None:
    out = _plan(_spec(_classic))
    assert not out.queues.fair_sharing and out.queues.mode == "classic"
    assert "## Simulated queues (classic" in out.files["report.md"]


def test_cohorts_come_from_the_written_cohort_objects() -> None:
    out = _plan(_spec(_cohorts_v1beta1))
    cohorts = {c.name: c.parent for c in out.queues.snapshot.cohorts.values()}
    assert cohorts == {"example": None, "inference": "example"}
    assert {q.name: q.cohort for q in out.queues.snapshot.cluster_queues.values()} == {
        "research": "example", "serving": "inference", "batch": "inference"}


@pytest.mark.parametrize("edit", VARIANTS, ids=lambda e: e.__name__ if e else "example")
def test_sim_run_reads_the_same_queues_as_plan(edit: Edit | None) -> None:
    platform = _spec(edit)
    assert tree_queues(platform, CATALOG) == _plan(platform).queues


def test_a_configmap_without_a_yaml_reader_is_noted_not_guessed() -> None:
    from aiplat.kube.render import render
    from aiplat.ops.sim_month import kueue_objects
    from aiplat.sched.kueue_objects import from_objects

    objects = kueue_objects(render(_spec(None), CATALOG).manifests)
    cfg = from_objects(objects, "kueue/")
    assert not cfg.fair_sharing and cfg.wait_for_pods_ready is None
    assert any("ConfigMap kueue-manager-config" in u and "not read" in u
               for u in cfg.unsupported)


def test_simulation_json_names_the_queues_it_ran_on() -> None:
    import json

    data = json.loads(_plan(_spec(_classic)).files["simulation.json"])
    assert data["queues"] == {"source": "kube/kueue/", "mode": "classic"}


def test_a_clusterqueue_given_twice_is_refused() -> None:
    from aiplat.errors import InputError
    from aiplat.sched.kueue_objects import from_objects

    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
          "metadata": {"name": "a"}, "spec": {}}
    with pytest.raises(InputError, match="k/: ClusterQueue a: given twice"):
        from_objects([cq, cq], "k/")


def _small_nodes(doc: dict[str, Any]) -> None:
    """64 GiB L40S nodes: 90 % of the whole node's memory (the month's old job size) is more
    than the node's allocatable 57 GiB, so those pods could never be placed for real."""
    for p in doc["pools"]:
        if p["name"] == "l40s":
            p["node"]["memoryGiB"] = 64
            p["node"]["cpuCores"] = 16


@pytest.mark.parametrize("edit", [None, _small_nodes],
                         ids=lambda e: e.__name__ if e else "example")
def test_the_months_nodes_and_pods_are_the_trees(edit: Edit | None) -> None:
    """Nodes offer what the lint inventory says (allocatable), and a job's pod asks for no
    more memory than the rendered pod of its workload, per GPU, and for the CPUs a rendered
    pod of as many GPUs on its pool asks (whole cores: not linear in the GPUs)."""
    from aiplat.kube.render import render_plan
    from aiplat.plan.build import plan_resolved
    from aiplat.plan.resolve import resolve
    from aiplat.sched.platform import platform_jobs, platform_nodes

    platform = _spec(edit)
    resolved = resolve(platform, CATALOG)
    plan = plan_resolved(resolved)
    rendered = render_plan(resolved, plan)
    inventory = {p.name: p for p in rendered.inventory.pools}
    for n in platform_nodes(platform, plan):
        pool = inventory[n.pool]
        assert (n.cpu_milli * pool.nodes, n.memory_mib * pool.nodes) == (
            pool.cpu * 1000, pool.memory_gib * 1024)
    rendered_per_gpu: dict[str, list[tuple[float, float]]] = {}  # pool -> cpu, GiB per GPU
    rendered_cpu: dict[tuple[str, int], float] = {}  # (pool, GPUs) -> the pod's CPUs
    for spec in _pod_specs(rendered.objects()):
        on, gpus = _pool_and_gpus(spec)
        if gpus:
            req = spec["containers"][0]["resources"]["requests"]
            rendered_per_gpu.setdefault(on, []).append(
                (float(req["cpu"]) / gpus, float(req["memory"].removesuffix("Gi")) / gpus))
            rendered_cpu[on, gpus] = float(req["cpu"])
    jobs = platform_jobs(platform, plan, seed=0)
    assert jobs and set(rendered_per_gpu) == {p.name for p in platform.pools}
    for j in jobs:
        assert j.pool is not None
        cpu = min(c for c, _ in rendered_per_gpu[j.pool])
        mem = min(m for _, m in rendered_per_gpu[j.pool])
        for ps in j.podsets:
            same = rendered_cpu.get((j.pool, ps.request.num_gpu))
            if same is not None:
                assert ps.request.cpu_milli / 1000 == same
            else:
                assert ps.request.cpu_milli / 1000 / ps.request.num_gpu <= cpu + 1e-9
            assert ps.request.memory_mib / 1024 / ps.request.num_gpu <= mem + 1e-9


def _pod_specs(node: object) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        if "containers" in node and "affinity" in node:
            return [node]
        return [s for v in node.values() for s in _pod_specs(v)]
    if isinstance(node, list):
        return [s for v in node for s in _pod_specs(v)]
    return []


def _pool_and_gpus(spec: dict[str, Any]) -> tuple[str, int]:
    """The pool a rendered pod is pinned to and its GPUs (device plugin count, or the DRA
    claim template's size: -gpu-1, -gpu-pair, -gpu-N)."""
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    expr = terms["nodeSelectorTerms"][0]["matchExpressions"][0]
    if expr["key"] != "aiplat.io/pool" or "values" not in expr:
        return "", 0  # a DaemonSet (node agent): not a workload's pod
    pool = expr["values"][0]
    req = spec["containers"][0]["resources"].get("requests", {})
    if "nvidia.com/gpu" in req:
        return pool, int(req["nvidia.com/gpu"])
    for claim in spec.get("resourceClaims", []):
        size = claim["resourceClaimTemplateName"].rsplit("-gpu-", 1)[-1]
        return pool, 2 if size == "pair" else int(size)
    return pool, 0


@pytest.mark.parametrize(("text", "seconds"), [("10m", 600), ("10m0s", 600), ("1h30m", 5400),
                                                ("300ms", 0.3), ("1.5h", 5400)])
def test_go_durations(text: str, seconds: float) -> None:
    """Kueue writes Go durations back (``10m0s``); ``300ms`` is milliseconds, not 300 m + s."""
    from aiplat.kueue.snapshot import duration

    assert duration(text, "x") == pytest.approx(seconds)
