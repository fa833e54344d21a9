"""Each fault kind, injected into one shared real lab, is detected and localised to the right
node and segment by ``net check`` or ``diagnose`` (real Prometheus, node-exporter,
docker-registry, iperf3); the clean lab gives no finding. Root; fails (not skips) in CI."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import need

from aiplat.netdiag import lab as labio
from aiplat.netdiag.diagnose import diagnose_lab
from aiplat.netdiag.faults import plan_fault
from aiplat.netdiag.model import plan_lab
from aiplat.netdiag.probes import net_check
from aiplat.netdiag.state import LabState
from aiplat.netdiag.testing import free_port, lab_unavailable, running_lab

pytestmark = pytest.mark.integration
PREFIX = "aift"



@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabState]:
    reason = lab_unavailable()
    need(reason)
    mp = pytest.MonkeyPatch()
    mp.setenv("AIPLAT_LAB_DIR", str(tmp_path_factory.mktemp("labs")))
    try:
        with running_lab(plan_lab(nodes=3, prefix=PREFIX, prom_port=free_port())) as state:
            yield state
        assert labio.leftovers(PREFIX) == []
    finally:
        mp.undo()


@pytest.fixture
def clean(lab: LabState) -> Iterator[LabState]:
    """Every test starts and ends without active faults."""
    yield lab
    labio.clear_faults(PREFIX)


def test_clean_lab_gives_no_finding(clean: LabState) -> None:
    findings, raw = net_check(PREFIX)
    assert findings == [], findings
    assert raw["pings"] and raw["throughput"] and raw["path_mtu"]
    d = diagnose_lab(PREFIX)
    assert d.causes == [], d.causes
    assert len(d.pulls) == 3 and not any(w.slow for w in d.pulls)


@pytest.mark.parametrize(("kind", "node", "segment"), [
    ("loss", "node-2", "storage"),
    ("rate", "node-3", "hpc"),
    ("mtu", "node-1", "storage"),
    ("asym", "node-2", "storage"),
    ("down", "node-3", "service"),
])
def test_net_check_localises(clean: LabState, kind: str, node: str, segment: str) -> None:
    labio.add_fault(PREFIX, plan_fault(clean.plan, kind, node, segment))
    findings, _ = net_check(PREFIX)
    assert findings, f"{kind} on {node}/{segment} not detected"
    top = findings[0]
    assert (top.kind, top.node, top.segment) == (kind, node, segment), findings
    # Nothing else is blamed on another node.
    assert {(f.node, f.segment) for f in findings} == {(node, segment)}, findings


@pytest.mark.parametrize(("kind", "node", "segment"), [
    ("slow-storage", "store", "storage"),
    ("rate", "node-2", "storage"),
    ("noisy", "node-3", "storage"),
    ("loss", "node-1", "storage"),
    ("down", "node-2", "hpc"),
    ("mtu", "node-3", "hpc"),
])
def test_diagnose_ranks_the_cause_first(clean: LabState, kind: str, node: str,
                                        segment: str) -> None:
    labio.add_fault(PREFIX, plan_fault(clean.plan, kind, node, segment, seconds=40))
    if kind == "noisy":
        time.sleep(1.0)  # the flood is running before the pulls start
    d = diagnose_lab(PREFIX)
    assert d.causes, f"{kind} on {node}/{segment} not diagnosed"
    top = d.causes[0]
    if kind == "loss" and (top.kind, top.node) == ("rate", node):
        # Known weak spot (seen once in ~4 CI runs before the classifier also counted
        # retransmissions against the store's traffic on the pull's segment): a lossy pull
        # stalled in TCP timeouts showed 1.1 % retransmitted, read as a rate cap. Not
        # reproduced since (5 of 5 lossy pulls: 7-20 % on the segment); until it has been
        # seen to be gone, the test measures again once, as an operator would.
        d = diagnose_lab(PREFIX)
        top = d.causes[0] if d.causes else top
    assert (top.kind, top.node, top.segment) == (kind, node, segment), d.causes
    assert top.evidence


def test_light_loss_that_net_check_flags_is_diagnosed_too(clean: LabState) -> None:
    """Issue 22: at 5 % loss the pulls slow 1.1-1.8x only, and diagnose said "no finding"
    while net check's pings flagged the loss; the store's TCP counters around each pull
    now show it (0 retransmissions clean, 3-7 % at 5 % loss)."""
    labio.add_fault(PREFIX, plan_fault(clean.plan, "loss", "node-2", "storage", value=5))
    # 50 pings at 5 % loss lose none with probability 0.95**50 (8 %): the premise is that
    # net check flags it, so a run that saw no loss is repeated (at most 3 times).
    findings: list = []
    for _ in range(3):
        findings, _ = net_check(PREFIX)
        if findings:
            break
    assert [(f.kind, f.segment) for f in findings][:1] == [("loss", "storage")], findings
    assert findings[0].node in ("node-2", None), findings  # 50 pings may not single it out
    d = diagnose_lab(PREFIX)
    assert d.causes, "5 % loss on node-2/storage not diagnosed"
    assert (d.causes[0].kind, d.causes[0].node, d.causes[0].segment) == (
        "loss", "node-2", "storage"), d.causes
    assert "retransmitted" in d.causes[0].evidence[0]


def test_fault_clear_restores_a_healthy_lab(clean: LabState) -> None:
    labio.add_fault(PREFIX, plan_fault(clean.plan, "slow-storage"))
    labio.add_fault(PREFIX, plan_fault(clean.plan, "noisy", "node-1", "storage", seconds=30))
    state = labio.require_up(PREFIX)
    assert {f.id for f in state.faults} == {"slow-storage@store/storage",
                                            "noisy@node-1/storage"}
    flood = next(p for p in state.procs if p.fault)
    assert Path(f"/proc/{flood.pid}").exists()
    assert sorted(labio.clear_faults(PREFIX)) == ["noisy@node-1/storage",
                                                  "slow-storage@store/storage"]
    assert not labio.require_up(PREFIX).faults
    d = diagnose_lab(PREFIX)
    assert d.causes == [], d.causes


def test_diagnose_against_any_prometheus_reports_interface_facts(clean: LabState) -> None:
    """Without the lab's pull symptom (``--prometheus URL`` mode): a link without carrier."""
    from aiplat.netdiag.diagnose import diagnose_prometheus

    labio.add_fault(PREFIX, plan_fault(clean.plan, "down", "node-2", "hpc"))
    mgmt = clean.plan.node("node-2").addrs[clean.plan.management.name]
    deadline = time.monotonic() + 10
    while True:
        d = diagnose_prometheus(clean.plan.prom_url, 60)
        hits = [c for c in d.causes if c.kind == "down"]
        if hits or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert [(c.node, c.segment) for c in hits] == [(f"{mgmt}:9100", "hpc")], d.causes
