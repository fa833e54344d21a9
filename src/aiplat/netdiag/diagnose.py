"""``diagnose``: measure the symptom, query Prometheus, rank causes (the I/O around
:mod:`aiplat.netdiag.correlate`).

In the lab it pulls the model store's blob from every compute node in turn (bounded, the
symptom), waits for two scrapes, then queries the window of those pulls. Against any other
Prometheus (``--prometheus URL`` without a lab) it has no pull symptom and reports interface
facts (carrier, drops, errors) over ``--since``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from aiplat.netdiag import lab as labio
from aiplat.netdiag.correlate import (
    SLOW_FACTOR,
    Cause,
    Facts,
    PullWindow,
    Signals,
    rank,
    series_by,
)
from aiplat.netdiag.model import LabNode, LabPlan
from aiplat.netdiag.prom import Prom, PromSeries

QUERIES = {
    "rx": "irate(node_network_receive_bytes_total{{{sel}}}[3s]) * 8 / 1e6",
    "tx": "irate(node_network_transmit_bytes_total{{{sel}}}[3s]) * 8 / 1e6",
    "retrans": "irate(node_netstat_Tcp_RetransSegs{{{sel}}}[3s])",
    "out_segs": "irate(node_netstat_Tcp_OutSegs{{{sel}}}[3s])",
    "carrier": "node_network_carrier{{{sel}}}",
    "mtu": "node_network_mtu_bytes{{{sel}}}",
    "gpu_active": "DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{sel}}}",
    "drops": "increase(node_network_receive_drop_total{{{sel}}}[{since}])",
    "errors": "increase(node_network_receive_errs_total{{{sel}}}[{since}])",
}


@dataclass
class Diagnosis:
    causes: list[Cause]
    pulls: list[PullWindow] = field(default_factory=list)
    window: tuple[float, float] = (0.0, 0.0)
    prometheus: str = ""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _pairs(series: list[PromSeries]) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
    return [(s.labels, s.points) for s in series]


def _pull_window(plan: LabPlan, node: LabNode, digest: str | None,
                 baseline: float) -> PullWindow:
    # The storage node's TCP counters around the pull: pulls run one at a time, so the
    # difference is this pull's (its retransmissions show loss a rate series cannot
    # separate from the neighbouring pulls: irate looks back across the windows).
    before = labio.tcp_counters(plan.store)
    r = labio.pull(plan, node, digest)
    after = labio.tcp_counters(plan.store)
    retrans = sent = None
    if before is not None and after is not None:
        retrans, sent = after[0] - before[0], after[1] - before[1]
    return PullWindow(node=node.name, start=r.start, end=r.end, mbit=r.mbit,
                      baseline_mbit=baseline, store_retrans=retrans, store_sent=sent)


def diagnose_lab(prefix: str, prometheus: str | None = None) -> Diagnosis:
    """Pull from every compute node, then rank causes over the pulls' window."""
    t0 = time.monotonic()
    state = labio.require_up(prefix)
    plan: LabPlan = state.plan
    base = {b.node: b.mbit for b in state.baseline}
    windows = []
    for node in plan.compute:
        w = _pull_window(plan, node, state.blob_digest, base.get(node.name, plan.link_mbit))
        if w.slow and w.fall < 2 * SLOW_FACTOR:
            # Confirm a borderline slowdown before blaming: a busy CPU can slow one pull a
            # few times, a fault slows every one (a tenfold fall needs no second look).
            again = _pull_window(plan, node, state.blob_digest, w.baseline_mbit)
            w = again if again.mbit > w.mbit or not again.slow else w
        windows.append(w)
    windows.sort(key=lambda x: x.start)
    time.sleep(2.5)  # two scrapes at 1 s, so the window's last samples are in
    url = prometheus or plan.prom_url
    prom = Prom(url)
    start, end = windows[0].start - 2, max(w.end for w in windows) + 2
    sel = f'lab="{plan.prefix}"'
    seg_of = {s.iface: s.name for s in plan.segments}

    def rng(name: str, by: tuple[str, ...]) -> dict[str, list[tuple[float, float]]]:
        q = QUERIES[name].format(sel=sel, since="1m")
        return series_by(_pairs(prom.range(q, start, end, 1.0)), *by, segment_of=seg_of)

    def now(name: str) -> dict[str, float]:
        q = QUERIES[name].format(sel=sel, since="1m")
        got = series_by(_pairs(prom.instant(q)), "node", "device", segment_of=seg_of)
        return {k: v[-1][1] for k, v in got.items() if v}

    sig = Signals(
        rx=rng("rx", ("node", "device")), tx=rng("tx", ("node", "device")),
        retrans=rng("retrans", ("node",)), out_segs=rng("out_segs", ("node",)),
        carrier=now("carrier"), mtu=now("mtu"), gpu_active=rng("gpu_active", ("node",)),
    )
    facts = Facts(store=plan.store.name, pull_segment=plan.storage_segment.name,
                  link_mbit=plan.link_mbit, compute=[n.name for n in plan.compute],
                  mtu={s.name: s.mtu for s in plan.segments})
    notes = []
    if not sig.gpu_active:
        notes.append("no DCGM metrics in this Prometheus: GPU activity not correlated")
    return Diagnosis(causes=rank(facts, windows, sig), pulls=windows, window=(start, end),
                     prometheus=url, notes=notes, seconds=time.monotonic() - t0)


def diagnose_prometheus(url: str, since_s: float) -> Diagnosis:
    """Interface facts from any Prometheus scraping node-exporter: links without carrier,
    receive drops and errors over ``since_s``."""
    t0 = time.monotonic()
    prom = Prom(url)
    since = f"{int(since_s)}s"
    causes: list[Cause] = []
    for s in prom.instant(QUERIES["carrier"].format(sel="", since=since)):
        if s.last() == 0:
            inst, dev = s.labels.get("instance", "?"), s.labels.get("device", "?")
            causes.append(Cause(kind="down", node=inst, segment=dev, score=1.0,
                                summary=f"{dev} on {inst} has no carrier",
                                evidence=[f"node_network_carrier = 0 ({s.labels})"]))
    for name, kind in (("errors", "errors"), ("drops", "drops")):
        for s in prom.instant(QUERIES[name].format(sel="", since=since)):
            v = s.last() or 0.0
            if v > 0:
                inst, dev = s.labels.get("instance", "?"), s.labels.get("device", "?")
                causes.append(Cause(kind=kind, node=inst, segment=dev,
                                    score=0.7 if kind == "errors" else 0.5,
                                    summary=f"{dev} on {inst}: {v:.0f} receive {kind} in {since}",
                                    evidence=[f"{QUERIES[name].format(sel='', since=since)} "
                                              f"= {v:.0f} ({s.labels})"]))
    causes.sort(key=lambda c: -c.score)
    end = time.time()
    return Diagnosis(causes=causes, window=(end - since_s, end), prometheus=url,
                     notes=["no lab: no pull symptom measured; interface facts only"],
                     seconds=time.monotonic() - t0)
