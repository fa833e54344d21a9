"""Label selectors as Kubernetes evaluates them for Kueue: a ClusterQueue's
``namespaceSelector`` against a Namespace's labels (``metav1.LabelSelectorAsSelector``), and
a pod's required node affinity against a ResourceFlavor's ``nodeLabels`` (Kueue's
``flavorSelector``: only the flavor's own label keys count). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]


def _requirement(op: object, key: str, values: list[str], labels: Mapping[str, str]) -> bool:
    has, value = key in labels, labels.get(key)
    if op == "In":
        return has and value in values
    if op == "NotIn":
        return not has or value not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt") and has and len(values) == 1:  # node selectors only
        try:
            a, b = int(str(value)), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def selects(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector: None (Kueue's default) selects nothing, ``{}`` everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_requirement(e.get("operator"), str(e.get("key")),
                            [str(v) for v in e.get("values") or []], labels)
               for e in selector.get("matchExpressions") or [])


def affinity_matches(terms: tuple[Obj, ...], labels: Mapping[str, str]) -> bool:
    """Required node affinity (``nodeSelectorTerms``, ORed) against a flavor's labels, each
    term cut to the flavor's label keys; a term left empty matches any flavor, as in Kueue's
    ``flavorSelector``."""
    cut = []
    for t in terms:
        exprs = [e for e in t.get("matchExpressions") or [] if e.get("key") in labels]
        if not exprs:
            return True
        cut.append(exprs)
    if not cut:
        return True
    return any(all(_requirement(e.get("operator"), str(e.get("key")),
                                [str(v) for v in e.get("values") or []], labels)
                   for e in exprs) for exprs in cut)
