"""Trees with kustomizations, as ``aiplat kube lint DIR`` and ``kube validate DIR`` read them
(issue #38, the red team's second round): a kustomization's ``namespace`` was ignored (a
RoleBinding that kustomize puts into kube-system was judged in the namespace its file names),
``kustomization.yml`` and ``Kustomization`` were not recognised (the directory was read as
loose YAML, missing what the kustomization lists), patches were silently ignored, and a
resource outside the tree was read (an absolute path ended in a traceback)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_kube_lint_rbac_round2 import aiplat

from aiplat.cluster.assets import default_cache
from aiplat.errors import InputError
from aiplat.kube.kustomize import find as find_kustomize
from aiplat.kube.tree import read_tree

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"
ROLE = {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "x", "namespace":
                                                                 "research"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]}
BINDING = {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
           "metadata": {"name": "x", "namespace": "research"},
           "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "x"},
           "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "oidc:ml-team"}]}
IN_KUBE_SYSTEM = "error: [rbac-system-namespace] RoleBinding/kube-system/x: "


def write(directory: Path, files: dict[str, Any]) -> Path:
    """``files``: name -> text, or a list of objects (YAML documents)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else yaml.safe_dump_all(content))
    return directory


def kustomization(**fields: Any) -> str:
    return yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1",
                           "kind": "Kustomization", **fields})


def lint(tree: Path, capsys: pytest.CaptureFixture[str],
         command: str = "lint", *extra: str) -> tuple[int, str, str]:
    inv = tree.parent / "inventory.yaml"
    inv.write_text("pools: []\n")
    capsys.readouterr()
    args = ["kube", command, str(tree), *extra] + (["--inventory", str(inv)]
                                                   if command == "lint" else [])
    code = aiplat(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


# --- the kustomization's names --------------------------------------------------------------

@pytest.mark.parametrize("name", ["kustomization.yaml", "kustomization.yml", "Kustomization"])
def test_every_name_kustomize_accepts_is_a_kustomization(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """The red team's kz_yml and kz_K: the kustomization lists rbac.txt, which a plain read of
    the directory's YAML never sees."""
    ks = {**BINDING, "metadata": {"name": "x", "namespace": "kube-system"}}
    tree = write(tmp_path / "t", {name: kustomization(resources=["rbac.txt"]),
                                  "rbac.txt": [{**ROLE, "metadata": {"name": "x", "namespace":
                                                                    "kube-system"}}, ks],
                                  "benign.yaml": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": "b"}}]})
    code, out, _err = lint(tree, capsys)
    assert code == 1 and IN_KUBE_SYSTEM in out
    assert "2 objects" in out  # what the kustomization lists, not benign.yaml


def test_two_kustomizations_in_one_directory_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(resources=[]),
                                  "Kustomization": kustomization(resources=[])})
    code, _out, err = lint(tree, capsys)
    assert code == 2 and "more than one kustomization" in err and "fix:" in err


# --- namespace ----------------------------------------------------------------------------

def test_the_kustomization_namespace_is_where_objects_are_judged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The red team's kz_ns: rbac.yaml says research, kustomize puts it in kube-system."""
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        namespace="kube-system", resources=["rbac.yaml"]), "rbac.yaml": [ROLE, BINDING]})
    code, out, _err = lint(tree, capsys)
    assert code == 1 and IN_KUBE_SYSTEM in out
    code, out, _err = lint(tree, capsys, "validate")
    assert code == 0


