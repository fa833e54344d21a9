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
"""

from __future__ import annotations

from aiplat.findings import Finding
from aiplat.spec.models import NicType, Platform, PoolSpec, SegmentPurpose, SegmentSpec

IB_LINK_MTU_MAX = 4096  # InfiniBand's largest link MTU
IPOIB_HEADER = 4  # IPoIB datagram mode: the interface MTU is the IB MTU less this
IPOIB_CONNECTED_MAX = 65520


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


def network_findings(platform: Platform) -> list[Finding]:
    """The spec's contradictions along its network paths, each with the fix."""
    out: list[Finding] = []
    for pool in platform.pools:
        out += _rdma_nics(platform, pool)
        out += _checks_mtu(platform, pool)
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
