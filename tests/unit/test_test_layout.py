"""Test files need unique basenames across tests/unit and tests/integration: pytest imports
them by basename (rootdir-relative, no packages), so a second file of the same name fails
collection of the whole suite (as CI found)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_test_file_basenames_are_unique() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []
