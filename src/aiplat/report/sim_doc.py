"""Report sections for a simulation result: waits and fairness per tenant, capacity over time.

:func:`sim_sections` turns a :class:`~aiplat.sched.SimResult` into format-neutral
:class:`Section`s (tables, bar charts, and GPUs over time as a line) that the plan report
(or any other document) appends; it formats numbers but computes nothing new, so the
report shows exactly what ``aiplat sim run -o json`` prints; the capacity section also
draws each pool's tenants over time (:mod:`aiplat.report.timelines`, from the job records).
:func:`fgd_section` does the same for an ``aiplat sim fgd`` table. Every FGD figure names
the variant that produced it (``published``: the published simulator's rules; ``aiplat``:
aiplat's own, which the queueing engine uses).
"""

from __future__ import annotations

import bisect
from typing import Any

from aiplat.report.document import Chart, Section, Series, Table
from aiplat.report.timelines import timelines_figure
from aiplat.sched.metrics import SimResult
from aiplat.sched.policies import ENGINE_VARIANT

TIME_POINTS = 60  # sampled points of the GPUs-over-time line


def sim_sections(result: SimResult, *, prefix: str = "sim", subject: str = "the platform",
                 queues: str | None = None) -> list[Section]:
    """Two sections: queues (waits, shares, fairness) and capacity (GPUs over time).
    ``queues`` says which queues ran (e.g. "fair sharing, as rendered in kube/kueue/"): the
    queue section's title and text state it."""
    tenants = [t.name for t in result.tenants] or ["none"]
    rows = [[t.name, str(t.jobs), str(t.started), str(t.waiting), f"{t.wait_p50_h:.2f}",
             f"{t.wait_p95_h:.2f}", f"{t.wait_p99_h:.2f}", f"{t.gpu_hours:,.0f}",
             f"{t.obtained_share:.1%}", f"{t.fair_share:.1%}"] for t in result.tenants]
    table = Table(
        title="Simulated waits and shares per tenant (ClusterQueue)",
        columns=["tenant", "jobs", "started", "waiting", "wait p50 (h)", "wait p95 (h)",
                 "wait p99 (h)", "GPU-hours", "obtained share", "fair share"],
        rows=rows, align=["left", *["right"] * 9],
    )
    waits = Chart(
        id=f"{prefix}-waits", title="Wait before start per tenant", unit="h",
        categories=tenants, kind="bar",
        series=[Series(name=n, values=[getattr(t, f) for t in result.tenants] or [0.0])
                for n, f in (("p50", "wait_p50_h"), ("p95", "wait_p95_h"),
                             ("p99", "wait_p99_h"))],
    )
    shares = Chart(
        id=f"{prefix}-shares", title="Obtained share vs fair share (weights)", unit="%",
        categories=tenants, kind="bar",
        series=[Series(name="obtained", values=[100 * t.obtained_share for t in result.tenants]
                       or [0.0]),
                Series(name="fair", values=[100 * t.fair_share for t in result.tenants]
                       or [0.0])],
    )
    queue_section = Section(
        id=f"{prefix}-queues", title="Simulated queues" + (f" ({queues})" if queues else ""),
        paragraphs=[
            f"{result.jobs} jobs of {subject} simulated over {result.end_h:,.0f} h on its "
            f"Kueue ClusterQueues{f' ({queues})' if queues else ''}: {result.finished} "
            "finished, "
            f"{sum(t.waiting for t in result.tenants)} still waiting at the end, "
            f"{result.never_fit} never fit. Jain's fairness index over obtained ÷ fair share: "
            f"{result.jain_index:.3f} (1 = shares proportional to the weights).",
            f"Preemptions: {result.preemptions}, losing {result.preempted_gpu_hours:,.0f} "
            "GPU-hours of work.",
        ],
        tables=[table], charts=[waits, shares],
    )
    capacity = Section(
        id=f"{prefix}-capacity", title="Simulated capacity",
        paragraphs=[
            f"GPU-hours allocated {result.allocated_gpu_hours:,.0f} of "
            f"{result.provisioned_gpu_hours:,.0f} provisioned (idle and starting nodes "
            f"included): utilisation {result.utilisation:.1%}. Mean fragmented GPUs (the "
            f"FGD measure, variant {ENGINE_VARIANT}: every shape of the workload, exact "
            f"deltas, random ties): {result.mean_fragmented_gpus:.1f}.",
        ],
        charts=_gpus_over_time(result, prefix),
        figures=[timelines_figure(result, fid=f"{prefix}-timelines")] if result.records else [],
    )
    return [queue_section, capacity]


def _gpus_over_time(result: SimResult, prefix: str) -> list[Chart]:
    """A line of allocated, provisioned and fragmented GPUs over the simulated time.

    The timeline holds one point per event, unevenly spaced; the line shows the state in
    force at evenly spaced instants (the last point at or before each), which is what the
    step function looks like at this resolution. Sampling every n-th event instead aliases:
    alternating starts and finishes draw a saw-tooth that never happened.
    """
    timeline = sorted(result.timeline, key=lambda p: p.t)
    if not timeline:
        return []
    end = max(timeline[-1].t, result.end_h * 3600)
    times = [end * i / (TIME_POINTS - 1) for i in range(TIME_POINTS)] if end > 0 else [0.0]
    starts = [p.t for p in timeline]
    points = [timeline[max(0, bisect.bisect_right(starts, t) - 1)] for t in times]
    hours = [t / 3600 for t in times]
    digits = 0 if len({f"{h:,.0f}" for h in hours}) == len(hours) else 2
    return [Chart(
        id=f"{prefix}-gpus", title="GPUs over time", unit="GPUs", kind="line",
        categories=[f"{h:,.{digits}f} h" for h in hours], x=hours, x_unit="hours",
        series=[
            Series(name="allocated", values=[p.allocated_gpus for p in points]),
            Series(name="provisioned", values=[p.provisioned_gpus for p in points]),
            Series(name="fragmented (FGD)", values=[p.fragmented_gpus for p in points]),
        ])]


def fgd_section(table: dict[str, Any], *, prefix: str = "fgd") -> Section:
    """The FGD experiment (:func:`aiplat.sched.fgd.fgd_table`'s result): mean allocation
    ratio per policy and trace, titled with the variant that produced it."""
    means: dict[str, dict[str, float]] = table["mean"]
    traces = list(means)
    policies = list(next(iter(means.values()))) if means else []
    rows = [[p, *(f"{means[t][p]:.2f}" for t in traces)] for p in policies]
    return Section(
        id=f"{prefix}-allocation",
        title=f"FGD experiment (variant {table['variant']})",
        paragraphs=[
            f"GPU allocation ratio (%) at {table['arrival_pct']:g}% arrivals on "
            f"{table['gpus']:,} GPUs, mean of {len(table['seeds'])} seed(s); variant "
            f"{table['variant']} (published: the published FGD simulator's rules; aiplat: "
            "aiplat's own choices).",
        ],
        tables=[Table(title=f"Allocation ratio (%), variant {table['variant']}",
                      columns=["policy", *traces], rows=rows,
                      align=["left", *["right"] * len(traces)])],
    )
