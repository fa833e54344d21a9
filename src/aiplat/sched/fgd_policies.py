"""The six policies as the published FGD simulator scores them (hkust-adsl/
kubernetes-scheduler-simulator, commit 8f3d641; paths are in that repository).

Every policy scores the feasible nodes with an integer 0..100 and the best wins; a tie goes
to the first node in the seed's node order (:class:`Ties`, rule 1) or, as aiplat's own
choice, to a random one. The GPU of a fractional pod is then chosen by the run's
``-gpusel`` (``scripts/generate_config_and_run.py``; ``plugin/open_gpu_share.go``): the
tightest fit ("best", first index among equals) except Random (a uniformly random GPU that
fits, rule 7) and FGD (its own choice, rule 4); a whole-GPU pod takes the first entirely
free GPUs (``AllocateExclusiveGpuId``, ``pkg/type/resource.go``). Scores read only CPU and
GPU; memory only decides feasibility (the default NodeResourcesFit filter).

These classes serve ``aiplat sim fgd``; the queueing engine keeps :mod:`aiplat.sched.policies`.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from aiplat.sched.cluster import MILLI, ClusterState, IntArray, Placement, Request
from aiplat.sched.fgd_cache import FgdIndex, shape_scores
from aiplat.sched.frag import FragMeter, TypicalWorkload

MAX_SCORE = 100
# pkg/type/open-gpu-share/utils/const.go: MaxSpecCpu, MaxSpecGpu (the fixed maxima that
# BestFit, DotProd and GpuClustering normalise by)
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000

TieRule = Literal["node-order", "random"]
FgdScore = Literal["integer", "exact"]


class Ties:
    """Picks the winner among the best-scored nodes."""

    def __init__(self, rule: TieRule, rank: IntArray, rng: np.random.Generator) -> None:
        self.rule = rule
        self.rank = rank
        self.rng = rng

    def pick(self, idx: IntArray, scores: np.ndarray) -> int:
        cand = idx[scores == scores.max()]
        if len(cand) == 1:
            return int(cand[0])
        if self.rule == "random":  # aiplat's choice: a fresh random node each time
            return int(cand[self.rng.integers(len(cand))])
        return int(cand[np.argmin(self.rank[cand])])


class PublishedPolicy:
    """Base: feasible nodes, a score per node, the tie rule, then the GPU choice."""

    name = ""

    def __init__(self, ties: Ties) -> None:
        self.ties = ties

    def place(self, state: ClusterState, req: Request) -> Placement | None:
        # nonzero()[0]: flatnonzero's ravel wrapper costs more than the work on a 1-D mask
        idx = state.feasible(req).nonzero()[0]
        if not len(idx):
            return None
        node = self.ties.pick(idx, self.scores(state, req, idx))
        return Placement(node, self.gpus(state, req, node))

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        raise NotImplementedError

    def gpus(self, state: ClusterState, req: Request, node: int) -> tuple[int, ...]:
        return state.default_gpus(node, req)  # -gpusel best

    def placed(self, state: ClusterState, req: Request, where: Placement) -> None:
        """Called after each allocation (GpuClustering keeps its tags here)."""


class RandomFit(PublishedPolicy):
    """``plugin/random_score.go``: PreScore draws one feasible node, which alone scores 100;
    ``-gpusel random`` (``allocateGpuIdBasedOnRandomFit``): a uniformly random fitting GPU."""

    name = "random"

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        out = np.zeros(len(idx), dtype=np.int64)
        out[self.ties.rng.integers(len(idx))] = MAX_SCORE
        return out

    def gpus(self, state: ClusterState, req: Request, node: int) -> tuple[int, ...]:
        if not req.shared:
            return state.default_gpus(node, req)
        fits = (state.gfree[node] >= req.gpu_milli).nonzero()[0]
        return (int(fits[self.ties.rng.integers(len(fits))]),)


class DotProd(PublishedPolicy):
    """``plugin/dot_product_score.go`` with ``-dimext merge -norm max``: node (free CPU, total
    free GPU milli) and pod (CPU, total GPU milli), both divided by the fixed maxima; the dot
    product divided by the vector length (2, CPU-only pods too); score ``int(100 (1 - x))``
    (``pkg/utils/utils.go`` ``GenerateSchedulingMatchGroups``, ``pkg/type/resource.go``
    ``ToVirtualNodeResourceList``). The GPU is the tightest fit (``-gpusel best``)."""

    name = "dotprod"

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        dot = (state.cpu_free[idx] / MAX_SPEC_CPU) * (req.cpu_milli / MAX_SPEC_CPU)
        dot = dot + (state.total_free[idx] / MAX_SPEC_GPU) * (req.gpu_total_milli / MAX_SPEC_GPU)
        dot = dot / 2.0
        return (MAX_SCORE * (1.0 - dot)).astype(np.int64)


class BestFit(PublishedPolicy):
    """``plugin/best_fit_score.go``: the CPU and total GPU left after placement over the
    fixed maxima, weighted 0.5 each; score ``int(100 (1 - left))``. Its NormalizeScore
    (min-max onto 0..100, ``plugin_utils.go``) keeps the order and the ties of scores that
    already lie in 0..100, so it is not repeated here."""

    name = "bestfit"

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        left = (state.cpu_free[idx] - req.cpu_milli) / MAX_SPEC_CPU * 0.5
        left = left + (state.total_free[idx] - req.gpu_total_milli) / MAX_SPEC_GPU * 0.5
        return ((1.0 - left) * MAX_SCORE).astype(np.int64)


class GpuPacking(PublishedPolicy):
    """``plugin/gpu_packing_score.go`` ``getPackingScore``: CPU-only pods score 0 everywhere
    (ties decide); an idle node ``max(33 - GPUs, GPUs)``; a pod that needs an entirely free
    GPU on a used node ``max(50 - that many, 33)``; a fractional pod on a used GPU
    ``max(100 - its free percent / 10, 50)``."""

    name = "packing"

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        if not req.num_gpu:
            return np.zeros(len(idx), dtype=np.int64)
        count = state.gpu_count[idx]
        idle = state.full_count[idx] == count
        if req.shared:
            row = state.gfree[idx]
            tight = np.where(row >= req.gpu_milli, row, MILLI + 1).min(axis=1)
            used_gpu = np.maximum(MAX_SCORE - (tight * 100 // MILLI) // 10, MAX_SCORE // 2)
            score = np.where(tight < MILLI, used_gpu, MAX_SCORE // 2 - 1)
        else:
            score = np.full(len(idx), max(MAX_SCORE // 2 - req.num_gpu, MAX_SCORE // 3))
        idle_score = np.maximum(MAX_SCORE // 3 - count, count)
        return np.where(idle, idle_score, score).astype(np.int64)


def clustering_tag(req: Request) -> int:
    """``GetGpuAffinityFromPodAnnotation`` (``pkg/type/open-gpu-share/utils/pod.go``): -1 for
    a CPU-only pod (no tag), 0 for every fractional pod ("share-gpu"), the GPU count for a
    whole-GPU pod ("<n>-gpu")."""
    if not req.num_gpu:
        return -1
    return 0 if req.shared else req.num_gpu


class GpuClustering(PublishedPolicy):
    """``plugin/gpu_clustering_score.go``: a node whose pods carry only the pod's tag scores
    (75, 100], one with it among others (50, 75], a node with no tag (25, 50], others
    (0, 25]; inside a band ``25 (8000 - free GPU milli) / 8000`` (integer). CPU-only pods
    score 0 everywhere."""

    name = "clustering"

    def __init__(self, ties: Ties) -> None:
        super().__init__(ties)
        self._tags: np.ndarray | None = None
        self._ntags: np.ndarray | None = None

    def _ensure(self, state: ClusterState) -> tuple[np.ndarray, np.ndarray]:
        if self._tags is None or self._ntags is None or self._tags.shape[0] != len(state):
            self._tags = np.zeros((len(state), state.gmax + 1), dtype=np.int32)
            self._ntags = np.zeros(len(state), dtype=np.int64)
        return self._tags, self._ntags

    def placed(self, state: ClusterState, req: Request, where: Placement) -> None:
        tag = clustering_tag(req)
        if tag < 0:
            return
        tags, ntags = self._ensure(state)
        if tags[where.node, tag] == 0:
            ntags[where.node] += 1
        tags[where.node, tag] += 1

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        tag = clustering_tag(req)
        if tag < 0:
            return np.zeros(len(idx), dtype=np.int64)
        tags, ntags = self._ensure(state)
        base = (MAX_SCORE // 4) * (MAX_SPEC_GPU - state.total_free[idx]) // MAX_SPEC_GPU
        has = tags[idx, tag] > 0
        n = ntags[idx]
        band = np.where(has, np.where(n == 1, 75, 50), np.where(n == 0, 25, 0))
        return (base + band).astype(np.int64)


def fgd_score(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """``calculateGpuShareFragExtendScore`` (``plugin/fgd_score.go``): the integer part of
    100 sigmoid((before - after) / 1000); fragmentation changes within ~40 milli-GPU tie."""
    x = (before - after) / 1000.0
    out: np.ndarray = (1.0 / (1.0 + np.exp(-x)) * MAX_SCORE).astype(np.int64)
    return out


class FGD(PublishedPolicy):
    """Fragmentation gradient descent (``plugin/fgd_score.go``). ``score="integer"`` is the
    simulator's coarse score (rule 4): a fractional pod's GPU is the first index with the
    best integer score. ``score="exact"`` is aiplat's own: the smallest float increase, its
    GPU the one with the smallest increase. The integer score with ties to the node order
    (the published run) decides through :class:`aiplat.sched.fgd_cache.FgdIndex`, scores
    kept per node state; the other variants score every feasible node per pod, cached per
    request shape and recomputed only for nodes whose state changed
    (``ClusterState.version``)."""

    name = "fgd"

    def __init__(self, ties: Ties, workload: TypicalWorkload, score: FgdScore = "integer"
                 ) -> None:
        super().__init__(ties)
        self.workload = workload
        self.score_rule = score
        self._meter: FragMeter | None = None
        self._state_id = -1
        self._cache: dict[tuple[int, int, int, frozenset[str]], tuple[np.ndarray, ...]] = {}
        self._gpu_of = np.zeros(0, dtype=np.int64)  # best GPU per node for the last shape
        self._index: FgdIndex | None = None

    def _bind(self, state: ClusterState) -> FragMeter:
        if self._meter is None or self._state_id != id(state):
            self._meter = FragMeter(self.workload, state)
            self._state_id = id(state)
            self._cache.clear()
            self._index = None
            if self.score_rule == "integer" and self.ties.rule == "node-order":
                self._index = FgdIndex(state, self._meter, self.ties.rank, fgd_score)
        return self._meter

    def place(self, state: ClusterState, req: Request) -> Placement | None:
        self._bind(state)
        if self._index is None:  # exact deltas or random ties: every node scored per pod
            return super().place(state, req)
        got = self._index.choose(req)
        return None if got is None else Placement(*got)

    def scores(self, state: ClusterState, req: Request, idx: IntArray) -> np.ndarray:
        meter = self._bind(state)
        entry = self._cache.get(req.kind)
        if entry is None:
            n = len(state)
            entry = (np.zeros(n), np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64))
            self._cache[req.kind] = entry
        score, gpu, seen = entry
        stale = idx[seen[idx] != state.version[idx]]
        if len(stale):
            score[stale], gpu[stale] = self._node_scores(meter, state, req, stale)
            seen[stale] = state.version[stale]
        self._gpu_of = gpu
        out: np.ndarray = score[idx]
        return out

    def gpus(self, state: ClusterState, req: Request, node: int) -> tuple[int, ...]:
        if req.shared:
            return (int(self._gpu_of[node]),)
        return state.default_gpus(node, req)

    def _node_scores(self, meter: FragMeter, state: ClusterState, req: Request, r: IntArray
                     ) -> tuple[np.ndarray, np.ndarray]:
        rows = state.gfree[r]
        cpu = state.cpu_free[r]
        models = state.model_id[r]
        n = len(r)
        if self.score_rule == "integer":
            score, per_gpu = shape_scores(meter, req, rows, cpu, models, score=fgd_score)
            # a fractional pod's GPU: the first index with the best integer score
            best = per_gpu.argmax(axis=1) if per_gpu is not None else np.zeros(n, np.int64)
            return score.astype(np.float64), best
        # the exact score compares float deltas across nodes, and a sum's last bit depends
        # on how many rows the meter took (numpy sums a single row in another order): it
        # keeps its two meter calls, so its ties fall as they did
        before = meter.of(rows, cpu, models)
        if req.shared:
            g = state.gmax
            # [R, candidate GPU, slot]: the pod's milli taken from one GPU per candidate
            after = rows[:, None, :] - req.gpu_milli * np.eye(g, dtype=np.int64)
            frag = meter.of(after.reshape(-1, g), np.repeat(cpu - req.cpu_milli, g),
                            np.repeat(models, g)).reshape(n, g)
            frag = np.where(rows >= req.gpu_milli, frag, np.inf)
            best = frag.argmin(axis=1)
            return before - frag[np.arange(n), best], best
        after = rows.copy()
        if req.num_gpu:  # the first entirely free GPUs (which ones does not change the measure)
            full = after == MILLI
            after[full & (np.cumsum(full, axis=1) <= req.num_gpu)] = 0
        return before - meter.of(after, cpu - req.cpu_milli, models), np.zeros(n, np.int64)


POLICIES: dict[str, type[PublishedPolicy]] = {
    "random": RandomFit, "dotprod": DotProd, "clustering": GpuClustering,
    "packing": GpuPacking, "bestfit": BestFit,
}


def make_published(name: str, ties: Ties, typical: TypicalWorkload,
                   fgd_rule: FgdScore = "integer") -> PublishedPolicy:
    """One of the paper's six, scored as the published simulator scores it."""
    if name == "fgd":
        return FGD(ties, typical, fgd_rule)
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r} for the published protocol; choose one of "
                         f"{', '.join([*POLICIES, 'fgd'])}")
    return POLICIES[name](ties)
