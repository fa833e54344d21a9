"""Package re-exports that load on first use (PEP 562 module ``__getattr__``).

``aiplat plan`` imports one submodule of a package such as ``aiplat.kube``; eager
re-exports in the package's ``__init__`` would import all the others with it. A package
lists ``name -> submodule`` and sets ``__getattr__ = lazy_exports(__name__, table)``; its
``TYPE_CHECKING`` imports keep the names visible to mypy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` that imports ``package.<exports[name]>`` when ``name`` is used."""

    def getattr_(name: str) -> object:
        if name in exports:
            return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return getattr_
