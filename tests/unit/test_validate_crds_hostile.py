"""``aiplat kube validate`` on CRDs the API server refuses (issue #40): a schema that is not
structural (k8s.io/apiextensions-apiserver v0.36 ``ValidateStructural`` and the CRD
validation's static rules), a default its own field refuses, a Go-refused pattern. Each is an
error at the CRD (file, name, field of the CRD, the fix), reported once; its custom resources
get "no usable schema"; nothing in a CRD makes the command raise (a seeded mutation fuzzer
over every CRD in the tree: aiplat's bundles and the test data's upstream CRDs)."""

from __future__ import annotations

import contextlib
import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.cli.main import main
from aiplat.errors import InputError
from aiplat.kube.crds import CrdIndex, bundles, crd_problems, index_crds, unusable_index
from aiplat.kube.validate import validate_objects

DATA = Path(__file__).parents[1] / "data"
V0 = "spec.versions[0].schema.openAPIV3Schema"
SPEC = f"{V0}.properties.spec.properties"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``aiplat ARGV``; never a traceback."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out, out.err


def crd(fields: dict[str, Any], **root: Any) -> dict[str, Any]:
    """A Widget CRD whose spec has ``fields``; ``root`` keys go on the root schema."""
    schema = {"type": "object", "properties": {"spec": {"type": "object",
                                                        "properties": fields}}, **root}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def widget(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"}, "spec": spec}


def validate(tmp_path: Path, capsys: pytest.CaptureFixture[str],
             *objects: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump_all(objects))
    code, out, err = run(["kube", "validate", str(tmp_path), "-o", "json"], capsys)
    assert code in (0, 1), err
    [result] = json.loads(out)
    return code, result["issues"]


REVIEW_REPRO = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              a: {type: string, pattern: '^a'}
              c: {type: array, items: [1]}
---
apiVersion: example.com/v1
kind: Gadget
metadata:
  name: g
spec:
  a: abc
  c: [1]
---
apiVersion: example.com/v1
kind: Gadget
metadata:
  name: g2
"""


def test_tuple_items_are_an_error_at_the_crd_not_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The reviewer's repro: ``items: [1]`` crashed jsonschema's reference resolver."""
    (tmp_path / "crd.yaml").write_text(REVIEW_REPRO)
    code, out, _err = run(["kube", "validate", str(tmp_path)], capsys)
    assert code == 1
    lines = out.splitlines()
    assert any(line.startswith("error: crd.yaml: CustomResourceDefinition/gadgets.example.com"
                               f" at {SPEC}.c.items: must be one schema, not a list")
               and "fix:" in line for line in lines), out
    assert sum("no usable schema for example.com/v1 Gadget" in line
               and line.startswith("warning:") for line in lines) == 2, out


def test_a_default_its_field_refuses_is_one_error_at_the_crd(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, issues = validate(tmp_path, capsys,
                            crd({"c": {"type": "integer", "default": "notint"}}),
                            widget({}), {**widget({}), "metadata": {"name": "w2"}})
    assert code == 1
    errors = [(i["ref"], i["path"]) for i in issues if i["severity"] == "error"]
    assert errors == [("CustomResourceDefinition/widgets.example.com", f"{SPEC}.c.default")]
    assert "'notint' does not match the field's own schema" in issues[0]["message"]
    assert [i["ref"] for i in issues if i["severity"] == "warning"] == [
        "Widget/default/w", "Widget/default/w2"]


def test_a_pattern_go_refuses_names_the_file_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(
        crd({"a": {"type": "string", "pattern": "(?<=x)abc"}})))
    code, out, _err = run(["kube", "validate", str(tmp_path)], capsys)
    [line] = [x for x in out.splitlines() if x.startswith("error:")]
    assert code == 1 and line.count("crd.yaml") == 1, line
    assert f"at {SPEC}.a.pattern: '(?<=x)abc' is not a Go (RE2) regular expression" in line


@pytest.mark.parametrize(("fields", "root", "where", "words"), [
    ({"a": {"properties": {"b": {"type": "string"}}}}, {}, f"{SPEC}.a.type",
     "must be given for object fields"),
    ({"a": {"type": "array"}}, {}, f"{SPEC}.a.items", "must be given for type array"),
    ({"a": {"type": "array", "items": {"maxLength": 2}}}, {}, f"{SPEC}.a.items.type",
     "must be given for array items"),
    ({"a": {"type": "null"}}, {}, f"{SPEC}.a.type", "for null, give nullable: true"),
    ({"a": {"$ref": "#/definitions/x"}}, {}, f"{SPEC}.a.$ref", "not supported"),
    ({"a": {"type": "object", "patternProperties": {"^x": {"type": "string"}}}}, {},
     f"{SPEC}.a.patternProperties", "not supported"),
    ({"a": {"type": "object", "properties": {"x": {"type": "string"}},
            "additionalProperties": {"type": "string"}}}, {},
     f"{SPEC}.a.additionalProperties", "mutually exclusive"),
    ({}, {"additionalProperties": True}, f"{V0}.additionalProperties",
     "must not be used at the root"),
    ({"a": {"type": "string", "anyOf": [{"type": "string", "maxLength": 3}]}}, {},
     f"{SPEC}.a.anyOf[0].type", "inside allOf, anyOf, oneOf or not"),
    ({"a": {"type": "string", "maxLength": "three"}}, {}, f"{SPEC}.a.maxLength",
     "not a count"),
    ({"a": {"type": "number", "multipleOf": 0}}, {}, f"{SPEC}.a.multipleOf",
     "not greater than 0"),
    ({"a": {"type": "string", "prefixItems": []}}, {}, f"{SPEC}.a.prefixItems",
     "unknown field"),
    ({"a": {"type": "number", "maximum": float("nan")}}, {}, f"{SPEC}.a.maximum",
     "not a (finite) number"),
    ({"a": {"type": "string", "x-kubernetes-validations": [{"message": "m"}]}}, {},
     f"{SPEC}.a.x-kubernetes-validations[0].rule", "must be a CEL expression"),
    ({"a": {"type": "string", "x-kubernetes-validations": ["self.size() > 1"]}}, {},
     f"{SPEC}.a.x-kubernetes-validations[0]", "not a validation rule"),
    ({"a": {"type": "object", "default": 7}}, {}, f"{SPEC}.a.default", "does not match"),
    ({"a": {"type": "object", "properties": {"x": {"type": "string"}},
            "default": {"y": 1}}}, {}, f"{SPEC}.a.default", "does not match"),
])
def test_what_the_api_server_refuses_in_a_schema_is_an_error_at_its_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], *, fields: dict[str, Any],
        root: dict[str, Any], where: str, words: str) -> None:
    code, issues = validate(tmp_path, capsys, crd(fields, **root), widget({"a": "x"}))
    errors = [(i["path"], i["message"]) for i in issues if i["severity"] == "error"]
    assert code == 1 and any(p == where and words in m and "fix:" in m
                             for p, m in errors), errors
    assert "no usable schema" in issues[-1]["message"]


