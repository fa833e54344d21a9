"""``net check``'s problems from probe results (pure: results in, problems out).

Probes (see :mod:`aiplat.netdiag.probes`) measure, per segment: a ping burst between every
pair of nodes (loss, latency, and which interface the responder's replies left by), a
don't-fragment ping sweep (path MTU), a bounded iperf3 transfer around a ring of nodes (TCP
throughput) and each node's interface state. A problem is *localised* to a node when that
node is common to every bad measurement on the segment and at least two measurements are bad
(with only two nodes on a segment it stays a pair finding); a node's own interface state
(down, wrong MTU) localises directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

LOSS_PCT = 2.0
RATE_SHARE = 0.3
"""A transfer below this share of the expected rate is slow. Generous on purpose: on a small
shared host (2 cores) a healthy 1 Gbit/s lab port measures 0.5-1.2 Gbit/s; a cap or loss
measures far below."""


class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SegmentExpect(_M):
    name: str
    mtu: int
    mbit: float = Field(description="expected TCP throughput per port")
    nodes: list[str]


class PingResult(_M):
    segment: str
    src: str
    dst: str
    sent: int
    received: int
    rtt_avg_ms: float | None = None
    reply_tx: dict[str, int] | None = Field(
        default=None, description="responder's tx packets per interface during the burst")

    @property
    def loss_pct(self) -> float:
        return 100.0 * (self.sent - self.received) / self.sent if self.sent else 100.0


class MtuResult(_M):
    segment: str
    src: str
    dst: str
    path_mtu: int | None = Field(description="largest IPv4 packet that passed with DF; None: none")


class RateResult(_M):
    segment: str
    src: str
    dst: str
    mbit: float | None
    error: str = ""


class LinkState(_M):
    node: str
    segment: str
    iface: str
    up: bool
    mtu: int


class Problem(_M):
    """A network problem the probes point at: what (kind), where (a node, or a pair or the
    segment when no one node is common to the bad measurements), and the evidence. Not a
    ``Finding``: it is a hypothesis with a score, ranked against the others."""

    kind: str = Field(description="down | loss | mtu | asym | rate")
    node: str | None = Field(description="the node localised to; None: a pair or the segment")
    segment: str
    message: str
    evidence: list[str]
    score: float = Field(description="how strongly the evidence points at this cause (0..1)")


def _localise(bad: Sequence[tuple[str, str]], nodes: Sequence[str],
              measured: Sequence[tuple[str, str]] = ()) -> str | None:
    """The node common to every bad pair, when that singles out one node."""
    if not bad:
        return None
    common = set(bad[0])
    for pair in bad[1:]:
        common &= set(pair)
    if len(common) == 1 and (len(bad) >= 2 or len(nodes) == 2):
        return next(iter(common))
    # Otherwise: the one node all of whose measured pairs are bad, if exactly one is.
    pairs = {frozenset(p) for p in measured} if measured else set()
    badset = {frozenset(p) for p in bad}
    whole = [n for n in nodes
             if (mine := [p for p in pairs if n in p]) and len(mine) >= 2
             and all(p in badset for p in mine)]
    return whole[0] if len(whole) == 1 else None


def analyse(
    segments: Sequence[SegmentExpect],
    links: Iterable[LinkState],
    pings: Iterable[PingResult],
    mtus: Iterable[MtuResult],
    rates: Iterable[RateResult],
) -> list[Problem]:
    """Findings, strongest first; a healthy lab gives []."""
    links, pings, mtus, rates = list(links), list(pings), list(mtus), list(rates)
    findings: list[Problem] = []
    down: set[tuple[str, str]] = set()
    for seg in segments:
        for link in (lk for lk in links if lk.segment == seg.name):
            if not link.up:
                down.add((link.node, seg.name))
                findings.append(Problem(
                    kind="down", node=link.node, segment=seg.name, score=1.0,
                    message=f"{seg.name} link of {link.node} is down",
                    evidence=[f"{link.node} {link.iface}: no carrier / operstate not UP"]))
            elif link.mtu != seg.mtu:
                findings.append(Problem(
                    kind="mtu", node=link.node, segment=seg.name, score=0.95,
                    message=f"MTU mismatch on {seg.name}: {link.node} has {link.mtu}, "
                            f"the segment {seg.mtu}",
                    evidence=[f"{link.node} {link.iface} mtu {link.mtu} (expected {seg.mtu})"]))
        findings += _pair_findings(seg, down, pings, mtus, rates)
        findings += _asym_findings(seg, links, pings)
    findings.sort(key=lambda f: -f.score)
    return _dedupe(findings)


def _pair_findings(seg: SegmentExpect, down: set[tuple[str, str]], pings: list[PingResult],
                   mtus: list[MtuResult], rates: list[RateResult]) -> list[Problem]:
    out: list[Problem] = []
    spings = [p for p in pings if p.segment == seg.name]
    downed = {n for n, s in down if s == seg.name}

    def touches_down(a: str, b: str) -> bool:
        return a in downed or b in downed

    unreachable = [p for p in spings if p.received == 0 and not touches_down(p.src, p.dst)]
    lossy = [p for p in spings if LOSS_PCT < p.loss_pct < 100.0]
    for kind, bad, what in (("down", unreachable, "unreachable"), ("loss", lossy, "loss")):
        if not bad:
            continue
        node = _localise([(p.src, p.dst) for p in bad], seg.nodes,
                         [(p.src, p.dst) for p in spings])
        ev = [f"{p.src} -> {p.dst}: {p.sent - p.received}/{p.sent} lost ({p.loss_pct:.0f} %)"
              for p in bad]
        clean = [p for p in spings if p.loss_pct <= LOSS_PCT]
        if clean:
            ev.append(f"{len(clean)} other pairs on {seg.name} lost nothing")
        where = node or ", ".join(sorted({f"{p.src}<->{p.dst}" for p in bad}))
        avg = sum(p.loss_pct for p in bad) / len(bad)
        msg = (f"{where} unreachable on {seg.name}" if kind == "down"
               else f"packet loss on {seg.name} at {where}: {avg:.0f} % of pings lost")
        del what
        out.append(Problem(kind=kind, node=node, segment=seg.name, message=msg, evidence=ev,
                           score=0.9 if node else 0.6))
    small = [m for m in mtus if m.segment == seg.name and m.path_mtu is not None
             and m.path_mtu < seg.mtu and not touches_down(m.src, m.dst)]
    if small:
        node = _localise([(m.src, m.dst) for m in small], seg.nodes)
        out.append(Problem(
            kind="mtu", node=node, segment=seg.name, score=0.9 if node else 0.6,
            message=f"path MTU on {seg.name} is {min(m.path_mtu or 0 for m in small)} at "
                    f"{node or 'some pairs'}, the segment is configured for {seg.mtu}",
            evidence=[f"{m.src} -> {m.dst}: largest DF packet {m.path_mtu} B" for m in small]))
    # Throughput through a lossy or unreachable node is a consequence, not another cause.
    downed |= {f.node for f in out if f.kind in ("loss", "down") and f.node}
    srates = [r for r in rates if r.segment == seg.name and not touches_down(r.src, r.dst)]
    slow = [r for r in srates if r.mbit is None or r.mbit < RATE_SHARE * seg.mbit]
    if slow:
        node = _localise([(r.src, r.dst) for r in slow], seg.nodes,
                         [(r.src, r.dst) for r in srates])
        ev = [f"{r.src} -> {r.dst}: "
              + (f"{r.mbit:.0f} Mbit/s" if r.mbit is not None else f"no result ({r.error})")
              + f" (expected about {seg.mbit:.0f})" for r in slow]
        out.append(Problem(
            kind="rate", node=node, segment=seg.name, score=0.8 if node else 0.5,
            message=f"TCP throughput on {seg.name} at {node or 'some pairs'} below "
                    f"{RATE_SHARE:.0%} of the expected {seg.mbit:.0f} Mbit/s", evidence=ev))
    return out


def _asym_findings(seg: SegmentExpect, links: list[LinkState],
                   pings: list[PingResult]) -> list[Problem]:
    out: list[Problem] = []
    iface = {lk.node: lk.iface for lk in links if lk.segment == seg.name}
    per_node: dict[str, list[str]] = {}
    for p in pings:
        if p.segment != seg.name or p.reply_tx is None or p.received < 5 or p.dst not in iface:
            continue
        on_seg = p.reply_tx.get(iface[p.dst], 0)
        if on_seg >= 0.5 * p.received:
            continue
        other, count = max(((k, v) for k, v in p.reply_tx.items() if k != iface[p.dst]),
                           key=lambda kv: kv[1], default=("", 0))
        if count >= 0.8 * p.received:
            per_node.setdefault(p.dst, []).append(
                f"{p.src} -> {p.dst}: {p.received} replies, {on_seg} left via {iface[p.dst]}, "
                f"{count} via {other}")
    for node, ev in per_node.items():
        out.append(Problem(kind="asym", node=node, segment=seg.name, score=0.85,
                           message=f"asymmetric path: {node} answers {seg.name} traffic over "
                                   f"another segment", evidence=ev))
    return out


def _dedupe(findings: list[Problem]) -> list[Problem]:
    """Keep the strongest finding per (kind, node, segment); drop the consequences of a down
    link or a loss (its rate finding on the same node and segment)."""
    kept: dict[tuple[str, str | None, str], Problem] = {}
    causes = {(f.node, f.segment) for f in findings if f.kind in ("down", "loss") and f.node}
    for f in findings:
        key = (f.kind, f.node, f.segment)
        if f.kind == "rate" and (f.node, f.segment) in causes:
            continue
        if key in kept:  # same cause seen by a weaker probe: keep its evidence too
            first = kept[key]
            kept[key] = first.model_copy(update={"evidence": [*first.evidence, *f.evidence]})
            continue
        kept[key] = f
    return list(kept.values())
