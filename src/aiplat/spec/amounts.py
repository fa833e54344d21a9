"""Amounts with their unit, as admins write them: ``memoryGiB: 2Ti``, ``powerBudgetKW: 1.2MW``,
``rateGbps: 50GB/s``, ``startupSeconds: 10m`` (pure).

A spec field says its unit in its name (``memoryGiB``, ``capacityTB``, ``powerKW``,
``readGBps``, ``timeToFirstTokenMs``, ``targetDays``); a plain number is in that unit, as
before. A string is a number with a unit of the field's kind, converted to the field's unit:
Kubernetes quantity suffixes (``Ki Mi Gi Ti Pi Ei``, ``k M G T P E``) and the spellings with
B (``GiB``, ``TB``) for bytes; ``W kW MW`` for power; bits (``Gbps``, ``Gb/s``) or bytes
(``GBps``, ``GB/s``, times 8) for rates; ``ms s m h d`` (also combined, ``1h30m``) for
durations. Decimal prefixes are decimal and binary ones binary: ``2TB`` of memory is
1,862.6 GiB, not 2,048 — an integer field refuses it and shows both readings rather than
guessing which one was meant.

Hand-written: Kubernetes' quantity grammar (``kube/quantity.py``) has no B, W, bps or
duration units, and no maintained library reads all four kinds with these exact rules.
"""

from __future__ import annotations

import re
from decimal import Decimal

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
            "E": 10**18}

# The unit a field's name ends with: (kind, size of one unit in the kind's base unit:
# bytes, watts, bits per second, seconds). Longer endings first (KW before W).
FIELD_UNITS: tuple[tuple[str, str, Decimal], ...] = (
    ("GiB", "bytes", Decimal(2**30)), ("MiB", "bytes", Decimal(2**20)),
    ("TiB", "bytes", Decimal(2**40)), ("GB", "bytes", Decimal(10**9)),
    ("TB", "bytes", Decimal(10**12)), ("MB", "bytes", Decimal(10**6)),
    ("PB", "bytes", Decimal(10**15)),
    ("KW", "power", Decimal(10**3)), ("W", "power", Decimal(1)),
    ("Gbps", "rate", Decimal(10**9)), ("GBps", "rate", Decimal(8 * 10**9)),
    ("TBps", "rate", Decimal(8 * 10**12)),
    ("Ms", "time", Decimal("0.001")), ("Seconds", "time", Decimal(1)),
    ("Hours", "time", Decimal(3600)), ("Days", "time", Decimal(86400)),
)
EXAMPLES = {"bytes": "2048, 2Ti, 2TiB or 1.5TB", "power": "1200, 1.2MW or 800W",
            "rate": "400, 400Gbps, 50GB/s or 50GBps", "time": "600, 90s, 10m, 1h30m or 14d"}
_NUMBER = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?"
_AMOUNT = re.compile(rf"^{_NUMBER}\s*([A-Za-z/]*)$")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ms|s|m|h|d)")
_TIME = {"ms": Decimal("0.001"), "s": Decimal(1), "m": Decimal(60), "h": Decimal(3600),
         "d": Decimal(86400)}


class AmountError(ValueError):
    """Not an amount of the field's kind; ``fix`` says what to write."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def field_unit(name: str) -> tuple[str, str, Decimal] | None:
    """(unit, kind, size) of a field named like ``memoryGiB``; None for a unitless field."""
    return next(((u, k, s) for u, k, s in FIELD_UNITS if name.endswith(u)), None)


def _bytes(unit: str) -> Decimal | None:
    if unit in ("", "B"):
        return Decimal(1) if unit else None
    if unit.endswith("b") and not unit.lower().endswith("ib"):
        return None  # bits (Mb) or millis (mb): not an amount of memory or storage
    stem = unit[:-1] if unit.endswith("B") or unit.endswith("b") else unit
    if stem in _BINARY:
        return Decimal(_BINARY[stem])
    if stem.capitalize() in _BINARY and unit.lower().endswith("ib"):
        return Decimal(_BINARY[stem.capitalize()])
    if stem in _DECIMAL or (stem.upper() in _DECIMAL and unit.endswith("B")):
        return Decimal(_DECIMAL[stem] if stem in _DECIMAL else _DECIMAL[stem.upper()])
    return None


def _power(unit: str) -> Decimal | None:
    return {"W": Decimal(1), "kW": Decimal(10**3), "KW": Decimal(10**3),
            "MW": Decimal(10**6), "GW": Decimal(10**9)}.get(unit)


def _rate(unit: str, in_bytes: bool) -> Decimal | None:
    """bits per second of one ``unit``; a bare prefix (``400G``, as NICs are named) counts in
    the field's own measure (bits for ``rateGbps``, bytes for ``readGBps``)."""
    if unit in _DECIMAL:
        return Decimal(_DECIMAL[unit]) * (8 if in_bytes else 1)
    m = re.fullmatch(r"([kKMGT]?)(bps|b/s|Bps|B/s)", unit)
    if not m:
        return None
    prefix = Decimal(_DECIMAL[m.group(1)]) if m.group(1) else Decimal(1)
    return prefix * (8 if m.group(2).startswith("B") else 1)


