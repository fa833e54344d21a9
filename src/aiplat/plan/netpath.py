"""What a node's interfaces carry on each segment, and the spec's contradictions along those
paths as plan findings (pure).

The one place for these rules: the plan's findings (``network_findings``), the rendered
netplan (``kube/render_netplan.py``) and ``aiplat node check``'s expected MTU all read them.

- **RDMA the NICs cannot do.** A segment asks for ``roce`` or ``infiniband``; a pool's NICs
  on it must be of that type (``NicSpec.type``: a plain ``ethernet`` NIC has no RDMA engine,
  an InfiniBand port does not speak Ethernet). Otherwise the segment's RDMA never happens on
  that pool: its storage or all-reduce runs over TCP, and the rendered netplan configures the
  ports as what they can do (bonded TCP). The fix is either side: the NICs or the segment.
- **Interface MTU.** An Ethernet segment's MTU is its interfaces' (bond, VLAN and ports
  alike). An InfiniBand segment's MTU is the IB link MTU (256 to 4096, set by the subnet
  manager); IPoIB in datagram mode carries 4 bytes less (its encapsulation header), so a
  4096 fabric shows ``mtu 4092`` on ``ib0``. Above 4096 only IPoIB's connected mode carries
  it (up to 65520), at the cost of the NIC's stateless offloads.
- **MTU along a path.** ``node.checks.mtu`` (what ``aiplat node check`` expects on the RDMA
  NICs' interfaces) that differs from what the segment gives them: one of the two is wrong,
  and the check fails on every correctly configured node or passes a wrong one.
- **The pod network** (``network.cni``) rides one segment, the one the nodes' InternalIPs
  are on (``pod_network``): the pods' MTU is that segment's less the overlay's header
  (IPv4: VXLAN and Geneve without options 50 bytes, outer IP 20 + UDP 8 + VXLAN/Geneve 8 +
  inner Ethernet 14, as Cilium's ``pkg/mtu`` counts it; IP-in-IP 20, Calico's MTU guide;
  native routing none). Native routing needs the underlay to deliver pod addresses: every
  node on one subnet (Cilium's autoDirectNodeRoutes, Calico's BGP mesh) or BGP peering with
  the leaves, which the spec does not describe; so it is chosen only where the segment's
  subnet holds every node (and every pool has a NIC on it), else VXLAN. Findings, only for a
  spec that has a ``cni`` section: an explicit pod MTU above what the underlay carries, a
  pool without a NIC on the pod segment, native routing the subnet cannot give, a pod CIDR
  that overlaps a segment.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

from aiplat.findings import Finding
from aiplat.spec.models import (
    NicType,
    Platform,
    PodRouting,
    PoolSpec,
    SegmentPurpose,
    SegmentSpec,
)

IB_LINK_MTU_MAX = 4096  # InfiniBand's largest link MTU
IPOIB_HEADER = 4  # IPoIB datagram mode: the interface MTU is the IB MTU less this
IPOIB_CONNECTED_MAX = 65520
# Bytes an overlay adds to each pod packet on an IPv4 underlay (see the module docstring).
OVERLAY_HEADER: dict[PodRouting, int] = {"native": 0, "vxlan": 50, "geneve": 50, "ipip": 20}
RESERVED_ADDRESSES = 3  # network, broadcast and the gateway: not a node's


def segment_for(platform: Platform, purpose: SegmentPurpose) -> SegmentSpec | None:
    """The segment a pool's NICs of ``purpose`` are on: the spec's first of that purpose."""
    return next((s for s in platform.network.segments if s.purpose is purpose), None)


def rdma_capable(segment: SegmentSpec, nic: NicType) -> bool:
    """A NIC of this type can carry the segment's RDMA transport."""
    return segment.rdma != "none" and nic.value == segment.rdma


def ipoib_datagram(segment: SegmentSpec) -> bool:
    """An InfiniBand segment whose MTU IPoIB carries in datagram mode."""
    return segment.mtu <= IB_LINK_MTU_MAX


def interface_mtu(segment: SegmentSpec, nic: NicType) -> int:
    """The MTU a node's interface on ``segment`` has (``ip link``), for a NIC of this type."""
    if rdma_capable(segment, nic) and segment.rdma == "infiniband":
        return segment.mtu - IPOIB_HEADER if ipoib_datagram(segment) \
            else min(segment.mtu, IPOIB_CONNECTED_MAX)
    return segment.mtu


