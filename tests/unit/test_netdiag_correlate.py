"""Ranking causes over metric series shaped like the ones the real lab records (1 s scrape):
each cause comes out first, localised; a healthy window gives nothing."""

from __future__ import annotations

from aiplat.netdiag.correlate import Facts, PullWindow, Signals, rank

FACTS = Facts(store="store", pull_segment="storage", link_mbit=1000,
              compute=["node-1", "node-2", "node-3"],
              mtu={"mgmt": 1500, "storage": 9000, "hpc": 9000})
T0 = 1000.0


def flat(v: float, start: float, end: float) -> list[tuple[float, float]]:
    return [(t, v) for t in range(int(start), int(end) + 2)]


def windows(mbit: dict[str, float], seconds: float = 3.0) -> list[PullWindow]:
    out, t = [], T0
    for n in FACTS.compute:
        dur = seconds if mbit[n] < 500 else 0.5
        out.append(PullWindow(node=n, start=t, end=t + dur, mbit=mbit[n], baseline_mbit=980))
        t += dur + 0.2
    return out


def signals(ws: list[PullWindow], **extra: object) -> Signals:
    rx: dict[str, list[tuple[float, float]]] = {}
    tx: list[tuple[float, float]] = []
    for w in ws:
        rx.setdefault(f"{w.node}/storage", []).extend(flat(w.mbit, w.start, w.end))
        tx.extend(flat(w.mbit, w.start, w.end))
    base: dict[str, object] = {
        "rx": rx, "tx": {"store/storage": tx},
        "carrier": {f"{n}/{s}": 1.0 for n in FACTS.compute for s in ("mgmt", "storage", "hpc")},
        "mtu": {f"{n}/{s}": float(FACTS.mtu[s]) for n in FACTS.compute
                for s in ("mgmt", "storage", "hpc")},
    }
    base.update(extra)
    return Signals.model_validate(base)


def top(causes: list) -> tuple[str, str | None, str | None]:  # type: ignore[type-arg]
    return causes[0].kind, causes[0].node, causes[0].segment


def test_healthy_gives_nothing() -> None:
    ws = windows({"node-1": 970, "node-2": 960, "node-3": 975})
    assert rank(FACTS, ws, signals(ws)) == []


def test_every_pull_capped_is_slow_storage() -> None:
    ws = windows({"node-1": 99, "node-2": 99, "node-3": 98})
    causes = rank(FACTS, ws, signals(ws))
    assert top(causes) == ("slow-storage", "store", "storage")
    assert "capped near 99 Mbit/s" in causes[0].summary and "10x" in causes[0].summary
    assert len(causes) == 1


def test_one_pull_capped_is_that_nodes_port() -> None:
    ws = windows({"node-1": 970, "node-2": 99, "node-3": 975})
    causes = rank(FACTS, ws, signals(ws))
    assert top(causes) == ("rate", "node-2", "storage")
    assert causes[0].summary == ("storage segment of node-2 capped near 99 Mbit/s while pull "
                                 "throughput fell 10x")


def test_retransmissions_mean_loss() -> None:
    ws = windows({"node-1": 970, "node-2": 60, "node-3": 975})
    w = ws[1]
    sig = signals(ws, retrans={"store": flat(300, w.start, w.end)},
                  out_segs={"store": flat(1500, w.start, w.end)})
    causes = rank(FACTS, ws, sig)
    assert top(causes) == ("loss", "node-2", "storage")
    assert any("retransmitted 20%" in e for e in causes[0].evidence)


def test_a_busy_neighbour_is_named() -> None:
    ws = windows({"node-1": 120, "node-2": 150, "node-3": 180})
    sig = signals(ws)
    flood = flat(850, T0 - 2, T0 + 12)
    rx = dict(sig.rx)
    rx["node-3/storage"] = flood
    sig = sig.model_copy(update={"rx": rx, "tx": {"store/storage": flat(990, T0 - 2, T0 + 12)}})
    causes = rank(FACTS, ws, sig)
    assert top(causes) == ("noisy", "node-3", "storage")
    assert all(c.node == "node-3" for c in causes)


def test_interface_facts_rank_first() -> None:
    ws = windows({"node-1": 970, "node-2": 960, "node-3": 975})
    sig = signals(ws)
    carrier = dict(sig.carrier) | {"node-2/hpc": 0.0}
    mtu = dict(sig.mtu) | {"node-3/hpc": 1500.0}
    causes = rank(FACTS, ws, sig.model_copy(update={"carrier": carrier, "mtu": mtu}))
    assert [(c.kind, c.node, c.segment) for c in causes] == [
        ("down", "node-2", "hpc"), ("mtu", "node-3", "hpc")]


