"""``lab up`` / ``down`` on the real host: nothing is left behind, also after a crash, and
the lab refuses subnets that overlap a host route. Root; fails (not skips) in CI."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from ipaddress import IPv4Network
from pathlib import Path

import pytest
from conftest import need

from aiplat.netdiag import lab as labio
from aiplat.netdiag.model import LabInputError, SegmentInput, plan_lab
from aiplat.netdiag.probes import net_check
from aiplat.netdiag.state import load_state, state_path
from aiplat.netdiag.testing import free_port, lab_unavailable

pytestmark = pytest.mark.integration
PREFIX = "ailc"



@pytest.fixture(autouse=True)
def lab_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    reason = lab_unavailable()
    need(reason)
    monkeypatch.setenv("AIPLAT_LAB_DIR", str(tmp_path / "labs"))
    yield
    labio.down(PREFIX)  # whatever a failing test left
    assert labio.leftovers(PREFIX) == []


def test_up_then_down_leaves_nothing_behind() -> None:
    """Also: a VLAN-tagged segment carries traffic (net check over it is clean)."""
    segs = [SegmentInput(name="mgmt", purpose="management"),
            SegmentInput(name="storage", purpose="storage", mtu=9000, vlan=20)]
    plan = plan_lab(segs, nodes=2, prefix=PREFIX, prom_port=free_port())
    result = labio.up(plan)
    try:
        assert result.state.phase == "up"
        findings, raw = net_check(PREFIX, ["storage"], throughput=False)
        assert findings == [] and len(raw["pings"]) == 3  # type: ignore[arg-type]
        vlan = subprocess.run(["ip", "-n", f"{PREFIX}-node-1", "-d", "link", "show", "storage"],
                              capture_output=True, text=True, check=True).stdout
        if labio.kernel_has_vlan(PREFIX):
            assert "vlan protocol 802.1Q id 20" in vlan
        else:  # this kernel has no 8021q: the lab says so and runs the segment untagged
            assert "802.1Q" not in vlan
            assert any("no 802.1Q support" in n for n in result.state.notes)
        found = labio.leftovers(PREFIX)
        assert {f"netns {n.ns}" for n in plan.nodes} <= set(found)
        assert {f"link {s.bridge}" for s in plan.segments} <= set(found)
        assert sum(1 for f in found if f.startswith("process")) == 2 * len(plan.nodes) + 2
        st = labio.status(PREFIX)
        assert st is not None
        assert all(p["alive"] for p in st["processes"])  # type: ignore[attr-defined]
        assert len(result.state.baseline) == 2
        assert all(b.mbit > 100 for b in result.state.baseline)
    finally:
        removed = labio.down(PREFIX).removed
    assert labio.leftovers(PREFIX) == []
    assert any(r.startswith("netns") for r in removed)
    assert labio.down(PREFIX).removed == []  # idempotent


def test_down_after_a_crash_in_the_middle_of_up(tmp_path: Path) -> None:
    """Kill ``lab up`` (SIGKILL, no cleanup) once it has created part of the lab: the state
    file it wrote before each object lets ``down`` remove exactly that."""
    code = ("import sys; from aiplat.netdiag import lab; from aiplat.netdiag.model import "
            f"plan_lab; lab.up(plan_lab(nodes=3, prefix={PREFIX!r}, prom_port={free_port()}))")
    proc = subprocess.Popen([sys.executable, "-c", code], env=os.environ.copy(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                created = json.loads(state_path(PREFIX).read_text())["created"]
            except (OSError, ValueError):
                created = []
            if len(created) >= 6:
                break
            time.sleep(0.005)
        else:
            pytest.fail("lab up never got six objects in")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    state = load_state(PREFIX)
    assert state is not None and state.phase == "starting"
    assert labio.leftovers(PREFIX) != []
    labio.down(PREFIX)
    assert labio.leftovers(PREFIX) == []


def test_refuses_a_subnet_that_overlaps_a_host_route() -> None:
    """A bridge of our own with an address makes a host route; a lab on that subnet
    must refuse to start and create nothing."""
    dummy = f"{PREFIX}-rt"
    subprocess.run(["ip", "link", "add", dummy, "type", "bridge"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", "10.246.9.1/24", "dev", dummy], check=True)
        subprocess.run(["ip", "link", "set", dummy, "up"], check=True)
        segs = [SegmentInput(name="mgmt", purpose="management",
                             cidr=IPv4Network("10.246.9.0/24"))]
        with pytest.raises(LabInputError, match=r"overlaps host route 10\.246\.9\.0/24"):
            labio.up(plan_lab(segs, nodes=1, prefix=PREFIX))
        assert load_state(PREFIX) is None
    finally:
        subprocess.run(["ip", "link", "del", dummy], check=False)
    assert labio.leftovers(PREFIX) == []


def test_refuses_a_prometheus_port_in_use() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(LabInputError, match=f"127.0.0.1:{port} is in use"):
            labio.up(plan_lab(nodes=1, prefix=PREFIX, prom_port=port))
    assert load_state(PREFIX) is None
