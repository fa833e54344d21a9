"""The host-describing spec (``aiplat.spec.host``) filled in from a node inventory."""

from __future__ import annotations

from aiplat.errors import AiplatError
from aiplat.node.inventory import Inventory
from aiplat.spec.host import host_spec


def spec_for(inv: Inventory, nic_gbps: float = 0.1) -> str:
    host = inv.host
    if host.cpu is None or not host.memory_kib or not host.kernel:
        raise AiplatError("this host's inventory has no CPU, memory or kernel")
    kernel = ".".join(host.kernel.split(".")[:2])
    return host_spec(host.cpu.threads, host.memory_kib // 2**20, kernel, nic_gbps)
