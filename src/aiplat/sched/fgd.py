"""The FGD paper's experiment, as a pure function: the published simulator's protocol by
default, aiplat's earlier reading of it as a named variant.

Protocol (../shared/data/README.md; the rules and their sources in the published simulator,
hkust-adsl/kubernetes-scheduler-simulator, are in :mod:`aiplat.sched.fgd_protocol` and
:mod:`aiplat.sched.fgd_policies`): the GPU nodes only (rule 2: ``data/prepare_input.sh``
copies the GPU node list into each trace folder); the trace's pods shuffled and topped up
by draws until 1.3x the GPU capacity (rule 8); each placed by the policy under test, ties to
the seed's node order (rule 1); no pod ever leaves, and a pod that fits nowhere stays
unplaced. FGD measures fragmentation against the popular 95% of the shapes (rule 6). The
headline is the mean allocation ratio over the pods whose arrival rounds to 130% (rule 9).

:class:`FgdOptions` switches single rules to aiplat's own choices (random ties, exact FGD
deltas, every shape, all nodes), so what each changes is measured, not guessed;
``variant="aiplat"`` is the whole earlier model (its own sampling, policies and metric).
Every result carries the label of the variant that produced it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from aiplat.sched.cluster import MILLI, ClusterState, Node, Request
from aiplat.sched.fgd_policies import FgdScore, TieRule, Ties, make_published
from aiplat.sched.fgd_protocol import (
    AllocLog,
    Draws,
    NumpyDraws,
    curve,
    headline,
    node_ranks,
    pod_sequence,
    typical_shapes,
)
from aiplat.sched.frag import FragMeter, TypicalWorkload
from aiplat.sched.policies import GpuClustering, make_policy

PAPER_POLICIES = ("random", "dotprod", "clustering", "packing", "bestfit", "fgd")
CURVE_POINTS = 27  # arrivals 0%, 5%, ... 130%


@dataclass(frozen=True)
class FgdOptions:
    """Which rules an experiment follows; the defaults are the published simulator's."""

    variant: Literal["published", "aiplat"] = "published"
    ties: TieRule = "node-order"  # rule 1; "random": a fresh random choice among equals
    fgd_score: FgdScore = "integer"  # rule 4; "exact": the smallest float increase
    typical: Literal["popular", "all"] = "popular"  # rule 6; "all": every shape
    nodes: Literal["gpu", "all"] = "gpu"  # rule 2; "all": CPU-only nodes too

    @classmethod
    def aiplat(cls) -> FgdOptions:
        """aiplat's earlier model, whole."""
        return cls("aiplat", "random", "exact", "all", "all")

    @property
    def label(self) -> str:
        """``published``, ``published (ties=random, ...)`` or ``aiplat``."""
        if self.variant == "aiplat":
            return "aiplat"
        default = FgdOptions()
        changed = [f"{k.replace('_', '-')}={v}" for k, v in asdict(self).items()
                   if v != asdict(default)[k]]
        return "published" + (f" ({', '.join(changed)})" if changed else "")


def cluster_nodes(nodes: Sequence[Node], options: FgdOptions) -> list[Node]:
    """The nodes the experiment runs on (rule 2)."""
    # in name order: the order the seed's permutation is laid over (syncClusterResourceList)
    nodes = sorted(nodes, key=lambda n: n.name)
    if options.nodes == "all":
        return nodes
    gpu = [n for n in nodes if n.gpus > 0]
    if not gpu:
        raise ValueError("the node list has no GPU node; the FGD protocol needs GPUs")
    return gpu


def typical_workload(requests: Sequence[Request], options: FgdOptions) -> TypicalWorkload:
    """FGD's target workload (rule 6)."""
    if options.typical == "all":
        return TypicalWorkload.from_requests(requests)
    return TypicalWorkload.from_shapes(typical_shapes(requests))


@dataclass(frozen=True)
class FgdRun:
    policy: str
    seed: int
    pods: int
    unplaced: int
    allocation_ratio: float  # percent, at the arrival limit
    curve: list[tuple[float, float]]  # (arrived % of capacity, allocated %)
    fragmentation: float  # percent of GPU capacity, FGD measure, at the end
    variant: str = field(default="published")


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


def run_fgd(nodes: Sequence[Node], requests: Sequence[Request], policy: str, seed: int,
            *, arrival_limit: float = 1.3, typical: TypicalWorkload | None = None,
            tick: Callable[[], None] | None = None,
            options: FgdOptions | None = None, draws: Draws | None = None) -> FgdRun:
    """One experiment: one policy, one seed, the rules of ``options`` (default: the
    published simulator's). ``nodes`` may include CPU-only nodes: ``options.nodes`` decides
    whether they take part. ``draws`` replaces numpy's generator for the pod sequence and
    the node order (the published protocol only)."""
    options = options or FgdOptions()
    nodes = cluster_nodes(nodes, options)
    typical = typical or typical_workload(requests, options)
    if options.variant == "aiplat":
        return _run_aiplat(nodes, requests, policy, seed, arrival_limit=arrival_limit,
                           typical=typical, tick=tick)
    return _run_published(nodes, requests, policy, seed, arrival_limit=arrival_limit,
                          typical=typical, tick=tick, options=options, draws=draws)


