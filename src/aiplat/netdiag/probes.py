"""Network probes between lab nodes (I/O): ping bursts, DF ping sweeps, iperf3, link state.

Every probe is bounded in count and time: a ping burst is ``-c 50 -i 0.005 -w 3``; a DF
sweep is a binary search of at most 14 single probes (``-c 3 -W 0.3``); an iperf3 transfer
is 8 MiB with a 2 s connect timeout, killed after 5 s. Sources run inside the source node's
namespace and target addresses inside lab namespaces only.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Callable

from aiplat.netdiag import sh
from aiplat.netdiag.lab import require_up
from aiplat.netdiag.model import LabError, LabNode, LabPlan, LabSegment, ns_argv
from aiplat.netdiag.netcheck import (
    RATE_SHARE,
    LinkState,
    MtuResult,
    PingResult,
    Problem,
    RateResult,
    SegmentExpect,
    analyse,
)

BURST = 50
IPERF_BYTES = "8M"

_RX = re.compile(r"(\d+) packets transmitted, (\d+) received")
_RTT = re.compile(r"= [\d.]+/([\d.]+)/")


def link_states(plan: LabPlan, node: LabNode) -> tuple[list[LinkState], dict[str, int]]:
    """The node's lab interfaces (state, MTU) and tx packet counters of every interface."""
    out = sh.run(["ip", "-n", node.ns, "-j", "-s", "link", "show"]).stdout
    states, tx = [], {}
    for link in json.loads(out):
        name = link["ifname"]
        tx[name] = int(link.get("stats64", {}).get("tx", {}).get("packets", 0))
        seg = plan.segment_of_iface(name)
        if seg is None or seg.name not in node.addrs:
            continue
        up = "UP" in link.get("flags", []) and "NO-CARRIER" not in link.get("flags", []) \
            and link.get("operstate") in ("UP", "UNKNOWN")
        states.append(LinkState(node=node.name, segment=seg.name, iface=name, up=up,
                                mtu=int(link["mtu"])))
    return states, tx


def ping_burst(plan: LabPlan, seg: LabSegment, src: LabNode, dst: LabNode) -> PingResult:
    _, before = link_states(plan, dst)
    cp = sh.run([*ns_argv(src.ns), "ping", "-q", "-n", "-c", str(BURST), "-i", "0.005",
                 "-w", "3", "-W", "0.5", str(dst.addrs[seg.name])], check=False, timeout=10)
    _, after = link_states(plan, dst)
    m = _RX.search(cp.stdout)
    sent, received = (int(m.group(1)), int(m.group(2))) if m else (BURST, 0)
    rtt = _RTT.search(cp.stdout)
    delta = {k: after.get(k, 0) - v for k, v in before.items() if k != "lo"}
    return PingResult(segment=seg.name, src=src.name, dst=dst.name, sent=sent, received=received,
                      rtt_avg_ms=float(rtt.group(1)) if rtt else None, reply_tx=delta)


def _df_ok(src: LabNode, addr: str, size: int, count: int = 3) -> bool:
    payload = size - 28  # IPv4 and ICMP headers
    cp = sh.run([*ns_argv(src.ns), "ping", "-q", "-n", "-M", "do", "-s", str(payload),
                 "-c", str(count), "-i", "0.01", "-W", "0.3", addr], check=False, timeout=10)
    m = _RX.search(cp.stdout)
    return bool(m and int(m.group(2)) > 0)


def path_mtu(seg: LabSegment, src: LabNode, dst: LabNode) -> MtuResult:
    addr = str(dst.addrs[seg.name])
    if _df_ok(src, addr, seg.mtu, count=5):
        return MtuResult(segment=seg.name, src=src.name, dst=dst.name, path_mtu=seg.mtu)
    lo, hi = 576, seg.mtu - 1
    if not _df_ok(src, addr, lo):
        return MtuResult(segment=seg.name, src=src.name, dst=dst.name, path_mtu=None)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _df_ok(src, addr, mid):
            lo = mid
        else:
            hi = mid - 1
    return MtuResult(segment=seg.name, src=src.name, dst=dst.name, path_mtu=lo)


def iperf(seg: LabSegment, src: LabNode, dst: LabNode) -> RateResult:
    argv = [*ns_argv(src.ns), "iperf3", "-J", "-c", str(dst.addrs[seg.name]), "-n", IPERF_BYTES,
            "--connect-timeout", "2000"]
    try:
        cp = sh.run(argv, check=False, timeout=5)
    except LabError as e:
        return RateResult(segment=seg.name, src=src.name, dst=dst.name, mbit=None,
                          error=f"{IPERF_BYTES}B not done in 5 s" if "within" in str(e)
                          else str(e))
    try:
        data = json.loads(cp.stdout)
        bps = float(data["end"]["sum_received"]["bits_per_second"])
    except (ValueError, KeyError, TypeError):
        err = cp.stdout[-200:] if cp.stdout else cp.stderr[-200:]
        return RateResult(segment=seg.name, src=src.name, dst=dst.name, mbit=None,
                          error=err.strip() or "no result")
    return RateResult(segment=seg.name, src=src.name, dst=dst.name, mbit=bps / 1e6)


def net_check(
    prefix: str, segments: list[str] | None = None, throughput: bool = True,
    progress: Callable[[str], None] = lambda _: None,
) -> tuple[list[Problem], dict[str, object]]:
    """Probe every lab segment; return findings and the raw measurements."""
    state = require_up(prefix)
    plan = state.plan
    t0 = time.monotonic()
    segs = [plan.segment(s) for s in segments] if segments else plan.segments
    links: list[LinkState] = []
    for node in plan.nodes:
        links += link_states(plan, node)[0]
    pings: list[PingResult] = []
    mtus: list[MtuResult] = []
    rates: list[RateResult] = []
    for seg in segs:
        nodes = plan.on(seg)
        progress(f"{seg.name}: ping bursts and DF sweeps between {len(nodes)} nodes")
        dead = {lk.node for lk in links if lk.segment == seg.name and not lk.up}
        if dead:
            progress(f"{seg.name}: link down at {', '.join(sorted(dead))}; not probed")
        nodes = [n for n in nodes if n.name not in dead]
        for a, b in itertools.combinations(nodes, 2):
            pings.append(ping_burst(plan, seg, a, b))
            mtus.append(path_mtu(seg, a, b))
        if throughput and len(nodes) > 1:
            progress(f"{seg.name}: iperf3 around the ring")
            for i, a in enumerate(nodes):
                b = nodes[(i + 1) % len(nodes)]
                if len(nodes) == 2 and i == 1:
                    break
                r = iperf(seg, a, b)
                if r.mbit is None or r.mbit < RATE_SHARE * plan.link_mbit:
                    # Confirm before blaming: a busy CPU can slow one transfer, a cap or a
                    # lossy link slows every one.
                    again = iperf(seg, a, b)
                    if (again.mbit or 0.0) > (r.mbit or 0.0):
                        r = again
                rates.append(r)
    expect = [SegmentExpect(name=s.name, mtu=s.mtu, mbit=plan.link_mbit,
                            nodes=[n.name for n in plan.on(s)]) for s in segs]
    findings = analyse(expect, [lk for lk in links if lk.segment in {s.name for s in segs}],
                       pings, mtus, rates)
    raw: dict[str, object] = {
        "seconds": round(time.monotonic() - t0, 2),
        "links": [lk.model_dump() for lk in links],
        "pings": [p.model_dump() for p in pings],
        "path_mtu": [m.model_dump() for m in mtus],
        "throughput": [r.model_dump() for r in rates],
    }
    return findings, raw
