"""Drawings of the plan: rack elevations, network zones and the compute fabric (pure:
Plan -> :class:`~aiplat.report.document.Figure`, SVG text).

Design:

- Facts first: each drawing is built from a small list of what it shows (racks and their
  slots, zones, fabric tiers), computed from the Plan by one function that tests read too,
  so "the counts drawn equal the plan's" is checked on the data and on the SVG alike.
- Rack elevations follow the rules the plan sized the racks by: a pool's node ``i`` sits in
  rack ``sizing.power.rack_of(i, nodes_per_rack)`` (as the Kubernetes tree's rack labels),
  the plan's racked nodes: its spares after its nodes (a rack-scale pool's spare trays wait
  on the shelf: not drawn; its NVLink switch trays in the middle of each rack), the
  fabric plan's PDUs per rack as zero-U strips on the rack's sides,
  nodes stacked from U1 up, the top ``DEFAULT_RESERVED_RACK_UNITS`` kept for the in-band and
  out-of-band leaves and patching (drawn as reserved: the plan counts those leaves per
  fabric, not per rack); non-compute nodes at 2U in management racks; compute, storage and
  spine switches and UFM appliances filling the network racks. Power per rack is what the
  plan sizes: nodes x node power (switches: their share of the fabric's power) against the
  site's rack limit.
- Two layouts in one picture, as the charts have (:mod:`aiplat.report.charts`): a 640-unit
  wide drawing and a 256-unit one drawn at 2.5 times the scale (:data:`NARROW`), switched by
  the page's CSS for ``svg.aiplat-chart`` on narrow screens, so text stays at 10 px or more
  at 390 px.
- Safety: every text goes through :func:`html.escape`; every id is ``<figure id>_...``
  (the narrow layout's ``<figure id>_narrow_...``); no URL, script or external reference.
  A standalone ``.svg`` (the Markdown report's image) needs ``xmlns``, which is always set.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from aiplat.plan.fabric import PDUS_PER_RACK
from aiplat.plan.models import Plan, PoolPlan
from aiplat.plan.resolve import CPU_NODE_W
from aiplat.report.charts import WIDTH
from aiplat.report.document import Figure, Section, Table
from aiplat.sizing.power import DEFAULT_RACK_UNITS, DEFAULT_RESERVED_RACK_UNITS, rack_of

FONT_FAMILY = "'DejaVu Sans', sans-serif"
INK, MUTED, LINE, BAD = "#333333", "#666666", "#999999", "#b3261e"
# Okabe-Ito colours (as the charts use), named by what they fill; text says the same.
KIND_FILL = {"node": "#0072B2", "spare": "#d9d9d9", "server": "#D55E00",
             "switch": "#009E73", "nvswitch": "#F0E442", "manager": "#CC79A7"}
POWER = "#56B4E9"
PAD, GAP = 8.0, 8.0
RACK_W = 96.0
U_H = 5.0  # one rack unit, drawing units
MGMT_NODE_U = 2  # the plan's management racks hold 2U non-compute nodes (plan.build)


@dataclass(frozen=True)
class Slot:
    u: int  # lowest unit, from 1
    height: int
    label: str
    kind: str  # node, spare, server, switch, nvswitch (an NVLink switch tray), manager


@dataclass
class Rack:
    name: str
    kind: str  # pool, management, network
    units: int
    slots: list[Slot] = field(default_factory=list)
    power_w: float = 0.0
    limit_w: float | None = None
    note: str = ""
    pdus: int = PDUS_PER_RACK  # zero-U, on the sides: the fabric plan counts their ports

    def count(self, kind: str) -> int:
        return sum(1 for s in self.slots if s.kind == kind)


# --- facts ------------------------------------------------------------------------------


def rack_units(plan: Plan) -> tuple[int, float | None]:
    """The site's rack units and rack power limit, as the pools' rack sizing read them."""
    for p in plan.pools:
        inputs = p.results.get("racks", {}).get("inputs", {})
        if "rack_units" in inputs:
            return int(inputs["rack_units"]), float(inputs["rack_power_limit_w"])
    limit = next((p.results["racks"]["inputs"].get("rack_power_limit_w") for p in plan.pools
                  if "racks" in p.results), None)
    return DEFAULT_RACK_UNITS, None if limit is None else float(limit)


def plan_racks(plan: Plan) -> list[Rack]:
    """Every rack the facility counts, with what the plan puts in it."""
    units, limit = rack_units(plan)
    racks = [r for p in plan.pools for r in _pool_racks(p, units, limit)]
    racks += _management_racks(plan, units, limit)
    racks += _network_racks(plan, units, limit)
    return racks


def _pool_racks(p: PoolPlan, units: int, limit: float | None) -> list[Rack]:
    """The pool's racks with the nodes ``rack_of`` puts in each (the plan's racked nodes:
    its spares after its nodes; a rack-scale pool's spare trays wait on the shelf). A
    rack-scale rack has its NVLink switch trays in the middle, between its lower and upper
    compute trays, as NVIDIA builds the NVL72."""
    height = 1 if p.rack_scale else int(p.results.get("racks", {}).get("inputs", {})
                                        .get("node_height_u", 1))
    per = max(1, p.nodes_per_rack)
    by_rack: dict[int, list[int]] = {}
    for i in range(p.racked_nodes):
        by_rack.setdefault(rack_of(i, per), []).append(i)
    out: list[Rack] = []
    for r in range(p.racks):
        rack = Rack(f"{p.name}-rack-{r}", "pool", units, limit_w=limit,
                    note="spare trays on the shelf" if p.rack_scale and p.spare_nodes else "")
        nodes = by_rack.get(r, [])
        lower = math.ceil(len(nodes) / 2) if p.switch_trays_per_rack else len(nodes)
        u = 1
        for k, i in enumerate(nodes):
            if k == lower:
                for t in range(p.switch_trays_per_rack):
                    rack.slots.append(Slot(u, 1, f"NVLink switch tray {t}", "nvswitch"))
                    u += 1
            spare = i >= p.nodes
            rack.slots.append(Slot(u, height, f"{p.name}-{i}" + (" spare" if spare else ""),
                                   "spare" if spare else "node"))
            u += height
        # the domain's power (switch trays included) is its trays' share: nodes x node power
        rack.power_w = len(nodes) * p.node_power_kw * 1000
        out.append(rack)
    return out


def _fill(kind: str, items: list[tuple[int, str, str, float]], *, units: int,
          limit: float | None, count: int, name: str) -> list[Rack]:
    """``items`` (height, label, kind, watts) stacked bottom-up over ``count`` racks."""
    usable = max(units - DEFAULT_RESERVED_RACK_UNITS, 1)
    racks = [Rack(f"{name}-{r}", kind, units, limit_w=limit) for r in range(count)]
    r, u = 0, 1
    for height, label, slot_kind, watts in items:
        if u + height - 1 > usable and r + 1 < count:
            r, u = r + 1, 1
        if not racks:
            break
        racks[r].slots.append(Slot(u, height, label, slot_kind))
        racks[r].power_w += watts
        u += height
    return racks


def _management_racks(plan: Plan, units: int, limit: float | None) -> list[Rack]:
    n = plan.roles.non_compute_nodes
    if not n:
        return []
    count = math.ceil(n * MGMT_NODE_U / max(units - DEFAULT_RESERVED_RACK_UNITS, 1))
    watts = float(plan.facility.results.get("management_power_w", {})
                  .get("watts_per_node", 0.0))
    items = [(MGMT_NODE_U, f"{role.role}-{i}", "server", watts)
             for role in plan.roles.roles if not role.role.startswith("compute")
             for i in range(role.nodes)]
    return _fill("management", items, units=units, limit=limit, count=count,
                 name="mgmt-rack")


def _network_racks(plan: Plan, units: int, limit: float | None) -> list[Rack]:
    fab = plan.fabric
    items: list[tuple[int, str, str, float]] = []
    c = fab.compute
    other = sum(e.rack_units_in_network_racks for e in (fab.storage, fab.in_band,
                                                       fab.out_of_band))
    if c is not None:
        s = c.sized
        ru = fab.rack_units - other - c.ufm_appliances * 2
        per_u = max(1, ru // s.switches) if s.switches else 1
        watts = (c.power_w - c.ufm_appliances * CPU_NODE_W) / max(s.switches, 1)
        for tier, n in (("leaf", s.leaves), ("spine", s.spines), ("core", s.cores)):
            items += [(per_u, f"compute {tier} {i}", "switch", watts) for i in range(n)]
        items += [(2, f"UFM {i}", "manager", CPU_NODE_W) for i in range(c.ufm_appliances)]
    for e in (fab.storage, fab.in_band, fab.out_of_band):
        x = e.sized
        # storage switches all stand in network racks; in-band and OOB only their spines
        tiers = [("leaf", x.leaves), ("spine", x.spines)] if e.name == "storage" \
            else [("spine", x.spines)]
        racked = sum(n for _, n in tiers) if e.rack_units_in_network_racks else 0
        if not racked:
            continue
        per_u = max(1, e.rack_units_in_network_racks // racked)
        items += [(per_u, f"{e.name} {tier} {i}", "switch", e.power_w / max(x.switches, 1))
                  for tier, n in tiers for i in range(n)]
    return _fill("network", items, units=units, limit=limit, count=fab.racks,
                 name="net-rack")


def racks_table(racks: list[Rack]) -> Table:
    rows = [[r.name, r.kind, str(r.count("node")), str(r.count("spare")),
             str(r.count("server")),
             str(r.count("switch") + r.count("nvswitch") + r.count("manager")),
             f"{sum(s.height for s in r.slots)} / {r.units}",
             f"{r.power_w / 1000:,.1f}", "—" if r.limit_w is None else f"{r.limit_w / 1000:g}"]
            for r in racks]
    return Table(columns=["rack", "kind", "nodes", "spares", "servers", "switches",
                          "U used / U", "kW", "limit kW"], rows=rows,
                 align=["left", "left", *["right"] * 7])


# --- SVG --------------------------------------------------------------------------------


def text(x: float, y: float, content: str, *, size: float = 9.0, anchor: str = "start",
         fill: str = INK, weight: str = "") -> str:
    bold = ' font-weight="bold"' if weight else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:g}" text-anchor="{anchor}" '
            f'fill="{fill}"{bold}>{html.escape(content)}</text>')


def shorten(label: str, width: float, size: float) -> str:
    """``label`` cut with "…" to about ``width`` units at ``size`` (0.6 em a character)."""
    chars = max(1, int(width / (0.6 * size)))
    return label if len(label) <= chars else label[: max(chars - 1, 1)] + "…"


NARROW = 256.0
"""The narrow layout's width: drawn at 2.5 times the scale, its smallest text (7.5 units)
renders at 10 px or more in a phone's ~350 px column (the charts' narrow width, 320, would
leave it at 8 px)."""

Body = Callable[[float, str], tuple[str, float]]
"""Draws a layout ``width`` units wide with ids prefixed by the second argument; returns the
body and its height."""


def figure_svg(fid: str, title: str, body: Body) -> str:
    """One ``<svg>`` with the wide layout and the narrow one, drawn at 2.5 times the scale."""
    wide, wide_h = body(WIDTH, f"{fid}_")
    narrow, narrow_h = body(NARROW, f"{fid}_narrow_")
    scale = WIDTH / NARROW
    return (
        f'<svg id="{fid}_svg" class="aiplat-chart aiplat-drawing" role="img" '
        f'aria-labelledby="{fid}_title" xmlns="http://www.w3.org/2000/svg" '
        f'width="{WIDTH:g}" height="{wide_h:.0f}" viewBox="0 0 {WIDTH:g} {wide_h:.0f}" '
        f'preserveAspectRatio="xMinYMin meet" '
        f'style="font-family: {FONT_FAMILY}; --narrow-ratio: {WIDTH:g} / '
        f'{narrow_h * scale:.0f}">\n<title id="{fid}_title">{html.escape(title)}</title>\n'
        f'<g class="wide">\n{wide}</g>\n'
        f'<g class="narrow" display="none" transform="scale({scale:g})">\n{narrow}</g>\n'
        "</svg>"
    )


def _rack_svg(rack: Rack, x: float, y: float, ident: str) -> tuple[str, float]:
    head = 24.0
    body_h = rack.units * U_H
    parts = [f'<g class="rack rack-{rack.kind}" id="{ident}">',
             f"<title>{html.escape(rack.name)}</title>",
             text(x + RACK_W / 2, y + 10, shorten(rack.name, RACK_W, 9), anchor="middle",
                  weight="bold"),
             text(x + RACK_W / 2, y + 20, f"{rack.kind} · {rack.units}U", size=8,
                  anchor="middle", fill=MUTED),
             f'<rect x="{x:.1f}" y="{y + head:.1f}" width="{RACK_W:g}" height="{body_h:.1f}" '
             f'fill="#f7f7f7" stroke="{INK}" stroke-width="1.5"/>']
    for k in range(rack.pdus):  # zero-U strips in the rack's side margins, alternating
        px = x + 0.75 if k % 2 == 0 else x + RACK_W - 2.25
        parts.append(f'<rect class="pdu" id="{ident}_pdu_{k}" x="{px:.2f}" '
                     f'y="{y + head + 2:.1f}" width="1.5" height="{body_h - 4:.1f}" '
                     f'fill="{MUTED}"><title>PDU {k} (zero-U)</title></rect>')
    top = y + head
    reserved = DEFAULT_RESERVED_RACK_UNITS
    parts.append(f'<rect class="reserved" x="{x + 3:.1f}" y="{top + 1:.1f}" '
                 f'width="{RACK_W - 6:g}" height="{reserved * U_H - 2:.1f}" fill="#ececec" '
                 f'stroke="{LINE}" stroke-dasharray="2 2"/>')
    parts.append(text(x + RACK_W / 2, top + reserved * U_H / 2 + 3, "reserved: leaves",
                      size=7.5, anchor="middle", fill=MUTED))
    for k, s in enumerate(rack.slots):
        sy = top + (rack.units - (s.u + s.height - 1)) * U_H
        h = s.height * U_H
        parts.append(f'<rect class="slot {s.kind}" id="{ident}_slot_{k}" x="{x + 3:.1f}" '
                     f'y="{sy + 0.5:.1f}" width="{RACK_W - 6:g}" height="{h - 1:.1f}" '
                     f'fill="{KIND_FILL[s.kind]}" stroke="#ffffff" stroke-width="0.5">'
                     f'<title>{html.escape(s.label)} ({s.height}U at U{s.u})</title></rect>')
        if h >= 9:
            parts.append(text(x + 6, sy + h / 2 + 3, shorten(s.label, RACK_W - 12, 7.5),
                              size=7.5, fill=INK if s.kind in ("spare", "nvswitch")
                              else "#ffffff"))
    foot = top + body_h + 6
    share = rack.power_w / rack.limit_w if rack.limit_w else 0.0
    over = rack.limit_w is not None and rack.power_w > rack.limit_w
    parts.append(f'<rect x="{x:.1f}" y="{foot:.1f}" width="{RACK_W:g}" height="6" '
                 f'fill="#e6e6e6"/>')
    parts.append(f'<rect class="power" x="{x:.1f}" y="{foot:.1f}" '
                 f'width="{RACK_W * min(share, 1.0):.1f}" height="6" '
                 f'fill="{BAD if over else POWER}"/>')
    limit = "" if rack.limit_w is None else f" / {rack.limit_w / 1000:g}"
    parts.append(text(x + RACK_W / 2, foot + 17, f"{rack.power_w / 1000:,.1f}{limit} kW",
                      size=8.5, anchor="middle", fill=BAD if over else INK))
    if rack.note:
        parts.append(text(x + RACK_W / 2, foot + 27, shorten(rack.note, RACK_W, 7.5), size=7.5,
                          anchor="middle", fill=MUTED))
    parts.append("</g>")
    return "\n".join(parts) + "\n", head + body_h + 36


def _racks_body(racks: list[Rack]) -> Body:
    def body(width: float, prefix: str) -> tuple[str, float]:
        per_row = max(1, int((width - 2 * PAD + GAP) // (RACK_W + GAP)))
        out, y = [], PAD
        for start in range(0, len(racks), per_row):
            row_h = 0.0
            for j, rack in enumerate(racks[start:start + per_row]):
                svg, h = _rack_svg(rack, PAD + j * (RACK_W + GAP), y,
                                   f"{prefix}rack_{start + j}")
                out.append(svg)
                row_h = max(row_h, h)
            y += row_h + GAP
        if not racks:
            out.append(text(PAD, y + 12, "no racks in this plan", size=10))
            y += 20
        return "".join(out), y + PAD
    return body


def rack_figure(plan: Plan) -> Figure:
    racks = plan_racks(plan)
    return Figure(
        id="rack-elevations", title="Rack elevations",
        svg=figure_svg("rack-elevations", f"Rack elevations of {plan.platform}",
                       _racks_body(racks)),
        caption="Each rack from U1 (bottom) up: pool nodes (blue), spares (grey), "
                "NVLink switch trays (yellow, rack-scale systems), non-compute servers "
                "(red-orange), switches (green), UFM (pink); the top "
                f"{DEFAULT_RESERVED_RACK_UNITS}U stay for the in-band and out-of-band leaves "
                f"and patching; the {PDUS_PER_RACK} zero-U PDUs on the sides (grey strips). "
                "The bar under a rack is its power against the site's rack limit (red above "
                "it). Power shelves and a rack-scale system's management switches are not "
                "drawn (the catalog does not count them).",
        table=racks_table(racks))


# --- network zones ------------------------------------------------------------------------

ZONE_PURPOSE = {"management": "management", "service": "service", "storage": "storage",
                "high_performance": "hpc"}
"""The role plan's zone names against the spec's segment purposes."""
ZONE_FILL = {"management": "#E69F00", "service": "#56B4E9", "storage": "#009E73",
             "high_performance": "#0072B2", "out-of-band": "#999999"}


@dataclass(frozen=True)
class Zone:
    name: str
    facts: str  # MTU, RDMA, the segment's subnet and rate
    members: list[str]
    switches: str  # the fabric that carries it, as sized


def _switches(leaves: int, spines: int, cores: int = 0, extra: str = "") -> str:
    parts = [f"{leaves} leaf", f"{spines} spine"] + ([f"{cores} core"] if cores else [])
    return " · ".join(parts) + extra


def plan_zones(plan: Plan) -> list[Zone]:
    """The network zones the roles attach to, each with its segment and its switches."""
    fab = plan.fabric
    segments = {s.purpose.value: s for s in plan.network.segments}
    out = []
    for z in plan.roles.zones:
        seg = segments.get(ZONE_PURPOSE.get(z.zone, ""))
        facts = [f"MTU {z.mtu_bytes}", "RDMA" if z.rdma else "no RDMA"]
        if seg is not None:
            facts.insert(0, f"segment {seg.name}")
            facts += [str(seg.cidr)] if seg.cidr else []
            facts += [f"{seg.rate_gbps:g} Gb/s"] if seg.rate_gbps else []
            if seg.rdma != "none" and not z.rdma:
                facts.append(f"segment asks {seg.rdma}")
        if z.zone == "management":
            e = fab.in_band.sized
            switches = _switches(e.leaves, e.spines, extra=" (in-band)")
        elif z.zone == "storage":
            e = fab.storage.sized
            switches = _switches(e.leaves, e.spines)
        elif z.zone == "high_performance" and fab.compute is not None:
            c = fab.compute.sized
            ufm = f" + {fab.compute.ufm_appliances} UFM" if fab.compute.ufm_appliances else ""
            switches = _switches(c.leaves, c.spines, c.cores,
                                 f" ({fab.compute.technology}, {c.rails} rails){ufm}")
        else:
            switches = "not sized by the plan"
        out.append(Zone(z.zone.replace("_", "-"), " · ".join(facts), list(z.roles), switches))
    o = fab.out_of_band.sized
    if o.switches:
        out.append(Zone("out-of-band", f"{o.ports_needed} ports: BMCs, switch management, "
                        "PDUs", ["every node's BMC"], _switches(o.leaves, o.spines)))
    return out


def zones_table(zones: list[Zone]) -> Table:
    return Table(columns=["zone", "facts", "roles", "switches"],
                 rows=[[z.name, z.facts, ", ".join(z.members), z.switches] for z in zones])


def _chips(members: list[str], x0: float, y0: float, width: float, ident: str
           ) -> tuple[list[str], float]:
    """Members as rounded labels, wrapped into rows inside ``width``; returns the height."""
    parts, x, y = [], x0, y0
    for k, m in enumerate(members):
        label = shorten(m, width - 12, 8.5)
        w = min(len(label) * 0.6 * 8.5 + 12, width)
        if x + w > x0 + width and x > x0:
            x, y = x0, y + 18
        parts.append(f'<rect class="member" id="{ident}_member_{k}" x="{x:.1f}" y="{y:.1f}" '
                     f'width="{w:.1f}" height="14" rx="7" fill="#ffffff" stroke="{LINE}"/>')
        parts.append(text(x + 6, y + 10.5, label, size=8.5))
        x += w + 4
    return parts, y + 18 - y0


def _zones_body(zones: list[Zone]) -> Body:
    def body(width: float, prefix: str) -> tuple[str, float]:
        out, y = [], PAD
        inner = width - 2 * PAD
        for i, z in enumerate(zones):
            ident = f"{prefix}zone_{i}"
            fill = ZONE_FILL.get(z.name.replace("-", "_"), ZONE_FILL["out-of-band"])
            chips, chips_h = _chips(z.members, PAD + 8, y + 50, inner - 16, ident)
            h = 50 + chips_h + 6
            out.append(f'<g class="zone" id="{ident}"><title>{html.escape(z.name)}</title>')
            out.append(f'<rect x="{PAD:g}" y="{y:.1f}" width="{inner:g}" height="{h:.1f}" '
                       f'rx="6" fill="{fill}" fill-opacity="0.15" stroke="{fill}" '
                       'stroke-width="1.5"/>')
            out.append(f'<rect x="{PAD:g}" y="{y:.1f}" width="6" height="{h:.1f}" '
                       f'fill="{fill}"/>')
            out.append(text(PAD + 12, y + 15, shorten(z.name, inner - 20, 11), size=11,
                            weight="bold"))
            out.append(text(PAD + 12, y + 29, shorten(z.facts, inner - 20, 8.5), size=8.5,
                            fill=MUTED))
            out.append(text(PAD + 12, y + 43, shorten(f"switches: {z.switches}", inner - 20,
                                                      8.5), size=8.5))
            out += chips
            out.append("</g>")
            y += h + GAP
        return "\n".join(out) + "\n", y + PAD - GAP
    return body


def zones_figure(plan: Plan) -> Figure:
    zones = plan_zones(plan)
    return Figure(
        id="network-zones", title="Network zones",
        svg=figure_svg("network-zones", f"Network zones of {plan.platform}", _zones_body(zones)),
        caption="Each zone with its MTU, RDMA, segment (where the spec names one), the "
                "switches that carry it and the roles attached to it.",
        table=zones_table(zones))


# --- compute fabric -----------------------------------------------------------------------

MAX_BOXES = 160
"""Switches of a tier drawn one by one up to this many (and while a box stays ``MIN_BOX``
units wide); past it, one box per scalable unit (or per tier) with the count."""
MIN_BOX = 3.0
MAX_GROUPS = 24
TIER_FILL = {"core": "#CC79A7", "spine": "#E69F00", "leaf": "#009E73", "nodes": "#0072B2"}


@dataclass(frozen=True)
class Tier:
    name: str  # core, spine, leaf, nodes
    count: int
    groups: int  # scalable units the tier is drawn in (leaves and nodes), else 1
    label: str


@dataclass(frozen=True)
class Links:
    between: str
    cables: int


def fabric_tiers(plan: Plan) -> tuple[list[Tier], list[Links]]:
    """The compute fabric top down (cores, spines, leaves, nodes) and the cables between
    tiers, as ``sizing.fabric`` counted them; empty without a compute fabric."""
    c = plan.fabric.compute
    if c is None:
        return [], []
    s = c.sized
    su = max(1, s.scalable_units)
    tiers = []
    if s.cores:
        tiers.append(Tier("core", s.cores, 1, f"{s.cores} core switches"))
    if s.spines:
        tiers.append(Tier("spine", s.spines, 1, f"{s.spines} spine switches"))
    leaf_groups = su if s.leaves % su == 0 and s.tiers > 1 else 1
    tiers.append(Tier("leaf", s.leaves, leaf_groups,
                      f"{s.leaves} leaf switch{'es' if s.leaves != 1 else ''}"
                      + (f", {s.leaves // su} per SU (rail-optimised)" if leaf_groups > 1
                         else "")))
    ufm = f" + {c.ufm_appliances} UFM" if c.ufm_appliances else ""
    tiers.append(Tier("nodes", s.nodes, leaf_groups,
                      f"{s.nodes} nodes × {s.rails} rails{ufm} in {su} SU"
                      + ("s" if su != 1 else "")))
    return tiers, [Links(g.between, g.cables) for g in s.cables]


def fabric_table(tiers: list[Tier], links: list[Links]) -> Table:
    rows = [[t.name, f"{t.count:,}", t.label] for t in tiers]
    rows += [[f"cables {lk.between}", f"{lk.cables:,}", ""] for lk in links]
    return Table(columns=["tier", "count", "detail"], rows=rows,
                 align=["left", "right", "left"])


def _tier_boxes(t: Tier, y: float, width: float, ident: str) -> list[str]:
    """A tier's switches as boxes (or one box past MAX_BOXES), grouped by SU."""
    inner = width - 2 * PAD
    parts = [f'<g class="tier tier-{t.name}" id="{ident}" data-count="{t.count}">',
             f"<title>{html.escape(t.label)}</title>"]
    fill = TIER_FILL[t.name]
    groups = t.groups if t.count % t.groups == 0 and t.groups <= MAX_GROUPS else 1
    gap = GAP if groups <= MAX_GROUPS // 2 else 3.0
    gw = (inner - gap * (groups - 1)) / groups
    n = t.count // groups
    bw = min((gw - 2 * (n - 1)) / n if n else gw, 120.0)  # one switch is no wall
    for g in range(groups):
        gx = PAD + g * (gw + gap)
        if t.name != "nodes" and t.count <= MAX_BOXES and bw >= MIN_BOX:
            for k in range(n):
                parts.append(f'<rect class="switch" id="{ident}_sw_{g * n + k}" '
                             f'x="{gx + k * (bw + 2):.1f}" y="{y:.1f}" width="{bw:.1f}" '
                             f'height="16" rx="2" fill="{fill}"/>')
        else:
            parts.append(f'<rect class="group" x="{gx:.1f}" y="{y:.1f}" width="{gw:.1f}" '
                         f'height="16" rx="3" fill="{fill}"/>')
            if gw >= 40:
                parts.append(text(gx + gw / 2, y + 11.5, f"{n:,}", size=8.5, anchor="middle",
                                  fill="#ffffff"))
    parts.append(text(PAD, y + 28, shorten(t.label, inner, 9), size=9))
    parts.append("</g>")
    return parts


