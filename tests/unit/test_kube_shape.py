"""Manifests whose fields have the wrong type (issue 38): ``kube validate`` reports each as an
error naming the file, the object and the field's path; ``kube lint`` refuses the tree with
an input error naming the same; neither ends in a traceback. A property test changes the
type of any field of the rendered example and of hand-written manifests of other kinds and
runs both checks on the result (``AIPLAT_FUZZ_EXAMPLES=N`` for a longer hunt)."""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_kube_lint import clean

from aiplat.cli.main import main
from aiplat.errors import InputError
from aiplat.kube import lint, validate_objects
from aiplat.kube.crds import CrdIndex
from aiplat.kube.inventory import Inventory
from aiplat.kube.shape import problems

Obj = dict[str, Any]
# celpy raises the recursion limit the first time a CEL environment is made; hypothesis
# refuses a test that changes it, so make one before any test runs.
celpy.Environment()
KUEUE = "kueue.x-k8s.io/v1beta2"


def _pod_spec(**extra: Any) -> Obj:
    return {"containers": [{"name": "c", "image": "busybox", "resources": {
        "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": 1}}}],
        "restartPolicy": "Never", **extra}


HAND_WRITTEN: list[Obj] = [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "research",
                                                     "labels": {"app": "p"}},
     "spec": _pod_spec(resourceClaims=[{"name": "g", "resourceClaimName": "gpu"}],
                       volumes=[{"name": "v", "emptyDir": {}}])},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "research"},
     "spec": {"selector": {"app": "p"}, "ports": [{"port": 80, "targetPort": 8080}]}},
    {"apiVersion": "apps/v1", "kind": "StatefulSet",
     "metadata": {"name": "ss", "namespace": "research"},
     "spec": {"selector": {"matchLabels": {"app": "ss"}}, "serviceName": "s", "template": {
         "metadata": {"labels": {"app": "ss"}}, "spec": _pod_spec(restartPolicy="Always")}}},
    {"apiVersion": "batch/v1", "kind": "CronJob",
     "metadata": {"name": "cj", "namespace": "batch"},
     "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": {
         "spec": _pod_spec()}}}}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
     "metadata": {"name": "rb", "namespace": "kube-system"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                 "name": "edit"},
     "subjects": [{"kind": "Group", "name": "ml", "apiGroup": "rbac.authorization.k8s.io"}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
     "metadata": {"name": "agg"},
     "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]},
     "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
     "metadata": {"name": "np", "namespace": "kube-system"},
     "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": [
         {"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 53}]}]}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
     "metadata": {"name": "pdb", "namespace": "research"},
     "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "p"}}}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
     "metadata": {"name": "gpu", "namespace": "research"},
     "spec": {"devices": {"requests": [{"name": "g", "exactly": {
         "deviceClassName": "gpu.nvidia.com", "count": 2, "selectors": [
             {"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}],
         "constraints": [{"requests": ["g"], "matchAttribute": "gpu.nvidia.com/uuid"}]}}},
    {"apiVersion": "resource.k8s.io/v9", "kind": "DeviceClass", "metadata": {"name": "dc"},
     "spec": {"selectors": [{"cel": {"expression": "true"}}]}},
    {"apiVersion": KUEUE, "kind": "Workload", "metadata": {"name": "w", "namespace": "batch"},
     "spec": {"queueName": "batch", "podSets": [{"name": "main", "count": 1, "template": {
         "spec": _pod_spec()}}]}},
    {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": "batch"},
     "spec": {"limits": [{"type": "Container", "max": {"cpu": "8"},
                          "default": {"cpu": "1"}}]}},
    {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
     "spec": {"size": 3}},
]


@functools.cache
def _rendered() -> tuple[list[Obj], Inventory]:
    return clean()


def _tree(tmp: Path, manifests: list[Obj]) -> Path:
    d = tmp / "tree"
    d.mkdir(exist_ok=True)
    (d / "f.yaml").write_text(yaml.safe_dump_all(manifests))
    inv = tmp / "inventory.yaml"
    inv.write_text("pools: []\n")
    return d


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)  # an unexpected exception would escape here: the test shows it
    except SystemExit as e:  # commands that exit 1 themselves
        code = int(e.code or 0)
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out + out.err


# The cases issue 38 names, and one per place a check read a field: (manifest, path, ref).
# A namespaced object without a namespace is placed in `default`, as kubectl places it.
CASES: list[tuple[Obj, str, str]] = [
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": 5}, "metadata", "ConfigMap/?"),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": [1]},
     "spec", "Job/default/j"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": 3},
      "spec": _pod_spec()}, "metadata.labels", "Pod/default/p"),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
      "spec": {"selector": {}, "template": "x"}}, "spec.template", "Deployment/default/d"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
      "spec": {"containers": {"name": "c", "image": "i"}}}, "spec.containers", "Pod/default/p"),
    ({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "q", "labels": 3},
      "spec": {}}, "metadata.labels", "ClusterQueue/q"),
    ({"apiVersion": "resource.k8s.io/v9", "kind": "DeviceClass", "metadata": {"name": "d"},
      "spec": 5}, "spec", "DeviceClass/d"),
    ({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
      "metadata": {"name": "t", "namespace": "n"},
      "spec": {"spec": {"devices": {"requests": "x"}}}}, "spec.spec.devices.requests",
     "ResourceClaimTemplate/n/t"),
    ({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "d"},
      "spec": {"selectors": [{"cel": {"expression": 5}}]}}, "spec.selectors[0].cel.expression",
     "DeviceClass/d"),
    ({"apiVersion": "v1", "kind": ["Pod"], "metadata": {"name": "p"}}, "kind", "['Pod']/default/p"),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": ["j"]}},
     "metadata.name", "Job/default/['j']"),
]
IDS = [f"{c[0]['kind']}-{c[1]}" for c in CASES]


