"""Node state in arrays: what is free on every node and every GPU, and the requests placed on it.

Design:
- One :class:`ClusterState` holds the whole cluster as numpy arrays (free CPU milli-cores,
  memory MiB, and free GPU milli-units per GPU slot). Placement policies read these arrays
  vectorised over all nodes, so scoring 1,500 nodes costs a few array operations, not a
  Python loop; the engine mutates them only through :meth:`ClusterState.allocate` and
  :meth:`ClusterState.release`, which keep derived arrays (whole free GPUs, largest free
  GPU, total free) consistent.
- GPU slots past a node's GPU count hold ``-1`` so no request ever fits there and sums clip
  them out. A GPU is 1000 milli-units; a fractional request (``gpu_milli < 1000``) takes part
  of one GPU, a whole request takes ``num_gpu`` entirely free GPUs (as in the Alibaba
  trace and its open-gpu-share scheduler).
- A node that is down (failed, or not yet started by the autoscaler) is simply not ``up``:
  nothing fits there, and what ran there was evicted by the engine first.
- Pure: no I/O. ``version`` counts changes per node so policies can cache per-node scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

MILLI = 1000

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Node:
    """One node: capacity, GPU model, and where it sits (pool, topology)."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int = 0
    model: str = ""
    pool: str = "default"
    block: str = ""
    rack: str = ""


@dataclass(frozen=True)
class Request:
    """What one pod asks for. ``gpu_milli`` is per GPU (1000 = a whole GPU).

    ``gpu_models``: the GPU models the pod may run on (empty = any), the trace's ``gpu_spec``.
    """

    cpu_milli: int
    memory_mib: int
    num_gpu: int = 0
    gpu_milli: int = 0
    gpu_models: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.cpu_milli < 0 or self.memory_mib < 0 or self.num_gpu < 0:
            raise ValueError(f"negative request {self}")
        if self.num_gpu and not 0 < self.gpu_milli <= MILLI:
            raise ValueError(f"gpu_milli must be in (0, 1000] when num_gpu > 0: {self}")
        if self.num_gpu > 1 and self.gpu_milli != MILLI:
            raise ValueError(f"a multi-GPU request takes whole GPUs (gpu_milli 1000): {self}")

    @property
    def gpu_total_milli(self) -> int:
        return self.num_gpu * self.gpu_milli if self.num_gpu else 0

    @property
    def shared(self) -> bool:
        """A fractional GPU request: part of one GPU."""
        return self.num_gpu == 1 and self.gpu_milli < MILLI

    @property
    def kind(self) -> tuple[int, int, int, frozenset[str]]:
        """What placement scores depend on (memory only decides feasibility)."""
        return (self.cpu_milli, self.num_gpu, self.gpu_milli, self.gpu_models)


@dataclass(frozen=True)
class Placement:
    node: int
    gpus: tuple[int, ...] = ()


