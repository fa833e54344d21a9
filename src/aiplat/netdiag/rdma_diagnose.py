"""Rank RDMA causes from recorded tool outputs across nodes and rails (pure).

Input: one :class:`NodeRecord` per node (what :mod:`aiplat.netdiag.rdma_folder` read from
``DIR/<node>/``), optionally the same nodes recorded earlier (``before``: the counters become
what changed in between; without it they are totals since the counters were last cleared, and
the evidence says so). Output: :class:`RdmaCause` s, strongest first, each naming the node, the
port (``mlx5_0/1``, or the interface for ``ethtool -S`` counters), the numbers and the fix.

The rules, and why these thresholds:

- **rail down / degraded rate** (ibstat): a port that is Active on most nodes but not on this
  one, or Active at a lower rate than most nodes' same port (a link trained at a lower speed
  or width: a cable, a transceiver or a port). Peers are the same device and port on the
  other nodes, so a fleet where every node leaves ``mlx5_10`` disabled is not blamed.
- **slow rail** (perftest bandwidth): a device's best average below ``SLOW_RAIL`` of the
  median of the same test at the same largest message size on the other rails (every node,
  every device), or below ``LINE_RATE_SHARE`` of its own port's rate where ibstat gives it
  and the run reached ``LINE_RATE_MIN_BYTES`` (smaller messages are bound by message rate).
  Published healthy runs reach 97-98 % of the line rate at 64 KiB (400 Gb/s NDR, 100 Gb/s
  RoCE); a rail at half its peers is a PCIe link trained at half width, a wrong NUMA node or
  a lost GPUDirect path.
- **link flap** (``link_downed``, mlx5 ``link_down_events_phy``): any increase.
- **bad cable** (``symbol_error``, ``link_error_recovery``, ``port_rcv_errors``,
  ``port_rcv_remote_physical_errors``, ``local_link_integrity_errors``; mlx5
  ``rx_symbol_err_phy``, ``rx_crc_errors_phy``): any increase; and ``rx_corrected_bits_phy``
  (FEC at work, normal at a low rate) ``OUTLIER`` times the peers' median: the pre-FEC error
  rate of that cable is rising.
- **PFC pause storm** (mlx5 ``tx_pause_storm_*_events``: the NIC's own storm watchdog;
  ``tx_pause_ctrl_phy`` / ``tx_prio*_pause``: pause frames this port sent, i.e. this host
  could not drain its receive buffers; ``rx_pause_ctrl_phy`` / ``rx_prio*_pause``: the switch
  throttled this port): storm events > 0, or pause frames ``OUTLIER`` times the peers'
  median. Discards on the port (``rx_discards_phy``, ``rx_prio*_buf_discard``) on a lossless
  class are loss PFC should have prevented.
- **congestion** (``np_cnp_sent``, ``rp_cnp_handled``, ``np_ecn_marked_roce_packets``,
  ``port_xmit_wait``): ``OUTLIER`` times the peers' median (congestion control at work is not
  a fault; one node far above the rest is a hot spot); every outlier must also reach
  ``OUTLIER_FLOOR`` events, so a handful on an idle fleet is none; ``rp_cnp_ignored`` > 0 means CNPs
  arrive and the adapter ignores them (DCQCN off on the NIC).
- **nccl-tests below the fabric** (:mod:`aiplat.netdiag.collective`): a run across hosts
  whose best busbw at large sizes is below ``BUSBW_SHARE`` of the ring bound (rails x rate as
  the fabric was built: the hosts' rails at their usual rate, or ``--rails``/``--link-gbps``);
  ``#wrong`` > 0 is corrupted data. One host: NVLink-bound,
  "unknown".

What is not recorded is said in ``notes`` ("not judged"), never taken as healthy.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from aiplat.netdiag.collective import NcclResult, fabric_busbw_gbs
from aiplat.netdiag.rdma import IbPort, PerftestResult, prio_sum

SLOW_RAIL = 0.75
LINE_RATE_SHARE = 0.6
LINE_RATE_MIN_BYTES = 65536
OUTLIER = 10.0
OUTLIER_FLOOR = 1000
BUSBW_SHARE = 0.7

CABLE_COUNTERS = ("symbol_error", "link_error_recovery", "port_rcv_errors",
                  "port_rcv_remote_physical_errors", "local_link_integrity_errors")
ETH_CABLE_COUNTERS = ("rx_symbol_err_phy", "rx_crc_errors_phy")
CONGESTION_COUNTERS = ("np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets",
                       "port_xmit_wait")

Counters = dict[str, int]


@dataclass
class NodeRecord:
    """What was recorded on one node; keys of ``counters`` are ``device/port``, of
    ``ethtool`` the interface."""

    name: str
    ports: list[IbPort] = field(default_factory=list)
    counters: dict[str, Counters] = field(default_factory=dict)
    ethtool: dict[str, Counters] = field(default_factory=dict)
    perftest: list[tuple[str, PerftestResult]] = field(default_factory=list)
    nccl: list[tuple[str, NcclResult]] = field(default_factory=list)


class RdmaCause(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    node: str | None
    port: str | None
    score: float
    summary: str
    evidence: list[str]
    fix: str


class RdmaDiagnosis(BaseModel):
    model_config = ConfigDict(extra="forbid")

    causes: list[RdmaCause]
    nodes: list[str]
    notes: list[str]


def _cause(kind: str, node: str | None, port: str | None, score: float,  # noqa: PLR0917
           summary: str, evidence: Iterable[str], fix: str) -> RdmaCause:
    return RdmaCause(kind=kind, node=node, port=port, score=score, summary=summary,
                     evidence=list(evidence), fix=fix)


def _delta(after: Mapping[str, Counters], before: Mapping[str, Counters] | None,
           notes: list[str], node: str) -> dict[str, Counters]:
    """What changed between the recordings; a counter that went down was cleared in between
    (its value after is what it counted since)."""
    if before is None:
        return {k: dict(v) for k, v in after.items()}
    out: dict[str, Counters] = {}
    for port, values in after.items():
        prev = before.get(port, {})
        out[port] = {}
        for name, v in values.items():
            if name in prev and v < prev[name]:
                notes.append(f"{node} {port}: {name} went from {prev[name]} to {v} (cleared "
                             "in between): its value after is used")
                out[port][name] = v
            else:
                out[port][name] = v - prev.get(name, 0) if name in prev else v
    return out


def _median_others(values: Mapping[tuple[str, str], float], key: tuple[str, str]) -> float | None:
    others = [v for k, v in values.items() if k != key]
    return statistics.median(others) if len(others) >= 2 else None


# ---------------------------------------------------------------------------- rules


def _port_rules(nodes: list[NodeRecord]) -> list[RdmaCause]:
    causes: list[RdmaCause] = []
    by_port: dict[str, list[IbPort]] = {}
    for n in nodes:
        for p in n.ports:
            by_port.setdefault(f"{p.device}/{p.port}", []).append(p)
    for n in nodes:
        for p in n.ports:
            key = f"{p.device}/{p.port}"
            peers = [q for q in by_port[key] if q is not p]
            active = [q for q in peers if q.active]
            if not p.active and len(active) > len(peers) / 2 and active:
                causes.append(_cause(
                    "rail-down", n.name, key, 0.9,
                    f"{key} on {n.name} is {p.state}/{p.physical_state}; it is Active on "
                    f"{len(active)} of {len(peers)} other nodes",
                    [f"ibstat: State {p.state}, Physical state {p.physical_state}"],
                    "check the cable and the switch port (ibstat, the switch's port log); "
                    "reseat or replace the cable or transceiver, then confirm LinkUp"))
            rates = [q.rate_gbps for q in active if q.rate_gbps]
            if p.active and p.rate_gbps and len(rates) >= 2:
                usual = statistics.median(rates)
                if p.rate_gbps < usual:
                    causes.append(_cause(
                        "degraded-rate", n.name, key, 0.8,
                        f"{key} on {n.name} runs at {p.rate_gbps:g} Gb/s, its peers at "
                        f"{usual:g} Gb/s",
                        [f"ibstat: Rate {p.rate_gbps:g} (peers' median {usual:g})"],
                        "the link trained at a lower speed or width: reseat or replace the "
                        "cable or transceiver; check the switch port's speed settings"))
    return causes


def _rate_of(node: NodeRecord, device: str | None) -> float | None:
    rates = [p.rate_gbps for p in node.ports if p.device == device and p.active]
    return max((r for r in rates if r), default=None)


def _perftest_rules(nodes: list[NodeRecord]) -> list[RdmaCause]:
    causes: list[RdmaCause] = []
    results: dict[tuple[str, str], tuple[NodeRecord, str, PerftestResult, float]] = {}
    for n in nodes:
        for name, r in n.perftest:
            if r.best_avg_gbps is not None:
                results[(n.name, name)] = (n, name, r, r.best_avg_gbps)
    def kind(r: PerftestResult) -> tuple[str, int]:
        return r.test, max(row.size for row in r.bw)

    for key, (n, name, r, got) in results.items():
        same = {k: v[3] for k, v in results.items() if kind(v[2]) == kind(r)}
        peers = _median_others(same, key)
        # a small-message run is bound by message rate, not the link
        rate = _rate_of(n, r.device) if kind(r)[1] >= LINE_RATE_MIN_BYTES else None
        port = r.device or name
        evidence = [f"{name}: {r.test}, best average {got:.1f} Gb/s"]
        if peers is not None and got < SLOW_RAIL * peers:
            against = f"the other rails' {peers:.1f} Gb/s"
            evidence.append(f"the other rails' median {peers:.1f} Gb/s (slow below "
                            f"{SLOW_RAIL:.0%})")
        elif rate is not None and got < LINE_RATE_SHARE * rate:
            against = f"its {rate:g} Gb/s link"
            evidence.append(f"the port's rate {rate:g} Gb/s (slow below {LINE_RATE_SHARE:.0%})")
        else:
            continue
        causes.append(_cause(
            "slow-rail", n.name, port, 0.85,
            f"{port} on {n.name}: {got:.1f} Gb/s against {against}",
            evidence,
            "compare its PCIe link (lspci -vv: LnkSta against LnkCap), its NUMA node and "
            "GPU affinity (nvidia-smi topo -m), the port's rate (ibstat) and its error "
            "counters; rerun ib_write_bw against a known-good peer"))
    return causes


def _counter_rules(node: str, port: str, c: Counters, ib: bool,
                   total: str) -> list[RdmaCause]:
    causes: list[RdmaCause] = []
    flap = c.get("link_downed", 0) + c.get("link_down_events_phy", 0)
    if flap > 0:
        names = [f"{k} {c[k]}" for k in ("link_downed", "link_down_events_phy") if c.get(k)]
        causes.append(_cause(
            "link-flap", node, port, 0.9,
            f"{port} on {node} went down {flap} time(s) {total}", names,
            "a flapping link drops every connection over it: drain the node, check the "
            "switch log for the port, replace the cable or transceiver"))
    bad = {k: c[k] for k in (*CABLE_COUNTERS, *ETH_CABLE_COUNTERS) if c.get(k)}
    if bad:
        causes.append(_cause(
            "bad-cable", node, port, 0.85,
            f"{port} on {node}: physical-layer errors {total}",
            [f"{k} {v}" for k, v in bad.items()],
            "symbol and link-recovery errors are the cable, the transceiver or the port: "
            "clean or reseat it, then replace it if the counters keep rising "
            "(clear with perfquery -R, or record before and after)"))
    if ib is False:
        storm = c.get("tx_pause_storm_warning_events", 0) + c.get("tx_pause_storm_error_events", 0)
        if storm:
            causes.append(_cause(
                "pfc-storm", node, port, 0.95,
                f"{port} on {node}: the NIC's pause storm watchdog fired {storm} time(s)",
                [f"tx_pause_storm_warning_events {c.get('tx_pause_storm_warning_events', 0)}",
                 f"tx_pause_storm_error_events {c.get('tx_pause_storm_error_events', 0)}"],
                "this host stopped draining its receive queue and paused the fabric: look "
                "for a stuck process or PCIe backpressure (outbound_pci_stalled_*), drain "
                "the node"))
        drop = {k: v for k, v in c.items() if v and (k == "rx_discards_phy"
                                                     or k.endswith("_buf_discard"))}
        if drop:
            causes.append(_cause(
                "lossless-drops", node, port, 0.8,
                f"{port} on {node}: packets discarded at the port {total}",
                [f"{k} {v}" for k, v in drop.items()],
                "on a lossless (PFC) class a discard is a retransmission storm for RDMA: "
                "check that PFC is on for the RoCE priority end to end (mlnx_qos -i IF) and "
                "the buffer headroom"))
        if c.get("rp_cnp_ignored"):
            causes.append(_cause(
                "cnp-ignored", node, port, 0.6,
                f"{port} on {node}: congestion notifications arrive and are ignored",
                [f"rp_cnp_ignored {c['rp_cnp_ignored']}"],
                "enable DCQCN (RoCE congestion control) on the adapter for the RoCE "
                "priority"))
    return causes


def _pause(c: Counters) -> dict[str, int]:
    out = {}
    tx = c.get("tx_pause_ctrl_phy", prio_sum(c, "tx_prio{}_pause"))
    rx = c.get("rx_pause_ctrl_phy", prio_sum(c, "rx_prio{}_pause"))
    if tx is not None:
        out["sent"] = tx
    if rx is not None:
        out["received"] = rx
    return out


def _outlier_rules(per_port: dict[tuple[str, str], Counters], total: str) -> list[RdmaCause]:
    """Counters judged against the same counter on every other port."""
    causes: list[RdmaCause] = []
    measures: dict[str, dict[tuple[str, str], float]] = {}
    v: float
    for key, c in per_port.items():
        for name in (*CONGESTION_COUNTERS, "rx_corrected_bits_phy"):
            if name in c:
                measures.setdefault(name, {})[key] = c[name]
        for direction, v in _pause(c).items():
            measures.setdefault(f"pause {direction}", {})[key] = v
    for name, values in measures.items():
        for key, v in values.items():
            peers = _median_others(values, key)
            if peers is None or v < OUTLIER * max(peers, 1):
                continue
            node, port = key
            if v < OUTLIER_FLOOR:
                continue  # a few events on an idle fleet are no hot spot
            if name.startswith("pause"):
                sent = name.endswith("sent")
                causes.append(_cause(
                    "pfc-storm", node, port, 0.75,
                    f"{port} on {node}: {v} pause frames {name.split()[1]} {total}, "
                    f"{v / max(peers, 1):.0f}x the other ports' median",
                    [f"pause frames {name.split()[1]}: {v} (peers' median {peers:g})"],
                    "this host cannot drain its receive buffers (PCIe, CPU, a stuck "
                    "consumer): check outbound_pci_stalled_* and the host"
                    if sent else
                    "the switch pauses this port: find the congested egress it feeds "
                    "(the switch's per-priority pause and buffer counters)"))
            elif name == "rx_corrected_bits_phy":
                causes.append(_cause(
                    "bad-cable", node, port, 0.7,
                    f"{port} on {node}: FEC corrects {v / max(peers, 1):.0f}x more bits than "
                    "on the other ports",
                    [f"rx_corrected_bits_phy {v} (peers' median {peers:g})"],
                    "the cable's pre-FEC error rate is rising: clean or replace the cable or "
                    "transceiver before it starts losing packets"))
            else:
                causes.append(_cause(
                    "congestion", node, port, 0.5,
                    f"{port} on {node}: {name} {v:g}, {v / max(peers, 1):.0f}x the other "
                    "ports' median",
                    [f"{name} {v:g} (peers' median {peers:g})"],
                    "a congestion hot spot: check the traffic pattern (an incast, a job "
                    "placed across the fabric's tiers) and the ECN/PFC thresholds on the "
                    "switch"))
    return causes


def _nccl_rules(nodes: list[NodeRecord], nccl: list[tuple[str, NcclResult]],
                rails: int | None, link_gbps: float | None,
                notes: list[str]) -> list[RdmaCause]:
    causes: list[RdmaCause] = []
    by_name = {n.name: n for n in nodes}
    for name, r in nccl:
        if r.wrong:
            causes.append(_cause(
                "nccl-wrong-results", None, None, 0.95,
                f"{name}: {r.wrong} wrong results in the collective",
                [f"#wrong {r.wrong} summed over sizes"],
                "data was corrupted in transit or in a GPU: run the DCGM diagnostics "
                "(dcgmi diag -r 3) on each host of the run and check the fabric's error "
                "counters"))
        hosts = r.hosts
        if len(hosts) < 2:
            notes.append(f"{name}: {'one host' if hosts else 'no rank lines'}: bus bandwidth "
                         "not judged (within a node it is NVLink-bound, not modelled)")
            continue
        bound = _fabric_bound([by_name.get(h) for h in hosts], rails, link_gbps)
        if bound is None:
            notes.append(f"{name}: no ibstat for its hosts and no --rails/--link-gbps: bus "
                         "bandwidth not judged")
            continue
        busbw, how = r.large_busbw, f"sizes >= {256} MiB"
        if busbw is None:
            notes.append(f"{name}: no size of 256 MiB or more: bus bandwidth not judged")
            continue
        if busbw < BUSBW_SHARE * bound:
            causes.append(_cause(
                "nccl-below-fabric", None, None, 0.7,
                f"{name}: busbw {busbw:.1f} GB/s across {len(hosts)} hosts, "
                f"{busbw / bound:.0%} of the fabric's {bound:.0f} GB/s per node",
                [f"best busbw at {how}: {busbw:.2f} GB/s",
                 f"ring bound: rails x rate = {bound:.0f} GB/s (below {BUSBW_SHARE:.0%} "
                 "is a deficit)"],
                "find the slow rail or host first (ib_write_bw per rail, the causes above); "
                "then NCCL's choice of NICs (NCCL_DEBUG=INFO: 'NET/IB : Using', "
                "NCCL_IB_HCA) and GPU-NIC affinity"))
    return causes


def _fabric_bound(hosts: list[NodeRecord | None], rails: int | None,
                  link_gbps: float | None) -> float | None:
    """The ring bound as the fabric was built: each host's rails (its active ports of the
    fastest port's link layer, at least half its rate: a rail trained down still counts) at
    the hosts' usual rail rate, the best host's figure (a degraded rail is a cause of its
    own, not a lower bar)."""
    if rails is not None and link_gbps is not None:
        return fabric_busbw_gbs(rails, link_gbps)
    counts, tops = [], []
    for h in hosts:
        active = [p for p in (h.ports if h is not None else []) if p.active and p.rate_gbps]
        if not active:
            return None
        top = max(active, key=lambda p: p.rate_gbps or 0.0)
        rate = top.rate_gbps or 0.0
        counts.append(sum(1 for p in active if p.link_layer == top.link_layer
                          and (p.rate_gbps or 0.0) >= rate / 2))
        tops.append(rate)
    if not counts:
        return None
    return fabric_busbw_gbs(rails or max(counts), link_gbps or statistics.median(tops))


def _merged(causes: list[RdmaCause]) -> list[RdmaCause]:
    """One cause per kind and port: the strongest, with the others' evidence added."""
    out: dict[tuple[str, str | None, str | None], RdmaCause] = {}
    for c in sorted(causes, key=lambda c: -c.score):
        key = (c.kind, c.node, c.port)
        if key in out and c.node is not None:
            first = out[key]
            out[key] = first.model_copy(update={"evidence": [*first.evidence, *c.evidence]})
        else:
            out[key if c.node is not None else (c.kind, c.summary, None)] = c
    return list(out.values())


