"""Network planning: segments, MTU, bonding, VLANs, QoS classes and RDMA/RoCE/InfiniBand
recommendations per load profile, each with its reason (pure; part of the Plan).

:func:`plan_network` reads the spec's network section, the pools' NICs and the sized
workloads' load profile (a workload that holds GPUs on more than one node needs an
all-reduce fabric; inference needs the service path; storage classes need a storage path);
``report.network_doc`` renders it.

Rules and where they come from:

- Jumbo frames (9000) on storage and RoCE segments: fewer packets per byte; RoCE carries an
  RDMA MTU of up to 4096 bytes plus headers, so its Ethernet MTU must be at least 4200.
  Management stays at 1500 (out-of-band devices and PXE rarely do jumbo, and nothing there
  needs it).
- RoCE needs a lossless (PFC on the RoCE priority) or ECN-managed (DCQCN) fabric: RDMA NICs
  recover from loss by go-back-N, so a little loss collapses throughput. The common mapping
  (NVIDIA's RoCE configuration guides) is RoCE on DSCP 26 / priority 3 with PFC and ECN, and
  congestion notification packets (CNP) on DSCP 48 / priority 6.
- Large all-reduce across nodes wants one RDMA NIC per GPU, rail-aligned (GPU *i* of every
  node on leaf/rail *i*), on a non-blocking fabric; the GPUs' NICs are not bonded (NCCL
  drives each rail itself).
- Management and service ports: an LACP (802.3ad) bond across two switches (MLAG), hashing
  on layer3+4, for redundancy; storage over TCP likewise, storage over RDMA uses multipath
  instead of a bond.
- Segments that share physical ports are kept apart by distinct VLAN ids; subnets must not
  overlap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from aiplat.findings import Finding, Severity  # a recommendation weighs as a finding would
from aiplat.plan.findings import PlanModel
from aiplat.spec.models import Platform, PoolSpec, SegmentPurpose, SegmentSpec, WorkloadKind

if TYPE_CHECKING:
    from aiplat.plan.models import WorkloadPlan

Topic = Literal["segments", "mtu", "rdma", "bonding", "vlan", "qos", "rate"]


class Recommendation(PlanModel):
    topic: Topic
    subject: str
    severity: Severity
    advice: str
    reason: str


class QosClass(PlanModel):
    segment: str
    traffic: str
    dscp: str
    priority: str
    lossless: bool
    note: str


class LoadProfile(PlanModel):
    multi_node_training: list[str]
    inference: list[str]
    storage_classes: int


class NetworkAdvice(PlanModel):
    profile: LoadProfile
    segments: list[SegmentSpec]
    recommendations: list[Recommendation]
    qos: list[QosClass]

    def findings(self) -> list[Finding]:
        """The recommendations that are warnings or errors, as findings (source 'network'):
        the advice is the fix, the reason says what is wrong. They count as warnings: a
        plan's error means the spec cannot be built as written (exit 1), and a design fault
        of the network (no management segment) still builds; the network section keeps the
        advice's own weight."""
        return [Finding(severity="warning", source="network", message=r.reason, fix=r.advice,
                        subject=f"{'pool' if r.topic == 'rate' else 'segment'} {r.subject}")
                for r in self.recommendations if r.severity != "info"]


def load_profile(platform: Platform, workloads: Sequence[WorkloadPlan]) -> LoadProfile:
    """Which workloads span nodes (all-reduce across the fabric) and which serve, as sized."""
    trains = {WorkloadKind.PRETRAIN.value, WorkloadKind.FINETUNE.value, WorkloadKind.LORA.value}
    return LoadProfile(
        multi_node_training=[w.name for w in workloads if w.kind in trains and w.multi_node],
        inference=[w.name for w in workloads if w.kind not in trains],
        storage_classes=len(platform.storage.classes))


