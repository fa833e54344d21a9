"""FGD's integer score (the published simulator's rule), computed once per node state.

The published FGD policy scores every feasible node for every pod. A node's score depends
only on the pod's shape (``Request.kind``) and on the node's state: its GPU model, its free
CPU and the multiset of its GPUs' free milli (the fragmentation measure does not care which
GPU holds what). Thousands of nodes share a few thousand states over a run, so:

- :class:`NodeStates` names each node's state with a small integer, renamed when asked
  about a node whose ``ClusterState.version`` moved (one per placement);
- :class:`ShapeScores` keeps, per pod shape, each state's score and the free milli values
  of its best GPUs, computed on first use (a few states at a time in Python through
  ``FragMeter.one``, many at once by :func:`shape_scores`), and a key per node (score, then
  the seed's node order; -1 where the shape does not fit);
- :class:`FgdIndex` re-keys a shape only for the nodes that changed since that shape last
  came, so one placement costs a handful of array operations. Memory is left out of the
  key (it decides feasibility only, and pods of one shape ask for different amounts): the
  best node short of memory falls back to a mask.

Every decision is the one the plain per-node scoring takes (``fgd_policies.FGD`` with
``score="exact"`` or random ties still scores that way): the meter is called on at least two
rows, as there, so its float sums fall in the same order, and a GPU's score depends on its
free milli only, so "the first GPU with the best score" is the first whose free milli is
among the best values. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from aiplat.sched.cluster import MILLI, ClusterState, IntArray, Request
from aiplat.sched.frag import FragMeter

UNKNOWN = -2  # a state's score not computed yet
SMALL = 16  # up to this many changed nodes are re-keyed one by one, more with arrays
FEW = 8  # up to this many unknown states are scored one by one, more with arrays
Kind = tuple[int, int, int, frozenset[str]]
ScoreFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


class NodeStates:
    """A small integer per distinct (model, free CPU, sorted free GPU milli) state."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        n = len(state)
        self.sid: IntArray = np.zeros(n, dtype=np.int64)
        self._seen: IntArray = np.full(n, -1, dtype=np.int64)
        self._ids: dict[tuple[int, int, tuple[int, ...]], int] = {}
        self.rows: list[tuple[int, ...]] = []  # sorted free milli of each state's GPUs
        self.cpu: list[int] = []
        self.model: list[int] = []

    def __len__(self) -> int:
        return len(self.rows)

    def of(self, idx: IntArray) -> IntArray:
        """The states of the nodes ``idx`` (renaming those that changed)."""
        st = self.state
        old = idx[self._seen[idx] != st.version[idx]]
        if len(old):
            rows = np.sort(st.gfree[old], axis=1).tolist()
            self.sid[old] = [self._name(m, c, tuple(row)) for row, c, m in zip(
                rows, st.cpu_free[old].tolist(), st.model_id[old].tolist(), strict=True)]
            self._seen[old] = st.version[old]
        return self.sid[idx]

    def one(self, n: int) -> int:
        """The state of node ``n``."""
        st = self.state
        version = st.version[n]
        if self._seen[n] == version:
            return int(self.sid[n])
        got = self._name(int(st.model_id[n]), int(st.cpu_free[n]),
                         tuple(sorted(st.gfree[n].tolist())))
        self.sid[n] = got
        self._seen[n] = version
        return got

    def _name(self, model: int, cpu: int, row: tuple[int, ...]) -> int:
        key = (model, cpu, row)
        got = self._ids.get(key)
        if got is None:
            got = self._ids[key] = len(self.rows)
            self.rows.append(row)
            self.cpu.append(cpu)
            self.model.append(model)
        return got


