"""The FGD fragmentation measure (Weng et al., USENIX ATC'23), vectorised over node states.

A node's fragmentation *for one task shape* is the free GPU capacity that shape could not
use there: all of it when the task cannot run on the node at all (wrong GPU model, too few
GPUs, too little CPU, or a CPU-only task, which uses no GPU), otherwise the free capacity of
the GPUs that are individually too small for it (a fractional task needs one GPU with at
least its milli-units free; a whole-GPU task needs entirely free GPUs). The node's
fragmentation is the expectation over the *typical workload*: pod shapes weighted by how
often they occur (all of the trace's, or the popular ones that the published simulator
keeps). FGD places each pod where this expectation grows least.

Algebra used to make it cheap: for a shape that can run, the unusable part is
``total_free - usable`` where ``usable`` is the free capacity on GPUs large enough for it; so

    frag(node) = total_free - Σ_shapes p(shape) · [runs here] · usable(shape)

``usable`` depends only on the shape's per-GPU need (one column per distinct fractional
size, one per whole-GPU count), the CPU condition only on thresholds (a cumulative table over
the distinct CPU requests), the model condition on the node's model. One call evaluates
thousands of candidate states with a handful of array operations. Memory is not part of the
measure (as in the paper's simulator). Pure: no I/O.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from aiplat.sched.cluster import MILLI, ClusterState, IntArray, Request

FloatArray = npt.NDArray[np.float64]
Kind = tuple[int, int, int, frozenset[str]]  # Request.kind


@dataclass(frozen=True)
class TypicalWorkload:
    """Task shapes and their popularity, precomputed for :func:`fragmentation`.

    Built from requests by :meth:`from_requests`; only GPU shapes need tables because a
    CPU-only shape always counts all free GPU capacity as fragment.
    """

    caps: list[tuple[bool, int]]  # (shared, milli) or (False, num_gpu) per usable column
    group_cap: npt.NDArray[np.int64]  # column of each GPU shape group
    group_models: list[frozenset[str]]
    cpu_values: IntArray  # sorted distinct CPU requests of GPU shapes
    p_table: FloatArray  # [groups, len(cpu_values)+1]: P(shape in group, cpu <= threshold)

    @classmethod
    def from_requests(cls, requests: Iterable[Request]) -> TypicalWorkload:
        """Every shape of ``requests``, weighted by its count (aiplat's own choice; the
        published simulator keeps the popular 95%: :func:`aiplat.sched.fgd_protocol.
        typical_shapes`)."""
        counts = Counter(r.kind for r in requests)
        total = sum(counts.values())
        if not total:
            raise ValueError("the typical workload needs at least one request")
        return cls.from_shapes({k: c / total for k, c in counts.items()})

    @classmethod
    def from_shapes(cls, shapes: Mapping[Kind, float]) -> TypicalWorkload:
        """Shapes (``Request.kind``) with their probabilities, which sum to 1."""
        if not shapes:
            raise ValueError("the typical workload needs at least one shape")
        gpu_kinds = {k: p for k, p in shapes.items() if k[1] > 0}
        cpu_values = np.array(sorted({k[0] for k in gpu_kinds}), dtype=np.int64)
        caps: list[tuple[bool, int]] = []
        groups: dict[tuple[int, frozenset[str]], dict[int, float]] = {}
        for (cpu, num, milli, models), p in gpu_kinds.items():
            cap = (True, milli) if num == 1 and milli < MILLI else (False, num)
            if cap not in caps:
                caps.append(cap)
            per_cpu = groups.setdefault((caps.index(cap), models), {})
            per_cpu[cpu] = per_cpu.get(cpu, 0.0) + p
        table = np.zeros((len(groups), len(cpu_values) + 1))
        for gi, per_cpu in enumerate(groups.values()):
            for cpu, p in per_cpu.items():
                table[gi, int(np.searchsorted(cpu_values, cpu)) + 1] += p
        return cls(
            caps=caps,
            group_cap=np.array([c for c, _ in groups], dtype=np.int64),
            group_models=[m for _, m in groups],
            cpu_values=cpu_values,
            p_table=np.cumsum(table, axis=1),
        )


class FragMeter:
    """:class:`TypicalWorkload` bound to a cluster's GPU models."""

    def __init__(self, workload: TypicalWorkload, state: ClusterState) -> None:
        self.w = workload
        ids = np.arange(len(state.models))
        self.model_ok = np.array(
            [
                np.ones(len(ids), dtype=bool)
                if not models
                else np.array([m in models for m in state.models], dtype=bool)
                for models in workload.group_models
            ],
            dtype=bool,
        ).reshape(len(workload.group_models), len(ids))
        self._shared_milli = np.array([m for s, m in workload.caps if s], dtype=np.int64)
        self._whole_num = np.array([k for s, k in workload.caps if not s], dtype=np.int64)
        order = [i for i, (s, _) in enumerate(workload.caps) if s]
        order += [i for i, (s, _) in enumerate(workload.caps) if not s]
        # position of each cap column in the [shared..., whole...] layout
        col = np.argsort(np.array(order, dtype=np.int64)) if order else np.zeros(0, int)
        self._group_col = col[workload.group_cap]  # each group's column in that layout
        # [groups, models, CPU buckets]: P(shape in group, cpu <= threshold), 0 where the
        # group's model is not the node's (p * 1.0 or p * 0.0: the products of() took)
        self._p_ok = workload.p_table[:, None, :] * self.model_ok[:, :, None]
        self._cpu_values: list[int] = workload.cpu_values.tolist()
        self._terms: list[list[list[float]]] | None = None
        self._usable: dict[tuple[int, ...], tuple[int, list[int]]] = {}
        self._shared_list: list[int] = self._shared_milli.tolist()
        self._whole_list: list[int] = self._whole_num.tolist()
        self._group_list: list[int] = self._group_col.tolist()
        self._one: dict[tuple[tuple[int, ...], int, int], float] = {}

    def of(self, gfree: IntArray, cpu_left: IntArray, model_id: IntArray) -> FloatArray:
        """Fragmentation (GPU milli) of each state: rows of ``gfree`` with their CPU/model."""
        free = np.maximum(gfree, 0)
        total: FloatArray = free.sum(axis=1).astype(np.float64)
        if not len(self.w.group_cap):
            return total
        cols = []
        if len(self._shared_milli):
            big = gfree[:, :, None] >= self._shared_milli  # [S, GPU, shared size]
            cols.append(np.matmul(free[:, None, :], big)[:, 0, :])  # Σ free of those GPUs
        if len(self._whole_num):
            full = (gfree == MILLI).sum(axis=1)[:, None]
            cols.append(np.where(full >= self._whole_num, full * MILLI, 0))
        usable = np.concatenate(cols, axis=1)[:, self._group_col]  # [S, groups]
        bucket = np.searchsorted(self.w.cpu_values, cpu_left, side="right")
        pok = self._p_ok[:, model_id, bucket]  # [groups, S]
        gained: FloatArray = (pok * usable.T).sum(axis=0)
        out: FloatArray = total - gained
        return out

    def bucket(self, cpu_left: int) -> int:
        """Where free CPU ``cpu_left`` falls among the typical shapes' CPU requests (the
        only way CPU enters the measure)."""
        return bisect.bisect_right(self._cpu_values, cpu_left)

    def one(self, row: tuple[int, ...], bucket: int, model_id: int) -> float:
        """:meth:`of` for one state (free CPU as its :meth:`bucket`), in Python floats:
        equal to the bit to its result when :meth:`of` takes two rows or more (numpy then
        adds the groups' terms one after the other, as here; a lone row it sums pairwise,
        which may differ in the last bit). For callers that ask about one state at a time,
        where an array call costs more than the arithmetic; each state's result is kept
        (a few thousand in a run)."""
        key = (row, bucket, model_id)
        got = self._one.get(key)
        if got is None:
            got = self._one[key] = self._frag_one(row, bucket, model_id)
        return got

    def _frag_one(self, row: tuple[int, ...], bucket: int, model_id: int) -> float:
        got = self._usable.get(row)
        if got is None:
            got = self._usable[row] = self._usable_of(row)
        total, usable = got
        if not usable:
            return float(total)
        if self._terms is None:  # [model][CPU bucket][group]: _p_ok, as Python floats
            self._terms = self._p_ok.transpose(1, 2, 0).tolist()
        terms = self._terms[model_id][bucket]
        gained = terms[0] * usable[0]
        for p, u in zip(terms[1:], usable[1:], strict=True):
            gained += p * u
        return total - gained

    def _usable_of(self, row: tuple[int, ...]) -> tuple[int, list[int]]:
        """The free milli on a node whose GPUs have ``row`` free, and each group's usable
        part of it (:meth:`of`)."""
        asc = sorted(row)
        above = [0] * (len(asc) + 1)  # above[i]: the free milli of asc[i:]
        for i in range(len(asc) - 1, -1, -1):
            above[i] = above[i + 1] + max(asc[i], 0)
        cols = [above[bisect.bisect_left(asc, milli)] for milli in self._shared_list]
        full = asc.count(MILLI)
        cols += [full * MILLI if full >= num else 0 for num in self._whole_list]
        return above[0], [cols[c] for c in self._group_list]

    def nodes(self, state: ClusterState, idx: IntArray | None = None) -> FloatArray:
        """Fragmentation of the nodes ``idx`` (all nodes when None) as they are now."""
        sel = slice(None) if idx is None else idx
        return self.of(state.gfree[sel], state.cpu_free[sel], state.model_id[sel])

    def cluster(self, state: ClusterState) -> float:
        """Fragmentation of the nodes that are up, in GPU milli-units."""
        return float(self.nodes(state)[state.up].sum())
