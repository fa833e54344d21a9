"""Facility sizing: node and pool power, racks, cooling, facility power, run energy, site fit.

Design. Each function is one step of the chain an administrator walks when a GPU platform
meets a data centre: watts per node -> watts per pool -> nodes per rack (power or rack units,
whichever binds first) -> racks -> heat to remove -> facility power through PUE -> energy and
cost of a run -> does it fit the site feed. Every step takes plain numbers so each can be fed
from a vendor sheet or a measurement instead of our estimate, and each returns a frozen
``Result`` that names its formula and inputs.

Why these numbers:

- Node power. A vendor's system figure beats any estimate: NVIDIA states a DGX H100 (8 x H100
  SXM at 700 W) draws up to 10.2 kW and a DGX A100 (8 x A100 at 400 W) up to 6.5 kW (NVIDIA DGX
  H100/A100 user guides, "Power specifications"; DGX H100 also 4+2 PSUs of 3.3 kW). Without one
  we estimate GPUs x TDP x an overhead factor for CPUs, memory, NICs, NVSwitches, fans and PSU
  loss: 10.2 / 5.6 = 1.82 for DGX H100 and 6.5 / 3.2 = 2.03 for DGX A100, so the default 1.8
  sits at the lean end of what whole systems show: pass the system figure where one exists.
- Heat. All electrical power drawn by IT equipment ends up as heat in the room, so the cooling
  load equals the IT power; 1 W = 3.412142 BTU/h and 1 ton of refrigeration = 12,000 BTU/h.
- PUE = total facility power / IT power (The Green Grid's definition), so facility = IT x PUE.
- Air cooling. Optimised air with containment commonly serves about 20-40 kW per rack; past
  that operators add rear-door heat exchangers or direct-to-chip liquid (ASHRAE TC 9.9 guidance
  as summarised by vendors' cooling guides). We warn above 40 kW: an assumption, not a law,
  so it is a parameter.
- Rack units. A 42U rack keeps some units for the top-of-rack switches, a management switch,
  patch panels and cable management; 4U is our stated default reserve.
- Rack-scale systems (GB200/GB300 NVL72) are bought as whole racks: the NVLink domain's trays,
  switch trays, power shelves and manifolds come as one unit, so its racks are whole domains
  and its load is the domain's power, whatever the site's rack height (``rack_scale_layout``).
"""

from __future__ import annotations

import math
from typing import Literal

from aiplat.errors import InputError
from aiplat.sizing.result import Result, require_non_negative, require_positive

W_PER_KW = 1000.0
BTU_PER_H_PER_W = 3.412142
"""1 W of heat = 3.412142 BTU/h (international-table BTU)."""
BTU_PER_H_PER_TON = 12_000.0
"""1 ton of refrigeration = 12,000 BTU/h (melting 2,000 lb of ice in 24 h)."""

DEFAULT_NODE_OVERHEAD_FACTOR = 1.8
"""Whole-node power / GPU power: DGX H100 10.2 kW / (8 x 700 W) = 1.82; DGX A100 6.5/3.2 = 2.03."""

HOST_FLOOR_W = 800.0
"""A two-socket server's own draw under load (the catalog's cpu-mgmt-2s): a node estimated
from small GPUs (4 x L4 = 288 W) cannot draw less than its host plus its GPUs."""

AIR_COOLING_LIMIT_W = 40_000.0
"""Rack load above which air cooling is doubtful (stated assumption; see module docstring)."""

DEFAULT_RACK_UNITS = 42
DEFAULT_RESERVED_RACK_UNITS = 4
"""Units kept for ToR and management switches, patch panel and cable management."""

HOURS_PER_YEAR = 8760.0

CoolingKind = Literal["air", "liquid"]




def _pue(pue: float) -> None:
    if not pue >= 1.0 or math.isinf(pue):
        raise InputError(
            f"pue must be >= 1.0 (total facility power / IT power), got {pue!r} "
            "(fix: pass the site's measured PUE, e.g. 1.2-1.6)"
        )


class NodePower(Result):
    """Power drawn by one node at full load."""

    node_power_w: float
    gpu_power_w: float | None
    overhead_factor: float | None
    estimated: bool


