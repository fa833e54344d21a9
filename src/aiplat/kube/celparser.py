"""cel-python's Lark parser, built once per machine instead of once per process.

cel-python builds its LALR parser from ``cel.lark`` on first use: about 0.15 s, a tenth of
``aiplat plan``. Lark can pickle the analysed parser and reload it in under 10 ms (its
``cache`` option); this module builds the parser exactly as ``celpy.celparser.CELParser``
does, plus that option, and installs it as ``CELParser.CEL_PARSER`` (the class attribute
cel-python documents for sharing one parser).

The cache file lives in the user's cache directory (``$XDG_CACHE_HOME/aiplat`` or
``~/.cache/aiplat``), not in Lark's default shared ``/tmp`` file, since Lark unpickles it.
Lark stores a SHA-256 of grammar, options, Lark and Python versions in the file and rebuilds
on any mismatch or unreadable file; when the directory cannot be created the parser is built
without a cache. ``tests/unit/test_kube_celparser.py`` checks that this parser and
cel-python's own give the same trees.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import celpy
import lark
from celpy.celparser import CELParser


def cache_path() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    directory = Path(base) / "aiplat"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return directory / "cel-parser.lark"


def install_parser(cache: Path | None) -> None:
    """Install cel-python's parser, loaded from (or saved to) ``cache`` when given."""
    if CELParser.CEL_PARSER is not None:
        return
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text(encoding="utf-8")
    # The same arguments as CELParser.__init__ (cel-python 0.5), plus the cache.
    CELParser.CEL_PARSER = lark.Lark(
        grammar,
        parser="lalr",
        start="expr",
        debug=True,
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
        tree_class=lark.Tree,
        cache=str(cache) if cache is not None else False,
    )


@functools.cache
def environment() -> celpy.Environment:
    """The shared CEL environment; the parser is built (or loaded) on the first call."""
    install_parser(cache_path())
    return celpy.Environment()