class ShapeScores:
    """One pod shape's integer FGD score per node state, and its best GPUs' free milli."""

    def __init__(self, req: Request, meter: FragMeter, states: NodeStates,
                 score: ScoreFn, sigmoid: dict[float, int] | None = None) -> None:
        # memory decides feasibility only, apart (FgdIndex.choose): every pod of the shape
        self.req = replace(req, memory_mib=0)
        n = len(states.state)
        # each node's key (FgdIndex) and the node versions it was computed at
        self.key: IntArray = np.full(n, -1, dtype=np.int64)
        self.seen: IntArray = np.full(n, -1, dtype=np.int64)
        self.meter = meter
        self.states = states
        self.score_fn = score
        self.score: IntArray = np.full(64, UNKNOWN, dtype=np.int64)
        self.best: dict[int, frozenset[int]] = {}
        self._sig = {} if sigmoid is None else sigmoid  # score_fn per decrease, shareable
        self._by_bucket: dict[tuple[int, tuple[int, ...], int, int],
                              tuple[int, frozenset[int] | None]] = {}
        self._afters: dict[tuple[int, ...], list[tuple[int, tuple[int, ...]]]] = {}

    def of(self, sids: IntArray) -> IntArray:
        """The scores of the states ``sids``, computing the unknown ones."""
        self._grow()
        got = self.score[sids]
        if (got == UNKNOWN).any():
            todo = np.unique(sids[got == UNKNOWN])
            if len(todo) > FEW:
                self._compute(todo)
            else:
                for sid in todo.tolist():
                    self.one(sid)
            got = self.score[sids]
        return got

    def one(self, sid: int) -> int:
        """The score of state ``sid``, in Python when it is unknown (one state costs
        less so than an array call)."""
        if sid < len(self.score):
            got = int(self.score[sid])
            if got != UNKNOWN:
                return got
        else:
            self._grow()
        got, best = self._one(sid)
        self.score[sid] = got
        if best is not None:
            self.best[sid] = best
        return got

    def _grow(self) -> None:
        if len(self.score) < len(self.states):
            grown = np.full(max(2 * len(self.score), len(self.states)), UNKNOWN, dtype=np.int64)
            grown[: len(self.score)] = self.score
            self.score = grown

    def _one(self, sid: int) -> tuple[int, frozenset[int] | None]:
        """:func:`shape_scores` for one state, through ``FragMeter.one`` (the same sums);
        remembered per (model, GPU row, CPU bucket before and after), all the score sees."""
        st, bucket = self.states, self.meter.bucket
        row, cpu, model = st.rows[sid], st.cpu[sid], st.model[sid]
        key = (model, row, bucket(cpu), bucket(cpu - self.req.cpu_milli))
        got = self._by_bucket.get(key)
        if got is None:
            got = self._by_bucket[key] = self._score(*key)
        return got

    def _score(self, model: int, row: tuple[int, ...], now: int, left: int
               ) -> tuple[int, frozenset[int] | None]:
        frag = self.meter.one
        before = frag(row, now, model)
        afters = self._afters.get(row)
        if afters is None:
            afters = self._afters[row] = self._after_rows(row)
        if not self.req.shared:
            return self._sigmoid(before - frag(afters[0][1], left, model)), None
        top, best = -1, set()
        for v, after in afters:
            got = self._sigmoid(before - frag(after, left, model))
            if got > top:
                top, best = got, {v}
            elif got == top:
                best.add(v)
        return top, frozenset(best)

    def _after_rows(self, row: tuple[int, ...]) -> list[tuple[int, tuple[int, ...]]]:
        """The GPU rows after placing the pod: per free milli value it fits (a fractional
        pod), or the one row with its entirely free GPUs taken (any of them: the measure
        does not tell them apart)."""
        req = self.req
        if not req.shared:
            after = list(row)
            for _ in range(req.num_gpu):
                after[after.index(MILLI)] = 0
            return [(0, tuple(sorted(after)))]
        out = []
        for v in sorted(set(row)):
            if v >= req.gpu_milli:
                after = list(row)
                after[after.index(v)] = v - req.gpu_milli
                out.append((v, tuple(sorted(after))))
        return out

    def _sigmoid(self, delta: float) -> int:
        """``score_fn`` on one fragmentation decrease, through numpy (its exp may differ
        from math.exp in the last bit), remembered per value."""
        got = self._sig.get(delta)
        if got is None:
            got = self._sig[delta] = int(self.score_fn(np.array([delta]), np.zeros(1))[0])
        return got

    def _compute(self, sids: IntArray) -> None:
        st = self.states
        ids = sids.tolist()
        rows = np.array([st.rows[i] for i in ids], dtype=np.int64)
        cpu = np.array([st.cpu[i] for i in ids], dtype=np.int64)
        model = np.array([st.model[i] for i in ids], dtype=np.int64)
        score, per_gpu = shape_scores(self.meter, self.req, rows, cpu, model,
                                       score=self.score_fn)
        self.score[sids] = score
        if per_gpu is not None:  # a fractional pod: the free milli of the best GPUs
            for i, row, pg, best in zip(ids, rows.tolist(), per_gpu.tolist(), score.tolist(),
                                        strict=True):
                self.best[i] = frozenset(v for v, s in zip(row, pg, strict=True) if s == best)


