"""A simulated job as Kueue's ``Workload``: what ``sim run``'s admission queues.

- a job's pod sets request only what they ask for (nothing of zero), in Kueue's units (cpu in
  milli-cores, memory in bytes) and GPUs in milli-GPUs (the simulator's queues count them so:
  :mod:`aiplat.sched.kueue`), so a ClusterQueue that does not cover a requested resource
  leaves the job pending, as Kueue does;
- a job pinned to a pool selects that pool's flavor (the pool label), so only that flavor
  fits (``check_flavor``);
- its arrival order is the UID that breaks ties among jobs created at the same time.

Pure: no I/O.
"""

from __future__ import annotations

from aiplat.kueue.snapshot import PodSet, Workload
from aiplat.sched.kueue import GPU, POOL_LABEL
from aiplat.sched.workload import Job


def podsets(job: Job) -> tuple[PodSet, ...]:
    """The job's pod sets as Kueue counts them: per pod, what it requests (nothing of zero);
    a job pinned to a pool selects that pool's flavor."""
    selector = {POOL_LABEL: job.pool} if job.pool is not None else {}
    out = []
    for i, p in enumerate(job.podsets):
        r = p.request
        req = {"cpu": r.cpu_milli, "memory": r.memory_mib * 2**20, GPU: r.gpu_total_milli}
        out.append(PodSet(f"ps{i}", p.count, {k: v for k, v in req.items() if v},
                          node_selector=selector))
    return tuple(out)


def workload(job: Job, seq: int, shapes: tuple[PodSet, ...]) -> Workload:
    """The job's Workload; ``seq`` (its arrival order) is the UID that breaks ties among
    jobs created at the same time, as Kueue's UID does."""
    return Workload(job.name, f"{seq:010d}", job.submit, job.priority,
                    job.local_queue or job.queue, job.queue, shapes)


def pool_of(flavors: dict[str, str]) -> str:
    """The pool a pod set's pods go to: its GPU flavor, else its cpu or first one."""
    return flavors.get(GPU) or flavors.get("cpu") or next(iter(flavors.values()), "")


__all__ = ["podsets", "pool_of", "workload"]
