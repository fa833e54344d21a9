"""The plan report's drawings (issue #45 item 6): what is drawn is what the plan counts.

Each drawing is checked twice: on the facts it is drawn from (``plan_racks``) against the
Plan's own figures, and on the SVG itself, parsed as XML, against those facts, so a drawing
that silently drops a rack or a node fails here. What these tests cannot show is how the
picture looks: tests/integration/test_report_browser.py renders the report in Chromium.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from test_plan_rack_scale import site

from aiplat.catalog import load_catalog
from aiplat.plan.build import build_plan
from aiplat.plan.models import Plan
from aiplat.report import render_html, render_markdown
from aiplat.report.document import Document, Figure, Section
from aiplat.report.drawings import (
    drawings_section,
    fabric_figure,
    fabric_tiers,
    plan_racks,
    plan_zones,
    rack_figure,
    zones_figure,
)
from aiplat.report.markdown import figure_files
from aiplat.spec import EXAMPLE, example_text, parse_platform

NS = {"s": "http://www.w3.org/2000/svg"}


def _plan(text: str = "", name: str = EXAMPLE) -> Plan:
    catalog = load_catalog()
    return build_plan(parse_platform(text or example_text(), name, catalog), catalog)


def _wide_racks(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    wide = root.find("s:g[@class='wide']", NS)
    assert wide is not None
    return [g for g in wide.iter("{http://www.w3.org/2000/svg}g")
            if "rack" in (g.get("class") or "").split()]


def _slots(rack: ET.Element) -> Counter[str]:
    return Counter((r.get("class") or "").split()[1] for r in
                   rack.iter("{http://www.w3.org/2000/svg}rect")
                   if (r.get("class") or "").startswith("slot "))


def test_the_example_racks_are_the_plans() -> None:
    plan = _plan()
    racks = plan_racks(plan)
    assert len(racks) == plan.facility.racks == 7
    for p in plan.pools:
        mine = [r for r in racks if r.name.startswith(f"{p.name}-rack-")]
        assert len(mine) == p.racks
        assert sum(r.count("node") for r in mine) == p.nodes
        assert sum(r.count("spare") for r in mine) == p.spare_nodes
        assert all(r.count("node") + r.count("spare") <= p.nodes_per_rack for r in mine)
        # power per rack: the nodes it holds at the plan's node power
        for r in mine:
            assert r.power_w == pytest.approx(
                (r.count("node") + r.count("spare")) * p.node_power_kw * 1000)
            assert r.limit_w == 30_000
    mgmt = [r for r in racks if r.kind == "management"]
    assert sum(r.count("server") for r in mgmt) == plan.roles.non_compute_nodes
    net = [r for r in racks if r.kind == "network"]
    assert len(net) == plan.fabric.racks
    c = plan.fabric.compute
    assert c is not None
    racked_switches = (c.sized.switches + plan.fabric.storage.sized.switches
                       + plan.fabric.in_band.sized.spines + plan.fabric.out_of_band.sized.spines)
    assert sum(r.count("switch") for r in net) == racked_switches
    # no rack is filled past its usable units
    assert all(max((s.u + s.height - 1 for s in r.slots), default=0) <= r.units - 4
               for r in racks)


def test_the_svg_draws_every_rack_and_slot_of_the_facts() -> None:
    plan = _plan()
    racks = plan_racks(plan)
    svg = rack_figure(plan).svg
    drawn = _wide_racks(svg)
    assert len(drawn) == len(racks)
    for g, rack in zip(drawn, racks, strict=True):
        assert _slots(g) == Counter(s.kind for s in rack.slots)
        assert rack.name in "".join(g.itertext())
    # the narrow layout draws the same racks, its ids namespaced apart
    ids = [e.get("id") or "" for e in ET.fromstring(svg).iter() if e.get("id")]
    assert len(ids) == len(set(ids))
    assert all(i.startswith("rack-elevations_") for i in ids)
    assert sum(1 for i in ids if i.startswith("rack-elevations_narrow_rack_")
               and i.count("_") == 3) == len(racks)


def test_a_gb200_site_draws_whole_nvlink_racks_and_leaves_spare_trays_on_the_shelf() -> None:
    plan = _plan(site(144 * 2), "gb200.yaml")
    pool = plan.pools[0]
    racks = [r for r in plan_racks(plan) if r.kind == "pool"]
    assert len(racks) == pool.racks == 16
    assert [r.count("node") for r in racks] == [18] * 16
    assert sum(r.count("spare") for r in racks) == 0 < pool.spare_nodes
    # a rack draws the domain's share: 132 kW against the site's 140 kW limit
    assert racks[0].power_w == pytest.approx(pool.node_power_kw * 18 * 1000)
    assert racks[0].power_w <= (racks[0].limit_w or 0)
    assert len(plan_racks(plan)) == plan.facility.racks
    # each rack: 9 NVLink switch trays between its 9 lower and 9 upper compute trays
    assert pool.rack_scale and pool.switch_trays_per_rack == 9
    for r in racks:
        kinds = [s.kind for s in sorted(r.slots, key=lambda s: s.u)]
        assert kinds == ["node"] * 9 + ["nvswitch"] * 9 + ["node"] * 9, kinds
        assert max(s.u + s.height - 1 for s in r.slots) <= r.units - 4
    drawn = _wide_racks(rack_figure(plan).svg)
    assert [_slots(g)["nvswitch"] for g in drawn[:16]] == [9] * 16


def test_racks_hold_the_plans_racked_nodes_by_one_rule_and_two_pdus_each() -> None:
    """The drawing places nodes as the plan racks them (``PoolPlan.racked_nodes``, the
    rule ``rack_of`` that the rack labels use) and draws the fabric plan's PDUs per rack."""
    from aiplat.kube.facts import pool_facts
    from aiplat.plan.resolve import resolve

    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    plan = build_plan(platform, catalog)
    facts = {f.name: f for f in pool_facts(resolve(platform, catalog))}
    racks = plan_racks(plan)
    for p in plan.pools:
        assert p.racked_nodes == p.nodes + p.spare_nodes and not p.rack_scale
        for r in (r for r in racks if r.name.startswith(f"{p.name}-rack-")):
            for s in r.slots:
                index = int(s.label.split()[0].rsplit("-", 1)[1])
                rack_label = facts[p.name].spec.topology.rack_label
                assert facts[p.name].rack_labels(index)[rack_label] == r.name, s.label
    for g in _wide_racks(rack_figure(plan).svg):
        pdus = [r for r in g.iter("{http://www.w3.org/2000/svg}rect")
                if r.get("class") == "pdu"]
        assert len(pdus) == 2


