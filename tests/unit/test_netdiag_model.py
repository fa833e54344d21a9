"""The lab as data: layout, names, overlap refusal, commands, state file (no root needed)."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

import pytest

from aiplat.netdiag import correlate, faults, model, prom
from aiplat.netdiag.model import (
    LabInputError,
    SegmentInput,
    plan_lab,
    route_overlaps,
    tbf_argv,
    up_steps,
)
from aiplat.netdiag.state import (
    Created,
    LabState,
    load_state,
    proc_start_time,
    save_state,
    state_path,
)


@pytest.mark.parametrize("module", [model, faults, prom, correlate])
def test_doc_examples(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]
    assert result.failed == 0


def test_default_layout() -> None:
    p = plan_lab(nodes=3)
    assert [s.name for s in p.segments] == ["mgmt", "storage", "service", "hpc"]
    assert [s.mtu for s in p.segments] == [1500, 9000, 1500, 9000]
    assert [n.name for n in p.nodes] == ["store", "node-1", "node-2", "node-3"]
    assert set(p.store.addrs) == {"mgmt", "storage"}
    assert all(set(n.addrs) == {"mgmt", "storage", "service", "hpc"} for n in p.compute)
    assert p.node("node-2").addrs["hpc"] == IPv4Address("10.247.3.12")
    assert p.storage_segment.name == "storage"
    assert p.registry_url == "http://10.247.1.2:5000"
    addrs = [a for n in p.nodes for a in n.addrs.values()] + [p.host_addr]
    assert len(addrs) == len(set(addrs))


def test_every_host_name_carries_the_prefix_and_fits_ifnamsiz() -> None:
    p = plan_lab(nodes=8, prefix="lab42")
    names = [s.bridge for s in p.segments] + [p.host_port(n, s) for n in p.nodes
                                              for s in p.segments if s.name in n.addrs]
    assert all(n.startswith("lab42") and len(n) <= 15 for n in names)
    assert len(names) == len(set(names))
    assert all(n.ns.startswith("lab42-") for n in p.nodes)


def test_spec_segments_with_long_names_vlan_and_cidr() -> None:
    segs = [SegmentInput(name="management-network", purpose="management",
                         cidr=IPv4Network("10.10.0.0/24")),
            SegmentInput(name="storage", purpose="storage", mtu=9000, vlan=20)]
    p = plan_lab(segs, nodes=1)
    mg, st = p.segments
    assert mg.iface == "seg0" and mg.bridge == "alab-br0"
    assert st.iface == "storage" and p.node_port(st) == "t1"
    argvs = [" ".join(s.argv) for s in up_steps(p, forward_rules=False)]
    assert "ip -n alab-node-1 link add link t1 name storage type vlan id 20" in argvs
    assert "ip addr add 10.10.0.1/24 dev alab-br0" in argvs


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"prefix": "Bad!"}, "prefix"),
    ({"nodes": 0}, "1 to 8"),
    ({"link_mbit": 5}, "outside"),
    ({"only": ["nope"]}, "not in the spec"),
])
def test_bad_requests(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(LabInputError, match=match):
        plan_lab(**kwargs)  # type: ignore[arg-type]


def test_needs_management_and_disjoint_room() -> None:
    with pytest.raises(LabInputError, match="management"):
        plan_lab([SegmentInput(name="s", purpose="storage")])
    with pytest.raises(LabInputError, match="too small"):
        plan_lab([SegmentInput(name="m", purpose="management", cidr=IPv4Network("10.0.0.0/28"))])
    with pytest.raises(LabInputError, match="overlap"):
        plan_lab([SegmentInput(name="m", purpose="management", cidr=IPv4Network("10.0.0.0/24")),
                  SegmentInput(name="s", purpose="storage", cidr=IPv4Network("10.0.0.0/25"))])


def test_route_overlaps_ignores_default_routes_only() -> None:
    p = plan_lab()
    assert route_overlaps(p, [IPv4Network("0.0.0.0/0"), IPv4Network("192.0.2.0/24")]) == []
    hits = route_overlaps(p, [IPv4Network("10.0.0.0/8")])
    assert len(hits) == 4 and "10.0.0.0/8" in hits[0]


def test_every_created_object_is_logged_before_it_exists() -> None:
    p = plan_lab(nodes=2)
    steps = up_steps(p, forward_rules=True)
    creates = [s.creates for s in steps if s.creates]
    assert ("netns", "alab-node-2") in creates and ("link", "alab-storage") in creates
    assert sum(1 for c in creates if c[0] == "iptables") == len(p.segments)
    # Everything that creates a host object says so; configuration steps do not.
    for s in steps:
        if s.argv[:3] in (["ip", "link", "add"], ["ip", "netns", "add"]):
            assert s.creates is not None, s.argv
    # The host end of every veth is shaped (ingress to the node) as well as the node end.
    tbf = [s.argv for s in steps if "tbf" in s.argv]
    assert len(tbf) == 2 * sum(len(n.addrs) for n in p.nodes)


def test_tbf_burst_covers_jumbo_frames_and_4ms() -> None:
    assert tbf_argv([], "x", 100)[-3] == "65536"
    assert tbf_argv([], "x", 10000)[-3] == "5000000"


def test_state_round_trip_and_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIPLAT_LAB_DIR", str(tmp_path))
    p = plan_lab(nodes=1, prefix="st")
    assert load_state("st") is None
    s = LabState(plan=p, created=[Created(kind="netns", name="st-store")])
    save_state(s)
    assert state_path("st") == tmp_path / "st" / "state.json"
    assert oct(state_path("st").stat().st_mode & 0o777) == "0o600"
    back = load_state("st")
    assert back == s


def test_process_start_time_and_zombies() -> None:
    me = proc_start_time(os.getpid())
    assert isinstance(me, int) and me > 0
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        for _ in range(200):
            if proc_start_time(child.pid) is None:
                break
            import time

            time.sleep(0.01)
        assert proc_start_time(child.pid) is None  # exited: a zombie counts as gone
    finally:
        child.wait()
    assert proc_start_time(2**22 + 7) is None