def test_namespace_is_set_as_kustomize_sets_it(tmp_path: Path) -> None:
    """api/filters/namespace: every namespaced object (a custom resource kustomize does not
    know too), a Namespace renamed, binding subjects named default, an APIService's service;
    cluster-scoped kinds (Kubernetes' and Kueue's) left alone; the outer kustomization wins."""
    sa_binding = {**BINDING, "kind": "ClusterRoleBinding", "metadata": {"name": "y"},
                  "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
                  "subjects": [{"kind": "ServiceAccount", "name": "default"},
                               {"kind": "ServiceAccount", "name": "app", "namespace": "apps"}]}
    objs = [ROLE, sa_binding,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "research"}},
            {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "c"}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
             "metadata": {"name": "q"}},
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
            {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
             "metadata": {"name": "v1.metrics"},
             "spec": {"service": {"name": "m", "namespace": "monitoring"}}}]
    tree = write(tmp_path / "t", {
        "kustomization.yaml": kustomization(namespace="outer", resources=["base"]),
        "base/kustomization.yaml": kustomization(namespace="inner", resources=["all.yaml"]),
        "base/all.yaml": objs})
    items, _inv = read_tree(tree)
    got = {(o["kind"], o["metadata"]["name"]): o for _f, o in items}
    assert {f for f, _o in items} == {"base/all.yaml"}
    assert got["Role", "x"]["metadata"]["namespace"] == "outer"
    assert "namespace" not in got["ClusterRoleBinding", "y"]["metadata"]
    assert got["ClusterRoleBinding", "y"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "default", "namespace": "outer"},
        {"kind": "ServiceAccount", "name": "app", "namespace": "apps"}]
    assert ("Namespace", "outer") in got
    assert "namespace" not in got["ClusterRole", "c"]["metadata"]
    assert "namespace" not in got["ClusterQueue", "q"]["metadata"]
    assert got["Widget", "w"]["metadata"]["namespace"] == "outer"
    assert got["APIService", "v1.metrics"]["spec"]["service"]["namespace"] == "outer"


# --- what only kustomize builds, and what is not followed --------------------------------

def need_kustomize() -> None:
    """kubectl (or kustomize) to build with: skip here without one, fail in CI (CI=true)."""
    if find_kustomize([default_cache() / "bin" / "kubectl"]) is not None:
        return
    if os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}:
        pytest.fail("no kubectl or kustomize (CI=true: this test must run)", pytrace=False)
    pytest.skip("no kubectl or kustomize (`aiplat lab cluster build` builds the lab's)")


def test_patches_are_built_by_kustomize(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The red team's kz_patch: a JSON patch adds system:authenticated to the binding; it was
    judged as its base. Now kustomize builds it: the prefix and the patch are what lint sees."""
    need_kustomize()
    patch = "- op: add\n  path: /subjects/-\n  value: {kind: Group, name: system:authenticated}\n"
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=["rbac.yaml"], patches=[{"target": {"kind": "RoleBinding"}, "patch": patch}],
        namePrefix="p-"), "rbac.yaml": [ROLE, BINDING]})
    code, out, _err = lint(tree, capsys, "lint", "-o", "json")
    found = json.loads(out)
    assert code == 1
    assert found[0]["source"] == "kustomize" and found[0]["severity"] == "info"
    assert "'namePrefix'" in found[0]["message"] and "'patches'" in found[0]["message"]
    assert any("RoleBinding/research/p-x" in f["subject"] and "system:authenticated"
               in f["message"] for f in found if f["severity"] == "error"), found


def test_without_kustomize_a_patched_tree_is_an_input_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Never judged as its base: exit 2, the field named, the fix given."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=["rbac.yaml"], namePrefix="p-"), "rbac.yaml": [ROLE]})
    for command in ("lint", "validate"):
        code, out, err = lint(tree, capsys, command)
        assert code == 2 and out == ""
        assert "only kustomize builds this kustomization ('namePrefix' (read by kustomize " \
            "only))" in err
        assert "no kustomize program was found (fix: put kubectl (or kustomize) on PATH" in err


def test_a_remote_resource_is_an_input_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kustomize fetches it and applies what it holds (the red team's sixth round, F1: a
    repository's cluster-admin binding would pass unjudged): aiplat fetches nothing."""
    for remote in ("https://github.com/kubernetes-sigs/kueue/config/default?ref=v0.19.2",
                   "github.com/example/repo/base"):
        tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(resources=[
            remote, "rbac.yaml"]), "rbac.yaml": [ROLE]})
        code, out, err = lint(tree, capsys)
        assert code == 2 and out == ""
        assert f"resources entry {remote!r} is remote" in err and "vendor it" in err


