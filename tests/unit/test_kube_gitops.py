"""The tree as GitOps applies it (issue #45): parts and their Argo CD sync waves, Flux
Kustomizations ordered by dependsOn, the examples opt-in, kubectl's ApplySet identity and
what a prune removes, and ``-d`` owning its folder.

What these cannot show: that Argo CD and Flux run the waves and dependsOn as written (no
controller here); the live order, prune and re-apply are in
``tests/integration/test_kube_gitops_live.py`` on the lab's API server.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.errors import InputError
from aiplat.fsutil import OWNED, write_owned_tree
from aiplat.kube import render
from aiplat.kube.apply import apply_order
from aiplat.kube.applyset import (
    KINDS,
    NAMESPACES,
    PART_OF,
    ApplySet,
    applyset_id,
    foreign_tooling,
    group_kind,
    listed,
    stale,
)
from aiplat.kube.render import PARTS, SYNC_WAVE, part_of
from aiplat.spec import EXAMPLE, example_text, parse_platform


@pytest.fixture(scope="module")
def rendered() -> Any:
    return render(parse_platform(example_text(), EXAMPLE, load_catalog()), load_catalog())


def test_kubectls_applyset_id_for_its_own_test_vector() -> None:
    # kubectl's apply/applyset_test.go TestApplySet_ID: parent test-foo.test-ns.Foo.foo.bar
    assert applyset_id("test-foo", "test-ns", "Foo", "foo.bar") == \
        "applyset-f9Rk5tKHoB72oV1tU2iFKxDwL8MBZTjMHFQ8V9WNNlA-v1"
    assert ApplySet("aiplat").id == applyset_id("aiplat", "kube-system", "Secret", "")


def test_every_object_carries_its_parts_wave_and_examples_come_last(rendered: Any) -> None:
    waves = {}
    for path, objs in rendered.manifests.items():
        for o in objs:
            wave = o["metadata"]["annotations"][SYNC_WAVE]
            assert wave == str(PARTS[part_of(path, o)]), (path, o["kind"])
            waves.setdefault(path.split("/")[0], set()).add(int(wave))
    assert waves["cluster"] == {-1} and waves["workloads"] == {1}
    assert waves["kueue"] == waves["tenants"] == {0}
    # apply order follows the waves: no platform object before a cluster/ one
    order = [int(o["metadata"]["annotations"][SYNC_WAVE])
             for o in apply_order(rendered.objects())]
    assert order == sorted(order)


def test_a_crd_is_the_first_wave_wherever_it_is() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}
    assert part_of("serving/gateway.yaml", crd) == "crds"
    assert PARTS["crds"] < PARTS["operators"] < PARTS["cluster"] < PARTS["platform"] \
        < PARTS["examples"]


def test_examples_are_written_but_not_in_the_root_kustomization(rendered: Any) -> None:
    files = rendered.files()
    root = yaml.safe_load(files["kustomization.yaml"])["resources"]
    assert "workloads" not in root and {"cluster", "kueue", "tenants"} <= set(root)
    assert "workloads/examples.yaml" in files and "workloads/kustomization.yaml" in files
    assert "workloads" in yaml.safe_load(rendered.files(examples=True)["kustomization.yaml"]
                                         )["resources"]


def test_flux_kustomizations_depend_on_what_their_objects_need(rendered: Any) -> None:
    files = rendered.files()
    listed_files = yaml.safe_load(files["flux/kustomization.yaml"])["resources"]
    assert listed_files == ["kustomizations.yaml"]  # the examples' is not listed
    ks = {k["metadata"]["name"]: k for k in yaml.safe_load_all(
        files["flux/kustomizations.yaml"])}
    ks.update({k["metadata"]["name"]: k for k in yaml.safe_load_all(files["flux/examples.yaml"])})
    deps = {n: {d["name"] for d in k["spec"].get("dependsOn", [])} for n, k in ks.items()}
    assert deps["aiplat-cluster"] == set()
    assert deps["aiplat-kueue"] == {"aiplat-tenants"}  # LocalQueues live in tenant namespaces
    assert deps["aiplat-tenants"] == {"aiplat-cluster"}
    assert deps["aiplat-workloads"] == {"aiplat-kueue", "aiplat-storage", "aiplat-serving"}
    for n, k in ks.items():
        assert k["spec"]["path"] == "./" + n.removeprefix("aiplat-") and k["spec"]["prune"]
        assert deps[n] <= set(ks), n
    # acyclic: a topological order exists
    done: set[str] = set()
    while len(done) < len(deps):
        ready = {n for n, d in deps.items() if n not in done and d <= done}
        assert ready, deps
        done |= ready


def test_the_parent_lists_kinds_and_namespaces_and_members_are_labelled() -> None:
    aset = ApplySet("aiplat")
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
          "metadata": {"name": "research"}}
    quota = {"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "q", "namespace": "research", "labels": {"a": "b"}}}
    m = aset.member(quota)
    assert m["metadata"]["labels"] == {"a": "b", PART_OF: aset.id}
    assert PART_OF not in quota["metadata"]["labels"]  # the tree's object is untouched
    parent = aset.parent({group_kind(cq), group_kind(quota)}, {"research", "kube-system"})
    assert parent["metadata"]["annotations"][KINDS] == "ClusterQueue.kueue.x-k8s.io,ResourceQuota"
    assert parent["metadata"]["annotations"][NAMESPACES] == "research"
    assert listed(parent) == ({"ClusterQueue.kueue.x-k8s.io", "ResourceQuota"}, {"research"})
    assert foreign_tooling(parent) is None
    kubectls = {**parent, "metadata": {**parent["metadata"], "annotations": {
        "applyset.kubernetes.io/tooling": "kubectl/v1.36"}}}
    assert foreign_tooling(kubectls) == "kubectl/v1.36"


def test_stale_is_what_the_live_set_has_and_the_tree_does_not() -> None:
    def ns(name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": "batch", "namespace": "batch"}}
    lq_v1beta1 = {**lq, "apiVersion": "kueue.x-k8s.io/v1beta1"}  # same object, other version
    assert stale([ns("batch"), ns("research"), lq_v1beta1], [ns("research"), lq]) \
        == [ns("batch")]


@pytest.mark.parametrize("name", ["", "Aiplat", "a_b", "-a", "x" * 64])
def test_an_applyset_name_that_is_no_secret_name_is_refused(name: str) -> None:
    with pytest.raises(InputError, match="--applyset"):
        ApplySet(name)


def test_an_owned_folder_is_rewritten_whole(tmp_path: Path) -> None:
    out = tmp_path / "kube"
    write_owned_tree(out, {"a/x.yaml": "x: 1\n", "b/y.yaml": "y: 1\n"}, "test")
    assert (out / OWNED).is_file()
    write_owned_tree(out, {"a/x.yaml": "x: 2\n"}, "test")
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [OWNED, "a", "a/x.yaml"]
    assert (out / "a" / "x.yaml").read_text() == "x: 2\n"


def test_a_folder_aiplat_did_not_write_is_refused_untouched(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep\n")
    with pytest.raises(InputError, match="did not write"):
        write_owned_tree(mine, {"a.yaml": "a: 1\n"}, "test")
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


def test_render_cli_refuses_a_foreign_folder_and_streams_no_examples(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.yaml").write_text("a: 1\n")
    assert main(["kube", "render", "-d", str(tmp_path / "x")]) == 2
    assert "did not write" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "x").iterdir()] == ["keep.yaml"]
    assert main(["kube", "render", "-o", "yaml"]) == 0
    kinds = {d["kind"] for d in yaml.safe_load_all(capsys.readouterr().out) if d}
    assert "JobSet" not in kinds and "ClusterQueue" in kinds
    assert main(["kube", "render", "-o", "yaml", "--with-examples"]) == 0
    assert "JobSet" in {d["kind"] for d in yaml.safe_load_all(capsys.readouterr().out) if d}


def test_client_dry_run_refuses_prune_and_takes_several_targets(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "t"
    assert main(["kube", "render", "-d", str(tree)]) == 0
    assert main(["kube", "apply", str(tree), "--dry-run=client", "--prune"]) == 2
    assert "--prune" in capsys.readouterr().err
    assert main(["kube", "apply", str(tree), str(tree / "workloads"), "--dry-run=client",
                 "-o", "json"]) == 0
    done = yaml.safe_load(capsys.readouterr().out)
    assert any(o["object"].startswith("JobSet ") for o in done)
    assert main(["kube", "apply", str(tree), "--dry-run=client", "-o", "json"]) == 0
    assert not any(o["object"].startswith("JobSet ")
                   for o in yaml.safe_load(capsys.readouterr().out))


def _spec(edit: Any = None) -> Any:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), "test.yaml", load_catalog())


def test_helmfile_pins_the_approved_versions_and_uses_the_trees_values(rendered: Any) -> None:
    files = rendered.files()  # the default: helmfile
    hf = yaml.safe_load(files["operators/helmfile.yaml"])
    rel = {r["name"]: r for r in hf["releases"]}
    entry = rendered.spec.versions.approved[0]
    assert rel["gpu-operator"]["version"] == entry.gpu_operator == "v25.10.0"
    assert rel["nvidia-dra-driver-gpu"]["version"] == entry.dra_driver.removeprefix("v")
    assert rel["kueue"]["version"] == rendered.spec.kubernetes.kueue_version
    assert rel["gpu-operator"]["values"] == ["../cluster/gpu-operator/values.yaml"]
    for r in rel.values():  # every values file named is one the tree writes
        for v in r["values"]:
            assert not isinstance(v, str) or posixpath.normpath(
                posixpath.join("operators", v)) in files, v
    # Kueue's chart gets the Configuration the tree's ConfigMap holds
    cm = next(d for d in yaml.safe_load_all(files["kueue/kueue-manager-config.yaml"])
              if d["kind"] == "ConfigMap")
    assert rel["kueue"]["values"][0]["managerConfig"]["controllerManagerConfigYaml"] == \
        cm["data"]["controller_manager_config.yaml"]
    repos = {r["name"]: r for r in hf["repositories"]}
    assert repos["kueue"].get("oci") is True and "oci" not in repos["nvidia"]
    assert "operators" not in yaml.safe_load(files["kustomization.yaml"])["resources"]


def test_argocd_applications_come_first_in_the_root(rendered: Any) -> None:
    files = rendered.files(gitops="argocd")
    assert yaml.safe_load(files["kustomization.yaml"])["resources"][0] == "operators"
    apps = {a["metadata"]["name"]: a for a in yaml.safe_load_all(
        files["operators/applications.yaml"])}
    assert set(apps) == {"gpu-operator", "nvidia-dra-driver-gpu", "kueue"}
    for a in apps.values():
        assert a["metadata"]["annotations"][SYNC_WAVE] == str(PARTS["operators"])
    gpu = apps["gpu-operator"]["spec"]
    assert gpu["source"]["targetRevision"] == "v25.10.0"
    assert gpu["source"]["helm"]["valuesObject"] == yaml.safe_load(
        files["cluster/gpu-operator/values.yaml"])


def test_flux_releases_are_applied_before_the_cluster_folder(rendered: Any) -> None:
    files = rendered.files(gitops="flux")
    ks = {k["metadata"]["name"]: k for k in yaml.safe_load_all(
        files["flux/kustomizations.yaml"])}
    assert ks["aiplat-operators"]["spec"]["path"] == "./operators"
    assert ks["aiplat-cluster"]["spec"]["dependsOn"] == [{"name": "aiplat-operators"}]
    docs = list(yaml.safe_load_all(files["operators/releases.yaml"]))
    repos = {d["metadata"]["name"]: d for d in docs if d["kind"] == "HelmRepository"}
    assert repos["kueue"]["spec"] == {"interval": "1h", "type": "oci",
                                      "url": "oci://registry.k8s.io/kueue/charts"}
    hr = {d["metadata"]["name"]: d for d in docs if d["kind"] == "HelmRelease"}
    assert hr["kueue"]["spec"]["chart"]["spec"]["version"] == "0.19.2"
    assert hr["gpu-operator"]["spec"]["targetNamespace"] == "gpu-operator"


def test_a_range_is_no_pin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def ranged(data: dict[str, Any]) -> None:
        data["versions"]["approved"][0]["gpuOperator"] = ">=v25.3.0"
    spec = _spec(ranged)
    r = render(spec, load_catalog())
    with pytest.raises(InputError, match=r"versions.approved\[0\].gpuOperator: '>=v25.3.0' "
                                         "is not one version"):
        r.files(gitops="helmfile")
    # by default the tree is still written, operators/ saying why it holds no release
    readme = r.files()["operators/README.md"]
    assert "No release written" in readme and "operators/helmfile.yaml" not in r.files()
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(yaml.safe_load(example_text()) | {
        "versions": {"approved": []}}, sort_keys=False))
    assert main(["kube", "render", str(tmp_path / "s.yaml"), "-d", str(tmp_path / "k"),
                 "--gitops", "flux"]) == 2
    assert "versions.approved" in capsys.readouterr().err
    assert not (tmp_path / "k").exists()  # nothing half-written
