"""Per-tenant timelines of a simulated month, one panel per pool (pure: SimResult -> Figure).

Design: the facts come from the simulator's job records (:class:`aiplat.sched.metrics.
JobRecord`: when each job ran, on which pool, with how many GPUs, when it was preempted),
reduced to evenly spaced buckets by :func:`pool_timelines`:

- usage: a tenant's GPUs in use, averaged over the bucket (GPU-seconds / bucket length),
  so the areas drawn hold exactly the GPU-hours the records hold; stacked per tenant;
- waits: the tenant's jobs waiting (submitted and not running: before the first start, and
  between a preemption or eviction and the restart), averaged the same way; a line each;
- preemptions: a mark at each preemption, on the tenant's row.

A job's pool is its record's flavor (the pool of its first pod set, as the simulator names
it). The drawing has the two layouts of :mod:`aiplat.report.drawings`; every text escaped,
ids ``<figure id>_...``.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from aiplat.report.charts import PALETTE
from aiplat.report.document import Figure, Table
from aiplat.report.drawings import GAP, INK, LINE, MUTED, PAD, Body, figure_svg, shorten, text
from aiplat.sched.metrics import JobRecord, SimResult

BUCKETS = 120
USAGE_H, WAIT_H, MARK_H = 80.0, 34.0, 12.0
DAY = 86_400.0
UNADMITTED = "none yet (never admitted)"
"""The pool of a job that never got a flavor: it waits, on no pool."""


@dataclass(frozen=True)
class TenantLine:
    tenant: str
    gpus: list[float]  # average GPUs in use per bucket
    waiting: list[float]  # average jobs waiting per bucket
    preemptions: list[float]  # times, seconds
    gpu_hours: float


@dataclass(frozen=True)
class PoolTimeline:
    pool: str
    end_s: float
    tenants: list[TenantLine]


def _spread(values: list[float], a: float, b: float, weight: float, width: float) -> None:
    """Add ``weight`` x (overlap of [a, b) with each bucket) / bucket width."""
    if b <= a:
        return
    first, last = int(a // width), min(int(b // width), len(values) - 1)
    for k in range(max(first, 0), last + 1):
        lo, hi = max(a, k * width), min(b, (k + 1) * width)
        if hi > lo:
            values[k] += weight * (hi - lo) / width


def _waits(r: JobRecord, end: float) -> list[tuple[float, float]]:
    """When the job waited: from submission (or each stop) to the next start."""
    out, t = [], r.submit
    for a, b in r.spans:
        if a > t:
            out.append((t, a))
        t = b
    stopped = r.state in ("finished", "never-fits", "deactivated")
    if not stopped and (not r.spans or r.spans[-1][1] < end):
        out.append((t, end))
    return out


def pool_timelines(result: SimResult, buckets: int = BUCKETS) -> list[PoolTimeline]:
    """Each pool's tenants over the simulated time, in buckets of equal length."""
    end = max(result.end_h * 3600, max((b for r in result.records for _, b in r.spans),
                                       default=0.0))
    width = end / buckets if end > 0 else 1.0
    pools: dict[str, dict[str, list[JobRecord]]] = {}
    for r in result.records:
        pools.setdefault(r.flavor or UNADMITTED, {}).setdefault(r.queue, []).append(r)
    out = []
    for pool in sorted(pools):
        lines = []
        for tenant in sorted(pools[pool]):
            gpus, waiting = [0.0] * buckets, [0.0] * buckets
            preempted: list[float] = []
            hours = 0.0
            for r in pools[pool][tenant]:
                for a, b in r.spans:
                    _spread(gpus, a, b, r.gpus, width)
                    hours += r.gpus * (b - a) / 3600
                for a, b in _waits(r, end):
                    _spread(waiting, a, b, 1.0, width)
                preempted += r.preempted_at
            lines.append(TenantLine(tenant, gpus, waiting, sorted(preempted), hours))
        out.append(PoolTimeline(pool, end, lines))
    return out


