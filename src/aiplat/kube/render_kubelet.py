"""The kubelet drop-in for a pool's nodes: Topology, CPU and Memory Manager policy, reserved
CPUs and memory.

The Topology and CPU Manager settings and the reserved CPUs are ``plan/kubelet.py``'s one
decision (``advise``) on the model of the pool's node type (``pool_layout``): what
``aiplat node placement SPEC --pool NAME`` shows, and what it shows for a recorded
node of that type where the model holds (``--root``). The memory reservation is the plan's
(``plan.resolve.reserved_memory_gib``, the memory taken off every node's allocatable).
"""

from __future__ import annotations

from typing import Any

from aiplat.kube.facts import PoolFacts
from aiplat.plan.kubelet import NodeLayout, advise, pool_layout
from aiplat.plan.resolve import reserved_memory_gib

KUBE_RESERVED_GIB = 2
EVICTION_HARD_GIB = 1


def kubelet_policy(pool: PoolFacts) -> dict[str, Any]:
    """The KubeletConfiguration fragment of ``pool``'s nodes."""
    return kubelet_config(pool_layout(pool.resolved), pool.spec.node.memory_gib)


def kubelet_config(node: NodeLayout, memory_gib: int) -> dict[str, Any]:
    """Topology/CPU/Memory Manager settings for a node of ``node``'s layout and memory.

    The Memory Manager's Static policy refuses to start unless ``reservedMemory`` over all
    NUMA nodes adds up to system-reserved + kube-reserved + the hard eviction threshold (the
    kubelet's validateReservedMemory): the plan's reservation is split over the NUMA nodes.
    """
    advice = advise(node)
    mem = reserved_memory_gib(memory_gib)
    config: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "cpuManagerPolicy": advice.cpu_manager_policy,
    }
    if advice.cpu_manager_options:
        config["cpuManagerPolicyOptions"] = dict(advice.cpu_manager_options)
    if advice.reserved_system_cpus:
        config["reservedSystemCPUs"] = advice.reserved_system_cpus
    config["topologyManagerPolicy"] = advice.topology_manager_policy
    config["topologyManagerScope"] = advice.topology_manager_scope
    if advice.topology_manager_options:
        config["topologyManagerPolicyOptions"] = dict(advice.topology_manager_options)
    config.update({
        "memoryManagerPolicy": "Static",
        "systemReserved": {"memory": f"{mem - KUBE_RESERVED_GIB - EVICTION_HARD_GIB}Gi"},
        "kubeReserved": {"memory": f"{KUBE_RESERVED_GIB}Gi"},
        "evictionHard": {"memory.available": f"{EVICTION_HARD_GIB}Gi"},
        "reservedMemory": [{"numaNode": numa, "limits": {"memory": quantity}}
                           for numa, quantity in _split_memory(mem, node)],
    })
    return config


def _split_memory(gib: int, node: NodeLayout) -> list[tuple[int, str]]:
    """``gib`` over the node's NUMA nodes as evenly as it goes (GiB where it divides, else
    MiB, the remainder on the lowest nodes): the parts add up to ``gib`` exactly."""
    ids = sorted(n.id for n in node.numa) or [0]
    if gib % len(ids) == 0:
        return [(i, f"{gib // len(ids)}Gi") for i in ids]
    mib = gib * 1024
    base, extra = divmod(mib, len(ids))
    return [(i, f"{base + (1 if k < extra else 0)}Mi") for k, i in enumerate(ids)]