@pytest.mark.parametrize(("field", "value"), [
    ({"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
     3),
    ({"x-kubernetes-preserve-unknown-fields": True}, {"z": [1]}),
    ({"type": "object", "x-kubernetes-embedded-resource": True,
      "x-kubernetes-preserve-unknown-fields": True}, {"apiVersion": "v1", "kind": "X"}),
    ({"type": "array", "items": {"type": "string"}, "default": ["a"]}, ["b"]),
    ({"type": "object", "additionalProperties": {"type": "integer"}, "default": {"x": 1}},
     {"y": 2}),
])
def test_structural_schemas_of_every_kind_still_check_their_objects(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], field: dict[str, Any],
        value: Any) -> None:
    code, issues = validate(tmp_path, capsys, crd({"a": field}),
                            widget({"a": value, "typo": 1}))
    assert code == 1 and [i["path"] for i in issues] == ["spec"], issues
    assert "'typo' was unexpected" in issues[0]["message"]


def test_exclusive_minimum_is_read_as_openapi_v3_0_writes_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``exclusiveMinimum: true`` is a flag on ``minimum`` in a CRD (OpenAPI v3.0), not the
    number 1 that JSON Schema 2020-12 would read."""
    schema = crd({"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}})
    code, issues = validate(tmp_path, capsys, schema, widget({"n": 1}),
                            {**widget({"n": 0}), "metadata": {"name": "zero"}})
    assert code == 1
    assert [(i["ref"], i["path"]) for i in issues] == [("Widget/default/zero", "spec.n")]


def test_a_crd_dir_crd_the_api_server_refuses_is_an_input_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    crds = tmp_path / "crds"
    crds.mkdir()
    (crds / "w.yaml").write_text(yaml.safe_dump(crd({"a": {"type": "array", "items": [1]}})))
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(widget({"a": [1]})))
    code, _out, err = run(["kube", "validate", str(tmp_path / "w.yaml"), "--crd-dir",
                           str(crds)], capsys)
    assert code == 2
    assert "w.yaml: CustomResourceDefinition widgets.example.com version v1 at " \
           "openAPIV3Schema.properties.spec.properties.a.items: must be one schema" in err
    assert "fix:" in err


def test_a_tree_crd_that_loosens_a_packaged_kind_leaves_aiplat_s_checks_unrun(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A ClusterQueue CRD in the tree that lets resourceGroups hold anything: the API server
    takes the object; Kueue's webhook rule, written for Kueue's own schema, is not run on
    a shape it was not written for (a warning, not a crash)."""
    [kueue] = [b for b in bundles() if b["name"] == "kueue"]
    [cq_crd] = [c for c in kueue["crds"] if c["spec"]["names"]["kind"] == "ClusterQueue"]
    loose = copy.deepcopy(cq_crd)
    for v in loose["spec"]["versions"]:
        spec = v["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec["properties"]["resourceGroups"] = {"type": "array", "items": {
            "x-kubernetes-preserve-unknown-fields": True}}
    version = loose["spec"]["versions"][0]["name"]
    cq = {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": "ClusterQueue",
          "metadata": {"name": "cq"}, "spec": {"resourceGroups": [1]}}
    code, issues = validate(tmp_path, capsys, loose, cq)
    assert [(i["severity"], i["path"]) for i in issues] == [
        ("warning", "spec.resourceGroups[0]")], issues
    assert "aiplat's checks of ClusterQueue not run" in issues[0]["message"]
    assert code == 0


