"""Workloads as Kueue sees them: a job of one or more pod sets, admitted all at once.

A :class:`Job` is a Kueue ``Workload``: it belongs to a ClusterQueue (= a tenant) through a
LocalQueue, has a priority (a WorkloadPriorityClass value), and 1–18 pod sets, each ``count``
identical pods with a :class:`~aiplat.sched.cluster.Request` and an optional topology request
(the ``kueue.x-k8s.io/podset-*-topology`` annotations); ``pool`` pins it to one pool (a node
selector on the pool label), so only that flavor is considered. ``duration`` is the run time
once all pods run; an evicted job restarts from the beginning (its progress is the wasted work).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from aiplat.sched.cluster import MILLI, Placement, Request

Level = Literal["block", "rack", "host"]
LEVELS: tuple[Level, ...] = ("block", "rack", "host")


@dataclass(frozen=True)
class TopologyRequest:
    level: Level
    mode: Literal["required", "preferred"] = "required"


@dataclass(frozen=True)
class PodSet:
    count: int
    request: Request
    topology: TopologyRequest | None = None

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"a pod set needs at least one pod, got {self.count}")


@dataclass(frozen=True)
class Job:
    name: str
    queue: str
    submit: float
    duration: float
    podsets: tuple[PodSet, ...]
    priority: int = 0
    local_queue: str = ""
    pool: str | None = None  # a node selector on the pool label: only that flavor fits

    def __post_init__(self) -> None:
        if not 1 <= len(self.podsets) <= 18:
            raise ValueError(f"job {self.name}: 1 to 18 pod sets, got {len(self.podsets)}")
        if self.duration < 0 or self.submit < 0:
            raise ValueError(f"job {self.name}: negative submit time or duration")

    @cached_property  # (asked per admission, release and summary row: kept)
    def gpus(self) -> float:
        """GPUs the whole job holds (fractional GPUs count their share)."""
        return sum(p.count * p.request.gpu_total_milli for p in self.podsets) / MILLI


@dataclass
class Run:
    """A job's life in a simulation: where it runs, when it was admitted and started, what
    it lost to evictions (the engine changes it; admission and metrics read it)."""

    job: Job
    flavor: str = ""  # the pool of its first pod set
    pools: list[str] = field(default_factory=list)  # per pod set: the pool its flavors name
    placements: list[tuple[int, Placement]] = field(default_factory=list)  # (podset, where)
    admitted_at: float | None = None
    started_at: float | None = None
    first_start: float | None = None
    epoch: int = 0
    attempts: int = 0
    evictions: int = 0
    preempted: int = 0
    wasted_gpu_s: float = 0.0
    preempted_at: float | None = None  # when this job last evicted victims
    finished_at: float | None = None
    spans: list[tuple[float, float | None]] = field(default_factory=list)
    """Each time it ran: (start, end); end None while it runs (the report's timelines)."""
    preempted_times: list[float] = field(default_factory=list)
    state: str = "pending"  # pending | admitted | running | finished | deactivated | never-fits
