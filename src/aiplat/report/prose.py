"""Identifiers out of the report's prose: a reader of the plan is not reading its code.

The plan's parts speak in their own keys (``bare_metal``, ``operating_effort``,
``overhead_bytes_per_gpu``); in a report those read as words (``bare metal``). A few are
names the reader types elsewhere (a Linux bonding option, an index parameter): those stay
exact, shown as code, so they can be searched for and copied.
"""

from __future__ import annotations

import re

from aiplat.report.document import Code, Inline, Rich

TYPED_NAMES = frozenset({"xmit_hash_policy", "ef_search", "gpu_memory_utilization"})
"""Names the admin writes in another tool's configuration (netplan/bonding, HNSW, vLLM)."""

_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")


def words(text: str) -> str:
    """``text`` with every snake_case identifier as words: ``bare_metal`` -> ``bare metal``."""
    return _SNAKE.sub(lambda m: m.group(0).replace("_", " "), text)


def prose(text: str) -> Rich:
    """``text`` for the report: identifiers as words, the names in :data:`TYPED_NAMES` as
    code; plain text when it holds none of them."""
    parts: list[Inline] = []
    last = 0
    for m in _SNAKE.finditer(text):
        if m.group(0) in TYPED_NAMES:
            parts += [words(text[last:m.start()]), Code(text=m.group(0))]
            last = m.end()
    if not parts:
        return words(text)
    tail = words(text[last:])
    return [p for p in (*parts, tail) if p]
