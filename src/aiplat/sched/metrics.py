"""What a simulation reports: per tenant waits and shares, per cluster allocation over time.

- Wait = first start − submission, for jobs that started; jobs still waiting at the end are
  counted apart (``waiting``), never averaged in as if they had started.
- Obtained share = the tenant's GPU-hours of running jobs / all tenants' GPU-hours. Fair
  share = the tenant's fair-sharing weight over the weights of the tenants that submitted
  work (what Kueue's fair sharing aims at when every tenant wants more than its share).
- Jain's fairness index over obtained ÷ fair share: 1 = perfectly proportional, 1/n = one
  tenant got everything. A share below the fair one is no unfairness when the tenant never
  waited (it got all it asked for), so such a tenant counts as 1: with nobody waiting the
  index is 1, whatever the shares.
- Utilisation = allocated ÷ provisioned GPU-hours (provisioned counts idle and starting
  nodes). Fragmentation = the FGD measure (GPUs the typical workload could not use).
- Preemption waste = GPU-hours of work lost by evicted jobs (they restart from scratch).
Pure: no I/O; :meth:`SimResult.to_dict` gives the JSON the CLI prints.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from aiplat.sched.workload import Run


@dataclass(frozen=True)
class TimePoint:
    t: float
    allocated_gpus: float
    provisioned_gpus: float
    pending: int
    fragmented_gpus: float


@dataclass(frozen=True)
class JobRecord:
    name: str
    queue: str
    submit: float
    first_start: float | None
    finished: float | None
    flavor: str
    evictions: int
    state: str
    gpus: float = 0.0
    spans: tuple[tuple[float, float], ...] = ()
    """When it ran, seconds: (start, end); a run still going at the end ends there."""
    preempted_at: tuple[float, ...] = ()
    """When it was preempted (evicted for another workload), seconds."""


@dataclass(frozen=True)
class TenantResult:
    name: str
    jobs: int
    started: int
    waiting: int
    wait_p50_h: float
    wait_p95_h: float
    wait_p99_h: float
    gpu_hours: float
    obtained_share: float
    fair_share: float
    weight: float


@dataclass(frozen=True)
class SimResult:
    tenants: list[TenantResult]
    jain_index: float
    jobs: int
    finished: int
    never_fit: int
    deactivated: int
    preemptions: int
    preempted_gpu_hours: float
    allocated_gpu_hours: float
    provisioned_gpu_hours: float
    utilisation: float
    mean_fragmented_gpus: float
    end_h: float
    events: int
    timeline: list[TimePoint]
    records: list[JobRecord]

    def to_dict(self, *, records: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not records:
            out.pop("records")
        rounded: dict[str, Any] = _round(out)
        return rounded

    def tenant(self, name: str) -> TenantResult:
        return next(t for t in self.tenants if t.name == name)


def _round(x: Any) -> Any:
    if isinstance(x, float):
        return round(x, 4) if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_round(v) for v in x]
    return x


SERVED_WAIT_H = 1 / 60
"""A tenant whose jobs all started within a minute got what it asked for."""


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def jain(values: list[float]) -> float:
    """Jain's index (Σx)² / (n·Σx²); 1.0 for an empty or all-zero list."""
    if not values or not any(values):
        return 1.0
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


@dataclass(frozen=True)
class Totals:
    """What the engine hands over at the end: the jobs and the running totals."""

    runs: list[Run]
    weights: dict[str, float]  # per ClusterQueue
    timeline: list[TimePoint]
    preemptions: int
    allocated_gpu_s: float
    provisioned_gpu_s: float
    events: int


def summarize(sim: Totals, end: float) -> SimResult:
    runs = sim.runs
    weights = dict(sim.weights)
    used: dict[str, float] = dict.fromkeys(weights, 0.0)
    by_queue: dict[str, list[Run]] = {}  # each queue's runs, in order (one pass, not one per queue)
    for r in runs:
        if r.state == "finished":
            current = r.job.duration
        elif r.state == "running" and r.started_at is not None:
            current = end - r.started_at
        else:
            current = 0.0
        used[r.job.queue] += (current * r.job.gpus + r.wasted_gpu_s) / 3600
        by_queue.setdefault(r.job.queue, []).append(r)
    active = [q for q in weights if q in by_queue]
    total_w = sum(weights[q] for q in active) or 1.0
    total_used = sum(used.values()) or 1.0
    tenants = []
    ratios = []
    for q, weight in weights.items():
        mine = by_queue.get(q, [])
        waits = [(r.first_start - r.job.submit) / 3600 for r in mine if r.first_start is not None]
        fair = weight / total_w if q in active else 0.0
        obtained = used[q] / total_used
        served = all(w <= SERVED_WAIT_H for w in waits) and not any(
            r.first_start is None and r.state == "pending" for r in mine)
        if q in active and fair > 0:
            ratio = obtained / fair
            ratios.append(1.0 if served and ratio < 1 else ratio)
        tenants.append(TenantResult(
            name=q, jobs=len(mine), started=len(waits),
            waiting=sum(1 for r in mine if r.first_start is None and r.state == "pending"),
            wait_p50_h=percentile(waits, 50), wait_p95_h=percentile(waits, 95),
            wait_p99_h=percentile(waits, 99), gpu_hours=used[q], obtained_share=obtained,
            fair_share=fair, weight=weight,
        ))
    frag = [p.fragmented_gpus for p in sim.timeline]
    contended = any(t.waiting or t.wait_p99_h > SERVED_WAIT_H for t in tenants)
    return SimResult(
        tenants=tenants,
        jain_index=jain(ratios) if contended else 1.0,
        jobs=len(runs),
        finished=sum(1 for r in runs if r.state == "finished"),
        never_fit=sum(1 for r in runs if r.state == "never-fits"),
        deactivated=sum(1 for r in runs if r.state == "deactivated"),
        preemptions=sim.preemptions,
        preempted_gpu_hours=sum(r.wasted_gpu_s for r in runs) / 3600,
        allocated_gpu_hours=sim.allocated_gpu_s / 3600,
        provisioned_gpu_hours=sim.provisioned_gpu_s / 3600,
        utilisation=sim.allocated_gpu_s / sim.provisioned_gpu_s if sim.provisioned_gpu_s else 0.0,
        mean_fragmented_gpus=float(np.mean(frag)) if frag else 0.0,
        end_h=end / 3600,
        events=sim.events,
        timeline=list(sim.timeline),
        records=[JobRecord(r.job.name, r.job.queue, r.job.submit, r.first_start, r.finished_at,
                           r.flavor, r.evictions, r.state, r.job.gpus,
                           tuple((a, end if b is None else b) for a, b in r.spans),
                           tuple(r.preempted_times)) for r in runs],
    )
