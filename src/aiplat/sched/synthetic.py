"""Synthetic traces: jobs generated from workload profiles (the spec's sized workloads).

A :class:`Profile` says what one workload runs: GPUs, run time, runs per month, its tenant
(= ClusterQueue) and pool (= flavor), GPUs per node of that pool, and how it maps to Kueue
Workloads:

- ``gang`` (training, fine-tuning): one Workload per run, pods of a node's worth of GPUs
  (the last pod takes the remainder), admitted all at once; arrivals are Poisson at
  ``runs_per_month``.
- ``replicas`` (batch inference): each run is split into independent one-node Workloads
  that run in parallel when there is room; runs arrive periodically (a nightly job comes
  every night), with a seeded phase.
- ``always-on`` (online inference, RAG): one Workload at time 0 holding its GPUs for the whole
  horizon, at the highest priority.

Pure: the generator is seeded by the caller; same seed, same jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from aiplat.errors import InputError
from aiplat.sched.cluster import MILLI, Request
from aiplat.sched.workload import Job, PodSet

HOURS_PER_MONTH = 730.0
MAX_JOBS = 50_000
"""The most jobs one simulation makes; a month of a large platform is a few thousand."""
Shape = Literal["gang", "replicas", "always-on"]

PRIORITY: dict[Shape, int] = {"always-on": 1000, "gang": 100, "replicas": 10}


@dataclass(frozen=True)
class Profile:
    name: str
    tenant: str
    pool: str
    gpus: int
    gpus_per_node: int
    run_hours: float | None  # None = always on
    runs_per_month: float = 1.0
    shape: Shape = "gang"
    cpu_per_gpu: int = 8000
    memory_mib_per_gpu: int = 65536
    pod_cpu_milli: tuple[tuple[int, int], ...] = ()
    """(GPUs, CPU milli) of a pod by its GPUs where a pod's CPUs are not ``cpu_per_gpu`` per
    GPU (whole cores, ``plan.kubelet.pod_cpus``); a pod size not listed asks per GPU."""
    pod_memory_mib: tuple[tuple[int, int], ...] = ()
    """(GPUs, MiB) of a pod by its GPUs, as ``pod_cpu_milli`` (``plan.kubelet.pod_memory_gib``)."""
    pods: tuple[tuple[int, int], ...] = ()
    """(pods, GPUs each) as the tree runs them (``plan.pods``); empty: whole nodes and a
    remainder."""

    def __post_init__(self) -> None:
        if self.gpus < 1 or self.gpus_per_node < 1:
            raise ValueError(f"workload {self.name}: needs at least one GPU and GPUs per node")
        if self.shape != "always-on" and (self.run_hours is None or self.run_hours <= 0):
            raise ValueError(f"workload {self.name}: a {self.shape} workload needs run_hours")


def _pods(p: Profile) -> list[PodSet]:
    full, rest = divmod(p.gpus, p.gpus_per_node)
    sets = []
    for count, gpus in p.pods or ((full, p.gpus_per_node), (1 if rest else 0, rest)):
        if count:
            cpu = dict(p.pod_cpu_milli).get(gpus, p.cpu_per_gpu * gpus)
            mem = dict(p.pod_memory_mib).get(gpus, p.memory_mib_per_gpu * gpus)
            req = Request(cpu, mem, gpus, MILLI)
            sets.append(PodSet(count, req))
    return sets


def generate(profiles: list[Profile], *, seed: int, months: float = 1.0) -> list[Job]:
    """Jobs for ``months`` of the profiles, sorted by submission time."""
    rng = np.random.default_rng(seed)
    horizon = months * HOURS_PER_MONTH * 3600
    jobs: list[Job] = []
    total = 0.0
    for p in profiles:
        prio = PRIORITY[p.shape]
        podsets = _pods(p)
        if p.shape != "always-on":
            # Work bounded by the input gets a ceiling: count the jobs before making them.
            runs = p.runs_per_month * months
            pods = sum(ps.count for ps in podsets) if p.shape != "gang" else 1
            total += runs * pods
            if not math.isfinite(total) or total > MAX_JOBS:
                raise InputError(
                    f"workload {p.name}: {runs * pods:,.0f} jobs in {months:g} months "
                    f"({runs:,.0f} runs x {pods:,} pods); the simulator takes at most "
                    f"{MAX_JOBS:,} (fix: check the workload's tokens, SLO and runsPerMonth, "
                    "or simulate fewer --months)")
        if p.shape == "always-on":
            jobs.append(Job(f"{p.name}", p.tenant, 0.0, horizon, tuple(podsets), prio,
                            pool=p.pool))
            continue
        assert p.run_hours is not None
        duration = p.run_hours * 3600
        rate = p.runs_per_month / (HOURS_PER_MONTH * 3600)
        if p.shape == "gang":
            t = float(rng.exponential(1 / rate))
            times = []
            while t < horizon:
                times.append(t)
                t += float(rng.exponential(1 / rate))
        else:
            period = 1 / rate
            phase = float(rng.uniform(0, period))
            times = [phase + k * period for k in range(math.ceil(horizon / period))
                     if phase + k * period < horizon]
        for k, t in enumerate(times):
            if p.shape == "gang":
                jobs.append(Job(f"{p.name}-{k}", p.tenant, t, duration, tuple(podsets), prio,
                                pool=p.pool))
                continue
            i = 0
            for ps in podsets:
                for _ in range(ps.count):
                    jobs.append(Job(f"{p.name}-{k}-{i}", p.tenant, t, duration,
                                    (PodSet(1, ps.request),), prio, pool=p.pool))
                    i += 1
    jobs.sort(key=lambda j: (j.submit, j.name))
    return jobs