def node_power(
    *,
    gpus_per_node: int,
    gpu_tdp_w: float | None = None,
    system_power_w: float | None = None,
    overhead_factor: float = DEFAULT_NODE_OVERHEAD_FACTOR,
) -> NodePower:
    """Full-load power of one node: the vendor's system figure, else GPUs x TDP x overhead.

    >>> node_power(gpus_per_node=8, gpu_tdp_w=700, system_power_w=10_200).node_power_w
    10200.0
    """
    if gpus_per_node < 0:
        raise InputError(f"gpus_per_node must be >= 0, got {gpus_per_node}")
    gpu_w: float | None = None
    if gpu_tdp_w is not None:
        require_non_negative(gpu_tdp_w=gpu_tdp_w)
        gpu_w = gpus_per_node * float(gpu_tdp_w)
    inputs: dict[str, float | int | str | bool | None] = {
        "gpus_per_node": gpus_per_node,
        "gpu_tdp_w": gpu_tdp_w,
        "system_power_w": system_power_w,
        "overhead_factor": overhead_factor,
    }
    if system_power_w is not None:
        require_positive(system_power_w=system_power_w)
        implied = system_power_w / gpu_w if gpu_w else None
        notes = []
        if gpu_w is not None and gpu_w > system_power_w:
            notes.append(
                f"GPU TDP total {gpu_w:.0f} W exceeds the system figure {system_power_w:.0f} W: "
                "check that the system figure is the maximum, not a typical draw"
            )
        return NodePower(
            node_power_w=float(system_power_w),
            gpu_power_w=gpu_w,
            overhead_factor=implied,
            estimated=False,
            formula="node power = the vendor's maximum system power",
            inputs=inputs,
            notes=notes,
        )
    if gpu_w is None or gpu_w == 0:
        raise InputError(
            "node_power needs system_power_w, or gpus_per_node > 0 with gpu_tdp_w "
            "(fix: pass the vendor's maximum system power (e.g. DGX H100: 10200 W), "
            "which is the only option for CPU-only nodes)"
        )
    require_positive(overhead_factor=overhead_factor)
    notes = [
        f"estimated from the GPUs alone: TDP x overhead factor {overhead_factor} for CPUs, "
        "memory, NICs, switches, fans and PSU loss (DGX H100 shows 1.82, DGX A100 2.03); "
        "give the vendor's figure (nodeType or powerKW)"
    ]
    if overhead_factor < 1.0:
        notes.append("an overhead factor below 1 means the node draws less than its GPUs' TDP")
    estimate = gpu_w * overhead_factor
    if estimate < gpu_w + HOST_FLOOR_W:
        estimate = gpu_w + HOST_FLOOR_W
        notes.append(f"low-power GPUs: GPUs + a {HOST_FLOOR_W:.0f} W two-socket host instead")
    return NodePower(
        node_power_w=estimate,
        gpu_power_w=gpu_w,
        overhead_factor=overhead_factor,
        estimated=True,
        formula="node power = max(GPUs x TDP x overhead factor, GPUs x TDP + host floor)",
        inputs=inputs,
        notes=notes,
    )


class PoolPower(Result):
    """Full-load power of one pool of identical nodes."""

    pool: str
    nodes: int
    pool_power_w: float


def pool_power(*, pool: str, nodes: int, node_power_w: float) -> PoolPower:
    """Pool power = nodes x node power (all nodes at full load: the figure to provision for)."""
    if nodes < 0:
        raise InputError(f"pool {pool!r}: nodes must be >= 0, got {nodes}")
    require_positive(node_power_w=node_power_w)
    return PoolPower(
        pool=pool,
        nodes=nodes,
        pool_power_w=nodes * float(node_power_w),
        formula="pool power = nodes x node power",
        inputs={"pool": pool, "nodes": nodes, "node_power_w": node_power_w},
    )


class RackLayout(Result):
    """How many nodes fit a rack and how many racks a pool needs."""

    nodes_per_rack_by_power: int
    nodes_per_rack_by_space: int
    nodes_per_rack: int
    limited_by: Literal["power", "space", "rack-scale"]
    racks: int
    usable_rack_units: int
    rack_load_w: float
    """Load of a full rack (nodes_per_rack x node power)."""
    air_cooling_exceeded: bool