@pytest.mark.parametrize("head", ["apiVersion: example.com/v1\nkind: null",
                                  "apiVersion: null\nkind: Gadget"])
def test_an_object_whose_kind_or_api_version_is_null_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], head: str) -> None:
    (tmp_path / "o.yaml").write_text(f"{head}\nmetadata: {{name: a}}\n")
    code, out, _err = run(["kube", "validate", str(tmp_path)], capsys)
    assert code == 1 and "not a Kubernetes object (apiVersion and kind are required)" in out


def test_a_crd_whose_names_are_no_strings_is_no_shape_of_a_crd() -> None:
    doc = crd({})
    doc["spec"]["versions"][0]["name"] = True
    with pytest.raises(InputError, match=r"spec.versions\[0\].name True is not a version name"):
        index_crds([("crd.yaml", doc)])


# -- every CRD in the tree, mutated ---------------------------------------------------------


def tree_crds() -> list[dict[str, Any]]:
    """aiplat's packaged CRDs and every CRD under tests/data (upstream projects' own)."""
    found = [c for b in bundles() for c in b["crds"]]
    for path in sorted(DATA.rglob("*.yaml")):
        text = path.read_text(errors="replace")
        if "CustomResourceDefinition" not in text:
            continue
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError:
            continue
        found += [d for d in docs if isinstance(d, dict)
                  and d.get("kind") == "CustomResourceDefinition"]
    return found


