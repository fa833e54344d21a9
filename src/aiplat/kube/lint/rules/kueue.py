"""Lint rules for who admits a workload: Kueue's cohort tree, its quota rules and which jobs
its webhook and reconciler manage at all. Each class, with the page an admin gets and where
the rule comes from (Kueue v0.19.2 unless said otherwise):

  cohort-cycle          Cohorts whose parentName links form a cycle. Symptom: every
                        ClusterQueue under them is inactive, nothing admitted, no error on
                        apply. Source: pkg/cache/scheduler/snapshot.go (inactive reason
                        HasCycle), Cohort CRD doc of spec.parentName.
  quota-without-cohort  borrowingLimit on a ClusterQueue without a cohort. Symptom: the API
                        server refuses the ClusterQueue, so its tenant has no queue. Source:
                        apis/kueue/v1beta2 ClusterQueueSpec CEL rule ("borrowingLimit must be
                        nil when cohort is empty"); a lendingLimit there too (Kueue's webhook,
                        pkg/webhooks validateLimit).
  kueue-managed         a queued Job/JobSet/... that Kueue cannot hold back: its kind is not
                        in the Configuration's integrations.frameworks, or its namespace is
                        outside managedJobsNamespaceSelector (the webhook suspends it, the
                        reconciler never creates its Workload: it never runs), or it is in
                        kube-system / Kueue's namespace, which Kueue's webhooks never see (it
                        starts at once, outside quota). Source: pkg/controller/jobframework
                        utils.go WorkloadShouldBeSuspended, reconciler.go ReconcileGenericJob
                        ("Namespace not opted in"), config/components/webhook/kustomization.yaml.
                        The Configuration is the tree's (a Configuration document, the
                        ConfigMap or Kueue's Helm values), else the one the target Kueue
                        release ships (kube/kueue_releases.py): then a warning, since the
                        cluster's may enable more.
  workload-unqueued     a workload without a queue-name label in a tenant namespace (one with
                        a LocalQueue). With manageJobsWithoutQueueName false Kueue ignores it
                        and it runs beside the quota, taking GPUs admitted work was promised;
                        with it true Kueue suspends it and, without a LocalQueue named
                        "default", it never runs. Source: reconciler.go ("queue-name label is
                        not set, ignoring the job"), jobframework defaults.go
                        (ApplyDefaultLocalQueue).
  queue-stopped         a ClusterQueue or LocalQueue with stopPolicy Hold/HoldAndDrain.
                        Symptom: workloads pending with "LocalQueue X is inactive". Source:
                        apis/kueue/v1beta2 StopPolicy.
  kueue-config          a Configuration Kueue refuses to start with: managedJobsNamespaceSelector
                        matching kube-system or Kueue's own namespace, or one it cannot
                        decode (not YAML, a field of the wrong type). Source: pkg/config/
                        validation.go validateManagedJobsNamespaceSelector, config.go
                        (strict decoding). With no Configuration in the tree, an info
                        line says whose lint reads instead (release, files, commit).
"""

from __future__ import annotations

from aiplat.findings import Finding, Severity
from aiplat.kube.lint.base import Context, Obj, finding, name, namespace, rule
from aiplat.kube.lint.objects import (
    KUEUE_NS,
    QUEUE_LABEL,
    aiplat_tenants,
    cohort_of,
    kueue_config,
    kueue_configuration,
    pod_specs,
    selector_matches,
)
from aiplat.kube.validate import ref

# Kueue's job kinds and the framework name that enables each (pkg/controller/jobs/*).
FRAMEWORKS = {"Job": "batch/job", "JobSet": "jobset.x-k8s.io/jobset", "Pod": "pod",
              "Deployment": "deployment", "StatefulSet": "statefulset",
              "LeaderWorkerSet": "leaderworkerset.x-k8s.io/leaderworkerset",
              "RayJob": "ray.io/rayjob", "RayCluster": "ray.io/raycluster",
              "PyTorchJob": "kubeflow.org/pytorchjob", "TrainJob": "trainer.kubeflow.org/trainjob",
              "MPIJob": "kubeflow.org/mpijob", "AppWrapper": "workload.codeflare.dev/appwrapper"}
NAME_LABEL = "kubernetes.io/metadata.name"
# Kueue's own default for managedJobsNamespaceSelector (apis/config/v1beta2/defaults.go).
DEFAULT_MANAGED = {"matchExpressions": [{"key": NAME_LABEL, "operator": "NotIn",
                                         "values": ["kube-system", KUEUE_NS]}]}


def ns_labels(ctx: Context, ns: str) -> dict[str, str]:
    """A namespace's labels as selectors see them (the API server adds its name label)."""
    for n in ctx.kind("Namespace"):
        if name(n) == ns:
            return {**((n.get("metadata") or {}).get("labels") or {}), NAME_LABEL: ns}
    return {NAME_LABEL: ns}


