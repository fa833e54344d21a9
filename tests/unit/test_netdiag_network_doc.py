"""Network planning (issue 8 section 5): recommendations with reasons from the spec and the
sized workloads (``plan.network``)."""

from __future__ import annotations

import yaml

from aiplat.catalog import load_catalog
from aiplat.plan import build_plan
from aiplat.plan.network import NetworkAdvice
from aiplat.report import Document, render_markdown
from aiplat.report.network_doc import network_section
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform


def platform(network: dict[str, object] | None = None) -> Platform:
    doc = yaml.safe_load(example_text())
    if network is not None:
        doc["network"] = network
    return parse_platform(yaml.safe_dump(doc, sort_keys=False), EXAMPLE)


def plan_network(p: Platform) -> NetworkAdvice:
    return build_plan(p, load_catalog()).network


def advice_of(network: dict[str, object] | None = None) -> set[tuple[str, str, str]]:
    a = plan_network(platform(network))
    return {(r.severity, r.topic, r.subject) for r in a.recommendations}


def test_example_profile_and_roce_needs_a_lossless_fabric() -> None:
    a = plan_network(platform())
    # assistant-finetune is sized at 8 GPUs on an 8-GPU node: it does not span nodes.
    assert a.profile.multi_node_training == ["domain-pretrain"]
    roce = next(r for r in a.recommendations if r.topic == "rdma" and r.subject == "storage")
    assert "PFC" in roce.advice and "DCQCN" in roce.advice and "go-back-N" in roce.reason
    ib = next(r for r in a.recommendations if r.topic == "rdma" and r.subject == "hpc")
    assert "rail" in ib.advice
    # The example's storage NICs are plain Ethernet on a RoCE segment: a plan finding
    # (plan/netpath.py, tests/unit/test_plan_netpath.py), not also a recommendation.
    assert "h100/storage" not in {r.subject for r in a.recommendations}
    assert {q.segment: q.lossless for q in a.qos} == {
        "mgmt": False, "storage": True, "service": False, "hpc": True}


def test_missing_segments_small_mtu_and_duplicate_vlans() -> None:
    recs = advice_of({"segments": [
        {"name": "mgmt", "purpose": "management", "mtu": 9000, "vlan": 10},
        {"name": "data", "purpose": "storage", "mtu": 1500, "vlan": 10, "rdma": "roce"},
    ]})
    assert ("warning", "segments", "network") in recs  # no hpc for multi-node training
    assert ("info", "mtu", "mgmt") in recs
    assert ("warning", "mtu", "data") in recs and ("error", "mtu", "data") in recs
    assert ("error", "vlan", "data") in recs


def test_tcp_hpc_for_multi_node_training_is_flagged() -> None:
    recs = advice_of({"segments": [
        {"name": "mgmt", "purpose": "management"},
        {"name": "hpc", "purpose": "hpc", "mtu": 9000},
    ]})
    assert ("warning", "rdma", "hpc") in recs
    assert ("error", "segments", "network") not in recs


def test_multi_node_statement_agrees_with_the_sized_gpus() -> None:
    # Issue 16: the report said a workload trains across nodes while sizing it on one node.
    catalog = load_catalog()
    seen = set()
    for tokens in (2e8, 2e10):  # the 1-day target sizes more tokens out to more nodes
        doc = yaml.safe_load(example_text())
        ft = next(w for w in doc["workloads"] if w["name"] == "assistant-finetune")
        ft["data"]["tokens"] = tokens
        plan = build_plan(parse_platform(yaml.safe_dump(doc), EXAMPLE, catalog), catalog)
        sized = next(w for w in plan.workloads if w.name == "assistant-finetune")
        pool = next(p for p in plan.pools if p.name == sized.pool)
        spans = sized.gpus > pool.gpus_per_node
        assert ("assistant-finetune" in plan.network.profile.multi_node_training) is spans
        seen.add(spans)
    assert seen == {True, False}


def test_section_renders() -> None:
    section = network_section(plan_network(platform()))
    md = render_markdown(Document(title="t", sections=[section]))
    assert "## Network" in md and "| storage | RoCE (storage) | 26 (CNP 48) |" in md


def test_fits_into_the_plan_report_as_an_extra_section() -> None:
    from aiplat.report import render_html
    from aiplat.report.plan_doc import plan_document

    p = platform()
    doc = plan_document(build_plan(p, load_catalog()), None, [network_section(plan_network(p))])
    assert "network" in [s.id for s in doc.sections]
    assert 'id="network"' in render_html(doc)
