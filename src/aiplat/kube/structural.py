"""Whether a CRD's openAPIV3Schema is one the API server accepts: a structural schema.

The rules are those of k8s.io/apiextensions-apiserver (v0.36): ``pkg/apiserver/schema``
``ValidateStructural`` (a type on every node but where ``x-kubernetes-int-or-string`` or
``x-kubernetes-preserve-unknown-fields`` says any value goes, an array's ``items``, no
``additionalProperties`` at the root or beside ``properties``, no type, default or
extension inside ``allOf``/``anyOf``/``oneOf``/``not``) and ``pkg/apis/apiextensions/
validation`` (``items`` one schema, never a list; no ``$ref``, ``id``, ``definitions``,
``dependencies``, ``patternProperties``, ``additionalItems``; the six OpenAPI types; a
pattern Go's ``regexp`` compiles), plus the field types of ``JSONSchemaProps`` that the
server's decoder demands. A schema that breaks one is refused with the CRD, so nothing may be
validated against it: every problem is reported at the CRD instead, and the validators here
(JSON Schema 2020-12) never see a shape they were not built for.
"""

from __future__ import annotations

import math
from typing import Any

from aiplat.kube.schemas import pattern_error

OPENAPI_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_DEPTH = 100  # far below Python's recursion limit; no real CRD nests half as deep
# JSONSchemaProps' fields (apiextensions/v1 types_jsonschema.go): any other key is unknown.
_NUMBER = ("maximum", "minimum", "multipleOf")
_COUNT = ("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties")
_FLAG = ("exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "nullable",
         "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
         "x-kubernetes-int-or-string")
_TEXT = ("$schema", "description", "format", "pattern", "title", "x-kubernetes-list-type",
         "x-kubernetes-map-type")
_ANY = ("default", "example", "enum", "externalDocs", "required", "x-kubernetes-list-map-keys",
        "x-kubernetes-validations", "type", "items", "properties",
        "additionalProperties", "allOf", "anyOf", "oneOf", "not")
_UNSUPPORTED = ("id", "$ref", "definitions", "dependencies", "patternProperties",
                "additionalItems")
_KNOWN = {*_NUMBER, *_COUNT, *_FLAG, *_TEXT, *_ANY, *_UNSUPPORTED}
# Not allowed inside allOf/anyOf/oneOf/not (validateNestedValueValidation).
_NOT_NESTED = ("type", "additionalProperties", "default", "title", "description", "nullable",
               *(k for k in _FLAG if k.startswith("x-")), "x-kubernetes-list-map-keys",
               "x-kubernetes-list-type", "x-kubernetes-map-type", "x-kubernetes-validations")

Problem = tuple[str, str]  # (schema path, what is wrong)


def problems(schema: Any, path: str = "openAPIV3Schema") -> list[Problem]:
    """Why the API server refuses ``schema`` as a CRD version's openAPIV3Schema (empty when
    it accepts it), each (path below the version's ``schema``, message)."""
    found: list[Problem] = []
    _node(schema, path, "root", found, 0)
    return found


def _node(s: Any, path: str, level: str, out: list[Problem], depth: int) -> None:
    """One schema node; ``level`` root, field, item, or nested (inside allOf...)."""
    if depth > _DEPTH:
        out.append((path, f"nests deeper than {_DEPTH} schemas"))
        return
    if not isinstance(s, dict):
        out.append((path, f"{_short(s)} is not a schema (a map of OpenAPI keywords)"))
        return
    _fields(s, path, out)
    if level == "nested":
        out += [(f"{path}.{k}", "must not be set inside allOf, anyOf, oneOf or not to be "
                 "structural (give it on the schema beside them)")
                for k in _NOT_NESTED if k in s and not _int_or_string_branch(s, k)]
    else:
        _typed(s, path, level, out)
    _children(s, path, level, out, depth)


def _fields(s: dict[str, Any], path: str, out: list[Problem]) -> None:
    """Keys and value types the server's decoder and static checks accept."""
    for key, value in s.items():
        at = f"{path}.{key}"
        if key not in _KNOWN:
            out.append((at, "unknown field: not a keyword of a CRD schema (JSONSchemaProps)"))
        elif key in _UNSUPPORTED:
            out.append((at, f"{key} is not supported in a CRD schema"))
        elif key in _NUMBER and not _is_number(value):
            out.append((at, f"{_short(value)} is not a (finite) number"))
        elif key == "multipleOf" and value <= 0:
            out.append((at, f"{value} is not greater than 0"))
        elif key in _COUNT and not (_is_int(value) and value >= 0):
            out.append((at, f"{_short(value)} is not a count (an integer ≥ 0)"))
        elif key in _FLAG and not isinstance(value, bool):
            out.append((at, f"{_short(value)} is not true or false"))
        elif key in _TEXT and not isinstance(value, str):
            out.append((at, f"{_short(value)} is not a string"))
        elif key in ("enum", "x-kubernetes-validations") and not isinstance(value, list):
            out.append((at, f"{_short(value)} is not a list"))
        elif key in ("required", "x-kubernetes-list-map-keys") and not (
                isinstance(value, list) and all(isinstance(v, str) for v in value)):
            out.append((at, f"{_short(value)} is not a list of field names"))
        elif key == "pattern" and (why := pattern_error(value)) is not None:
            out.append((at, f"{_short(value)} is not a Go (RE2) regular expression: {why}"))
        elif key == "x-kubernetes-validations":
            out += _rules(value, at)


