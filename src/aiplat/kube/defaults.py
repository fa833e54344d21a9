"""What the API server and the admission webhooks set on an object before they validate it.

A create goes through decoding (a CRD's structural defaults: every ``default`` its schema
gives a missing field whose parent is there), then the mutating webhooks, and only then the
schema's required fields and the validation rules. A field a webhook defaults is not missing,
so the checks read the object as the server would: ``server_defaults`` returns that copy.

Modelled webhooks (from their sources; a controller not listed here sets nothing):

- JobSet ``jobset.x-k8s.io`` (``pkg/webhooks/jobset_webhook.go``, ``Default``, v0.9 to
  v0.12): successPolicy ``{operator: All}``, startupPolicy ``{startupPolicyOrder: AnyOrder}``,
  each replicated Job's ``completionMode: Indexed`` and its pod template's
  ``restartPolicy: OnFailure``, ``network.enableDNSHostnames`` and
  ``network.publishNotReadyAddresses`` true, each failure-policy rule without a name named
  ``failurePolicyRule<i>``, and each volume claim policy's retention ``{whenDeleted:
  Delete}``.
"""

from __future__ import annotations

import copy
from typing import Any

from aiplat.kube.crds import CrdIndex

Obj = dict[str, Any]
_DEPTH = 64  # a CRD schema nests far less; bounds a hostile one


def stored(o: Obj, crds: CrdIndex) -> Obj:
    """``o`` as the API server reads it before validating: nulls dropped (a null field is
    unset), then ``server_defaults`` with the CRD of its kind among ``crds``."""
    o = without_nulls(o)
    api, kind = o.get("apiVersion"), o.get("kind")
    schema = crds.schema(api, kind) if isinstance(api, str) and isinstance(kind, str) \
        else None
    return server_defaults(o, schema)


def as_applied(o: Obj, schema: Any) -> Obj:
    """A custom resource as server-side apply (``aiplat kube apply``, ``kubectl apply
    --server-side``) hands it to validation, by its CRD ``schema``: nothing pruned, so a
    null stays where it is, but for metadata's (ObjectMeta drops them) and status's (the
    status subresource, which most CRDs have, drops the whole status on the main
    endpoint); then the structural defaults, which take the place of a null too where the
    field has a default and is not ``nullable`` (apiextensions-apiserver's
    ``structuraldefaulting.Default``). A create (POST: ``kubectl create``, a client-side
    apply of a new object) first drops the nulls of mapping fields that have no default
    and are not nullable (``PruneNonNullableNullsWithoutDefaults``); a null list item it
    keeps, as apply does. What is left null is the validation's to judge."""
    out = {k: v for k, v in o.items() if k not in ("metadata", "status")}
    for k in ("metadata", "status"):
        if o.get(k) is not None:
            out[k] = without_nulls(o[k])
    return server_defaults(out, schema)


def as_created(o: Obj, schema: Any) -> Obj:
    """A custom resource as a create (POST: ``kubectl create``, ``kubectl apply`` of a new
    object) hands it to validation: ``as_applied`` after apiextensions-apiserver's
    ``PruneNonNullableNullsWithoutDefaults``, which deletes every map value (a property or
    an ``additionalProperties`` value) that is null where its schema is neither nullable
    nor defaulted. A null list item, and a null the schema does not declare (structural
    pruning's, an unknown field), it leaves."""
    return as_applied(_prune_nulls(copy.deepcopy(o), schema, 0), schema)


