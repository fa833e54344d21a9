"""The readers lint rules share: label selectors, quantities, a ClusterQueue's flavors and
cohort, a workload's pod specs and templates, its pool pin, DRA claims, Kueue's
Configuration, the tenants. Each reads objects as the API server or Kueue would; none is a
rule. Built on ``aiplat.kube.lint.base``; imports no rule module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from aiplat import inputs
from aiplat.errors import InputError
from aiplat.kube.facts import POOL_LABEL, TENANT_LABEL
from aiplat.kube.kueue_releases import release
from aiplat.kube.lint.base import Context, Obj, name, namespace
from aiplat.kube.quantity import QuantityError, parse_quantity
from aiplat.kube.shape import value_problems

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_NS = "kueue-system"
CONFIG_GROUP = "config.kueue.x-k8s.io/"
CONFIG_KEY = "controller_manager_config.yaml"
_STRINGS = {"type": "array", "items": {"type": "string"}}
LABEL_SELECTOR = {"type": "object", "properties": {
    "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
    "matchExpressions": {"type": "array", "items": {"type": "object", "properties": {
        "key": {"type": "string"}, "operator": {"type": "string"}, "values": _STRINGS}}}}}
# The fields of Kueue's Configuration (apis/config/v1beta2) lint reads, with their types:
# Kueue decodes it strictly and does not start on a wrong one.
KUEUE_CONFIGURATION = {"type": "object", "properties": {
    "namespace": {"type": "string"},
    "manageJobsWithoutQueueName": {"type": "boolean"},
    "managedJobsNamespaceSelector": LABEL_SELECTOR,
    "integrations": {"type": "object", "properties": {"frameworks": _STRINGS}},
    "resources": {"type": "object", "properties": {"deviceClassMappings": {
        "type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "deviceClassNames": _STRINGS}}}}}}}


def quantity(v: Any) -> Decimal:
    """A Kubernetes quantity as a Decimal; 0 for one that does not parse."""
    try:
        return parse_quantity(v)
    except QuantityError:
        return Decimal(0)


def selector_matches(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """Kubernetes LabelSelector semantics (None selects nothing, {} selects everything)."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


# --------------------------------------------------------------------------- Kueue queues


def flavor_resources(cq: Obj) -> Iterable[tuple[str, Obj]]:
    """(flavor name, resource quota) of every resource of a ClusterQueue's flavors."""
    for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
        for fl in rg.get("flavors") or []:
            for r in fl.get("resources") or []:
                yield fl.get("name", ""), r


def cohort_of(cq: Obj) -> str | None:
    spec = cq.get("spec") or {}
    c = spec.get("cohortName") or spec.get("cohort")
    return str(c) if c else None


def cohort_root(cohort: str, cohorts: list[Obj]) -> str:
    """The root of a cohort's tree (Cohort ``spec.parentName`` links; cycles stop)."""
    parents = {name(c): (c.get("spec") or {}).get("parentName") for c in cohorts}
    seen = {cohort}
    while parents.get(cohort) and parents[cohort] not in seen:
        cohort = str(parents[cohort])
        seen.add(cohort)
    return cohort


@dataclass(frozen=True)
class KueueConfig:
    """Kueue's Configuration as the tree gives it, or as the target release ships it."""

    doc: Obj | None  # None when the tree's cannot be decoded (``problems`` say why)
    problems: list[str]
    subject: str  # what findings about it name
    assumed: str = ""  # not from the tree: whose configuration stands in, and from where


def kueue_config(ctx: Context) -> KueueConfig:
    """The tree's Kueue Configuration in any of its three forms (a Configuration document, a
    ConfigMap's ``controller_manager_config.yaml``, Helm values' ``managerConfig.
    controllerManagerConfigYaml``), else the one the target Kueue release installs."""
    if "kueue_config" not in ctx.cache:
        ctx.cache["kueue_config"] = _kueue_config(ctx)
    return ctx.cache["kueue_config"]  # type: ignore[no-any-return]


def kueue_configuration(ctx: Context) -> Obj | None:
    """The Configuration rules read (the tree's or the release's); None when the tree's
    cannot be decoded (``kueue_config(ctx).problems`` say why)."""
    return kueue_config(ctx).doc


