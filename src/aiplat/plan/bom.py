"""The bill of materials: what the plan buys, how many, and what it costs to buy and to run.

Quantities come from the sized plan (pools with their spares, non-compute nodes, racks, the
fabrics' switches, cables, transceivers and UFM appliances, shared storage capacity); prices
from the spec (``pools[].node.price``, ``site.prices``), since aiplat's catalog carries no
list prices: they vary by vendor, volume and month, and a figure that looks authoritative
but is not would be the "confident wrong answer" aiplat must not give.

A part without a price is a line with no unit price and no total, never a zero: the totals
are the sums of the priced lines and name the parts they leave out (:attr:`unpriced`).
Running costs per month are the energy at full load (facility power at
``site.electricityPricePerKWh``, always known) and, when ``site.prices.supportPerYear`` is
set, that share of the priced purchase per year, spread over 12 months.

Pure: a function of the spec and the plan's parts, no I/O.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aiplat.plan.fabric import FabricPlan
from aiplat.plan.findings import PlanModel
from aiplat.spec.models import Platform

Category = Literal["compute", "infrastructure", "network", "storage"]
SHARED_TIERS = ("file", "object", "block")
"""Storage tiers bought as a shared system; local NVMe comes with the nodes."""


class BomLine(PlanModel):
    item: str
    category: Category
    quantity: float
    unit: str = Field(description="what one of the quantity is: node, rack, switch, TB ...")
    unit_price: float | None = Field(description="in the currency; None: no price given")
    detail: str = ""

    @property
    def amount(self) -> str:
        """The quantity with its unit, e.g. '7 nodes', '1 switch', '700 TB'."""
        n = f"{self.quantity:,.0f}"
        if self.quantity == 1 or self.unit.isupper():
            return f"{n} {self.unit}"
        return f"{n} {self.unit}{'es' if self.unit.endswith(('s', 'ch')) else 's'}"

    @property
    def total(self) -> float | None:
        return None if self.unit_price is None else self.quantity * self.unit_price


class RunningCost(PlanModel):
    item: str
    per_month: float | None
    basis: str = Field(description="how it is computed, in words")


class BillOfMaterials(PlanModel):
    currency: str
    price_source: str = Field(description="site.prices.source: where the prices come from")
    lines: list[BomLine]
    running: list[RunningCost]

    @property
    def capex(self) -> float:
        """The sum of the priced lines (see :attr:`unpriced` for what it leaves out)."""
        return sum(t for line in self.lines if (t := line.total) is not None)

    @property
    def unpriced(self) -> list[str]:
        return [line.item for line in self.lines if line.unit_price is None]

    @property
    def opex_per_month(self) -> float:
        """The sum of the known running costs per month."""
        return sum(c.per_month for c in self.running if c.per_month is not None)

    def summary(self) -> str:
        """One line for the CLI: what the purchase and a month of running cost."""
        if self.lines and len(self.unpriced) == len(self.lines):
            capex = "no price given (set pools[].node.price and site.prices)"
        else:
            left = f" + {len(self.unpriced)} unpriced parts" if self.unpriced else ""
            capex = f"{self.capex:,.0f} {self.currency}{left}"
        source = f" ({self.price_source})" if self.price_source else ""
        known = ", ".join(f"{c.item} {c.per_month:,.0f}" for c in self.running
                          if c.per_month is not None)
        return (f"cost: purchase {capex}{source}; running {self.opex_per_month:,.0f} "
                f"{self.currency}/month ({known})")


class PoolCount(PlanModel):
    """What the bill needs of one sized pool (a PoolPlan's figures)."""

    name: str
    gpu_model: str | None
    nodes: int
    spare_nodes: int
    gpus_per_node: int


def bill_of_materials(platform: Platform, pools: list[PoolCount], *, non_compute_nodes: int,
                      racks: int, fabric: FabricPlan,
                      energy_per_month: float) -> BillOfMaterials:
    """The bill for a sized plan; ``racks`` counts every rack (compute, management, network)."""
    prices = platform.site.prices
    price_of = {p.name: p.node.price for p in platform.pools}
    lines: list[BomLine] = []
    for p in pools:
        bought = p.nodes + p.spare_nodes
        gpus = f"{p.gpus_per_node} × {p.gpu_model} per node, " if p.gpu_model else "CPU only, "
        lines.append(BomLine(item=f"GPU node, pool {p.name}" if p.gpu_model else
                             f"node, pool {p.name}", category="compute", quantity=bought,
                             unit="node", unit_price=price_of.get(p.name),
                             detail=f"{gpus}{p.nodes} + {p.spare_nodes} spare"))
    if non_compute_nodes:
        lines.append(BomLine(item="non-compute node", category="compute",
                             quantity=non_compute_nodes, unit="node",
                             unit_price=prices.cpu_node,
                             detail="control plane, login, gateways (see node roles)"))
    lines.append(BomLine(item="rack", category="infrastructure", quantity=racks, unit="rack",
                         unit_price=prices.rack, detail="compute, management and network"))
    lines += _network(fabric, platform)
    capacity = sum(c.capacity_tb for c in platform.storage.classes if c.tier in SHARED_TIERS)
    if capacity:
        lines.append(BomLine(item="shared storage", category="storage", quantity=capacity,
                             unit="TB", unit_price=prices.storage_per_tb,
                             detail=", ".join(c.name for c in platform.storage.classes
                                              if c.tier in SHARED_TIERS)))
    site = platform.site
    running = [RunningCost(item="energy at full load", per_month=energy_per_month,
                           basis=f"facility power (PUE {site.pue:g}) × 730 h × "
                                 f"{site.electricity_price_per_kwh:g} {site.currency}/kWh")]
    capex = sum(t for line in lines if (t := line.total) is not None)
    support = prices.support_per_year
    running.append(RunningCost(
        item="support and maintenance",
        per_month=None if support is None else support * capex / 12,
        basis="no site.prices.supportPerYear given" if support is None else
        f"{support:.0%} of the priced purchase per year"))
    return BillOfMaterials(currency=site.currency, price_source=prices.source, lines=lines,
                           running=running)


def _network(fabric: FabricPlan, platform: Platform) -> list[BomLine]:
    sw = platform.site.prices.switch
    prices = platform.site.prices
    out: list[BomLine] = []
    c = fabric.compute
    if c is not None:
        out.append(BomLine(item=f"compute switch ({c.technology})", category="network",
                           quantity=c.sized.switches, unit="switch", unit_price=sw.compute,
                           detail=_tiers(c.sized.leaves, c.sized.spines, c.sized.cores)))
        out.append(BomLine(item="compute-fabric cable", category="network",
                           quantity=sum(g.cables for g in c.sized.cables), unit="cable",
                           unit_price=prices.cable,
                           detail=", ".join(f"{g.between} {g.cables:,}" for g in c.sized.cables)))
        out.append(BomLine(item="transceiver", category="network",
                           quantity=c.sized.transceivers, unit="transceiver",
                           unit_price=prices.transceiver))
        if c.ufm_appliances:
            out.append(BomLine(item="UFM appliance", category="network",
                               quantity=c.ufm_appliances, unit="appliance",
                               unit_price=prices.ufm_appliance))
    for e, price in ((fabric.storage, sw.storage), (fabric.in_band, sw.in_band),
                     (fabric.out_of_band, sw.out_of_band)):
        if e.sized.switches:
            out.append(BomLine(item=f"{e.name} switch", category="network",
                               quantity=e.sized.switches, unit="switch", unit_price=price,
                               detail=_tiers(e.sized.leaves, e.sized.spines)))
    return out


def _tiers(leaves: int, spines: int, cores: int = 0) -> str:
    parts = ((leaves, "leaf", "leaves"), (spines, "spine", "spines"), (cores, "core", "cores"))
    return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in parts if n)
