"""Each pool as Slurm sees its nodes: names, CPU layout, memory, GRES, racks (pure).

One record per pool, derived once from ``plan/``'s resolved pool and the Kubernetes tree's
names, that every Slurm file reads: slurm.conf's NodeName and partition lines, gres.conf,
topology.conf and the accounts' trackable resources cannot disagree on a figure.

Assumptions where the spec has no fact (stated in slurm.conf's header too):
- ``cpuCores`` are physical cores on two sockets when the count is even (one otherwise),
  ``ThreadsPerCore=1``: declaring fewer CPUs than a node has is safe (Slurm schedules
  what is declared), declaring more drains the node. ``slurmd -C`` prints the truth.
- ``RealMemory`` is what ``plan/`` leaves for work after the OS reservation (the kubelet's
  rule, ``plan.resolve.memory_allocatable_gib``), so it stays below what the kernel
  reports (a node configured above it is drained); ``CoreSpecCount`` keeps the same
  reservation's cores (``plan.resolve.reserved_cpus``) for the OS and slurmd.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aiplat.kube.facts import PoolFacts, slug
from aiplat.plan.resolve import reserved_cpus
from aiplat.spec.models import SharingStrategy

MIB_PER_GIB = 1024


@dataclass(frozen=True)
class Rack:
    name: str
    block: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class SlurmPool:
    """A pool's nodes as slurm.conf, gres.conf and topology.conf declare them."""

    facts: PoolFacts
    gres_type: str | None
    """The GPU's GRES type (the catalog name as a slug: ``h100-sxm-80gb``); None: no GPUs."""

    @property
    def name(self) -> str:
        return self.facts.name

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self.facts.node_name(i) for i in range(self.facts.nodes))

    @property
    def gpus_per_node(self) -> int:
        return self.facts.gpus_per_node

    @property
    def cores(self) -> int:
        return self.facts.spec.node.cpu_cores

    @property
    def sockets(self) -> int:
        return 2 if self.cores % 2 == 0 else 1

    @property
    def real_memory_mib(self) -> int:
        return max(1, self.facts.memory_allocatable_gib) * MIB_PER_GIB

    @property
    def core_spec_count(self) -> int:
        reserved = reserved_cpus(self.cores)
        return reserved if reserved < self.cores else 0

    @property
    def sharing(self) -> SharingStrategy:
        return self.facts.spec.sharing.strategy

    @property
    def shards_per_gpu(self) -> int:
        """Time-slicing and MPS replicas become Slurm shards: jobs sharing one GPU."""
        if self.sharing in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS):
            return self.facts.spec.sharing.replicas or 1
        return 0

    def gres(self) -> dict[str, int]:
        """``name:type`` -> count per node, as slurm.conf's ``Gres=`` lists it. A MIG pool
        offers one typed gpu per profile (each MIG device is a GPU to Slurm)."""
        n = self.gpus_per_node
        if not n or self.gres_type is None:
            return {}
        if self.sharing is SharingStrategy.MIG:
            out: dict[str, int] = {}
            for profile in self.facts.spec.sharing.mig_layout or []:
                key = f"gpu:{mig_type(profile)}"
                out[key] = out.get(key, 0) + n
            return out
        out = {f"gpu:{self.gres_type}": n}
        if self.shards_per_gpu:
            out["shard"] = n * self.shards_per_gpu
        return out

    def racks(self) -> list[Rack]:
        """The racks holding the pool's nodes (spares' racks without a node are left out),
        named as the Kubernetes tree's rack and block labels."""
        t = self.facts.spec.topology
        by_rack: dict[str, Rack] = {}
        for i, node in enumerate(self.nodes):
            labels = self.facts.rack_labels(i)
            rack, block = labels[t.rack_label], labels[t.block_label]
            old = by_rack.get(rack)
            by_rack[rack] = Rack(rack, block, (*old.nodes, node) if old else (node,))
        return list(by_rack.values())


def mig_type(profile: str) -> str:
    """A MIG profile as a GRES type: ``3g.40gb`` stays ``3g.40gb``."""
    return re.sub(r"[^a-z0-9.]+", "-", profile.lower()).strip("-") or "mig"


def gres_type(facts: PoolFacts) -> str | None:
    if facts.gpu is None or not facts.gpus_per_node:
        return None
    # A slug never holds ':' or ',' (GRES syntax) nor anything a config line could misread.
    return slug(facts.gpu.name) or "gpu"


def slurm_pools(facts: list[PoolFacts]) -> list[SlurmPool]:
    return [SlurmPool(f, gres_type(f)) for f in facts]


def hostlist(names: tuple[str, ...] | list[str]) -> str:
    """Slurm's compressed host list: ``h100-0 h100-1 h100-2 l40s-0`` -> ``h100-[0-2],l40s-0``.
    Runs of consecutive indexes under one prefix become a range; order is kept."""
    groups: list[tuple[str, list[int]]] = []
    for name in names:
        m = re.fullmatch(r"(.*?)(\d+)", name)
        if m is None or (len(m.group(2)) > 1 and m.group(2).startswith("0")):
            groups.append((name, []))
            continue
        prefix, index = m.group(1), int(m.group(2))
        if groups and groups[-1][0] == prefix and groups[-1][1]:
            groups[-1][1].append(index)
        else:
            groups.append((prefix, [index]))
    return ",".join(_ranges(prefix, idx) for prefix, idx in groups)


def _ranges(prefix: str, indexes: list[int]) -> str:
    if not indexes:
        return prefix
    runs: list[list[int]] = []
    for i in indexes:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    if len(runs) == 1 and len(runs[0]) == 1:
        return f"{prefix}{runs[0][0]}"
    parts = [f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs]
    return f"{prefix}[{','.join(parts)}]"
