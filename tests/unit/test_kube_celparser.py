"""The cached CEL parser parses exactly like cel-python's own and survives a bad cache file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import lark
import pytest
from celpy.celparser import CELParser

from aiplat.kube import celparser

EXPRESSIONS = [
    'device.driver == "gpu.nvidia.com"',
    'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100") && true',
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    "[1, 2, 3].all(x, x > 0) ? false : 1u + 2u == 3u",
    'has(device.attributes["x"].y) || semver("1.2.3").isLessThan(semver("1.10.0"))',
]

_PROBE = """
import sys
from aiplat.kube import celparser
from celpy.celparser import CELParser
celparser.environment()
print(CELParser.CEL_PARSER.parse(sys.argv[1]).pretty())
"""


def _trees(parser: lark.Lark) -> list[str]:
    return [parser.parse(e).pretty() for e in EXPRESSIONS]


def test_cached_parser_matches_cel_pythons_own(tmp_path: Path) -> None:
    saved = CELParser.CEL_PARSER
    try:
        CELParser.CEL_PARSER = None
        CELParser()  # cel-python builds its parser with its own arguments
        assert CELParser.CEL_PARSER is not None
        theirs = _trees(CELParser.CEL_PARSER)
        CELParser.CEL_PARSER = None
        celparser.install_parser(tmp_path / "p.lark")
        assert (tmp_path / "p.lark").stat().st_size > 10_000  # the analysed tables were saved
        first = _trees(CELParser.CEL_PARSER)
        CELParser.CEL_PARSER = None
        celparser.install_parser(tmp_path / "p.lark")  # now loaded from the file
        second = _trees(CELParser.CEL_PARSER)
    finally:
        CELParser.CEL_PARSER = saved
    assert first == theirs
    assert second == theirs


@pytest.mark.parametrize("content", [b"", b"garbage\n", b"0" * 64 + b"\n\x80\x04truncated"])
def test_bad_cache_file_is_rebuilt(tmp_path: Path, content: bytes) -> None:
    cache = tmp_path / "aiplat" / "cel-parser.lark"
    cache.parent.mkdir()
    cache.write_bytes(content)
    env = os.environ | {"XDG_CACHE_HOME": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", _PROBE, EXPRESSIONS[1]], env=env,
                         capture_output=True, text=True, check=True)
    assert "relation_eq" in run.stdout or "conditionaland" in run.stdout
    assert run.stderr == ""
    assert cache.stat().st_size > 10_000  # rewritten with the real tables


def test_unwritable_cache_directory_means_no_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    env = os.environ | {"XDG_CACHE_HOME": str(blocker)}
    run = subprocess.run([sys.executable, "-c", _PROBE, EXPRESSIONS[0]], env=env,
                         capture_output=True, text=True, check=True)
    assert run.stdout.strip() and run.stderr == ""
