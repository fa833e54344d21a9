"""Rank candidate causes by correlating symptoms with metric series (pure).

Inputs are plain data: symptom windows (a model pull: when, how fast, and how fast it was in
the healthy lab), per-node per-segment receive/transmit rates (Mbit/s), TCP retransmitted and
sent segments per node, interface carrier and MTU, and (when the platform exports them) DCGM
GPU engine activity. Output is a list of :class:`Cause`, strongest first, each localised to a
node and a segment with the numbers that led there. A lab without symptoms gives [].

How a slow pull is explained (each slow pull window is classified, then the windows are
aggregated):

- *noisy neighbour*: another node received more than twice what the puller got on the same
  segment while the storage port was busy (≥ 60 % of its rate) — the puller lost the
  contention; the top receiver is named.
- *loss*: the storage node retransmitted more than 5 % of its TCP segments during the pull,
  counted against all it sent or against the full-size segments it sent on the pull's segment
  (a pull stalled in timeouts sends little, and other traffic would dilute the first).
- *capped link*: neither of the above, the puller's rate was low and flat. When every pull
  is capped at about the same rate, the shared end is capped: the storage node's port
  (``slow-storage``); otherwise each capped puller's own port (``rate``).

When no pull is slow, loss still shows in the storage node's TCP counters read around each
pull (more than ``net check``'s loss threshold retransmitted): a few % loss on a short path
costs TCP little throughput, yet ``net check``'s pings see it, and both must agree.

Interface facts localise directly: no carrier is ``down``; an MTU other than the segment's
is ``mtu``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from aiplat.netdiag.netcheck import LOSS_PCT

SLOW_FACTOR = 3.0
RETRANS_SHARE = 0.05
LOSS_SHARE = LOSS_PCT / 100
"""A pull that is not slow still shows loss when the storage node retransmitted more than
this share of what it sent during it: the threshold ``net check`` applies to its pings, so
both agree (a few % loss on a short path costs TCP little throughput)."""
BUSY_SHARE = 0.6
GPU_IDLE = 0.2

Points = list[tuple[float, float]]
Key = tuple[str, str]  # (node, segment)


class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PullWindow(_M):
    node: str
    start: float
    end: float
    mbit: float
    baseline_mbit: float
    store_retrans: int | None = Field(
        default=None, description="TCP segments the storage node retransmitted during the pull")
    store_sent: int | None = Field(
        default=None, description="TCP segments the storage node sent during the pull")

    @property
    def retrans_share(self) -> float | None:
        if self.store_retrans is None or not self.store_sent:
            return None
        return min(self.store_retrans / self.store_sent, 1.0)

    @property
    def fall(self) -> float:
        return self.baseline_mbit / self.mbit if self.mbit > 0 else float("inf")

    @property
    def slow(self) -> bool:
        return self.fall >= SLOW_FACTOR


class Facts(_M):
    store: str
    pull_segment: str
    link_mbit: float
    compute: list[str]
    mtu: dict[str, int] = Field(description="segment -> configured MTU")


class Signals(_M):
    rx: dict[str, Points] = Field(default_factory=dict, description="'node/segment' -> Mbit/s")
    tx: dict[str, Points] = Field(default_factory=dict)
    retrans: dict[str, Points] = Field(default_factory=dict, description="node -> segments/s")
    out_segs: dict[str, Points] = Field(default_factory=dict, description="node -> segments/s")
    carrier: dict[str, float] = Field(default_factory=dict, description="'node/segment' -> 0|1")
    mtu: dict[str, float] = Field(default_factory=dict, description="'node/segment' -> bytes")
    gpu_active: dict[str, Points] = Field(default_factory=dict, description="node -> 0..1")


class Cause(_M):
    kind: str
    node: str | None
    segment: str | None
    score: float
    summary: str
    evidence: list[str]


def key(node: str, segment: str) -> str:
    return f"{node}/{segment}"


def _in(points: Points, start: float, end: float) -> list[float]:
    inside = [v for t, v in points if start <= t <= end]
    return inside


def _window_values(points: Points, w: PullWindow) -> list[float]:
    # Skip the first second (TCP ramp-up, irate needs two samples) when the pull was long.
    vals = _in(points, w.start + 1.0, w.end + 0.5) if w.end - w.start > 2 else []
    return vals or _in(points, w.start, w.end + 1.0)


def _median(vals: Sequence[float]) -> float:
    return statistics.median(vals) if vals else 0.0


def _p90(vals: Sequence[float]) -> float:
    if not vals:
        return 0.0
    s = sorted(vals)
    return s[min(len(s) - 1, int(0.9 * len(s)))]


def _interface_causes(facts: Facts, sig: Signals) -> list[Cause]:
    out = []
    for k, carrier in sorted(sig.carrier.items()):
        node, seg = k.split("/", 1)
        if carrier < 1:
            out.append(Cause(kind="down", node=node, segment=seg, score=1.0,
                             summary=f"{seg} link of {node} is down",
                             evidence=[f"node_network_carrier{{node={node!r}, device={seg!r}}}"
                                       f" = {carrier:g}"]))
    for k, mtu in sorted(sig.mtu.items()):
        node, seg = k.split("/", 1)
        want = facts.mtu.get(seg)
        if want is not None and int(mtu) != want:
            out.append(Cause(kind="mtu", node=node, segment=seg, score=0.95,
                             summary=f"MTU mismatch on {seg}: {node} has {int(mtu)}, "
                                     f"the segment {want}",
                             evidence=[f"node_network_mtu_bytes{{node={node!r}, "
                                       f"device={seg!r}}} = {int(mtu)}, expected {want}"]))
    return out


def retransmitted(w: PullWindow, facts: Facts, sig: Signals) -> tuple[float, float]:
    """The storage node's retransmitted share of its TCP segments during pull ``w``: of all
    it sent, and of the full-size segments it sent on the pull's segment."""
    seg = facts.pull_segment
    re = sum(_window_values(sig.retrans.get(facts.store, []), w))
    sent = sum(_window_values(sig.out_segs.get(facts.store, []), w))
    share = re / sent if sent > 0 else 0.0
    # The node's TCP counters include its other traffic (metrics scrapes on the management
    # segment). A pull stalled in retransmission timeouts sends so little that this traffic
    # dilutes its retransmissions to ~1%; against the full-size segments the store sent on
    # the pull's segment they stay near the loss rate. A capped pull keeps that segment busy,
    # so for it both shares are the same.
    frame = facts.mtu.get(seg, 1500) + 14  # Ethernet header: interface counters include it
    seg_sent = sum(v * 1e6 / 8 / frame
                   for v in _window_values(sig.tx.get(key(facts.store, seg), []), w))
    seg_share = min(re / seg_sent, 1.0) if seg_sent > 0 else 0.0
    return share, seg_share