def rail_subnets(segment: SegmentSpec, rails: int) -> list[tuple[IPv4Network, IPv4Network]]:
    """Each rail's (hosts, pods) halves of its own subnet, cut from the segment's CIDR: rail
    *i* is one L2 domain (its leaf), so its hosts and the pods' secondary interfaces on it
    share a subnet; hosts take the lower half, the pods' IPAM the upper. Empty without a
    CIDR, or when the CIDR is too small to give each rail at least a /30 for each half."""
    if segment.cidr is None or rails < 1:
        return []
    bits = max(rails - 1, 0).bit_length()
    if segment.cidr.prefixlen + bits + 1 > 30:
        return []
    out = []
    for sub in list(segment.cidr.subnets(prefixlen_diff=bits))[:rails]:
        hosts, pods = sub.subnets(prefixlen_diff=1)
        out.append((hosts, pods))
    return out


def network_findings(platform: Platform) -> list[Finding]:
    """The spec's contradictions along its network paths, each with the fix."""
    out: list[Finding] = []
    for pool in platform.pools:
        out += _rdma_nics(platform, pool)
        out += _checks_mtu(platform, pool)
    out += _rail_capacity(platform)
    if "cni" in platform.network.model_fields_set:
        out += _pod_network_findings(platform, pod_network(platform))
    return out


def _rdma_nics(platform: Platform, pool: PoolSpec) -> list[Finding]:
    out: list[Finding] = []
    for purpose in dict.fromkeys(n.segment for n in pool.node.nics):
        seg = segment_for(platform, purpose)
        if seg is None or seg.rdma == "none":
            continue
        wrong = [(i, n) for i, n in enumerate(pool.node.nics)
                 if n.segment is purpose and not rdma_capable(seg, n.type)]
        if not wrong:
            continue
        count = sum(n.count for _, n in wrong)
        types = ", ".join(sorted({n.type.value for _, n in wrong}))
        where = ", ".join(f"pools[{pool.name}].node.nics[{i}].type" for i, _ in wrong)
        transport = "RoCE" if seg.rdma == "roce" else "InfiniBand"
        out.append(Finding(
            severity="warning", subject=f"pool {pool.name}",
            message=f"segment {seg.name} asks for {transport}, but the pool's {count} "
                    f"{purpose.value} NIC(s) are {types}, which cannot carry it: "
                    f"{purpose.value} traffic runs over TCP (the rendered netplan "
                    "configures them so)",
            fix=f"fit {transport} NICs ({where}: {seg.rdma}), or set rdma: none on "
                f"segment {seg.name}"))
    return out


def hpc_rails(platform: Platform) -> int:
    """Rails of the hpc segment: the most hpc ports a node of any pool has."""
    return max((sum(n.count for n in p.node.nics if n.segment is SegmentPurpose.HPC)
                for p in platform.pools), default=0)


def _rail_capacity(platform: Platform) -> list[Finding]:
    """Each rail's halves of the hpc CIDR against the nodes and GPUs on it."""
    seg = segment_for(platform, SegmentPurpose.HPC)
    rails = hpc_rails(platform)
    if seg is None or seg.cidr is None or not rails:
        return []
    on = [p for p in platform.pools if any(n.segment is SegmentPurpose.HPC
                                           for n in p.node.nics)]
    nodes = sum(p.nodes for p in on)
    gpus = sum(p.nodes * (p.node.gpu.count if p.node.gpu else 1) for p in on)
    halves = rail_subnets(seg, rails)
    hosts = halves[0][0].num_addresses - 2 if halves else 0
    pods = halves[0][1].num_addresses - 2 if halves else 0
    if hosts >= nodes and pods >= gpus:
        return []
    return [Finding(
        severity="warning", subject=f"segment {seg.name}",
        message=f"{seg.cidr} cut into {rails} rail subnets leaves {max(hosts, 0)} host and "
                f"{max(pods, 0)} pod addresses per rail, for {nodes} nodes and up to {gpus} "
                "pods (one per GPU) on each rail",
        fix=f"give segment {seg.name} a larger cidr (each rail takes 1/{rails} of it, half "
            "for hosts, half for pods)")]


def _checks_mtu(platform: Platform, pool: PoolSpec) -> list[Finding]:
    """``node.checks.mtu`` against the RDMA NICs' interfaces (what ``node check`` reads)."""
    want = pool.node.checks.mtu
    if want is None:
        return []
    got: dict[int, str] = {}
    for nic in pool.node.nics:
        seg = segment_for(platform, nic.segment)
        if seg is not None and nic.type in (NicType.ROCE, NicType.INFINIBAND):
            got.setdefault(interface_mtu(seg, nic.type), seg.name)
    wrong = {mtu: seg for mtu, seg in got.items() if mtu != want}
    if not wrong:
        return []
    says = ", ".join(f"{seg} gives {mtu}" for mtu, seg in sorted(wrong.items()))
    return [Finding(
        severity="warning", subject=f"pool {pool.name}",
        message=f"node.checks.mtu expects {want} on the RDMA NICs' interfaces, but {says}: "
                "`aiplat node check` would fail every node configured as planned",
        fix="remove node.checks.mtu (it follows the segments), or set the segment's mtu to "
            "what the fabric carries")]


