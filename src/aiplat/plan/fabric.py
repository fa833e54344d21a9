"""The site's physical fabrics sized from the plan: the GPUs' compute fabric (``sizing.fabric``
on the pools' hpc NICs and ``network.fabric.compute``), the storage fabric, in-band and
out-of-band management; their switches, rack units, racks and power, which the facility adds
(pure; ``Plan.fabric``).

Rules, each stated where an assumption stands in for a datasheet:

- Cabled nodes are every pool's nodes plus its spares (they are racked and cabled), save a
  rack-scale pool's spare trays, which wait on the shelf (``ResolvedPool.racked_nodes``). The
  compute fabric joins every pool with hpc NICs; its rails are the most hpc NICs a node has.
- Technology: the spec's, else the hpc NICs' type (InfiniBand above 400 Gb/s is XDR). Switch
  ports by technology: Quantum-2 QM97xx 64 x NDR 400G in 1U (NVIDIA's QM97xx manual), and the
  DGX SuperPOD B300 XDR tables' 144-port switch (72 down, 72 up); RoCE 64 (a 51.2 Tb/s
  Ethernet switch at 800G, e.g. SN5600).
- UFM: an InfiniBand fabric of more than one switch gets two appliances (active and
  standby: the subnet manager must survive one failure) unless the spec says otherwise; a
  one-switch fabric runs the switch's own subnet manager. An appliance is a server: one leaf
  port, the power and 2U of a management node.
- Storage ports: every cabled node's storage NICs (the storage system's own ports are not
  known to the spec: say so). In-band: each node's management NICs, and two per non-compute
  node (the LACP bond the network advice asks for). Out-of-band: one BMC port per node, one
  management port per switch and UFM appliance, two PDUs per rack.
- Racks: compute, storage and spine switches and UFM appliances go into network racks of the
  site's rack units less the same reserve a node rack keeps; in-band and out-of-band leaves
  sit in the units every rack keeps for them (``sizing.power.DEFAULT_RESERVED_RACK_UNITS``),
  so they add power but no rack.
- Power: switch power without optics is the spec's ``switchPowerW``, else an assumption
  (``ASSUMED_SWITCH_W``, said in the plan); switch-side optics at the 17 W a QM97xx cage
  supplies (NVIDIA's QM97xx manual). Node-side optics are part of the node's power.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from aiplat.plan.findings import Finding, PlanModel
from aiplat.plan.resolve import CPU_NODE_W, Resolved, ResolvedPool
from aiplat.sizing import fabric as sizing
from aiplat.sizing.power import DEFAULT_RESERVED_RACK_UNITS
from aiplat.spec.models import (
    ComputeFabricSpec,
    EthernetFabricSpec,
    FabricTechnology,
    SegmentPurpose,
)

SWITCH_PORTS = {"infiniband-ndr": 64, "infiniband-xdr": 144, "roce": 64}
"""Ports per switch at the NICs' rate when the spec gives none (see the module docstring)."""
ASSUMED_SWITCH_W = {"compute": 1_000.0, "storage": 1_000.0, "in-band": 600.0,
                    "out-of-band": 150.0}
"""Assumed maximum power of one switch without optics, W: an assumption, not a datasheet
figure (the plan says so and names ``switchPowerW``). 51.2 Tb/s-class compute and storage
switches, a 64-port 100G-class in-band switch, a 48 x 1G out-of-band switch."""
MANAGER_RACK_UNITS = 2
"""A UFM appliance is a server: the 2U the facility counts per management node."""
PDUS_PER_RACK = 2


class EthernetPlan(PlanModel):
    name: str
    sized: sizing.SimpleFabric
    power_w: float
    rack_units_in_network_racks: int


class ComputeFabricPlan(PlanModel):
    technology: FabricTechnology
    link_gbps: float
    pools: list[str]
    sized: sizing.ComputeFabric
    ufm_appliances: int
    switch_power_w: float
    optics_power_w: float
    power_w: float