def rack_layout(
    *,
    nodes: int,
    node_power_w: float,
    node_height_u: int,
    rack_power_limit_w: float,
    rack_units: int = DEFAULT_RACK_UNITS,
    reserved_units: int = DEFAULT_RESERVED_RACK_UNITS,
    cooling: CoolingKind = "air",
    air_cooling_limit_w: float = AIR_COOLING_LIMIT_W,
) -> RackLayout:
    """Nodes per rack under both the rack's power limit and its free rack units; racks needed.

    Power and space are both hard limits, so nodes per rack is the smaller of
    floor(limit / node power) and floor((rack units - reserve) / node height).
    """
    if nodes < 0:
        raise InputError(f"nodes must be >= 0, got {nodes}")
    require_positive(node_power_w=node_power_w)
    require_positive(rack_power_limit_w=rack_power_limit_w)
    require_positive(air_cooling_limit_w=air_cooling_limit_w)
    if node_height_u < 1:
        raise InputError(f"node_height_u must be >= 1, got {node_height_u}")
    if reserved_units < 0 or reserved_units >= rack_units:
        raise InputError(
            f"reserved_units must be in [0, rack_units), got {reserved_units} of {rack_units}"
        )
    usable = rack_units - reserved_units
    by_power = math.floor(rack_power_limit_w / node_power_w)
    by_space = usable // node_height_u
    if by_power == 0:
        raise InputError(
            f"one node draws {node_power_w:.0f} W, more than the rack limit "
            f"{rack_power_limit_w:.0f} W (fix: use racks with higher-rated PDUs/feeds "
            "or cap node power (nvidia-smi -pl) and pass the capped figure)"
        )
    if by_space == 0:
        raise InputError(
            f"a {node_height_u}U node does not fit {usable}U usable "
            f"({rack_units}U minus {reserved_units}U reserved) (fix: lower reserved_units "
            "or use taller racks)"
        )
    per_rack = min(by_power, by_space)
    limited_by: Literal["power", "space"] = "power" if by_power < by_space else "space"
    racks = math.ceil(nodes / per_rack) if nodes else 0
    # the fullest rack decides the cooling question, not the average one
    load = min(per_rack, nodes) * node_power_w if nodes else per_rack * node_power_w
    air_exceeded = cooling == "air" and load > air_cooling_limit_w
    notes = []
    if air_exceeded:
        notes.append(
            f"WARNING: {load / W_PER_KW:.1f} kW per rack with air cooling exceeds the "
            f"{air_cooling_limit_w / W_PER_KW:.0f} kW assumed practical limit for air "
            "(containment serves roughly 20-40 kW); plan rear-door heat exchangers or "
            "direct-to-chip liquid cooling, or lower rack_power_limit_w to spread nodes"
        )
    if limited_by == "power":
        notes.append(f"power binds: {by_space - by_power} node slot(s) per rack stay empty")
    return RackLayout(
        nodes_per_rack_by_power=by_power,
        nodes_per_rack_by_space=by_space,
        nodes_per_rack=per_rack,
        limited_by=limited_by,
        racks=racks,
        usable_rack_units=usable,
        rack_load_w=load,
        air_cooling_exceeded=air_exceeded,
        formula=(
            "nodes per rack = min(floor(rack power limit / node power), "
            "floor((rack units - reserved units) / node height)); racks = ceil(nodes / that)"
        ),
        inputs={
            "nodes": nodes,
            "node_power_w": node_power_w,
            "node_height_u": node_height_u,
            "rack_power_limit_w": rack_power_limit_w,
            "rack_units": rack_units,
            "reserved_units": reserved_units,
            "cooling": cooling,
            "air_cooling_limit_w": air_cooling_limit_w,
        },
        notes=notes,
    )


class CoolingLoad(Result):
    """Heat the cooling plant must remove for a given IT load."""

    heat_w: float
    heat_btu_per_h: float
    cooling_tons: float


def cooling_load(*, it_power_w: float) -> CoolingLoad:
    """Heat = IT power; in BTU/h (x 3.412142) and tons of refrigeration (/ 12,000 BTU/h).

    >>> round(cooling_load(it_power_w=3516.85).cooling_tons, 3)
    1.0
    """
    require_non_negative(it_power_w=it_power_w)
    btu = it_power_w * BTU_PER_H_PER_W
    return CoolingLoad(
        heat_w=float(it_power_w),
        heat_btu_per_h=btu,
        cooling_tons=btu / BTU_PER_H_PER_TON,
        formula=(
            "heat = IT power (all electrical power becomes heat); BTU/h = W x 3.412142; "
            "tons = BTU/h / 12000"
        ),
        inputs={"it_power_w": it_power_w},
        notes=[
            "IT heat only: UPS and distribution losses also heat their own rooms and are "
            "part of the PUE overhead"
        ],
    )


