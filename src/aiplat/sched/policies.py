"""Placement policies of the queueing engine: which node (and which GPUs on it) a pod goes to.

The six policies of the FGD paper as aiplat first read them, plus the two Kubernetes
``NodeResourcesFit`` strategies. ``aiplat sim fgd`` scores the six as the published
simulator does (:mod:`aiplat.sched.fgd_policies`); these stay the engine's (``sim run``,
``sim compare``, the plan report) and ``sim fgd --variant aiplat``. Where they differ from
the published simulator: random ties, DotProd normalised by each node's capacity and scored
per GPU, GpuClustering tagged by per-GPU milli (all whole-GPU pods alike), FGD by exact
float deltas, BestFit by the cluster's largest node.

- ``random``: any feasible node.
- ``dotprod`` (Tetris): per candidate GPU, the dot product of the node's free (CPU, GPU)
  vector and the pod's request, both normalised by the node's capacity; the *smallest*
  product wins (the simulator scores ``1 - dot``).
- ``clustering``: pods with the same GPU request go together: a node running only that
  request scores in (75, 100], one running it among others (50, 75], an idle node
  (25, 50], others (0, 25]; inside a band, fewer free GPUs score higher.
- ``packing``: shared GPUs first, then free GPUs on used nodes, then idle nodes.
- ``bestfit``: the least free CPU and GPU (equal weights) left after placement.
- ``fgd``: the smallest growth of fragmentation (:mod:`aiplat.sched.frag`); the GPU of a
  fractional pod is chosen the same way.
- ``least-allocated`` / ``most-allocated``: Kubernetes' spreading and bin-packing scores over
  CPU, memory and (on GPU nodes) GPU.

Scores are integers 0..100 (except FGD, which compares exact fragmentation deltas) and ties
go to a random node among the best: the seeded generator makes this reproducible. Every
policy only looks at feasible nodes (:meth:`ClusterState.feasible`). Non-FGD policies take
the tightest-fitting GPU for a fractional pod and the first free GPUs for a whole one,
except ``dotprod`` which scores each GPU. Pure: no I/O.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from aiplat.sched.cluster import MILLI, ClusterState, IntArray, Placement, Request
from aiplat.sched.frag import FragMeter, TypicalWorkload

MAX_SCORE = 100
ENGINE_VARIANT = "aiplat"
"""The variant behind ``sim run``/``sim compare`` and the plan report: the queueing engine
places with these policies (random ties, exact FGD deltas, every shape of the workload in
the fragmentation measure), not the published simulator's (:mod:`aiplat.sched.fgd`)."""


class Policy(Protocol):
    name: str

    def place(
        self, state: ClusterState, req: Request, rng: np.random.Generator
    ) -> Placement | None: ...


def _pick(idx: IntArray, scores: np.ndarray, rng: np.random.Generator, *, low: bool = False) -> int:
    best = scores.min() if low else scores.max()
    cand = idx[scores == best]
    return int(cand[0] if len(cand) == 1 else cand[rng.integers(len(cand))])


class _Scored:
    """A policy defined by an integer score per feasible node (higher is better)."""

    name = ""

    def place(
        self, state: ClusterState, req: Request, rng: np.random.Generator
    ) -> Placement | None:
        idx = state.feasible(req).nonzero()[0]
        if not len(idx):
            return None
        node = _pick(idx, self.scores(state, req, idx), rng)
        return Placement(node, state.default_gpus(node, req))

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        raise NotImplementedError


class RandomPolicy(_Scored):
    name = "random"

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        return np.zeros(len(idx), dtype=np.int64)


class BestFit(_Scored):
    name = "bestfit"

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        max_cpu = float(state.cpu_cap.max())
        max_gpu = float(state.gmax * MILLI)
        left = 0.5 * (state.cpu_free[idx] - req.cpu_milli) / max_cpu
        left += 0.5 * (state.total_free[idx] - req.gpu_total_milli) / max_gpu
        return ((1.0 - left) * MAX_SCORE).astype(np.int64)