def _duration(text: str) -> Decimal | None:
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum((Decimal(n) * _TIME[u] for n, u in parts), Decimal(0))


def convert(text: str, name: str, *, integer: bool = False) -> int | float:
    """``text`` (a number with a unit) in field ``name``'s unit. ``integer``: the field takes
    whole numbers only, and a conversion that is not whole is refused with both readings."""
    unit, kind, size = field_unit(name) or ("", "", Decimal(1))
    if not kind:
        raise AmountError(f"'{text}' is not a number", "write the number itself")
    compact = text.strip().replace(" ", "")
    base: Decimal | None
    if kind == "time" and not _AMOUNT.match(compact):
        base = _duration(compact)
    else:
        m = _AMOUNT.match(compact)
        base = None
        if m:
            value = Decimal(m.group(1)) * (Decimal(10) ** int(m.group(2)) if m.group(2) else 1)
            suffix = m.group(3)
            if not suffix:
                base = value * size
            elif kind == "time":
                base = _duration(compact)
            else:
                per = (_rate(suffix, unit.endswith("Bps")) if kind == "rate" else
                       _power(suffix) if kind == "power" else _bytes(suffix))
                base = value * per if per is not None else None
    unit = _SHOWN.get(unit, unit)
    if base is None:
        raise AmountError(f"'{text}' is not an amount of {_NOUNS[kind]}",
                          f"write {unit} as a number, or with a unit, e.g. {EXAMPLES[kind]}")
    out = base / size  # sizes come from FIELD_UNITS: never zero
    if integer:
        if out != out.to_integral_value():
            hint = _binary_hint(text, kind, base, size, unit)
            raise AmountError(f"'{text}' is {float(out):,.2f} {unit}, not a whole number "
                              f"of {unit}", f"write a whole number of {unit}{hint}")
        return int(out)
    return float(out)


_NOUNS = {"bytes": "bytes", "power": "power", "rate": "bandwidth", "time": "time"}
_SHOWN = {"KW": "kW", "Ms": "ms", "Seconds": "seconds", "Hours": "hours", "Days": "days"}


def _binary_hint(text: str, kind: str, base: Decimal, size: Decimal, unit: str) -> str:
    """For a decimal byte amount in a binary field: the binary reading the writer may have
    meant (``2TB`` -> ``2Ti``, 2048 GiB)."""
    m = re.search(r"([kKMGTPE])B?$", text.strip())
    if kind != "bytes" or not m:
        return ""
    prefix = m.group(1).upper()
    binary = Decimal(_BINARY[f"{prefix}i"]) / Decimal(_DECIMAL[prefix])
    meant = base * binary / size
    if meant != meant.to_integral_value():
        return ""
    number = text.strip()[: m.start()].strip()
    return f", or {number}{prefix}i ({int(meant)} {unit}) if binary units were meant"


# What the schema lets through as text: a number and letters (a duration: several); the
# loader then checks the unit itself.
_PATTERNS = {False: r"^\s*([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*[A-Za-z/]*\s*$",
             True: r"^\s*(([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*[A-Za-z]*\s*)+$"}


def schema_with_units(node: object) -> None:
    """The spec's JSON Schema as the loader reads it: each property whose name carries a unit
    also takes a string (an amount with its unit), so an editor does not flag ``2Ti``."""
    if isinstance(node, list):
        for v in node:
            schema_with_units(v)
        return
    if not isinstance(node, dict):
        return
    for name, prop in (node.get("properties") or {}).items():
        unit = field_unit(name)
        if unit is not None and isinstance(prop, dict) and "string" not in str(prop):
            kind = unit[1]
            text = {"type": "string", "pattern": _PATTERNS[kind == "time"],
                    "description": f"with a unit, e.g. {EXAMPLES[kind]}"}
            node["properties"][name] = {
                **{k: v for k, v in prop.items() if k in ("title", "description", "default")},
                "anyOf": [*(prop.get("anyOf") or [{k: v for k, v in prop.items()
                                                    if k not in ("title", "description",
                                                                 "default")}]), text]}
    for v in node.values():
        schema_with_units(v)