class FacilityPower(Result):
    """Total facility power for an IT load at a given PUE."""

    it_power_w: float
    facility_power_w: float
    non_it_power_w: float


def facility_power(*, it_power_w: float, pue: float) -> FacilityPower:
    """Facility power = IT power x PUE (PUE = total facility power / IT equipment power)."""
    require_non_negative(it_power_w=it_power_w)
    _pue(pue)
    total = it_power_w * pue
    return FacilityPower(
        it_power_w=float(it_power_w),
        facility_power_w=total,
        non_it_power_w=total - it_power_w,
        formula="facility power = IT power x PUE; non-IT = facility - IT (cooling, UPS, lighting)",
        inputs={"it_power_w": it_power_w, "pue": pue},
    )


class RunEnergy(Result):
    """Energy and cost of a run of GPUs for some hours."""

    avg_it_power_w: float
    gpu_energy_kwh: float
    it_energy_kwh: float
    facility_energy_kwh: float
    cost: float
    """In the currency of ``price_per_kwh``."""


def run_energy(
    *,
    gpus: int,
    hours: float,
    gpu_tdp_w: float,
    avg_utilisation: float,
    pue: float,
    price_per_kwh: float,
    host_overhead_factor: float = 1.0,
) -> RunEnergy:
    """Energy = GPUs x TDP x average share of TDP x hours x host overhead x PUE; cost = x price.

    ``avg_utilisation`` is the average power as a share of TDP (what DCGM's power field shows
    over the run), not SM utilisation. ``host_overhead_factor`` 1.0 counts the GPUs alone; pass
    e.g. ``DEFAULT_NODE_OVERHEAD_FACTOR`` to include CPUs, memory, NICs and fans.
    """
    if gpus < 0:
        raise InputError(f"gpus must be >= 0, got {gpus}")
    require_non_negative(hours=hours)
    require_non_negative(gpu_tdp_w=gpu_tdp_w)
    if not 0.0 <= avg_utilisation <= 1.0:
        raise InputError(
            f"avg_utilisation is the average power as a share of TDP, in [0, 1]; "
            f"got {avg_utilisation!r}"
        )
    _pue(pue)
    require_non_negative(price_per_kwh=price_per_kwh)
    require_positive(host_overhead_factor=host_overhead_factor)
    gpu_avg_w = gpus * gpu_tdp_w * avg_utilisation
    gpu_kwh = gpu_avg_w * hours / W_PER_KW
    it_kwh = gpu_kwh * host_overhead_factor
    facility_kwh = it_kwh * pue
    notes = []
    if host_overhead_factor == 1.0:
        notes.append(
            "GPU energy only: pass host_overhead_factor (e.g. 1.8) to count CPUs, memory, "
            "NICs and fans"
        )
    return RunEnergy(
        avg_it_power_w=gpu_avg_w * host_overhead_factor,
        gpu_energy_kwh=gpu_kwh,
        it_energy_kwh=it_kwh,
        facility_energy_kwh=facility_kwh,
        cost=facility_kwh * price_per_kwh,
        formula=(
            "GPU kWh = GPUs x TDP x avg share of TDP x hours / 1000; IT kWh = GPU kWh x host "
            "overhead; facility kWh = IT kWh x PUE; cost = facility kWh x price per kWh"
        ),
        inputs={
            "gpus": gpus,
            "hours": hours,
            "gpu_tdp_w": gpu_tdp_w,
            "avg_utilisation": avg_utilisation,
            "pue": pue,
            "price_per_kwh": price_per_kwh,
            "host_overhead_factor": host_overhead_factor,
        },
        notes=notes,
    )


class SiteFit(Result):
    """Whether a load fits the site's power budget, and the headroom left."""

    compared_power_w: float
    """The figure set against the budget: IT x PUE, or the IT load alone when no PUE given."""
    site_budget_w: float
    fits: bool
    headroom_w: float
    """Budget minus compared power; negative when it does not fit."""
    headroom_fraction: float
    """Headroom as a share of the budget."""


