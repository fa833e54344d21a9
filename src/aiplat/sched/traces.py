"""Trace pods as Kueue Workloads (pure): the Alibaba trace replayed through queues.

The trace has no tenants, queues or gangs. Mapping: each pod is a one-pod Workload submitted
at its ``creation_time`` that runs ``deletion_time − max(creation_time, scheduled_time)``
seconds once placed; its ClusterQueue is its QoS class (``LS``, ``BE``, ``Burstable``,
``Guaranteed``...; ``default`` when empty), all in one cohort ``trace``. Each queue's nominal
GPU quota is the cluster's GPUs split in proportion to the queue's GPU-seconds in the trace,
lendable to the others (borrowing allowed), BestEffortFIFO, no preemption: the question it
answers is how long pods wait under the placement policy and quotas, not what Alibaba ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aiplat.errors import InputError
from aiplat.sched.cluster import MILLI, Node, Request
from aiplat.sched.kueue import GPU, ClusterQueue, FlavorQuotas, KueueConfig, Quota, queues
from aiplat.sched.workload import Job, PodSet

POOL = "default"


@dataclass(frozen=True)
class TracePod:
    """One row of a trace's pod list (times in seconds from the trace start)."""

    name: str
    request: Request
    qos: str = ""
    created: float | None = None
    deleted: float | None = None


def trace_jobs(pods: Sequence[TracePod], variant: str) -> list[Job]:
    jobs = []
    for p in pods:
        if p.created is None or p.deleted is None:
            raise InputError(
                f"trace variant {variant!r} has no creation/deletion times, so it cannot be "
                "replayed in time (fix: use `aiplat sim fgd` for it, or a variant with times "
                "such as default)"
            )
        duration = max(0.0, p.deleted - p.created)
        jobs.append(Job(p.name, p.qos or "default", p.created, duration,
                        (PodSet(1, p.request),)))
    return jobs


def qos_queues(jobs: Sequence[Job], nodes: Sequence[Node]) -> KueueConfig:
    gpus = sum(n.gpus for n in nodes)
    # The trace's pods ask for CPU and memory too: every queue covers the whole cluster's
    # (a queue that covers no CPU admits no pod, as in Kueue); the GPUs are what is shared.
    cpu = sum(n.cpu_milli for n in nodes) / 1000
    memory = sum(n.memory_mib for n in nodes) / 1024
    demand: dict[str, float] = {}
    for j in jobs:
        demand[j.queue] = demand.get(j.queue, 0.0) + j.gpus * j.duration
    total = sum(demand.values()) or 1.0
    out = []
    for q in sorted(demand):
        share = round(gpus * demand[q] / total * MILLI) / MILLI
        out.append(ClusterQueue(q, (FlavorQuotas(POOL, {
            GPU: Quota(share), "cpu": Quota(cpu), "memory": Quota(memory)}),), "trace"))
    return queues(out)