def timelines_table(pools: list[PoolTimeline]) -> Table:
    rows = [[p.pool, t.tenant, f"{t.gpu_hours:,.0f}", f"{max(t.gpus, default=0):,.1f}",
             f"{max(t.waiting, default=0):,.1f}", str(len(t.preemptions))]
            for p in pools for t in p.tenants]
    return Table(columns=["pool", "tenant", "GPU-hours", "peak GPUs (bucket mean)",
                          "peak jobs waiting", "preemptions"], rows=rows,
                 align=["left", "left", "right", "right", "right", "right"])


def _step_path(xs: list[float], top: list[float], bottom: list[float]) -> str:
    """A closed area between two step lines over the buckets (x edges ``xs``)."""
    up = [f"{xs[k]:.1f},{top[k]:.1f} {xs[k + 1]:.1f},{top[k]:.1f}" for k in range(len(top))]
    down = [f"{xs[k + 1]:.1f},{bottom[k]:.1f} {xs[k]:.1f},{bottom[k]:.1f}"
            for k in reversed(range(len(bottom)))]
    return "M" + " L".join(up + down) + " Z"


def _nice(v: float) -> float:
    if v <= 0:
        return 1.0
    step = 10.0 ** math.floor(math.log10(v))
    return float(next(m * step for m in (1, 2, 2.5, 5, 10) if m * step >= v))


