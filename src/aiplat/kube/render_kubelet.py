"""The kubelet drop-in for a pool's nodes: Topology, CPU and Memory Manager policy, reserved
CPUs and memory.

Derived from the spec for now (GPUs per node and cores, a 2-socket assumption); issue #43
moves it onto ``node placement``'s model of the pool's node type.
"""

from __future__ import annotations

from typing import Any

from aiplat.kube.facts import PoolFacts
from aiplat.plan.resolve import reserved_cpus, reserved_memory_gib


def kubelet_policy(pool: PoolFacts) -> dict[str, Any]:
    """Topology/CPU/Memory Manager settings for a pool's kubelet.

    Pods that take a whole 8-GPU node span both sockets, so ``single-numa-node`` or
    ``restricted`` would reject them: such pools get ``best-effort`` with pod scope (aligned
    where possible). Pools of at most 4 GPUs per node (one socket's worth) get
    ``single-numa-node`` with container scope. This is where ``aiplat.node`` placement
    evaluation plugs in with the measured NUMA layout.
    """
    cores = pool.spec.node.cpu_cores
    reserved = reserved_cpus(cores)
    sockets = 2 if cores >= 32 else 1
    per_socket = cores // sockets
    # Reserve the same number of cores on each socket, from the first core of each.
    reserved_list = []
    for s in range(sockets):
        first = s * per_socket
        n = reserved // sockets + (1 if s < reserved % sockets else 0)
        reserved_list.append(f"{first}-{first + n - 1}" if n > 1 else str(first))
    whole_node = pool.gpus_per_node > 4
    mem = reserved_memory_gib(pool.spec.node.memory_gib)
    system_gib, kube_gib = mem - 3, 2
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "cpuManagerPolicy": "static",
        "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
        "reservedSystemCPUs": ",".join(reserved_list),
        "topologyManagerPolicy": "best-effort" if whole_node else "single-numa-node",
        "topologyManagerScope": "pod" if whole_node else "container",
        "memoryManagerPolicy": "Static",
        "systemReserved": {"memory": f"{system_gib}Gi"},
        "kubeReserved": {"memory": f"{kube_gib}Gi"},
        "evictionHard": {"memory.available": "1Gi"},
        # The Static memory manager needs reservedMemory to equal system + kube + eviction.
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": f"{mem}Gi"}}],
    }
