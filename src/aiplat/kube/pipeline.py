"""Render, validate, lint and compare with the plan in one call: what ``aiplat plan`` and
the benchmark use.

``check_platform`` validates the rendered objects in memory (no disk round trip) for each
target version and lints them against the spec-derived inventory. CRDs come from a
``CrdIndex`` the caller loaded (``load_crds``) — or an empty index, in which case custom
resources are reported as unchecked warnings rather than silently passed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from aiplat.catalog.models import Catalog
from aiplat.fieldnames import camel
from aiplat.fsutil import OWNED, owned_marker
from aiplat.kube.agree import disagreements
from aiplat.kube.crds import CrdIndex
from aiplat.kube.lint import Finding, lint
from aiplat.kube.render import Rendered, render_plan
from aiplat.kube.validate import ValidationResult, validate_objects
from aiplat.plan.build import plan_resolved
from aiplat.plan.models import Plan
from aiplat.plan.resolve import Resolved, resolve
from aiplat.spec.models import Platform

DEFAULT_VERSIONS = ("1.34", "1.35")


@dataclass(frozen=True)
class KubeCheck:
    rendered: Rendered
    validations: list[ValidationResult]
    findings: list[Finding]
    differences: list[str]
    """Figures where the tree runs other pods than the plan sized (``kube.agree``)."""

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.validations) and not self.differences and not any(
            f.severity == "error" for f in self.findings)


def rendered_items(rendered: Rendered) -> list[tuple[str, dict[str, object]]]:
    return [(path, o) for path, objs in rendered.manifests.items() for o in objs]


def check_platform(platform: Platform, catalog: Catalog, crds: CrdIndex | None = None,
                   versions: tuple[str, ...] = DEFAULT_VERSIONS) -> KubeCheck:
    """Resolve, size, render and check a spec (commands that start from a spec)."""
    resolved = resolve(platform, catalog)
    return check_plan(resolved, plan_resolved(resolved), crds, versions)


def check_plan(resolved: Resolved, plan: Plan, crds: CrdIndex | None = None,
               versions: tuple[str, ...] = DEFAULT_VERSIONS) -> KubeCheck:
    """Render the tree of a sized plan, validate it for each version and lint it."""
    rendered = render_plan(resolved, plan)
    items = rendered_items(rendered)
    index = crds if crds is not None else CrdIndex()
    validations = [validate_objects(items, v, index) for v in versions]
    return KubeCheck(rendered, validations, lint(rendered.objects(), rendered.inventory),
                     disagreements(plan, resolved.spec, rendered.objects()))


def check_summary(check: KubeCheck) -> dict[str, Any]:
    """Machine-readable result for ``plan`` output (``kube-check.json``)."""
    return {
        "ok": check.ok,
        "objects": len(check.rendered.objects()),
        "validation": [{"version": v.version, "errors": len(v.errors),
                        "warnings": len(v.issues) - len(v.errors),
                        "issues": [asdict(i) for i in v.issues]} for v in check.validations],
        "lint": [f.model_dump() for f in check.findings],
        "plan_differences": check.differences,
    }


def plan_files(check: KubeCheck, prefix: str = "kube/") -> dict[str, str]:
    """The rendered tree under ``prefix`` plus ``kube-check.json``, ready for ``write_tree``."""
    files = {f"{prefix}{path}": text for path, text in check.rendered.files().items()}
    files[f"{prefix}{OWNED}"] = owned_marker("aiplat plan")  # kube render -d may rewrite it
    files["kube-check.json"] = json.dumps(camel(check_summary(check)), indent=2) + "\n"
    return files