def test_every_crd_in_the_tree_is_one_the_api_server_takes() -> None:
    crds = tree_crds()
    assert len(crds) > 30
    assert {c["metadata"]["name"]: crd_problems(c) for c in crds if crd_problems(c)} == {}


HOSTILE: list[Any] = [None, 1, -1, 0, 2.5, True, "x", "", "null", [1], [], {}, {"type": 5},
                      [{"a": 1}], "(?<=x)", {"$ref": "#"}, {"type": "array", "items": [1]},
                      "object", 10**30, 1e308, {"x": {"y": 1}}]
# Values of the right type at their keyword, so many mutants stay structural and reach the
# validators with schemas no upstream CRD has.
EDGE: dict[str, list[Any]] = {
    "type": ["string", "object", "array", "integer", "number", "boolean", "null", 5],
    "items": [{"type": "string"}, {"x-kubernetes-preserve-unknown-fields": True}, [1], 1],
    "properties": [{}, {"zz": {"type": "string", "default": "q"}}, [1], {"a": 1}],
    "additionalProperties": [True, False, {"type": "integer"}, 5],
    "default": [0, "x", {}, [], {"zz": 1}, True],
    "enum": [[], [1, "a", None, {}], 5], "required": [["zzz"], [], [1], "a"],
    "maxLength": [0, 1, -1, "x"], "minItems": [3], "maxProperties": [0],
    "multipleOf": [0.1, 3, 1e-300, 0], "minimum": [1e308, -1], "maximum": [-1e308, "x"],
    "exclusiveMinimum": [True, False, 3], "exclusiveMaximum": [True],
    "pattern": ["", "^(?i)x", "[[:alpha:]]", "\\pL", "(?<=x)", 5],
    "format": ["date-time", "int-or-string", "quantity", 5], "nullable": [True, "yes"],
    "x-kubernetes-list-type": ["map", "set", "zzz"], "x-kubernetes-list-map-keys": [["zzz"]],
    "x-kubernetes-preserve-unknown-fields": [True, "x"], "x-kubernetes-int-or-string": [True],
    "x-kubernetes-embedded-resource": [True], "uniqueItems": [True],
    "x-kubernetes-validations": [[{"rule": "self.x > 1"}], [{"rule": 5}], [1]],
    "anyOf": [[{"type": "integer"}, {"type": "string"}], [{"required": ["a"]}], [], {}],
    "allOf": [[{"anyOf": [{"type": "integer"}, {"type": "string"}]}],
              [{"properties": {"a": {"maxLength": 1}}}]],
    "oneOf": [[{"required": ["zzz"]}, {"required": ["spec"]}]],
    "not": [{"required": ["a"]}, {}, 1],
    "$ref": ["#"], "$defs": [{"a": {}}], "$dynamicRef": ["#x"], "prefixItems": [[{}]],
    "unevaluatedProperties": [False], "if": [{"required": ["a"]}], "const": [1],
    "patternProperties": [{"^x": {}}, {"(?<=": {}}], "definitions": [{"a": 1}],
}


