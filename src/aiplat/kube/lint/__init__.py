"""``aiplat kube lint``: the cross-layer check — do the layers agree with each other and with
the hardware?

Input is a list of objects (a rendered tree or a directory) and an ``Inventory`` (pools:
labels, taints, GPU units, DRA devices). Each rule is a pure function ``(Context) ->
findings``; a finding carries severity, rule id, object, why and how to fix. Errors mean a
workload can be stuck or a tenant fenced wrongly; warnings need a decision. Rules:

  localqueue-clusterqueue   LocalQueue names an existing ClusterQueue
  clusterqueue-flavor       ClusterQueue flavors exist as ResourceFlavors
  namespace-selector        the ClusterQueue selects the namespaces of its LocalQueues
  flavor-pool               each flavor's nodeLabels select exactly one pool
  flavor-taints             pool taints are tolerated by the pool's flavors
  quota-capacity            nominal quotas per flavor fit the pool's physical units
  borrowing-cohort          a borrowing limit the cohort can never lend
  resourcequota-admits      ResourceQuota admits what the ClusterQueue can admit
  deviceclass-matches       each DeviceClass selector matches a device of some pool
  claim-deviceclass         claim templates name existing DeviceClasses
  claim-constraint          matchAttribute names an attribute the devices have
  topology-levels           Topology levels exist as node labels; flavors' topologies exist
  netpol-dns                namespaces with default-deny egress can still reach DNS
  netpol-model-store        ... and the model store
  rbac-escalation           no wildcards, escalate/bind/impersonate, RBAC writes, node
                            proxy, token minting; Secrets only when granted (roles that
                            only system components hold are theirs to have)
  workload-queue            example workloads name a LocalQueue and priority class that exist
  pod-security              pods pass their namespace's Pod Security level (hostPath,
                            privileged, host namespaces, added capabilities such as IPC_LOCK;
                            restricted's securityContext rules)

and those of the modules beside it, each with its classes' symptoms and upstream sources in
its docstring:

  lint_admission   what a live cluster refuses although schemas accept it (limitrange-admits,
                   kueue-dra-mapping, resourcequota-dra, dra-device-plugin, tas-autoscaled,
                   workload-shape)
  lint_kueue       who admits a workload: cohort-cycle, quota-without-cohort, kueue-managed,
                   workload-unqueued, queue-stopped, kueue-config
  lint_quota       what its queue can never admit or places badly: workload-quota,
                   flavor-affinity, topology-spread
  lint_fit         pods that fit nothing: gpu-per-node, resource-unserved, pvc-access-mode
  lint_selectors   what selects pods: netpol-default-deny, selector-matches
  lint_system      what reaches the system namespaces: rbac-system-namespace,
                   rbac-cluster-grant, rbac-everyone, system-namespace-policy
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from aiplat.kube import cel
from aiplat.kube.inventory import Inventory, PoolInventory
from aiplat.kube.quantity import QuantityError, parse_quantity
from aiplat.kube.shape import readable
from aiplat.kube.validate import ref

Obj = dict[str, Any]


@dataclass(frozen=True)
class Finding:
    severity: str  # error | warning
    rule: str
    object: str
    why: str
    fix: str

    def as_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "rule": self.rule, "object": self.object,
                "why": self.why, "fix": self.fix}


class Context:
    def __init__(self, objects: list[Obj], inventory: Inventory) -> None:
        self.objects = objects
        self.inventory = inventory
        self.by_kind: dict[str, list[Obj]] = defaultdict(list)
        for o in objects:
            self.by_kind[str(o.get("kind"))].append(o)

    def kind(self, kind: str) -> list[Obj]:
        return self.by_kind.get(kind, [])

    def names(self, kind: str) -> set[str]:
        return {name(o) for o in self.kind(kind)}

    def pool(self, name_: str) -> PoolInventory | None:
        return next((p for p in self.inventory.pools if p.name == name_), None)


def name(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("name", ""))


def namespace(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("namespace", ""))


def _q(v: Any) -> Decimal:
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


def _cq_flavor_resources(cq: Obj) -> Iterable[tuple[str, Obj]]:
    for rg in (cq.get("spec") or {}).get("resourceGroups") or []:
        for fl in rg.get("flavors") or []:
            for r in fl.get("resources") or []:
                yield fl.get("name", ""), r


def _cohort(cq: Obj) -> str | None:
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


# --------------------------------------------------------------------------- rules


def localqueue_clusterqueue(ctx: Context) -> list[Finding]:
    cqs = ctx.names("ClusterQueue")
    return [Finding("error", "localqueue-clusterqueue", ref(lq),
                    f"names ClusterQueue {(lq.get('spec') or {}).get('clusterQueue')!r}, which "
                    "does not exist;"
                    " workloads submitted to it stay pending (inadmissible)",
                    f"set spec.clusterQueue to one of {sorted(cqs)} or create the ClusterQueue")
            for lq in ctx.kind("LocalQueue")
            if (lq.get("spec") or {}).get("clusterQueue") not in cqs]


def clusterqueue_flavor(ctx: Context) -> list[Finding]:
    flavors = ctx.names("ResourceFlavor")
    out = []
    for cq in ctx.kind("ClusterQueue"):
        for fl in sorted({f for f, _ in _cq_flavor_resources(cq)} - flavors):
            out.append(Finding("error", "clusterqueue-flavor", ref(cq),
                               f"uses ResourceFlavor {fl!r}, which does not exist; the "
                               "ClusterQueue stays inactive",
                               f"create ResourceFlavor {fl!r} or remove it from the queue"))
    return out


def namespace_selector(ctx: Context) -> list[Finding]:
    out = []
    ns_labels = {name(n): dict((n.get("metadata") or {}).get("labels") or {})
                 for n in ctx.kind("Namespace")}
    for cq in ctx.kind("ClusterQueue"):
        sel = (cq.get("spec") or {}).get("namespaceSelector")
        if sel == {}:
            out.append(Finding("warning", "namespace-selector", ref(cq),
                               "namespaceSelector {} admits workloads from every namespace",
                               "select the tenant's namespaces by label"))
        for lq in ctx.kind("LocalQueue"):
            if (lq.get("spec") or {}).get("clusterQueue") != name(cq):
                continue
            ns = namespace(lq)
            labels = {**ns_labels.get(ns, {}), "kubernetes.io/metadata.name": ns}
            if not selector_matches(sel, labels):
                out.append(Finding("error", "namespace-selector", ref(cq),
                                   f"its namespaceSelector does not select namespace {ns!r} "
                                   f"where LocalQueue {name(lq)!r} points at it; workloads "
                                   "there are inadmissible",
                                   f"label namespace {ns} to match {sel} or fix the selector"))
    return out


def flavor_pool(ctx: Context) -> list[Finding]:
    out = []
    for fl in ctx.kind("ResourceFlavor"):
        labels = (fl.get("spec") or {}).get("nodeLabels") or {}
        pools = [p.name for p in ctx.inventory.pools
                 if all(p.labels.get(k) == v for k, v in labels.items())]
        if len(pools) != 1:
            why = ("selects no pool: admitted pods would never schedule" if not pools else
                   f"selects {len(pools)} pools ({', '.join(pools)}): quota and capacity "
                   "no longer line up")
            out.append(Finding("error", "flavor-pool", ref(fl), f"nodeLabels {labels} {why}",
                               "set nodeLabels to the pool's label, e.g. "
                               f"{{aiplat.io/pool: {name(fl)}}}"))
    return out


def _flavor_pool(ctx: Context, fl: Obj) -> PoolInventory | None:
    labels = (fl.get("spec") or {}).get("nodeLabels") or {}
    pools = [p for p in ctx.inventory.pools
             if labels and all(p.labels.get(k) == v for k, v in labels.items())]
    return pools[0] if len(pools) == 1 else None


def _tolerates(tols: list[Obj], taint: dict[str, str]) -> bool:
    for t in tols:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t.get("key") == taint["key"]):
            return True
        if t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def flavor_taints(ctx: Context) -> list[Finding]:
    out = []
    for fl in ctx.kind("ResourceFlavor"):
        pool = _flavor_pool(ctx, fl)
        if pool is None:
            continue
        tols = (fl.get("spec") or {}).get("tolerations") or []
        for taint in pool.taints:
            if taint.get("effect") == "PreferNoSchedule" or _tolerates(tols, taint):
                continue
            out.append(Finding("error", "flavor-taints", ref(fl),
                               f"pool {pool.name} is tainted {taint['key']}:{taint['effect']} "
                               "but the flavor does not tolerate it: admitted pods stay Pending",
                               f"add toleration {{key: {taint['key']}, operator: Exists, "
                               f"effect: {taint['effect']}}} to spec.tolerations"))
    return out


def quota_capacity(ctx: Context) -> list[Finding]:
    nominal: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for cq in ctx.kind("ClusterQueue"):
        for fl, r in _cq_flavor_resources(cq):
            nominal[(fl, r.get("name", ""))] += _q(r.get("nominalQuota", 0))
    flavors = {name(f): f for f in ctx.kind("ResourceFlavor")}
    out = []
    for (fl, res), total in sorted(nominal.items()):
        pool = _flavor_pool(ctx, flavors[fl]) if fl in flavors else None
        if pool is None:
            continue
        if res in pool.capacity:
            cap = Decimal(pool.capacity[res])
        elif res == "cpu":
            cap = Decimal(pool.cpu)
        elif res == "memory":
            cap = Decimal(pool.memory_gib) * 2**30
        else:
            cap = Decimal(0)
        if total > cap:
            out.append(Finding("error", "quota-capacity", f"ResourceFlavor/{fl}",
                               f"ClusterQueues promise {total:g} {res} in total but pool "
                               f"{pool.name} has {cap:g}: Kueue admits workloads that can "
                               "never all run",
                               "lower the nominal quotas or grow the pool (count, sharing "
                               "replicas or MIG layout)"))
    return out


def borrowing_cohort(ctx: Context) -> list[Finding]:
    lendable: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
    members: dict[str, list[Obj]] = defaultdict(list)
    for cq in ctx.kind("ClusterQueue"):
        c = _cohort(cq)
        if c:
            # Nested cohorts share quota up the tree: lending is pooled at the root.
            members[cohort_root(c, ctx.kind("Cohort"))].append(cq)
    out = []
    for c, cqs in members.items():
        for cq in cqs:
            for fl, r in _cq_flavor_resources(cq):
                lend = r.get("lendingLimit", r.get("nominalQuota", 0))
                lendable[(c, fl, r.get("name", ""))] += _q(lend)
        for cq in cqs:
            for fl, r in _cq_flavor_resources(cq):
                # CPU and memory quotas follow the GPUs; one finding per GPU resource.
                if "borrowingLimit" not in r or r.get("name") in ("cpu", "memory"):
                    continue
                own = _q(r.get("lendingLimit", r.get("nominalQuota", 0)))
                others = lendable[(c, fl, r.get("name", ""))] - own
                if _q(r["borrowingLimit"]) > others:
                    out.append(Finding(
                        "warning", "borrowing-cohort", ref(cq),
                        f"borrowingLimit {r['borrowingLimit']} {r['name']} on flavor {fl} "
                        f"exceeds what cohort {c} can lend ({others:g}): the limit promises "
                        "capacity that does not exist",
                        f"lower borrowingLimit to {others:g} or raise others' lendable quota"))
    return out


def resourcequota_admits(ctx: Context) -> list[Finding]:
    out = []
    quotas: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for rq in ctx.kind("ResourceQuota"):
        for k, v in ((rq.get("spec") or {}).get("hard") or {}).items():
            quotas[namespace(rq)][k] = min(quotas[namespace(rq)].get(k, _q(v)), _q(v))
    for lq in ctx.kind("LocalQueue"):
        ns = namespace(lq)
        cq = next((c for c in ctx.kind("ClusterQueue")
                   if name(c) == (lq.get("spec") or {}).get("clusterQueue")), None)
        if cq is None or ns not in quotas:
            continue
        admits: dict[str, Decimal] = defaultdict(Decimal)
        for _fl, r in _cq_flavor_resources(cq):
            admits[r["name"]] += _q(r.get("nominalQuota", 0)) + _q(r.get("borrowingLimit", 0))
        for res, amount in admits.items():
            if res in ("cpu", "memory"):
                keys = [f"requests.{res}", res]
            elif "/" in res:
                keys = [f"requests.{res}"]
            else:
                keys = [f"{res}.deviceclass.resource.k8s.io/devices"]
            hard = next((quotas[ns][k] for k in keys if k in quotas[ns]), None)
            if hard is not None and hard < amount:
                out.append(Finding("error", "resourcequota-admits", f"ResourceQuota/{ns}",
                                   f"allows {hard:g} {res} but ClusterQueue {name(cq)} can "
                                   f"admit {amount:g}: admitted pods fail quota at creation",
                                   f"raise {keys[0]} to at least {amount:g}"))
    return out


def _devices(ctx: Context) -> list[tuple[PoolInventory, Obj]]:
    return [(p, d) for p in ctx.inventory.pools for d in p.devices]


def deviceclass_matches(ctx: Context) -> list[Finding]:
    out = []
    devices = _devices(ctx)
    for dc in ctx.kind("DeviceClass"):
        exprs = [(s.get("cel") or {}).get("expression", "")
                 for s in (dc.get("spec") or {}).get("selectors") or []]
        errors: set[str] = set()
        matched = []
        for pool, d in devices:
            ok = True
            for e in exprs:
                try:
                    ok = ok and cel.evaluate(e, pool.driver, d)
                except cel.CelError as err:
                    errors.add(str(err))
                    ok = False
            if ok:
                matched.append(pool.name)
        if not matched:
            why = "its selectors match no device of any pool"
            if errors:
                why += f" ({'; '.join(sorted(errors))[:200]})"
            out.append(Finding("error", "deviceclass-matches", ref(dc),
                               why + ": claims on it never allocate",
                               "compare the selector with `kubectl get resourceslices -o yaml`"
                               " (productName, memory capacity, driverVersion)"))
    return out


def _claim_specs(ctx: Context) -> Iterable[tuple[Obj, Obj]]:
    for o in ctx.kind("ResourceClaimTemplate"):
        yield o, ((o.get("spec") or {}).get("spec") or {})
    for o in ctx.kind("ResourceClaim"):
        yield o, (o.get("spec") or {})


def claim_deviceclass(ctx: Context) -> list[Finding]:
    classes = ctx.names("DeviceClass")
    out = []
    for o, spec in _claim_specs(ctx):
        for req in ((spec.get("devices") or {}).get("requests")) or []:
            subs = [req["exactly"]] if "exactly" in req else list(req.get("firstAvailable") or [])
            for s in subs:
                dc = s.get("deviceClassName")
                if dc not in classes:
                    out.append(Finding("error", "claim-deviceclass", ref(o),
                                       f"request {req.get('name')!r} names DeviceClass {dc!r}, "
                                       "which does not exist: pods using it stay Pending",
                                       f"use one of {sorted(classes)}"))
    return out


def claim_constraint(ctx: Context) -> list[Finding]:
    out = []
    known: set[str] = set()
    for pool, d in _devices(ctx):
        for k in d.get("attributes") or {}:
            known.add(k if "/" in k else f"{pool.driver}/{k}")
    for o, spec in _claim_specs(ctx):
        for c in ((spec.get("devices") or {}).get("constraints")) or []:
            attr = c.get("matchAttribute") or c.get("distinctAttribute")
            if attr and attr not in known:
                out.append(Finding("error", "claim-constraint", ref(o),
                                   f"constraint attribute {attr!r} is published by no device: "
                                   "the constraint can never be satisfied",
                                   f"use an attribute the driver publishes, e.g. "
                                   f"{sorted(known)[:3]}"))
    return out


def topology_levels(ctx: Context) -> list[Finding]:
    out = []
    keys = set().union(*(p.all_label_keys for p in ctx.inventory.pools)) if \
        ctx.inventory.pools else set()
    for t in ctx.kind("Topology"):
        for lvl in (t.get("spec") or {}).get("levels") or []:
            if lvl.get("nodeLabel") not in keys:
                out.append(Finding("error", "topology-levels", ref(t),
                                   f"level {lvl.get('nodeLabel')!r} is not a label any pool's "
                                   "nodes carry: topology-aware admission finds no domain",
                                   "label the nodes (cluster/nodes/label-and-taint.sh) or fix "
                                   "the level"))
    topos = ctx.names("Topology")
    for fl in ctx.kind("ResourceFlavor"):
        tn = (fl.get("spec") or {}).get("topologyName")
        if tn and tn not in topos:
            out.append(Finding("error", "topology-levels", ref(fl),
                               f"topologyName {tn!r} names no Topology",
                               f"create Topology {tn!r} or remove topologyName"))
    return out


def _egress_rules(ctx: Context, ns: str) -> tuple[bool, list[Obj]]:
    deny, rules = False, list[Obj]()
    for np in ctx.kind("NetworkPolicy"):
        if namespace(np) != ns:
            continue
        spec = np.get("spec") or {}
        if "Egress" in (spec.get("policyTypes") or []):
            deny = True
            rules += spec.get("egress") or []
    return deny, rules


def _rule_allows_port(rule: Obj, port: int) -> bool:
    ports = rule.get("ports")
    return not ports or any(p.get("port") in (port, None) for p in ports)


def netpol_dns(ctx: Context) -> list[Finding]:
    out = []
    for ns in sorted({namespace(n) for n in ctx.kind("NetworkPolicy")}):
        deny, rules = _egress_rules(ctx, ns)
        if deny and not any(_rule_allows_port(r, 53) and any(
                "namespaceSelector" in t or "ipBlock" in t for t in r.get("to") or [{}])
                for r in rules):
            out.append(Finding("error", "netpol-dns", f"Namespace/{ns}",
                               "egress is denied and no policy allows DNS (port 53 to "
                               "kube-system): every name lookup fails",
                               "add an egress rule to kube-dns pods in kube-system on UDP/TCP "
                               "53"))
    return out


def _network(cidr: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """An ipBlock's network; None for one the API server refuses (it allows nothing)."""
    try:
        return ipaddress.ip_network(str(cidr), strict=False) if cidr else None
    except ValueError:
        return None