def _prune_nulls(value: Any, schema: Any, depth: int) -> Any:
    if depth > _DEPTH or not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties")
        for k in list(value):
            sub = props.get(k, extra)
            if not isinstance(sub, dict):
                continue
            if value[k] is None and sub.get("nullable") is not True \
                    and sub.get("default") is None:
                del value[k]
            else:
                _prune_nulls(value[k], sub, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _prune_nulls(item, schema.get("items"), depth + 1)
    return value


def without_nulls(node: Any) -> Any:
    """A copy without null map values or list items (what the API server stores)."""
    if isinstance(node, dict):
        return {k: without_nulls(v) for k, v in node.items() if v is not None}
    if isinstance(node, list):
        return [without_nulls(v) for v in node if v is not None]
    return node


def server_defaults(o: Obj, schema: Any = None) -> Obj:
    """A copy of ``o`` with the defaults of its CRD ``schema`` (None for a built-in kind) and
    of the modelled webhooks applied."""
    out = copy.deepcopy(o)
    if isinstance(schema, dict):
        _schema_defaults(out, schema, 0)
    group, kind = str(o.get("apiVersion", "")).rpartition("/")[0], o.get("kind")
    if group == "jobset.x-k8s.io" and kind == "JobSet":
        _jobset(out)
    return out


def _schema_defaults(value: Any, schema: Obj, depth: int) -> None:
    """The structural defaulting of ``value`` by ``schema``, in place."""
    if depth > _DEPTH:
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        for name, sub in props.items():
            if isinstance(sub, dict) and "default" in sub and (
                    name not in value or _defaulted_null(value[name], sub)):
                value[name] = copy.deepcopy(sub["default"])
        extra = schema.get("additionalProperties")
        for k in list(value):
            sub = props.get(k, extra)
            if isinstance(sub, dict) and k != "metadata":
                if k not in props and _defaulted_null(value[k], sub):
                    value[k] = copy.deepcopy(sub["default"])
                _schema_defaults(value[k], sub, depth + 1)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        for i in range(len(value)):
            if _defaulted_null(value[i], items):
                value[i] = copy.deepcopy(items["default"])
            _schema_defaults(value[i], items, depth + 1)


def _defaulted_null(value: Any, schema: Obj) -> bool:
    """A null the field's default replaces: the field has one and is not nullable."""
    return value is None and schema.get("default") is not None \
        and schema.get("nullable") is not True


def _mapping(parent: Any, key: str) -> Obj | None:
    """``parent[key]``, created empty when missing; None when either is not a mapping."""
    if not isinstance(parent, dict):
        return None
    if parent.get(key) is None:
        parent[key] = {}
    child = parent[key]
    return child if isinstance(child, dict) else None


def _items(node: Any, key: str) -> list[Any]:
    """``node[key]`` when it is a list (a wrong shape is the schema check's to report)."""
    value = node.get(key) if isinstance(node, dict) else None
    return value if isinstance(value, list) else []


def _below(node: Any, *keys: str) -> Obj | None:
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _jobset(js: Obj) -> None:
    # The webhook decodes the object into Go types, so a null spec is an empty one that it
    # fills (its patch replaces the null); only server-side apply (``as_applied``) keeps
    # nulls this far.
    spec = _mapping(js, "spec") if "spec" in js else None
    if spec is None:
        return
    for key, value in (("successPolicy", {"operator": "All"}),
                       ("startupPolicy", {"startupPolicyOrder": "AnyOrder"})):
        if spec.get(key) is None:
            spec[key] = value
    for rj in _items(spec, "replicatedJobs"):
        # Only inside templates the file gives: a missing one stays missing for the checks.
        job = _below(rj, "template", "spec")
        if job is None:
            continue
        job.setdefault("completionMode", "Indexed")
        pod = _below(job, "template", "spec")
        if pod is not None and not pod.get("restartPolicy"):
            pod["restartPolicy"] = "OnFailure"
    network = _mapping(spec, "network")
    if network is not None:
        network.setdefault("enableDNSHostnames", True)
        network.setdefault("publishNotReadyAddresses", True)
    for i, rule in enumerate(_items(spec.get("failurePolicy"), "rules")):
        if isinstance(rule, dict) and not rule.get("name"):
            rule["name"] = f"failurePolicyRule{i}"
    for policy in _items(spec, "volumeClaimPolicies"):
        if isinstance(policy, dict) and policy.get("retentionPolicy") is None:
            policy["retentionPolicy"] = {"whenDeleted": "Delete"}