def _rules(rules: list[Any], path: str) -> list[Problem]:
    """``x-kubernetes-validations``: each a map with a CEL ``rule`` (ValidationRule)."""
    out = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            out.append((f"{path}[{i}]", f"{_short(rule)} is not a validation rule (a map "
                        "with a CEL rule)"))
        elif not isinstance(rule.get("rule"), str) or not rule["rule"].strip():
            out.append((f"{path}[{i}].rule", "must be a CEL expression (a non-empty string)"))
        else:
            out += [(f"{path}[{i}].{k}", f"{_short(rule[k])} is not a string")
                    for k in ("message", "messageExpression", "reason", "fieldPath")
                    if k in rule and not isinstance(rule[k], str)]
    return out


def _typed(s: dict[str, Any], path: str, level: str, out: list[Problem]) -> None:
    """The structural rules on a node's type (validateStructuralInvariants)."""
    t = s.get("type")
    if "type" in s and t not in OPENAPI_TYPES:
        out.append((f"{path}.type", f"{_short(t)} is not one of {', '.join(OPENAPI_TYPES)}"
                    + (" (for null, give nullable: true)" if t == "null" else "")))
        return
    anything = s.get("x-kubernetes-int-or-string") is True or \
        s.get("x-kubernetes-preserve-unknown-fields") is True
    if s.get("x-kubernetes-embedded-resource") is True and t != "object":
        out.append((f"{path}.type", "must be object if x-kubernetes-embedded-resource is true"))
    elif t is None and not anything:
        where = {"root": "at the root", "item": "for array items",
                 "field": "for object fields"}[level]
        out.append((f"{path}.type", f"must be given {where} to be structural (or "
                    "x-kubernetes-int-or-string / x-kubernetes-preserve-unknown-fields: true)"))
    if level == "root" and t not in (None, "object"):
        out.append((f"{path}.type", f"{t} at the root: must be object"))
    if t == "array" and "items" not in s:
        out.append((f"{path}.items", "must be given for type array"))
    if s.get("x-kubernetes-int-or-string") is True and (
            s.get("x-kubernetes-preserve-unknown-fields") is True
            or s.get("x-kubernetes-embedded-resource") is True):
        out.append((f"{path}.x-kubernetes-int-or-string", "excludes "
                    "x-kubernetes-preserve-unknown-fields and x-kubernetes-embedded-resource"))
    extra = s.get("additionalProperties")
    if extra is not None and level == "root":
        out.append((f"{path}.additionalProperties", "must not be used at the root"))
    elif extra not in (None, True) and s.get("properties"):
        out.append((f"{path}.additionalProperties",
                    "additionalProperties and properties are mutually exclusive"))


def _children(s: dict[str, Any], path: str, level: str, out: list[Problem],
              depth: int) -> None:
    inner = "nested" if level == "nested" else "field"
    items = s.get("items")
    if isinstance(items, list):
        out.append((f"{path}.items", "must be one schema, not a list of them (the API server "
                    "refuses tuple items)"))
    elif "items" in s:
        _node(items, f"{path}.items", "nested" if level == "nested" else "item", out,
              depth + 1)
    props = s.get("properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            _node(sub, f"{path}.properties.{name}", inner, out, depth + 1)
    elif "properties" in s:
        out.append((f"{path}.properties", f"{_short(props)} is not a map of field schemas"))
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        _node(extra, f"{path}.additionalProperties", inner, out, depth + 1)
    elif "additionalProperties" in s and not isinstance(extra, bool):
        out.append((f"{path}.additionalProperties", f"{_short(extra)} is not a schema or "
                    "true/false"))
    for key in ("allOf", "anyOf", "oneOf"):
        if key in s and not isinstance(s[key], list):
            out.append((f"{path}.{key}", f"{_short(s[key])} is not a list of schemas"))
            continue
        for i, sub in enumerate(s.get(key) or []):
            _node(sub, f"{path}.{key}[{i}]", "nested", out, depth + 1)
    if "not" in s:
        _node(s["not"], f"{path}.not", "nested", out, depth + 1)


def _int_or_string_branch(s: dict[str, Any], key: str) -> bool:
    """The one type allowed nested: ``anyOf: [{type: integer}, {type: string}]`` of an
    int-or-string field (isIntOrStringAnyOfPattern); the caller's parent is not at hand, so
    the branch is recognised by itself."""
    return key == "type" and s.get("type") in ("integer", "string") and \
        set(s) <= {"type"}


def _is_number(v: Any) -> bool:
    """A JSON number: no bool, and no NaN or infinity (JSON, and so the server, has none)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