def _kueue_config(ctx: Context) -> KueueConfig:
    for o in ctx.objects:
        if o.get("kind") == "Configuration" and str(o.get("apiVersion", "")).startswith(
                CONFIG_GROUP):
            problems = _problems(o)
            return KueueConfig(None if problems else o, problems,
                               f"Configuration ({_file(ctx, o)})")
    for cm in ctx.kind("ConfigMap"):
        text = (cm.get("data") or {}).get(CONFIG_KEY)
        if isinstance(text, str):
            return _decoded(text, f"ConfigMap/{namespace(cm) or KUEUE_NS}/{name(cm)}")
    for file, values in ctx.helm_values:
        return _decoded(values["managerConfig"]["controllerManagerConfigYaml"],
                        f"Helm values ({file or 'managerConfig'})")
    shipped, note = release(ctx.kueue_version)
    return KueueConfig(shipped.configuration(), [], f"Kueue {shipped.tag}",
                       shipped.source + (f" ({note})" if note else ""))


def helm_values(o: Obj) -> bool:
    """Values of Kueue's Helm chart (no kind; its Configuration as text)."""
    text = (o.get("managerConfig") or {}).get("controllerManagerConfigYaml") \
        if isinstance(o.get("managerConfig"), dict) else None
    return "kind" not in o and isinstance(text, str)


def _decoded(text: str, subject: str) -> KueueConfig:
    try:  # the bounded reader: this text came with the file (aliases, depth)
        docs = inputs.parse_yaml_all(text, subject, "Kueue's Configuration")
    except InputError as e:
        return KueueConfig(None, [f"it is not YAML Kueue can read ({e})"], subject)
    doc = docs[0] if docs else None
    if not isinstance(doc, dict):
        return KueueConfig(None, ["it is not a mapping"], subject)
    problems = _problems(doc)
    return KueueConfig(None if problems else doc, problems, subject)


def _problems(doc: Obj) -> list[str]:
    return [f"{p} {m}" for p, m in value_problems(doc, KUEUE_CONFIGURATION)]


def _file(ctx: Context, o: Obj) -> str:
    return next((f for f, x in zip(ctx.files, ctx.objects, strict=False) if x is o and f),
                "the tree")


def transformations(ctx: Context) -> dict[str, Obj]:
    """Kueue's resource transformations (``resources.transformations``) by input resource."""
    res = (kueue_configuration(ctx) or {}).get("resources") or {}
    return {str(t.get("input")): t for t in res.get("transformations") or []
            if isinstance(t, dict)}


def transformed(requests: Mapping[str, Decimal], transforms: Mapping[str, Obj]
                ) -> dict[str, Decimal]:
    """One pod's requests as Kueue charges them to quota: each transformed input gives its
    outputs (times ``multiplyBy``'s quantity when set), kept too unless the strategy is
    Replace; negative totals count as 0 (pkg/workload applyResourceTransformations)."""
    kept: dict[str, Decimal] = {}
    made: dict[str, Decimal] = {}
    for res, q in requests.items():
        t = transforms.get(res)
        if t is None:
            kept[res] = kept.get(res, Decimal(0)) + q
            continue
        base = q * requests[t["multiplyBy"]] if t.get("multiplyBy") in requests else q
        for out, factor in (t.get("outputs") or {}).items():
            made[out] = made.get(out, Decimal(0)) + base * quantity(factor)
        if t.get("strategy", "Retain") == "Retain":
            kept[res] = kept.get(res, Decimal(0)) + q
    for res, q in made.items():
        kept[res] = kept.get(res, Decimal(0)) + max(q, Decimal(0))
    return kept


def node_resources(ctx: Context) -> set[str]:
    """What some pool's nodes publish; empty when the inventory has no pools (unknown)."""
    return {r for p in ctx.inventory.pools for r in p.capacity}


def tolerates(tolerations: list[Obj], taint: Mapping[str, Any]) -> bool:
    """A toleration matches the taint as the API's ToleratesTaint decides: its effect empty
    or the taint's, its key empty or the taint's, Exists, or Equal (the default) with the
    taint's value."""
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("key") and t.get("key") != taint.get("key"):
            continue
        if t.get("operator") == "Exists" or (
                t.get("key") and str(t.get("value") or "") == str(taint.get("value") or "")):
            return True
    return False


# --------------------------------------------------------------------------- workloads

MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"


def job_pods(spec: Obj) -> int:
    """A Job's pods running at once: parallelism (1), no more than its completions."""
    n = int(spec.get("parallelism", 1))
    return min(n, int(spec["completions"])) if spec.get("completions") is not None else n


def min_parallelism(o: Obj) -> int | None:
    """A Job's ``job-min-parallelism`` annotation as Kueue reads it (an integer), else None."""
    v = ((o.get("metadata") or {}).get("annotations") or {}).get(MIN_PARALLELISM)
    try:
        return int(str(v)) if v is not None else None
    except ValueError:
        return None


