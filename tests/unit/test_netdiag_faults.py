"""Fault plans as data: each kind's commands, their undo, and what is refused."""

from __future__ import annotations

import pytest

from aiplat.netdiag.faults import KINDS, plan_fault
from aiplat.netdiag.model import LabInputError, plan_lab

PLAN = plan_lab(nodes=3)


def test_at_least_five_kinds_none_uses_netem() -> None:
    assert len(KINDS) >= 5
    for kind in KINDS:
        node, seg = ("node-2", "storage")
        f = plan_fault(PLAN, kind, node, seg)
        assert f.id == f"{kind}@{node}/{seg}"
        for argv in [*f.apply, *f.undo, *([f.spawn] if f.spawn else [])]:
            assert "netem" not in argv


def test_loss_is_an_iptables_statistic_drop_inside_the_node() -> None:
    f = plan_fault(PLAN, "loss", "node-2", "storage", value=25)
    (apply,), (undo,) = f.apply, f.undo
    assert apply[:4] == ["ip", "netns", "exec", "alab-node-2"]
    assert apply[4:7] == ["iptables", "-A", "INPUT"]
    assert apply[11:15] == ["--mode", "random", "--probability", "0.25"]
    assert undo[5] == "-D" and undo[6:] == apply[6:]


def test_rate_replaces_both_directions_and_undo_restores_the_lab_rate() -> None:
    f = plan_fault(PLAN, "rate", "node-1", "hpc", value=50)
    assert [a[-8:-5] for a in f.apply] == [["root", "tbf", "rate"]] * 2
    assert {a[-5] for a in f.apply} == {"50mbit"}
    assert {a[-5] for a in f.undo} == {f"{PLAN.link_mbit}mbit"}
    assert "alab1s3" in f.apply[1]  # host end: ingress to the node


def test_slow_storage_defaults_to_the_store_storage_port() -> None:
    f = plan_fault(PLAN, "slow-storage")
    assert (f.node, f.segment) == ("store", "storage")
    assert "100mbit" in f.apply[0]


def test_mtu_asym_down_noisy() -> None:
    m = plan_fault(PLAN, "mtu", "node-1", "storage")
    assert m.apply == [["ip", "-n", "alab-node-1", "link", "set", "storage", "mtu", "1500"]]
    assert m.undo[0][-1] == "9000"
    assert plan_fault(PLAN, "mtu", "node-1", "mgmt").apply[0][-1] == "1400"
    a = plan_fault(PLAN, "asym", "node-2", "storage")
    assert a.apply[0][-4:] == ["dev", "mgmt", "table", "100"]
    assert "from" in a.apply[1] and "10.247.1.12" in a.apply[1]
    assert [u[4] for u in a.undo] == ["del", "del"]
    d = plan_fault(PLAN, "down", "node-3", "service")
    assert d.apply == [["ip", "link", "set", "alab3s2", "down"]]
    n = plan_fault(PLAN, "noisy", "node-3", "storage", seconds=30)
    assert n.spawn is not None and n.spawn_ns == "alab-node-3"
    assert n.spawn[:3] == ["iperf3", "-c", "10.247.1.2"]  # the store
    assert "-t" in n.spawn and n.spawn[n.spawn.index("-t") + 1] == "30"


@pytest.mark.parametrize(("kind", "node", "seg", "kw", "match"), [
    ("flood", "node-1", "mgmt", {}, "unknown fault kind"),
    ("loss", None, "mgmt", {}, "needs --node"),
    ("loss", "node-9", "mgmt", {}, "no node"),
    ("loss", "store", "hpc", {}, "no port"),
    ("loss", "node-1", "mgmt", {"value": 100}, "between 0 and 100"),
    ("rate", "node-1", "mgmt", {"value": 5000}, "below the lab"),
    ("mtu", "node-1", "mgmt", {"value": 1500}, "below the segment"),
    ("noisy", "node-1", "mgmt", {"seconds": 0}, "1..600"),
])
def test_refused(kind: str, node: str | None, seg: str, kw: dict[str, float], match: str) -> None:
    with pytest.raises(LabInputError, match=match):
        plan_fault(PLAN, kind, node, seg, **kw)  # type: ignore[arg-type]