class ClusterState:
    """Mutable free capacity of every node; see the module docstring."""

    def __init__(self, nodes: list[Node], *, up: bool = True) -> None:
        if not nodes:
            raise ValueError("a cluster needs at least one node")
        self.nodes = nodes
        n = len(nodes)
        self.gmax = max(1, *(x.gpus for x in nodes))
        self.models: list[str] = sorted({x.model for x in nodes})
        model_index = {m: i for i, m in enumerate(self.models)}
        self.model_id = np.array([model_index[x.model] for x in nodes], dtype=np.int64)
        self.cpu_cap = np.array([x.cpu_milli for x in nodes], dtype=np.int64)
        self.mem_cap = np.array([x.memory_mib for x in nodes], dtype=np.int64)
        self.gpu_count = np.array([x.gpus for x in nodes], dtype=np.int64)
        self.cpu_free = self.cpu_cap.copy()
        self.mem_free = self.mem_cap.copy()
        slots = np.arange(self.gmax)[None, :]
        self.gpu_exists: BoolArray = slots < self.gpu_count[:, None]
        self.gfree: IntArray = np.where(self.gpu_exists, MILLI, -1).astype(np.int64)
        self.full_count = self.gpu_count.copy()
        self.max_free = np.where(self.gpu_count > 0, MILLI, -1).astype(np.int64)
        self.total_free = self.gpu_count * MILLI
        self.up: BoolArray = np.full(n, up, dtype=bool)
        self.version = np.zeros(n, dtype=np.int64)
        self.total_gpu_milli = int(self.gpu_count.sum()) * MILLI
        self._free_milli = int(self.total_free.sum())  # Σ total_free, kept by _refresh
        self.up_gpus = int(self.gpu_count.sum()) if up else 0  # GPUs of nodes up, by set_up
        self._model_ok: dict[frozenset[str], BoolArray] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    # ------------------------------------------------------------------ queries

    def model_ok(self, models: frozenset[str]) -> BoolArray:
        """Nodes whose GPU model the request accepts (all nodes when it names none)."""
        got = self._model_ok.get(models)
        if got is None:
            if not models:
                got = np.ones(len(self.nodes), dtype=bool)
            else:
                ok_ids = [i for i, m in enumerate(self.models) if m in models]
                got = np.isin(self.model_id, ok_ids)
            self._model_ok[models] = got
        return got

    def feasible(self, req: Request) -> BoolArray:
        """Nodes where ``req`` fits now."""
        ok = self.up & (self.cpu_free >= req.cpu_milli) & (self.mem_free >= req.memory_mib)
        if req.num_gpu:
            ok &= self.model_ok(req.gpu_models)
            if req.shared:
                ok &= self.max_free >= req.gpu_milli
            else:
                ok &= self.full_count >= req.num_gpu
        return ok

    def fits_anywhere_empty(self, req: Request) -> bool:
        """Would ``req`` fit on some node of this cluster if it were empty?"""
        ok = (self.cpu_cap >= req.cpu_milli) & (self.mem_cap >= req.memory_mib)
        if req.num_gpu:
            ok &= self.model_ok(req.gpu_models) & (self.gpu_count >= req.num_gpu)
        return bool(ok.any())

    def default_gpus(self, node: int, req: Request) -> tuple[int, ...]:
        """GPU choice used by every policy except FGD: the tightest-fitting GPU for a
        fractional request, the first entirely free GPUs for a whole one."""
        if not req.num_gpu:
            return ()
        row = self.gfree[node].tolist()  # <= 8 slots: Python beats array calls here
        if req.shared:
            # the first index of the smallest free milli that fits (np.argmin's tie rule)
            fits = [v if v >= req.gpu_milli else MILLI + 1 for v in row]
            return (fits.index(min(fits)),)
        return tuple([g for g, v in enumerate(row) if v == MILLI][: req.num_gpu])

    # ------------------------------------------------------------------ changes

    def allocate(self, req: Request, where: Placement) -> None:
        n = where.node
        if not self.up[n]:
            raise ValueError(f"node {self.nodes[n].name} is down")
        if self.cpu_free[n] < req.cpu_milli or self.mem_free[n] < req.memory_mib:
            raise ValueError(f"{req} does not fit on node {self.nodes[n].name}")
        if len(where.gpus) != req.num_gpu or len(set(where.gpus)) != len(where.gpus):
            raise ValueError(f"{req} needs {req.num_gpu} distinct GPUs, got {where.gpus}")
        for g in where.gpus:
            if self.gfree[n, g] < req.gpu_milli:
                raise ValueError(f"GPU {g} of node {self.nodes[n].name} has no room for {req}")
        self.cpu_free[n] -= req.cpu_milli
        self.mem_free[n] -= req.memory_mib
        for g in where.gpus:
            self.gfree[n, g] -= req.gpu_milli
        self._refresh(n, bool(where.gpus))

    def release(self, req: Request, where: Placement) -> None:
        n = where.node
        self.cpu_free[n] += req.cpu_milli
        self.mem_free[n] += req.memory_mib
        for g in where.gpus:
            self.gfree[n, g] += req.gpu_milli
        if self.cpu_free[n] > self.cpu_cap[n] or (where.gpus and (self.gfree[n] > MILLI).any()):
            raise ValueError(f"released more than was allocated on {self.nodes[n].name}")
        self._refresh(n, bool(where.gpus))

    def set_up(self, node: int, up: bool) -> None:
        if bool(self.up[node]) != up:
            self.up_gpus += int(self.gpu_count[node]) if up else -int(self.gpu_count[node])
        self.up[node] = up
        self.version[node] += 1

    def _refresh(self, n: int, gpus: bool = True) -> None:
        """Node ``n`` changed (``gpus``: its GPUs did too, else their figures stand)."""
        if not gpus:
            self.version[n] += 1
            return
        # one node's row (<= 8 slots) as Python ints: cheaper than three array reductions
        row = self.gfree[n].tolist()
        self.full_count[n] = row.count(MILLI)
        self.max_free[n] = max(row) if self.gpu_count[n] else -1
        free = sum(v for v in row if v > 0)
        self._free_milli += free - int(self.total_free[n])
        self.total_free[n] = free
        self.version[n] += 1

    # ------------------------------------------------------------------ measures

    def allocated_gpu_milli(self, mask: BoolArray | None = None) -> int:
        if mask is None:
            return self.total_gpu_milli - self._free_milli
        cap = self.gpu_count * MILLI
        used = cap - self.total_free
        return int(used.sum() if mask is None else used[mask].sum())

    def gpu_milli_up(self) -> int:
        return int((self.gpu_count[self.up] * MILLI).sum())