def diagnose_rdma(nodes: list[NodeRecord], before: list[NodeRecord] | None = None,
                  nccl: list[tuple[str, NcclResult]] | None = None, *,
                  rails: int | None = None, link_gbps: float | None = None) -> RdmaDiagnosis:
    """Every cause the recordings show, strongest first (see the module docstring)."""
    notes: list[str] = []
    prev = {n.name: n for n in before or []}
    total = "between the recordings" if before is not None else \
        "since the counters were last cleared"
    if before is None:
        notes.append("counters are totals since they were last cleared: record before and "
                      "after a test (--before DIR) to see what changed")
    causes = _port_rules(nodes) + _perftest_rules(nodes)
    per_port: dict[tuple[str, str], Counters] = {}
    for n in nodes:
        p = prev.get(n.name) if before is not None else None
        if before is not None and p is None:
            notes.append(f"{n.name}: not in the earlier recording: its counters are totals")
        for group, ib in ((n.counters, True), (n.ethtool, False)):
            old = (p.counters if ib else p.ethtool) if p is not None else None
            for port, c in _delta(group, old, notes, n.name).items():
                per_port[(n.name, port)] = c
                causes += _counter_rules(n.name, port, c, ib, total)
    causes += _outlier_rules(per_port, total)
    runs = list(nccl or []) + [r for n in nodes for r in n.nccl]
    causes += _nccl_rules(nodes, runs, rails, link_gbps, notes)
    for what, has in (("ibstat", any(n.ports for n in nodes)),
                      ("IB port counters", any(n.counters for n in nodes)),
                      ("ethtool -S", any(n.ethtool for n in nodes)),
                      ("perftest", any(n.perftest for n in nodes)),
                      ("nccl-tests", bool(runs))):
        if not has:
            notes.append(f"no {what} recorded: what it shows was not judged")
    causes = _merged(causes)
    causes.sort(key=lambda c: (-c.score, c.node or "", c.port or "", c.kind))
    return RdmaDiagnosis(causes=causes, nodes=[n.name for n in nodes], notes=notes)
