"""Reading CustomResourceDefinitions: packaged with aiplat, or from a directory.

``load_crds(dir)`` finds every CRD in ``*.yaml``/``*.yml``/``*.json`` below ``dir`` and
returns a ``CrdIndex``: (group, version, kind) -> the version's openAPIV3Schema, made strict
(``additionalProperties: false`` wherever an object lists its properties and does not
preserve unknown fields) because the API server prunes — and ``kubectl apply`` with strict
field validation rejects — fields a CRD does not declare, so a typo must fail here too.
A CRD the API server refuses (``crd_problems``: a schema that is not structural, a pattern
Go's regexp refuses, a default its own field refuses) is never indexed: ``index_crds`` raises
an ``InputError`` naming it, ``kube validate`` reports it at the CRD (``unusable_index``).

``packaged_crds()`` is the index of the CRDs aiplat's rendered trees use, shipped in
``crd_data/`` for the versions aiplat targets (Kueue, JobSet, Gateway API and its inference
extension, the CSI snapshotter, prometheus-operator's ServiceMonitor and PrometheusRule,
LeaderWorkerSet),
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
from aiplat.kube import structural
from aiplat.kube.schemas import Validator, field_path

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class CrdIndex:
    schemas: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    sources: dict[tuple[str, str], str] = field(default_factory=dict)  # (group, kind) -> file
    # (group, kind) -> file of a CRD the API server refuses: its kinds have no usable schema.
    unusable: dict[tuple[str, str], str] = field(default_factory=dict)

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
        if not top.sources and not top.unusable:
            return self
        mine = top.sources.keys() | top.unusable.keys()
        schemas = {k: s for k, s in self.schemas.items() if (k[0], k[2]) not in mine}
        sources = {k: f for k, f in self.sources.items() if k not in mine}
        unusable = {k: f for k, f in self.unusable.items() if k not in mine}
        return CrdIndex(schemas=schemas | top.schemas, sources=sources | top.sources,
                        unusable=unusable | top.unusable)


def strict_schema(schema: Any) -> Any:
    """A copy of a (structural) openAPIV3Schema with unknown fields forbidden, in JSON
    Schema 2020-12's words where OpenAPI v3.0's differ."""
    s = copy.deepcopy(schema)
    _strict(s)
    if isinstance(s, dict):
        # The API server always accepts these, declared or not.
        props = s.setdefault("properties", {})
        props["metadata"] = {"type": "object"}
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
    return s


def _strict(node: Any) -> None:
    """In place, along the structural part only (properties, items, additionalProperties):
    what allOf/anyOf/oneOf/not list is checked against the whole object, not pruned to it."""
    if not isinstance(node, dict):
        return
    if ("properties" in node and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")):
        node["additionalProperties"] = False
    for bound in ("Maximum", "Minimum"):
        # OpenAPI v3.0: a flag on maximum/minimum; 2020-12: the bound itself.
        flag = node.get(f"exclusive{bound}")
        if isinstance(flag, bool):
            del node[f"exclusive{bound}"]
            if flag and bound.lower() in node:
                node[f"exclusive{bound}"] = node.pop(bound.lower())
    props = node.get("properties")
    for name, sub in (props.items() if isinstance(props, dict) else ()):
        if name != "metadata":  # ObjectMeta is checked by the built-in rules
            _strict(sub)
    _strict(node.get("items"))
    _strict(node.get("additionalProperties"))


@dataclass(frozen=True)
class SchemaProblem:
    """Why the API server refuses a CRD: at ``where`` in version ``version``'s schema."""
    index: int  # of the version in spec.versions
    version: str
    where: str  # openAPIV3Schema.properties...
    message: str

    @property
    def path(self) -> str:
        """The field of the CRD object."""
        return f"spec.versions[{self.index}].schema.{self.where}"


SCHEMA_FIX = ("(fix: correct the CRD's schema there; the API server refuses this "
              "CustomResourceDefinition, so its custom resources are not checked against it)")


def crd_problems(doc: Any) -> list[SchemaProblem]:
    """Each version's schema problems (``structural.problems``, then defaults that do not
    match their own schema): empty when the API server takes every schema, or when ``doc``
    is not the shape of a CRD at all (``index_crds`` says so)."""
    spec = doc.get("spec") if isinstance(doc, dict) else None
    versions = spec.get("versions") if isinstance(spec, dict) else None
    out: list[SchemaProblem] = []
    for i, v in enumerate(versions if isinstance(versions, list) else []):
        holder = v.get("schema") if isinstance(v, dict) else None
        if not isinstance(holder, dict) or holder.get("openAPIV3Schema") is None:
            continue
        schema = holder["openAPIV3Schema"]
        found = structural.problems(schema) or _default_problems(schema, "openAPIV3Schema")
        out += [SchemaProblem(i, str(v.get("name")), w, m) for w, m in found]
    return out


