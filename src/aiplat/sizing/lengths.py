"""Request-length distributions: a median and a 95th percentile, and what follows from them.

Design. Serving is sized on means (Little's law and token throughput are linear in the
lengths), but the context a replica must hold and the slow first tokens come from the long
requests. Given the median and the 95th percentile of a length, the lognormal through both
points supplies the rest: σ = ln(p95 / p50) / z₀.₉₅, mean = p50 · exp(σ²/2), p99 = p50 ·
exp(z₀.₉₉ · σ). Chat and completion request lengths are right-skewed with a long tail, the
shape a lognormal has; that it fits a given service is an assumption to check against the
service's own logs (the percentiles are what to measure).
"""

from __future__ import annotations

import math
from statistics import NormalDist

from aiplat.errors import InputError
from aiplat.sizing.result import Result

Z95 = NormalDist().inv_cdf(0.95)
Z99 = NormalDist().inv_cdf(0.99)


class LengthDistribution(Result):
    p50: float
    p95: float
    p99: float
    mean: float
    sigma: float


def lognormal_lengths(*, p50: float, p95: float) -> LengthDistribution:
    """The lognormal with median ``p50`` and 95th percentile ``p95`` (tokens).

    >>> round(lognormal_lengths(p50=1000, p95=1000 * math.exp(Z95)).mean)
    1649
    """
    if not p50 > 0 or not p95 >= p50:
        raise InputError(f"length percentiles need 0 < p50 <= p95, got p50 {p50!r}, p95 {p95!r}"
                         " (fix: give the median and the 95th percentile from request logs)")
    sigma = math.log(p95 / p50) / Z95
    return LengthDistribution(
        p50=p50, p95=p95, p99=p50 * math.exp(Z99 * sigma), mean=p50 * math.exp(sigma**2 / 2),
        sigma=sigma,
        formula="lognormal through (p50, p95): σ = ln(p95/p50)/1.645, mean = p50·e^(σ²/2), "
                "p99 = p50·e^(2.326σ)",
        inputs={"p50": p50, "p95": p95},
        notes=["lognormal request lengths are an assumption; check the mean against logs"],
    )