def test_hostile_names_are_escaped_and_the_svg_stays_well_formed() -> None:
    plan = _plan()
    evil = '<script>alert("x")</script>&amp;\' onload=x href=y url(z)'
    pools = [plan.pools[0].model_copy(update={"name": evil}), *plan.pools[1:]]
    hostile = plan.model_copy(update={"pools": pools, "platform": evil})
    svg = rack_figure(hostile).svg
    assert "<script" not in svg
    root = ET.fromstring(svg)  # well-formed: every text escaped
    assert f"{evil}-rack-0" in "".join(root.itertext())
    html = render_html(Document(title="t", sections=[drawings_section(hostile)]))
    assert "<script>alert" not in html


@pytest.mark.parametrize("bad", [
    '<svg x="1"><script>alert(1)</script></svg>',
    '<svg x="1"><a href="https://example.com">x</a></svg>',
    '<svg x="1"><rect onload="alert(1)"/></svg>',
    '<svg x="1"><rect fill="url(https://example.com/x)"/></svg>',
    '<svg x="1"><image xlink:href="x.png"/></svg>',
    "<div>not svg</div>",
])
def test_a_figure_refuses_svg_that_could_run_or_load_something(bad: str) -> None:
    with pytest.raises(ValueError, match="figure 'f'"):
        Figure(id="f", title="t", svg=bad)


def test_internal_references_are_allowed() -> None:
    Figure(id="f", title="t", svg='<svg x="1"><rect fill="url(#f_hatch)"/></svg>')


def test_markdown_links_each_figure_as_a_file_beside_it_and_html_inlines_it() -> None:
    plan = _plan()
    doc = Document(title="t", sections=[Section(id="s", title="S"), drawings_section(plan)])
    md = render_markdown(doc)
    assert "![Rack elevations](figures/rack-elevations.svg)" in md
    files = figure_files(doc)
    assert list(files) == [f"figures/{f}.svg" for f in ("rack-elevations", "network-zones",
                                                         "compute-fabric")]
    for path, svg in files.items():
        assert svg.startswith("<svg ")
        ET.fromstring(svg)  # a standalone SVG file
        assert f"]({path})" in md
    assert "| rack | kind | nodes |" in md  # the facts as a table under the image
    page = render_html(doc)
    assert 'id="rack-elevations_svg"' in page and 'figure class="chart drawing"' in page


