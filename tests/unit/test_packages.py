"""Lazy re-exports (PEP 562) in package ``__init__``s resolve to what they name."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types

import pytest

PACKAGES = ["aiplat.kube", "aiplat.node", "aiplat.sched"]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_export_resolves_to_an_object_not_a_submodule(name: str) -> None:
    package = importlib.import_module(name)
    # Importing every submodule binds each as a package attribute; a re-export sharing a
    # submodule's name would then return the module instead of the function.
    for sub in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{name}.{sub.name}")
    for export in package.__all__:
        value = getattr(package, export)
        assert not isinstance(value, types.ModuleType), export
        assert getattr(value, "__name__", export) == export or export.isupper()


@pytest.mark.parametrize("name", PACKAGES)
def test_unknown_attribute_is_an_attribute_error(name: str) -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        importlib.import_module(name).nope  # noqa: B018


def test_plan_does_not_import_what_it_does_not_use() -> None:
    probe = ("import sys, aiplat.cli.plan; print(' '.join(m for m in "
             "('aiplat.kube.pending', 'aiplat.node.collect', 'aiplat.sched.fgd', 'matplotlib')"
             " if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == ""
