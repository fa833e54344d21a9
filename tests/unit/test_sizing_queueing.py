"""Tail latency of the prefill queue against a simulated M/D/1 queue (the queue itself is the
oracle: Lindley's recursion W' = max(0, W + D − A) over 600,000 Poisson arrivals)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from aiplat.errors import InputError
from aiplat.sizing.queueing import md1_wait_quantile


@cache
def _simulated_waits(rho: float, service: float, n: int = 600_000) -> np.ndarray:
    rng = np.random.default_rng(21)
    steps = service - rng.exponential(service / rho, size=n)
    w, waits = 0.0, np.empty(n)
    for i, step in enumerate(steps.tolist()):
        waits[i] = w
        w = max(0.0, w + step)
    return waits[n // 10:]  # drop the warm-up from an empty queue


def _simulated_quantile(rho: float, service: float, q: float) -> float:
    return float(np.quantile(_simulated_waits(rho, service), q))


@pytest.mark.parametrize(("rho", "q"), [(0.5, 0.95), (0.5, 0.99), (0.8, 0.95), (0.8, 0.99)])
def test_md1_wait_quantiles_match_a_simulation(rho: float, q: float) -> None:
    service = 0.2
    formula = md1_wait_quantile(rho / service, service, q)
    assert formula == pytest.approx(_simulated_quantile(rho, service, q), rel=0.05)


def test_light_load_tail_is_no_wait() -> None:
    # P(wait > 0) = ρ = 0.03 < 5 %: the 95th percentile prompt finds the replica idle.
    assert md1_wait_quantile(0.3, 0.1, 0.95) == 0.0


def test_overload_is_refused() -> None:
    with pytest.raises(InputError, match="without bound"):
        md1_wait_quantile(10.0, 0.2, 0.99)
