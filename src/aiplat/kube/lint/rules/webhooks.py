"""Lint rules for what Kueue's admission webhooks refuse on apply (Kueue v0.19.2): the
object is never created, ``kubectl apply`` fails with the webhook's field error. Each class,
with its source; the full list of the webhooks' refusals and the rule covering each (or why
lint cannot see it) is in docs/lint-classes.md ("Kueue's admission webhooks"):

  kueue-queue-webhook  a ClusterQueue, Cohort, ResourceFlavor or Workload the webhooks of
                       pkg/webhooks refuse: a covered resource or a flavor twice in the
                       resource groups, a flavor's resources not in coveredResources' order,
                       a negative quota, a lendingLimit above nominalQuota,
                       reclaimWithinCohort Never with a borrowWithinCohort policy, an
                       admission check's onFlavors naming a flavor the queue lacks (a
                       ClusterQueue), an invalid namespaceSelector, a flavorFungibility
                       preference without TryNextFlavor on both, a fair-sharing weight, the
                       256/512 limits; a Cohort's limits without parentName; nodeLabels,
                       taints or toleration keys that are no labels, a nodeTaint twice by key
                       and effect (a ResourceFlavor); minCount on more than one podSet, the
                       pods resource or a negative request (a Workload).
  kueue-job-webhook    a queued job the job webhooks refuse on create: a queue-name that is
                       no DNS-1123 subdomain, a max-exec-time-seconds label that is no
                       positive integer (pkg/controller/jobframework/validation.go), a
                       job-min-parallelism that is no integer between 1 and the pods less
                       one (pkg/controller/jobs/job/job_webhook.go), a pod template with
                       more than one of the required/preferred/unconstrained topology
                       annotations (pkg/controller/jobframework/tas_validation.go).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal

from aiplat.findings import Finding
from aiplat.kube.lint.base import Context, Obj, finding, rule
from aiplat.kube.lint.objects import (
    MIN_PARALLELISM,
    QUEUE_LABEL,
    cohort_of,
    job_pods,
    pod_templates,
    quantity,
)
from aiplat.kube.validate import ref

MAX_EXEC = "kueue.x-k8s.io/max-exec-time-seconds"
TOPOLOGY = ("kueue.x-k8s.io/podset-required-topology",
            "kueue.x-k8s.io/podset-preferred-topology",
            "kueue.x-k8s.io/podset-unconstrained-topology")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_VALUE = re.compile(r"(" + _NAME + r")?")
_MAX_FLAVORS, _MAX_COVERED, _MAX_COMBINATIONS = 256, 256, 512
_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist"}
_REFUSED = ": Kueue's webhook refuses it, `kubectl apply` fails and the object is not created"


def qualified(name: str) -> bool:
    """A qualified name (a label key, a resource name): [prefix/]name, the prefix a DNS-1123
    subdomain, the name 63 characters of alphanumerics, '-', '_', '.'."""
    prefix, _, rest = name.rpartition("/")
    return bool(re.fullmatch(_NAME, rest)) and (
        not prefix or (len(prefix) <= 253 and bool(_SUBDOMAIN.fullmatch(prefix))))


def _labels(labels: Obj, path: str) -> Iterable[str]:
    """ValidateLabels: qualified keys, values of 63 alphanumerics, '-', '_', '.'."""
    for k, v in labels.items():
        if not qualified(str(k)):
            yield f'{path}: Invalid value: "{k}": name part must consist of alphanumeric ' \
                  "characters, '-', '_' or '.'"
        if not _VALUE.fullmatch(str(v)):
            yield f'{path}: Invalid value: "{v}": a valid label must be an empty string or ' \
                  "consist of alphanumeric characters, '-', '_' or '.'"


def _selector(sel: Obj | None, path: str) -> Iterable[str]:
    """ValidateLabelSelector: known operators, values for In/NotIn only, valid labels."""
    yield from _labels((sel or {}).get("matchLabels") or {}, f"{path}.matchLabels")
    for i, e in enumerate((sel or {}).get("matchExpressions") or []):
        epath, op = f"{path}.matchExpressions[{i}]", e.get("operator")
        if op not in _OPERATORS:
            yield f'{epath}.operator: Invalid value: "{op}": not a valid selector operator'
        elif op in ("In", "NotIn") and not e.get("values"):
            yield f"{epath}.values: Required value: must be specified when `operator` is " \
                  "'In' or 'NotIn'"
        elif op in ("Exists", "DoesNotExist") and e.get("values"):
            yield f"{epath}.values: Forbidden: may not be specified when `operator` is " \
                  "'Exists' or 'DoesNotExist'"
        if not qualified(str(e.get("key", ""))):
            yield f'{epath}.key: Invalid value: "{e.get("key")}": not a qualified name'


def _counts(groups: list[Obj]) -> Iterable[str]:
    flavors = sum(len(rg.get("flavors") or []) for rg in groups)
    covered = sum(len(rg.get("coveredResources") or []) for rg in groups)
    if flavors > _MAX_FLAVORS:
        yield (f"spec.resourceGroups: Invalid value: {flavors}: total number of flavors "
               f"across all resourceGroups must be ≤ {_MAX_FLAVORS}")
    if covered > _MAX_COVERED:
        yield (f"spec.resourceGroups: Invalid value: {covered}: total number of covered "
               f"resources across all resourceGroups must be ≤ {_MAX_COVERED}")
    for i, rg in enumerate(groups):
        n = sum(len(fl.get("resources") or []) for fl in rg.get("flavors") or [])
        if n > _MAX_COMBINATIONS:
            yield (f"spec.resourceGroups[{i}]: Invalid value: {n}: number of flavor-resource "
                   f"combinations in a resourceGroup must be ≤ {_MAX_COMBINATIONS}")


def _weight(spec: Obj) -> Iterable[str]:
    w = (spec.get("fairSharing") or {}).get("weight")
    if w is not None and quantity(w) < 0:
        yield f'spec.fairSharing: Invalid value: "{w}": must be greater than or equal to 0'
    elif w is not None and 0 < quantity(w) <= Decimal("1e-9"):
        yield f'spec.fairSharing: Invalid value: "{w}": When not 0, weight must be > 10e-9'


def _resource_groups(groups: list[Obj], has_parent: bool,
                     lending_le_nominal: bool) -> Iterable[str]:
    """validateResourceGroups (pkg/webhooks/clusterqueue_webhook.go), for a ClusterQueue or
    a Cohort; a ClusterQueue's limits without a cohort are quota-without-cohort's."""
    seen_res: set[str] = set()
    seen_fl: set[str] = set()
    yield from _counts(groups)
    for i, rg in enumerate(groups):
        path = f"spec.resourceGroups[{i}]"
        covered = [str(r) for r in rg.get("coveredResources") or []]
        for j, res in enumerate(covered):
            if not qualified(res):
                yield f'{path}.coveredResources[{j}]: Invalid value: "{res}": not a ' \
                      "qualified name"
            if res in seen_res:
                yield f'{path}.coveredResources[{j}]: Duplicate value: "{res}"'
            seen_res.add(res)
        for j, fl in enumerate(rg.get("flavors") or []):
            fpath = f"{path}.flavors[{j}]"
            if fl.get("name") in seen_fl:
                yield f'{fpath}.name: Duplicate value: "{fl.get("name")}"'
            seen_fl.add(str(fl.get("name")))
            for k, r in enumerate((fl.get("resources") or [])[:len(covered)]):
                rpath = f"{fpath}.resources[{k}]"
                if r.get("name") != covered[k]:
                    yield (f'{rpath}.name: Invalid value: "{r.get("name")}": must match the '
                           "name in coveredResources")
                for lim in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                    if lim in r and quantity(r[lim]) < 0:
                        yield (f'{rpath}.{lim}: Invalid value: "{r[lim]}": must be greater '
                               "than or equal to 0")
                for lim in ("borrowingLimit", "lendingLimit"):
                    if lim in r and not has_parent and not lending_le_nominal:
                        yield (f'{rpath}.{lim}: Invalid value: "{r[lim]}": must be nil when '
                               "parent is empty")
                if lending_le_nominal and has_parent and "lendingLimit" in r and quantity(
                        r["lendingLimit"]) > quantity(r.get("nominalQuota", 0)):
                    yield (f'{rpath}.lendingLimit: Invalid value: "{r["lendingLimit"]}": must '
                           "be less than or equal to the nominalQuota")


def _clusterqueue(cq: Obj) -> Iterable[str]:
    spec = cq.get("spec") or {}
    groups = spec.get("resourceGroups") or []
    yield from _resource_groups(groups, bool(cohort_of(cq)), True)
    yield from _selector(spec.get("namespaceSelector"), "spec.namespaceSelector")
    yield from _weight(spec)
    pre = spec.get("preemption") or {}
    if pre.get("reclaimWithinCohort") == "Never" and (pre.get("borrowWithinCohort") or {}).get(
            "policy", "Never") != "Never":
        yield ("spec.preemption: Invalid value: reclaimWithinCohort=Never and "
               "borrowWithinCohort.Policy!=Never")
    fung = spec.get("flavorFungibility") or {}
    # The CRD defaults whenCanBorrow to MayStopSearch, whenCanPreempt to TryNextFlavor.
    if "preference" in fung and (fung.get("whenCanBorrow", "MayStopSearch"), fung.get(
            "whenCanPreempt", "TryNextFlavor")) != ("TryNextFlavor", "TryNextFlavor"):
        yield (f'spec.flavorFungibility.preference: Invalid value: "{fung["preference"]}": '
               "requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor")
    flavors = {str(fl.get("name")) for rg in groups for fl in rg.get("flavors") or []}
    checks = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    for i, c in enumerate(checks):
        for j, fl in enumerate(c.get("onFlavors") or []):
            if fl not in flavors:
                yield (f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]: "
                       f'Unsupported value: "{fl}": supported values: {sorted(flavors)}')


def _resourceflavor(fl: Obj) -> Iterable[str]:
    spec = fl.get("spec") or {}
    yield from _labels(spec.get("nodeLabels") or {}, "spec.nodeLabels")
    for i, t in enumerate(spec.get("tolerations") or []):
        if t.get("key") and not qualified(str(t["key"])):
            yield f'spec.tolerations[{i}].key: Invalid value: "{t["key"]}": not a qualified name'
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(spec.get("nodeTaints") or []):
        yield from _labels({t.get("key", ""): t.get("value", "")}, f"spec.nodeTaints[{i}]")
        key = (str(t.get("key")), str(t.get("effect")))
        if key in seen:
            yield (f"spec.nodeTaints[{i}]: Duplicate value: {t.get('key')}:{t.get('effect')}: "
                   "taints must be unique by key and effect pair")
        seen.add(key)


def _workload(wl: Obj) -> Iterable[str]:
    pod_sets = (wl.get("spec") or {}).get("podSets") or []
    variable = sum("minCount" in ps for ps in pod_sets)
    if variable > 1:
        yield (f"spec.podSets: Invalid value: {variable}: at most one podSet can use minCount")
    for i, ps in enumerate(pod_sets):
        spec = (ps.get("template") or {}).get("spec") or {}
        for kind in ("initContainers", "containers"):
            for j, c in enumerate(spec.get(kind) or []):
                for part in ("requests", "limits"):
                    path = f"spec.podSets[{i}].template.spec.{kind}[{j}].resources.{part}"
                    yield from _resource_list((c.get("resources") or {}).get(part) or {}, path)


def _resource_list(resources: Obj, path: str) -> Iterable[str]:
    """The pods key is Kueue's own; negative quantities are refused (v0.19 default gate)."""
    for k, v in resources.items():
        if k == "pods":
            yield f'{path}[pods]: Invalid value: "pods": the key is reserved for internal ' \
                  "kueue use"
        elif quantity(v) < 0:
            yield f'{path}[{k}]: Invalid value: "{v}": must be greater than or equal to 0'


