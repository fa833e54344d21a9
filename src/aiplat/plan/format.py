"""Human-readable figures for key figures and reports. Decimal units throughout (GB = 1e9,
GB/s), as GPU and storage datasheets print them, so figures compare directly."""

from __future__ import annotations


def bytes_h(n: float) -> str:
    for unit, scale in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}" if n / scale < 100 else f"{n / scale:,.0f} {unit}"
    return f"{n:.0f} B"


def rate_h(bps: float) -> str:
    """Bytes per second, with the bit rate network people think in (never '1.01e+03')."""
    if 0 < bps < 1:
        return "< 1 B/s"
    gbit = bps * 8 / 1e9
    bits = f"{gbit:,.0f}" if gbit >= 100 else f"{gbit:.3g}"
    return f"{bytes_h(bps)}/s ({bits} Gbit/s)"


def kw_h(watts: float) -> str:
    return f"{watts / 1000:,.1f} kW"


def count_h(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"
