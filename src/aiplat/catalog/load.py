"""Load the packaged catalog once; callers may pass their own for tests."""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml

from aiplat.catalog.models import Catalog


@cache
def load_catalog() -> Catalog:
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
