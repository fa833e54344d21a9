"""MIG layout planning: place a demand of MIG instances on as few GPUs as possible.

Pure; the GPU model (profiles, maximum instances, memory-slice placements) comes from the
catalog. A GPU has 8 memory slices and 7 compute slices; an instance of a profile occupies
``memory_slices`` consecutive memory slices from one of its allowed start slices, and no
profile may exceed its ``max_instances``. Those rules define the *feasible layouts* of one GPU;
there are few of them (a few dozen distinct instance mixes per model), so they are enumerated
once per model by depth-first search over start slices.

Planning is then a covering problem over instance-count vectors: pick the fewest feasible
mixes whose sum covers the demand (a subset of a feasible layout is feasible, so covering is
as good as meeting exactly). ``plan`` solves it exactly by memoised search over the remaining
demand when the demand is small, and for large demands first takes whole batches of the mix
that covers the most memory slices of what remains (greedy), then solves the remaining tail
exactly. Every plan reports a lower bound (memory slices / 8, compute slices / 7, each
profile's count / its maximum) so an administrator can see how far from optimal it can be;
in practice the plan meets the bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

from aiplat.catalog import GpuModel, MigProfile
from aiplat.errors import AiplatError

MEMORY_SLICES = 8
COMPUTE_SLICES = 7
EXACT_TAIL = 12  # instances left for the exact search after greedy batches


class MigPlanError(AiplatError, ValueError):
    """The demand cannot be met; the message says why and what to change."""


@dataclass(frozen=True)
class Placement:
    profile: str
    start: int
    size: int

    def __str__(self) -> str:
        return f"{self.profile}@{self.start}"


@dataclass(frozen=True)
class Layout:
    """One GPU's instances with their start memory slices."""

    placements: tuple[Placement, ...]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.placements:
            out[p.profile] = out.get(p.profile, 0) + 1
        return out


@dataclass
class Plan:
    gpu: str
    demand: dict[str, int]
    layouts: list[Layout] = field(default_factory=list)
    lower_bound: int = 0

    @property
    def gpus(self) -> int:
        return len(self.layouts)

    def grouped(self) -> list[tuple[Layout, int]]:
        """Identical layouts together, most used first."""
        out: dict[Layout, int] = {}
        for lay in self.layouts:
            out[lay] = out.get(lay, 0) + 1
        return sorted(out.items(), key=lambda kv: -kv[1])


def feasible(gpu: GpuModel, placements: Sequence[Placement]) -> str | None:
    """Why these placements are not a valid layout on ``gpu``, or None when they are."""
    by = {p.name: p for p in gpu.mig_profiles}
    used = 0
    compute = 0
    counts: dict[str, int] = {}
    for pl in placements:
        prof = by.get(pl.profile)
        if prof is None:
            return f"{gpu.name} has no MIG profile {pl.profile}"
        if pl.start not in prof.placements:
            return f"{pl.profile} cannot start at memory slice {pl.start} " \
                   f"(allowed: {prof.placements})"
        mask = ((1 << prof.memory_slices) - 1) << pl.start
        if pl.start + prof.memory_slices > MEMORY_SLICES or used & mask:
            return f"{pl} overlaps another instance or runs past slice {MEMORY_SLICES - 1}"
        used |= mask
        compute += prof.compute_slices
        counts[pl.profile] = counts.get(pl.profile, 0) + 1
        if counts[pl.profile] > prof.max_instances:
            return f"more than {prof.max_instances} × {pl.profile}"
    if compute > COMPUTE_SLICES:
        return f"{compute} compute slices; a GPU has {COMPUTE_SLICES}"
    return None


def _key(gpu: GpuModel) -> tuple[tuple[str, int, int, int, tuple[int, ...]], ...]:
    return tuple((p.name, p.max_instances, p.compute_slices, p.memory_slices,
                  tuple(p.placements)) for p in gpu.mig_profiles)


