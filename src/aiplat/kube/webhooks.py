"""What the validating admission webhooks of Kueue and JobSet refuse that their CRD schemas
do not: each rule read from the webhook's source at the release aiplat targets, with the
webhook's feature gates at their defaults. A webhook rule not listed here is not checked
(``kube validate`` then passes what the webhook would refuse; the corpus test lists those).

- Kueue v0.19 ``pkg/webhooks/clusterqueue_webhook.go``, validateAdmissionCheckOnFlavors: each
  ``spec.admissionChecksStrategy.admissionChecks[].onFlavors[]`` names a flavor of the
  ClusterQueue's own resourceGroups ("Unsupported value").
- JobSet v0.12 ``pkg/webhooks/jobset_webhook.go``, ValidateCreate: the failure-policy actions
  ``RestartJob`` and ``RestartJobAndIgnoreMaxRestarts`` need the ``RestartJob`` feature gate
  and ``failurePolicy.restartStrategy: InPlaceRestart`` the ``InPlaceRestart`` one, both alpha
  and off by default (``pkg/features/features.go``).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
Refusal = tuple[str, str]  # (field path, what the webhook answers)
_JOBSET_GATED_ACTIONS = ("RestartJob", "RestartJobAndIgnoreMaxRestarts")


def refusals(o: Obj) -> list[Refusal]:
    """Where the modelled webhooks refuse ``o`` (defaults applied, shapes already checked)."""
    group, kind = str(o.get("apiVersion", "")).rpartition("/")[0], o.get("kind")
    spec = o.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    if group == "kueue.x-k8s.io" and kind == "ClusterQueue":
        return _on_flavors(spec)
    if group == "jobset.x-k8s.io" and kind == "JobSet":
        return _jobset_gates(spec)
    return []


def _on_flavors(spec: Obj) -> list[Refusal]:
    flavors = [str(f.get("name")) for g in spec.get("resourceGroups") or []
               for f in g.get("flavors") or []]
    out = []
    checks = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    for i, check in enumerate(checks):
        for j, flavor in enumerate(check.get("onFlavors") or []):
            if flavor not in flavors:
                out.append((f"spec.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]",
                            f"Kueue's webhook refuses {flavor!r}: not a flavor of this "
                            f"ClusterQueue (its flavors: {flavors or 'none'}) (fix: name one "
                            "of them, or add the flavor to spec.resourceGroups)"))
    return out


def _jobset_gates(spec: Obj) -> list[Refusal]:
    policy = spec.get("failurePolicy") or {}
    out = []
    if policy.get("restartStrategy") == "InPlaceRestart":
        out.append(("spec.failurePolicy.restartStrategy", "JobSet's webhook refuses "
                    "InPlaceRestart unless its InPlaceRestart feature gate (alpha, off by "
                    "default) is on (fix: enable the gate in the JobSet controller, or use "
                    "Recreate)"))
    for i, rule in enumerate(policy.get("rules") or []):
        if rule.get("action") in _JOBSET_GATED_ACTIONS:
            out.append((f"spec.failurePolicy.rules[{i}].action", f"JobSet's webhook refuses "
                        f"{rule['action']} unless its RestartJob feature gate (alpha, off by "
                        "default) is on (fix: enable the gate in the JobSet controller, or "
                        "use RestartJobSet)"))
            break  # the webhook stops at the first
    return out