def site_power_fit(*, it_power_w: float, site_budget_w: float, pue: float | None = None) -> SiteFit:
    """Does the IT load fit the site budget?

    Sites quote either the whole feed (then pass ``pue``: IT x PUE is compared) or the
    critical IT capacity (leave ``pue`` out: the IT load is compared as is).
    """
    require_non_negative(it_power_w=it_power_w)
    require_positive(site_budget_w=site_budget_w)
    if pue is not None:
        _pue(pue)
        compared = it_power_w * pue
        formula = "fits when IT power x PUE <= site budget (budget = the whole facility feed)"
    else:
        compared = float(it_power_w)
        formula = "fits when IT power <= site budget (budget = critical IT capacity)"
    headroom = site_budget_w - compared
    notes = []
    if headroom < 0:
        notes.append(
            f"over budget by {-headroom / W_PER_KW:.1f} kW (fix: fewer or power-capped "
            "nodes, a lower PUE, or a larger feed)"
        )
    elif headroom < 0.1 * site_budget_w:
        notes.append("less than 10% headroom: growth and power-cap misconfiguration will hit it")
    return SiteFit(
        compared_power_w=compared,
        site_budget_w=float(site_budget_w),
        fits=headroom >= 0,
        headroom_w=headroom,
        headroom_fraction=headroom / site_budget_w,
        formula=formula,
        inputs={"it_power_w": it_power_w, "site_budget_w": site_budget_w, "pue": pue},
        notes=notes,
    )


def rack_of(node_index: int, nodes_per_rack: int) -> int:
    """The rack of a pool's ``node_index``-th node (0-based, in physical order): nodes fill
    the pool's racks in order, ``nodes_per_rack`` to a rack (its spares after its nodes).
    The rack labels, the label script and the rack drawings all place nodes by it."""
    return node_index // max(1, nodes_per_rack)


def rack_scale_layout(
    *,
    nodes: int,
    nodes_per_domain: int,
    racks_per_domain: int,
    domain_power_w: float,
    rack_power_limit_w: float,
    cooling: CoolingKind = "air",
    air_cooling_limit_w: float = AIR_COOLING_LIMIT_W,
) -> RackLayout:
    """Racks of a rack-scale system: whole NVLink domains, each ``racks_per_domain`` racks
    drawing ``domain_power_w`` together. ``nodes`` (compute trays) must fill whole domains;
    a rack whose share of the domain's power exceeds the site's rack limit cannot be split."""
    if nodes < 0:
        raise InputError(f"nodes must be >= 0, got {nodes}")
    require_positive(domain_power_w=domain_power_w)
    require_positive(rack_power_limit_w=rack_power_limit_w)
    if nodes_per_domain < 1 or racks_per_domain < 1:
        raise InputError("a rack-scale domain needs at least one node and one rack")
    if nodes % nodes_per_domain:
        raise InputError(
            f"{nodes} nodes are not whole rack-scale domains of {nodes_per_domain} trays "
            f"(fix: use a multiple of {nodes_per_domain} "
            f"({math.ceil(nodes / nodes_per_domain) * nodes_per_domain} nodes))")
    per_rack = math.ceil(nodes_per_domain / racks_per_domain)
    rack_w = domain_power_w / racks_per_domain
    if rack_w > rack_power_limit_w:
        raise InputError(
            f"one rack of this rack-scale system draws {rack_w / W_PER_KW:.1f} kW, more than "
            f"the site's {rack_power_limit_w / W_PER_KW:g} kW rack limit, and its trays cannot "
            "be spread over more racks (fix: raise site.rackPowerLimitKW to the system's "
            "rack power (the site must feed and cool it), or choose a system of smaller racks)")
    domains = nodes // nodes_per_domain
    air_exceeded = cooling == "air" and rack_w > air_cooling_limit_w
    notes = [f"{domains} NVLink domain(s) of {nodes_per_domain} trays in {racks_per_domain} "
             "rack(s) each: racks are whole domains"]
    if air_exceeded:
        notes.append(
            f"WARNING: the rack-scale system's {rack_w / W_PER_KW:.1f} kW racks are liquid "
            "cooled by design; an air-cooled site cannot host them")
    return RackLayout(
        nodes_per_rack_by_power=per_rack,
        nodes_per_rack_by_space=per_rack,
        nodes_per_rack=per_rack,
        limited_by="rack-scale",
        racks=domains * racks_per_domain,
        usable_rack_units=0,
        rack_load_w=rack_w,
        air_cooling_exceeded=air_exceeded,
        formula="racks = nodes / trays per domain x racks per domain; rack load = domain "
                "power / racks per domain",
        inputs={"nodes": nodes, "nodes_per_domain": nodes_per_domain,
                "racks_per_domain": racks_per_domain, "domain_power_w": domain_power_w,
                "rack_power_limit_w": rack_power_limit_w, "cooling": cooling,
                "air_cooling_limit_w": air_cooling_limit_w},
        notes=notes,
    )