def shape_scores(meter: FragMeter, req: Request, rows: IntArray, cpu: IntArray,
                 model: IntArray, *, score: ScoreFn) -> tuple[IntArray, IntArray | None]:
    """Integer FGD scores of the node states (GPU rows, free CPU, model) for ``req``, and
    for a fractional pod each GPU's score (-1 where it does not fit). One meter call on the
    states as they are and after: at least two rows, so the meter's sums fall in one order
    (``FragMeter.one``)."""
    n, g = rows.shape
    if req.shared:
        # [R, candidate GPU, slot]: the pod's milli taken from one GPU per candidate
        after = (rows[:, None, :] - req.gpu_milli * np.eye(g, dtype=np.int64)).reshape(-1, g)
        frag = meter.of(np.concatenate([rows, after]),
                        np.concatenate([cpu, np.repeat(cpu - req.cpu_milli, g)]),
                        np.concatenate([model, np.repeat(model, g)]))
        before, frag = frag[:n], frag[n:].reshape(n, g)
        per_gpu = np.where(rows >= req.gpu_milli, score(before[:, None], frag), -1)
        best: IntArray = per_gpu.max(axis=1).astype(np.int64)
        return best, per_gpu
    after = rows.copy()
    if req.num_gpu:  # the first entirely free GPUs (which ones does not change the measure)
        full = after == MILLI
        after[full & (np.cumsum(full, axis=1) <= req.num_gpu)] = 0
    frag = meter.of(np.concatenate([rows, after]), np.concatenate([cpu, cpu - req.cpu_milli]),
                    np.concatenate([model, model]))
    out: IntArray = score(frag[:n], frag[n:]).astype(np.int64)
    return out, None


class FgdIndex:
    """The FGD policy's choice (integer score, ties to the seed's node order) for one
    cluster state, kept up to date between pods.

    A node's key is ``score * n + (n - 1 - rank)``: the largest key is the best score and,
    among equals, the first node in the seed's order, as ``Ties.pick`` takes it.
    """

    def __init__(self, state: ClusterState, meter: FragMeter, rank: IntArray,
                 score: ScoreFn) -> None:
        self.state = state
        self.meter = meter
        self.score_fn = score
        self.states = NodeStates(state)
        n = len(state)
        self.n = n
        self.tie: IntArray = (n - 1 - rank).astype(np.int64)
        self._shapes: dict[Kind, ShapeScores] = {}
        self._sigmoid: dict[float, int] = {}  # one score function: its values shared

    def choose(self, req: Request) -> tuple[int, tuple[int, ...]] | None:
        """The node and GPUs FGD gives ``req`` now, or None when it fits nowhere."""
        st = self.state
        shape = self._shapes.get(req.kind)
        if shape is None:
            shape = self._shapes[req.kind] = ShapeScores(req, self.meter, self.states,
                                                         self.score_fn, self._sigmoid)
        stale = (shape.seen != st.version).nonzero()[0]
        if len(stale) > SMALL:
            self._rekey_all(shape, stale)
        elif len(stale):
            self._rekey_each(shape, stale)
        key = shape.key
        node = int(key.argmax())
        if key[node] < 0:
            return None
        if st.mem_free[node] < req.memory_mib:  # the best node lacks memory: the best that has
            key = np.where(st.mem_free >= req.memory_mib, key, -1)
            node = int(key.argmax())
            if key[node] < 0:
                return None
        if req.shared:
            best = shape.best[int(self.states.sid[node])]
            gpu = next(j for j, v in enumerate(st.gfree[node].tolist()) if v in best)
            return node, (gpu,)
        return node, st.default_gpus(node, req)

    def _rekey_all(self, shape: ShapeScores, stale: IntArray) -> None:
        st = self.state
        fit = stale[st.feasible(shape.req)[stale]]
        shape.key[stale] = -1
        shape.key[fit] = shape.of(self.states.of(fit)) * self.n + self.tie[fit]
        shape.seen[stale] = st.version[stale]

    def _rekey_each(self, shape: ShapeScores, stale: IntArray) -> None:
        st, req = self.state, shape.req
        cpu, key, tie, n_all = req.cpu_milli, shape.key, self.tie, self.n
        up, cpu_free, state_of = st.up, st.cpu_free, self.states.one
        # ClusterState.feasible but memory, one node at a time: the GPU test as (array, need)
        gpu, need = ((st.max_free, req.gpu_milli) if req.shared
                     else (st.full_count, req.num_gpu))
        model_ok = st.model_ok(req.gpu_models) if req.num_gpu else None
        for n in stale.tolist():
            if (up[n] and cpu_free[n] >= cpu
                    and (model_ok is None or (model_ok[n] and gpu[n] >= need))):
                key[n] = shape.one(state_of(n)) * n_all + tie[n]
            else:
                key[n] = -1
        shape.seen[stale] = st.version[stale]
