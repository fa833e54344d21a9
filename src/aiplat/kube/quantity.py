"""Kubernetes resource quantities as exact Decimals, in the spirit of lightkube's
``utils/quantity.py``: pure, no I/O, examples in the doc.

>>> parse_quantity("1.5Gi")
Decimal('1610612736.0')
>>> parse_quantity("500m")
Decimal('0.500')
>>> format_binary(80 * 2**30)
'80Gi'
"""

from __future__ import annotations

import re
from decimal import Decimal, DecimalException
from typing import Any

from aiplat.errors import InputError
from aiplat.kueue import podrequests

_SUFFIX = {
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
}
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$"
)


class QuantityError(InputError, ValueError):
    """A string that is not a Kubernetes quantity (a ValueError too, for parsers)."""


def parse_quantity(value: str | int | float) -> Decimal:
    """A quantity string (or number) as a Decimal in base units; raises ``QuantityError``."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int | float):
        return Decimal(str(value))
    m = _QUANTITY.match(value.strip()) if isinstance(value, str) else None
    if not m:
        raise QuantityError(
            f"{value!r} is not a Kubernetes quantity (e.g. '4', '500m', '80Gi', '1.5e3')"
        )
    number, suffix = m.group(1), m.group(2) or ""
    try:
        if suffix in _SUFFIX:  # before the exponent: 'E' and 'Ei' are suffixes
            return Decimal(number) * _SUFFIX[suffix]
        return Decimal(number) * Decimal(10) ** int(suffix[1:])
    except DecimalException as e:  # an exponent past Decimal's range (1e99999999)
        raise QuantityError(f"{value!r} is out of any quantity's range") from e


def quantity_or_zero(value: Any) -> Decimal:
    """A quantity, or nothing where it is none: lint and why-pending reason on what they
    can read (``kube validate`` names the bad field)."""
    try:
        return parse_quantity(value)
    except QuantityError:
        return Decimal(0)


def pod_requests(spec: dict[str, Any], *, overhead: bool = True) -> dict[str, Decimal]:
    """What one pod requests, in base units (Kubernetes' rule, once:
    :mod:`aiplat.kueue.podrequests`)."""
    return podrequests.pod_requests(spec, lambda _r, v, _w: quantity_or_zero(v),
                                    overhead=overhead)


def format_binary(nbytes: int) -> str:
    """Bytes as the largest exact binary suffix: 80Gi, 512Mi, 1536Ki, 7."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = int(_SUFFIX[suffix])
        if nbytes and nbytes % unit == 0:
            return f"{nbytes // unit}{suffix}"
    return str(nbytes)


def format_number(value: float) -> int | str:
    """A count for a manifest: an int when whole, else a decimal string ('0.5')."""
    if float(value).is_integer():
        return int(value)
    return f"{value:g}"


def canonical_decimal(value: float) -> str:
    """A decimal quantity as the API server writes it back: whole numbers plain, fractions
    in milli units ('500m'), so a rendered value equals the stored one.

    >>> canonical_decimal(2), canonical_decimal(0.5), canonical_decimal(1.25)
    ('2', '500m', '1250m')
    """
    milli = Decimal(str(value)) * 1000
    if milli % 1000 == 0:
        return str(int(milli / 1000))
    return f"{int(milli.to_integral_value(rounding='ROUND_CEILING'))}m"
