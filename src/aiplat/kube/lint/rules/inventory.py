"""What lint says when it has no node inventory: the rules that compare the tree with the
nodes (flavor-pool, flavor-taints, quota-capacity, topology-levels, gpu-per-node,
resource-unserved, deviceclass-matches, claim-constraint, dra-device-plugin, tas-autoscaled,
rdma-memlock, netpol-model-store) judge nothing; an upstream file brings no inventory, and
another cluster's pools are the wrong question. One info line says which checks did not run
and how to give them nodes.
"""

from __future__ import annotations

from aiplat.findings import Finding
from aiplat.kube.lint.base import Context, finding, rule


@rule("inventory", "says when node-dependent checks did not run (no inventory)",
      severities=("info",))
def inventory(ctx: Context) -> list[Finding]:
    if ctx.inventory_known or not ctx.objects:
        return []
    return [finding("info", "inventory", "",
                    "node-dependent checks not run: no --inventory (flavors against pools, "
                    "taints, quota against capacity, topology levels, GPUs per node, "
                    "resources no node serves, DRA devices, RDMA memlock, the model store's "
                    "egress)", "describe the nodes in a file of the shape `aiplat kube "
                    "render` writes to cluster/nodes/inventory.yaml and pass --inventory FILE")]
