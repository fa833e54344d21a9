"""Facts as data: accelerators, model architectures and node types.

The YAML files under ``data/`` are the single source of these facts; each entry names its
source. This package only loads and indexes them (no network, no host access), so the pure
layers may depend on it.
"""

from aiplat.catalog.load import load_catalog
from aiplat.catalog.models import Catalog, GpuModel, MigProfile, ModelArchitecture, NodeType

__all__ = ["Catalog", "GpuModel", "MigProfile", "ModelArchitecture", "NodeType", "load_catalog"]