def _cohort(c: Obj) -> Iterable[str]:
    spec = c.get("spec") or {}
    yield from _resource_groups(spec.get("resourceGroups") or [], bool(spec.get("parentName")),
                                False)
    yield from _weight(spec)


_CHECKS = {"ClusterQueue": _clusterqueue, "ResourceFlavor": _resourceflavor,
           "Workload": _workload, "Cohort": _cohort}


@rule("kueue-queue-webhook", "ClusterQueues, Cohorts, ResourceFlavors and Workloads pass "
      "Kueue's validating webhooks")
def queue_webhook(ctx: Context) -> list[Finding]:
    return [finding("error", "kueue-queue-webhook", ref(o), why + _REFUSED,
                    "correct the field as the message says")
            for kind, check in _CHECKS.items() for o in ctx.kind(kind) for why in check(o)]


def _job(o: Obj) -> Iterable[str]:
    meta = o.get("metadata") or {}
    labels, ann = meta.get("labels") or {}, meta.get("annotations") or {}
    q = str(labels.get(QUEUE_LABEL, ""))
    if len(q) > 253 or not _SUBDOMAIN.fullmatch(q):
        yield (f'metadata.labels[{QUEUE_LABEL}]: Invalid value: "{q}": a lowercase RFC 1123 '
               "subdomain must consist of lower case alphanumeric characters, '-' or '.'")
    if MAX_EXEC in labels:
        yield from _positive(f"metadata.labels[{MAX_EXEC}]", str(labels[MAX_EXEC]))
    if o.get("kind") == "Job" and MIN_PARALLELISM in ann:
        pods = job_pods(o.get("spec") or {})
        v = str(ann[MIN_PARALLELISM])
        path = f"metadata.annotations[{MIN_PARALLELISM}]"
        if not re.fullmatch(r"[+-]?[0-9]+", v):
            yield f'{path}: Invalid value: "{v}": strconv.Atoi: parsing "{v}": invalid syntax'
        elif not 0 < int(v) < pods:
            yield f"{path}: Invalid value: {int(v)}: should be between 0 and {pods - 1}"
    for t in pod_templates(o):
        found = [a for a in TOPOLOGY if a in ((t.get("metadata") or {}).get("annotations")
                                              or {})]
        if len(found) > 1:
            yield ("template metadata.annotations: Invalid value: must not contain more than "
                   f"one topology annotation: {found}")


def _positive(path: str, v: str) -> Iterable[str]:
    if not re.fullmatch(r"[+-]?[0-9]+", v):
        yield f'{path}: Invalid value: "{v}": strconv.Atoi: parsing "{v}": invalid syntax'
    elif int(v) <= 0:
        yield f"{path}: Invalid value: {int(v)}: should be greater than 0"


@rule("kueue-job-webhook", "queued jobs pass Kueue's job webhooks (queue-name, partial "
      "admission, max execution time, topology annotations)")
def job_webhook(ctx: Context) -> list[Finding]:
    return [finding("error", "kueue-job-webhook", ref(o), why + _REFUSED,
                    "correct the label or annotation as the message says")
            for o in ctx.objects
            if QUEUE_LABEL in ((o.get("metadata") or {}).get("labels") or {})
            and o.get("kind") not in ("LocalQueue", "ClusterQueue")
            for why in _job(o)]
