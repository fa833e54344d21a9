"""The published FGD simulator's experiment protocol: pod sequence, node order, typical
workload and headline metric (hkust-adsl/kubernetes-scheduler-simulator, commit 8f3d641).

Paths below are in that repository. Each function is one of the issue's rules:

- :func:`pod_sequence` (rule 8): every trace pod once, shuffled, then uniform draws with
  replacement appended (not shuffled in) until the next draw would pass 1.3x the GPU
  capacity; a trace that already asks for more loses random pods instead.
- :func:`node_ranks` (rule 1): the simulator prefixes node names with a random permutation
  once per seed and the scheduler gives ties to the smallest name, so each seed has one
  fixed random node order that breaks every tie.
- :func:`typical_shapes` (rule 6): FGD's target workload is the most popular shapes covering
  95% of the pods (CPU-only pods included), renormalised.
- :func:`headline` / :func:`curve` (rule 9): the allocation ratio is logged after every pod;
  the figure at 130% is the mean over the lines whose arrival rounds to 130%.

The generator is numpy's by default: per-seed sequences differ from the simulator's, the
distributions do not, so 10-seed means are comparable and single seeds are not. A
:class:`Draws` replaying Go's ``math/rand`` (bench/fgd_gorand.py, which reads Go's own
tables) makes single seeds comparable too. Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from aiplat.sched.cluster import MILLI, IntArray, Request

FloatArray = npt.NDArray[np.float64]
Kind = tuple[int, int, int, frozenset[str]]

POPULARITY_THRESHOLD = 95  # scripts/generate_config_and_run.py --pod-popularity-threshold


class Draws(Protocol):
    """The random draws the protocol makes, in the simulator's terms (Go ``math/rand``'s
    ``Shuffle``, ``Intn``, ``Perm``), so a replay of Go's generator can stand in for numpy's."""

    name: str

    def shuffle_order(self, n: int) -> list[int]:
        """Where the items 0..n-1 end up after a shuffle: ``out[k]`` is the k-th item."""
        ...

    def below(self, n: int) -> int:
        """A uniform integer in [0, n)."""
        ...

    def perm(self, n: int) -> list[int]:
        """A random permutation of 0..n-1."""
        ...


class NumpyDraws:
    """numpy's generator: the default (per-seed sequences differ from the simulator's)."""

    name = "numpy"

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def shuffle_order(self, n: int) -> list[int]:
        out: list[int] = self.rng.permutation(n).tolist()
        return out

    def below(self, n: int) -> int:
        return int(self.rng.integers(n))

    def perm(self, n: int) -> list[int]:
        out: list[int] = self.rng.permutation(n).tolist()
        return out


def pod_sequence(requests: Sequence[Request], capacity_milli: int,
                 rng: np.random.Generator | Draws, ratio: float = 1.3) -> list[Request]:
    """The pods in the order the simulator creates them.

    ``pkg/simulator/simulator.go``: ``SortClusterPods`` sorts by name and shuffles (the
    trace's file order stands for name order: with our generator only the seed matters);
    ``TunePodsByNodeTotalResource`` then removes random pods (``tuneDownPods``) while the
    total exceeds ``ratio`` x capacity, or appends uniform draws (``tuneUpPods``) until the
    next draw's *per-GPU* milli would pass it: that draw is dropped, and a CPU-only draw
    (per-GPU milli 0) only stops the loop once the total is already past the target.
    """
    draws = NumpyDraws(rng) if isinstance(rng, np.random.Generator) else rng
    pods = [requests[i] for i in draws.shuffle_order(len(requests))]
    target = ratio * capacity_milli
    total = sum(r.gpu_total_milli for r in pods)
    if total <= 0:
        raise ValueError("the pod list requests no GPU; the FGD protocol needs GPU pods")
    if total > target:
        while total > target:  # tuneDownPods
            victim = pods.pop(draws.below(len(pods)))
            total -= victim.gpu_total_milli
        return pods
    n = len(requests)
    while True:  # tuneUpPods: draws index the trace in file order (sim.workloadPods)
        r = requests[draws.below(n)]
        if total + (r.gpu_milli if r.num_gpu else 0) > target:
            return pods
        total += r.gpu_total_milli
        pods.append(r)


def node_ranks(n: int, rng: np.random.Generator | Draws) -> IntArray:
    """Each node's place in the seed's tie-break order (0 wins).

    ``syncClusterResourceList`` (``simulator.go``) renames node i of the name-sorted list
    ``%04d-<name>`` with ``rand.Perm(n)[i]``; ``selectHost``
    (``vendor/k8s.io/kubernetes/pkg/scheduler/core/generic_scheduler.go``) keeps the
    smallest name among the best scores (its random reservoir choice is commented out).
    """
    draws = NumpyDraws(rng) if isinstance(rng, np.random.Generator) else rng
    out: IntArray = np.array(draws.perm(n), dtype=np.int64)
    return out


def _shape_key(kind: Kind, count: float) -> tuple[float, int, int, int, str]:
    cpu, num, milli, models = kind
    return (count, cpu, milli, num, "|".join(sorted(models)))


def typical_shapes(requests: Sequence[Request],
                   threshold: int = POPULARITY_THRESHOLD) -> dict[Kind, float]:
    """FGD's target workload: shape -> probability.

    ``pkg/utils/frag.go`` ``GetTypicalPods``: shapes (CPU, per-GPU milli, GPU count, GPU
    model) counted over the trace's pods, CPU-only ones included; ranked by count, ties by
    the larger shape (``sort.Reverse`` of ``TargetPodList.Less`` in ``pkg/type/resource.go``);
    taken one at a time until they cover ``threshold``% of the pods, then renormalised.
    A ``gpu_spec`` is a set here, the simulator's a string: "A|B" and "B|A" are one shape.
    """
    counts = Counter(r.kind for r in requests)
    total = float(sum(counts.values()))
    if not total:
        raise ValueError("the typical workload needs at least one request")
    ranked = sorted(counts, key=lambda k: _shape_key(k, counts[k]), reverse=True)
    expected = threshold * total / 100.0
    kept: list[Kind] = []
    covered = 0.0
    for kind in ranked:
        if covered >= expected:
            break
        kept.append(kind)
        covered += counts[kind]
    return {k: counts[k] / covered for k in kept}


@dataclass(frozen=True)
class AllocLog:
    """The ``[Alloc]`` line the simulator logs after each pod (``pkg/simulator/analysis.go``
    ``ClusterGpuFragReport``): GPU milli arrived so far (this pod included, placed or not)
    and GPU milli allocated."""

    arrived: IntArray
    allocated: IntArray
    gpus: int

    def _ratios(self) -> tuple[FloatArray, FloatArray]:
        # experiments/analysis/merge_alloc_discrete.py: arrival rounded to a whole percent
        # (half to even, as pandas' round), allocation to two decimals.
        arrive = np.round(self.arrived / self.gpus / 10.0)
        alloc = np.round(self.allocated / self.gpus / 10.0, 2)
        return arrive, alloc

    def at(self, pct: int) -> float | None:
        """Mean allocation (%) over the lines whose arrival rounds to ``pct``; those within
        one point when none does; None when there are none either."""
        arrive, alloc = self._ratios()
        hit = alloc[arrive == pct]
        if not len(hit):
            hit = alloc[(arrive >= pct - 1) & (arrive <= pct + 1)]
        return round(float(hit.mean()), 2) if len(hit) else None


def headline(log: AllocLog, pct: int = 130) -> float:
    """The allocation ratio (%) at ``pct``% arrivals; the final allocation when the log has
    no line near it (a tiny cluster whose last pod jumps past it)."""
    got = log.at(pct)
    if got is not None:
        return got
    return round(100.0 * float(log.allocated[-1]) / (log.gpus * MILLI), 2) if len(
        log.allocated) else 0.0


def curve(log: AllocLog, points: Sequence[int]) -> list[tuple[float, float]]:
    """(arrival %, allocation %) at ``points``; a point with no line near it repeats the
    last allocation logged before it."""
    out = []
    pct_arrived = log.arrived / log.gpus / 10.0
    for p in points:
        got = log.at(p)
        if got is None:
            before = log.allocated[pct_arrived < p]
            got = round(float(before[-1]) / log.gpus / 10.0, 2) if len(before) else 0.0
        out.append((float(p), got))
    return out
