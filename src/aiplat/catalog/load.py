"""Load the packaged catalog once, with the site's overlays (``--catalog FILE``) on top;
callers may pass their own for tests."""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml

from aiplat.catalog.models import Catalog, CatalogOverlay

_OVERLAYS: list[CatalogOverlay] = []


def use_overlays(overlays: list[CatalogOverlay]) -> list[str]:
    """From now on ``load_catalog`` is the packaged catalog with ``overlays`` on top (each
    later one on the earlier); returns the packaged entries they replace, for a notice."""
    _OVERLAYS[:] = overlays
    load_catalog.cache_clear()
    replaced: list[str] = []
    catalog = _packaged()
    for o in overlays:
        catalog, more = catalog.overlaid(o)
        replaced += more
    return replaced


@cache
def load_catalog() -> Catalog:
    catalog = _packaged()
    for o in _OVERLAYS:
        catalog, _replaced = catalog.overlaid(o)
    return catalog


@cache
def _packaged() -> Catalog:
    data = resources.files("aiplat.catalog") / "data"

    def read(name: str) -> object:
        # libyaml's parser is ~10x faster than PyYAML's pure-Python one; same safe schema.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load((data / name).read_text(encoding="utf-8"), Loader=loader)

    return Catalog.model_validate(
        {
            "gpus": read("gpus.yaml"),
            "models": read("models.yaml"),
            "node_types": read("node_types.yaml"),
        }
    )
