"""Fixtures for integration tests.

``browser``: one headless Chromium for the whole session (starting it costs a second or
two). When Chromium is missing the tests skip locally but fail in CI (``CI=true``), where
integration tests must run: a skipped browser check would pass silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from browser import Browser, missing


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    reason = missing()
    if reason is not None:
        if in_ci():
            pytest.fail(f"{reason} (CI=true: integration tests must run, not skip)", pytrace=False)
        pytest.skip(reason)
    with Browser() as session:
        yield session
