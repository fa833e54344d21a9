"""Figures in messages read the way an admin writes them: no exponents, no '0 B/s' for a
small but real rate."""

from __future__ import annotations

import pytest

from aiplat.plan.format import rate_h


@pytest.mark.parametrize(("bps", "want"), [
    (126.25e9, "126 GB/s (1,010 Gbit/s)"),
    (1.25e9, "1.25 GB/s (10 Gbit/s)"),
    (12.5e6, "12.5 MB/s (0.1 Gbit/s)"),
    (0.4, "< 1 B/s"),
    (0, "0 B/s (0 Gbit/s)"),
])
def test_rates(bps: float, want: str) -> None:
    assert rate_h(bps) == want
    assert "e+" not in rate_h(bps)
