"""Per-tenant timelines of the simulated month, per pool (issue #45 item 6).

The timelines are drawn from the simulator's job records (when each job ran, where, with
how many GPUs, when it was preempted); these tests hold the drawn facts to the simulator's
own totals (GPU-hours per tenant, preemptions), and the SVG to those facts.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date

import pytest
from sched_helpers import cq, job, nodes
from test_plan_rack_scale import CATALOG_NODE, LOOSE_TRAYS, site

from aiplat.catalog import load_catalog
from aiplat.ops.plan_outputs import PlanOutputs, plan_outputs
from aiplat.report import render_html
from aiplat.report.document import Document, Section
from aiplat.report.timelines import BUCKETS, pool_timelines, timelines_figure
from aiplat.sched import queues, simulate
from aiplat.sched.kueue import Preemption
from aiplat.spec import EXAMPLE, example_text, parse_platform

SVG = "{http://www.w3.org/2000/svg}"


def _wide(svg: str) -> ET.Element:
    wide = ET.fromstring(svg).find(f"{SVG}g[@class='wide']")
    assert wide is not None
    return wide


def _month(text: str, name: str) -> PlanOutputs:
    catalog = load_catalog()
    return plan_outputs(parse_platform(text, name, catalog), catalog, today=date(2026, 1, 1))


def test_the_example_months_timelines_hold_each_tenants_gpu_hours() -> None:
    sim = _month(example_text(), EXAMPLE).sim
    pools = pool_timelines(sim)
    assert {"h100", "l40s"} <= {p.pool for p in pools}
    width_h = max(p.end_s for p in pools) / BUCKETS / 3600
    for t in sim.tenants:
        lines = [line for p in pools for line in p.tenants if line.tenant == t.name]
        assert sum(line.gpu_hours for line in lines) == pytest.approx(t.gpu_hours, rel=1e-6)
        # the areas drawn hold the same GPU-hours (bucket means x bucket length)
        assert sum(sum(line.gpus) for line in lines) * width_h == pytest.approx(
            t.gpu_hours, rel=1e-6)
    # batch waits on l40s (the README's 8 h p95 wait): its waiting line is drawn
    l40s = next(p for p in pools if p.pool == "l40s")
    assert max(next(t for t in l40s.tenants if t.tenant == "batch").waiting) > 0
    wide = _wide(timelines_figure(sim).svg)
    panels = [g for g in wide if g.get("class") == "pool-timeline"]
    assert len(panels) == len(pools)


def test_preemptions_are_marked_where_they_happened_and_the_victim_waits_again() -> None:
    pre = Preemption(within_cluster_queue="LowerPriority")
    cfg = queues((cq("a", 4, cohort=None, preemption=pre),))
    jobs = [job("low", "a", 4, prio=0, dur=1000), job("high", "a", 4, submit=10, prio=100)]
    r = simulate(nodes(), jobs, cfg)
    assert r.preemptions == 1
    low = next(x for x in r.records if x.name == "low")
    assert len(low.spans) == 2 and len(low.preempted_at) == 1
    assert low.spans[0][1] == low.preempted_at[0] <= low.spans[1][0]
    (pool,) = pool_timelines(r)
    (line,) = pool.tenants
    assert line.preemptions == list(low.preempted_at)
    assert line.gpu_hours == pytest.approx(r.tenant("a").gpu_hours)
    marks = [e for e in _wide(timelines_figure(r).svg).iter(f"{SVG}path")
             if e.get("class") == "preemption"]
    assert len(marks) == 1


def test_hostile_tenant_names_are_escaped() -> None:
    evil = '<script>alert(1)</script>&" onload=x'
    r = simulate(nodes(), [job("j", evil, 4, dur=100)], queues((cq(evil, 8, cohort=None),)))
    fig = timelines_figure(r)
    assert "<script" not in fig.svg
    assert evil in "".join(ET.fromstring(fig.svg).itertext())
    page = render_html(Document(title="t", sections=[Section(id="s", title="s",
                                                             figures=[fig])]))
    assert "<script>alert" not in page


@pytest.mark.parametrize("node", [CATALOG_NODE, LOOSE_TRAYS])
def test_a_gb200_pretraining_month_is_not_zero(node: str) -> None:
    """The defect once seen: 0 % utilisation for a 30-day job on a GB200 NVL72 site (fixed
    in the engine: a run cut at its horizon counts the work running at the cut)."""
    out = _month(site(144, node), "gb200.yaml")
    assert out.sim.utilisation > 0.1
    (pool,) = [p for p in pool_timelines(out.sim) if p.pool == "gb200"]
    assert sum(t.gpu_hours for t in pool.tenants) == pytest.approx(
        out.sim.allocated_gpu_hours, rel=1e-6)