def netpol_model_store(ctx: Context) -> list[Finding]:
    cidrs = [ipaddress.ip_network(c) for c in ctx.inventory.model_store_cidrs]
    if not cidrs:
        return []
    out = []
    for ns in sorted({namespace(n) for n in ctx.kind("NetworkPolicy")}):
        deny, rules = _egress_rules(ctx, ns)
        if not deny:
            continue
        reached = set()
        for r in rules:
            for t in r.get("to") or []:
                net = _network((t.get("ipBlock") or {}).get("cidr"))
                if net is not None:
                    reached |= {c for c in cidrs if c.version == net.version
                                and c.subnet_of(net)}  # type: ignore[arg-type]
        missing = [str(c) for c in cidrs if c not in reached]
        if missing:
            out.append(Finding("error", "netpol-model-store", f"Namespace/{ns}",
                               f"egress is denied and nothing allows the model store "
                               f"({', '.join(missing)}): model pulls time out",
                               "add an egress rule with ipBlock for the storage segment"))
    return out


_DANGEROUS_VERBS = {"escalate", "bind", "impersonate"}
_SENSITIVE = {"nodes/proxy", "serviceaccounts/token", "certificatesigningrequests"}


def rbac_escalation(ctx: Context) -> list[Finding]:
    from aiplat.kube.lint.rules.system import component_roles  # it builds on this module

    out = []
    allowed = set(ctx.inventory.secrets_allowed)
    components = component_roles(ctx)
    for role in ctx.kind("Role") + ctx.kind("ClusterRole"):
        ns = namespace(role)
        if (str(role.get("kind")), ns, name(role)) in components:
            continue  # only Kubernetes' or an operator's own accounts hold it
        for rule in role.get("rules") or []:
            verbs = set(rule.get("verbs") or [])
            resources = set(rule.get("resources") or [])
            groups = set(rule.get("apiGroups") or [])
            problems = []
            if "*" in verbs | resources | groups:
                problems.append("uses a wildcard")
            if verbs & _DANGEROUS_VERBS:
                problems.append(f"grants {sorted(verbs & _DANGEROUS_VERBS)}")
            write = verbs - {"get", "list", "watch"}
            rbac = {"roles", "rolebindings", "clusterroles", "clusterrolebindings"}
            if write and resources & rbac:
                problems.append("may write RBAC objects")
            sensitive = resources & _SENSITIVE
            if sensitive:
                problems.append(f"reaches {sorted(sensitive)}")
            if "secrets" in resources and ns not in allowed:
                problems.append("reads Secrets though the spec does not grant it")
            for p in problems:
                out.append(Finding("error", "rbac-escalation", ref(role), p,
                                   "list explicit verbs and resources; grant Secrets with "
                                   "secretsAccess: true in the spec"))
    return out


