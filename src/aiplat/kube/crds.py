"""Reading CustomResourceDefinitions from a directory (the I/O edge of validation).

``load_crds(dir)`` finds every CRD in ``*.yaml``/``*.yml``/``*.json`` below ``dir`` and
returns a ``CrdIndex``: (group, version, kind) -> the version's openAPIV3Schema, made strict
(``additionalProperties: false`` wherever an object lists its properties and does not
preserve unknown fields) because the API server prunes — and ``kubectl apply`` with strict
field validation rejects — fields a CRD does not declare, so a typo must fail here too.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from aiplat import inputs
from aiplat.errors import InputError

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
