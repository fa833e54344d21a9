"""The plan as a report document: summary, findings, workloads, pools, facility, reserve,
roles and zones, deployment model, assumptions.

Only capabilities that exist get a section; later capabilities (Kubernetes manifests,
simulation, acceptance) add theirs here when they land, never as placeholders.

The page says when and from what it was made: the caller passes the date (this module stays
pure: no clock) and the spec's path and text, whose sha256 prefix identifies the spec.
Repeated findings (the same message for several subjects) are grouped into one row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date
from typing import Any

from aiplat.findings import Finding, counts, ordered
from aiplat.findings import table as findings_table
from aiplat.kube.pipeline import KubeCheck
from aiplat.plan.bom import BillOfMaterials
from aiplat.plan.format import bytes_h, count_h, kw_h
from aiplat.plan.models import Plan
from aiplat.report.document import (
    Chart,
    Document,
    KeyFigure,
    Rich,
    Section,
    Series,
    Source,
    Table,
)
from aiplat.report.drawings import drawings_section
from aiplat.report.grouping import group_repeats
from aiplat.report.kube_doc import kube_section
from aiplat.report.prose import prose, words

OPEN_SECTIONS = frozenset({"findings", "bill-of-materials"})
MEMORY_PARTS = ("weights", "adapters", "gradients", "optimizer", "activations", "kv cache",
                "overhead")


def plan_document(
    plan: Plan, kube: KubeCheck | None = None, extra: Iterable[Section] = (), *,
    generated: date | None = None, spec_path: str = "platform.yaml",
    spec_text: str | None = None, findings: Sequence[Finding] | None = None,
) -> Document:
    """The plan's report; ``extra`` holds sections other capabilities computed from the spec.

    ``generated`` (the day of the run) and ``spec_text`` (the spec as read from
    ``spec_path``) put the date and the spec's digest on the page; without them it shows
    neither, and the same plan renders to the same bytes on any day. ``findings`` is the run's
    one list (the plan's and the tree's, see ``PlanOutputs.findings``); by default the plan's.
    """
    found = list(plan.all_findings if findings is None else findings)
    sections = [
        _findings(found),
        _bom(plan),
        _workloads(plan),
        _workload_details(plan),
        _pools(plan),
        _facility(plan),
        drawings_section(plan),
        _reserve(plan),
        _roles(plan),
        _deployment(plan),
    ]
    if kube is not None:
        sections.append(kube_section(kube))
    sections.extend(extra)
    sections.append(_assumptions(plan))
    # The summary, the findings and the bill are the page a manager reads; the engineers'
    # sections fold under their titles (open on a tap; printed whole).
    sections = [x if x.id in OPEN_SECTIONS else x.model_copy(update={"collapsed": True})
                for x in sections]
    return Document(
        title=f"Platform plan: {plan.platform}",
        subtitle=f"{plan.description} — aiplat {plan.aiplat_version}, "
                 f"Kubernetes {plan.kubernetes_version}",
        summary=_summary(plan, found),
        sections=sections,
        generated=generated,
        source=Source.of(spec_path, spec_text) if spec_text is not None else None,
    )


def _summary(plan: Plan, findings: Sequence[Finding]) -> list[KeyFigure]:
    """One screen: what to buy, what it costs to buy and to run, what is at risk."""
    f = plan.facility
    bom = plan.bom
    gpus = sum(p.gpus for p in plan.pools)
    spares = sum(p.spare_nodes for p in plan.pools)
    gpn = {p.name: p.gpus // p.nodes for p in plan.pools if p.nodes}
    spare_gpus = sum(p.spare_nodes * gpn.get(p.name, 0) for p in plan.pools)
    n = counts(findings)
    at_risk = [x for x in ordered(findings) if x.severity != "info"]
    fab = plan.fabric
    cables = sum(g.cables for g in fab.compute.sized.cables) if fab.compute else 0
    storage = next((ln for ln in bom.lines if ln.category == "storage"), None)
    return [
        KeyFigure(label="GPUs to buy", value=str(gpus + spare_gpus),
                  detail=", ".join(f"{p.gpus} × {p.gpu_model}" for p in plan.pools if p.gpus)
                  + (f", + {spare_gpus} in spare nodes" if spare_gpus else "")),
        KeyFigure(label="Nodes", value=str(sum(p.nodes for p in plan.pools) + spares
                                           + plan.roles.non_compute_nodes),
                  detail=f"{sum(p.nodes for p in plan.pools)} GPU + {spares} spare + "
                         f"{plan.roles.non_compute_nodes} non-compute"),
        KeyFigure(label="Racks", value=str(f.racks),
                  detail=f"{fab.racks} for the network; IT power {f.it_power_kw:,.1f} of "
                         f"{f.power_budget_kw:g} kW"),
        KeyFigure(label="Network", value=f"{fab.switches} switches",
                  detail=f"{cables:,} compute cables, "
                         f"{fab.compute.sized.transceivers if fab.compute else 0:,} "
                         "transceivers" if fab.compute else "no compute fabric"),
        KeyFigure(label="Shared storage",
                  value=f"{storage.quantity:,.0f} TB" if storage else "none in the spec",
                  detail=storage.detail if storage else "local NVMe only"),
        KeyFigure(label="Purchase (capex)", value=_capex(bom),
                  detail=_priced(bom)),
        KeyFigure(label="Running cost per month", value=_money(bom.opex_per_month, bom.currency),
                  detail="; ".join(f"{c.item} " + (_money(c.per_month, bom.currency)
                                                   if c.per_month is not None else "not priced")
                                   for c in bom.running)),
        KeyFigure(label="At risk", value=f"{n['error']} errors, {n['warning']} warnings",
                  detail="; ".join(dict.fromkeys(x.subject or x.source for x in at_risk))
                  or "nothing to act on"),
        KeyFigure(label="Deployment model", value=words(plan.deployment.recommendation)),
    ]


def _money(value: float, currency: str) -> str:
    return f"{value:,.0f} {currency}"


def _capex(bom: BillOfMaterials) -> str:
    if bom.lines and len(bom.unpriced) == len(bom.lines):
        return "no price given"
    return _money(bom.capex, bom.currency) + (" + unpriced parts" if bom.unpriced else "")


def _priced(bom: BillOfMaterials) -> str:
    """What the purchase total covers, and where its prices come from."""
    where = f"prices: {bom.price_source}" if bom.price_source else "prices from the spec"
    if not bom.unpriced:
        return f"every part priced; {where}"
    if len(bom.unpriced) == len(bom.lines):
        return "set pools[].node.price and site.prices in the spec to cost the parts"
    return f"no price given for {', '.join(bom.unpriced)}; {where}"


def _bom(plan: Plan) -> Section:
    bom = plan.bom
    cur = bom.currency
    rows: list[list[Rich]] = [
        [ln.item, ln.amount,
         _money(ln.unit_price, cur) if ln.unit_price is not None else "no price given",
         _money(t, cur) if (t := ln.total) is not None else "no price given", ln.detail]
        for ln in bom.lines]
    rows.append(["purchase total", "", "", _capex(bom), _priced(bom)])
    running: list[list[Rich]] = [
        [c.item, _money(c.per_month, cur) if c.per_month is not None else "not priced",
         c.basis] for c in bom.running]
    running.append(["running total", _money(bom.opex_per_month, cur),
                    "the priced items above"])
    return Section(
        id="bill-of-materials", title="Bill of materials",
        paragraphs=["What the plan buys, spares included, and what it costs to buy and to run. "
                    + (f"Prices: {bom.price_source}." if bom.price_source else
                       "Prices come from the spec (pools[].node.price, site.prices); a part "
                       "without one says so and is left out of the totals.")],
        tables=[Table(title="To buy", columns=["part", "quantity", "unit price", "total",
                                               "detail"],
                      rows=rows, align=["left", "right", "right", "right", "left"]),
                Table(title="To run, per month", columns=["cost", "per month", "basis"],
                      rows=running, align=["left", "right", "left"])],
    )


def _findings(findings: Sequence[Finding]) -> Section:
    columns, rows = findings_table(findings)
    return Section(
        id="findings", title="Findings",
        paragraphs=["Nothing to act on."] if not rows else
        ["Errors make the plan infeasible as specified; warnings need a decision."],
        tables=[group_repeats(Table(columns=columns, rows=rows), ["subject"],
                              count_after="severity")]
        if rows else [],
    )


def _workloads(plan: Plan) -> Section:
    ws = plan.workloads
    rows = [[w.name, w.kind, w.tenant, w.pool, w.model, str(w.gpus),
             f"{w.run_hours:,.1f} h" if w.run_hours is not None else "always on",
             f"{w.gpu_hours_per_month:,.0f}",
             f"{bytes_h(sum(w.memory_per_gpu_bytes.values()))} / {bytes_h(w.gpu_memory_bytes)}",
             f"{w.goodput:.0%}" if w.goodput is not None else "—",
             f"{w.cost_per_run:,.0f}" if w.cost_per_run is not None else "—",
             f"{w.cost_per_million_tokens:.3g}" if w.cost_per_million_tokens is not None
             else "—"]
            for w in ws]
    charts = []
    tables = [Table(columns=["workload", "kind", "tenant", "pool", "model", "GPUs", "run",
                             "GPU-h / month", "memory per GPU", "goodput",
                             "cost / run (serving: month)", "cost / M tokens"], rows=rows,
                    align=["left"] * 5 + ["right"] * 7)]
    if ws:
        names = [w.name for w in ws]
        charts.append(Chart(
            id="gpu-demand", title="GPU demand by workload", unit="GPUs", categories=names,
            series=[Series(name="GPUs while running", values=[float(w.gpus) for w in ws]),
                    Series(name="average over a month",
                           values=[w.gpu_hours_per_month / 730 for w in ws])]))
        parts = [p for p in MEMORY_PARTS if any(p in w.memory_per_gpu_bytes for w in ws)]
        charts.append(Chart(
            id="memory-breakdown", title="Memory per GPU by workload", unit="GB",
            categories=names, kind="stacked-hbar",
            series=[Series(name=p, values=[w.memory_per_gpu_bytes.get(p, 0.0) / 1e9
                                           for w in ws]) for p in parts]))
    return Section(
        id="workloads", title="Workloads",
        paragraphs=["Each workload is sized on its pool: GPUs from its target time or latency "
                    "SLO, memory per GPU at the chosen parallelism, and its monthly GPU-hours. "
                    "Every figure's formula and inputs are in plan.json under results."],
        tables=tables, charts=charts,
    )


def _workload_details(plan: Plan) -> Section:
    return Section(
        id="workload-details", title="Workload details",
        tables=[Table(title=f"{w.name}: {w.kind}, {w.model} on {w.gpu_model}",
                      columns=["figure", "value"],
                      rows=[[k, v] for k, v in w.key_figures.items()]) for w in plan.workloads],
    )


def _pools(plan: Plan) -> Section:
    rows = [[p.name, p.gpu_model or "CPU", str(p.nodes) + (" (max)" if p.autoscaling else ""),
             str(p.gpus), str(p.peak_demand_gpus), f"{p.average_demand_gpus:.1f}",
             f"{p.quota_gpus:g}", str(p.spare_nodes), f"{p.node_power_kw:.1f}",
             f"{p.pool_power_kw:.1f}", str(p.nodes_per_rack), str(p.racks)] for p in plan.pools]
    mgmt_kw = plan.facility.results["management_power_w"]["value"] / 1000
    return Section(
        id="pools", title="Pools",
        paragraphs=["Peak demand assumes every workload of the pool runs at once; average "
                    "demand spreads the monthly GPU-hours over 730 h. Quota is the sum of the "
                    "tenants' nominal quotas (Kueue ClusterQueues)."],
        tables=[Table(columns=["pool", "GPU", "nodes", "GPUs", "peak demand", "avg demand",
                               "quota", "spares", "kW/node", "kW", "nodes/rack", "racks"],
                      rows=rows, align=["left", "left"] + ["right"] * 10)],
        charts=[Chart(id="power-by-pool", title="IT power by pool", unit="kW",
                      categories=[p.name for p in plan.pools] + ["non-compute"],
                      series=[Series(name="IT power",
                                     values=[p.pool_power_kw for p in plan.pools] + [mgmt_kw])])],
    )


def _facility(plan: Plan) -> Section:
    f = plan.facility
    fac = f.results["facility"]
    cool = f.results["cooling"]
    rows = [
        ["IT power", kw_h(f.it_power_kw * 1000)],
        ["facility power (PUE)", f"{kw_h(f.facility_power_kw * 1000)} "
                                 f"(PUE {fac['inputs']['pue']})"],
        ["power budget", f"{f.power_budget_kw:g} kW — {'fits' if f.fits_budget else 'EXCEEDED'}"],
        ["cooling load", f"{f.cooling_kw:,.1f} kW = {f.cooling_btu_per_hour:,.0f} BTU/h = "
                         f"{cool['cooling_tons']:.1f} tons"],
        ["racks", str(f.racks)],
        ["energy cost at full load", f"{f.energy_cost_per_month:,.0f} {f.currency} / month"],
    ]
    return Section(id="facility", title="Power, cooling and racks",
                   tables=[Table(columns=["figure", "value"], rows=rows), _fabric_table(plan)],
                   notes=_notes([f.results]) + [prose(a) for a in plan.fabric.assumptions])


def _fabric_table(plan: Plan) -> Table:
    """The fabrics sized: switches per tier, ports, cables and transceivers, power."""
    fab = plan.fabric
    rows: list[list[str]] = []
    c = fab.compute
    if c is not None:
        f = c.sized
        tiers = f"{f.leaves} leaf, {f.spines} spine, {f.cores} core" if f.tiers > 1 else "1"
        ufm = f" + {c.ufm_appliances} UFM" if c.ufm_appliances else ""
        rows.append([f"compute ({c.technology}, {f.rails} rails, {f.tiers} tier"
                     f"{'s' if f.tiers > 1 else ''})", tiers + ufm,
                     f"{f.ports_used:,} / {f.ports_spare:,}",
                     ", ".join(f"{g.between} {g.cables:,}" for g in f.cables),
                     f"{f.transceivers:,}", kw_h(c.power_w)])
    for e in (fab.storage, fab.in_band, fab.out_of_band):
        x = e.sized
        if not x.switches:
            continue
        rows.append([e.name, f"{x.leaves} leaf, {x.spines} spine",
                     f"{x.ports_needed:,} / {x.ports_spare:,}", f"uplinks {x.uplinks:,}", "",
                     kw_h(e.power_w)])
    rows.append(["all fabrics", f"{fab.switches} switches, {fab.rack_units} U in "
                 f"{fab.racks} network rack{'' if fab.racks == 1 else 's'}", "", "", "",
                 kw_h(fab.power_w)])
    return Table(title="Network fabrics", columns=["fabric", "switches", "ports used / spare",
                                                  "cables", "transceivers", "power"],
                 rows=rows, align=["left", "left", "right", "left", "right", "right"])


def _reserve(plan: Plan) -> Section:
    rows = []
    for p in plan.pools:
        r = p.results["reserve"]
        rows.append([p.name, str(p.nodes), f"{r['expected_failures_per_year']:.2f}",
                     f"{r['expected_failures_in_lead_time']:.3f}", str(r["spare_nodes"]),
                     f"{r['probability_enough_spares']:.4f}", f"{r['reserve_share']:.1%}"])
    return Section(
        id="reserve", title="Reserve",
        paragraphs=["Spares cover the failures expected during the replacement lead time "
                    "(Poisson) with the target probability."],
        tables=[Table(columns=["pool", "nodes", "failures / year", "failures in lead time",
                               "spares", "P(enough spares)", "reserve share"], rows=rows,
                      align=["left"] + ["right"] * 6)],
    )


def _roles(plan: Plan) -> Section:
    return Section(
        id="roles", title="Node roles and network zones",
        tables=[
            Table(columns=["role", "nodes", "CPU cores", "memory GiB", "disk", "zones", "why"],
                  rows=[[r.role, str(r.nodes), _opt(r.cpu_cores), _opt(r.memory_gib),
                         bytes_h(r.disk_bytes) if r.disk_bytes else "—",
                         words(", ".join(r.zones)), prose(r.reason)] for r in plan.roles.roles]),
            Table(columns=["zone", "MTU", "RDMA", "roles", "guidance"],
                  rows=[[words(z.zone), str(z.mtu_bytes), "yes" if z.rdma else "no",
                         ", ".join(z.roles), prose(z.guidance)] for z in plan.roles.zones]),
        ],
        notes=[prose(n) for n in plan.roles.notes],
    )


def _deployment(plan: Plan) -> Section:
    d = plan.deployment
    criteria = [c.criterion for c in d.criteria]
    rows = []
    for opt in d.options:
        scores = {s.criterion: s for s in opt.scores}
        total = "ruled out" if opt.disqualified else f"{opt.weighted_score:.2f}"
        rows.append([words(opt.option), *(f"{scores[c].score:g}" for c in criteria), total])
    reasons: list[list[Rich]] = [[words(c.criterion), f"{c.effective_weight:.3f}", prose(c.reason)]
                                 for c in d.criteria]
    return Section(
        id="deployment", title=f"Deployment model: {words(d.recommendation)}",
        paragraphs=[prose(r) for r in d.reasons],
        tables=[Table(title="Scores (0-5)", columns=["option", *map(words, criteria), "weighted"],
                      rows=rows),
                Table(title="Weights", columns=["criterion", "weight", "why"], rows=reasons)],
    )


def _assumptions(plan: Plan) -> Section:
    sources: list[dict[str, Any]] = [w.results for w in plan.workloads]
    sources += [p.results for p in plan.pools]
    return Section(id="assumptions", title="Assumptions",
                   paragraphs=["Stated by the sizing formulas; override them in the spec or "
                               "measure them."],
                   notes=_notes(sources))


def _notes(results: Iterable[dict[str, Any]]) -> list[Rich]:
    seen: dict[str, None] = {}
    for group in results:
        for r in group.values():
            for n in r.get("notes", []) if isinstance(r, dict) else []:
                seen.setdefault(n, None)
    return [prose(n) for n in seen]


def _opt(v: object) -> str:
    return "—" if v is None else count_h(float(v))  # type: ignore[arg-type]
