"""Small constructors shared by the builders; every object carries aiplat's managed-by label."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aiplat.kube.facts import MANAGED_BY, PoolFacts

Obj = dict[str, Any]


def meta(name: str, namespace: str | None = None, labels: dict[str, str] | None = None,
         annotations: dict[str, str] | None = None) -> Obj:
    m: Obj = {"name": name}
    if namespace:
        m["namespace"] = namespace
    m["labels"] = {**MANAGED_BY, **(labels or {})}
    if annotations:
        m["annotations"] = annotations
    return m


def obj(api: str, kind: str, name: str, namespace: str | None = None, *,
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        **body: Any) -> Obj:
    o: Obj = {"apiVersion": api, "kind": kind,
              "metadata": meta(name, namespace, labels, annotations)}
    o.update(body)
    return o


def ref(o: Obj) -> str:
    """``Kind/namespace/name`` as findings and issues name an object; whatever its shape."""
    m = o.get("metadata")
    m = m if isinstance(m, dict) else {}
    ns = f"{m['namespace']}/" if m.get("namespace") else ""
    # An object named at create from generateName: the prefix and a '*' for what it gets.
    name = m.get("name") or (f"{m['generateName']}*" if m.get("generateName") else "?")
    return f"{o.get('kind', '?')}/{ns}{name}"


def toleration(key: str, value: str, effect: str) -> Obj:
    if value:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}


def pool_tolerations(pools: Iterable[PoolFacts], first: Iterable[Obj] = ()) -> list[Obj]:
    """``first``, then one toleration per distinct taint of ``pools``, in pool order."""
    out = list(first)
    for p in pools:
        for t in p.taints:
            tol = toleration(t.key, t.value, t.effect.value)
            if tol not in out:
                out.append(tol)
    return out


def restricted_security_context() -> Obj:
    """What Pod Security 'restricted' demands of every container."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def deployment_of(pod: Obj) -> str | None:
    """The Deployment a pod belongs to: its ReplicaSet's name less the pod-template-hash
    (Kueue admits each such pod as a Workload of its own)."""
    meta = pod.get("metadata") or {}
    rs = next((o for o in meta.get("ownerReferences") or [] if o.get("kind") == "ReplicaSet"),
              None)
    h = (meta.get("labels") or {}).get("pod-template-hash")
    name = str((rs or {}).get("name", ""))
    if not h or not name.endswith(f"-{h}"):
        return None
    return name.removesuffix(f"-{h}")
