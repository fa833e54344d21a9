"""Kubernetes for AI: render every layer from the spec, validate it, cross-check it, and
explain pending work.

Pure core: builders (``render_*``), ``validate`` (schemas + rules), ``cel`` (DRA selectors
with Kubernetes' quantity/semver extensions), ``lint`` (cross-layer rules), ``pending``
(why-pending over a ``Snapshot``). I/O at the edges: ``crds.load_crds``, ``tree.read_tree``,
``snapshot.load_snapshot`` / ``snapshot.read_live`` (lightkube). The CLI
(``aiplat.cli.kube``) only parses arguments, calls one of these and prints.
"""

from aiplat.kube.crds import CrdIndex, load_crds
from aiplat.kube.inventory import Inventory
from aiplat.kube.lint import Finding, lint
from aiplat.kube.pending import Explanation, why_pending
from aiplat.kube.pipeline import KubeCheck, check_platform
from aiplat.kube.render import Rendered, render
from aiplat.kube.snapshot import Snapshot, load_snapshot, snapshot_from_lists
from aiplat.kube.tree import read_tree
from aiplat.kube.validate import Issue, ValidationResult, validate_objects

__all__ = [
    "CrdIndex", "Explanation", "Finding", "Inventory", "Issue", "KubeCheck", "Rendered",
    "Snapshot", "ValidationResult", "check_platform", "lint", "load_crds", "load_snapshot",
    "read_tree", "render", "snapshot_from_lists", "validate_objects", "why_pending",
]
