"""Everything ``aiplat plan`` writes, from one spec, in memory (pure).

``plan_outputs`` is the pipeline the command runs: resolve and size the spec once
(``plan/``), render and check the Kubernetes tree from that plan, simulate a month of its
workloads on the Kueue objects that tree renders (read back: :mod:`aiplat.ops.sim_month`),
build the handover (version matrix, runbook, monitoring rules) and the report, where the plan
recommends bare metal also the Slurm cluster (``slurm/``, :mod:`aiplat.slurm`), and return
every file by relative path. The command only loads the spec and the last
acceptance record (I/O) and writes the mapping atomically; a failure anywhere leaves the
output directory untouched because nothing is written before everything is rendered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date

from aiplat.catalog import Catalog
from aiplat.fieldnames import camel
from aiplat.findings import Finding
from aiplat.kube.crds import CrdIndex
from aiplat.kube.pipeline import DEFAULT_VERSIONS, KubeCheck, check_plan, plan_files
from aiplat.ops.acceptance import Record
from aiplat.ops.acceptance_report import handover_section
from aiplat.ops.matrix import check_matrix, matrix_document
from aiplat.ops.monitoring import monitoring_rules, render_monitoring
from aiplat.ops.runbook import runbook_document
from aiplat.ops.sim_month import SOURCE, rendered_queues
from aiplat.plan.build import plan_resolved
from aiplat.plan.models import Plan
from aiplat.plan.resolve import resolve
from aiplat.report import Document, render_html, render_markdown
from aiplat.report.artifacts_doc import storage_section
from aiplat.report.markdown import figure_files
from aiplat.report.network_doc import network_section
from aiplat.report.plan_doc import plan_document
from aiplat.report.sim_doc import sim_sections
from aiplat.sched.kueue import KueueConfig
from aiplat.sched.metrics import SimResult
from aiplat.sched.platform import simulate_platform
from aiplat.slurm.render import slurm_files
from aiplat.spec.models import Platform

BARE_METAL = "bare_metal"

HANDOVER_LINKS = {
    "matrix": "matrix/matrix.html",
    "runbook": "runbook/runbook.html",
    "monitoring": "monitoring/aiplat-rules.yaml",
    "acceptance": "acceptance/acceptance.html",
}


@dataclass(frozen=True)
class PlanOutputs:
    plan: Plan
    kube: KubeCheck
    sim: SimResult
    queues: KueueConfig
    """The queues the month ran on: the tree's kueue/ objects as read back."""
    files: dict[str, str]
    """Relative path -> text, ready for ``fsutil.write_tree``."""
    findings: list[Finding]
    """Every finding of the run, the plan's and the tree's lint: the one list the report,
    the CLI's lines and its ``-o json|yaml`` show."""
    report: Document
    """The plan's report as a document (rendered again, expanded, for --pdf)."""

    @property
    def ok(self) -> bool:
        """No error finding, and the tree validates and lints clean."""
        return self.kube.ok and not any(f.severity == "error" for f in self.findings)


def plan_outputs(platform: Platform, catalog: Catalog, *, today: date,
                 spec_path: str = "platform.yaml", spec_text: str | None = None,
                 crds: CrdIndex | None = None, versions: tuple[str, ...] = DEFAULT_VERSIONS,
                 acceptance: Record | None = None) -> PlanOutputs:
    """Every file of ``aiplat plan`` for ``platform``; ``spec_text`` (the file as read) gives
    the report its spec digest, ``today`` its date and the matrix its reference day."""
    resolved = resolve(platform, catalog)
    plan = plan_resolved(resolved)
    kube = check_plan(resolved, plan, crds, versions)
    # A month of the spec's workloads through the queues the kube tree renders.
    findings = plan.all_findings + kube.findings
    queues = rendered_queues(kube.rendered)
    sim = simulate_platform(platform, plan, seed=0, queues=queues)
    matrix = check_matrix(platform, today)
    runbook = runbook_document(platform, spec_path,
                               {p.name: p.spare_nodes for p in plan.pools},
                               monitoring_rules(platform))
    doc = plan_document(plan, kube, [
        network_section(plan.network),
        storage_section(plan.storage),
        *sim_sections(sim, subject=platform.metadata.name,
                      queues=f"{queues.mode}, as rendered in {SOURCE}"),
        handover_section(matrix, acceptance, HANDOVER_LINKS),
    ], generated=today, spec_path=spec_path, spec_text=spec_text, findings=findings)
    files = {
        # aiplat's own documents spell fields as the spec does (camelCase, ``fieldnames``).
        "plan.json": json.dumps(camel(plan.model_dump(mode="json", by_alias=True)),
                                indent=2) + "\n",
        "report.md": render_markdown(doc),
        **figure_files(doc),  # the SVG files report.md shows as images
        "report.html": render_html(doc),
        "simulation.json": json.dumps(camel(sim.to_dict() | {"timeline": None, "queues": {
            "source": SOURCE, "mode": queues.mode}}), indent=2) + "\n",
        **plan_files(kube),
        **_documents({"matrix/matrix": matrix_document(matrix), "runbook/runbook": runbook}),
        **{f"monitoring/{k}": v for k, v in render_monitoring(platform).items()},
    }
    if plan.deployment.recommendation == BARE_METAL:
        # Bare metal runs its jobs under Slurm: the same pools and tenants as a Slurm cluster
        # (the Kubernetes tree stays beside it, for comparison and for a later move).
        files |= {f"slurm/{k}": v for k, v in slurm_files(
            resolved, deployment=plan.deployment.recommendation).items()}
    return PlanOutputs(plan, kube, sim, queues, files, findings, doc)


def _documents(docs: dict[str, Document]) -> dict[str, str]:
    out: dict[str, str] = {}
    for stem, d in docs.items():
        out[f"{stem}.md"] = render_markdown(d)
        out[f"{stem}.html"] = render_html(d)
    return out
