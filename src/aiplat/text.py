"""Text from outside (a host's file names, a manifest's object names, a registry's messages)
as aiplat may print it: ``shown(text)`` writes control characters (C0, DEL, C1), format
characters (the bidi overrides that reorder a line) and line or paragraph separators as
escapes (``\\x1b``, ``\\u202e``), so no escape sequence, forged line or reordered text
reaches the admin's terminal; everything else is kept as it was, readable.

The one place this rule lives: findings' text form, node tables, lint and CDI messages use it.
JSON and YAML output escape such characters themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def shown(text: str) -> str:
    """``text`` with everything ``str.isprintable`` refuses but the space escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else _escape(c) for c in text)


def _escape(c: str) -> str:
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown_lines(text: str) -> str:
    """``text`` shown line by line: its newlines kept, everything else as ``shown``."""
    return "\n".join(shown(line) for line in text.split("\n"))


def shown_all(data: Any, show: Callable[[str], str] = shown) -> Any:
    """``data`` (a model's dump: mappings, lists, text) with every string and string key
    passed through ``show``."""
    if isinstance(data, str):
        return show(data)
    if isinstance(data, dict):
        return {show(k) if isinstance(k, str) else k: shown_all(v, show)
                for k, v in data.items()}
    if isinstance(data, list | tuple):
        return type(data)(shown_all(v, show) for v in data)
    return data