@cache
def _layouts(key: tuple[tuple[str, int, int, int, tuple[int, ...]], ...]
             ) -> dict[tuple[int, ...], tuple[Placement, ...]]:
    """Every feasible instance-count vector (profile order of ``key``) → one placement."""
    out: dict[tuple[int, ...], tuple[Placement, ...]] = {}
    n = len(key)

    def dfs(slot: int, used: int, compute: int, counts: list[int],
            chosen: list[Placement]) -> None:
        vec = tuple(counts)
        if vec not in out:
            out[vec] = tuple(sorted(chosen, key=lambda p: p.start))
        for s in range(slot, MEMORY_SLICES):
            for i, (name, mx, cs, ms, starts) in enumerate(key):
                if s not in starts or counts[i] >= mx or compute + cs > COMPUTE_SLICES:
                    continue
                mask = ((1 << ms) - 1) << s
                if s + ms > MEMORY_SLICES or used & mask:
                    continue
                counts[i] += 1
                chosen.append(Placement(name, s, ms))
                dfs(s + 1, used | mask, compute + cs, counts, chosen)
                chosen.pop()
                counts[i] -= 1

    dfs(0, 0, 0, [0] * n, [])
    return out


def layouts(gpu: GpuModel) -> dict[tuple[int, ...], tuple[Placement, ...]]:
    return _layouts(_key(gpu))