def _fabric_body(tiers: list[Tier], links: list[Links], title: str) -> Body:
    def body(width: float, prefix: str) -> tuple[str, float]:
        out = [text(PAD, PAD + 11, shorten(title, width - 2 * PAD, 11), size=11,
                    weight="bold")]
        y = PAD + 24
        if not tiers:
            out.append(text(PAD, y + 12, "no compute fabric in this plan", size=10))
            return "\n".join(out) + "\n", y + 24
        # cables between tier i and i+1, top down: spine-core above leaf-spine above node-leaf
        by_pair = {lk.between: lk.cables for lk in links}
        names = {"core": "core", "spine": "spine", "leaf": "leaf", "nodes": "node"}
        for i, t in enumerate(tiers):
            out += _tier_boxes(t, y, width, f"{prefix}tier_{t.name}")
            y += 34
            if i + 1 < len(tiers):
                lower = names[tiers[i + 1].name]
                cables = by_pair.get(f"{lower}-{names[t.name]}")
                label = f"{cables:,} cables {lower}–{names[t.name]}" if cables else ""
                for k in range(5):  # a fan of lines: links, not individual cables
                    x = PAD + (width - 2 * PAD) * (k + 0.5) / 5
                    out.append(f'<line x1="{x:.1f}" y1="{y - 2:.1f}" x2="{x:.1f}" '
                               f'y2="{y + 16:.1f}" stroke="{LINE}" stroke-width="1.5"/>')
                out.append(f'<rect x="{width / 2 - 70:.1f}" y="{y + 1:.1f}" width="140" '
                           'height="13" fill="#ffffff"/>')
                out.append(text(width / 2, y + 11, label, size=8.5, anchor="middle"))
                y += 20
        return "\n".join(out) + "\n", y + PAD
    return body


def fabric_figure(plan: Plan) -> Figure:
    tiers, links = fabric_tiers(plan)
    c = plan.fabric.compute
    title = ("Compute fabric" if c is None else
             f"Compute fabric: {c.technology}, {c.sized.tiers} tier"
             f"{'s' if c.sized.tiers != 1 else ''}, {c.link_gbps:g} Gb/s links")
    return Figure(
        id="compute-fabric", title="Compute fabric",
        svg=figure_svg("compute-fabric", title, _fabric_body(tiers, links, title)),
        caption="Switches per tier top down (one box per switch where they fit, else one "
                "box with the count), leaves and nodes grouped by scalable unit; the labels "
                "between tiers are the cables the plan counts.",
        table=fabric_table(tiers, links))


def drawings_section(plan: Plan) -> Section:
    """The plan report's drawings: the racks, the network zones and the compute fabric."""
    figures = [rack_figure(plan), zones_figure(plan), fabric_figure(plan)]
    return Section(id="drawings", title="Racks, network zones and fabric drawn",
                   figures=figures)
