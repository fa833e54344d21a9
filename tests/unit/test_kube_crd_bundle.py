"""aiplat's packaged CRDs: the pinned upstream versions, cut without changing a verdict.

- every bundle is the module and version the tools go.mod files pin, and covers every CRD
  folder the lab cluster installs (``cluster.assets.MANIFESTS``);
- regenerated from the Go module cache, the bundles are byte-for-byte what is committed
  (``scripts/regen_crds.py --check``; needs Go, as the lab cluster build does);
- the cut (no descriptions) changes no validation result: the full upstream CRDs and the
  bundles give the same issues on the rendered example and on random breakages of it;
- ``kube validate`` on the rendered example checks every custom resource without
  ``--crd-dir``, and a ``--crd-dir`` kind replaces the packaged one;
- the wheel's package-data patterns take every bundle.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.cluster.assets import MANIFESTS, crd_versions, versions
from aiplat.kube.crds import (
    CrdIndex,
    bundles,
    index_crds,
    packaged_crds,
    reduce_crd,
    strip_descriptions,
)
from aiplat.kube.pipeline import rendered_items
from aiplat.kube.render import render
from aiplat.kube.validate import validate_objects
from aiplat.spec import EXAMPLE, example_text, parse_platform

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "schemas"
GO = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists()
                            else None)
IN_CI = os.environ.get("CI", "").lower() in {"true", "1", "yes"}


def _need_go() -> None:
    if GO is None:
        if IN_CI:
            pytest.fail("go is not installed (CI=true: this check must run)")
        pytest.skip("go is not installed")


def test_each_bundle_is_a_pinned_module_version() -> None:
    pinned = versions() | crd_versions()
    crd_modules = {m for m, _src, dst in MANIFESTS if "crds" in dst.split("/")[:2]}
    got = {b["module"]: b["version"] for b in bundles() if "module" in b}  # gitops: tags
    assert set(got) == crd_modules
    assert got == {m: pinned[m] for m in crd_modules}
    for b in bundles():
        assert b["crds"], b["name"]
        assert {c["spec"]["group"] for c in b["crds"]}  # every one a CRD with a group


def test_regenerated_from_upstream_the_bundles_are_unchanged() -> None:
    _need_go()
    env = dict(os.environ, PATH=f"{Path(GO).parent}{os.pathsep}{os.environ['PATH']}")  # type: ignore[arg-type]
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "regen_crds.py"), "--check"],
                          capture_output=True, text=True, env=env, check=False, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]


def test_stripping_keeps_a_property_named_description() -> None:
    schema = {"type": "object", "description": "prose",
              "properties": {"description": {"type": "string", "description": "more"},
                             "items": {"type": "array", "items": {"description": "x",
                                                                  "type": "integer"}}},
              "anyOf": [{"description": "y", "required": ["items"]}]}
    assert strip_descriptions(schema) == {
        "type": "object",
        "properties": {"description": {"type": "string"},
                       "items": {"type": "array", "items": {"type": "integer"}}},
        "anyOf": [{"required": ["items"]}]}


def test_reduce_keeps_what_validation_reads_and_drops_unserved_versions() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com", "annotations": {"a": "b"}},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["w"]},
                    "conversion": {"strategy": "None"},
                    "versions": [
                        {"name": "v1", "served": True, "storage": True,
                         "subresources": {"status": {}},
                         "schema": {"openAPIV3Schema": {"type": "object",
                                                        "description": "d"}}},
                        {"name": "v0", "served": False, "storage": False,
                         "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    reduced = reduce_crd(crd)
    assert reduced == {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    assert index_crds([("f", reduced)]).schemas == \
        {k: strip_descriptions(v) for k, v in index_crds([("f", crd)]).schemas.items()
         if k != ("example.com", "v0", "Widget")}


def _upstream_index() -> CrdIndex:
    """The full upstream CRDs the tests already read (/work/shared/schemas: unchanged
    copies of the same tags), as the reference for the cut bundles."""
    if not SHARED.is_dir():
        if IN_CI:
            pytest.fail(f"{SHARED} is not here (CI=true: this reference must be)")
        pytest.skip(f"{SHARED} is not here")
    return _read_upstream()


@functools.cache
def _read_upstream() -> CrdIndex:
    docs = [(str(p), d) for p in sorted(SHARED.rglob("*.yaml"))
            for d in yaml.safe_load_all(p.read_text()) if isinstance(d, dict)]
    return index_crds(docs)


def _example_items() -> list[tuple[str, dict[str, Any]]]:
    catalog = load_catalog()
    return rendered_items(render(parse_platform(example_text(), EXAMPLE, catalog), catalog))


def _verdicts(items: list[tuple[str, dict[str, Any]]], crds: CrdIndex,
              packaged: bool) -> list[tuple[str, str, str, str]]:
    res = validate_objects(items, "1.34", crds, packaged=packaged)
    return [(i.severity, i.ref, i.path, i.message) for i in res.issues]


def test_reduced_crds_are_still_the_upstream_ones_for_index_crds() -> None:
    upstream = _upstream_index()
    mine = packaged_crds()
    common = set(upstream.schemas) & set(mine.schemas)
    assert len(common) >= 20
    for key in common:
        assert mine.schemas[key] == strip_descriptions(upstream.schemas[key]), key


@pytest.fixture(scope="module")
def custom_items() -> list[tuple[str, dict[str, Any]]]:
    upstream = _upstream_index()
    items = [(f, o) for f, o in _example_items()
             if upstream.knows(str(o["apiVersion"]), str(o["kind"]))]
    assert len({o["kind"] for _f, o in items}) >= 10
    return items


def test_the_example_gets_the_same_verdicts(custom_items: list[tuple[str, dict[str, Any]]]
                                            ) -> None:
    assert _verdicts(custom_items, _upstream_index(), False) == \
        _verdicts(custom_items, CrdIndex(), True) == []


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*at, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*at, i))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_breakages_get_the_same_verdicts(custom_items: list[tuple[str, dict[str, Any]]],
                                                data: st.DataObject) -> None:
    file, obj = data.draw(st.sampled_from(custom_items))
    obj = copy.deepcopy(obj)
    path = data.draw(st.sampled_from([p for p in _paths(obj)
                                      if p and p[0] not in ("apiVersion", "kind", "metadata")]))
    value = data.draw(st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3),
                                st.just({"typo": 1}), st.just([1])))
    parent = obj
    for step in path[:-1]:
        parent = parent[step]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        parent[f"{path[-1]}X"] = value  # an unknown field next to a known one
    else:
        parent[path[-1]] = value
    items = [(file, obj)]
    assert _verdicts(items, _upstream_index(), False) == _verdicts(items, CrdIndex(), True)


def _cli(args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as e:  # `kube validate` exits 1 itself on errors
        return int(e.code or 0)


def test_kube_validate_checks_every_custom_resource_without_crd_dir(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kube"
    assert main(["kube", "render", "-d", str(out)]) == 0
    capsys.readouterr()
    assert main(["kube", "validate", str(out), "--k8s-version", "1.34", "--k8s-version",
                 "1.36", "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(d["version"], d["errors"], d["issues"]) for d in data] == [
        ("1.34", 0, []), ("1.36", 0, [])]
    assert data[0]["objects"] > 50
    # and a custom resource that breaks its CRD fails without --crd-dir
    lq = out / "kueue" / "localqueues.yaml"
    lq.write_text(lq.read_text().replace("kind: LocalQueue", "kind: LocalQueue\nspec2: {}", 1))
    assert _cli(["kube", "validate", str(out)]) == 1
    assert "LocalQueue" in capsys.readouterr().out


def test_a_crd_dir_kind_replaces_the_packaged_one(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kube"
    assert main(["kube", "render", "-d", str(out)]) == 0
    # A cluster whose Kueue serves LocalQueue only as v1beta1: the tree's v1beta2 is refused.
    kueue = next(b for b in bundles() if b["name"] == "kueue")
    lq = copy.deepcopy(next(c for c in kueue["crds"] if c["spec"]["names"]["kind"] ==
                            "LocalQueue"))
    lq["spec"]["versions"] = [v for v in lq["spec"]["versions"] if v["name"] == "v1beta1"]
    assert lq["spec"]["versions"]
    crd_dir = tmp_path / "crds"
    crd_dir.mkdir()
    (crd_dir / "localqueue.yaml").write_text(yaml.safe_dump(lq))
    capsys.readouterr()
    assert _cli(["kube", "validate", str(out), "--crd-dir", str(crd_dir)]) == 1
    stdout = capsys.readouterr().out
    assert "kueue.x-k8s.io/v1beta2 is not served by the CRD (served: v1beta1)" in stdout
    assert "ClusterQueue" not in stdout  # the other Kueue kinds: still the packaged CRDs


def test_the_wheel_takes_every_bundle() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["aiplat"]
    files = sorted((ROOT / "src" / "aiplat" / "kube" / "crd_data").glob("*.json"))
    assert len(files) == len(bundles()) >= 6
    for f in files:
        rel = f.relative_to(ROOT / "src" / "aiplat").as_posix()
        assert any(fnmatch.fnmatch(rel, p) for p in patterns), rel


def test_monitoring_objects_are_checked_by_the_packaged_prometheus_operator_crds() -> None:
    from aiplat.ops.monitoring import render_monitoring

    catalog = load_catalog()
    files = render_monitoring(parse_platform(example_text(), EXAMPLE, catalog))
    items = [(path, o) for path, text in files.items() if path.startswith("kubernetes/")
             for o in yaml.safe_load_all(text) if isinstance(o, dict)]
    kinds = {o["kind"] for _p, o in items}
    assert {"PrometheusRule", "ServiceMonitor"} <= kinds
    assert validate_objects(items, "1.34", CrdIndex()).issues == []
    assert [i.severity for i in validate_objects(items, "1.34", CrdIndex(),
                                                 packaged=False).issues
            if i.ref.startswith(("PrometheusRule", "ServiceMonitor"))] == ["warning"] * sum(
        o["kind"] in ("PrometheusRule", "ServiceMonitor") for _p, o in items)
    rule = copy.deepcopy(next(o for _p, o in items if o["kind"] == "PrometheusRule"))
    rule["spec"]["groups"][0]["rules"][0]["for"] = 5  # a duration is a string
    res = validate_objects([("r.yaml", rule)], "1.34", CrdIndex())
    assert [(i.severity, i.path) for i in res.issues] == [("error", "spec.groups[0].rules[0].for")]
