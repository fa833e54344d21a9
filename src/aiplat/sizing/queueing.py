"""Tail latency of the prefill queue: quantiles of the M/D/1 waiting time.

Design. Prompts arrive as a Poisson stream of rate λ at a replica and each takes a fixed
prefill time D (the mean TTFT figure in ``inference.replicas_for_slo`` is the
Pollaczek–Khinchine mean of the same queue). For an M/G/1 queue the waiting time has an
exponential tail, P(W > t) ≈ C·e^(−θt) (the Cramér–Lundberg approximation; Asmussen,
"Applied Probability and Queues", 2nd ed., XIII.5), where θ > 0 solves
λ·(E[e^(θS)] − 1) = θ and C = (1 − ρ) / (λ·E[S·e^(θS)] − 1). With S = D these are
λ·(e^(θD) − 1) = θ and C = (1 − ρ)/(λ·D·e^(θD) − 1). The q-quantile of the wait is
ln(C/(1 − q))/θ, or 0 when P(W > 0) = ρ is already below 1 − q.
"""

from __future__ import annotations

import math

from aiplat.errors import InputError
from aiplat.sizing.result import require_positive


def _theta(lam: float, service: float) -> float:
    """The positive root of λ(e^(θD) − 1) = θ, by bisection on x = θD."""
    rho = lam * service

    def f(x: float) -> float:
        return rho * (math.exp(x) - 1) - x

    lo, hi = 1e-12, 1.0
    while f(hi) < 0:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2 / service


def md1_wait_quantile(arrival_rate: float, service_seconds: float, q: float) -> float:
    """Seconds of queueing below which a fraction ``q`` of prompts start their prefill."""
    require_positive(arrival_rate=arrival_rate, service_seconds=service_seconds)
    if not 0 < q < 1:
        raise InputError(f"q is a quantile in (0, 1), got {q!r}")
    rho = arrival_rate * service_seconds
    if rho >= 1:
        raise InputError(f"utilisation {rho:.3g} >= 1: the queue grows without bound "
                         "(fix: more replicas)")
    if rho <= 1 - q:
        return 0.0  # P(wait > 0) = ρ: the quantile falls on an idle server
    theta = _theta(arrival_rate, service_seconds)
    c = (1 - rho) / (arrival_rate * service_seconds * math.exp(theta * service_seconds) - 1)
    return max(0.0, math.log(c / (1 - q)) / theta)