class GpuPacking(_Scored):
    name = "packing"

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        if not req.num_gpu:
            return np.zeros(len(idx), dtype=np.int64)
        count = state.gpu_count[idx]
        full = state.full_count[idx]
        idle = full == count
        if req.shared:
            row = state.gfree[idx]
            tight = np.where(row >= req.gpu_milli, row, MILLI + 1).min(axis=1)
            on_used = tight < MILLI
            shared_score = np.maximum(MAX_SCORE - (tight * 100 // MILLI) // 10, MAX_SCORE // 2)
            fresh = np.full(len(idx), MAX_SCORE // 2 - 1)
            score = np.where(on_used, shared_score, fresh)
        else:
            score = np.full(len(idx), max(MAX_SCORE // 2 - req.num_gpu, MAX_SCORE // 3))
        idle_score = np.maximum(MAX_SCORE // 3 - count, count)
        return np.where(idle, idle_score, score).astype(np.int64)


class GpuClustering(_Scored):
    """Needs to know which GPU requests run on each node: kept here, fed by the engine
    through :meth:`placed` and :meth:`released` (a request's tag is its ``gpu_milli``)."""

    name = "clustering"

    def __init__(self) -> None:
        self._tags: np.ndarray | None = None
        self._ntags: np.ndarray | None = None

    def _ensure(self, state: ClusterState) -> tuple[np.ndarray, np.ndarray]:
        if self._tags is None or self._tags.shape[0] != len(state) or self._ntags is None:
            self._tags = np.zeros((len(state), MILLI + 1), dtype=np.int32)
            self._ntags = np.zeros(len(state), dtype=np.int64)
        return self._tags, self._ntags

    def placed(self, state: ClusterState, req: Request, where: Placement) -> None:
        if req.num_gpu:
            tags, ntags = self._ensure(state)
            if tags[where.node, req.gpu_milli] == 0:
                ntags[where.node] += 1
            tags[where.node, req.gpu_milli] += 1

    def released(self, state: ClusterState, req: Request, where: Placement) -> None:
        if req.num_gpu:
            tags, ntags = self._ensure(state)
            tags[where.node, req.gpu_milli] -= 1
            if tags[where.node, req.gpu_milli] == 0:
                ntags[where.node] -= 1

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        if not req.num_gpu:
            return np.zeros(len(idx), dtype=np.int64)
        tags, ntags = self._ensure(state)
        spec = state.gmax * MILLI
        base = (MAX_SCORE // 4) * (spec - state.total_free[idx]) // spec
        has = tags[idx, req.gpu_milli] > 0
        n = ntags[idx]
        band = np.where(has, np.where(n == 1, 75, 50), np.where(n == 0, 25, 0))
        return (base + band).astype(np.int64)


class DotProd:
    name = "dotprod"

    def place(
        self, state: ClusterState, req: Request, rng: np.random.Generator
    ) -> Placement | None:
        idx = state.feasible(req).nonzero()[0]
        if not len(idx):
            return None
        cap = state.cpu_cap[idx].astype(np.float64)
        cpu_dot = (state.cpu_free[idx] / cap) * (req.cpu_milli / cap)
        if req.shared:
            row = state.gfree[idx]
            dot = cpu_dot[:, None] + (row / MILLI) * (req.gpu_milli / MILLI)
            score = ((1.0 - dot / 2) * MAX_SCORE).astype(np.int64)
            score = np.where(row >= req.gpu_milli, score, -1)
            best_gpu = score.argmax(axis=1)
            node_score = score[np.arange(len(idx)), best_gpu]
            node = _pick(idx, node_score, rng)
            return Placement(node, (int(best_gpu[np.flatnonzero(idx == node)[0]]),))
        gcap = np.maximum(state.gpu_count[idx], 1) * float(MILLI)
        dot = cpu_dot + (state.total_free[idx] / gcap) * (req.gpu_total_milli / gcap)
        dims = 2 if req.num_gpu else 1
        score = ((1.0 - dot / dims) * MAX_SCORE).astype(np.int64)
        node = _pick(idx, score, rng)
        return Placement(node, state.default_gpus(node, req))


SMALL_CLUSTER = 64
"""Up to this many nodes, least/most-allocated score a pod without GPUs in Python floats:
numpy's cost per call (about 20 operations a placement) is more than the work on 10 nodes."""


class _KubeFit(_Scored):
    most = False
    _state: ClusterState | None = None
    _static: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool] | None = None
    _lists: tuple[bool, list[int], list[int], list[bool], list[int], list[int]] | None = None

    def _capacities(self, state: ClusterState) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         np.ndarray, bool]:
        """What the scores divide by (the nodes' capacities do not change)."""
        if self._state is not state or self._static is None:
            gcap = state.gpu_count * MILLI
            has_gpu = gcap > 0
            self._state = state
            self._static = (np.maximum(state.mem_cap, 1), has_gpu, np.maximum(gcap, 1),
                            2 + has_gpu, bool(has_gpu.any()))
            self._lists = None
        return self._static

    def place(
        self, state: ClusterState, req: Request, rng: np.random.Generator
    ) -> Placement | None:
        if req.num_gpu or len(state) > SMALL_CLUSTER or not self._small(state)[0]:
            return super().place(state, req, rng)
        return self._place_small(state, req, rng)

    def _small(self, state: ClusterState) -> tuple[bool, list[int], list[int], list[bool],
                                                   list[int], list[int]]:
        """:meth:`_capacities` as lists, and whether every node has CPU (else numpy's 0/0)."""
        mem_cap, has_gpu, gcap, dims, _ = self._capacities(state)
        if self._lists is None:
            cpu_cap = state.cpu_cap.tolist()
            self._lists = (all(cpu_cap), cpu_cap, mem_cap.tolist(), has_gpu.tolist(),
                           gcap.tolist(), dims.tolist())
        return self._lists

    def _place_small(
        self, state: ClusterState, req: Request, rng: np.random.Generator
    ) -> Placement | None:
        """:meth:`scores` and :func:`_pick` node by node, in Python floats (IEEE doubles as
        numpy's, the same operations in the same order: the same scores, the same draws)."""
        _, cpu_cap, mem_l, gpu_l, gcap_l, dims_l = self._small(state)
        any_gpu = any(gpu_l)
        cpu, mem = req.cpu_milli, req.memory_mib
        cpu_free, mem_free = state.cpu_free.tolist(), state.mem_free.tolist()
        total_free = state.total_free.tolist() if any_gpu else None
        cand: list[int] = []
        best = 0
        for i, up in enumerate(state.up.tolist()):
            if not up or cpu_free[i] < cpu or mem_free[i] < mem:
                continue
            free = (cpu_free[i] - cpu) / cpu_cap[i] + (mem_free[i] - mem) / mem_l[i]
            if total_free is not None:
                free = free + (total_free[i] / gcap_l[i] if gpu_l[i] else 0.0)
            free = free / dims_l[i]
            score = int(((1.0 - free) if self.most else free) * MAX_SCORE)
            if not cand or score > best:
                cand, best = [i], score
            elif score == best:
                cand.append(i)
        if not cand:
            return None
        return Placement(cand[0] if len(cand) == 1 else cand[rng.integers(len(cand))])

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        mem_cap, has_gpu, gcap, dims, any_gpu = self._capacities(state)
        cpu = (state.cpu_free[idx] - req.cpu_milli) / state.cpu_cap[idx]
        free: np.ndarray = cpu + (state.mem_free[idx] - req.memory_mib) / mem_cap[idx]
        if any_gpu:  # (a node without GPUs adds 0.0: the same sum)
            free = free + np.where(has_gpu[idx], (state.total_free[idx] - req.gpu_total_milli)
                                   / gcap[idx], 0.0)
        free = free / dims[idx]
        share = 1.0 - free if self.most else free
        return (share * MAX_SCORE).astype(np.int64)


class LeastAllocated(_KubeFit):
    name = "least-allocated"


class MostAllocated(_KubeFit):
    name = "most-allocated"
    most = True


class FGD:
    """Fragmentation Gradient Descent. Per-node deltas are cached per request shape and
    recomputed only for nodes whose state changed since (``ClusterState.version``)."""

    name = "fgd"

    def __init__(self, workload: TypicalWorkload) -> None:
        self.workload = workload
        self._meter: FragMeter | None = None
        self._state_id = -1
        self._cache: dict[tuple[int, int, int, frozenset[str]], tuple[np.ndarray, ...]] = {}

    def _bind(self, state: ClusterState) -> FragMeter:
        if self._meter is None or self._state_id != id(state):
            self._meter = FragMeter(self.workload, state)
            self._state_id = id(state)
            self._cache.clear()
        return self._meter

    def place(
        self, state: ClusterState, req: Request, rng: np.random.Generator
    ) -> Placement | None:
        meter = self._bind(state)
        idx = state.feasible(req).nonzero()[0]
        if not len(idx):
            return None
        n = len(state)
        entry = self._cache.get(req.kind)
        if entry is None:
            entry = (np.full(n, -1, dtype=np.int64), np.zeros(n), np.zeros(n, dtype=np.int64))
            self._cache[req.kind] = entry
        seen, delta, gpu = entry
        stale = idx[seen[idx] != state.version[idx]]
        if len(stale):
            d, g = self._deltas(meter, state, req, stale)
            delta[stale] = d
            gpu[stale] = g
            seen[stale] = state.version[stale]
        node = _pick(idx, delta[idx], rng, low=True)
        if req.shared:
            return Placement(node, (int(gpu[node]),))
        return Placement(node, state.default_gpus(node, req))

    @staticmethod
    def _deltas(
        meter: FragMeter, state: ClusterState, req: Request, r: IntArray
    ) -> tuple[np.ndarray, np.ndarray]:
        before = meter.nodes(state, r)
        rows = state.gfree[r]
        cpu_after = state.cpu_free[r] - req.cpu_milli
        models = state.model_id[r]
        if req.shared:
            g = state.gmax
            after = np.repeat(rows[:, None, :], g, axis=1)  # [R, candidate, slot]
            after[:, np.arange(g), np.arange(g)] -= req.gpu_milli
            frag = meter.of(after.reshape(-1, g), np.repeat(cpu_after, g), np.repeat(models, g))
            frag = frag.reshape(len(r), g)
            frag = np.where(rows >= req.gpu_milli, frag, np.inf)
            best = frag.argmin(axis=1)
            return frag[np.arange(len(r)), best] - before, best
        after = rows.copy()
        if req.num_gpu:
            # the first num_gpu entirely free GPUs (which ones does not change the measure)
            full = after == MILLI
            take = full & (np.cumsum(full, axis=1) <= req.num_gpu)
            after[take] = 0
        frag = meter.of(after, cpu_after, models)
        return frag - before, np.zeros(len(r), dtype=np.int64)


POLICY_NAMES = (
    "random", "dotprod", "clustering", "packing", "bestfit", "fgd",
    "least-allocated", "most-allocated",
)
"""The FGD paper's six first, in its order, then the two Kubernetes strategies."""


def make_policy(name: str, typical: TypicalWorkload | None = None) -> Policy:
    """A fresh policy by name; ``fgd`` needs the typical workload."""
    simple: dict[str, type[_Scored] | type[DotProd]] = {
        "random": RandomPolicy, "dotprod": DotProd, "clustering": GpuClustering,
        "packing": GpuPacking, "bestfit": BestFit, "least-allocated": LeastAllocated,
        "most-allocated": MostAllocated,
    }
    if name == "fgd":
        if typical is None:
            raise ValueError("the fgd policy needs a typical workload (the trace's pod shapes)")
        return FGD(typical)
    if name not in simple:
        raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICY_NAMES)}")
    return simple[name]()