def _run_published(nodes: list[Node], requests: Sequence[Request], policy: str, seed: int,
                   *, arrival_limit: float, typical: TypicalWorkload,
                   tick: Callable[[], None] | None, options: FgdOptions,
                   draws: Draws | None) -> FgdRun:
    state = ClusterState(nodes)
    capacity = state.total_gpu_milli
    # one generator, drawn from in the simulator's order: pods, then node names, then
    # whatever the policy draws (core.go Simulate, simulator.go syncClusterResourceList)
    rng = np.random.default_rng(seed)
    drawn = draws or NumpyDraws(rng)
    pods = pod_sequence(requests, capacity, drawn, arrival_limit)
    ties = Ties(options.ties, node_ranks(len(nodes), drawn), rng)
    pol = make_published(policy, ties, typical, options.fgd_score)
    # the running sums after each pod, as Python ints (numpy's scalar stores cost more)
    arrived: list[int] = []
    allocated: list[int] = []
    arr = alloc = unplaced = 0
    for req in pods:
        arr += req.gpu_total_milli  # counted before the attempt (simulator.go SchedulePods)
        where = pol.place(state, req)
        if where is None:
            unplaced += 1
        else:
            state.allocate(req, where)
            pol.placed(state, req, where)
            alloc += req.gpu_total_milli
        arrived.append(arr)
        allocated.append(alloc)
        if tick is not None:
            tick()
    assert alloc == state.allocated_gpu_milli()
    log = AllocLog(np.array(arrived, dtype=np.int64), np.array(allocated, dtype=np.int64),
                   capacity // MILLI)
    pct = round(arrival_limit * 100)
    frag = FragMeter(typical, state).cluster(state)
    return FgdRun(policy=policy, seed=seed, pods=len(pods), unplaced=unplaced,
                  allocation_ratio=headline(log, pct),
                  curve=curve(log, range(0, pct + 1, 5)),
                  fragmentation=100.0 * frag / capacity,
                  variant=options.label + ("" if drawn.name == "numpy" else f" [{drawn.name}]"))


def _run_aiplat(nodes: list[Node], requests: Sequence[Request], policy: str, seed: int,
                *, arrival_limit: float, typical: TypicalWorkload,
                tick: Callable[[], None] | None) -> FgdRun:
    """aiplat's earlier model: its own sampling (draws until the limit, all shuffled),
    :mod:`aiplat.sched.policies` with random ties, the allocation after the last pod."""
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
    points: list[tuple[float, float]] = []
    for req in pods:
        while arrived >= next_mark and len(points) < CURVE_POINTS:
            points.append((100.0 * next_mark / capacity, 100.0 * allocated / capacity))
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
    while len(points) < CURVE_POINTS:
        points.append((100.0 * next_mark / capacity, 100.0 * allocated / capacity))
        next_mark += step
    assert allocated == state.allocated_gpu_milli()
    frag = FragMeter(typical, state).cluster(state)
    return FgdRun(policy=policy, seed=seed, pods=len(pods), unplaced=unplaced,
                  allocation_ratio=100.0 * allocated / capacity, curve=points,
                  fragmentation=100.0 * frag / capacity, variant="aiplat")


def fgd_table(nodes: Sequence[Node], requests: Mapping[str, Sequence[Request]],
              policies: list[str], seeds: list[int], *, arrival_limit: float = 1.3,
              progress: Callable[[int, int, str], None] | None = None,
              options: FgdOptions | None = None) -> dict[str, Any]:
    """Every (trace, policy, seed) experiment; means and per-seed allocation ratios (%).
    ``progress(done, total, running)``, when given, hears before each experiment how many
    are done and which one starts (``"default fgd seed 42"``), and ``(total, total, "")``
    at the end.

    ``{"mean": {trace: {policy: pct}}, "per_seed": {trace: {policy: {seed: pct}}},
    "unallocated_gpus": {trace: {policy: gpus}}, "seeds", "arrival_pct", "gpus",
    "variant", "options"}``
    """
    options = options or FgdOptions()
    nodes = cluster_nodes(nodes, options)
    capacity = sum(n.gpus for n in nodes) * MILLI
    mean: dict[str, dict[str, float]] = {}
    per_seed: dict[str, dict[str, dict[str, float]]] = {}
    unallocated: dict[str, dict[str, float]] = {}
    done, total = 0, len(requests) * len(policies) * len(seeds)
    for trace, reqs in requests.items():
        typical = typical_workload(reqs, options)
        mean[trace], per_seed[trace], unallocated[trace] = {}, {}, {}
        for policy in policies:
            values = {}
            for seed in seeds:
                if progress is not None:
                    progress(done, total, f"{trace} {policy} seed {seed}")
                r = run_fgd(nodes, reqs, policy, seed, arrival_limit=arrival_limit,
                            typical=typical, options=options)
                values[str(seed)] = round(r.allocation_ratio, 4)
                done += 1
            m = sum(values.values()) / len(values)
            mean[trace][policy] = round(m, 4)
            per_seed[trace][policy] = values
            unallocated[trace][policy] = round((100 - m) / 100 * capacity / MILLI, 1)
    if progress is not None:
        progress(done, total, "")
    return {"mean": mean, "per_seed": per_seed, "unallocated_gpus": unallocated,
            "seeds": seeds, "arrival_pct": round(arrival_limit * 100, 6),
            "gpus": capacity // MILLI, "variant": options.label, "options": asdict(options)}
