"""The Kubernetes part of the plan report: what was rendered, whether it validates, and what
the cross-layer lint found.

``kube_section(check)`` turns a ``aiplat.kube.KubeCheck`` (render + validate + lint of the
spec) into one report ``Section``; ``plan_document`` appends it when ``aiplat plan`` ran the
check. Nothing here computes: it only formats, and groups an issue that repeats across
objects and versions (an unchecked custom resource, once per object and version) into one
row with a count.
"""

from __future__ import annotations

from aiplat.findings import table as findings_table
from aiplat.kube.pipeline import KubeCheck
from aiplat.report.document import Section, Table
from aiplat.report.grouping import group_repeats

MAX_ROWS = 200


def kube_section(check: KubeCheck, tree_dir: str = "kube/") -> Section:
    layers: dict[str, dict[str, int]] = {}
    for path, objs in check.rendered.manifests.items():
        layer = path.split("/")[0]
        for o in objs:
            kinds = layers.setdefault(layer, {})
            kinds[str(o["kind"])] = kinds.get(str(o["kind"]), 0) + 1
    objects = Table(
        title="Rendered objects",
        columns=["layer", "objects", "kinds"],
        rows=[[layer, str(sum(k.values())),
               ", ".join(f"{n} {kind}" for kind, n in sorted(k.items()))]
              for layer, k in layers.items()],
        align=["left", "right", "left"],
    )
    validation = Table(
        title="Validation",
        columns=["Kubernetes", "objects", "errors", "warnings"],
        rows=[[v.version, str(v.objects), str(len(v.errors)),
               str(len(v.issues) - len(v.errors))] for v in check.validations],
        align=["left", "right", "right", "right"],
    )
    tables = [objects, validation]
    problems = [i for v in check.validations for i in v.issues]
    if problems:
        issues = group_repeats(Table(
            title="Validation issues",
            columns=["severity", "issue", "where", "object", "version"],
            rows=[[i.severity, i.message, i.path, i.ref, v.version]
                  for v in check.validations for i in v.issues]),
            ["object", "version"], count_after="severity")
        tables.append(issues.model_copy(update={"rows": issues.rows[:MAX_ROWS]}))
    if check.findings:
        columns, rows = findings_table(check.findings)
        tables.append(group_repeats(Table(title="Lint findings", columns=columns, rows=rows),
                                    ["subject"], count_after="severity"))
    errors = sum(f.severity == "error" for f in check.findings)
    total = sum(len(objs) for objs in check.rendered.manifests.values())
    paragraphs = [
        f"{total} objects rendered into {tree_dir} (kustomize: `kubectl apply -k {tree_dir}`, "
        "after the node labels, the GPU operator and Kueue are installed). Validated against "
        "the official OpenAPI schemas (strict) and the CRDs aiplat ships (Kueue, JobSet, Gateway "
        "API and its inference extension, the snapshotter, prometheus-operator, NFD; --crd-dir "
        "adds or replaces kinds), then names, quantities, "
        "DRA one-of rules and CEL selectors.",
        "Cross-layer lint: " + ("no findings." if not check.findings else
                                f"{errors} errors, {len(check.findings) - errors} warnings."),
    ]
    notes = ["No API server was contacted: this is schema and rule checking, not a dry-run "
             "apply (aiplat kube apply --dry-run=server is). Custom resources of a kind neither "
             "shipped nor in --crd-dir are reported as unchecked."]
    return Section(id="kubernetes", title="Kubernetes manifests", paragraphs=paragraphs,
                   tables=tables, notes=notes)
