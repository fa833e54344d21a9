"""Placement evaluation (pure): where each GPU sits relative to NICs, NUMA nodes and CPUs,
and what kubelet and NCCL settings follow from it.

Path types use NVIDIA's legend, best first: PIX (at most one PCIe switch), PXB (several
bridges, no host bridge), PHB (through a host bridge), NODE (between host bridges of one NUMA
node), SYS (across the NUMA interconnect). From sysfs they are derived from the bridge chains
(a switch is an upstream port with its downstream ports, so two functions below one switch
have at most one bridge each below their lowest common bridge); a recorded or live
``nvidia-smi topo -m`` overrides the derived value where it names both devices.

The kubelet settings are ``plan/kubelet.py``'s one decision on this node's layout
(``node_layout``), the same the rendered ``kubelet-config.yaml`` of a pool reads.

Only NICs with an RDMA device (``/sys/class/infiniband``) are candidates for GPU traffic:
those are the ones NCCL and GPUDirect RDMA use; a management NIC is not a GPU's NIC.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from aiplat.catalog import load_catalog
from aiplat.errors import InputError
from aiplat.findings import Finding
from aiplat.node.inventory import Inventory, PciDevice
from aiplat.node.pciaddr import format_cpulist, parse_cpulist
from aiplat.plan.kubelet import KubeletAdvice, NodeLayout, NumaLayout, advise, pool_layout
from aiplat.plan.resolve import resolve_pool
from aiplat.spec.models import Platform
from aiplat.text import shown

PATH_ORDER = ["PIX", "PXB", "PHB", "NODE", "SYS"]
LABEL_DOMAIN = "node.aiplat.io"


class PlacementModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NicPath(PlacementModel):
    address: str
    name: str
    path: str
    numa_node: int | None


class GpuPlacement(PlacementModel):
    index: int
    address: str
    numa_node: int | None
    local_cpulist: str | None
    nearest_nics: list[NicPath]
    best_path: str | None
    cpuset: str | None = None


class Recommendation(PlacementModel):
    topology_manager_policy: str
    topology_manager_scope: str
    topology_manager_options: dict[str, str] = {}
    cpu_manager_policy: str
    cpu_manager_policy_options: dict[str, str] = {}
    reserved_system_cpus: str | None
    nccl_ib_hca: str | None
    gpu_hca: dict[int, str] = {}
    reasons: list[str] = []


class Placement(PlacementModel):
    gpus: list[GpuPlacement]
    findings: list[Finding]
    recommendation: Recommendation
    labels: dict[str, str]


def path_between(a: PciDevice, b: PciDevice, numa_nodes: int) -> str:
    """NVIDIA path type between two PCI functions from their sysfs bridge chains."""
    if a.host_bridge and a.host_bridge == b.host_bridge:
        common = [x for x, y in zip(a.parents, b.parents, strict=False) if x == y]
        if not common:
            return "PHB"
        below_a = len(a.parents) - len(common)
        below_b = len(b.parents) - len(common)
        return "PIX" if max(below_a, below_b) <= 1 else "PXB"
    if a.numa_node == b.numa_node and (a.numa_node is not None or numa_nodes <= 1):
        return "NODE"
    return "SYS"


def _rdma_nics(inv: Inventory) -> dict[str, str]:
    """PCI address -> RDMA device name (mlx5_0) for NICs with an RDMA device."""
    out: dict[str, str] = {}
    for port in inv.ib_ports:
        if port.pci_address:
            out.setdefault(port.pci_address, port.device)
    return out


def _topo_paths(inv: Inventory, gpu_addr: list[str]) -> dict[tuple[str, str], str]:
    """(gpu address, nic address) -> path type from a recorded/live topo matrix."""
    topo = inv.topology
    if topo is None:
        return {}
    by_index = {d.index: d.address for d in inv.gpu_details if d.index is not None}
    rdma_by_name = {p.device: p.pci_address for p in inv.ib_ports if p.pci_address}
    out = {}
    for name, row in topo.cells.items():
        if not name.startswith("GPU"):
            continue
        i = int(name[3:])
        addr = by_index.get(i) or (gpu_addr[i] if i < len(gpu_addr) else None)
        if addr is None:
            continue
        for other, cell in row.items():
            nic_name = topo.nic_names.get(other, other)
            nic_addr = rdma_by_name.get(nic_name)
            if nic_addr and cell in PATH_ORDER:
                out[(addr, nic_addr)] = cell
    return out


def evaluate_placement(inv: Inventory) -> Placement:
    gpus = sorted(inv.gpus, key=lambda d: d.address)
    numa_count = len(inv.host.numa)
    rdma = _rdma_nics(inv)
    pci = inv.pci_by_address
    nics = [pci[a] for a in sorted(rdma) if a in pci]
    topo_paths = _topo_paths(inv, [g.address for g in gpus])
    findings: list[Finding] = []
    placements: list[GpuPlacement] = []

    for i, gpu in enumerate(gpus):
        paths = []
        for nic in nics:
            p = topo_paths.get((gpu.address, nic.address)) or path_between(gpu, nic, numa_count)
            paths.append(NicPath(address=nic.address, name=rdma[nic.address], path=p,
                                 numa_node=nic.numa_node))
        best = min((PATH_ORDER.index(p.path) for p in paths), default=None)
        nearest = [p for p in paths if best is not None and PATH_ORDER.index(p.path) == best]
        best_path = PATH_ORDER[best] if best is not None else None
        subject = f"GPU{i} {gpu.address}"
        if nics and best_path not in ("PIX", "PXB"):
            findings.append(Finding(
                severity="warning", subject=subject, source="no-local-nic",
                message=f"no RDMA NIC under the same PCIe switch (nearest: "
                        f"{', '.join(n.name for n in nearest)} via {best_path})",
                fix="GPUDirect RDMA will cross the host bridge; move a NIC into this GPU's "
                    "switch or accept lower inter-node bandwidth for jobs using this GPU"))
        if nearest and gpu.numa_node is not None and all(
                n.numa_node is not None and n.numa_node != gpu.numa_node for n in nearest):
            findings.append(Finding(
                severity="warning", subject=subject, source="numa-mismatch",
                message=f"GPU on NUMA node {gpu.numa_node}, nearest NIC "
                        f"{nearest[0].name} on NUMA node {nearest[0].numa_node}",
                fix="traffic crosses the socket interconnect; re-slot the NIC or GPU, or pin "
                    "this GPU's jobs to a NIC on its own NUMA node"))
        down = sorted({p.device for p in inv.ib_ports if p.state != "ACTIVE"}
                      & {n.name for n in nearest})
        if down:
            findings.append(Finding(
                severity="warning", subject=subject, source="nearest-nic-down",
                message=f"the RDMA port next to this GPU ({', '.join(down)}) is not ACTIVE",
                fix="jobs on this GPU fall back to a remote NIC until the port is fixed "
                    "(`aiplat node check` names the port)"))
        findings += link_findings(gpu, f"GPU{i}")
        placements.append(GpuPlacement(index=i, address=gpu.address, numa_node=gpu.numa_node,
                                       local_cpulist=gpu.local_cpulist, nearest_nics=nearest,
                                       best_path=best_path))
    for nic in nics:
        findings += link_findings(nic, rdma[nic.address])
    if gpus and not nics:
        findings.append(Finding(
            severity="info", subject="node", source="no-rdma-nic",
            message="no NIC with an RDMA device: GPU-NIC locality not evaluated",
            fix="expected on single-node inference nodes; multi-node training needs RDMA NICs"))

    rec, cpusets = _recommend(inv, placements, findings)
    placements = [p.model_copy(update={"cpuset": cpusets.get(p.address)}) for p in placements]
    return Placement(gpus=placements, findings=findings, recommendation=rec,
                     labels=_labels(inv, placements, findings))


def link_findings(dev: PciDevice, name: str) -> list[Finding]:
    """Degraded PCIe links. Width below maximum is a fault (a bad riser, slot or card seating);
    a lower *speed* on a GPU is often power management at idle, so it only warns."""
    link = dev.link
    out: list[Finding] = []
    if link is None:
        return out
    subject = f"{name} {dev.address}"
    if link.width_degraded:
        out.append(Finding(
            severity="error", subject=subject, source="pcie-width-degraded",
            message=f"link trained at x{link.current_width}, capable of x{link.max_width}",
            fix="reseat the card/riser or check the slot; confirm with `lspci -vv -s "
                f"{dev.address}` (LnkSta vs LnkCap)"))
    if link.speed_degraded:
        idle_ok = dev.kind.value == "gpu"
        out.append(Finding(
            severity="warning" if idle_ok else "error", subject=subject,
            source="pcie-speed-degraded",
            message=f"link at {link.current_speed_gts:g} GT/s, capable of "
                    f"{link.max_speed_gts:g} GT/s" + (" (GPUs lower the speed when idle)"
                                                      if idle_ok else ""),
            fix="re-check under load; if it stays low, check BIOS PCIe generation settings "
                "and the slot"))
    return out


def node_layout(inv: Inventory, gpus: list[GpuPlacement], findings: list[Finding]) -> NodeLayout:
    """What the kubelet decision (``plan/kubelet.py``) reads of this node."""
    cores = inv.host.cpu.core_threads if inv.host.cpu else []
    pci = inv.pci_by_address
    nic_numa = [pci[a].numa_node for a in _rdma_nics(inv) if a in pci]
    return NodeLayout(
        numa=tuple(NumaLayout(id=n.id, cpus=tuple(parse_cpulist(n.cpulist)),
                              gpus=sum(1 for g in gpus if g.numa_node == n.id),
                              rdma_nics=nic_numa.count(n.id))
                   for n in inv.host.numa),
        cores=tuple(tuple(c) for c in cores if c), gpus=len(gpus),
        gpu_numa_unknown=any(g.numa_node is None for g in gpus),
        gpu_without_local_rdma=any(f.source == "numa-mismatch" for f in findings))


def recommendation(advice: KubeletAdvice,
                   gpus: Sequence[GpuPlacement] = ()) -> Recommendation:
    """The kubelet decision as ``node placement`` shows it, with the NCCL advice of ``gpus``."""
    gpu_hca = {g.index: g.nearest_nics[0].name for g in gpus if g.nearest_nics}
    hcas = list(dict.fromkeys(gpu_hca.values()))
    return Recommendation(
        topology_manager_policy=advice.topology_manager_policy,
        topology_manager_scope=advice.topology_manager_scope,
        topology_manager_options=dict(advice.topology_manager_options),
        cpu_manager_policy=advice.cpu_manager_policy,
        cpu_manager_policy_options=dict(advice.cpu_manager_options),
        reserved_system_cpus=advice.reserved_system_cpus,
        nccl_ib_hca=",".join(f"{h}:1" for h in hcas) if hcas else None,
        gpu_hca=gpu_hca, reasons=list(advice.reasons),
    )


def pool_placement(platform: Platform, pool: str) -> Placement:
    """``node placement``'s model of a pool's node type when no node is recorded
    (``plan.kubelet.pool_layout``; the rendered kubelet config reads the same): the kubelet
    advice only, no GPU paths, findings or labels, which need a node."""
    spec = next((p for p in platform.pools if p.name == pool), None)
    if spec is None:
        names = ", ".join(shown(p.name) for p in platform.pools) or "none"
        raise InputError(f"the spec has no pool {shown(repr(pool))}; its pools: {names} "
                         "(fix: --pool NAME)")
    layout = pool_layout(resolve_pool(spec, platform, load_catalog()))
    numa = layout.numa
    rec = recommendation(advise(layout))
    what = (f"model of pool {spec.name}'s node type {spec.node.node_type or '(none)'}, no node "
            f"recorded: {len(numa)} NUMA node(s) of {len(numa[0].cpus)} CPUs "
            f"({layout.threads_per_core} per core), GPUs per NUMA node "
            f"{[n.gpus for n in numa]}, RDMA NICs {[n.rdma_nics for n in numa]}; "
            "`node placement --root` on a node of the pool replaces it")
    rec = rec.model_copy(update={"reasons": [what, *rec.reasons]})
    return Placement(gpus=[], findings=[], recommendation=rec, labels={})


def _recommend(inv: Inventory, gpus: list[GpuPlacement],
               findings: list[Finding]) -> tuple[Recommendation, dict[str, str]]:
    advice = advise(node_layout(inv, gpus, findings))
    reserved = set(advice.reserved_cpus)
    cores = inv.host.cpu.core_threads if inv.host.cpu else []
    cpusets: dict[str, str] = {}
    for node in inv.host.numa:
        node_gpus = [g for g in gpus if g.numa_node == node.id]
        if not node_gpus:
            continue
        node_cpus = set(parse_cpulist(node.cpulist)) - reserved
        groups = [c for c in cores if c and c[0] in node_cpus] or [[c] for c in sorted(node_cpus)]
        share = len(groups) // len(node_gpus)
        for k, g in enumerate(node_gpus):
            chunk = groups[k * share:(k + 1) * share]
            cpusets[g.address] = format_cpulist([t for core in chunk for t in core])
    return recommendation(advice, gpus), cpusets


def _labels(inv: Inventory, gpus: list[GpuPlacement], findings: list[Finding]) -> dict[str, str]:
    d = LABEL_DOMAIN
    vendors = sorted({(inv.pci_by_address[g.address].vendor_name or "unknown").lower()
                      for g in gpus})
    worst = max((PATH_ORDER.index(g.best_path) for g in gpus if g.best_path), default=None)
    return {
        f"{d}/gpu-count": str(len(gpus)),
        f"{d}/gpu-vendor": ",".join(vendors) if vendors else "none",
        f"{d}/numa-nodes": str(len(inv.host.numa)),
        f"{d}/rdma": "true" if inv.ib_ports else "false",
        f"{d}/gpu-nic-path": PATH_ORDER[worst].lower() if worst is not None else "none",
        f"{d}/gpu-numa-aligned": "false" if any(f.source == "numa-mismatch" for f in findings)
        else "true",
        f"{d}/pcie-degraded": "true" if any(f.source == "pcie-width-degraded" for f in findings)
        else "false",
    }
