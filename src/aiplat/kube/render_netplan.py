"""The host network of each pool as netplan: ``cluster/nodes/<pool>/netplan/60-aiplat.yaml``
(pure; a node-side file, not a kustomize resource).

One file per pool (a pool is one node type), from the pool's NICs and the spec's segments
(``network.segments``, one per purpose; the first if a purpose has several):

- **Ports**: a node type says how many NICs of which type sit on which segment, never their
  names (``enp65s0f0np0`` depends on the slot and the firmware). Each port is matched by its
  MAC address, a placeholder ``${RAIL0_MAC}`` the admin fills per node, and renamed to a
  short stable name (``rail0``, ``stor1``, ``mgmt0``, ``svc0``) so the rest of the file, and
  NCCL_IB_HCA-style settings, can name it. Until every placeholder is filled netplan refuses
  the file (a MAC or address it cannot parse): an unfilled file cannot half-apply. An IPoIB
  rail's address is 20 bytes (queue pair number and port GID); netplan matches it whole.
- **Bonds**: management, service and TCP storage ports, two or more, form an LACP bond
  (802.3ad, layer3+4 hashing, fast LACP rate, MII monitoring every 100 ms) across two
  switches (MLAG), as ``plan/network.py`` advises. RDMA ports are never bonded: the hpc
  rails (one interface per GPU's NIC, NCCL drives each) and RDMA storage (multipath) keep one
  interface per port. Ports whose NIC type cannot do the segment's RDMA (a finding of
  ``plan/netpath.py``) are configured as what they can do: TCP, bonded.
- **MTU** per segment on the ports, the bond and the VLAN alike (a bond carries the VLAN's
  frames, so it is never smaller; the 802.1Q tag is not part of the MTU on Linux). An
  InfiniBand segment's MTU is the IB link MTU (at most 4096, set by the subnet manager):
  IPoIB in datagram mode carries 4 bytes less; above 4096 the file asks for connected mode.
- **VLANs**: a segment with ``vlan`` gets a VLAN on its bond or on each RDMA port, and the
  address moves onto the VLAN.
- **Addresses and routes** are per node: placeholders (``${STOR_ADDR}`` with its prefix, in
  the segment's CIDR when the spec gives one; an hpc rail's in the lower half of that rail's
  own subnet, ``plan/netpath.rail_subnets``, whose upper half the pods' secondary RDMA
  network takes), and one default route through
  ``${SVC_GATEWAY}`` (the service segment when the pool has one, else management).

The placeholders are shell-style, so ``envsubst`` fills them from a node's values; the file's
header lists each one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any

from aiplat.kube.yamlout import dump_docs
from aiplat.plan.netpath import (
    hpc_rails,
    interface_mtu,
    ipoib_datagram,
    rail_subnets,
    rdma_capable,
    segment_for,
)
from aiplat.spec.models import NicType, Platform, PoolSpec, SegmentPurpose, SegmentSpec

NETPLAN_FILE = "60-aiplat.yaml"
# The short names ports and bonds get (an interface name has at most 15 characters).
SHORT = {SegmentPurpose.MANAGEMENT: "mgmt", SegmentPurpose.STORAGE: "stor",
         SegmentPurpose.SERVICE: "svc", SegmentPurpose.HPC: "rail"}
_PLACEHOLDER = re.compile(r"(?m)(: |- )(\$\{[A-Z0-9_]+\})$")
BOND_PARAMETERS = {"mode": "802.3ad", "transmit-hash-policy": "layer3+4", "lacp-rate": "fast",
                   "mii-monitor-interval": 100}


def netplan_path(pool: str) -> str:
    return f"cluster/nodes/{pool}/netplan/{NETPLAN_FILE}"


@dataclass(frozen=True)
class Port:
    name: str  # rail0, stor1, ...
    type: NicType


@dataclass
class _Doc:
    ethernets: dict[str, Any]
    bonds: dict[str, Any]
    vlans: dict[str, Any]
    placeholders: dict[str, str]  # variable -> what to fill in

    def var(self, name: str, meaning: str) -> str:
        self.placeholders[name] = meaning
        return "${" + name + "}"


def pool_ports(pool: PoolSpec) -> dict[SegmentPurpose, list[Port]]:
    out: dict[SegmentPurpose, list[Port]] = {}
    for nic in pool.node.nics:
        ports = out.setdefault(nic.segment, [])
        start = len(ports)
        ports.extend(Port(f"{SHORT[nic.segment]}{start + i}", nic.type)
                     for i in range(nic.count))
    return out


def netplan_config(platform: Platform, pool: PoolSpec) -> tuple[dict[str, Any], dict[str, str],
                                                                 list[str]]:
    """The pool's netplan document, its placeholders (variable -> meaning) and notes (what
    was not configured, and why)."""
    doc = _Doc({}, {}, {}, {})
    notes: list[str] = []
    ports = pool_ports(pool)
    gateway = SegmentPurpose.SERVICE if SegmentPurpose.SERVICE in ports \
        else SegmentPurpose.MANAGEMENT
    for purpose, group in ports.items():
        seg = segment_for(platform, purpose)
        if seg is None:
            notes.append(f"{purpose.value} NICs ({', '.join(p.name for p in group)}): the "
                         f"spec has no {purpose.value} segment, so they are not configured")
            continue
        rails = rail_subnets(seg, hpc_rails(platform)) if purpose is SegmentPurpose.HPC else []
        _segment(doc, seg, group, purpose, default_route=purpose is gateway, rails=rails)
    net: dict[str, Any] = {"version": 2, "renderer": "networkd", "ethernets": doc.ethernets}
    if doc.bonds:
        net["bonds"] = doc.bonds
    if doc.vlans:
        net["vlans"] = doc.vlans
    return {"network": net}, doc.placeholders, notes


def _segment(doc: _Doc, seg: SegmentSpec, group: list[Port], purpose: SegmentPurpose, *,
             default_route: bool, rails: list[tuple[IPv4Network, IPv4Network]]) -> None:
    short = SHORT[purpose].upper()
    # RDMA only where every port can (the plan's finding names the others): TCP otherwise.
    rdma = all(rdma_capable(seg, p.type) for p in group)
    mtu = seg.mtu
    for p in group:
        eth: dict[str, Any] = {
            "match": {"macaddress": doc.var(f"{p.name.upper()}_MAC",
                                            f"MAC address of the {seg.name} port {p.name} "
                                            f"({p.type.value})")},
            "set-name": p.name}
        if rdma and seg.rdma == "infiniband":
            eth["infiniband-mode"] = "datagram" if ipoib_datagram(seg) else "connected"
        mtu = interface_mtu(seg, p.type)
        eth["mtu"] = mtu
        doc.ethernets[p.name] = eth
    where = f" in {seg.cidr}" if seg.cidr else ""
    if purpose is SegmentPurpose.HPC or (rdma and purpose is SegmentPurpose.STORAGE):
        # One interface per port: NCCL (rails) or RDMA multipath spread traffic themselves.
        for i, p in enumerate(group):
            at = where
            if i < len(rails):  # the rail's own subnet: hosts below, pods above
                hosts, pods = rails[i]
                at = (f" in {hosts} with prefix /{hosts.prefixlen - 1} (pods on {p.name} "
                      f"take {pods})")
            _address(doc, p.name, seg, mtu, (f"{p.name.upper()}_ADDR",
                     f"this node's {p.name} address{at}" + ("" if i < len(rails) else
                                                            ", with its prefix")), route=None)
        return
    top = group[0].name
    if len(group) > 1:
        top = f"bond-{SHORT[purpose]}"
        doc.bonds[top] = {"interfaces": [p.name for p in group], "mtu": mtu,
                          "parameters": dict(BOND_PARAMETERS)}
    route = (short + "_GATEWAY", f"the default gateway on {seg.name}") if default_route \
        else None
    _address(doc, top, seg, mtu, (f"{short}_ADDR",
             f"this node's {seg.name} address{where}, with its prefix"), route=route)


def _address(doc: _Doc, link: str, seg: SegmentSpec, mtu: int, address: tuple[str, str], *,
             route: tuple[str, str] | None) -> None:
    """Address (and the default route) on ``link``, or on a VLAN over it; ``address`` and
    ``route`` are placeholders (variable, meaning)."""
    conf: dict[str, Any] = {"dhcp4": False, "addresses": [doc.var(*address)]}
    if route is not None:
        conf["routes"] = [{"to": "default", "via": doc.var(*route)}]
    if seg.vlan is None:
        target = doc.bonds.get(link) or doc.ethernets[link]
        target.update(conf)
        return
    doc.vlans[f"{link}.{seg.vlan}"] = {"id": seg.vlan, "link": link, "mtu": mtu, **conf}


def netplan_text(platform: Platform, pool: PoolSpec) -> str | None:
    """The file with its header; None for a pool without NICs."""
    if not pool.node.nics:
        return None
    doc, placeholders, notes = netplan_config(platform, pool)
    width = max(len(v) for v in placeholders) if placeholders else 0
    head = [
        f"# netplan for pool {pool.name}: every node of it, once its placeholders are filled.",
        "# Interface names depend on the slot and firmware, so each port is matched by its",
        "# MAC address and renamed (rail<i> is GPU i's NIC). Fill per node, e.g. with envsubst,",
        f"# install as /etc/netplan/{NETPLAN_FILE} (mode 600), then `netplan try`:",
        *(f"#   {v.ljust(width)}  {m}" for v, m in placeholders.items()),
        *(f"# not configured: {n}" for n in notes),
    ]
    # Quoted, so a filled-in MAC or address is read as a string by any YAML reader.
    body = _PLACEHOLDER.sub(r'\1"\2"', dump_docs([doc]))
    return "\n".join(head) + "\n" + body


def netplan_files(platform: Platform) -> dict[str, str]:
    out: dict[str, str] = {}
    for pool in platform.pools:
        text = netplan_text(platform, pool)
        if text is not None:
            out[netplan_path(pool.name)] = text
    return out