def plan_network(platform: Platform, workloads: Sequence[WorkloadPlan]) -> NetworkAdvice:
    """Recommendations for the spec's network and the sized workloads, each with its reason."""
    prof = load_profile(platform, workloads)
    segs = platform.network.segments
    recs: list[Recommendation] = []

    def add(topic: Topic, subject: str, severity: Severity, advice: str, reason: str, /) -> None:
        recs.append(Recommendation(topic=topic, subject=subject, severity=severity,
                                   advice=advice, reason=reason))

    _segments_for_load(segs, prof, add)
    for s in segs:
        _segment_rules(s, prof, add)
    _vlans_and_subnets(segs, add)
    for pool in platform.pools:
        _nic_rules(pool, prof, add)
    return NetworkAdvice(profile=prof, segments=list(segs), recommendations=recs,
                         qos=[_qos(s) for s in segs])


def _segments_for_load(segs: Sequence[SegmentSpec], prof: LoadProfile, add: _Add) -> None:
    by = {p: [s for s in segs if s.purpose is p] for p in SegmentPurpose}
    if not by[SegmentPurpose.MANAGEMENT]:
        add("segments", "network", "error", "add a management segment",
            "node provisioning, BMC and monitoring need a path that stays up when the data "
            "segments are saturated or misconfigured")
    if prof.multi_node_training and not by[SegmentPurpose.HPC]:
        add("segments", "network", "warning", "add an hpc segment for the GPUs' all-reduce",
            f"{', '.join(prof.multi_node_training)} span nodes; gradient all-reduce on a "
            "shared segment competes with storage and service traffic")
    if prof.storage_classes and not by[SegmentPurpose.STORAGE]:
        add("segments", "network", "warning", "add a storage segment",
            "checkpoints and dataset reads are bursts of many GB; on the service path they "
            "slow inference and model pulls")
    if prof.inference and not by[SegmentPurpose.SERVICE]:
        add("segments", "network", "info", "add a service segment for inference traffic",
            f"{', '.join(prof.inference)} answer clients; keep that path apart from "
            "east-west data traffic")


def _vlans_and_subnets(segs: Sequence[SegmentSpec], add: _Add) -> None:
    seen_vlan: dict[int, str] = {}
    for s in segs:
        if s.vlan is not None:
            if s.vlan in seen_vlan:
                add("vlan", s.name, "error", f"give {s.name} its own VLAN id",
                    f"VLAN {s.vlan} is also used by {seen_vlan[s.vlan]}: the two segments "
                    "would be one broadcast domain")
            seen_vlan[s.vlan] = s.name
    for i, a in enumerate(segs):
        for b in segs[i + 1:]:
            if a.cidr and b.cidr and a.cidr.overlaps(b.cidr):
                add("vlan", f"{a.name}/{b.name}", "error", "use disjoint subnets",
                    f"{a.cidr} and {b.cidr} overlap: routes and source addresses become "
                    "ambiguous")


def _nic_rules(pool: PoolSpec, prof: LoadProfile, add: _Add) -> None:
    """A pool's NICs against the rails the training needs (their RDMA against the
    segments' is a finding: ``network_findings``)."""
    gpu = pool.node.gpu
    hpc_nics = sum(n.count for n in pool.node.nics if n.segment is SegmentPurpose.HPC)
    if (gpu and prof.multi_node_training and pool.nodes > 1
            and 0 < hpc_nics < gpu.count):
        add("rate", pool.name, "warning",
            f"give each GPU its own hpc NIC ({gpu.count} per node, not {hpc_nics})",
            "rail-aligned all-reduce sends each GPU's share over its own NIC; with "
            "fewer NICs GPUs share one and PCIe paths cross the CPU")


