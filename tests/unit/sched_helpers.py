"""Small builders for the simulator's scenario tests (not a test module)."""

from __future__ import annotations

from aiplat.sched import (
    GPU,
    ClusterQueue,
    FlavorQuotas,
    Job,
    Node,
    PodSet,
    Quota,
    Request,
    TopologyRequest,
)
from aiplat.sched.kueue import Preemption


def nodes(pool: str = "a", n: int = 1, gpus: int = 8, *, racks: list[int] | None = None,
          block: str = "b1") -> list[Node]:
    """``n`` nodes in ``pool``; ``racks`` gives how many nodes each rack holds."""
    out = []
    layout = racks or [n]
    i = 0
    for r, count in enumerate(layout):
        for _ in range(count):
            out.append(Node(f"{pool}-{i}", 64_000, 512 * 1024, gpus, "H100", pool, block,
                            f"r{r + 1}"))
            i += 1
    return out


def job(name: str, queue: str, gpus: int, *, submit: float = 0, dur: float = 100,
        prio: int = 0, pods: int = 1, lq: str = "",
        topology: TopologyRequest | None = None) -> Job:
    # GPU-only pods: the queues here cover GPUs only (Kueue refuses what no group covers)
    req = Request(0, 0, gpus, 1000) if gpus else Request(1000, 1024)
    return Job(name, queue, submit, dur, (PodSet(pods, req, topology),), prio, lq)


def cq(name: str, nominal: float, *, cohort: str | None = "co", borrow: float | None = None,
       lend: float | None = None, flavor: str = "a", preemption: Preemption | None = None,
       **kw: object) -> ClusterQueue:
    fq = FlavorQuotas(flavor, {GPU: Quota(nominal, borrow, lend)})
    return ClusterQueue(name, (fq,), cohort, preemption=preemption or Preemption(),
                        **kw)  # type: ignore[arg-type]


def starts(result: object) -> dict[str, float | None]:
    return {r.name: r.first_start for r in result.records}  # type: ignore[attr-defined]
