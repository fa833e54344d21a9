"""Rendering the example spec: the golden tree, YAML hygiene, kustomize layout, and every
rendered object valid for Kubernetes 1.34 and 1.35 against the official schemas and the
shared CRDs (Kueue v0.19.2, JobSet, snapshotter, Gateway API, inference extension).

Update the golden tree deliberately with
``AIPLAT_UPDATE_GOLDEN=1 pytest tests/unit/test_kube_render.py``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.kube import CrdIndex, load_crds, render, validate_objects
from aiplat.kube.pipeline import rendered_items
from aiplat.kube.yamlout import dump_docs, load_docs, needs_quotes
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform

ROOT = Path(__file__).parents[2]
SHARED = ROOT.parent / "shared"
GOLDEN = ROOT / "tests" / "golden" / "kube"


@pytest.fixture(scope="module")
def crds() -> CrdIndex:
    return load_crds(SHARED / "schemas")


def platform_from(edit: Any = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), "test.yaml", load_catalog())


def test_golden_tree_matches_render() -> None:
    files = render(platform_from(), load_catalog()).files()
    if os.environ.get("AIPLAT_UPDATE_GOLDEN"):
        for rel, content in files.items():
            (GOLDEN / rel).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / rel).write_text(content)
    shipped = {str(p.relative_to(GOLDEN)): p.read_text()
               for p in GOLDEN.rglob("*") if p.is_file()}
    assert sorted(shipped) == sorted(files)
    for rel, content in files.items():
        assert shipped[rel] == content, f"{rel} differs from the golden copy"


def test_every_manifest_directory_has_a_kustomization_listing_its_files() -> None:
    files = render(platform_from(), load_catalog()).files()
    dirs = {str(Path(p).parent) for p in files if p.endswith(".yaml")
            and "/nodes/" not in p and "gpu-operator" not in p and "dra-driver" not in p
            and p != "operators/helmfile.yaml"}  # helmfile's, not a manifest
    for d in dirs:
        key = "kustomization.yaml" if d == "." else f"{d}/kustomization.yaml"
        assert key in files, d
        resources = yaml.safe_load(files[key])["resources"]
        for r in resources:
            assert (f"{d}/{r}" if d != "." else r) in files or any(
                f.startswith(f"{d}/{r}/" if d != "." else f"{r}/") for f in files), (d, r)


def test_one_object_per_document_with_stable_key_order() -> None:
    rendered = render(platform_from(), load_catalog())
    for path, text in rendered.files().items():
        if not path.endswith(".yaml") or "/nodes/" in path or "values.yaml" in path \
                or path == "operators/helmfile.yaml":
            continue
        docs = load_docs(text)
        for d in docs:
            assert list(d)[:2] == ["apiVersion", "kind"], path
    assert rendered.files() == render(platform_from(), load_catalog()).files()


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "y", "n", "Y", "NO", "12:30", "1e3",
                                  "0x1F", "true", "null", "~", "007", ""])
def test_ambiguous_scalars_are_quoted(word: str) -> None:
    assert needs_quotes(word)
    text = dump_docs([{"k": word}])
    assert f'"{word}"' in text
    # YAML 1.1 readers (kubectl) must read back the string.
    assert yaml.safe_load(text)["k"] == word


def test_plain_words_stay_unquoted_and_ambiguous_keys_are_quoted() -> None:
    assert dump_docs([{"k": "nvidia.com/gpu", "count": 3}]) == "k: nvidia.com/gpu\ncount: 3\n"
    # A key is a scalar too: YAML 1.1 reads an unquoted `n:` as the boolean false.
    assert dump_docs([{"n": 3}]) == '"n": 3\n'



@pytest.mark.parametrize("version", ["1.34", "1.35"])
def test_every_rendered_object_validates(version: str, crds: CrdIndex) -> None:
    rendered = render(platform_from(), load_catalog())
    result = validate_objects(rendered_items(rendered), version, crds)
    assert result.objects == len(rendered.objects()) > 80
    assert result.issues == []  # no errors and no unchecked (schema-less) objects


def _mig_and_dra(data: dict[str, Any]) -> None:
    data["kubernetes"]["gpuResources"] = "dra"
    data["pools"][0]["sharing"] = {"strategy": "mig", "migLayout": ["3g.40gb", "2g.20gb",
                                                                    "2g.20gb"]}
    data["pools"][1]["sharing"] = {"strategy": "time-slicing", "replicas": 4}


def _v1beta1_nested(data: dict[str, Any]) -> None:
    data["kubernetes"]["kueueApi"] = "v1beta1"
    data["kubernetes"]["cohorts"] = [{"name": "inference"}]
    data["tenants"][1]["cohort"] = "inference"
    data["tenants"][2]["cohort"] = "inference"
    data["tenants"][2]["queueingStrategy"] = "StrictFIFO"
    data["pools"][1]["sharing"] = {"strategy": "mps", "replicas": 2}


@pytest.mark.parametrize("edit", [_mig_and_dra, _v1beta1_nested], ids=["mig-dra", "v1beta1"])
def test_variants_validate(edit: Any, crds: CrdIndex) -> None:
    rendered = render(platform_from(edit), load_catalog())
    for version in ("1.34", "1.35"):
        assert validate_objects(rendered_items(rendered), version, crds).issues == []


def test_mig_dra_variant_renders_mig_classes_and_kueue_mapping() -> None:
    rendered = render(platform_from(_mig_and_dra), load_catalog())
    classes = {o["metadata"]["name"] for o in rendered.objects() if o["kind"] == "DeviceClass"}
    assert "mig-3g.40gb-h100-sxm-80gb" in classes and "gpu-l40s-48gb" in classes
    cq = next(o for o in rendered.objects() if o["kind"] == "ClusterQueue"
              and o["metadata"]["name"] == "research")
    covered = cq["spec"]["resourceGroups"][0]["coveredResources"]
    assert covered == ["cpu", "memory", "mig-2g.20gb-h100-sxm-80gb", "mig-3g.40gb-h100-sxm-80gb"]
    # 40 units over a layout of 1×3g + 2×2g per GPU: 13 + 26
    quotas = {r["name"]: r["nominalQuota"]
              for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert quotas["mig-3g.40gb-h100-sxm-80gb"] == "13"
    assert quotas["mig-2g.20gb-h100-sxm-80gb"] == "26"
    cm = next(o for o in rendered.objects() if o["kind"] == "ConfigMap"
              and o["metadata"]["name"] == "kueue-manager-config")
    config = yaml.safe_load(cm["data"]["controller_manager_config.yaml"])
    mapped = {m["name"]: m["deviceClassNames"] for m in config["resources"]["deviceClassMappings"]}
    assert mapped["mig-3g.40gb-h100-sxm-80gb"] == ["mig-3g.40gb-h100-sxm-80gb"]
    assert "gpu-l40s-48gb" in mapped
    rq = next(o for o in rendered.objects() if o["kind"] == "ResourceQuota"
              and o["metadata"]["namespace"] == "research")
    assert "mig-3g.40gb-h100-sxm-80gb.deviceclass.resource.k8s.io/devices" in rq["spec"]["hard"]


def test_v1beta1_uses_cohort_field_and_nested_cohorts() -> None:
    rendered = render(platform_from(_v1beta1_nested), load_catalog())
    cqs = {o["metadata"]["name"]: o for o in rendered.objects() if o["kind"] == "ClusterQueue"}
    assert cqs["serving"]["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert cqs["serving"]["spec"]["cohort"] == "inference"
    assert cqs["batch"]["spec"]["queueingStrategy"] == "StrictFIFO"
    cohorts = {o["metadata"]["name"]: o for o in rendered.objects() if o["kind"] == "Cohort"}
    assert cohorts["inference"]["spec"]["parentName"] == "example"


def test_example_quota_and_security_content() -> None:
    objs = render(platform_from(), load_catalog()).objects()
    ns = next(o for o in objs if o["kind"] == "Namespace" and o["metadata"]["name"] == "research")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    roles = [o for o in objs if o["kind"] in ("Role", "ClusterRole")]
    for r in roles:
        for rule in r["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"]
            assert "secrets" not in rule["resources"]
    rq = next(o for o in objs if o["kind"] == "ResourceQuota"
              and o["metadata"]["namespace"] == "research")
    assert rq["spec"]["hard"]["requests.nvidia.com/gpu"] == 44  # 40 nominal + 4 borrowing
    job = next(o for o in objs if o["metadata"]["name"] == "domain-pretrain")
    assert job["kind"] == "JobSet"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "research"
    ann = job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]
    assert set(ann["annotations"]) & {"kueue.x-k8s.io/podset-required-topology",
                                      "kueue.x-k8s.io/podset-preferred-topology"}
    script = render(platform_from(), load_catalog()).other["cluster/nodes/label-and-taint.sh"]
    assert "nvidia.com/gpu:NoSchedule" in script and "set -euo pipefail" in script
