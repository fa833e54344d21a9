"""Goodput of a long training run: checkpoints, interruptions, lost work and restarts.

Design. A run of C seconds of useful compute on N nodes is interrupted at rate
λ = N · f (f: interruptions per node and year, as a Poisson process). It writes a checkpoint
of δ seconds every τ seconds of compute; an interruption loses on average half a segment,
(τ + δ)/2, plus the restart time R (reschedule, load the checkpoint, warm up). To first order
in λ the wall time is

    W = C · (1 + δ/τ) / (1 − λ · ((τ + δ)/2 + R)),

and goodput = C / W. The interval that minimises W for δ ≪ 1/λ is Young's
τ = sqrt(2·δ·M) with M = 1/λ (J. W. Young, "A first order approximation to the optimum
checkpoint interval", CACM 17(9), 1974); Daly's higher-order form
τ = sqrt(2δM)·(1 + sqrt(δ/(2M))/3 + δ/(18M)) − δ for δ < 2M (J. T. Daly, FGCS 22(3), 2006)
is what is reported.
"""

from __future__ import annotations

import math

from aiplat.errors import InputError
from aiplat.sizing.result import Result, require_positive

SECONDS_PER_YEAR = 365.0 * 86_400

LLAMA3_INTERRUPTIONS_PER_NODE_YEAR = 419 / (2048 * 54 / 365)
"""Unexpected job interruptions per 8-GPU node and year: Llama 3 paper (Dubey et al. 2024,
arXiv:2407.21783) section 3.3.4, Table 5: 419 unexpected interruptions in a 54-day snapshot on
16,384 H100s (2,048 nodes), 78 % of them hardware. About 1.38 per node-year."""


class Goodput(Result):
    mtbf_seconds: float
    young_daly_interval_seconds: float
    interval_seconds: float
    expected_interruptions: float
    checkpoint_seconds: float
    lost_seconds: float
    restart_seconds: float
    wall_seconds: float
    goodput: float


def young_daly_interval(checkpoint_seconds: float, mtbf_seconds: float) -> float:
    """Daly's optimum compute time between checkpoints (Young's sqrt(2δM) to first order)."""
    require_positive(checkpoint_seconds=checkpoint_seconds, mtbf_seconds=mtbf_seconds)
    d, m = checkpoint_seconds, mtbf_seconds
    if d >= 2 * m:
        return m
    return math.sqrt(2 * d * m) * (1 + math.sqrt(d / (2 * m)) / 3 + d / (18 * m)) - d


def goodput(
    *,
    compute_seconds: float,
    nodes: int,
    interruptions_per_node_year: float,
    checkpoint_seconds: float,
    restart_seconds: float,
    interval_seconds: float | None = None,
) -> Goodput:
    """Wall time and goodput of ``compute_seconds`` of work; ``interval_seconds`` unset: the
    Young/Daly optimum."""
    require_positive(compute_seconds=compute_seconds, nodes=nodes,
                     interruptions_per_node_year=interruptions_per_node_year,
                     checkpoint_seconds=checkpoint_seconds)
    if not restart_seconds >= 0:
        raise InputError(f"restart_seconds must be >= 0, got {restart_seconds!r}")
    mtbf = SECONDS_PER_YEAR / (nodes * interruptions_per_node_year)
    best = young_daly_interval(checkpoint_seconds, mtbf)
    tau = best if interval_seconds is None else interval_seconds
    require_positive(interval_seconds=tau)
    loss_per_failure = (tau + checkpoint_seconds) / 2 + restart_seconds
    if loss_per_failure >= mtbf:
        raise InputError(
            f"an interruption every {mtbf / 3600:.3g} h on {nodes} nodes loses "
            f"{loss_per_failure / 3600:.3g} h each: the run never finishes (fix: checkpoint "
            "more often, restart faster, or use fewer, more reliable nodes)")
    wall = compute_seconds * (1 + checkpoint_seconds / tau) / (1 - loss_per_failure / mtbf)
    failures = wall / mtbf
    return Goodput(
        formula=("W = C·(1 + δ/τ)/(1 − λ·((τ + δ)/2 + R)), λ = nodes·f; τ* = Daly 2006 "
                 "(Young 1974: sqrt(2δM))"),
        inputs={"compute_seconds": compute_seconds, "nodes": nodes,
                "interruptions_per_node_year": interruptions_per_node_year,
                "checkpoint_seconds": checkpoint_seconds, "restart_seconds": restart_seconds,
                "interval_seconds": interval_seconds},
        notes=["first order in λ; interruptions as a Poisson process, all nodes alike"],
        mtbf_seconds=mtbf,
        young_daly_interval_seconds=best,
        interval_seconds=tau,
        expected_interruptions=failures,
        checkpoint_seconds=compute_seconds / tau * checkpoint_seconds,
        lost_seconds=failures * (tau + checkpoint_seconds) / 2,
        restart_seconds=failures * restart_seconds,
        wall_seconds=wall,
        goodput=compute_seconds / wall,
    )
