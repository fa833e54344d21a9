"""Storage guidance for models: cache size per node, cold-start bounds, tier table."""

from __future__ import annotations

import pytest

from aiplat.catalog import load_catalog
from aiplat.catalog.models import Catalog
from aiplat.plan import build_plan
from aiplat.plan.storage import HEADROOM, ROLLOUT_COPIES, StorageGuidance
from aiplat.report import render_markdown
from aiplat.report.artifacts_doc import storage_section
from aiplat.report.document import Document
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform

Example = tuple[Platform, Catalog]


def storage_guidance(platform: Platform, catalog: Catalog) -> StorageGuidance:
    return build_plan(platform, catalog).storage


@pytest.fixture(scope="module")
def example() -> Example:
    catalog = load_catalog()
    return parse_platform(example_text(), EXAMPLE, catalog), catalog


def test_cache_size_is_distinct_models_times_rollout_and_headroom(example: Example) -> None:
    platform, catalog = example
    g = storage_guidance(platform, catalog)
    assert g.pools, "the example runs models on GPU pools"
    for p in g.pools:
        assert p.cache_bytes == pytest.approx(sum(m.bytes for m in p.models)
                                              * ROLLOUT_COPIES * HEADROOM)
        # Distinct models only: the same model twice in a pool is cached once.
        assert len({m.name for m in p.models}) == len(p.models)
    big = next(p for p in g.pools if any("70b" in m.name for m in p.models))
    weights = next(m.bytes for m in big.models if "70b" in m.name)
    assert 130e9 < weights < 150e9  # ~70.6e9 parameters in bf16
    assert big.cold_start_s == pytest.approx(weights / (big.storage_gbps * 1e9 / 8))


def test_findings_when_nodes_lack_nvme_and_store_rate_bounds_the_burst(example: Example) -> None:
    platform, catalog = example
    pools = [p.model_copy(update={"node": p.node.model_copy(update={"nvme": None})})
             for p in platform.pools]
    classes = [c.model_copy(update={"read_gbps": 10.0}) if c.tier == "object" else c
               for c in platform.storage.classes]
    changed = platform.model_copy(update={
        "pools": pools, "storage": platform.storage.model_copy(update={"classes": classes})})
    g = storage_guidance(changed, catalog)
    assert any("no local NVMe" in f.message for f in g.findings)
    p = g.pools[0]
    assert p.burst_start_s is not None
    assert p.burst_start_s >= p.nodes * p.models[0].bytes / 10e9 - 1e-6


def test_section_renders_with_tiers_and_points_to_kubernetes(example: Example) -> None:
    platform, catalog = example
    section = storage_section(storage_guidance(platform, catalog))
    md = render_markdown(Document(title="t", sections=[section]))
    assert "Model cache per node" in md and "local-nvme" in md and "model-store" in md
    assert any("prefetch DaemonSet" in n for n in section.notes)
