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

**The secondary RDMA network** (``rdma_networks``): for each tenant that trains across nodes
on an RDMA pool, a Multus ``NetworkAttachmentDefinition`` per rail in its namespace, named
``<pool>-rail<i>``: IPoIB (the ``ipoib`` CNI) over the host's ``rail<i>`` on InfiniBand,
macvlan (bridge mode, the rail's MTU) on RoCE, so a pod gets an address on each rail's
subnet (RoCE v2 addresses its GIDs by IP; rdma_cm and IPoIB-based tools need one). IPAM is
whereabouts over the upper half of the rail's subnet (``plan/netpath.rail_subnets``; the
hosts' rail addresses take the lower half), so the hpc segment needs a ``cidr``: without one
no NAD is rendered and NCCL still reaches the HCAs through the device plugin above (it needs
no IP on them for InfiniBand). Each NAD names the device plugin's resource
(``k8s.v1.cni.cncf.io/resourceName``), so Multus adds that request to the pod. A pod
attaches with ``k8s.v1.cni.cncf.io/networks: <pool>-rail0,<pool>-rail1,...``. Multus,
whereabouts and the ipoib/macvlan plugins are the NVIDIA Network Operator's
``secondaryNetwork`` (or installed on their own); aiplat renders none of them.
"""

from __future__ import annotations

import json
from ipaddress import IPv4Network

from aiplat.kube.facts import POOL_LABEL, RDMA_PODS_PER_NODE, RDMA_RESOURCE, PoolFacts
from aiplat.kube.objects import Obj, obj, pool_tolerations
from aiplat.plan.models import Plan
from aiplat.plan.netpath import (
    hpc_rails,
    interface_mtu,
    rail_subnets,
    rdma_capable,
    segment_for,
)
from aiplat.spec.models import Platform, SegmentPurpose

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


# The secondary RDMA network: one NetworkAttachmentDefinition per rail.
NAD_API = "k8s.cni.cncf.io/v1"
NAD_RESOURCE = "k8s.v1.cni.cncf.io/resourceName"  # Multus adds this resource to the pod


def rail_network(pool: str, rail: int, namespace: str, *, transport: str, mtu: int,
                 pods: IPv4Network) -> Obj:
    """Rail ``rail`` of ``pool`` for a pod: IPoIB (InfiniBand) or macvlan (RoCE) over the
    host's ``rail<i>`` (the name the rendered netplan gives it), whereabouts IPAM over the
    rail's pod half."""
    name = f"{pool}-rail{rail}"
    ipam = {"type": "whereabouts", "range": str(pods)}
    plugin: dict[str, object] = (
        {"type": "ipoib", "master": f"rail{rail}"} if transport == "infiniband"
        else {"type": "macvlan", "master": f"rail{rail}", "mode": "bridge", "mtu": mtu})
    config = {"cniVersion": "0.3.1", "name": name, **plugin, "ipam": ipam}
    return obj(NAD_API, "NetworkAttachmentDefinition", name, namespace,
               annotations={NAD_RESOURCE: RDMA_RESOURCE},
               spec={"config": json.dumps(config, separators=(",", ":"))})


def rdma_networks(platform: Platform, plan: Plan) -> dict[str, list[Obj]]:
    """``tenants/<tenant>/rdma-networks.yaml``: a NAD per rail of each pool a tenant trains
    across nodes on, where the pool's hpc NICs carry the segment's RDMA and the segment has a
    CIDR to cut into rails (``plan/netpath.rail_subnets``); nothing otherwise."""
    seg = segment_for(platform, SegmentPurpose.HPC)
    if seg is None or seg.rdma == "none":
        return {}
    halves = rail_subnets(seg, hpc_rails(platform))
    spans = sorted({(w.tenant, w.pool) for w in plan.workloads if w.multi_node})
    out: dict[str, list[Obj]] = {}
    for tenant, pool_name in spans:
        pool = platform.pool(pool_name)
        rails = len(rail_names(platform, pool_name))
        if pool is None or not rails:
            continue
        nics = [n for n in pool.node.nics if n.segment is SegmentPurpose.HPC]
        mtu = interface_mtu(seg, nics[0].type)
        out.setdefault(f"tenants/{tenant}/rdma-networks.yaml", []).extend(
            rail_network(pool_name, i, tenant, transport=seg.rdma, mtu=mtu, pods=halves[i][1])
            for i in range(rails))
    return out


def rail_names(platform: Platform, pool_name: str) -> list[str]:
    """The NADs of ``pool_name``'s rails (``<pool>-rail<i>``) a pod training across nodes
    there attaches to: one per hpc port that carries the segment's RDMA, as many as the
    segment's CIDR has rails for; none without RDMA or a CIDR (no IPAM to give)."""
    seg = segment_for(platform, SegmentPurpose.HPC)
    pool = platform.pool(pool_name)
    if seg is None or seg.rdma == "none" or pool is None:
        return []
    nics = [n for n in pool.node.nics if n.segment is SegmentPurpose.HPC]
    if not nics or not all(rdma_capable(seg, n.type) for n in nics):
        return []
    rails = min(sum(n.count for n in nics), len(rail_subnets(seg, hpc_rails(platform))))
    return [f"{pool_name}-rail{i}" for i in range(rails)]
