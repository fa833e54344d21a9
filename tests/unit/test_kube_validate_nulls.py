"""Nulls in custom resources, as the API server judges them (issue #40): the cases of
``tests/data/crd_nulls`` with the verdicts the lab's kube-apiserver v1.36.3 gave under
server-side apply and under create (``verdicts.yaml``, checked live by
tests/integration/test_kube_apiserver_agree_live.py). Under server-side apply a null where
the CRD gives a type and not ``nullable: true`` is refused, naming the field, unless the
field has a default (which takes its place); a create (``kubectl apply`` of a new object)
deletes such a null when it is a map value first. validate: an error where both refuse, a
warning where server-side apply alone does (the KubeRay and GPU Operator samples' nulls:
``kubectl apply`` takes them). A nullable field's null, a null in a free-form
(preserve-unknown-fields) part, and metadata's and status's nulls (ObjectMeta and the status
subresource drop them) pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.kube.crds import CrdIndex
from aiplat.kube.defaults import as_applied, as_created, stored
from aiplat.kube.validate import Issue, validate_objects

DATA = Path(__file__).resolve().parents[1] / "data" / "crd_nulls"
Obj = dict[str, Any]


def _cases() -> tuple[Obj, dict[str, Obj]]:
    crd = yaml.safe_load((DATA / "nulltests.yaml").read_text())
    out = {}
    for name, fields in yaml.safe_load((DATA / "cases.yaml").read_text()).items():
        o: Obj = {"apiVersion": "nulls.aiplat.io/v1", "kind": "NullTest",
                  "metadata": {"name": name, "namespace": "default"}}
        for k, v in fields.items():
            if k == "metadata":
                o["metadata"].update(v)
            else:
                o[k] = v
        out[name] = o
    return crd, out


CRD, CASES = _cases()
VERDICTS = yaml.safe_load((DATA / "verdicts.yaml").read_text())


def issues(o: Obj) -> list[Issue]:
    """``kube validate``'s errors and warnings on one custom resource, its CRD in the tree."""
    result = validate_objects([("crd.yaml", CRD), ("cr.yaml", o)], "1.36", CrdIndex(),
                              packaged=False)
    return [i for i in result.issues if i.file == "cr.yaml"]


def test_every_case_has_the_servers_verdict() -> None:
    assert set(VERDICTS) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_validate_agrees_with_the_api_server(name: str) -> None:
    found = issues(CASES[name])
    want = VERDICTS[name]
    errors = [i for i in found if i.severity == "error"]
    if want["verdict"] == "accepted":
        assert found == [], found
    else:
        assert want["field"] in {i.path for i in found}, found
    # an error exactly where a create (kubectl apply of a new object) is refused too
    assert bool(errors) == (want["create"]["verdict"] == "refused"), found


def test_the_gpu_operators_plugin_null_is_named_with_the_fix() -> None:
    (issue,) = issues(CASES["object-field"])
    assert issue.path == "spec.plugin" and issue.severity == "warning"
    assert "null where the schema wants an object and the field is not nullable" \
        in issue.message
    assert "server-side apply" in issue.message and "kubectl apply" in issue.message
    assert issue.message.endswith("(fix: remove the key or give a value)")
    (item,) = issues(CASES["array-item"])
    assert item.path == "spec.args[1]" and "however it is sent" in item.message
    assert item.severity == "error"
    (port,) = issues(CASES["int-or-string"])
    assert "wants an integer or a string" in port.message
    (unknown,) = issues(CASES["undeclared-field"])
    assert unknown.path == "spec.nosuch" and unknown.severity == "error" \
        and "field not declared in schema" in unknown.message


def test_a_create_deletes_the_null_map_values_apply_keeps() -> None:
    schema = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    o = {"spec": {"plugin": None, "maybe": None, "labels": {"k": None},
                  "maybeLabels": {"k": None}, "args": ["a", None],
                  "rules": [{"name": "r", "note": None}], "nosuch": None, "withDefault": None}}
    created = as_created(o, schema)["spec"]
    assert "plugin" not in created and created["maybe"] is None
    assert created["labels"] == {} and created["maybeLabels"] == {"k": None}
    assert created["args"] == ["a", None] and created["rules"] == [{"name": "r"}]
    assert created["nosuch"] is None and created["withDefault"] == {"mode": "auto"}
    assert o["spec"]["plugin"] is None  # a copy


def test_a_default_takes_the_place_of_a_null_unless_the_field_is_nullable() -> None:
    schema = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    o = {"spec": {"withDefault": None, "maybeWithDefault": None, "argsWithDefault": ["a", None],
                  "listWithDefault": None, "plugin": None},
         "metadata": {"labels": None}, "status": {"phase": None}}
    applied = as_applied(o, schema)
    assert applied["spec"] == {"withDefault": {"mode": "auto"}, "maybeWithDefault": None,
                               "argsWithDefault": ["a", "z"], "listWithDefault": ["q"],
                               "nameWithDefault": "x", "plugin": None}
    assert applied["metadata"] == {} and applied["status"] == {}
    # What the other checks read: no nulls, the defaults set.
    crds = CrdIndex(schemas={("nulls.aiplat.io", "v1", "NullTest"): schema})
    read = stored({"apiVersion": "nulls.aiplat.io/v1", "kind": "NullTest", **o}, crds)
    assert read["spec"]["withDefault"] == {"mode": "auto"} and "plugin" not in read["spec"]
