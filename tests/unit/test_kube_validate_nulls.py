"""Nulls in custom resources, as the API server judges them (issue #40): the cases of
``tests/data/crd_nulls`` with the verdicts the lab's kube-apiserver v1.36.3 gave under
server-side apply (``verdicts.yaml``, checked live by
tests/integration/test_kube_apiserver_agree_live.py). A null where the CRD gives a type and
not ``nullable: true`` is refused, naming the field, unless the field has a default (which
takes its place); a nullable field's null, a null in a free-form (preserve-unknown-fields)
part, and metadata's and status's nulls (ObjectMeta and the status subresource drop them)
pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.kube.crds import CrdIndex
from aiplat.kube.defaults import as_applied, stored
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


def errors(o: Obj) -> list[Issue]:
    """``kube validate``'s errors on one custom resource, its CRD in the tree."""
    result = validate_objects([("crd.yaml", CRD), ("cr.yaml", o)], "1.36", CrdIndex(),
                              packaged=False)
    return [i for i in result.errors if i.file == "cr.yaml"]


def test_every_case_has_the_servers_verdict() -> None:
    assert set(VERDICTS) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_validate_agrees_with_the_api_server(name: str) -> None:
    found = errors(CASES[name])
    want = VERDICTS[name]
    if want["verdict"] == "accepted":
        assert found == [], found
    else:
        assert want["field"] in {i.path for i in found}, found


def test_the_gpu_operators_plugin_null_is_named_with_the_fix() -> None:
    (issue,) = errors(CASES["object-field"])
    assert issue.path == "spec.plugin"
    assert "null where the schema wants an object and the field is not nullable" \
        in issue.message
    assert "server-side apply" in issue.message
    assert issue.message.endswith("(fix: remove the key or give a value)")
    (item,) = errors(CASES["array-item"])
    assert item.path == "spec.args[1]" and "however it is sent" in item.message
    (port,) = errors(CASES["int-or-string"])
    assert "wants an integer or a string" in port.message
    (unknown,) = errors(CASES["undeclared-field"])
    assert unknown.path == "spec.nosuch" \
        and "field not declared in schema" in unknown.message


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
