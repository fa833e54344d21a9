"""``aiplat kube validate``: every object against its schema, then what schemas miss.

1. Built-in kinds: the official OpenAPI schemas that ``kubernetes-validate`` ships, strict
   (unknown fields fail), for the target version (``schemas.builtin_validator``: one cached
   validator per version and kind).
2. Custom resources: their CRD's openAPIV3Schema (``CrdIndex``, strict), for the served
   version the object names; a group the CRDs know with an unserved version is an error,
   a group no CRD defines is a warning (the cluster may have it; we cannot check). The CRDs
   are aiplat's packaged ones (``crds.packaged_crds``: the versions it targets) with the
   caller's on top, so a pip install checks every custom resource its trees use.
3. What neither checks: DNS-1123 names, quantities, DRA one-of rules (``exactly`` vs
   ``firstAvailable``), allocation modes and counts, constraint references, CEL selectors
   (``aiplat.kube.cel.check``), Pod claim references. These read fields, so they run only
   on an object whose fields have the types its schema gives (``shape.problems``, which
   also covers what 1 and 2 do not: an unknown API version of a known kind, a custom
   resource's metadata); a field of the wrong type is an error naming its path.
4. One object defined twice (``duplicates``: the same API group, kind, namespace and name,
   whatever the version): kustomize refuses such a tree ("may not add resource with an
   already registered id"), ``kubectl apply -f DIR`` applies each in file order and the
   cluster keeps the last, so which one a reader of the tree sees is not what runs.

No API server runs here: this is schema and rule checking, not a dry-run apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kubernetes_validate import utils as kv_utils  # type: ignore[import-untyped]

from aiplat.errors import InputError
from aiplat.kube import cel, webhooks
from aiplat.kube.crds import (
    SCHEMA_FIX,
    CrdIndex,
    crd_problems,
    index_crds,
    packaged_crds,
    unusable_index,
)
from aiplat.kube.defaults import as_applied, as_created, stored
from aiplat.kube.objects import ref
from aiplat.kube.quantity import QuantityError, parse_quantity
from aiplat.kube.schemas import (
    SUPPORTED_VERSIONS,
    Validator,
    builtin_served,
    builtin_validator,
    definition_validator,
    field_path,
    off_by_default,
    preferred,
    schema_label,
    schema_version,
)
from aiplat.kube.shape import problems
from aiplat.kube.tree import CLUSTER_SCOPED
from aiplat.text import shown

__all__ = ["SUPPORTED_VERSIONS", "Issue", "ValidationResult", "check_version", "duplicates",
           "field_path", "places", "ref", "validate_objects"]
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Kinds whose names must be DNS-1123 labels (they become DNS names or label values).
LABEL_NAMED = {"Namespace", "Service", "ClusterQueue", "LocalQueue", "ResourceFlavor"}
# Kinds named by any path segment (the API server's ValidateRBACName: path.IsValidPathSegmentName,
# so system:basic-user): not '.' or '..', no '/' or '%'.
PATH_SEGMENT_NAMED = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
QUANTITY_MAPS = {"requests", "limits", "hard", "default", "defaultRequest", "max", "min",
                 "systemReserved", "kubeReserved", "capacity"}
QUANTITY_KEYS = {"nominalQuota", "borrowingLimit", "lendingLimit", "weight"}


@dataclass(frozen=True)
class Issue:
    severity: str  # error | warning
    file: str
    ref: str  # Kind/namespace/name
    path: str
    message: str

    def __str__(self) -> str:
        """One line; names from the tree may hold terminal escapes: shown escaped."""
        where = f" at {self.path}" if self.path else ""
        return shown(f"{self.severity}: {self.file}: {self.ref}{where}: {self.message}")


@dataclass(frozen=True)
class ValidationResult:
    version: str
    objects: int
    issues: list[Issue]

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors


def check_version(version: str) -> str:
    """``version`` when it is a Kubernetes MAJOR.MINOR[.PATCH] the schemas cover, else an
    ``InputError`` naming the range (call it on options before doing any work)."""
    first, last = kv_utils.all_versions()[0], kv_utils.latest_version()
    fix = f"(fix: give a version from {kv_utils.major_minor(first)} to " \
          f"{kv_utils.major_minor(last)}, e.g. --k8s-version 1.34)"
    if not re.fullmatch(r"v?\d{1,3}\.\d{1,3}(\.\d{1,4})?", version):
        raise InputError(f"--k8s-version {version!r}: not a Kubernetes version {fix}")
    try:
        schema_version(version.lstrip("v"))
    except ValueError:
        raise InputError(f"--k8s-version {version}: not covered by kubernetes-validate "
                         f"{last} {fix}") from None
    return version.lstrip("v")


def _schema_issues(file: str, o: dict[str, Any], version: str, crds: CrdIndex) -> list[Issue]:
    api, kind = str(o.get("apiVersion", "")), str(o.get("kind", ""))
    r = ref(o)
    validator = builtin_validator(version, api, kind)
    issues = []
    if validator is None:
        schema = crds.schema(api, kind)
        if schema is None:
            return [_unchecked(file, o, version, crds)]
        validator = Validator(schema)
    elif off_by_default(api):
        issues.append(_off_by_default(file, o, version))
    for e in sorted(validator.iter_errors(o), key=lambda e: list(map(str, e.absolute_path))):
        issues.append(Issue("error", file, r, field_path(e.absolute_path), e.message[:300]))
    return issues


def _unchecked(file: str, o: dict[str, Any], version: str, crds: CrdIndex) -> Issue:
    """Why an object has no schema: a version the server does not serve (an error: the API
    server refuses it), or a kind nobody here knows (a warning: the cluster may have it)."""
    api, kind, r = str(o["apiVersion"]), str(o["kind"]), ref(o)
    group = api.rpartition("/")[0]
    if (group, kind) in crds.unusable:
        return Issue("warning", file, r, "", f"no usable schema for {api} {kind}: the API "
                     f"server refuses its CustomResourceDefinition ({crds.unusable[group, kind]}"
                     "; the errors there), so it is not checked")
    served = crds.served_versions(group, kind) if crds.knows(api, kind) else \
        builtin_served(version, group, kind)
    if served is not None:
        where = "by the CRD" if crds.knows(api, kind) else f"by Kubernetes {version}"
        if not served:
            return Issue("error", file, r, "apiVersion",
                         f"{api} is not served {where}, and no version of {group} has a "
                         f"kind {kind} (fix: `kubectl api-resources --api-group={group}` "
                         "lists what it serves; rewrite the object for one of them)")
        to = f"{group}/{preferred(served)}" if group else preferred(served)
        return Issue("error", file, r, "apiVersion",
                     f"{api} is not served {where} (served: {', '.join(served)}) (fix: move "
                     f"to {to}, rewriting the fields that differ: `kubectl explain "
                     f"{kind.lower()} --api-version={to}`)")
    return Issue("warning", file, r, "", f"no schema for {api} {kind}: neither a built-in "
                 f"kind of Kubernetes {version} nor in aiplat's CRDs or --crd-dir")


def _off_by_default(file: str, o: dict[str, Any], version: str) -> Issue:
    """A built-in alpha or beta version: an error where the kind has a version a default API
    server serves (move to it), a warning where it has none (the cluster must enable it)."""
    api, kind = str(o["apiVersion"]), str(o["kind"])
    group = api.rpartition("/")[0]
    on = [v for v in builtin_served(version, group, kind) or []
          if not off_by_default(v)]
    enable = f"--runtime-config={api}=true"
    if not on:
        return Issue("warning", file, ref(o), "apiVersion",
                     f"{api} is served by Kubernetes {version} only where the cluster enables "
                     f"it (kube-apiserver {enable}); a default API server refuses it")
    to = f"{group}/{preferred(on)}" if group else preferred(on)
    return Issue("error", file, ref(o), "apiVersion",
                 f"{api} is not served by a default Kubernetes {version} API server (alpha "
                 f"and beta versions are off unless kube-apiserver has {enable}) (fix: move "
                 f"to {to}, rewriting the fields that differ: `kubectl explain "
                 f"{kind.lower()} --api-version={to}`)")


def _config_file(o: dict[str, Any]) -> bool:
    """A component's configuration file (Kueue's ``config.kueue.x-k8s.io`` Configuration,
    ``kubelet.config.k8s.io`` KubeletConfiguration, ...): read by the component from a file
    or ConfigMap, never created as an API object."""
    group = str(o.get("apiVersion", "")).rpartition("/")[0]
    return "config" in group.split(".") and str(o.get("kind", "")).endswith("Configuration")


def _config_issue(file: str, o: dict[str, Any]) -> Issue:
    return Issue("warning", file, ref(o), "", f"{o.get('apiVersion')} {o.get('kind')} is a "
                 "component's configuration file, not an API object (no name, no schema "
                 "here): `kubectl apply` refuses it, no such kind being served (fix: give it "
                 "to the component, for Kueue the controller_manager_config.yaml of the "
                 "kueue-manager-config ConfigMap, and keep it out of the manifests applied)")


def _walk_quantities(node: Any, path: str, out: list[tuple[str, Any]],
                     in_map: bool = False) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            p = f"{path}.{k}" if path else str(k)
            scalar = not isinstance(v, dict | list)
            if scalar and (in_map or k in QUANTITY_KEYS):
                out.append((p, v))
            else:
                _walk_quantities(v, p, out, in_map=k in QUANTITY_MAPS)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _walk_quantities(v, f"{path}[{i}]", out)


def _dra_requests(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(((spec.get("devices") or {}).get("requests")) or [])


# A v1beta1 request gives these itself; v1beta2 and v1 put them under ``exactly``
# (``pkg/apis/resource/v1beta1/conversion.go``: any of them set makes the request exact).
_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess")


def _exact(req: dict[str, Any], p: str, api: str) -> tuple[str, dict[str, Any]] | None:
    """(path, fields) of a request's exact part as its API version writes it; None without
    one."""
    if api == "resource.k8s.io/v1beta1":
        own = {k: req[k] for k in _EXACT_FIELDS if k in req}
        return (p, own) if own else None
    return (f"{p}.exactly", req["exactly"]) if "exactly" in req else None


def _one_of(api: str) -> str:
    if api == "resource.k8s.io/v1beta1":
        return ("give deviceClassName (with its selectors, allocationMode, count) or "
                "firstAvailable, not both and not neither (resource.k8s.io/v1beta1)")
    return "give exactly one of 'exactly' and 'firstAvailable'"


def _claim_spec_issues(file: str, r: str, spec: dict[str, Any], base: str,
                       api: str) -> list[Issue]:
    """A claim's requests and constraints as the API server checks them, each request read
    in the shape of ``api``'s version."""
    issues = []
    names = set()
    for i, req in enumerate(_dra_requests(spec)):
        p = f"{base}.devices.requests[{i}]"
        names.add(req.get("name"))
        exact, has_first = _exact(req, p, api), "firstAvailable" in req
        if (exact is not None) == has_first:
            issues.append(Issue("error", file, r, p, _one_of(api)))
        subs = [exact] if exact is not None else []
        if exact is not None and not exact[1].get("deviceClassName"):
            issues.append(Issue("error", file, r, f"{exact[0]}.deviceClassName",
                                "is required (the DeviceClass to allocate from)"))
        if has_first:
            subs += _first_available(file, r, p, req["firstAvailable"] or [], issues)
        for sp, sub in subs:
            issues += _subrequest_issues(file, r, sp, sub)
    for i, c in enumerate(((spec.get("devices") or {}).get("constraints")) or []):
        p = f"{base}.devices.constraints[{i}]"
        if ("matchAttribute" in c) == ("distinctAttribute" in c):
            issues.append(Issue("error", file, r, p,
                                "give exactly one of matchAttribute and distinctAttribute"))
        for name in c.get("requests") or []:
            if name.split("/")[0] not in names:
                issues.append(Issue("error", file, r, f"{p}.requests",
                                    f"names request {name!r} which the claim does not have"))
    return issues


