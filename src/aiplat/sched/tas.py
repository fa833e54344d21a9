"""Topology-aware placement of one pod set (Kueue TAS, BestFit domain choice).

Levels, coarse to fine: ``block`` → ``rack`` → ``host`` (the node). A *required* level puts
every pod of the pod set in one domain of that level; *preferred* tries that level, climbs
one level at a time when no single domain has room, and finally spreads over the whole pool.

BestFit (KEP-2724): among domains of the level that can hold all pods, take the tightest (the
least spare capacity), so large holes stay free for large pod sets; inside the chosen domain,
take nodes by most free capacity and finish with the node that fits the remainder most
tightly (rack nodes with room for 3, 3, 2, 1 pods and 7 pods → 3 + 3 + 1).

Capacity of a node = how many copies of the pod's request fit there now (CPU, memory, and
GPU: whole free GPUs ÷ GPUs per pod, or Σ ⌊free milli ÷ request⌋ for fractional pods).
Pure: no I/O.
"""

from __future__ import annotations

import numpy as np

from aiplat.sched.cluster import ClusterState, IntArray, Request
from aiplat.sched.workload import LEVELS, Level, PodSet


def capacity(state: ClusterState, req: Request, nodes: IntArray) -> IntArray:
    big = np.iinfo(np.int64).max // 4
    cpu = state.cpu_free[nodes] // req.cpu_milli if req.cpu_milli else np.full(len(nodes), big)
    mem = (state.mem_free[nodes] // req.memory_mib if req.memory_mib
           else np.full(len(nodes), big))
    cap = np.minimum(cpu, mem)
    if req.num_gpu:
        if req.shared:
            gpu = np.clip(state.gfree[nodes], 0, None) // req.gpu_milli
            g = gpu.sum(axis=1)
        else:
            g = state.full_count[nodes] // req.num_gpu
        cap = np.minimum(cap, g * state.model_ok(req.gpu_models)[nodes])
    return np.where(state.up[nodes], cap, 0).astype(np.int64)


def _domain(state: ClusterState, n: int, level: Level) -> str:
    node = state.nodes[n]
    if level == "block":
        return node.block
    if level == "rack":
        return f"{node.block}/{node.rack}"
    return node.name


def _fill(nodes: IntArray, cap: IntArray, count: int) -> list[tuple[int, int]] | None:
    """Most free first, finish with the tightest fit: [(node, pods)]."""
    if cap.sum() < count:
        return None
    order = np.argsort(-cap, kind="stable")
    out: list[tuple[int, int]] = []
    left = count
    remaining = list(order)
    while left > 0:
        fitting = [i for i in remaining if cap[i] >= left]
        if fitting:
            best = min(fitting, key=lambda i: (cap[i], i))
            out.append((int(nodes[best]), left))
            return out
        i = remaining.pop(0)
        out.append((int(nodes[i]), int(cap[i])))
        left -= int(cap[i])
    return out


def plan_podset(
    state: ClusterState, podset: PodSet, pool_nodes: IntArray
) -> list[tuple[int, int]] | None:
    """Nodes and pod counts for a topology-constrained pod set, or None if it cannot go."""
    topo = podset.topology
    assert topo is not None
    cap = capacity(state, podset.request, pool_nodes)
    start = LEVELS.index(topo.level)
    levels: list[Level | None] = [topo.level]
    if topo.mode == "preferred":
        levels = [*reversed(LEVELS[:start + 1])]
        levels.append(None)  # anywhere in the pool
    for level in levels:
        if level is None:
            return _fill(pool_nodes, cap, podset.count)
        domains: dict[str, list[int]] = {}
        for i, n in enumerate(pool_nodes):
            if cap[i] > 0:
                domains.setdefault(_domain(state, int(n), level), []).append(i)
        fitting = [(int(cap[ix].sum()), name) for name, ix in domains.items()
                   if cap[ix].sum() >= podset.count]
        if fitting:
            _, name = min(fitting)
            ix = np.array(domains[name], dtype=np.int64)
            return _fill(pool_nodes[ix], cap[ix], podset.count)
    return None
