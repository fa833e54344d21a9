"""YAML for kubectl: one object per document, stable key order, ambiguous scalars quoted.

kubectl parses YAML 1.1, where unquoted ``yes``/``no``/``on``/``off``/``y``/``n`` become
booleans and ``12:30`` may become a sexagesimal number. PyYAML's safe dumper already quotes
what *it* would read back differently, but it follows its own resolver, which knows ``y`` and
``n`` only partially; so every string that any YAML 1.1 or 1.2 reader could take for something
other than a string is quoted explicitly. Keys keep the order the builders wrote them in
(``apiVersion``, ``kind``, ``metadata``, ``spec`` first), so a re-render diffs cleanly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

_AMBIGUOUS = re.compile(
    r"""^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
    |null|Null|NULL|~|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?   # 1.1 sexagesimal, e.g. 12:30
    |[-+]?(?:0b[01_]+|0x[0-9a-fA-F_]+|0o?[0-7_]+|[0-9][0-9_]*)  # ints in any base
    |[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)?         # floats
    |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
    |=|<<)$""",
    re.VERBOSE,
)


def needs_quotes(text: str) -> bool:
    """True when ``text`` would not read back as the same string in YAML 1.1 or 1.2."""
    return bool(_AMBIGUOUS.match(text)) or text == ""


# The C emitter when libyaml is there (same output, several times faster); representers
# stay in Python either way, so the quoting rules below apply to both.
_Base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_Base):  # type: ignore[misc]
    pass


def _str(dumper: Any, data: str) -> yaml.Node:
    if "\n" in data:
        node: yaml.Node = dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
        return node
    style = '"' if needs_quotes(data) else None
    plain: yaml.Node = dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)
    return plain


_Dumper.add_representer(str, _str)


def dump_docs(objects: Iterable[Mapping[str, Any]]) -> str:
    """Objects as a multi-document YAML stream (``---`` between documents)."""
    parts = [
        yaml.dump(dict(o), Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                  width=100, allow_unicode=True)
        for o in objects
    ]
    return "---\n".join(parts)


def load_docs(text: str) -> list[dict[str, Any]]:
    """Parse a YAML stream into its non-empty documents (the inverse of ``dump_docs``)."""
    return [d for d in yaml.safe_load_all(text) if d is not None]


def dump_value(value: Any) -> str:
    """Any data (e.g. a list of findings) as one YAML document, with the same quoting; for a
    terminal: when some text holds a control or format character (a bidi override, which
    YAML counts printable and would write raw), the document is ASCII with escapes."""
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     width=100, allow_unicode=not _unprintable(value))


def _unprintable(value: Any) -> bool:
    if isinstance(value, str):
        return not value.replace("\n", "").isprintable()
    if isinstance(value, Mapping):
        return any(_unprintable(k) or _unprintable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_unprintable(v) for v in value)
    return False
