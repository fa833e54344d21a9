"""Report sections for a simulation result: waits and fairness per tenant, capacity over time.

:func:`sim_sections` turns a :class:`~aiplat.sched.SimResult` into format-neutral
:class:`Section`s (tables and bar charts) that the plan report (or any other document)
appends; it formats numbers but computes nothing new, so the report shows exactly what
``aiplat sim run -o json`` prints.
"""

from __future__ import annotations

from aiplat.report.document import Chart, Section, Series, Table
from aiplat.sched.metrics import SimResult

TIME_BUCKETS = 15


def sim_sections(result: SimResult, *, prefix: str = "sim", subject: str = "the platform"
                 ) -> list[Section]:
    """Two sections: queues (waits, shares, fairness) and capacity (GPUs over time)."""
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
    queues = Section(
        id=f"{prefix}-queues", title="Simulated queues",
        paragraphs=[
            f"{result.jobs} jobs of {subject} simulated over {result.end_h:,.0f} h on its "
            f"Kueue ClusterQueues: {result.finished} finished, "
            f"{sum(t.waiting for t in result.tenants)} still waiting at the end, "
            f"{result.never_fit} never fit. Jain's fairness index over obtained ÷ fair share: "
            f"{result.jain_index:.3f} (1 = shares proportional to the weights).",
            f"Preemptions: {result.preemptions}, losing {result.preempted_gpu_hours:,.0f} "
            "GPU-hours of work.",
        ],
        tables=[table], charts=[waits, shares],
    )
    timeline = result.timeline
    step = max(1, len(timeline) // TIME_BUCKETS)
    points = timeline[::step] or []
    cats = [f"{p.t / 3600:,.0f} h" for p in points]
    if len(set(cats)) != len(cats):
        cats = [f"{p.t / 3600:,.2f} h" for p in points]
    charts = []
    if points and len(set(cats)) == len(cats):
        charts.append(Chart(
            id=f"{prefix}-gpus", title="GPUs over time", unit="GPUs", categories=cats,
            kind="bar", series=[
                Series(name="allocated", values=[p.allocated_gpus for p in points]),
                Series(name="provisioned", values=[p.provisioned_gpus for p in points]),
                Series(name="fragmented (FGD)", values=[p.fragmented_gpus for p in points]),
            ]))
    capacity = Section(
        id=f"{prefix}-capacity", title="Simulated capacity",
        paragraphs=[
            f"GPU-hours allocated {result.allocated_gpu_hours:,.0f} of "
            f"{result.provisioned_gpu_hours:,.0f} provisioned (idle and starting nodes "
            f"included): utilisation {result.utilisation:.1%}. Mean fragmented GPUs (the "
            f"FGD measure): {result.mean_fragmented_gpus:.1f}.",
        ],
        charts=charts,
    )
    return [queues, capacity]