def test_a_remote_resource_in_an_overlays_base_is_refused_before_kustomize_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The base lies outside the folder linted, so the plain reading never walks it; kustomize
    would fetch its URL. Every kustomization kustomize reads is checked first."""
    need_kustomize()
    write(tmp_path / "base", {"kustomization.yaml": kustomization(resources=[
        "rbac.yaml", "https://example.com/admin-binding.yaml"]), "rbac.yaml": [ROLE]})
    write(tmp_path / "base" / "more", {"kustomization.yaml": kustomization(
        components=["git@github.com:example/repo.git"])})
    overlay = write(tmp_path / "overlay", {"kustomization.yaml": kustomization(
        resources=["../base"], namePrefix="p-")})
    code, out, err = lint(overlay, capsys)
    assert code == 2 and out == ""
    assert "resources entry 'https://example.com/admin-binding.yaml' is remote" in err
    (tmp_path / "base" / "kustomization.yaml").write_text(kustomization(
        resources=["rbac.yaml", "more"]))
    code, out, err = lint(overlay, capsys)
    assert code == 2 and "components entry 'git@github.com:example/repo.git' is remote" in err


def test_kustomize_runs_offline(tmp_path: Path) -> None:
    """A URL that reached kustomize anyway meets a closed proxy, never the network (the
    address is one no route answers: without the proxy the build would wait for it)."""
    need_kustomize()
    build = find_kustomize([default_cache() / "bin" / "kubectl"])
    assert build is not None
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=["http://10.255.255.1/x.yaml"])})
    with pytest.raises(InputError, match=r"proxyconnect tcp: dial tcp 127\.0\.0\.1:9"):
        build(tree)


@pytest.mark.parametrize(("entry", "says"), [
    ("/etc/passwd", "'/etc/passwd' is an absolute path"),
    ("../outside.yaml", "'../outside.yaml' is outside the tree"),
    ("../../../../../../../../etc/passwd", "'../../../../../../../../etc/passwd' is outside"),
    ("link.yaml", "'link.yaml' is outside the tree"),
    ("missing.yaml", "'missing.yaml' does not exist"),
    (".", "'.' includes"),
    ("sub", "'..' includes"),  # sub's kustomization, back to the root: a cycle
])
def test_resources_outside_the_tree_are_input_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, says: str) -> None:
    write(tmp_path, {"outside.yaml": [ROLE], "outdir/kustomization.yaml":
                     kustomization(resources=[])})
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(resources=[entry]),
                                  "sub/kustomization.yaml": kustomization(resources=[".."])})
    (tree / "link.yaml").symlink_to(tmp_path / "outside.yaml")
    (tree / "linkdir").symlink_to(tmp_path / "outdir")
    code, out, err = lint(tree, capsys)
    assert code == 2 and out == ""
    assert f"resources entry {says}" in err and "fix:" in err


def test_a_link_out_of_a_plain_tree_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The red team's k_link: x.yaml -> a file of the host."""
    write(tmp_path, {"secret.yaml": [{"apiVersion": "v1", "kind": "Secret",
                                      "metadata": {"name": "host", "namespace": "default"}}]})
    tree = write(tmp_path / "t", {"ok.yaml": [ROLE]})
    (tree / "x.yaml").symlink_to(tmp_path / "secret.yaml")
    code, _out, err = lint(tree, capsys)
    assert code == 2 and "x.yaml: a link out of the tree" in err


def test_a_link_inside_the_tree_is_read(tmp_path: Path) -> None:
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(resources=["l.yaml"]),
                                  "real/r.yaml": [ROLE]})
    (tree / "l.yaml").symlink_to(tree / "real" / "r.yaml")
    items, _inv = read_tree(tree)
    assert [o["kind"] for _f, o in items] == ["Role"]


def test_a_bad_namespace_field_is_an_input_error(tmp_path: Path) -> None:
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(namespace=["a"],
                                                                      resources=[])})
    with pytest.raises(InputError, match="'namespace' must be a string"):
        read_tree(tree)


