"""The CNI plugin's Helm values from the plan's pod network: ``cluster/cni/values.yaml``
(pure; only when the spec names a plugin in ``network.cni.plugin``).

What follows from the plan (``plan/netpath.pod_network``): the routing (native where every
node sits on the pod segment's subnet, else the overlay the spec names or VXLAN), the pod
CIDR and the MTU.

- **Cilium** (chart ``cilium/cilium``): ``MTU`` is the *underlay's* MTU (Cilium takes its
  tunnel header off itself, so the pods get the segment's less 50 in tunnel mode);
  ``routingMode: native`` with ``autoDirectNodeRoutes`` (nodes on one L2 subnet) and
  ``ipv4NativeRoutingCIDR`` (the pod CIDR: not masqueraded), or ``routingMode: tunnel`` with
  ``tunnelProtocol``; cluster-pool IPAM over the pod CIDR.
- **Calico** (the tigera-operator chart, ``projectcalico/tigera-operator``): the
  Installation's ``calicoNetwork.mtu`` is the *pods'* MTU; one IP pool over the pod CIDR with
  ``encapsulation`` None (native, BGP mesh between the nodes), VXLAN (BGP off) or IPIP (BGP
  on, as IP-in-IP needs it).
"""

from __future__ import annotations

from typing import Any

from aiplat.kube.yamlout import dump_docs
from aiplat.plan.netpath import PodNetwork, pod_network
from aiplat.spec.models import Platform

CNI_VALUES = "cluster/cni/values.yaml"
_INSTALL = {
    "cilium": "helm install cilium cilium/cilium -n kube-system -f values.yaml",
    "calico": "helm install calico projectcalico/tigera-operator -n tigera-operator "
              "--create-namespace -f values.yaml",
}


def cilium_values(pn: PodNetwork, pod_cidr: str, underlay_mtu: int) -> dict[str, Any]:
    out: dict[str, Any] = {"MTU": underlay_mtu}
    if pn.routing == "native":
        out |= {"routingMode": "native", "autoDirectNodeRoutes": pn.native_possible,
                "ipv4NativeRoutingCIDR": pod_cidr}
    else:
        out |= {"routingMode": "tunnel", "tunnelProtocol": pn.routing}
    out["ipam"] = {"mode": "cluster-pool",
                   "operator": {"clusterPoolIPv4PodCIDRList": [pod_cidr]}}
    return out


def calico_values(pn: PodNetwork, pod_cidr: str, pod_mtu: int) -> dict[str, Any]:
    encap = {"native": "None", "vxlan": "VXLAN", "ipip": "IPIP"}[pn.routing]
    return {"installation": {"calicoNetwork": {
        "mtu": pod_mtu,
        "bgp": "Disabled" if pn.routing == "vxlan" else "Enabled",
        "ipPools": [{"cidr": pod_cidr, "encapsulation": encap, "natOutgoing": "Enabled",
                     "blockSize": 26}]}}}


def cni_files(platform: Platform) -> dict[str, str]:
    """The values file; nothing without a plugin or without the pod segment (a plan
    finding says why)."""
    cni = platform.network.cni
    pn = pod_network(platform)
    if cni.plugin is None or pn.segment is None or pn.mtu is None:
        return {}
    cidr = str(cni.pod_cidr)
    values = cilium_values(pn, cidr, pn.segment.mtu) if cni.plugin == "cilium" \
        else calico_values(pn, cidr, pn.mtu)
    if cni.routing is not None:
        why = "as the spec sets"
    else:
        why = pn.reason if pn.native_possible else f"native routing is not possible: {pn.reason}"
    head = (f"# {_INSTALL[cni.plugin]}\n"
            f"# pods on segment {pn.segment.name} (MTU {pn.segment.mtu}); {pn.routing} routing, "
            f"{why}; pod MTU {pn.mtu}"
            + (f" ({pn.routing}'s {pn.header}-byte header off)" if pn.header else "")
            + "\n")
    return {CNI_VALUES: head + dump_docs([values])}
