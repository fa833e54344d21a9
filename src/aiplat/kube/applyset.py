"""The owned set of objects one ``aiplat kube apply --prune`` manages: kubectl's ApplySet
(KEP-3659), pure.

Why kubectl's: the labels and annotations are a published contract that other tools read
(``kubectl get -A -l applyset.kubernetes.io/part-of=ID`` lists the set), and what ``--prune``
removes is decided by them alone, never by a guess from names. The parent is a Secret
(kubectl's default parent kind) in ``kube-system`` named by ``--applyset`` (default
``aiplat``): its ``applyset.kubernetes.io/id`` label is
``applyset-<base64url(sha256(name.namespace.Secret.))>-v1``, its annotations list the kinds
(``contains-group-kinds``, ``Kind.group`` sorted, comma-joined) and the namespaces
(``additional-namespaces``) the members are in; every member carries
``applyset.kubernetes.io/part-of: ID``. The tooling annotation says ``aiplat/VERSION``, so
kubectl refuses to prune aiplat's set by mistake (it manages only sets of its own tooling).

The order of one apply (``kube/apply.py``): the parent is applied first with the union of the
kinds and namespaces it listed before and the new ones (a crash then leaves a parent that
still finds every member), the members next, then every object of a listed kind that carries
the label and is not in the new set is deleted, last the parent is applied with the new set.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

from aiplat import __version__
from aiplat.errors import InputError

Obj = dict[str, Any]
ID_LABEL = "applyset.kubernetes.io/id"
PART_OF = "applyset.kubernetes.io/part-of"
KINDS = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
TOOLING = "applyset.kubernetes.io/tooling"
PARENT_NAMESPACE = "kube-system"
_DNS = set("abcdefghijklmnopqrstuvwxyz0123456789-")


def applyset_id(name: str, namespace: str, kind: str = "Secret", group: str = "") -> str:
    """KEP-3659's ID of a parent: base64url, unpadded, of sha256(name.namespace.kind.group)."""
    digest = hashlib.sha256(f"{name}.{namespace}.{kind}.{group}".encode()).digest()
    return f"applyset-{base64.urlsafe_b64encode(digest).decode().rstrip('=')}-v1"


def group_kind(o: Obj) -> str:
    """``Kind.group`` (``Kind`` for the core group), as the parent's annotation lists it."""
    av = str(o.get("apiVersion", ""))
    group = av.split("/", maxsplit=1)[0]
    return f"{o.get('kind')}.{group}" if "/" in av else str(o.get("kind"))


def member_key(o: Obj) -> tuple[str, str, str]:
    meta = o.get("metadata") or {}
    return (group_kind(o), str(meta.get("namespace") or ""), str(meta.get("name")))


@dataclass(frozen=True)
class ApplySet:
    name: str = "aiplat"
    namespace: str = PARENT_NAMESPACE

    def __post_init__(self) -> None:
        if not self.name or len(self.name) > 63 or set(self.name) - _DNS \
                or self.name[0] == "-" or self.name[-1] == "-":
            raise InputError(f"--applyset {self.name!r}: not a Secret name (fix: lower-case "
                             "letters, digits and '-', e.g. aiplat-examples)")

    @property
    def id(self) -> str:
        return applyset_id(self.name, self.namespace)

    def member(self, o: Obj) -> Obj:
        """``o`` with the part-of label (a copy: the tree's object is not changed)."""
        meta = dict(o.get("metadata") or {})
        meta["labels"] = {**(meta.get("labels") or {}), PART_OF: self.id}
        return {**o, "metadata": meta}

    def parent(self, kinds: set[str], namespaces: set[str]) -> Obj:
        others = sorted(namespaces - {self.namespace, ""})
        return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": self.name, "namespace": self.namespace,
                             "labels": {ID_LABEL: self.id},
                             "annotations": {TOOLING: f"aiplat/v{__version__}",
                                             KINDS: ",".join(sorted(kinds)),
                                             NAMESPACES: ",".join(others)}}}


def listed(parent: Obj | None) -> tuple[set[str], set[str]]:
    """The kinds and namespaces a live parent lists (none without one)."""
    ann = ((parent or {}).get("metadata") or {}).get("annotations") or {}
    return ({k for k in str(ann.get(KINDS, "")).split(",") if k},
            {n for n in str(ann.get(NAMESPACES, "")).split(",") if n})


def foreign_tooling(parent: Obj | None) -> str | None:
    """The tooling of a live parent that is not aiplat's (then aiplat leaves the set alone)."""
    ann = ((parent or {}).get("metadata") or {}).get("annotations") or {}
    tool = str(ann.get(TOOLING, ""))
    return tool if parent is not None and not tool.startswith("aiplat/") else None


def stale(live: list[Obj], desired: list[Obj]) -> list[Obj]:
    """The live members (listed by the part-of label) the new set no longer has."""
    keep = {member_key(o) for o in desired}
    return [o for o in live if member_key(o) not in keep]