def _maximal(vectors: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    def dominated(a: tuple[int, ...]) -> bool:
        return any(b != a and all(x <= y for x, y in zip(a, b, strict=True)) for b in vectors)
    return [v for v in vectors if not dominated(v)]


def lower_bound(gpu: GpuModel, demand: Mapping[str, int]) -> int:
    by = {p.name: p for p in gpu.mig_profiles}
    mem = sum(by[n].memory_slices * c for n, c in demand.items())
    comp = sum(by[n].compute_slices * c for n, c in demand.items())
    per = max((math.ceil(c / by[n].max_instances) for n, c in demand.items()), default=0)
    return max(math.ceil(mem / MEMORY_SLICES), math.ceil(comp / COMPUTE_SLICES), per)


def check_demand(gpu: GpuModel, demand: Mapping[str, int]) -> None:
    if not gpu.mig_profiles:
        raise MigPlanError(f"{gpu.name} does not support MIG (fix: use time-slicing or MPS, or "
                           "a MIG-capable GPU (A100, H100, H200))")
    names = [p.name for p in gpu.mig_profiles]
    for n, c in demand.items():
        if n not in names:
            raise MigPlanError(f"{gpu.name} has no MIG profile '{n}' (fix: use one of "
                               + ", ".join(names) + ")")
        if c < 0:
            raise MigPlanError(f"negative demand for {n}")


def plan(gpu: GpuModel, demand: Mapping[str, int], available: int | None = None) -> Plan:
    """Layouts for ``demand`` (profile → instances) on the fewest GPUs of model ``gpu``."""
    check_demand(gpu, demand)
    demand = {n: c for n, c in demand.items() if c}
    profiles: list[MigProfile] = list(gpu.mig_profiles)
    table = layouts(gpu)
    patterns = _maximal(list(table))
    # Mem slices covered decide the greedy choice: memory is the binding resource.
    weights = [p.memory_slices * 8 + p.compute_slices for p in profiles]
    rem = [demand.get(p.name, 0) for p in profiles]
    chosen: list[tuple[int, ...]] = []

    def clip(pat: tuple[int, ...], r: Sequence[int]) -> tuple[int, ...]:
        return tuple(min(a, b) for a, b in zip(pat, r, strict=True))

    while sum(rem) > EXACT_TAIL:
        best = max(patterns, key=lambda p: (sum(w * x for w, x in zip(
            weights, clip(p, rem), strict=True)), -sum(p)))
        use = clip(best, rem)
        times = min(r // u for r, u in zip(rem, use, strict=True) if u)
        # Keep the tail for the exact search: do not overshoot it by bulk steps.
        times = max(1, min(times, (sum(rem) - EXACT_TAIL) // max(1, sum(use)) or 1))
        chosen.extend([use] * times)
        rem = [r - u * times for r, u in zip(rem, use, strict=True)]

    @cache
    def best_cover(r: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
        if not any(r):
            return ()
        options = {clip(p, r) for p in patterns}
        best: tuple[tuple[int, ...], ...] | None = None
        for use in sorted(options, key=lambda u: -sum(w * x for w, x in zip(
                weights, u, strict=True))):
            if not any(use):
                continue
            rest = best_cover(tuple(a - b for a, b in zip(r, use, strict=True)))
            if best is None or len(rest) + 1 < len(best):
                best = (use, *rest)
        assert best is not None
        return best

    chosen.extend(best_cover(tuple(rem)))
    result = Plan(gpu.name, dict(demand), lower_bound=lower_bound(gpu, demand))
    for vec in chosen:
        full = next(v for v in table if v == vec)
        result.layouts.append(Layout(table[full]))
    if available is not None and result.gpus > available:
        raise MigPlanError(
            f"the demand needs {result.gpus} {gpu.name} GPUs (lower bound {result.lower_bound})"
            f" but {available} are available (fix: add {result.gpus - available} GPUs, or "
            "reduce the demand)")
    return result


def mig_parted_config(plan_: Plan, gpus_per_node: int, prefix: str = "aiplat"
                      ) -> tuple[dict[str, object], dict[str, int]]:
    """NVIDIA mig-parted / MIG manager config (one named config per distinct node layout) and
    how many nodes get each (label them ``nvidia.com/mig.config=<name>``).

    Nodes take the plan's GPUs in order (identical layouts together); a node's GPUs beyond the
    plan stay with MIG enabled and no instances, ready for the next change."""
    gpus = sorted(plan_.layouts, key=lambda lay: sorted(lay.counts().items()))
    configs: dict[str, list[dict[str, object]]] = {}
    names: dict[tuple[tuple[tuple[str, int], ...], ...], str] = {}
    nodes: list[str] = []
    for i in range(0, len(gpus), gpus_per_node):
        node = gpus[i:i + gpus_per_node]
        sig = tuple(tuple(sorted(g.counts().items())) for g in node)
        if sig not in names:
            name = f"{prefix}-{len(names) + 1}"
            names[sig] = name
            entries: dict[tuple[tuple[str, int], ...], list[int]] = {}
            for idx, g in enumerate(sig):
                entries.setdefault(g, []).append(idx)
            configs[name] = [{"devices": idxs, "mig-enabled": True, "mig-devices": dict(g)}
                             for g, idxs in entries.items()]
        nodes.append(names[sig])
    return {"version": "v1", "mig-configs": configs}, {n: nodes.count(n) for n in configs}


def assign(plan_: Plan, demand_by_tenant: Mapping[str, Mapping[str, int]]
           ) -> list[tuple[int, Placement, str]]:
    """Which tenant gets which instance: ``(gpu index, placement, tenant)``.

    Tenants in the order given take their instances GPU by GPU, so each tenant's instances
    sit on as few GPUs as the layouts allow (a fault or a MIG reconfiguration then touches
    fewer tenants). The plan must cover the summed demand."""
    free: dict[str, list[tuple[int, Placement]]] = {}
    for i, lay in enumerate(plan_.layouts):
        for p in lay.placements:
            free.setdefault(p.profile, []).append((i, p))
    out: list[tuple[int, Placement, str]] = []
    for tenant, wants in demand_by_tenant.items():
        for profile, n in wants.items():
            pool = free.get(profile, [])
            if len(pool) < n:
                raise MigPlanError(f"the plan has {len(pool)} free {profile} for tenant "
                                   f"{tenant}'s {n}")
            out.extend((i, p, tenant) for i, p in pool[:n])
            free[profile] = pool[n:]
    return sorted(out, key=lambda t: (t[0], t[1].start))
