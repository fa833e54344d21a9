"""Guaranteed pods on a pool whose kubelet pins whole cores ask for whole cores.

The rendered kubelet config of a hyperthreaded GPU pool sets the static CPU Manager with
``full-pcpus-only``; the kubelet then refuses at admission every Guaranteed pod whose
integer CPU request (any container's) is not a multiple of the threads per core
(``SMTAlignmentError``, ``pkg/kubelet/cm/cpumanager/policy_static.go``). Read from the
rendered tree: the pool's kubelet config and its pods.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import yaml

from aiplat.catalog import load_catalog
from aiplat.kube import render
from aiplat.kube.yamlout import load_docs
from aiplat.plan.build import build_plan
from aiplat.plan.kubelet import pod_cpus, spec_layout
from aiplat.sched.platform import platform_jobs
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform

POOL_LABEL = "aiplat.io/pool"


def _platform() -> Platform:
    return parse_platform(example_text(), "example.yaml", load_catalog())


def _cpu(quantity: str) -> Fraction:
    q = str(quantity)
    return Fraction(int(q[:-1]), 1000) if q.endswith("m") else Fraction(q)


def _pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    if kind == "Pod":
        return [obj]
    if kind in ("Deployment", "StatefulSet", "Job", "DaemonSet", "ReplicaSet"):
        return [spec["template"]]
    if kind == "JobSet":
        return [r["template"]["spec"]["template"] for r in spec.get("replicatedJobs", [])]
    if kind == "LeaderWorkerSet":
        lws = spec.get("leaderWorkerTemplate", {})
        return [lws[k] for k in ("leaderTemplate", "workerTemplate") if k in lws]
    return []


def _pools(pod: dict[str, Any]) -> list[str]:
    spec = pod.get("spec", {})
    pools = [spec.get("nodeSelector", {}).get(POOL_LABEL)]
    terms = (spec.get("affinity", {}).get("nodeAffinity", {})
             .get("requiredDuringSchedulingIgnoredDuringExecution", {})
             .get("nodeSelectorTerms", []))
    for term in terms:
        for e in term.get("matchExpressions", []):
            if e.get("key") == POOL_LABEL and e.get("operator") == "In":
                pools += e.get("values", [])
    return sorted({p for p in pools if p})


def _guaranteed(pod: dict[str, Any]) -> bool:
    spec = pod.get("spec", {})
    containers = [*spec.get("containers", []), *spec.get("initContainers", [])]
    for c in containers:
        res = c.get("resources", {})
        limits, requests = res.get("limits", {}), res.get("requests", {})
        for r in ("cpu", "memory"):
            if r not in limits or _cpu_or_str(requests.get(r, limits[r])) != _cpu_or_str(
                    limits[r]):
                return False
    return bool(containers)


def _cpu_or_str(q: Any) -> Any:
    try:
        return _cpu(q)
    except (ValueError, ZeroDivisionError):
        return str(q)


def test_guaranteed_pods_on_full_pcpus_pools_ask_for_whole_cores() -> None:
    files = render(_platform(), load_catalog()).files()
    whole_cores: dict[str, int] = {}
    for rel, text in files.items():
        parts = rel.split("/")
        if rel.endswith("kubelet-config.yaml") and "nodes" in parts:
            config = yaml.safe_load(text)
            if (config.get("cpuManagerPolicy") == "static"
                    and config.get("cpuManagerPolicyOptions", {}).get("full-pcpus-only")
                    == "true"):
                pool = parts[parts.index("nodes") + 1]
                cpus = sorted(int(c) for c in _cpulist(config["reservedSystemCPUs"]))
                whole_cores[pool] = _threads_per_core(pool, cpus)
    assert whole_cores, "no pool pins whole cores: the test checks nothing"
    checked = []
    for rel, text in files.items():
        if not rel.endswith(".yaml"):
            continue
        for obj in load_docs(text):
            if not isinstance(obj, dict):
                continue
            for pod in _pod_templates(obj):
                pools = [p for p in _pools(pod) if p in whole_cores]
                if not pools or not _guaranteed(pod):
                    continue
                spec = pod["spec"]
                for c in [*spec.get("containers", []), *spec.get("initContainers", [])]:
                    cpu = _cpu(c["resources"]["requests"].get(
                        "cpu", c["resources"]["limits"]["cpu"]))
                    if cpu.denominator != 1:
                        continue  # not pinned: the shared pool
                    for pool in pools:
                        where = f"{rel}: {obj['kind']} {obj['metadata']['name']} {c['name']}"
                        checked.append(where)
                        assert cpu % whole_cores[pool] == 0, (
                            f"{where} asks for {cpu} CPUs on pool {pool}, whose kubelet pins "
                            f"whole cores of {whole_cores[pool]} threads (full-pcpus-only)")
    assert checked, "no Guaranteed pod on such a pool: the test checks nothing"


def _cpulist(text: str) -> list[int]:
    out: list[int] = []
    for part in str(text).split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def _threads_per_core(pool: str, reserved: list[int]) -> int:
    """The threads per core of the pool's node model, which the kubelet config's reserved
    CPUs (whole cores) must agree with."""
    spec = _platform().pool(pool)
    assert spec is not None
    layout = spec_layout(spec)
    per_core = layout.threads_per_core
    by_cpu = {t: core for core in layout.cores for t in core}
    assert all(set(by_cpu[c]) <= set(reserved) for c in reserved), (
        f"pool {pool}: reservedSystemCPUs {reserved} are not whole cores")
    assert len(reserved) % per_core == 0
    return per_core


def test_simulated_pods_ask_what_the_rendered_pods_ask() -> None:
    platform = _platform()
    plan = build_plan(platform, load_catalog())
    for job in platform_jobs(platform, plan, seed=1):
        spec = platform.pool(job.pool or "")
        assert spec is not None
        for ps in job.podsets:
            assert ps.request.cpu_milli == pod_cpus(spec, ps.request.num_gpu) * 1000, job.name