class FabricPlan(PlanModel):
    compute: ComputeFabricPlan | None
    storage: EthernetPlan
    in_band: EthernetPlan
    out_of_band: EthernetPlan
    switches: int
    rack_units: int
    racks: int
    power_w: float
    assumptions: list[str]

    def summary(self) -> str:
        """One line: each fabric's switches, the racks and power they add."""
        parts = []
        c = self.compute
        if c is not None:
            f = c.sized
            tiers = ("1 switch" if f.tiers == 1 else
                     f"{f.leaves} leaf + {f.spines} spine" + (f" + {f.cores} core"
                                                             if f.cores else ""))
            ufm = f", {c.ufm_appliances} UFM" if c.ufm_appliances else ""
            parts.append(f"compute {c.technology} {tiers}{ufm} ({f.ports_spare} spare ports, "
                         f"{sum(g.cables for g in f.cables):,} cables, "
                         f"{f.transceivers:,} transceivers)")
        for e in (self.storage, self.in_band, self.out_of_band):
            if e.sized.switches:
                parts.append(f"{e.name} {e.sized.switches}")
        racks = f"{self.racks} network rack{'' if self.racks == 1 else 's'}"
        return (f"fabric: {', '.join(parts)}; {self.switches} switches, {racks}, "
                f"{self.power_w / 1000:.1f} kW")


def plan_fabric(resolved: Resolved, *, non_compute_nodes: int, other_racks: int,
                findings: list[Finding]) -> FabricPlan:
    """Size every fabric for the resolved pools; ``other_racks`` (nodes' and management
    racks) decides the PDUs on the out-of-band network."""
    spec = resolved.spec.network.fabric
    site = resolved.spec.site
    assumptions: list[str] = []
    cabled = {p.name: p.racked_nodes for p in resolved.pools}
    compute = _compute(resolved.pools, cabled, spec.compute, assumptions, findings)

    def ports(purpose: SegmentPurpose) -> int:
        return sum(cabled[p.name] * n.count for p in resolved.pools
                   for n in p.spec.node.nics if n.segment is purpose)

    storage = _ethernet("storage", ports(SegmentPurpose.STORAGE), spec.storage, assumptions,
                        in_network_racks=True)
    if storage.sized.switches:
        assumptions.append("storage fabric: the storage system's own ports are not in the "
                           "spec; its leaves carry the nodes' storage NICs only")
    in_band = _ethernet("in-band", ports(SegmentPurpose.MANAGEMENT) + 2 * non_compute_nodes,
                        spec.in_band, assumptions, in_network_racks=False)
    managed = ((compute.sized.switches + compute.ufm_appliances) if compute else 0) \
        + storage.sized.switches + in_band.sized.switches
    ru = (_compute_units(compute, spec.compute.switch_rack_units)
          + storage.rack_units_in_network_racks + in_band.rack_units_in_network_racks)
    usable = max(site.rack_units - DEFAULT_RESERVED_RACK_UNITS, 1)
    bmc = sum(cabled.values()) + non_compute_nodes
    out_of_band = _ethernet(
        "out-of-band", bmc + managed + PDUS_PER_RACK * (other_racks + math.ceil(ru / usable)),
        spec.out_of_band, assumptions, in_network_racks=False)
    ru += out_of_band.rack_units_in_network_racks
    racks = math.ceil(ru / usable)
    switches = ((compute.sized.switches if compute else 0) + storage.sized.switches
                + in_band.sized.switches + out_of_band.sized.switches)
    power = ((compute.power_w if compute else 0.0) + storage.power_w + in_band.power_w
             + out_of_band.power_w)
    assumed = [a for a in assumptions if a.startswith("assumed")]
    if assumed:
        findings.append(Finding(
            severity="info", subject="fabric",
            message=f"power uses assumed switch figures ({'; '.join(assumed)})",
            fix="set network.fabric.<compute|storage|inBand|outOfBand>.switchPowerW from the "
                "switches' datasheets"))
    return FabricPlan(compute=compute, storage=storage, in_band=in_band,
                      out_of_band=out_of_band, switches=switches, rack_units=ru, racks=racks,
                      power_w=power, assumptions=assumptions)