def _first_available(file: str, r: str, p: str, first: list[dict[str, Any]],
                     issues: list[Issue]) -> list[tuple[str, dict[str, Any]]]:
    """The sub-requests of ``firstAvailable`` (1 to 8, unique names), problems into
    ``issues``."""
    if not 1 <= len(first) <= 8:
        issues.append(Issue("error", file, r, f"{p}.firstAvailable",
                            f"has {len(first)} sub-requests; allowed 1 to 8"))
    subs, seen = [], set()
    for j, sub in enumerate(first):
        if sub.get("name") in seen:
            issues.append(Issue("error", file, r, f"{p}.firstAvailable[{j}].name",
                                f"duplicate sub-request name {sub.get('name')!r}"))
        seen.add(sub.get("name"))
        subs.append((f"{p}.firstAvailable[{j}]", sub))
    return subs


def _subrequest_issues(file: str, r: str, sp: str, s: dict[str, Any]) -> list[Issue]:
    issues = []
    mode = s.get("allocationMode", "ExactCount")
    if mode not in ("ExactCount", "All"):
        issues.append(Issue("error", file, r, f"{sp}.allocationMode",
                            f"{mode!r} is not ExactCount or All"))
    count = s.get("count")
    if mode == "All" and count is not None:
        issues.append(Issue("error", file, r, f"{sp}.count",
                            "count is only allowed with allocationMode ExactCount"))
    if mode == "ExactCount" and count is not None and (not isinstance(count, int) or count < 1):
        issues.append(Issue("error", file, r, f"{sp}.count", "count must be ≥ 1"))
    for k, sel in enumerate(s.get("selectors") or []):
        expr = (sel.get("cel") or {}).get("expression", "")
        for problem in cel.check(expr):
            issues.append(Issue("error", file, r, f"{sp}.selectors[{k}].cel", problem))
    return issues


