"""A node's NUMA layout and the kubelet settings that follow from it (pure): Topology Manager
policy, scope and options, CPU Manager policy and options, and the reserved CPUs.

One decision, ``advise``, read by ``aiplat node placement`` (``node/placement.py``: the layout
of a recorded or live node, or of a pool's node type) and by the rendered
``cluster/nodes/<pool>/kubelet-config.yaml`` (``kube/render_kubelet.py``: the pool's node
type). ``pool_layout`` is the model of a pool's node type when no node has been recorded.

The kubelet's rules it keeps (``pkg/kubelet/cm``):

- ``reservedSystemCPUs`` is the reserved set as given; with the static policy's
  ``full-pcpus-only`` the siblings of every reserved thread are also kept from exclusive
  allocation, so a reservation of half a core strands the other thread: whole cores only.
- How many: the plan's reservation (``plan.resolve.reserved_cpus``, the cores it takes off
  every node's allocatable CPU) is a floor, in logical CPUs; at least one whole core on each
  NUMA node with CPUs, so the system's share never takes a pod's aligned CPUs off one socket
  alone; further cores round-robin over the NUMA nodes, lowest first.
- A Guaranteed pod's integer CPU request under ``full-pcpus-only`` must be a multiple of the
  threads per core, or the kubelet refuses the pod at admission (``SMTAlignmentError``,
  ``policy_static.go``): ``pod_cpus`` is the one rule for what a GPU pod asks for, read by
  the rendered pods (``kube/render_apps.py``) and the simulator's jobs
  (``sched/platform.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiplat.plan.resolve import (
    POD_SHARE,
    ResolvedPool,
    cpu_allocatable,
    gpus_per_node,
    memory_allocatable_gib,
    reserved_cpus,
)
from aiplat.spec.models import NicType, PoolSpec

RDMA_NICS = (NicType.INFINIBAND, NicType.ROCE)
"""NIC types with an RDMA device: the ones NCCL and GPUDirect RDMA use (a management or
service Ethernet NIC is not a GPU's NIC)."""

THREADS_PER_CORE = 2
"""SMT on: every catalog node type's CPUs (Xeon, EPYC) have two threads per core and ship
with SMT enabled."""

TWO_SOCKETS_FROM_CORES = 32
"""The catalog records no socket count: a node type of this many cores or more (an even
number) is taken as two sockets, as every catalog node type is; fewer as one."""


@dataclass(frozen=True)
class NumaLayout:
    """One NUMA node: its logical CPUs and what sits on it."""

    id: int
    cpus: tuple[int, ...]
    gpus: int = 0
    rdma_nics: int = 0


@dataclass(frozen=True)
class NodeLayout:
    """What the kubelet decision reads of a node: NUMA nodes, physical cores (each a tuple
    of its logical CPUs, SMT siblings together), and where GPUs stand against RDMA NICs."""

    numa: tuple[NumaLayout, ...]
    cores: tuple[tuple[int, ...], ...]
    gpus: int
    gpu_numa_unknown: bool = False
    """A GPU's NUMA node is not known (sysfs ``numa_node`` -1)."""
    gpu_without_local_rdma: bool = False
    """Some GPU has no RDMA NIC on its NUMA node while the node has RDMA NICs."""

    @property
    def threads_per_core(self) -> int:
        return max((len(c) for c in self.cores), default=1)


@dataclass(frozen=True)
class KubeletAdvice:
    topology_manager_policy: str
    topology_manager_scope: str
    topology_manager_options: dict[str, str] = field(default_factory=dict)
    cpu_manager_policy: str = "none"
    cpu_manager_options: dict[str, str] = field(default_factory=dict)
    reserved_cpus: tuple[int, ...] = ()
    reasons: tuple[str, ...] = ()

    @property
    def reserved_system_cpus(self) -> str | None:
        """The reserved set as the kubelet reads a cpuset (``0-1,56``); None: nothing known."""
        return _cpulist(self.reserved_cpus) if self.reserved_cpus else None


def advise(node: NodeLayout) -> KubeletAdvice:
    """The kubelet's Topology and CPU Manager settings for ``node``."""
    reasons: list[str] = []
    options: dict[str, str] = {}
    numa = [n for n in node.numa if n.cpus]
    if len(node.numa) <= 1:
        policy, scope = "none", "container"
        reasons.append("one NUMA node: nothing to align")
    elif node.gpu_numa_unknown:
        policy, scope = "none", "container"
        reasons.append("GPU NUMA affinity unknown (sysfs numa_node -1): alignment impossible")
    elif node.gpu_without_local_rdma:
        policy, scope = "best-effort", "pod"
        reasons.append("some GPUs have no NIC on their NUMA node: 'restricted' would reject "
                       "pods that ask for such a GPU and a NIC; 'best-effort' admits them")
    else:
        policy, scope = "restricted", "pod"
        aligned = ("GPUs and NICs are NUMA-aligned" if any(n.rdma_nics for n in node.numa)
                   else "GPUs on known NUMA nodes, no RDMA NIC to align with them")
        reasons.append(f"{aligned}: 'restricted' with scope 'pod' keeps every container of a "
                       "pod on the minimal set of NUMA nodes while still admitting pods whose "
                       "GPUs span NUMA nodes ('single-numa-node' would not)")
    if len(node.numa) > 2:
        options["prefer-closest-numa-nodes"] = "true"
        reasons.append("more than two NUMA nodes: prefer the closest ones when spanning")
    cpu_policy = "static" if node.gpus else "none"
    cpu_options: dict[str, str] = {}
    if cpu_policy == "static" and node.threads_per_core > 1:
        cpu_options["full-pcpus-only"] = "true"
        reasons.append("SMT: 'full-pcpus-only' gives a pinned container whole cores (its "
                       "integer CPU request a multiple of the threads per core), and the "
                       "reserved CPUs are whole cores so no thread is stranded")
    return KubeletAdvice(
        topology_manager_policy=policy, topology_manager_scope=scope,
        topology_manager_options=options, cpu_manager_policy=cpu_policy,
        cpu_manager_options=cpu_options,
        reserved_cpus=_reserved(numa, node.cores), reasons=tuple(reasons))


def _reserved(numa: list[NumaLayout], cores: tuple[tuple[int, ...], ...]) -> tuple[int, ...]:
    """Whole cores, the lowest of each NUMA node first, then round-robin, until the plan's
    reservation is covered in logical CPUs."""
    if not numa:
        return ()
    by_cpu = {t: c for c in cores for t in c}
    per_node: list[list[tuple[int, ...]]] = []
    for n in numa:
        seen: dict[tuple[int, ...], None] = {}
        for cpu in sorted(n.cpus):
            seen.setdefault(by_cpu.get(cpu, (cpu,)), None)
        per_node.append(list(seen))
    physical = len(cores) or sum(len(p) for p in per_node)
    need = reserved_cpus(physical)
    taken = [t for node_cores in per_node for t in node_cores[0]]
    for depth in range(1, max(len(p) for p in per_node)):
        for node_cores in per_node:
            if len(taken) >= need:
                break
            if depth < len(node_cores):
                taken += node_cores[depth]
    return tuple(sorted(set(taken)))


def pool_layout(pool: ResolvedPool) -> NodeLayout:
    """``spec_layout`` of the pool's spec."""
    return spec_layout(pool.spec)


def spec_layout(pool: PoolSpec) -> NodeLayout:
    """The model of a pool's node type when no node is recorded: its cores on one or two
    sockets (``TWO_SOCKETS_FROM_CORES``), one NUMA node per socket, SMT on, Linux's x86
    numbering (every core's first thread, socket by socket, then the siblings), GPUs and
    RDMA NICs shared out over the sockets alike (rail-aligned when there are as many NICs
    as GPUs). A recorded node (``aiplat node placement --root``) replaces every assumption."""
    cores = pool.node.cpu_cores
    sockets = 2 if cores >= TWO_SOCKETS_FROM_CORES and cores % 2 == 0 else 1
    per_socket = cores // sockets
    core_threads = tuple(tuple(c + k * cores for k in range(THREADS_PER_CORE))
                         for c in range(cores))
    gpus = gpus_per_node(pool)
    rdma = sum(n.count for n in pool.node.nics if n.type in RDMA_NICS)
    numa = tuple(
        NumaLayout(id=s,
                   cpus=tuple(sorted(t for c in core_threads[s * per_socket:(s + 1) * per_socket]
                                     for t in c)),
                   gpus=_share(gpus, sockets, s), rdma_nics=_share(rdma, sockets, s))
        for s in range(sockets))
    return NodeLayout(
        numa=numa, cores=core_threads, gpus=gpus,
        gpu_without_local_rdma=rdma > 0 and any(n.gpus and not n.rdma_nics for n in numa))


def whole_core_cpus(pool: PoolSpec) -> int:
    """The CPUs a Guaranteed container's integer CPU request must be a multiple of on
    ``pool``'s nodes: the threads per core where the kubelet config pins whole cores (static
    CPU Manager with ``full-pcpus-only``), else 1."""
    layout = spec_layout(pool)
    advice = advise(layout)
    if advice.cpu_manager_options.get("full-pcpus-only") == "true":
        return layout.threads_per_core
    return 1


def pod_cpus(pool: PoolSpec, gpus: int) -> int:
    """The CPUs a GPU pod holding ``gpus`` of ``pool``'s GPUs asks for (requests equal to
    limits: Guaranteed): its GPUs' part of ``POD_SHARE`` of a node's allocatable CPU (the rest
    left for DaemonSets), rounded down to whole cores (``whole_core_cpus``) so the kubelet's
    ``full-pcpus-only`` admits it; at least one core."""
    per_node = max(1, gpus_per_node(pool))
    cpus = max(1, int(cpu_allocatable(pool.node.cpu_cores) * POD_SHARE) * gpus // per_node)
    core = whole_core_cpus(pool)
    return max(core, cpus - cpus % core)


def pod_memory_gib(pool: PoolSpec, gpus: int) -> int:
    """The memory (GiB, requests equal to limits) of a GPU pod holding ``gpus`` of
    ``pool``'s GPUs: its GPUs' part of ``POD_SHARE`` of a node's allocatable memory."""
    per_node = max(1, gpus_per_node(pool))
    return max(1, int(memory_allocatable_gib(pool.node.memory_gib) * POD_SHARE) * gpus
               // per_node)


def _share(count: int, parts: int, index: int) -> int:
    """``count`` shared over ``parts`` as evenly as it goes, the lower indexes first."""
    return count // parts + (1 if index < count % parts else 0)


def _cpulist(cpus: tuple[int, ...]) -> str:
    """(0, 1, 2, 5) -> ``0-2,5``: the kernel's and the kubelet's cpuset list format."""
    ordered = sorted(set(cpus))
    runs: list[str] = []
    start = prev = ordered[0]
    for cpu in [*ordered[1:], None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(runs)
