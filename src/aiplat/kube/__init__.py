"""Kubernetes for AI: render every layer from the spec, validate it, cross-check it, and
explain pending work.

Pure core: builders (``render_*``), ``validate`` (schemas + rules), ``shape`` (the field
types every check relies on, from ``schemas``), ``cel`` (DRA selectors with Kubernetes'
quantity/semver extensions), ``lint`` (cross-layer rules), ``pending`` (why-pending over a
``ClusterObjects``). I/O at the edges: ``crds.load_crds``, ``tree.read_tree``,
``snapshot.load_snapshot`` / ``live.read_cluster`` (the one live reader). The CLI
(``aiplat.cli.kube``) only parses arguments, calls one of these and prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# `lint` and `render` share their submodule's name: importing the submodule sets the package
# attribute to the module, so these two are bound eagerly, after it.
from aiplat.kube.lint import lint
from aiplat.kube.render import render
from aiplat.lazy import lazy_exports

if TYPE_CHECKING:
    from aiplat.kube.crds import CrdIndex, load_crds
    from aiplat.kube.inventory import Inventory
    from aiplat.kube.lint import Finding
    from aiplat.kube.pending import why_pending
    from aiplat.kube.pending_answer import Explanation
    from aiplat.kube.pipeline import KubeCheck, check_platform
    from aiplat.kube.render import Rendered
    from aiplat.kube.snapshot import ClusterObjects, load_snapshot, snapshot_from_lists
    from aiplat.kube.tree import read_tree
    from aiplat.kube.validate import Issue, ValidationResult, validate_objects

# Re-exports load on first use (aiplat.lazy).
_EXPORTS = {
    "CrdIndex": "crds",
    "Explanation": "pending_answer",
    "Finding": "lint",
    "Inventory": "inventory",
    "Issue": "validate",
    "KubeCheck": "pipeline",
    "Rendered": "render",
    "ClusterObjects": "snapshot",
    "ValidationResult": "validate",
    "check_platform": "pipeline",
    "load_crds": "crds",
    "load_snapshot": "snapshot",
    "read_tree": "tree",
    "snapshot_from_lists": "snapshot",
    "validate_objects": "validate",
    "why_pending": "pending",
}

__all__ = [
    "ClusterObjects",
    "CrdIndex",
    "Explanation",
    "Finding",
    "Inventory",
    "Issue",
    "KubeCheck",
    "Rendered",
    "ValidationResult",
    "check_platform",
    "lint",
    "load_crds",
    "load_snapshot",
    "read_tree",
    "render",
    "snapshot_from_lists",
    "validate_objects",
    "why_pending",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