@pytest.mark.parametrize(("manifest", "path", "obj"), CASES, ids=IDS)
def test_validate_names_file_object_and_field(manifest: Obj, path: str, obj: str,
                                              tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _cli(["kube", "validate", str(_tree(tmp_path, [manifest]))], capsys)
    assert code == 1, text
    assert f"error: f.yaml: {obj} at {path}: " in text, text


@pytest.mark.parametrize(("manifest", "path", "obj"), CASES, ids=IDS)
def test_lint_refuses_naming_file_object_and_field(manifest: Obj, path: str, obj: str,
                                                   tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    tree = _tree(tmp_path, [manifest])
    code, text = _cli(["kube", "lint", str(tree), "--inventory",
                       str(tmp_path / "inventory.yaml")], capsys)
    assert code == 2, text
    assert f"f.yaml: {obj} at {path}: " in text and "fix:" in text, text


def test_a_rendered_tree_with_one_bad_field_is_refused_by_lint(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kube", "render", "-d", str(tmp_path / "k")]) == 0
    quota = tmp_path / "k" / "tenants" / "batch" / "quota.yaml"
    docs = list(yaml.safe_load_all(quota.read_text()))
    docs[0]["spec"]["hard"] = ["8"]
    quota.write_text(yaml.safe_dump_all(docs))
    capsys.readouterr()
    code, text = _cli(["kube", "lint", str(tmp_path / "k")], capsys)
    assert code == 2
    where = "tenants/batch/quota.yaml: ResourceQuota/batch/aiplat-quota at spec.hard"
    assert f"{where}: must be an object, not a list" in text
    code, text = _cli(["kube", "validate", str(tmp_path / "k")], capsys)
    assert code == 1 and where in text


def test_nulls_are_unset_fields_as_the_api_server_reads_them() -> None:
    objs, inv = copy.deepcopy(_rendered())
    for o in objs:
        o["metadata"]["creationTimestamp"] = None  # as kubectl and kustomize write it
    result = validate_objects([("f", o) for o in objs], "1.34", CrdIndex())
    assert result.ok, result.errors[:3]
    for o in objs:
        o["status"] = None
    objs[0]["metadata"]["labels"] = None
    assert lint(objs, inv) == []


def test_a_kueue_configuration_of_the_wrong_shape_is_a_finding() -> None:
    objs, inv = copy.deepcopy(_rendered())
    cm = next(o for o in objs if o["metadata"]["name"] == "kueue-manager-config")
    cm["data"]["controller_manager_config.yaml"] = "integrations: {frameworks: 5}\n"
    assert [f.message.split(":")[1].strip() for f in lint(objs, inv) if f.source == "kueue-config"
            ] == ["integrations.frameworks must be a list, not int 5"]
    cm["data"]["controller_manager_config.yaml"] = "a: [\n"
    assert any("it is not YAML" in f.message for f in lint(objs, inv) if f.source == "kueue-config")


@pytest.mark.parametrize(("inventory", "words"), [
    ({"pools": [{"name": "p", "nodes": 1, "labels": 3}]}, "pools[0].labels must be an object"),
    ({"pools": [{"name": "p", "nodes": 1, "taints": [{"key": 5}]}]},
     "pools[0].taints[0].key must be a string"),
    ({"pools": [{"name": "p", "nodes": 1, "devices": [{"name": "d", "attributes": {
        "a": {"string": 5}}}]}]}, "pools[0].devices[0].attributes.a.string must be a string"),
    ({"pools": [{"name": "p"}]}, "pools[0] must be a mapping with at least 'name' and 'nodes'"),
    ({"pools": [{"name": "p", "nodes": "x"}]}, "pools[0].nodes must be an integer"),
    ({"pools": [], "modelStoreCIDRs": ["10.0.0.0/33"]}, "is not a CIDR"),
])
def test_an_inventory_of_the_wrong_shape_is_an_input_error(inventory: Obj, words: str) -> None:
    with pytest.raises(InputError, match=None) as e:
        Inventory.from_dict(inventory, "inventory.yaml")
    assert words in str(e.value) and "fix:" in str(e.value)


def test_a_policy_with_a_cidr_the_api_server_refuses_reaches_nothing() -> None:
    objs, inv = copy.deepcopy(_rendered())
    np = next(o for o in objs if o["kind"] == "NetworkPolicy"
              and o["metadata"]["name"] == "allow-model-store")
    blocks = [to["ipBlock"] for rule in np["spec"]["egress"] for to in rule["to"]
              if "ipBlock" in to]
    for block in blocks:
        block["cidr"] = "not-a-cidr"
    assert blocks
    assert {f.source for f in lint(objs, inv)} == {"netpol-model-store"}


# --- the property: any field, any type -------------------------------------------------------

def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*path, i))
    return out


def _set(o: Obj, path: tuple[Any, ...], value: Any) -> None:
    node: Any = o
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


SCALARS = st.one_of(st.integers(-3, 10**12), st.text(max_size=8), st.booleans(), st.none(),
                    st.floats(allow_nan=True), st.sampled_from(["", "*", "kube-system",
                                                                "10.0.0.0/8", "1Gi", "x"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6)


# Derandomized for CI (a few seconds); AIPLAT_FUZZ_EXAMPLES=N runs N times as many random
# cases for a longer hunt, as tests/unit/test_bad_input_fuzz.py does.
SCALE = max(1, int(os.environ.get("AIPLAT_FUZZ_EXAMPLES", "1")))
BUDGET = settings(max_examples=150 * SCALE, deadline=None, derandomize=SCALE == 1,
                  database=None, suppress_health_check=list(HealthCheck))


def _check(objs: list[Obj], inv: Inventory, mutated: Obj) -> None:
    """Both checks end in findings, issues or an input error: nothing else."""
    validate_objects([("f.yaml", mutated)], "1.34", CrdIndex())
    try:
        lint(objs, inv, files=["f.yaml" if o is mutated else "g.yaml" for o in objs])
    except InputError as e:
        assert "f.yaml: " in str(e) and "(fix: " in str(e)
        assert problems(mutated)  # refused for the object that is wrong, not another


@BUDGET
@given(data=st.data())
def test_any_field_of_any_type_in_the_rendered_tree(data: st.DataObject) -> None:
    base, inv = _rendered()
    objs = [copy.deepcopy(o) for o in base]  # render shares lists between objects
    i = data.draw(st.integers(0, len(objs) - 1), label="object")
    path = data.draw(st.sampled_from(_paths(objs[i])[1:]), label="field")
    _set(objs[i], path, data.draw(VALUES, label="value"))
    _check(objs, inv, objs[i])


@BUDGET
@given(data=st.data())
def test_any_field_of_any_type_in_hand_written_manifests(data: st.DataObject) -> None:
    base, inv = _rendered()
    mine = copy.deepcopy(HAND_WRITTEN)
    i = data.draw(st.integers(0, len(mine) - 1), label="object")
    path = data.draw(st.sampled_from(_paths(mine[i])[1:]), label="field")
    _set(mine[i], path, data.draw(VALUES, label="value"))
    _check([copy.deepcopy(o) for o in base] + mine, inv, mine[i])


def test_the_hand_written_manifests_are_well_shaped() -> None:
    """So that a mutation is what makes one wrong."""
    assert [problems(o) for o in HAND_WRITTEN] == [[]] * len(HAND_WRITTEN)
