"""``aiplat kube lint``: the cross-layer check — do the layers agree with each other and with
the hardware?

Input is a list of objects (a rendered tree or a directory) and an ``Inventory`` (pools:
labels, taints, GPU units, DRA devices), or none (the node checks then judge nothing). Each
rule is a pure function ``(Context) -> findings``; a finding carries severity, rule id,
object, why and how to fix. Errors mean a workload can be stuck or a tenant fenced wrongly;
warnings need a decision.

The package, each part importing only those below it (an import-linter contract):

  lint (this module)  runs every registered rule on a tree
  rules/              the rules, one module per family, none importing another:
                      queues (LocalQueue -> ClusterQueue -> flavor -> pool, quota, cohorts,
                      Topologies), kueue (who admits a workload: cohort tree, managed jobs,
                      Kueue's Configuration), quota (what a queue can never admit), dra
                      (DeviceClasses and claims), fit (pods that fit no node, device or
                      volume), admission (what the API server refuses: LimitRange,
                      ResourceQuota, Pod Security, Kueue's DRA mapping, workload shape),
                      selectors (NetworkPolicies and selectors), system (RBAC and fences
                      reaching the system namespaces), bootstrap (Kubernetes' own RBAC
                      redefined), duplicates (an object defined twice), runtime (RDMA
                      memlock), webhooks (what Kueue's admission webhooks refuse),
                      inventory (says when no inventory left node checks unrun)
  objects             the readers rules share (selectors, quantities, pod specs, claims,
                      Kueue's Configuration, tenants)
  base                Finding, Context, the registry and its ``@rule`` decorator

A new rule is one file: a module in ``rules/`` whose functions carry ``@rule(name, doc)``
(see ``base``); ``lint`` finds every module there. Each rule's symptom and upstream source:
docs/lint-classes.md.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Collection, Sequence

from aiplat.findings import Finding
from aiplat.kube.inventory import Inventory
from aiplat.kube.lint import rules as _rules_package
from aiplat.kube.lint.base import SEVERITIES, Context, Obj, Rule, registered
from aiplat.kube.lint.objects import helm_values
from aiplat.kube.shape import foreign_kind, readable

__all__ = ["Context", "Finding", "Rule", "lint", "rules"]
_ORDER = {s: i for i, s in enumerate(SEVERITIES)}


def rules() -> tuple[Rule, ...]:
    """Every rule of every module in ``aiplat.kube.lint.rules`` (imported here, so a module
    added there registers its rules without being listed anywhere), by name."""
    for module in pkgutil.iter_modules(_rules_package.__path__):
        importlib.import_module(f"{_rules_package.__name__}.{module.name}")
    return registered()


def lint(objects: list[Obj], inventory: Inventory | None, *,
         files: Sequence[str] | None = None,
         kueue_version: str | None = None,
         unset_namespace: Collection[int] = ()) -> list[Finding]:
    """The findings of every rule on ``objects`` (from ``files``, one per object, for
    messages) against the nodes of ``inventory`` (None: not known; node-dependent rules judge
    nothing and an info finding says so), for the target Kueue release ``kueue_version``
    (None: the spec's default), errors first, then by rule and object; an ``InputError``
    naming file, object and field when a field is not of the type its schema gives (rules
    read fields; none reasons on half a tree). Kueue's Helm values (a document of no kind)
    are read as its Configuration. ``unset_namespace``: the positions in ``objects`` of those
    whose namespace the reader gave them (kubectl's context's, not known here)."""
    names = list(files or [""] * len(objects))
    pairs = list(zip(names, objects, strict=True))
    values = [(f, o) for f, o in pairs if helm_values(o)]
    # Another group's kind named like one the rules read (Volcano's Job): no rule reads it.
    unread = [(f, o, foreign_kind(o)) for f, o in pairs
              if not helm_values(o) and isinstance(o, dict) and foreign_kind(o)]
    kept = [(i, f, o) for i, (f, o) in enumerate(pairs)
            if not helm_values(o) and not (isinstance(o, dict) and foreign_kind(o))]
    stored = readable([(f, o) for _i, f, o in kept])  # the same order
    unset = {id(s) for (i, _f, _o), s in zip(kept, stored, strict=True) if i in unset_namespace}
    ctx = Context(stored, inventory, [f for _i, f, _o in kept],
                  kueue_version=kueue_version, helm_values=values, unset_namespace=unset,
                  unread=unread)
    findings = [f for r in rules() for f in r.run(ctx)]
    return sorted(findings, key=lambda f: (_ORDER.get(f.severity, 2), f.source, f.subject))