def workload_queue(ctx: Context) -> list[Finding]:
    lqs = {(namespace(o), name(o)) for o in ctx.kind("LocalQueue")}
    wpcs = ctx.names("WorkloadPriorityClass")
    out = []
    for kind in ("Job", "JobSet", "Deployment", "Pod"):
        for o in ctx.kind(kind):
            labels = (o.get("metadata") or {}).get("labels") or {}
            q = labels.get("kueue.x-k8s.io/queue-name")
            if q is None:
                continue
            if (namespace(o), q) not in lqs:
                out.append(Finding("error", "workload-queue", ref(o),
                                   f"queue-name {q!r} is not a LocalQueue in {namespace(o)!r}: "
                                   "Kueue never admits it",
                                   "use the tenant's LocalQueue name"))
            pc = labels.get("kueue.x-k8s.io/priority-class")
            if pc and pc not in wpcs:
                out.append(Finding("error", "workload-queue", ref(o),
                                   f"priority-class {pc!r} is not a WorkloadPriorityClass",
                                   f"use one of {sorted(wpcs)}"))
    return out


_POD_KINDS = {"Pod": ("spec",), "Job": ("spec", "template", "spec"),
              "Deployment": ("spec", "template", "spec"),
              "StatefulSet": ("spec", "template", "spec"),
              "DaemonSet": ("spec", "template", "spec"),
              "JobSet": ("spec", "replicatedJobs", 0, "template", "spec", "template", "spec")}