@rule("cohort-cycle", "Cohorts' parentName links form no cycle")
def cohort_cycle(ctx: Context) -> list[Finding]:
    parents = {name(c): str((c.get("spec") or {}).get("parentName") or "")
               for c in ctx.kind("Cohort")}
    reported: set[str] = set()
    out = []
    for start in sorted(parents):
        path: list[str] = []
        node = start
        while node and node not in path and node not in reported:
            path.append(node)
            node = parents.get(node, "")
        if not node or node in reported or node not in path:
            continue
        cycle = path[path.index(node):]
        reported |= set(cycle)
        cqs = sorted(name(cq) for cq in ctx.kind("ClusterQueue") if cohort_of(cq) in cycle)
        out.append(finding(
            "error", "cohort-cycle", f"Cohort/{min(cycle)}",
            f"spec.parentName links {' -> '.join([*cycle, cycle[0]])} form a cycle: Kueue "
            f"makes every ClusterQueue below it inactive (HasCycle)"
            + (f", so {', '.join(cqs)} admit nothing ('ClusterQueue {cqs[0]} is inactive')"
               if cqs else ""),
            "point one of these Cohorts' spec.parentName at the tree's root (or drop it)"))
    return out


@rule("quota-without-cohort", "borrowing and lending limits only on a ClusterQueue in a "
      "cohort")
def quota_without_cohort(ctx: Context) -> list[Finding]:
    out = []
    for cq in ctx.kind("ClusterQueue"):
        if cohort_of(cq):
            continue
        for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
            for fl in rg.get("flavors") or []:
                for r in fl.get("resources") or []:
                    where = f"flavor {fl.get('name')} resource {r.get('name')}"
                    if "borrowingLimit" in r:
                        out.append(finding(
                            "error", "quota-without-cohort", ref(cq),
                            f"borrowingLimit on {where} but spec.cohortName is empty: the API "
                            "server refuses the ClusterQueue ('borrowingLimit must be nil "
                            "when cohort is empty'), its tenant has no queue",
                            "set spec.cohortName, or drop borrowingLimit"))
                    if "lendingLimit" in r:
                        out.append(finding(
                            "error", "quota-without-cohort", ref(cq),
                            f"lendingLimit on {where} but spec.cohortName is empty: Kueue's "
                            "webhook refuses the ClusterQueue ('must be nil when cohort is "
                            "empty', pkg/webhooks validateLimit), its tenant has no queue",
                            "set spec.cohortName, or drop lendingLimit"))
    return out


def _config(ctx: Context) -> tuple[Obj | None, list[str], bool, Obj]:
    """(Configuration, frameworks, manageJobsWithoutQueueName, managed selector), defaulted
    as Kueue defaults them (the tree's, else the target release's shipped one)."""
    cfg = kueue_configuration(ctx)
    c = cfg or {}
    frameworks = list((c.get("integrations") or {}).get("frameworks") or ["batch/job"])
    managed = c.get("managedJobsNamespaceSelector")  # {} selects every namespace
    return (cfg, frameworks, bool(c.get("manageJobsWithoutQueueName", False)),
            DEFAULT_MANAGED if managed is None else managed)


def _top_level(o: Obj) -> bool:
    """Not owned by another object (a JobSet's Jobs, a Deployment's Pods are managed
    through their owner)."""
    return not (o.get("metadata") or {}).get("ownerReferences")


@rule("kueue-managed", "Kueue manages every queued workload (its framework enabled, its "
      "namespace selected, neither kube-system nor Kueue's)", severities=("error", "warning"))
def kueue_managed(ctx: Context) -> list[Finding]:
    cfg, frameworks, _, managed = _config(ctx)
    kc = kueue_config(ctx)
    kueue_ns = str((cfg or {}).get("namespace") or KUEUE_NS)
    out = []
    for o in ctx.objects:
        labels = (o.get("metadata") or {}).get("labels") or {}
        kind = str(o.get("kind"))
        if QUEUE_LABEL not in labels or kind not in FRAMEWORKS or not _top_level(o):
            continue
        ns = namespace(o)
        if FRAMEWORKS[kind] not in frameworks:
            why = (f"Kueue's integrations.frameworks {frameworks} leave out "
                   f"{FRAMEWORKS[kind]!r}: its webhook never suspends it, so it starts at "
                   "once outside any quota")
            fix = f"add {FRAMEWORKS[kind]} to integrations.frameworks in {kc.subject}"
        elif ns in ("kube-system", kueue_ns):
            why = (f"Kueue's webhooks skip namespace {ns}: it is created running and admitted "
                   "by no ClusterQueue")
            fix = "run queued workloads in a tenant namespace"
        elif not selector_matches(managed, ns_labels(ctx, ns)):
            why = (f"namespace {ns} is outside Kueue's managedJobsNamespaceSelector: the "
                   "webhook suspends it but the reconciler never creates its Workload, so it "
                   "stays suspended forever")
            fix = (f"label namespace {ns} to match managedJobsNamespaceSelector {managed}, "
                   "or widen the selector")
        else:
            continue
        # Read from the release's configuration, not the cluster's: the cluster may differ.
        out.append(finding("warning", "kueue-managed", ref(o),
                           f"the tree has no Kueue Configuration; with {kc.assumed}: {why}",
                           fix + " (if the cluster's Configuration does not already)")
                   if kc.assumed else finding("error", "kueue-managed", ref(o), why, fix))
    return out