_POD_KINDS = {"Pod": ("spec",), "Job": ("spec", "template", "spec"),
              "Deployment": ("spec", "template", "spec"),
              "StatefulSet": ("spec", "template", "spec"),
              "DaemonSet": ("spec", "template", "spec"),
              "JobSet": ("spec", "replicatedJobs", 0, "template", "spec", "template", "spec")}


def pod_specs(o: Obj) -> list[Obj]:
    """The pod specs of a Pod or a workload's templates (a JobSet's, one per replicated
    Job; a LeaderWorkerSet's leader and worker)."""
    if o.get("kind") == "LeaderWorkerSet":  # a leader's pod and its workers'
        return [t.get("spec") or {} for t in pod_templates(o)]
    path = _POD_KINDS.get(str(o.get("kind")))
    if path is None:
        return []
    if o.get("kind") == "JobSet":
        return [((((rj.get("template") or {}).get("spec") or {}).get("template") or {})
                 .get("spec") or {}) for rj in (o.get("spec") or {}).get("replicatedJobs") or []]
    node: Any = o
    for step in path:
        node = (node or {}).get(step) if isinstance(step, str) else node
    return [node or {}]


def pod_templates(o: Obj) -> list[Obj]:
    """Pod templates (with metadata) of a workload object."""
    spec = o.get("spec") or {}
    if o.get("kind") == "JobSet":
        return [((r.get("template") or {}).get("spec") or {}).get("template") or {}
                for r in spec.get("replicatedJobs") or []]
    if o.get("kind") in ("Job", "Deployment", "StatefulSet", "DaemonSet"):
        return [spec.get("template") or {}]
    if o.get("kind") == "LeaderWorkerSet":  # no leaderTemplate: the leader is a worker
        lwt = spec.get("leaderWorkerTemplate") or {}
        return [t for t in (lwt.get("leaderTemplate"), lwt.get("workerTemplate")) if t]
    return []


def pool_of(spec: Obj) -> str | None:
    """The pool a pod spec is pinned to (nodeSelector or required node affinity on
    ``aiplat.io/pool``)."""
    sel = (spec.get("nodeSelector") or {}).get(POOL_LABEL)
    if sel:
        return str(sel)
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
    for t in terms:
        for e in t.get("matchExpressions") or []:
            if e.get("key") == POOL_LABEL and e.get("operator") == "In" and e.get("values"):
                return str(e["values"][0])
    return None


# --------------------------------------------------------------------------- DRA claims


def claim_requests(template: Obj) -> list[Obj]:
    """The device requests of a ResourceClaimTemplate."""
    spec = ((template.get("spec") or {}).get("spec") or {})
    return list((spec.get("devices") or {}).get("requests") or [])


def device_subrequests(req: Obj) -> list[Obj]:
    """What a device request asks for, in each served form: v1/v1beta2 ``exactly`` or
    ``firstAvailable``; v1beta1 has ``deviceClassName``, ``allocationMode`` and ``count`` on
    the request itself."""
    if "exactly" in req:
        return [req["exactly"] or {}]
    if "firstAvailable" in req:
        return list(req.get("firstAvailable") or [])
    return [req] if "deviceClassName" in req else []


def claim_counts(ctx: Context, o: Obj, spec: Obj) -> Iterable[tuple[str, str, int]]:
    """(template, DeviceClass, devices) of each ExactCount request a pod's claims make."""
    templates = {name(t): t for t in ctx.kind("ResourceClaimTemplate")
                 if namespace(t) == namespace(o)}
    for rc in spec.get("resourceClaims") or []:
        t = templates.get(rc.get("resourceClaimTemplateName", ""))
        if t is None:
            continue
        for req in claim_requests(t):
            if "firstAvailable" in req:
                continue
            for ex in device_subrequests(req):
                if ex.get("deviceClassName") and ex.get("allocationMode", "ExactCount") == \
                        "ExactCount":
                    yield name(t), ex["deviceClassName"], int(ex.get("count", 1))


# --------------------------------------------------------------------------- tenants


def aiplat_tenants(ctx: Context) -> set[str]:
    """Namespaces labelled ``aiplat.io/tenant``: the spec's tenants, whose fences it asks for."""
    return {name(n) for n in ctx.kind("Namespace")
            if TENANT_LABEL in ((n.get("metadata") or {}).get("labels") or {})}


def tenants(ctx: Context) -> set[str]:
    """The tenant namespaces: labelled ``aiplat.io/tenant``, or holding a LocalQueue."""
    return aiplat_tenants(ctx) | {namespace(lq) for lq in ctx.kind("LocalQueue")}