def test_dcgm_activity_is_added_as_evidence_when_present() -> None:
    ws = windows({"node-1": 99, "node-2": 99, "node-3": 98})
    gpu = {n: flat(0.05, T0 - 1, T0 + 12) for n in FACTS.compute}
    causes = rank(FACTS, ws, signals(ws, gpu_active=gpu))
    assert any("GPU engine activity on node-1 5%" in e for e in causes[0].evidence)


def test_a_pull_stalled_by_loss_is_loss_although_other_traffic_dilutes_the_counters() -> None:
    # The weak case once seen in CI: 20% loss towards node-1 stalled the pull in
    # retransmission timeouts and the store's counters showed only 1.1% retransmitted. Here
    # (illustrative figures of that shape) it sent ~10 Mbit/s on storage, about 140 jumbo
    # segments/s, with 28 retransmissions/s, while scrapes on mgmt made its OutSegs 2,500/s.
    ws = windows({"node-1": 10, "node-2": 970, "node-3": 975})
    w = ws[0]
    tx = [(t, v) for t, v in signals(ws).tx["store/storage"] if not w.start <= t <= w.end + 1]
    sig = signals(ws, tx={"store/storage": tx + flat(10, w.start, w.end)},
                  retrans={"store": flat(28, w.start, w.end)},
                  out_segs={"store": flat(2500, w.start, w.end)})
    causes = rank(FACTS, ws, sig)
    assert top(causes) == ("loss", "node-1", "storage")
    assert any("retransmitted 1% of its TCP segments meanwhile, 20% of the full-size segments"
               in e for e in causes[0].evidence), causes[0].evidence


def test_a_capped_pull_with_a_few_retransmissions_stays_a_cap() -> None:
    # tbf drops what overflows its bucket: ~1% of a capped pull's segments are resent.
    ws = windows({"node-1": 970, "node-2": 99, "node-3": 975})
    w = ws[1]
    segs = 99e6 / 8 / 9014
    sig = signals(ws, retrans={"store": flat(0.01 * segs, w.start, w.end)},
                  out_segs={"store": flat(segs + 60, w.start, w.end)})
    causes = rank(FACTS, ws, sig)
    assert top(causes) == ("rate", "node-2", "storage")


def _counted(ws: list[PullWindow], shares: dict[str, float]) -> list[PullWindow]:
    """The windows with the storage node's TCP counters read around each pull."""
    return [w.model_copy(update={"store_sent": 20_000,
                                 "store_retrans": round(20_000 * shares.get(w.node, 0.0))})
            for w in ws]


def test_loss_that_slows_no_pull_is_found_in_the_stores_counters() -> None:
    """Issue 22: 5 % loss towards node-2 slowed its pull 1.1-1.8x only, and diagnose said
    nothing while net check (pings, > 2 % lost) flagged it. The store's retransmissions
    during that one pull (measured in the real lab: 0 clean, 3-5 % at 5 % loss) localise it."""
    ws = _counted(windows({"node-1": 975, "node-2": 560, "node-3": 970}), {"node-2": 0.048})
    assert not any(w.slow for w in ws)
    causes = rank(FACTS, ws, signals(ws))
    assert [top(causes)] == [("loss", "node-2", "storage")] and len(causes) == 1
    assert "4.8%" in causes[0].summary and "960 of the 20,000" in causes[0].evidence[0]


def test_retransmissions_below_net_checks_threshold_are_no_finding() -> None:
    ws = _counted(windows({"node-1": 975, "node-2": 960, "node-3": 970}),
                  {"node-1": 0.01, "node-2": 0.02})
    assert rank(FACTS, ws, signals(ws)) == []
    assert rank(FACTS, windows({"node-1": 975, "node-2": 960, "node-3": 970}),
                signals(ws)) == []  # no counters read: nothing is guessed


def test_every_pull_retransmitting_puts_the_loss_at_the_store() -> None:
    ws = _counted(windows({"node-1": 900, "node-2": 910, "node-3": 905}),
                  {"node-1": 0.04, "node-2": 0.05, "node-3": 0.045})
    causes = rank(FACTS, ws, signals(ws))
    assert top(causes) == ("loss", "store", "storage") and len(causes) == 1