def _panel(p: PoolTimeline, y: float, width: float, ident: str,
           colour: dict[str, str]) -> tuple[list[str], float]:
    left, right = PAD + 30, width - PAD
    plot_w = right - left
    n = len(p.tenants[0].gpus) if p.tenants else 1
    xs = [left + plot_w * k / n for k in range(n + 1)]
    parts = [f'<g class="pool-timeline" id="{ident}"><title>{html.escape(p.pool)}</title>',
             text(PAD, y + 11, shorten(f"pool {p.pool}", width - 2 * PAD, 11), size=11,
                  weight="bold")]
    y += 18
    # legend: one swatch per tenant
    lx = PAD
    for t in p.tenants:
        label = shorten(t.tenant, 100, 9)
        w = len(label) * 0.6 * 9 + 18
        if lx + w > width - PAD and lx > PAD:
            lx, y = PAD, y + 14
        parts.append(f'<rect x="{lx:.1f}" y="{y:.1f}" width="10" height="10" '
                     f'fill="{colour[t.tenant]}"/>')
        parts.append(text(lx + 14, y + 9, label, size=9))
        lx += w
    y += 28
    # usage, stacked
    totals = [sum(t.gpus[k] for t in p.tenants) for k in range(n)]
    top_v = _nice(max(totals, default=0.0))
    base = [y + USAGE_H] * n
    parts.append(text(PAD, y + 8, f"{top_v:g}", size=8.5, fill=MUTED))
    parts.append(text(PAD, y + USAGE_H, "0", size=8.5, fill=MUTED))
    parts.append(text(left, y - 3, "GPUs in use", size=8.5, fill=MUTED))
    parts.append(f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{right:.1f}" y2="{y:.1f}" '
                 f'stroke="{LINE}" stroke-dasharray="2 3"/>')
    for i, t in enumerate(p.tenants):
        top = [base[k] - USAGE_H * t.gpus[k] / top_v for k in range(n)]
        if any(v > 0 for v in t.gpus):
            parts.append(f'<path class="usage" id="{ident}_usage_{i}" '
                         f'd="{_step_path(xs, top, base)}" fill="{colour[t.tenant]}" '
                         f'fill-opacity="0.85"><title>{html.escape(t.tenant)}: '
                         f'{t.gpu_hours:,.0f} GPU-hours</title></path>')
        base = top
    y += USAGE_H + 8
    # waits, one line per tenant
    wait_v = _nice(max((max(t.waiting, default=0.0) for t in p.tenants), default=0.0))
    parts.append(text(left, y + 6, "jobs waiting", size=8.5, fill=MUTED))
    parts.append(text(PAD, y + 14, f"{wait_v:g}", size=8.5, fill=MUTED))
    y += 8
    parts.append(f'<line x1="{left:.1f}" y1="{y + WAIT_H:.1f}" x2="{right:.1f}" '
                 f'y2="{y + WAIT_H:.1f}" stroke="{LINE}"/>')
    for i, t in enumerate(p.tenants):
        if not any(v > 0 for v in t.waiting):
            continue
        pts = " L".join(f"{xs[k]:.1f},{y + WAIT_H * (1 - t.waiting[k] / wait_v):.1f} "
                        f"{xs[k + 1]:.1f},{y + WAIT_H * (1 - t.waiting[k] / wait_v):.1f}"
                        for k in range(n))
        parts.append(f'<path class="waiting" id="{ident}_waiting_{i}" d="M{pts}" fill="none" '
                     f'stroke="{colour[t.tenant]}" stroke-width="1.5"/>')
    y += WAIT_H + 6
    # preemptions: a mark per preemption on the tenant's row
    parts.append(text(left, y + 8, "preemptions", size=8.5, fill=MUTED))
    y += 11
    for i, t in enumerate(p.tenants):
        row_y = y + i * MARK_H
        parts.append(f'<line x1="{left:.1f}" y1="{row_y + MARK_H / 2:.1f}" x2="{right:.1f}" '
                     f'y2="{row_y + MARK_H / 2:.1f}" stroke="#eeeeee"/>')
        for k, at in enumerate(t.preemptions):
            x = left + plot_w * at / p.end_s if p.end_s else left
            parts.append(f'<path class="preemption" id="{ident}_preempt_{i}_{k}" '
                         f'd="M{x:.1f},{row_y + 2:.1f} l4,8 l-8,0 Z" '
                         f'fill="{colour[t.tenant]}"/>')
        parts.append(text(right, row_y + 9, f"{len(t.preemptions)}", size=8.5,
                          anchor="end", fill=MUTED))
    y += MARK_H * len(p.tenants) + 2
    # time axis in days
    days = p.end_s / DAY
    step = _nice(days / 5) if days > 0 else 1.0
    d = 0.0
    while d <= days + 1e-9:
        x = left + plot_w * d / days if days else left
        parts.append(f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x:.1f}" y2="{y + 3:.1f}" '
                     f'stroke="{INK}"/>')
        parts.append(text(x, y + 13, f"{d:g}", size=8.5, anchor="middle"))
        d += step
    parts.append(text(right, y + 25, "days", size=8.5, anchor="end", fill=MUTED))
    parts.append("</g>")
    return parts, y + 30


def _body(pools: list[PoolTimeline]) -> Body:
    # one colour per tenant in every pool
    tenants = sorted({t.tenant for p in pools for t in p.tenants})
    colour = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(tenants)}

    def body(width: float, prefix: str) -> tuple[str, float]:
        out: list[str] = []
        y = PAD
        if not pools:
            out.append(text(PAD, y + 12, "no job ran in the simulated time", size=10))
            y += 24
        for i, p in enumerate(pools):
            parts, y = _panel(p, y, width, f"{prefix}pool_{i}", colour)
            out += parts
            y += GAP
        return "\n".join(out) + "\n", y + PAD
    return body


def timelines_figure(result: SimResult, *, fid: str = "sim-timelines") -> Figure:
    pools = pool_timelines(result)
    return Figure(
        id=fid, title="Tenants over the simulated time, per pool",
        svg=figure_svg(fid, "Tenants over the simulated time, per pool", _body(pools)),
        caption=f"Per pool: each tenant's GPUs in use (stacked, mean over {BUCKETS} equal "
                "time steps), its jobs waiting to start or restart, and a mark at each "
                "preemption (the count at the right).",
        table=timelines_table(pools))
