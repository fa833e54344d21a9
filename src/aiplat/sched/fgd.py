"""The FGD paper's experiment protocol, as a pure function.

Protocol (../shared/data/README.md): sample pods with replacement (per seed) from the trace's
pod list until their requested GPU reaches ``arrival_limit`` (1.3) times the cluster's GPU
capacity, shuffle, place them one by one in that order with the policy under test; no pod
ever leaves, and a pod that fits nowhere stays unplaced. The metric is the GPU allocation
ratio (allocated GPU milli / total GPU milli) as arrivals grow; the headline is its value
when arrivals reach 130%. The typical workload FGD measures fragmentation against is the
whole pod list (each distinct shape weighted by its count), as in the paper's simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aiplat.sched.cluster import MILLI, ClusterState, Node, Request
from aiplat.sched.frag import FragMeter, TypicalWorkload
from aiplat.sched.policies import GpuClustering, make_policy

PAPER_POLICIES = ("random", "dotprod", "clustering", "packing", "bestfit", "fgd")
CURVE_POINTS = 27  # arrivals 0%, 5%, ... 130%


@dataclass(frozen=True)
class FgdRun:
    policy: str
    seed: int
    pods: int
    unplaced: int
    allocation_ratio: float  # percent, at the arrival limit
    curve: list[tuple[float, float]]  # (arrived % of capacity, allocated %)
    fragmentation: float  # percent of GPU capacity, FGD measure, at the end


def sample_workload(requests: Sequence[Request], capacity_milli: int, seed: int,
                    arrival_limit: float = 1.3) -> list[Request]:
    """Requests drawn with replacement until their GPU reaches the limit, shuffled."""
    rng = np.random.default_rng(seed)
    gpu = np.array([r.gpu_total_milli for r in requests], dtype=np.int64)
    if gpu.sum() <= 0:
        raise ValueError("the pod list requests no GPU; the FGD protocol needs GPU pods")
    target = arrival_limit * capacity_milli
    picked: list[int] = []
    total = 0
    while total < target:
        # draw in chunks: far fewer generator calls than one pod at a time
        chunk = rng.integers(len(requests), size=4096)
        cum = total + np.cumsum(gpu[chunk])
        stop = int(np.searchsorted(cum, target, side="left"))
        if stop < len(chunk):
            picked.extend(chunk[: stop + 1].tolist())
            total = int(cum[stop])
        else:
            picked.extend(chunk.tolist())
            total = int(cum[-1])
    order = rng.permutation(len(picked))
    return [requests[picked[i]] for i in order]


def run_fgd(nodes: list[Node], requests: Sequence[Request], policy: str, seed: int,
            *, arrival_limit: float = 1.3, typical: TypicalWorkload | None = None,
            tick: Callable[[], None] | None = None) -> FgdRun:
    """One experiment: one policy, one seed."""
    typical = typical or TypicalWorkload.from_requests(requests)
    state = ClusterState(nodes)
    capacity = state.total_gpu_milli
    pods = sample_workload(requests, capacity, seed, arrival_limit)
    pol = make_policy(policy, typical)
    rng = np.random.default_rng(seed + 1_000_003)
    arrived = 0
    allocated = 0
    unplaced = 0
    step = arrival_limit / (CURVE_POINTS - 1) * capacity
    next_mark = 0.0
    curve: list[tuple[float, float]] = []
    for req in pods:
        while arrived >= next_mark and len(curve) < CURVE_POINTS:
            curve.append((100.0 * next_mark / capacity, 100.0 * allocated / capacity))
            next_mark += step
        arrived += req.gpu_total_milli
        where = pol.place(state, req, rng)
        if where is None:
            unplaced += 1
        else:
            state.allocate(req, where)
            if isinstance(pol, GpuClustering):
                pol.placed(state, req, where)
            allocated += req.gpu_total_milli
        if tick is not None:
            tick()
    while len(curve) < CURVE_POINTS:
        curve.append((100.0 * next_mark / capacity, 100.0 * allocated / capacity))
        next_mark += step
    assert allocated == state.allocated_gpu_milli()
    frag = FragMeter(typical, state).cluster(state)
    return FgdRun(policy=policy, seed=seed, pods=len(pods), unplaced=unplaced,
                  allocation_ratio=100.0 * allocated / capacity, curve=curve,
                  fragmentation=100.0 * frag / capacity)


def fgd_table(nodes: list[Node], requests: Mapping[str, Sequence[Request]], policies: list[str],
              seeds: list[int], *, arrival_limit: float = 1.3,
              progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """Every (trace, policy, seed) experiment; means and per-seed allocation ratios (%).

    ``{"mean": {trace: {policy: pct}}, "per_seed": {trace: {policy: {seed: pct}}},
    "unallocated_gpus": {trace: {policy: gpus}}, "seeds", "arrival_pct", "gpus"}``
    """
    capacity = sum(n.gpus for n in nodes) * MILLI
    mean: dict[str, dict[str, float]] = {}
    per_seed: dict[str, dict[str, dict[str, float]]] = {}
    unallocated: dict[str, dict[str, float]] = {}
    done = 0
    for trace, reqs in requests.items():
        typical = TypicalWorkload.from_requests(reqs)
        mean[trace], per_seed[trace], unallocated[trace] = {}, {}, {}
        for policy in policies:
            values = {}
            for seed in seeds:
                r = run_fgd(nodes, reqs, policy, seed, arrival_limit=arrival_limit,
                            typical=typical)
                values[str(seed)] = round(r.allocation_ratio, 4)
                done += 1
                if progress is not None:
                    progress(done)
            m = sum(values.values()) / len(values)
            mean[trace][policy] = round(m, 4)
            per_seed[trace][policy] = values
            unallocated[trace][policy] = round((100 - m) / 100 * capacity / MILLI, 1)
    return {"mean": mean, "per_seed": per_seed, "unallocated_gpus": unallocated,
            "seeds": seeds, "arrival_pct": round(arrival_limit * 100, 6),
            "gpus": capacity // MILLI}
