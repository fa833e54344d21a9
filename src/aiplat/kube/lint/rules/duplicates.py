"""Lint rule for an object a tree defines more than once. Rule, by name:

  duplicate-object  two objects of the same API group, kind, namespace and name (any
                    version: the API server stores one): kustomize refuses the tree ("may
                    not add resource with an already registered id"); ``kubectl apply -f
                    DIR`` applies each in file order and the cluster keeps the last, so a
                    harmless first ClusterRole can hide a powerful last one

The other rules judge every definition (the RBAC rules a role's by the rules of all of
them), so whichever one a cluster ends up with, a finding is not lost to the order;
``aiplat kube validate`` reports the same duplicate as an error.
"""

from __future__ import annotations

from aiplat.findings import Finding
from aiplat.kube.lint.base import Context, finding
from aiplat.kube.lint.base import rule as lint_rule
from aiplat.kube.validate import duplicates, places, ref


@lint_rule("duplicate-object", "no object is defined twice in the tree (kubectl keeps the "
           "last, kustomize refuses the tree)")
def duplicate_object(ctx: Context) -> list[Finding]:
    out = []
    for found in duplicates(ctx.objects):
        out.append(finding(
            "error", "duplicate-object", ref(ctx.objects[found[-1]]),
            f"defined {len(found)} times in the tree ({', '.join(places(ctx.files, found))}):"
            " `kubectl apply -f` applies each in turn and the cluster keeps the last, "
            "kustomize refuses the tree ('may not add resource with an already registered "
            "id'); lint judges every definition",
            "keep one definition"))
    return out