@rule("workload-unqueued", "GPU workloads in a tenant namespace carry a queue-name label",
      severities=("error", "warning"))
def workload_unqueued(ctx: Context) -> list[Finding]:
    _, frameworks, without_name, managed = _config(ctx)
    queues: dict[str, set[str]] = {}
    for lq in ctx.kind("LocalQueue"):
        queues.setdefault(namespace(lq), set()).add(name(lq))
    out = []
    for o in ctx.objects:
        kind, ns = str(o.get("kind")), namespace(o)
        labels = (o.get("metadata") or {}).get("labels") or {}
        if ns not in queues or kind not in FRAMEWORKS or QUEUE_LABEL in labels \
                or not _top_level(o):
            continue
        handled = FRAMEWORKS[kind] in frameworks and selector_matches(managed, ns_labels(
            ctx, ns))
        if without_name and handled and "default" in queues[ns]:
            continue  # Kueue puts it in the namespace's default LocalQueue
        severity: Severity = "error"
        if without_name and handled:
            why = ("manageJobsWithoutQueueName suspends it and the namespace has no "
                   "LocalQueue named 'default': it never runs")
        elif not _uses_accelerators(o):
            continue  # a CPU-only service (an endpoint picker, a proxy) is not queued work
        else:
            why = ("Kueue ignores it (no queue-name label): it runs beside the quota, on "
                   "GPUs the ClusterQueue promised to admitted work")
            # It runs: site policy, an error where the spec asks for the quota (a tenant).
            severity = "error" if ns in aiplat_tenants(ctx) else "warning"
        out.append(finding(severity, "workload-unqueued", ref(o),
                           f"namespace {ns} is a Kueue tenant ({', '.join(sorted(queues[ns]))})"
                           f" but this {kind} has no {QUEUE_LABEL}: {why}",
                           f"label it {QUEUE_LABEL}: {sorted(queues[ns])[0]}"))
    return out


def _uses_accelerators(o: Obj) -> bool:
    """Whether its pods ask for GPUs: an extended resource of a device vendor, or DRA claims."""
    for spec in pod_specs(o):
        if spec.get("resourceClaims"):
            return True
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            res = c.get("resources") or {}
            names = {*(res.get("requests") or {}), *(res.get("limits") or {})}
            if any("/" in n and not n.startswith(("kubernetes.io/", "hugepages-")) for n in names):
                return True
    return False


@rule("queue-stopped", "no ClusterQueue or LocalQueue is held by its stopPolicy")
def queue_stopped(ctx: Context) -> list[Finding]:
    return [finding("error", "queue-stopped", ref(q),
                    f"spec.stopPolicy is {q['spec']['stopPolicy']}: it admits no new workload "
                    f"(they stay pending: '{q['kind']} {name(q)} is inactive')",
                    "set spec.stopPolicy: None")
            for q in ctx.kind("ClusterQueue") + ctx.kind("LocalQueue")
            if (q.get("spec") or {}).get("stopPolicy") in ("Hold", "HoldAndDrain")]


_KUEUE_KINDS = {"ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort", "Workload",
                "AdmissionCheck", "Topology", "WorkloadPriorityClass"}


def _uses_kueue(ctx: Context) -> bool:
    return any(o.get("kind") in _KUEUE_KINDS or QUEUE_LABEL in ((o.get("metadata") or {})
                                                                .get("labels") or {})
               for o in ctx.objects)


@rule("kueue-config", "Kueue can decode its Configuration and start with it (and which "
      "Configuration lint reads)", severities=("error", "info"))
def kueue_config_rule(ctx: Context) -> list[Finding]:
    kc = kueue_config(ctx)
    if kc.problems:
        return [finding("error", "kueue-config", kc.subject,
                        f"Kueue cannot decode its Configuration: {'; '.join(kc.problems)}: it "
                        "does not start, so nothing is admitted (the other rules read "
                        "Kueue's defaults instead)",
                        "correct it (Kueue's apis/config/v1beta2 Configuration)")]
    if kc.assumed:
        frameworks = (kc.doc or {}).get("integrations", {}).get("frameworks", [])
        return [finding("info", "kueue-config", kc.subject,
                        f"the tree has no Kueue Configuration: read as {kc.assumed} "
                        f"(integrations {', '.join(frameworks)}; Kueue's defaults for the "
                        "rest)", "add the cluster's Configuration (its ConfigMap, a "
                        "Configuration file or the Helm values) to the tree if it differs")
                ] if _uses_kueue(ctx) else []
    cfg, _, _, managed = _config(ctx)
    kueue_ns = str((cfg or {}).get("namespace") or KUEUE_NS)
    return [finding("error", "kueue-config", kc.subject,
                    f"managedJobsNamespaceSelector matches namespace {ns}: Kueue refuses the "
                    "Configuration and does not start, so nothing is admitted",
                    f"exclude {ns} (key {NAME_LABEL}, operator NotIn)")
            for ns in ("kube-system", kueue_ns)
            if selector_matches(managed, {NAME_LABEL: ns})]