def _default_problems(node: Any, path: str) -> list[tuple[str, str]]:
    """Defaults (on a structural schema) that their own field's schema refuses: the API
    server refuses the CRD (structuraldefaulting.ValidateDefaults), not each object."""
    if not isinstance(node, dict):
        return []
    out = []
    if node.get("default") is not None:
        strict = copy.deepcopy(node)
        _strict(strict)
        errors = sorted(Validator(strict).iter_errors(node["default"]),
                        key=lambda e: list(map(str, e.absolute_path)))
        if errors:
            at = field_path(errors[0].absolute_path)
            out.append((f"{path}.default", f"{_shown(node['default'])} does not match "
                        f"the field's own schema: {errors[0].message[:200]}"
                        + (f" (at {at})" if at else "")))
    props = node.get("properties")
    for name, sub in (props.items() if isinstance(props, dict) else ()):
        if name != "metadata":
            out += _default_problems(sub, f"{path}.properties.{name}")
    for key in ("items", "additionalProperties"):
        out += _default_problems(node.get(key), f"{path}.{key}")
    return out


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def index_crds(docs: list[tuple[str, dict[str, Any]]]) -> CrdIndex:
    """Index already-parsed documents (pure; ``load_crds`` does the reading); a CRD the API
    server refuses (``crd_problems``) is an ``InputError`` naming it and the field."""
    index = CrdIndex()
    for source, doc in docs:
        if doc.get("kind") != "CustomResourceDefinition":
            continue
        found = crd_problems(doc)
        if found:
            raise InputError(f"{source}: {refused(doc, found)}")
        try:
            _index_one(index, source, doc)
        except (AttributeError, TypeError, KeyError, ValueError) as e:
            name = (doc.get("metadata") or {}).get("name") \
                if isinstance(doc.get("metadata"), dict) else None
            raise InputError(f"{source}: CustomResourceDefinition {name or '(unnamed)'} is not "
                             f"the shape of a CRD ({type(e).__name__}: {e}) (fix: export it "
                             "again with `kubectl get crd NAME -o yaml`)") from e
    return index


def refused(doc: dict[str, Any], found: list[SchemaProblem]) -> str:
    """One message for a CRD's schema problems (the first few)."""
    meta = doc.get("metadata")
    name = (meta.get("name") if isinstance(meta, dict) else None) or "(unnamed)"
    lines = [f"version {p.version} at {p.where}: {p.message}" for p in found[:5]]
    more = f"; and {len(found) - 5} more" if len(found) > 5 else ""
    return f"CustomResourceDefinition {name} {'; '.join(lines)}{more} {SCHEMA_FIX}"


def unusable_index(source: str, doc: dict[str, Any]) -> CrdIndex:
    """An index that says ``doc``'s kind has no usable schema (its CRD is refused)."""
    spec = doc.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    names = spec.get("names")
    group, kind = spec.get("group"), names.get("kind") if isinstance(names, dict) else None
    if not (isinstance(group, str) and isinstance(kind, str)):
        return CrdIndex()
    return CrdIndex(unusable={(group, kind): source})


def _index_one(index: CrdIndex, source: str, doc: dict[str, Any]) -> None:
    spec = doc.get("spec") or {}
    group, kind = spec.get("group", ""), (spec.get("names") or {}).get("kind", "")
    for where, value in (("spec.group", group), ("spec.names.kind", kind)):
        if not isinstance(value, str):
            raise ValueError(f"{where} {value!r} is not a string")
    for i, v in enumerate(spec.get("versions") or []):
        if not isinstance(v.get("name"), str) or not v["name"]:
            raise ValueError(f"spec.versions[{i}].name {v.get('name')!r} is not a version "
                             "name")
        if not v.get("served", True):
            continue
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if schema:
            index.schemas[(group, v["name"], kind)] = strict_schema(schema)
    index.sources[(group, kind)] = source


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
    """The packaged bundles, each ``{"name", "module", "version", "path", "crds"}`` (a Go
    module's, ``scripts/regen_crds.py``), or ``{"name", "version", "sources", "crds"}`` (the
    GitOps tools' CRDs that ``kube render --gitops`` needs, Argo CD's Application and Flux's
    Kustomization, HelmRepository and HelmRelease, from their release tags:
    ``scripts/gitops_crds.py``)."""
    root = resources.files("aiplat.kube") / BUNDLE_DIR
    return [json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(root.iterdir(), key=lambda p: p.name) if p.name.endswith(".json")]


@functools.cache
def packaged_crds() -> CrdIndex:
    """The CRDs shipped with aiplat (see the module docstring); built once per process."""
    docs = [(f"aiplat's {b['name']} {b['version']} CRDs", crd) for b in bundles()
            for crd in b["crds"]]
    return index_crds(docs)
