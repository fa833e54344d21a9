"""Fixtures for integration tests.

``browser``: one headless Chromium for the whole session (starting it costs a second or
two). When Chromium is missing the tests skip locally but fail in CI (``CI=true``), where
integration tests must run: a skipped browser check would pass silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import registry as registry_mod
import wheelinstall
from browser import Browser, missing

if TYPE_CHECKING:
    from examplelab import ExampleLab


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def need(reason: str | None) -> None:
    """Go on when nothing is missing (``reason`` None); else skip here, fail in CI, where
    integration tests must run: a skipped check would pass silently."""
    if reason is None:
        return
    if in_ci():
        pytest.fail(f"{reason} (CI=true: integration tests must run, not skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    need(missing())
    with Browser() as session:
        yield session


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[registry_mod.Registry]:
    """A real Debian docker-registry (distribution 2.8) on 127.0.0.1, one per test module;
    skipped locally without it, a failure in CI."""
    need(registry_mod.missing())
    with registry_mod.Registry(tmp_path_factory.mktemp("registry")) as reg:
        yield reg


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExampleLab]:
    """The built-in example's lab cluster, one for the whole session (``examplelab``; about
    a minute to start): for tests that add objects of their own to it and remove them after,
    leaving what the example put there as it was."""
    from examplelab import example_lab  # imports test_cluster_live, which imports this file

    with example_lab(tmp_path_factory.mktemp("lab"), "session") as session:
        yield session


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> wheelinstall.Installed:
    """This checkout as a wheel in a fresh venv (built once per session: about a minute)."""
    return wheelinstall.install(tmp_path_factory.mktemp("wheel"))
