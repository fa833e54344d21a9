"""Reading a rendered (or hand-written) manifest tree from disk: the I/O edge of validate and
lint.

A directory with a ``kustomization.yaml`` is read the way kustomize would: its ``resources``
in order, recursing into listed directories. A directory without one is read as every
``*.yaml``/``*.yml``/``*.json`` below it. ``cluster/nodes/inventory.yaml`` (written by
render) is returned separately, never as a manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from aiplat import inputs
from aiplat.errors import InputError
from aiplat.kube.inventory import Inventory

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
INVENTORY = "cluster/nodes/inventory.yaml"


def _read_docs(path: Path) -> list[Any]:
    """The Kubernetes objects in one file: each a mapping; a ``List``'s items unpacked."""
    what = "Kubernetes manifests"
    docs = [inputs.load_json(path, what)] if path.suffix == ".json" \
        else inputs.load_yaml_all(path, what)
    out: list[Any] = []
    for i, doc in enumerate(docs):
        where = f"{path}" + (f" (document {i + 1})" if len(docs) > 1 else "")
        if not isinstance(doc, dict):
            raise InputError(f"{where}: a manifest must be a mapping (an object with "
                             f"apiVersion and kind), not {type(doc).__name__} (fix: remove or "
                             "correct it)")
        if str(doc.get("kind", "")).endswith("List") and "items" in doc:
            items = doc.get("items")
            if not isinstance(items, list) or not all(isinstance(o, dict) for o in items):
                raise InputError(f"{where}: a {doc.get('kind')}'s items must be a list of "
                                 "objects (fix: correct 'items')")
            out.extend(items)
        else:
            out.append(doc)
    return out


def _kustomized(directory: Path, root: Path, out: list[tuple[str, Any]]) -> None:
    k = directory / "kustomization.yaml"
    docs = _read_docs(k)
    resources = (docs[0] if docs else {}).get("resources") or []
    if not isinstance(resources, list) or not all(isinstance(e, str) for e in resources):
        raise InputError(f"{k}: 'resources' must be a list of file or directory names (fix: "
                         "correct it, or re-render the tree)")
    for entry in resources:
        target = directory / entry
        if target.is_dir():
            if not (target / "kustomization.yaml").exists():
                raise InputError(f"{k}: resource {entry!r} is a directory without "
                                 "kustomization.yaml")
            _kustomized(target, root, out)
        elif target.is_file():
            out.extend((str(target.relative_to(root)), d) for d in _read_docs(target))
        else:
            raise InputError(f"{k}: resource {entry!r} does not exist (fix: re-render or "
                             "remove it from resources)")


def read_tree(directory: str | Path) -> tuple[list[tuple[str, Any]], Inventory | None]:
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"{root}: not a directory")
    items: list[tuple[str, Any]] = []
    if (root / "kustomization.yaml").exists():
        _kustomized(root, root, items)
    else:
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml", ".json")):
            rel = str(path.relative_to(root))
            if rel == INVENTORY or path.name == "kustomization.yaml":
                continue
            items.extend((rel, d) for d in _read_docs(path))
    inv_path = root / INVENTORY
    inventory = None
    if inv_path.exists():
        docs = _read_docs(inv_path)
        inventory = Inventory.from_dict(docs[0], str(inv_path)) if docs else None
    return items, inventory
