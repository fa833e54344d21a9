"""Reading CustomResourceDefinitions: packaged with aiplat, or from a directory.

``load_crds(dir)`` finds every CRD in ``*.yaml``/``*.yml``/``*.json`` below ``dir`` and
returns a ``CrdIndex``: (group, version, kind) -> the version's openAPIV3Schema, made strict
(``additionalProperties: false`` wherever an object lists its properties and does not
preserve unknown fields) because the API server prunes — and ``kubectl apply`` with strict
field validation rejects — fields a CRD does not declare, so a typo must fail here too.

``packaged_crds()`` is the index of the CRDs aiplat's rendered trees use, shipped in
``crd_data/`` for the versions aiplat targets (Kueue, JobSet, Gateway API and its inference
extension, the CSI snapshotter, prometheus-operator's ServiceMonitor and PrometheusRule),
so validation checks every custom resource from a plain ``pip install``. Each bundle is the
upstream CRDs of one module at the version pinned in ``cluster/tools/go.mod`` or
``cluster/tools/crds/go.mod``, cut by ``reduce_crd`` to what validation reads (names, served
versions, schemas without descriptions); ``scripts/regen_crds.py`` writes them from the Go
module cache and tests/unit/test_kube_crd_bundle.py checks they match the pins. A user's
``--crd-dir`` goes on top (``CrdIndex.overlay``): a kind it defines replaces the packaged one.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from aiplat import inputs
from aiplat.errors import InputError
from aiplat.kube.schemas import pattern_error

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class CrdIndex:
    schemas: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    sources: dict[tuple[str, str], str] = field(default_factory=dict)  # (group, kind) -> file

    def schema(self, api_version: str, kind: str) -> dict[str, Any] | None:
        group, _, version = api_version.rpartition("/")
        return self.schemas.get((group, version, kind))

    def knows(self, api_version: str, kind: str) -> bool:
        group = api_version.rpartition("/")[0]
        return (group, kind) in self.sources

    def served_versions(self, group: str, kind: str) -> list[str]:
        return sorted(v for (g, v, k) in self.schemas if g == group and k == kind)

    def overlay(self, top: CrdIndex) -> CrdIndex:
        """This index with ``top``'s kinds on top: a (group, kind) that ``top`` defines is
        taken from ``top`` alone (all its versions), so a cluster's own CRDs override."""
        if not top.sources:
            return self
        schemas = {k: s for k, s in self.schemas.items() if (k[0], k[2]) not in top.sources}
        return CrdIndex(schemas=schemas | top.schemas, sources=self.sources | top.sources)


def strict_schema(schema: Any) -> Any:
    """A copy of an openAPIV3Schema with unknown fields forbidden."""
    s = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if ("properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            for key, value in node.items():
                if key == "metadata" and isinstance(value, dict):
                    continue  # ObjectMeta is checked by the built-in rules
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(s)
    if isinstance(s, dict):
        # The API server always accepts these, declared or not.
        props = s.setdefault("properties", {})
        props["metadata"] = {"type": "object"}
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
    return s


def index_crds(docs: list[tuple[str, dict[str, Any]]]) -> CrdIndex:
    """Index already-parsed documents (pure; ``load_crds`` does the reading)."""
    index = CrdIndex()
    for source, doc in docs:
        if doc.get("kind") != "CustomResourceDefinition":
            continue
        try:
            _index_one(index, source, doc)
        except (AttributeError, TypeError, KeyError, ValueError) as e:
            name = (doc.get("metadata") or {}).get("name") \
                if isinstance(doc.get("metadata"), dict) else None
            raise InputError(f"{source}: CustomResourceDefinition {name or '(unnamed)'} is not "
                             f"the shape of a CRD ({type(e).__name__}: {e}) (fix: export it "
                             "again with `kubectl get crd NAME -o yaml`)") from e
    return index


def _index_one(index: CrdIndex, source: str, doc: dict[str, Any]) -> None:
    spec = doc.get("spec") or {}
    group, kind = spec.get("group", ""), (spec.get("names") or {}).get("kind", "")
    for v in spec.get("versions") or []:
        if not v.get("served", True):
            continue
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if schema:
            _check_patterns(source, doc, v["name"], schema)
            index.schemas[(group, v["name"], kind)] = strict_schema(schema)
    index.sources[(group, kind)] = source


# Keywords whose values are data, not schemas: a "pattern" key inside them is not a regexp.
_DATA_VALUED = {"default", "example", "enum", "const", "x-kubernetes-validations"}


def _patterns(node: Any, path: str) -> list[tuple[str, Any]]:
    """(schema path, pattern) of every ``pattern`` and ``patternProperties`` key below."""
    found: list[tuple[str, Any]] = []
    if isinstance(node, list):
        for i, item in enumerate(node):
            found += _patterns(item, f"{path}[{i}]")
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and not isinstance(value, dict):
                found.append((f"{path}.pattern", value))
            elif key == "patternProperties" and isinstance(value, dict):
                found += [(f"{path}.patternProperties", p) for p in value]
            if key not in _DATA_VALUED:
                found += _patterns(value, f"{path}.{key}")
    return found


def _check_patterns(source: str, doc: dict[str, Any], version: str, schema: Any) -> None:
    """An ``InputError`` naming the CRD and field when a pattern is not one Go's ``regexp``
    compiles (the API server refuses such a CRD: nothing could be validated against it)."""
    for where, pattern in _patterns(schema, "openAPIV3Schema"):
        why = pattern_error(pattern)
        if why is not None:
            name = (doc.get("metadata") or {}).get("name") or "(unnamed)"
            raise InputError(f"{source}: CustomResourceDefinition {name} version {version} at "
                             f"{where}: {pattern!r} is not a Go (RE2) regular expression: "
                             f"{why} (fix: correct the pattern; the API server refuses this "
                             "CRD too)")


def load_crds(directory: str | Path) -> CrdIndex:
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"--crd-dir {root}: not a directory (fix: point it at a folder of "
                         "CRD YAML, e.g. from `kubectl get crd -o yaml`)")
    docs: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml", ".json")):
        what = "CRDs (`kubectl get crd -o yaml`)"
        loaded = ([inputs.load_json(path, what)] if path.suffix == ".json"
                  else inputs.load_yaml_all(path, what))
        for doc in loaded:
            items = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" \
                else [doc]
            if not isinstance(items, list) or not all(isinstance(d, dict) for d in items):
                raise InputError(f"{path}: not CRDs: every document (and a List's items) must "
                                 "be an object (fix: export them with `kubectl get crd -o "
                                 "yaml`)")
            docs.extend((str(path), d) for d in items)
    return index_crds(docs)