def _classify(w: PullWindow, facts: Facts, sig: Signals) -> tuple[str, str | None, list[str]]:
    seg = facts.pull_segment
    puller_rx = _window_values(sig.rx.get(key(w.node, seg), []), w)
    store_tx = _median(_window_values(sig.tx.get(key(facts.store, seg), []), w))
    others = {n: _median(_window_values(sig.rx.get(key(n, seg), []), w))
              for n in facts.compute if n != w.node}
    top, top_rx = max(others.items(), key=lambda kv: kv[1], default=(None, 0.0))
    got = _median(puller_rx)
    head = (f"{w.node}'s pull got {w.mbit:.0f} Mbit/s, {w.fall:.0f}x below its baseline "
            f"{w.baseline_mbit:.0f} Mbit/s")
    if top is not None and top_rx > 2 * max(got, 1.0) and store_tx >= BUSY_SHARE * facts.link_mbit:
        return "noisy", top, [
            head,
            f"meanwhile {top} received {top_rx:.0f} Mbit/s on {seg} and {facts.store}'s {seg} "
            f"port sent {store_tx:.0f} Mbit/s (its rate: {facts.link_mbit:.0f})"]
    if _median(puller_rx) >= BUSY_SHARE * facts.link_mbit:
        # The puller's own port is busy with something other than its pull: it is the
        # neighbour making the noise (and suffers from it too).
        return "noisy", w.node, [
            head, f"meanwhile {w.node} itself received {got:.0f} Mbit/s on {seg}, near its "
                  f"port rate {facts.link_mbit:.0f}: other traffic took the link"]
    share, seg_share = retransmitted(w, facts, sig)
    if max(share, seg_share) > RETRANS_SHARE:
        return "loss", w.node, [
            head, f"{facts.store} retransmitted {share:.0%} of its TCP segments meanwhile, "
                  f"{seg_share:.0%} of the full-size segments it sent on {seg}"]
    plateau = _p90(puller_rx)
    return "cap", w.node, [
        head, f"{w.node}'s {seg} receive rate flat near {plateau:.0f} Mbit/s "
              f"(retransmissions {share:.1%}, {seg_share:.1%} on {seg})"]


