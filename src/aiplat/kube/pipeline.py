"""Render + validate + lint in one call: what ``aiplat plan`` and the benchmark use.

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
from aiplat.kube.crds import CrdIndex
from aiplat.kube.lint import Finding, lint
from aiplat.kube.render import Rendered, render
from aiplat.kube.validate import ValidationResult, validate_objects
from aiplat.spec.models import Platform

DEFAULT_VERSIONS = ("1.34", "1.35")


@dataclass(frozen=True)
class KubeCheck:
    rendered: Rendered
    validations: list[ValidationResult]
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.validations) and not any(
            f.severity == "error" for f in self.findings)


def rendered_items(rendered: Rendered) -> list[tuple[str, dict[str, object]]]:
    return [(path, o) for path, objs in rendered.manifests.items() for o in objs]


def check_platform(platform: Platform, catalog: Catalog, crds: CrdIndex | None = None,
                   versions: tuple[str, ...] = DEFAULT_VERSIONS,
                   gpus: dict[str, int] | None = None) -> KubeCheck:
    rendered = render(platform, catalog, gpus=gpus)
    items = rendered_items(rendered)
    index = crds if crds is not None else CrdIndex()
    validations = [validate_objects(items, v, index) for v in versions]
    return KubeCheck(rendered, validations, lint(rendered.objects(), rendered.inventory))


def check_summary(check: KubeCheck) -> dict[str, Any]:
    """Machine-readable result for ``plan`` output (``kube-check.json``)."""
    return {
        "ok": check.ok,
        "objects": len(check.rendered.objects()),
        "validation": [{"version": v.version, "errors": len(v.errors),
                        "warnings": len(v.issues) - len(v.errors),
                        "issues": [asdict(i) for i in v.issues]} for v in check.validations],
        "lint": [f.as_dict() for f in check.findings],
    }


def plan_files(check: KubeCheck, prefix: str = "kube/") -> dict[str, str]:
    """The rendered tree under ``prefix`` plus ``kube-check.json``, ready for ``write_tree``."""
    files = {f"{prefix}{path}": text for path, text in check.rendered.files().items()}
    files["kube-check.json"] = json.dumps(check_summary(check), indent=2) + "\n"
    return files