def _compute_units(compute: ComputeFabricPlan | None, switch_units: int) -> int:
    if compute is None:
        return 0
    return compute.sized.switches * switch_units + compute.ufm_appliances * MANAGER_RACK_UNITS


def _technology(pools: Sequence[ResolvedPool]) -> tuple[FabricTechnology, float]:
    nics = [n for p in pools for n in p.spec.node.nics if n.segment is SegmentPurpose.HPC]
    rate = max(n.rate_gbps for n in nics)
    if any(n.type.value == "infiniband" for n in nics):
        return ("infiniband-xdr" if rate > 400 else "infiniband-ndr"), rate
    return "roce", rate


def _full(fabric: sizing.ComputeFabric, ports: int) -> bool:
    """No room for ``ports`` more on the leaves' node side."""
    return fabric.leaves * fabric.leaf_down - fabric.nodes * fabric.rails < ports


def _compute(pools: Sequence[ResolvedPool], cabled: dict[str, int], spec: ComputeFabricSpec,
             assumptions: list[str], findings: list[Finding]) -> ComputeFabricPlan | None:
    on = [p for p in pools if p.hpc_nics and cabled[p.name]]
    if not on:
        return None
    derived, rate = _technology(on)
    tech = spec.technology or derived
    rails = max(sum(n.count for n in p.spec.node.nics if n.segment is SegmentPurpose.HPC)
                for p in on)
    nodes = sum(cabled[p.name] for p in on)
    radix = spec.switch_ports or SWITCH_PORTS[tech]
    infiniband = tech.startswith("infiniband")

    def size(ufm: int) -> sizing.ComputeFabric:
        return sizing.compute_fabric(
            nodes=nodes, rails=rails, radix=radix, oversubscription=spec.oversubscription,
            su_nodes=spec.scalable_unit_nodes, planes=spec.planes, manager_ports=ufm)

    ufm = spec.ufm_appliances
    if ufm is None:
        ufm = 0
        if infiniband and size(0).switches > 1:
            ufm = 2
    unplaced = ufm if _full(size(0), ufm) else 0
    sized = size(ufm - unplaced)
    if unplaced:
        findings.append(Finding(
            severity="warning", subject="fabric compute",
            message=f"the {ufm} UFM appliances find no free leaf port: every scalable unit's "
                    "leaf ports are taken by nodes",
            fix="leave one node slot of an SU empty, as NVIDIA's DGX SuperPOD does for UFM, "
                "or set network.fabric.compute.scalableUnitNodes / ufmAppliances"))
    switch_w = spec.switch_power_w
    if switch_w is None:
        switch_w = ASSUMED_SWITCH_W["compute"]
        assumptions.append(f"assumed {switch_w:,.0f} W per compute switch")
    # switch-side cages: a node-leaf cable has one switch end, a switch-switch cable two
    cages = sum(math.ceil(g.cables * (1 if g.between == "node-leaf" else 2)
                          / sizing.TWIN_PORT_LINKS) for g in sized.cables)
    optics_w = cages * sizing.SWITCH_TRANSCEIVER_W
    power = sized.switches * switch_w + optics_w + ufm * CPU_NODE_W
    return ComputeFabricPlan(
        technology=tech, link_gbps=rate, pools=[p.name for p in on], sized=sized,
        ufm_appliances=ufm, switch_power_w=switch_w, optics_power_w=optics_w, power_w=power)


def _ethernet(name: str, ports: int, spec: EthernetFabricSpec, assumptions: list[str], *,
              in_network_racks: bool) -> EthernetPlan:
    sized = sizing.simple_fabric(name=name, ports=ports, radix=spec.switch_ports,
                                 oversubscription=spec.oversubscription)
    switch_w = spec.switch_power_w
    if switch_w is None and sized.switches:
        switch_w = ASSUMED_SWITCH_W[name]
        assumptions.append(f"assumed {switch_w:,.0f} W per {name} switch")
    units = (sized.switches if in_network_racks else sized.spines) * spec.switch_rack_units
    return EthernetPlan(name=name, sized=sized, power_w=sized.switches * (switch_w or 0.0),
                        rack_units_in_network_racks=units)