def _pod_specs(o: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(path, pod spec) of each pod an object makes: a Pod's, a workload's template, a
    JobSet's replicated Jobs' templates."""
    kind = o.get("kind")
    spec = o.get("spec") or {}
    group = str(o.get("apiVersion", "")).rpartition("/")[0]
    if schema_label(group) is None and kind != "JobSet":
        return []  # a custom group's Job (Volcano's) is not Kubernetes' Job
    if kind == "Pod":
        return [("spec", spec)]
    if kind in ("Job", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"):
        return [("spec.template.spec", ((spec.get("template") or {}).get("spec") or {}))]
    if kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        return [("spec.jobTemplate.spec.template.spec",
                 (job.get("template") or {}).get("spec") or {})]
    if kind == "JobSet" and str(o.get("apiVersion", "")).startswith("jobset.x-k8s.io/"):
        out = []
        for i, rj in enumerate(spec.get("replicatedJobs") or []):
            job = ((rj.get("template") or {}).get("spec") or {})
            pod = (job.get("template") or {}).get("spec")
            if isinstance(pod, dict):
                out.append((f"spec.replicatedJobs[{i}].template.spec.template.spec", pod))
        return out
    return []


def _rule_issues(file: str, o: dict[str, Any]) -> list[Issue]:
    r = ref(o)
    kind = o.get("kind", "")
    spec = o.get("spec") or {}
    issues = _name_issues(file, r, o)
    issues += _quantity_issues(file, r, o)
    dra = str(o.get("apiVersion", "")).startswith("resource.k8s.io/")
    if kind == "DeviceClass" and dra:
        for i, sel in enumerate(spec.get("selectors") or []):
            expr = (sel.get("cel") or {}).get("expression", "")
            for problem in cel.check(expr):
                issues.append(Issue("error", file, r, f"spec.selectors[{i}].cel", problem))
    elif kind == "ResourceClaim" and dra:
        issues += _claim_spec_issues(file, r, spec, "spec", o["apiVersion"])
    elif kind == "ResourceClaimTemplate" and dra:
        issues += _claim_spec_issues(file, r, spec.get("spec") or {}, "spec.spec",
                                     o["apiVersion"])
    for base, pod in _pod_specs(o):
        issues += _pod_claim_issues(file, r, base, pod)
    issues += [Issue("error", file, r, p, m) for p, m in webhooks.refusals(o)]
    return issues


def _name_issues(file: str, r: str, o: dict[str, Any]) -> list[Issue]:
    meta = o.get("metadata") or {}
    name, generate = str(meta.get("name") or ""), str(meta.get("generateName") or "")
    kind = str(o.get("kind", ""))
    issues = []
    if name or not generate:
        problem = _bad_name(kind, name, prefix=False)
        if problem:
            issues.append(Issue("error", file, r, "metadata.name", problem + (
                "" if name else " (fix: give metadata.name, or generateName for "
                "`kubectl create`)")))
    else:
        # The API server names it at create (generateName plus 5 random characters), after
        # checking the prefix as a name with its trailing '-' read as a letter
        # (ValidateObjectMeta, maskTrailingDash); kubectl apply needs the name first.
        problem = _bad_name(kind, generate[:-1] + "a" if generate.endswith("-") else generate,
                            prefix=True)
        if problem:
            issues.append(Issue("error", file, r, "metadata.generateName",
                                problem.replace(repr(generate[:-1] + "a"), repr(generate))))
        issues.append(Issue("warning", file, r, "metadata.name",
                            f"none: the API server names it from generateName {generate!r} "
                            "at create (`kubectl create -f`); `kubectl apply` refuses it "
                            "('cannot use generate name with apply')"))
    ns = meta.get("namespace")
    if ns is not None and not DNS_LABEL.match(str(ns)):
        issues.append(Issue("error", file, r, "metadata.namespace",
                            f"{ns!r} is not a DNS-1123 label"))
    return issues


def _bad_name(kind: str, name: str, *, prefix: bool) -> str | None:
    """Why ``name`` is not a name of ``kind`` (None when it is); a generateName ``prefix``
    may be cut to fit, so its length is not held against it."""
    if kind in PATH_SEGMENT_NAMED:
        if name in ("", ".", "..") or "/" in name or "%" in name:
            return f"{name!r} is not a valid name: not '.' or '..', no '/' or '%'"
        return None
    pattern, limit = (DNS_LABEL, 63) if kind in LABEL_NAMED else (DNS_SUBDOMAIN, 253)
    if pattern.match(name) and (prefix or len(name) <= limit):
        return None
    what = "label" if limit == 63 else "subdomain"
    return (f"{name!r} is not a DNS-1123 {what} (lowercase letters, digits, "
            f"'-'{'' if limit == 63 else ', .'}; at most {limit})")


def _quantity_issues(file: str, r: str, o: dict[str, Any]) -> list[Issue]:
    found: list[tuple[str, Any]] = []
    # Data, and a CRD's schema (properties named requests or limits): no quantities to read.
    if o.get("kind", "") not in ("ConfigMap", "Secret", "CustomResourceDefinition"):
        _walk_quantities(o.get("spec") or {}, "spec", found)
    issues = []
    for p, v in found:
        try:
            parse_quantity(v if isinstance(v, str | int | float) else str(v))
        except QuantityError as e:
            issues.append(Issue("error", file, r, p, str(e)))
    return issues


def _pod_claim_issues(file: str, r: str, base: str, ps: dict[str, Any]) -> list[Issue]:
    """A pod's resource claims: each names one source, and containers use declared ones."""
    issues = []
    claims = {c.get("name"): c for c in ps.get("resourceClaims") or []}
    for i, c in enumerate(ps.get("resourceClaims") or []):
        if ("resourceClaimName" in c) == ("resourceClaimTemplateName" in c):
            issues.append(Issue("error", file, r, f"{base}.resourceClaims[{i}]",
                                "give exactly one of resourceClaimName and "
                                "resourceClaimTemplateName"))
    for cont in (ps.get("containers") or []) + (ps.get("initContainers") or []):
        for c in ((cont.get("resources") or {}).get("claims")) or []:
            if c.get("name") not in claims:
                issues.append(Issue("error", file, r, f"{base}.containers",
                                    f"container {cont.get('name')!r} uses claim "
                                    f"{c.get('name')!r} which the pod does not declare"))
    return issues


def object_id(o: dict[str, Any]) -> tuple[str, str, str, str]:
    """(API group, kind, namespace, name): what the API server stores one object under. The
    version is not part of it (autoscaling/v1 and v2 are one HorizontalPodAutoscaler); a
    namespace set on a cluster-scoped kind of Kubernetes' is dropped by the API server."""
    group = str(o.get("apiVersion", "")).rpartition("/")[0]
    kind = str(o.get("kind", ""))
    meta = o.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    ns = "" if (group, kind) in CLUSTER_SCOPED else str(meta.get("namespace") or "")
    return group, kind, ns, str(meta.get("name") or "")


def duplicates(objects: list[Any]) -> list[list[int]]:
    """The positions in ``objects`` of each object defined more than once (``object_id``),
    in order; objects without a kind or a name are left to the schema checks."""
    seen: dict[tuple[str, str, str, str], list[int]] = {}
    for i, o in enumerate(objects):
        if isinstance(o, dict) and o.get("kind"):
            key = object_id(o)
            if key[3]:
                seen.setdefault(key, []).append(i)
    return [found for found in seen.values() if len(found) > 1]


def places(files: list[str], positions: list[int]) -> list[str]:
    """Where the objects at ``positions`` are: ``FILE`` (``FILE (object N)`` when the file
    holds more than one), or ``object N of the tree`` without file names."""
    out = []
    for i in positions:
        file = files[i] if i < len(files) else ""
        if not file:
            out.append(f"object {i + 1} of the tree")
            continue
        same = [j for j, f in enumerate(files) if f == file]
        out.append(f"{file} (object {same.index(i) + 1})" if len(same) > 1 else file)
    return out


def _duplicate_issues(items: list[tuple[str, Any]]) -> list[Issue]:
    files = [f for f, _o in items]
    issues = []
    for found in duplicates([o for _f, o in items]):
        last = found[-1]
        where = places(files, found)
        issues.append(Issue(
            "error", files[last], ref(items[last][1]), "",
            f"defined {len(found)} times in the tree (here, {where[-1]}, and in "
            f"{', '.join(where[:-1])}): one object to the API server, whatever the version; "
            "`kubectl apply -f` applies each in turn and the cluster keeps the last, "
            "kustomize refuses the tree ('may not add resource with an already registered "
            "id') (fix: keep one)"))
    return issues


def validate_objects(items: list[tuple[str, dict[str, Any]]], version: str,
                     crds: CrdIndex, *, packaged: bool = True) -> ValidationResult:
    """Validate (file, object) pairs for Kubernetes ``version`` (e.g. '1.34') against the
    built-in schemas and ``crds`` over aiplat's packaged CRDs (``packaged=False``: ``crds``
    alone), with the CRDs the tree itself defines on top (the cluster gets those too)."""
    schema_version(version)
    if packaged:
        crds = packaged_crds().overlay(crds)
    own, issues = _tree_crds(items)
    crds = crds.overlay(own)
    said = {(i.file, i.ref, i.path) for i in issues}  # a refused CRD's fields, said once
    for file, o in items:
        if isinstance(o, dict) and _config_file(o):
            issues.append(_config_issue(file, o))
            continue
        if not isinstance(o, dict) or o.get("apiVersion") is None or o.get("kind") is None:
            # kind: null is no kind (the API server drops nulls): "Object 'Kind' is missing".
            issues.append(Issue("error", file, "?", "", "not a Kubernetes object "
                                "(apiVersion and kind are required)"))
            continue
        issues += [i for i in _object_issues(file, o, version, crds)
                   if (i.file, i.ref, i.path) not in said]
    issues += _duplicate_issues(items)
    return ValidationResult(version=version, objects=len(items), issues=issues)


def _tree_crds(items: list[tuple[str, Any]]) -> tuple[CrdIndex, list[Issue]]:
    """The index of the CRDs among ``items``; one the API server refuses (a schema that is
    not structural, a pattern Go refuses, a default its field refuses, a shape no CRD has)
    is an error here, each problem at its field, and its kinds have no usable schema."""
    index, issues = CrdIndex(), []
    for file, o in items:
        if not (isinstance(o, dict) and o.get("kind") == "CustomResourceDefinition"
                and str(o.get("apiVersion", "")).startswith("apiextensions.k8s.io/")):
            continue
        found = crd_problems(o)
        if found:
            issues += [Issue("error", file, ref(o), p.path, f"{p.message} {SCHEMA_FIX}")
                       for p in found]
            index = index.overlay(unusable_index(file, o))
            continue
        try:
            index = index.overlay(index_crds([(file, o)]))
        except InputError as e:
            issues.append(Issue("error", file, ref(o), "", str(e).removeprefix(f"{file}: ")))
    return index, issues


def _object_issues(file: str, o: dict[str, Any], version: str, crds: CrdIndex) -> list[Issue]:
    """One object's issues, read as the API server reads it: nulls dropped, then the
    defaults of its CRD and of the webhooks set (``defaults.server_defaults``)."""
    nulls = _null_issues(file, o, version, crds)
    o = stored(o, crds)
    found = _schema_issues(file, o, version, crds) + nulls
    # Fields of the wrong type the schema check cannot see (an unknown API version, a
    # custom resource's metadata), and no rule on an object that has any: rules read it.
    misshapen = problems(o, version, crds)
    # A missing field the schema check said at its parent ("'x' is a required property")
    # is not said again at the field.
    seen = {i.path for i in found} | {
        f"{i.path}.{m.group(1)}".lstrip(".") for i in found
        if (m := _REQUIRED.fullmatch(i.message))}
    found += [Issue("error", file, ref(o), p, m) for p, m in misshapen if p not in seen]
    if misshapen:
        return found
    foreign = _foreign_shape(o, version, crds)
    if foreign:
        return [*found, Issue("warning", file, ref(o), foreign[0][0], foreign[1])]
    found += _template_issues(file, o, version, {i.path for i in found})
    return found + _rule_issues(file, o)


_REQUIRED = re.compile(r"'([^']+)' is a required property")
_TYPE_NAMES = {"object": "an object", "array": "a list", "string": "a string",
               "integer": "an integer", "number": "a number", "boolean": "true or false"}


def _null_issues(file: str, o: dict[str, Any], version: str, crds: CrdIndex) -> list[Issue]:
    """The nulls of a custom resource that the API server refuses, by how it is sent.
    Server-side apply (``aiplat kube apply``, ``kubectl apply --server-side``) validates
    them as they are (``defaults.as_applied``): a null where the CRD's schema gives a type
    (object, array, string, int-or-string, ...) and not ``nullable: true`` is refused,
    unless the field has a default (which takes its place). A create (``kubectl apply`` or
    ``kubectl create`` of a new object) first deletes such a null when it is a map value
    (``defaults.as_created``), so only its null list items are refused. Refused either way
    is an error; refused by server-side apply alone, a warning (the file applies with
    ``kubectl apply``). A null field the schema does not declare is an unknown field, which
    both refuse (kubectl validates strictly by default). The schema check proper reads the
    object without nulls (``defaults.stored``), so each null is said here, once."""
    if builtin_validator(version, str(o.get("apiVersion", "")), str(o.get("kind", ""))):
        return []
    schema = crds.schema(str(o.get("apiVersion", "")), str(o.get("kind", "")))
    if schema is None or not _has_null(o):
        return []
    validator = Validator(schema)
    created = {field_path(e.absolute_path) for e in validator.iter_errors(as_created(o, schema))
               if _refused_null(e)}
    issues: dict[str, Issue] = {}
    for e in validator.iter_errors(as_applied(o, schema)):
        path = field_path(e.absolute_path)
        if path in issues:
            continue
        if _refused_null(e):
            issues[path] = Issue("error" if path in created else "warning", file, ref(o),
                                 path, _null_message(e.schema, created=path in created))
        elif e.validator == "additionalProperties" and isinstance(e.instance, dict):
            declared = e.schema.get("properties") or {}
            for k, v in e.instance.items():
                at = f"{path}.{k}" if path else str(k)
                if v is None and k not in declared and at not in issues:
                    issues[at] = Issue("error", file, ref(o), at, (
                        "null in a field the schema does not declare: the API server "
                        "refuses it as an unknown field (server-side apply: 'field not "
                        "declared in schema') (fix: remove the key)"))
    return list(issues.values())


def _refused_null(e: Any) -> bool:
    """A schema error that is a null where the field wants a value."""
    return e.instance is None and e.validator in (
        "type", "x-kubernetes-int-or-string", "anyOf") and e.schema.get("nullable") is not True


def _has_null(node: Any) -> bool:
    if isinstance(node, dict):
        return any(v is None or _has_null(v) for v in node.values())
    if isinstance(node, list):
        return any(v is None or _has_null(v) for v in node)
    return False


def _null_message(schema: dict[str, Any], *, created: bool) -> str:
    t = schema.get("type")
    wanted = "an integer or a string" if schema.get("x-kubernetes-int-or-string") \
        else _TYPE_NAMES.get(t, f"type {t}") if isinstance(t, str) else "a value"
    how = ("the API server refuses it however it is sent (a list keeps its null items)"
           if created else
           "server-side apply (aiplat kube apply, kubectl apply --server-side) refuses it; "
           "kubectl apply and kubectl create of a new object delete the null first")
    return (f"null where the schema wants {wanted} and the field is not nullable: {how} "
            "(fix: remove the key or give a value)")


def _foreign_shape(o: dict[str, Any], version: str,
                   crds: CrdIndex) -> tuple[tuple[str, str], str] | None:
    """Where a custom resource of a kind aiplat packages (Kueue's, JobSet's: the kinds its
    rules read) is not that CRD's shape although the tree's own CRD for it let it pass:
    the rules, written for the packaged shape, are not run (unknown, not a crash)."""
    api, kind = str(o.get("apiVersion", "")), str(o.get("kind", ""))
    packaged = packaged_crds()
    if not packaged.knows(api, kind) or crds.schema(api, kind) is packaged.schema(api, kind):
        return None
    found = problems(o, version, packaged)
    if not found:
        return None
    group = api.rpartition("/")[0]
    return found[0], (f"aiplat's checks of {kind} not run (unknown): by aiplat's {group} "
                      f"CRD, the shape they read, {found[0][0] or 'the object'} "
                      f"{found[0][1]}; this tree's CustomResourceDefinition lets it pass")


def _template_issues(file: str, o: dict[str, Any], version: str,
                     seen: set[str]) -> list[Issue]:
    """A custom resource's pod templates (a JobSet's) against Kubernetes ``version``'s
    PodSpec, as a Job's is: the CRD embeds the PodSpec of the release it was built with."""
    if builtin_validator(version, str(o.get("apiVersion", "")), str(o.get("kind", ""))):
        return []
    pod_spec = definition_validator(version, "io.k8s.api.core.v1.PodSpec")
    issues = []
    for base, spec in _pod_specs(o):
        for e in pod_spec.iter_errors(spec):
            path = f"{base}.{field_path(e.absolute_path)}".rstrip(".")
            if path not in seen:
                issues.append(Issue("error", file, ref(o), path,
                                    f"{e.message[:300]} (Kubernetes {version}'s PodSpec)"))
    return issues