def _dicts(node: Any, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            _dicts(value, found)
    elif isinstance(node, list):
        for value in node:
            _dicts(value, found)
    return found


def _mutant(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """``doc`` with one to three schema nodes (or maps inside them, or now and then the
    CRD's own fields) changed: a keyword set to an edge value or a hostile one, a key's
    value replaced, or a key removed."""
    m = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        try:
            version = rng.choice(m["spec"]["versions"])
            nodes = _dicts(version["schema"]["openAPIV3Schema"], [])
            around = [m, m["spec"], m["spec"]["names"], version]
        except (KeyError, TypeError, IndexError):
            break  # an earlier mutation broke the CRD's own shape: enough
        node = rng.choice(around if rng.random() < 0.1 or not nodes else nodes)
        if not isinstance(node, dict):
            break
        roll = rng.random()
        if roll < 0.5:
            key = rng.choice(sorted(EDGE))
            node[key] = copy.deepcopy(rng.choice(EDGE[key]))
        elif roll < 0.8 and node:
            node[rng.choice(sorted(node))] = copy.deepcopy(rng.choice(HOSTILE))
        elif node:
            node.pop(rng.choice(sorted(node)))
    return m


def _sample(schema: Any, rng: random.Random, depth: int = 0) -> Any:
    """A value roughly in the shape of ``schema``, now and then of another."""
    if depth > 10 or not isinstance(schema, dict) or rng.random() < 0.05:
        return copy.deepcopy(rng.choice(HOSTILE))
    props = schema.get("properties")
    if isinstance(props, dict):
        return {k: _sample(s, rng, depth + 1) for k, s in props.items()
                if k != "metadata" and rng.random() < 0.6}
    if schema.get("type") == "array":
        return [_sample(schema.get("items"), rng, depth + 1) for _ in range(rng.randint(0, 2))]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    return {"string": "abc", "integer": 3, "number": 1.5, "boolean": True}.get(
        str(schema.get("type")), "x")


def _custom_resource(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    spec = doc["spec"]
    version = rng.choice(spec["versions"])
    body = _sample(version["schema"]["openAPIV3Schema"], rng)
    body = body if isinstance(body, dict) else {"spec": body}
    return {**body, "apiVersion": f"{spec['group']}/{version['name']}",
            "kind": spec["names"]["kind"], "metadata": {"name": "x", "namespace": "default"}}


@pytest.mark.parametrize("seed", range(4))
def test_no_mutant_of_a_crd_in_the_tree_makes_validate_raise(seed: int) -> None:
    """A seeded property test: 300 mutants per seed, each validated (the CRD and an object
    of its kind) and indexed as --crd-dir indexes it; only issues and InputErrors come out,
    and a mutant the API server would take still checks its object."""
    rng = random.Random(seed)
    crds = [c for c in tree_crds() if all(
        isinstance((v.get("schema") or {}).get("openAPIV3Schema"), dict)
        for v in c["spec"]["versions"])]
    taken = 0
    for _ in range(300):
        original = rng.choice(crds)
        mutant, obj = _mutant(original, rng), _custom_resource(original, rng)
        with contextlib.suppress(InputError):  # --crd-dir's refusal: exit 2, a message
            index_crds([("crd.yaml", mutant)])
        result = validate_objects([("crd.yaml", mutant), ("cr.yaml", obj)], "1.36",
                                  CrdIndex(), packaged=False)
        refused = bool(crd_problems(mutant))
        taken += not refused
        kind = (obj["apiVersion"].rpartition("/")[0], obj["kind"])
        still_a_crd = mutant.get("kind") == "CustomResourceDefinition" and \
            mutant.get("apiVersion") == "apiextensions.k8s.io/v1"
        if refused and still_a_crd and kind in unusable_index("crd.yaml", mutant).unusable:
            assert any("no usable schema" in i.message for i in result.issues
                       if i.file == "cr.yaml"), result.issues
    assert taken > 20  # the fuzzer reaches the validators, not only the structural check


def test_an_unquoted_date_is_the_string_kubectl_sends(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """sigs.k8s.io/yaml reads ``2024-01-02`` as text: a date on a string field (and as a
    string field's default) is no error, as the API server takes both."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget",
                              "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                            "type": "object", "properties": {"d": {
                                "type": "string", "default": "DEFAULT"}}}}}}}]}}
    text = yaml.safe_dump(crd).replace("DEFAULT", "2024-01-01") + "---\n" + (
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: a}\n"
        "spec:\n  d: 2024-01-02\n")
    assert "default: 2024-01-01" in text  # unquoted, as a person writes it
    f = tmp_path / "w.yaml"
    f.write_text(text)
    code, out, err = run(["kube", "validate", str(f), "-o", "json"], capsys)
    assert code == 0, out + err
    assert json.loads(out)[0]["issues"] == []
