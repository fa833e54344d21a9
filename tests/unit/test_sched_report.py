"""simulate_platform on the example, and the report sections built from it."""

from __future__ import annotations

from aiplat.catalog import load_catalog
from aiplat.ops.sim_month import tree_queues
from aiplat.plan import build_plan
from aiplat.report import Document, render_html, render_markdown
from aiplat.report.sim_doc import sim_sections
from aiplat.sched.kueue import GPU, sim_units
from aiplat.sched.platform import simulate_platform
from aiplat.spec import EXAMPLE, example_text, parse_platform


def _example():  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    return platform, build_plan(platform, catalog)


def test_simulate_platform_uses_the_spec_names_and_is_reproducible() -> None:
    platform, plan = _example()
    a = simulate_platform(platform, plan, seed=1, queues=tree_queues(platform))
    b = simulate_platform(platform, plan, seed=1, queues=tree_queues(platform))
    assert a == b
    assert [t.name for t in a.tenants] == [t.name for t in platform.tenants]
    assert {r.flavor for r in a.records if r.flavor} <= {p.name for p in platform.pools}
    assert a.never_fit == 0
    # weights become fair-sharing weights
    assert {t.name: t.weight for t in a.tenants} == {"research": 2.0, "serving": 1.0,
                                                     "batch": 0.5}


def test_tree_queues_mirror_tenant_quotas() -> None:
    platform, _ = _example()
    cfg = tree_queues(platform)
    research = cfg.snapshot.cluster_queues["research"]
    h100 = next(f for g in research.groups for f in g.flavors if f.flavor == "h100")
    quota = h100.resources["nvidia.com/gpu"]
    tenant = platform.tenant("research")
    assert tenant is not None and quota.borrowing_limit is not None
    spec = tenant.quota["h100"]
    assert (sim_units(GPU, quota.nominal), sim_units(GPU, quota.borrowing_limit)) == (
        spec.gpus, spec.borrowing_limit)
    assert research.weight == tenant.weight


def test_sections_render_in_markdown_and_html() -> None:
    platform, plan = _example()
    result = simulate_platform(platform, plan, seed=0, queues=tree_queues(platform))
    sections = sim_sections(result, subject=platform.metadata.name)
    doc = Document(title="sim", sections=sections)
    md = render_markdown(doc)
    assert "Simulated queues" in md and "research" in md
    html = render_html(doc)
    assert 'id="sim-waits"' in html or "sim-waits" in html
    assert len(doc.all_charts()) == 3