def _segment_rules(s: SegmentSpec, prof: LoadProfile, add: _Add) -> None:
    p = s.purpose
    if p is SegmentPurpose.MANAGEMENT and s.mtu != 1500:
        add("mtu", s.name, "info", "keep management at MTU 1500",
            "BMCs, PXE and out-of-band switches rarely do jumbo frames; nothing on the "
            "management path needs them")
    if p is SegmentPurpose.STORAGE and s.mtu < 9000:
        add("mtu", s.name, "warning", "use MTU 9000 on the storage segment (hosts and switches)",
            "storage moves large blocks: jumbo frames cut packets per GB about sixfold and "
            "the CPU time per byte with them")
    if s.rdma == "roce":
        if s.mtu < 4200:
            add("mtu", s.name, "error", "raise the MTU to at least 4200 (9000 usual)",
                "RoCE carries an RDMA MTU of up to 4096 bytes plus headers; a smaller "
                "Ethernet MTU forces a smaller RDMA MTU or drops")
        add("rdma", s.name, "warning",
            "make the fabric lossless (PFC on priority 3) or ECN-managed (DCQCN), on every "
            "switch hop and NIC",
            "RoCE recovers from loss with go-back-N: a fraction of a percent of loss collapses "
            "RDMA throughput; PFC pauses instead of dropping, ECN slows senders first")
    if s.rdma == "infiniband":
        add("rdma", s.name, "info",
            "rail-aligned InfiniBand: GPU i of every node on rail/leaf i, non-blocking fat "
            "tree, redundant subnet managers",
            "large all-reduce (NCCL ring/tree) keeps each rail's traffic on one leaf switch; "
            "a blocking fabric caps the slowest rail and with it every step")
    if p is SegmentPurpose.HPC and s.rdma == "none" and prof.multi_node_training:
        add("rdma", s.name, "warning", "use RDMA (InfiniBand, or RoCE on a lossless fabric) "
            "for the hpc segment",
            f"{', '.join(prof.multi_node_training)} all-reduce across nodes; over TCP the CPU "
            "copies every gradient byte and latency grows with each hop")
    if p in (SegmentPurpose.MANAGEMENT, SegmentPurpose.SERVICE) or (
            p is SegmentPurpose.STORAGE and s.rdma == "none"):
        add("bonding", s.name, "info",
            "LACP (802.3ad) bond of two ports across two switches (MLAG), "
            "xmit_hash_policy layer3+4",
            "one failed port, cable or switch must not cut the node off; layer3+4 hashing "
            "spreads flows over both links")
    elif s.rdma != "none":
        add("bonding", s.name, "info",
            "no bond on RDMA ports: one NIC per GPU (rails) or RDMA multipath for storage",
            "NCCL and NVMe-oF/GPUDirect Storage spread traffic over the NICs themselves; "
            "a bond hides them behind one device")


class _Add(Protocol):
    """The shape of ``add`` in :func:`plan_network`."""

    def __call__(self, topic: Topic, subject: str, severity: Severity, advice: str,
                 reason: str, /) -> None: ...


def _qos(s: SegmentSpec) -> QosClass:
    p = s.purpose
    if s.rdma == "roce":
        return QosClass(segment=s.name, traffic=f"RoCE ({p.value})", dscp="26 (CNP 48)",
                        priority="3 (CNP 6)", lossless=True,
                        note="PFC on priority 3, ECN marking on its queue")
    if s.rdma == "infiniband":
        return QosClass(segment=s.name, traffic="InfiniBand", dscp="-", priority="SL 0",
                        lossless=True, note="credit-based flow control (lossless by design)")
    table = {
        SegmentPurpose.MANAGEMENT: ("management", "16 (CS2)", "2", "small guaranteed share"),
        SegmentPurpose.STORAGE: ("storage over TCP", "18 (AF21)", "4", "weighted share, lossy"),
        SegmentPurpose.SERVICE: ("service", "0 (BE)", "0", "best effort"),
        SegmentPurpose.HPC: ("hpc over TCP", "26 (AF31)", "3", "weighted share, lossy"),
    }
    traffic, dscp, prio, note = table[p]
    return QosClass(segment=s.name, traffic=traffic, dscp=dscp, priority=prio, lossless=False,
                    note=note)