@dataclass(frozen=True)
class PodNetwork:
    """What the pods' traffic rides and how."""

    purpose: SegmentPurpose
    segment: SegmentSpec | None  # None: the spec has no segment of that purpose
    routing: PodRouting
    mtu: int | None  # the pods' MTU: the spec's, or the segment's less the header
    without: list[str]  # pools with no NIC on the segment
    native_possible: bool
    reason: str  # why this routing

    @property
    def header(self) -> int:
        return OVERLAY_HEADER[self.routing]

    @property
    def allowed_mtu(self) -> int | None:
        """The largest pod MTU the underlay carries under this routing."""
        return self.segment.mtu - self.header if self.segment else None


def pod_network(platform: Platform) -> PodNetwork:
    cni = platform.network.cni
    on = {p.name: {n.segment for n in p.node.nics} for p in platform.pools}
    purpose = cni.segment or (
        SegmentPurpose.SERVICE if on and all(SegmentPurpose.SERVICE in s for s in on.values())
        else SegmentPurpose.MANAGEMENT)
    seg = segment_for(platform, purpose)
    without = [name for name, segs in on.items() if purpose not in segs]
    nodes = sum(p.nodes for p in platform.pools)
    fits = seg is not None and seg.cidr is not None \
        and nodes <= seg.cidr.num_addresses - RESERVED_ADDRESSES
    native = fits and not without
    if seg is None:
        why = f"the spec has no {purpose.value} segment"
    elif seg.cidr is None:
        why = f"segment {seg.name} has no cidr: one subnet for every node is not known"
    elif not fits:
        why = f"{seg.cidr} cannot hold the {nodes} nodes"
    elif without:
        why = f"pool(s) {', '.join(without)} have no NIC on {seg.name}"
    else:
        why = f"every node ({nodes}) is on {seg.cidr}: pod routes go node to node"
    routing: PodRouting = cni.routing or ("native" if native else "vxlan")
    allowed = seg.mtu - OVERLAY_HEADER[routing] if seg else None
    return PodNetwork(purpose=purpose, segment=seg, routing=routing,
                      mtu=cni.mtu if cni.mtu is not None else allowed, without=without,
                      native_possible=native, reason=why)


def _pod_network_findings(platform: Platform, pn: PodNetwork) -> list[Finding]:
    cni = platform.network.cni
    subject = "network.cni"
    seg = pn.segment
    if seg is None:
        return [Finding(severity="error", subject=subject,
                        message=f"the pod network rides the {pn.purpose.value} segment, but "
                                "the spec has none",
                        fix=f"add a {pn.purpose.value} segment, or set network.cni.segment to "
                            "a purpose the spec has")]
    out: list[Finding] = []
    if pn.without:
        out.append(Finding(
            severity="error", subject=subject,
            message=f"pool(s) {', '.join(pn.without)} have no NIC on segment {seg.name}, "
                    "the pod network's underlay: their pods cannot reach the others",
            fix=f"give them a {pn.purpose.value} NIC, or set network.cni.segment to a "
                "purpose every pool has"))
    allowed = pn.allowed_mtu
    if cni.mtu is not None and allowed is not None and cni.mtu > allowed:
        over = f" + {pn.routing}'s {pn.header}-byte header" if pn.header else ""
        out.append(Finding(
            severity="error", subject=subject,
            message=f"pod MTU {cni.mtu}{over} exceeds segment {seg.name}'s MTU {seg.mtu}: "
                    "full-size pod packets are dropped or fragmented on the way",
            fix=f"set network.cni.mtu to at most {allowed} (or leave it unset), or raise "
                f"{seg.name}'s MTU on every host and switch"))
    if cni.routing == "native" and not pn.native_possible:
        out.append(Finding(
            severity="warning", subject=subject,
            message=f"native routing asked, but {pn.reason}: the underlay must route the "
                    f"pod CIDR {cni.pod_cidr} (BGP to the leaves) or pods cannot reach "
                    "each other across nodes",
            fix="peer the nodes with the leaf switches over BGP, or use an overlay "
                "(routing: vxlan)"))
    for s in platform.network.segments:
        if s.cidr is not None and s.cidr.overlaps(cni.pod_cidr):
            out.append(Finding(
                severity="error", subject=subject,
                message=f"pod CIDR {cni.pod_cidr} overlaps segment {s.name} ({s.cidr}): "
                        "nodes would route those hosts' addresses into the pod network",
                fix="choose network.cni.podCidr apart from every segment"))
    return out
