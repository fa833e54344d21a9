"""Byte sizes and rates as admins write them (pure).

>>> parse_size("200G"), parse_size("1.5TiB"), parse_size("512MB")
(200000000000, 1649267441664, 512000000)
>>> human_bytes(2147483648)
'2.00 GiB'
"""

from __future__ import annotations

import re

from aiplat.artifacts.errors import ArtifactInputError

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9,
          "gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30,
          "tib": 2**40, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$", re.ASCII)


def parse_size(text: str, what: str = "size") -> int:
    m = _SIZE_RE.fullmatch(text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS:
        raise ArtifactInputError(
            f"{what} {text!r} is not a size; write a number with an optional unit such as"
            " 500M, 200G, 1.5TiB")
    return int(float(m.group(1)) * _UNITS[unit])


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