def rank(facts: Facts, windows: Sequence[PullWindow], sig: Signals) -> list[Cause]:
    """Candidate causes, strongest first."""
    causes = _interface_causes(facts, sig)
    slow = [w for w in windows if w.slow]
    seg = facts.pull_segment
    found: dict[tuple[str, str | None], list[list[str]]] = {}
    for w in slow:
        kind, node, ev = _classify(w, facts, sig)
        found.setdefault((kind, node), []).append(ev)
    cap_nodes = [n for (k, n) in found if k == "cap"]
    all_capped = len(slow) >= 2 and len(cap_nodes) == len(windows)
    if all_capped:
        plateau = _median([_p90(_window_values(sig.tx.get(key(facts.store, seg), []), w))
                           for w in slow])
        lo, hi = min(w.fall for w in slow), max(w.fall for w in slow)
        fell = f"{lo:.0f}x" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}x"
        causes.append(Cause(
            kind="slow-storage", node=facts.store, segment=seg, score=0.9,
            summary=f"{seg} segment of {facts.store} capped near {plateau:.0f} Mbit/s while "
                    f"pull throughput fell {fell} on every node",
            evidence=[e for (k, _), evs in found.items() if k == "cap" for ev in evs for e in ev]))
    loss_nodes = [n for (k, n) in found if k == "loss"]
    all_lossy = len(slow) >= 2 and len(loss_nodes) == len(windows)
    if all_lossy:
        causes.append(Cause(
            kind="loss", node=facts.store, segment=seg, score=0.8,
            summary=f"packet loss at {facts.store} on {seg}: every pull retransmits",
            evidence=[e for (k, _), evs in found.items() if k == "loss" for ev in evs for e in ev]))
    for (kind, node), evs in found.items():
        if (kind == "cap" and all_capped) or (kind == "loss" and all_lossy):
            continue
        flat = [e for ev in evs for e in ev]
        if kind == "noisy":
            causes.append(Cause(kind="noisy", node=node, segment=seg, score=0.9,
                                summary=f"noisy neighbour: {node} floods {seg}, "
                                        f"{len(evs)} pull(s) slowed", evidence=flat))
        elif kind == "loss":
            causes.append(Cause(kind="loss", node=node, segment=seg, score=0.85,
                                summary=f"packet loss on {seg} towards {node}", evidence=flat))
        else:
            w = next(w for w in slow if w.node == node)
            plateau = _p90(_window_values(sig.rx.get(key(w.node, seg), []), w))
            causes.append(Cause(kind="rate", node=node, segment=seg, score=0.85,
                                summary=f"{seg} segment of {node} capped near {plateau:.0f} "
                                        f"Mbit/s while pull throughput fell {w.fall:.0f}x",
                                evidence=flat))
    if slow:
        causes = _gpu_evidence(causes, slow, sig)
    else:
        causes += _loss_without_slowdown(facts, windows)
    causes.sort(key=lambda c: -c.score)
    return causes


def _loss_without_slowdown(facts: Facts, windows: Sequence[PullWindow]) -> list[Cause]:
    """Loss that did not slow any pull past :data:`SLOW_FACTOR`: the pulls whose storage
    node retransmitted more than :data:`LOSS_SHARE`; every pull lossy puts it at the store."""
    seg = facts.pull_segment
    lossy = [w for w in windows if (w.retrans_share or 0.0) > LOSS_SHARE]
    ev = [f"{facts.store} retransmitted {w.store_retrans:,} of the {w.store_sent:,} TCP "
          f"segments it sent during {w.node}'s pull ({w.retrans_share:.1%}; its TCP counters); "
          f"the pull got {w.mbit:.0f} Mbit/s, baseline {w.baseline_mbit:.0f}"
          for w in lossy]
    if len(windows) >= 2 and len(lossy) == len(windows):
        return [Cause(kind="loss", node=facts.store, segment=seg, score=0.75,
                      summary=f"packet loss at {facts.store} on {seg}: every pull retransmits "
                              "(no pull slowed yet)", evidence=ev)]
    return [Cause(kind="loss", node=w.node, segment=seg, score=0.75,
                  summary=f"packet loss on {seg} towards {w.node}: {w.retrans_share:.1%} of "
                          f"the store's segments retransmitted during its pull (no pull slowed "
                          "yet)", evidence=[e]) for w, e in zip(lossy, ev, strict=True)]


def _gpu_evidence(causes: list[Cause], slow: Sequence[PullWindow], sig: Signals) -> list[Cause]:
    """Where DCGM reports GPU engine activity, add the GPU side of the symptom."""
    lines = []
    for w in slow:
        vals = _in(sig.gpu_active.get(w.node, []), w.start, w.end + 1)
        if vals and _median(vals) < GPU_IDLE:
            lines.append(f"GPU engine activity on {w.node} {_median(vals):.0%} during its pull "
                         "(DCGM_FI_PROF_GR_ENGINE_ACTIVE)")
    if not lines:
        return causes
    return [c.model_copy(update={"evidence": [*c.evidence, *lines]}) for c in causes]


def series_by(labels_points: Sequence[tuple[Mapping[str, str], Points]], *labels: str,
              segment_of: Mapping[str, str] | None = None) -> dict[str, Points]:
    """Index Prometheus series by ``node`` or ``node/segment`` (device mapped to segment)."""
    out: dict[str, Points] = {}
    for lab, pts in labels_points:
        parts = []
        for name in labels:
            v = lab.get(name, "")
            if name == "device" and segment_of is not None:
                if v not in segment_of:
                    break
                v = segment_of[v]
            parts.append(v)
        else:
            out["/".join(parts)] = list(pts)
    return out