def test_read_tree_without_a_build_refuses_what_only_kustomize_builds(tmp_path: Path) -> None:
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=[], configMapGenerator=[{"name": "c"}])})
    with pytest.raises(InputError, match=r"'configMapGenerator' \(read by kustomize only"):
        read_tree(tree)


def test_built_objects_keep_the_file_that_defines_them(tmp_path: Path) -> None:
    """Each object kustomize builds is shown at the file the plain reading found it in (same
    kind and name), else at the kustomization; an info finding names the kustomization."""
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=["rbac.yaml"], commonAnnotations={"a": "b"}), "rbac.yaml": [ROLE, BINDING]})
    built = yaml.safe_dump_all([ROLE, {**ROLE, "metadata": {"name": "new"}}])
    asked: list[Path] = []

    def build(d: Path) -> str:
        asked.append(d)
        return built

    notes: list[Any] = []
    items, _inv = read_tree(tree, notes, build=build)
    assert asked == [tree.resolve()]
    assert [(f, o["metadata"]["name"]) for f, o in items] == [
        ("rbac.yaml (kustomize build)", "x"), ("kustomization.yaml (kustomize build)", "new")]
    assert [(n.severity, n.source) for n in notes] == [("info", "kustomize")]
    assert "'commonAnnotations'" in notes[0].message and "2 objects" in notes[0].message


def test_an_overlay_of_a_folder_outside_is_built(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """overlays/x naming ../../base: kustomize builds it (its base is outside the folder
    given), and lint, validate and the objects are the patched ones."""
    need_kustomize()
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
             "metadata": {"name": "research"},
             "spec": {"namespaceSelector": {}, "resourceGroups": [{
                 "coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "h100", "resources": [
                     {"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]}}
    write(tmp_path / "base", {"kustomization.yaml": kustomization(resources=["q.yaml"]),
                              "q.yaml": [queue]})
    patch = ("- op: replace\n  path: /spec/resourceGroups/0/flavors/0/resources/0/nominalQuota\n"
             "  value: 32\n")
    overlay = write(tmp_path / "overlays" / "big", {"kustomization.yaml": kustomization(
        resources=["../../base"], patches=[{"target": {"kind": "ClusterQueue"},
                                            "patch": patch}])})
    notes: list[Any] = []
    items, _inv = read_tree(overlay, notes, build=find_kustomize(
        [default_cache() / "bin" / "kubectl"]))
    assert [(f, o["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"])
            for f, o in items] == [("kustomization.yaml (kustomize build)", 32)]
    assert "'resources: ../../base' (a folder outside" in notes[0].message
    code, out, _err = lint(overlay, capsys, "validate")
    assert code == 0 and "1 objects, 0 errors" in out


def test_the_cluster_scoped_kinds_are_lightkubes() -> None:
    """tree.CLUSTER_SCOPED, written out (the reader imports no cluster client), is the set of
    lightkube's global resource models: the kinds Kubernetes serves without a namespace."""
    import importlib
    import inspect
    import pkgutil

    from lightkube import resources
    from lightkube.core.resource import GlobalResource

    from aiplat.kube.tree import CLUSTER_SCOPED

    models = set()
    for module in pkgutil.iter_modules(resources.__path__):
        mod = importlib.import_module(f"{resources.__name__}.{module.name}")
        for _name, cls in inspect.getmembers(mod, inspect.isclass):
            info = getattr(cls, "_api_info", None)
            if issubclass(cls, GlobalResource) and info is not None and info.parent is None:
                models.add((info.resource.group, info.resource.kind))
    assert models == CLUSTER_SCOPED


@pytest.mark.parametrize("resources", ["rbac.yaml", 3, {"rbac.yaml": 1}, [["rbac.yaml"]]])
def test_resources_that_are_no_list_of_names_are_input_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], resources: Any) -> None:
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(resources=resources),
                                  "rbac.yaml": [ROLE]})
    code, _out, err = lint(tree, capsys)
    assert code == 2 and "'resources' must be a list of file or directory names" in err