def test_figure_and_chart_ids_share_one_namespace() -> None:
    fig = rack_figure(_plan())
    with pytest.raises(ValueError, match="used twice"):
        Document(title="t", sections=[Section(id="rack-elevations", title="x",
                                              figures=[fig])])


def _tier(svg: str, name: str) -> ET.Element:
    wide = ET.fromstring(svg).find("s:g[@class='wide']", NS)
    assert wide is not None
    found = wide.find(f"s:g[@class='tier tier-{name}']", NS)
    assert found is not None, name
    return found


def _switch_boxes(tier: ET.Element) -> int:
    return sum(1 for r in tier.iter("{http://www.w3.org/2000/svg}rect")
               if r.get("class") == "switch")


@pytest.mark.parametrize("trays", [144 * 2, 144 * 4])
def test_a_rail_optimised_multi_su_fabric_draws_the_plans_switches_and_cables(
        trays: int) -> None:
    plan = _plan(site(trays), "gb200.yaml")
    c = plan.fabric.compute
    assert c is not None and c.sized.scalable_units > 1
    tiers, links = fabric_tiers(plan)
    counts = {t.name: t.count for t in tiers}
    assert counts == {k: v for k, v in {"core": c.sized.cores, "spine": c.sized.spines,
                                        "leaf": c.sized.leaves, "nodes": c.sized.nodes}.items()
                      if v}
    assert [(lk.between, lk.cables) for lk in links] == [(g.between, g.cables)
                                                         for g in c.sized.cables]
    fig = fabric_figure(plan)
    for t in tiers:
        g = _tier(fig.svg, t.name)
        assert g.get("data-count") == str(t.count)
        boxes = _switch_boxes(g)
        assert boxes in (0, t.count)  # every switch drawn, or one box with the count
        if not boxes:
            assert f"{t.count // t.groups:,}" in "".join(g.itertext()) or t.name == "nodes"
    text = "".join(ET.fromstring(fig.svg).itertext())
    for lk in links:
        assert f"{lk.cables:,} cables" in text
    assert "per SU (rail-optimised)" in text


def test_the_example_fabric_is_one_switch_with_its_56_cables() -> None:
    plan = _plan()
    tiers, links = fabric_tiers(plan)
    assert [(t.name, t.count) for t in tiers] == [("leaf", 1), ("nodes", 7)]
    assert [(lk.between, lk.cables) for lk in links] == [("node-leaf", 56)]
    assert _switch_boxes(_tier(fabric_figure(plan).svg, "leaf")) == 1


def test_the_zones_are_the_role_plans_with_their_segments_and_switches() -> None:
    plan = _plan()
    zones = plan_zones(plan)
    assert [z.name for z in zones] == [z.zone.replace("_", "-") for z in plan.roles.zones] \
        + ["out-of-band"]
    for z, spec in zip(zones, plan.roles.zones, strict=False):
        assert z.members == list(spec.roles)
    mgmt = zones[0]
    assert "segment mgmt" in mgmt.facts and "10.10.0.0/24" in mgmt.facts
    assert mgmt.switches.startswith(f"{plan.fabric.in_band.sized.leaves} leaf")
    svg = zones_figure(plan).svg
    wide = ET.fromstring(svg).find("s:g[@class='wide']", NS)
    assert wide is not None
    drawn = [g for g in wide if g.get("class") == "zone"]
    assert len(drawn) == len(zones)
    for g, z in zip(drawn, zones, strict=True):
        chips = [r for r in g.iter("{http://www.w3.org/2000/svg}rect")
                 if r.get("class") == "member"]
        assert len(chips) == len(z.members)


def test_a_site_without_segments_still_draws_its_zones() -> None:
    plan = _plan(site(144), "gb200.yaml")
    assert not plan.network.segments
    zones = plan_zones(plan)
    assert "high-performance" in [z.name for z in zones]
    hp = next(z for z in zones if z.name == "high-performance")
    assert "rails" in hp.switches and "segment" not in hp.facts
