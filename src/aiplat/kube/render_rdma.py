"""The RDMA shared device plugin that publishes ``rdma/rdma_shared_device_a``, which the
training gangs on RDMA pools request (``render_apps._rdma``): without it the resource exists
on no node and every such pod stays Pending.

The plugin is Mellanox's k8s-rdma-shared-dev-plugin (the one the NVIDIA Network Operator's
``rdmaSharedDevicePlugin`` deploys), run as its upstream base manifests do (privileged, the
host network, the kubelet's device-plugin sockets and /dev), but only on the RDMA pools'
nodes and tolerating their taints. Its config selects the Mellanox HCAs (PCI vendor 15b3)
whose net device has the fabric's link type: ``infiniband`` for InfiniBand pools, ``ether``
for RoCE, so a pool's Ethernet storage NICs on a separate fabric are not handed to NCCL when
they are of another link type. ``rdmaHcaMax`` is how many pods of a node may share the HCAs.
"""

from __future__ import annotations

import json

from aiplat.kube.facts import POOL_LABEL, RDMA_PODS_PER_NODE, RDMA_RESOURCE, PoolFacts
from aiplat.kube.objects import Obj, obj, pool_tolerations

RDMA_NS = "nvidia-network-operator"
"""The Network Operator's namespace: where its own rdmaSharedDevicePlugin would run."""
RDMA_IMAGE = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.3"
CONFIG_NAME = "rdma-shared-device-plugin"
MELLANOX_PCI_VENDOR = "15b3"
LINK_TYPES = {"infiniband": "infiniband", "roce": "ether"}


def rdma_config(pools: list[PoolFacts]) -> dict[str, object]:
    """The plugin's config.json: one resource over the RDMA pools' HCAs."""
    prefix, name = RDMA_RESOURCE.split("/")
    links = sorted({LINK_TYPES[p.rdma] for p in pools if p.rdma})
    return {"periodicUpdateInterval": 300, "configList": [{
        "resourcePrefix": prefix, "resourceName": name, "rdmaHcaMax": RDMA_PODS_PER_NODE,
        "selectors": {"vendors": [MELLANOX_PCI_VENDOR], "linkTypes": links}}]}


def rdma_device_plugin(pools: list[PoolFacts]) -> list[Obj]:
    """Namespace, ConfigMap and DaemonSet; nothing when no pool has RDMA NICs."""
    rdma = [p for p in pools if p.rdma]
    if not rdma:
        return []
    tolerations = pool_tolerations(rdma)
    labels = {"app.kubernetes.io/name": "rdma-shared-device-plugin"}
    host = {"device-plugin": "/var/lib/kubelet/device-plugins",
            "plugins-registry": "/var/lib/kubelet/plugins_registry", "devs": "/dev/"}
    container = {
        "name": "rdma-shared-device-plugin", "image": RDMA_IMAGE,
        # It registers with the kubelet and opens the HCAs' device nodes.
        "securityContext": {"privileged": True},
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                      "limits": {"memory": "128Mi"}},
        "volumeMounts": [*({"name": n, "mountPath": p} for n, p in host.items()),
                         {"name": "config", "mountPath": "/k8s-rdma-shared-dev-plugin",
                          "readOnly": True}],
    }
    return [
        obj("v1", "Namespace", RDMA_NS,
            labels={"pod-security.kubernetes.io/enforce": "privileged"}),
        obj("v1", "ConfigMap", CONFIG_NAME, RDMA_NS,
            data={"config.json": json.dumps(rdma_config(pools), indent=2) + "\n"}),
        obj("apps/v1", "DaemonSet", CONFIG_NAME, RDMA_NS, labels=labels, spec={
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {
                "hostNetwork": True,
                "priorityClassName": "system-node-critical",
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": POOL_LABEL, "operator": "In",
                         "values": [p.name for p in rdma]}]}]}}},
                "tolerations": tolerations,
                "containers": [container],
                "volumes": [*({"name": n, "hostPath": {"path": p, "type": "Directory"}}
                              for n, p in host.items()),
                            {"name": "config", "configMap": {
                                "name": CONFIG_NAME,
                                "items": [{"key": "config.json", "path": "config.json"}]}}],
            }},
        }),
    ]