# Capabilities baseline lets a container add (k8s.io/pod-security-admission policy/
# check_capabilities_baseline.go); restricted allows only NET_BIND_SERVICE.
_BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                  "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
_RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                       "persistentVolumeClaim", "projected", "secret", "name"}


def _pod_specs(o: Obj) -> list[Obj]:
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


def pod_security_violations(spec: Obj, level: str) -> list[str]:
    """What the Pod Security Standards level forbids in a pod spec (the checks that matter
    for GPU workloads and agents; not the full list of the admission plugin)."""
    if level == "privileged":
        return []
    out = [f"{key}: true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    for v in spec.get("volumes") or []:
        if "hostPath" in v:
            out.append(f"hostPath volume {v.get('name')!r}")
        elif level == "restricted" and not set(v) <= _RESTRICTED_VOLUMES:
            out.append(f"volume {v.get('name')!r} of a type restricted does not allow")
    pod_sc = spec.get("securityContext") or {}
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        out += _baseline_violations(c, level)
        if level == "restricted":
            out += _restricted_violations(c, pod_sc)
    return out


def _baseline_violations(c: Obj, level: str) -> list[str]:
    sc = c.get("securityContext") or {}
    name = c.get("name")
    out = []
    if sc.get("privileged"):
        out.append(f"container {name!r} is privileged")
    if any(p.get("hostPort") for p in c.get("ports") or []):
        out.append(f"container {name!r} uses a hostPort")
    added = set((sc.get("capabilities") or {}).get("add") or [])
    allowed = {"NET_BIND_SERVICE"} if level == "restricted" else _BASELINE_CAPS
    if added - allowed:  # e.g. IPC_LOCK for RDMA memory registration
        out.append(f"container {name!r} adds capabilities {sorted(added - allowed)}")
    return out


def _restricted_violations(c: Obj, pod_sc: Obj) -> list[str]:
    sc = c.get("securityContext") or {}
    name = c.get("name")
    out = []
    if sc.get("allowPrivilegeEscalation") is not False:
        out.append(f"container {name!r} does not set allowPrivilegeEscalation: false")
    if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
        out.append(f"container {name!r} does not drop ALL capabilities")
    if not (sc.get("runAsNonRoot") or pod_sc.get("runAsNonRoot")):
        out.append(f"container {name!r} does not set runAsNonRoot: true")
    seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        out.append(f"container {name!r} has no RuntimeDefault seccomp profile")
    return out


def pod_security(ctx: Context) -> list[Finding]:
    levels = {name(n): ((n.get("metadata") or {}).get("labels") or {}).get(
        "pod-security.kubernetes.io/enforce", "privileged") for n in ctx.kind("Namespace")}
    out = []
    for o in ctx.objects:
        level = levels.get(namespace(o))
        if level is None:
            continue
        for spec in _pod_specs(o):
            problems = pod_security_violations(spec, level)
            if problems:
                out.append(Finding("error", "pod-security", ref(o),
                                   f"namespace {namespace(o)} enforces Pod Security "
                                   f"'{level}', which rejects its pods: {'; '.join(problems)}",
                                   "fix the pod's securityContext/volumes, or run it in a "
                                   "namespace with the level it needs"))
    return out


RULES: tuple[Callable[[Context], list[Finding]], ...] = (
    localqueue_clusterqueue, clusterqueue_flavor, namespace_selector, flavor_pool,
    flavor_taints, quota_capacity, borrowing_cohort, resourcequota_admits,
    deviceclass_matches, claim_deviceclass, claim_constraint, topology_levels, netpol_dns,
    netpol_model_store, rbac_escalation, workload_queue, pod_security,
)


def lint(objects: list[Obj], inventory: Inventory, *,
         files: Sequence[str] | None = None) -> list[Finding]:
    """The findings of every rule on ``objects`` (from ``files``, one per object, for
    messages); an ``InputError`` naming file, object and field when a field is not of the
    type its schema gives (rules read fields; none reasons on half a tree)."""
    # The rule modules build on this one's helpers, so they are imported here.
    from aiplat.kube.lint.rules.admission import ADMISSION_RULES
    from aiplat.kube.lint.rules.fit import FIT_RULES
    from aiplat.kube.lint.rules.kueue import KUEUE_RULES
    from aiplat.kube.lint.rules.quota import QUOTA_RULES
    from aiplat.kube.lint.rules.runtime import RUNTIME_RULES
    from aiplat.kube.lint.rules.selectors import SELECTOR_RULES
    from aiplat.kube.lint.rules.system import SYSTEM_RULES

    named = zip(files or [""] * len(objects), objects, strict=True)
    ctx = Context(readable(list(named)), inventory)
    rules = (RULES + ADMISSION_RULES + KUEUE_RULES + QUOTA_RULES + FIT_RULES + SELECTOR_RULES
             + RUNTIME_RULES + SYSTEM_RULES)
    findings = [f for rule in rules for f in rule(ctx)]
    order = {"error": 0, "warning": 1}
    return sorted(findings, key=lambda f: (order.get(f.severity, 2), f.rule, f.object))
