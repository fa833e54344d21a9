"""The GitOps tools' objects that ``kube render --gitops`` writes are checked against their
upstream CRDs (issue #45): Argo CD's Application, Flux's Kustomization, HelmRepository and
HelmRelease, packaged from release tags with their provenance (``scripts/gitops_crds.py``).

What this cannot show: that Argo CD or Flux reconcile them (no controller here), or that the
charts exist at the pinned versions (that needs the registries).
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.kube import CrdIndex, render, validate_objects
from aiplat.kube.crds import bundles
from aiplat.spec import EXAMPLE, example_text, parse_platform


@pytest.fixture(scope="module")
def rendered() -> Any:
    return render(parse_platform(example_text(), EXAMPLE, load_catalog()), load_catalog())


def _items(files: dict[str, str], *folders: str) -> list[tuple[str, dict[str, Any]]]:
    return [(path, d) for path, text in files.items()
            if path.split("/")[0] in folders and path.endswith(".yaml")
            and not path.endswith("kustomization.yaml")
            for d in yaml.safe_load_all(text) if d]


@pytest.mark.parametrize("mode", ["argocd", "flux"])
def test_the_gitops_objects_validate_against_upstream_crds(rendered: Any, mode: str) -> None:
    items = _items(rendered.files(gitops=mode), "operators", "flux")
    kinds = {o["kind"] for _f, o in items}
    assert kinds == ({"Application", "Kustomization"} if mode == "argocd" else
                     {"HelmRepository", "HelmRelease", "Kustomization"})
    result = validate_objects(items, "1.34", CrdIndex())
    assert result.objects == len(items) and result.issues == []


def test_a_wrong_type_in_a_release_is_an_error(rendered: Any) -> None:
    items = _items(rendered.files(gitops="flux"), "operators")
    release = copy.deepcopy(next(o for _f, o in items if o["kind"] == "HelmRelease"))
    release["spec"]["chart"]["spec"]["version"] = 25
    app = copy.deepcopy(next(o for _f, o in _items(rendered.files(gitops="argocd"),
                                                   "operators")))
    app["spec"]["destination"] = "in-cluster"
    result = validate_objects([("r.yaml", release), ("a.yaml", app)], "1.34", CrdIndex())
    assert {e.ref.split("/")[0] for e in result.errors} == {"HelmRelease", "Application"}


def test_each_gitops_bundle_names_its_release_and_commit() -> None:
    gitops = [b for b in bundles() if "module" not in b]
    assert {b["name"] for b in gitops} == {"argo-cd", "flux"}
    for b in gitops:
        for s in b["sources"]:
            assert s["repository"].startswith("github.com/") and re.fullmatch(
                r"v\d+\.\d+\.\d+", s["tag"]) and re.fullmatch(r"[0-9a-f]{40}", s["commit"])