BUNDLE_DIR = "crd_data"  # inside the aiplat.kube package
# Schema keywords whose values are schemas, lists of schemas, or maps of name -> schema:
# only these are walked when stripping, so a property *named* "description" survives.
_SCHEMA_VALUED = {"items", "additionalProperties", "not"}
_SCHEMA_LISTS = {"allOf", "anyOf", "oneOf"}
_SCHEMA_MAPS = {"properties", "patternProperties", "definitions", "$defs"}


def strip_descriptions(schema: Any) -> Any:
    """A copy of an OpenAPI v3 schema without ``description`` (prose, most of a CRD's size
    and nothing validation reads)."""
    if isinstance(schema, list):  # items given as a tuple of schemas
        return [strip_descriptions(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key in _SCHEMA_VALUED or key in _SCHEMA_LISTS:
            out[key] = strip_descriptions(value)
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: strip_descriptions(s) for name, s in value.items()}
        else:
            out[key] = value
    return out


def reduce_crd(doc: dict[str, Any]) -> dict[str, Any]:
    """The part of an upstream CRD that validation reads: a CRD still (``--crd-dir`` and
    ``index_crds`` take it), but not one to install: no descriptions, no unserved
    versions, no conversion or status."""
    spec = doc["spec"]
    versions = [{"name": v["name"], "served": True, "storage": bool(v.get("storage")),
                 "schema": {"openAPIV3Schema": strip_descriptions(
                     (v.get("schema") or {}).get("openAPIV3Schema") or {})}}
                for v in spec.get("versions") or [] if v.get("served", True)]
    return {"apiVersion": doc.get("apiVersion", "apiextensions.k8s.io/v1"),
            "kind": "CustomResourceDefinition",
            "metadata": {"name": doc["metadata"]["name"]},
            "spec": {"group": spec["group"], "scope": spec.get("scope"),
                     "names": {k: spec["names"][k] for k in ("kind", "plural", "singular",
                                                            "listKind")
                               if k in spec["names"]},
                     "versions": versions}}


def bundles() -> list[dict[str, Any]]:
    """The packaged bundles, each ``{"name", "module", "version", "path", "crds"}``."""
    root = resources.files("aiplat.kube") / BUNDLE_DIR
    return [json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(root.iterdir(), key=lambda p: p.name) if p.name.endswith(".json")]


@functools.cache
def packaged_crds() -> CrdIndex:
    """The CRDs shipped with aiplat (see the module docstring); built once per process."""
    docs = [(f"aiplat's {b['name']} {b['version']} CRDs", crd) for b in bundles()
            for crd in b["crds"]]
    return index_crds(docs)
