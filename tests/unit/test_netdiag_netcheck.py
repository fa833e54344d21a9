"""``net check`` findings from recorded probe results: localisation by the node common to
every bad measurement, consequences folded into their cause, a healthy lab gives []."""

from __future__ import annotations

import itertools

from aiplat.netdiag.netcheck import (
    LinkState,
    MtuResult,
    PingResult,
    RateResult,
    SegmentExpect,
    analyse,
)

NODES = ["store", "node-1", "node-2", "node-3"]
SEG = SegmentExpect(name="storage", mtu=9000, mbit=1000, nodes=NODES)


def links(**over: tuple[bool, int]) -> list[LinkState]:
    return [LinkState(node=n, segment="storage", iface="storage", up=over.get(n, (True, 9000))[0],
                      mtu=over.get(n, (True, 9000))[1]) for n in NODES]


def pings(lossy: str | None = None, lost: int = 0, asym: str | None = None) -> list[PingResult]:
    out = []
    for a, b in itertools.combinations(NODES, 2):
        got = 50 - (lost if lossy in (a, b) else 0)
        tx = {"storage": got, "mgmt": 1}
        if asym == b:
            tx = {"storage": 0, "mgmt": got + 2}
        out.append(PingResult(segment="storage", src=a, dst=b, sent=50, received=got,
                              rtt_avg_ms=0.05, reply_tx=tx))
    return out


def mtus(small: str | None = None) -> list[MtuResult]:
    return [MtuResult(segment="storage", src=a, dst=b,
                      path_mtu=1500 if small in (a, b) else 9000)
            for a, b in itertools.combinations(NODES, 2)]


def rates(slow: str | None = None) -> list[RateResult]:
    ring = list(zip(NODES, NODES[1:] + NODES[:1], strict=True))
    return [RateResult(segment="storage", src=a, dst=b,
                       mbit=98.0 if slow in (a, b) else 950.0) for a, b in ring]


def test_healthy_gives_no_finding() -> None:
    assert analyse([SEG], links(), pings(), mtus(), rates()) == []


def test_loss_localised_and_its_slow_transfers_folded_in() -> None:
    f = analyse([SEG], links(), pings("node-2", 10), mtus(), rates("node-2"))
    assert [(x.kind, x.node, x.segment) for x in f] == [("loss", "node-2", "storage")]
    assert "20 %" in f[0].message
    assert any("lost nothing" in e for e in f[0].evidence)


def test_rate_localised_by_the_ring() -> None:
    f = analyse([SEG], links(), pings(), mtus(), rates("node-3"))
    assert [(x.kind, x.node) for x in f] == [("rate", "node-3")]
    assert "98 Mbit/s (expected about 1000)" in f[0].evidence[0]


def test_mtu_from_the_interface_and_the_df_sweep() -> None:
    f = analyse([SEG], links(**{"node-1": (True, 1500)}), pings(), mtus("node-1"), rates())
    assert [(x.kind, x.node) for x in f] == [("mtu", "node-1")]
    assert any("largest DF packet 1500" in e for e in f[0].evidence)
    # Without the interface (e.g. a middle box), the sweep alone still localises it.
    f2 = analyse([SEG], links(), pings(), mtus("node-1"), rates())
    assert [(x.kind, x.node) for x in f2] == [("mtu", "node-1")]


def test_down_link_is_not_also_reported_as_loss() -> None:
    f = analyse([SEG], links(**{"node-3": (False, 9000)}), pings("node-3", 50), mtus(),
                rates("node-3"))
    assert [(x.kind, x.node) for x in f] == [("down", "node-3")]


def test_asymmetric_replies_leave_by_another_interface() -> None:
    f = analyse([SEG], links(), pings(asym="node-2"), mtus(), rates())
    assert [(x.kind, x.node) for x in f] == [("asym", "node-2")]
    assert "via mgmt" in f[0].evidence[0]


def test_one_bad_pair_among_many_is_not_pinned_on_a_node() -> None:
    p = pings()
    p[0] = p[0].model_copy(update={"received": 40})
    f = analyse([SEG], links(), p, mtus(), rates())
    assert [(x.kind, x.node) for x in f] == [("loss", None)]
    assert "store<->node-1" in f[0].message


def test_a_node_whose_every_pair_is_bad_wins_over_one_unrelated_bad_pair() -> None:
    p = pings("node-2", 10)
    p[0] = p[0].model_copy(update={"received": 45})  # store <-> node-1: noise
    f = analyse([SEG], links(), p, mtus(), rates())
    assert [(x.kind, x.node) for x in f] == [("loss", "node-2")]
