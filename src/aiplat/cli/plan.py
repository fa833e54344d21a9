"""``aiplat plan [SPEC] [-d DIR] [-o table|json|yaml]``: size the platform and write plan.json
and the reports."""

from __future__ import annotations

import sys
import time
from datetime import date
from pathlib import Path

import click

from aiplat.catalog import load_catalog
from aiplat.cli._output import Existing, box_table, print_data
from aiplat.cli._output import console as out_console
from aiplat.errors import InputError
from aiplat.findings import Finding, line, ordered
from aiplat.fsutil import write_tree
from aiplat.inputs import STDIN, decode, read_stdin
from aiplat.kube.crds import load_crds
from aiplat.kube.pipeline import DEFAULT_VERSIONS, KubeCheck
from aiplat.ops.acceptance import Record, load_record
from aiplat.ops.plan_outputs import plan_outputs
from aiplat.plan import Plan
from aiplat.report import render_html
from aiplat.report.pdf import find_engine, html_to_pdf
from aiplat.sched.metrics import SimResult
from aiplat.spec import EXAMPLE, example_text, load_platform, parse_platform
from aiplat.text import shown


@click.command()
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("-d", "--out-dir", "out_dir", default="out", show_default=True,
              type=click.Path(file_okay=False), help="directory for plan.json and reports")
@click.option("-o", "--output", "fmt", type=click.Choice(["table", "json", "yaml"]),
              default="table", show_default=True, help="format of the summary on stdout")
@click.option("--crd-dir", type=Existing("a folder of CRDs", file_okay=False),
              help="CRDs of your cluster (Kueue, JobSet, Gateway API...) to validate against")
@click.option("--k8s-version", "k8s_versions", multiple=True, default=DEFAULT_VERSIONS,
              show_default=True, help="Kubernetes versions to validate the manifests for")
@click.option("--pdf", is_flag=True,
              help="also print the report to DIR/report.pdf (needs headless Chromium)")
def plan(spec: str | None, out_dir: str, fmt: str, crd_dir: str | None, *,
         k8s_versions: tuple[str, ...], pdf: bool) -> None:
    """Size the platform in SPEC (default: the built-in example) and write the plan.

    Writes DIR/plan.json (every figure with its formula inputs), DIR/report.md, a
    self-contained DIR/report.html, the rendered Kubernetes tree DIR/kube/ with its validation
    and lint result DIR/kube-check.json, a simulated month DIR/simulation.json, and the
    handover: DIR/matrix/, DIR/runbook/, DIR/monitoring/ (--pdf: DIR/report.pdf too).
    Exit 1 when the plan has error
    findings or the manifests fail validation or lint. SPEC - reads the spec from stdin.

    \b
    Examples:
      aiplat spec example > platform.yaml
      aiplat plan platform.yaml -d plan
    """
    from aiplat.kube.validate import check_version

    t0 = time.perf_counter()
    if out_dir == STDIN:  # never a folder named -
        raise InputError("-d -: the plan is many files, not one stream (fix: give a folder, "
                         "-d DIR; -o json|yaml prints the summary, and `aiplat kube render "
                         "SPEC -o yaml` streams the tree)")
    for what, path in (("SPEC", spec), ("-d", out_dir)):
        # Both are written into the report and the runbook's commands: text, not terminal
        # control (a path with an escape sequence would replay it wherever they are read).
        if path and not path.isprintable():
            raise InputError(f"{what} '{shown(path)}' holds a control or format character "
                             "(fix: rename it; the plan's documents quote it)")
    k8s_versions = tuple(check_version(v) for v in k8s_versions)
    engine = find_engine() if pdf else None  # missing: exit 2 before anything is written
    catalog = load_catalog()
    if spec == STDIN:  # read once: its text gives the report its digest too
        text = decode(read_stdin("a platform spec"), STDIN, "a platform spec")
        platform = parse_platform(text, STDIN, catalog)
    else:
        platform = (load_platform(spec, catalog) if spec
                    else parse_platform(example_text(), EXAMPLE, catalog))
        # The spec loaded: it is readable, bounded UTF-8; its text gives the report its digest.
        text = Path(spec).read_text(encoding="utf-8") if spec else example_text()
    out = plan_outputs(platform, catalog, today=date.today(),
                       spec_path=spec if spec and spec != STDIN else "platform.yaml",
                       spec_text=text,
                       crds=load_crds(crd_dir) if crd_dir else None, versions=k8s_versions,
                       acceptance=_last_acceptance(Path(out_dir)))
    files: dict[str, str | bytes] = dict(out.files)
    if engine is not None:  # printed from the page with every section open
        files["report.pdf"] = html_to_pdf(render_html(out.report, expanded=True), engine)
    write_tree(out_dir, files)
    data = _summary_data(out.plan) | {"findings": [f.model_dump() for f in out.findings],
                                      "simulation": _sim_summary(out.sim)}
    if fmt in ("json", "yaml"):
        print_data(fmt, data)
    else:
        _print_table(out.plan, out.findings)
        _print_sim(out.sim)
    click.echo(_kube_line(out.kube), err=True)
    elapsed = time.perf_counter() - t0
    slurm = ", slurm/" if any(f.startswith("slurm/") for f in out.files) else ""
    click.echo(f"wrote plan.json, report.md, report.html{', report.pdf' if engine else ''}, "
               f"kube/, matrix/, runbook/, monitoring/{slurm} ({len(files)} files)"
               f" to {shown(out_dir)} in {elapsed:.2f} s",
               err=True)
    if not out.ok:
        sys.exit(1)


def _last_acceptance(out: Path) -> Record | None:
    """The acceptance record `aiplat accept run -w DIR/acceptance` left beside the plan."""
    from aiplat import inputs

    path = out / "acceptance" / "acceptance.json"
    if not path.exists():  # none yet (or DIR is not a directory)
        return None
    try:
        return load_record(inputs.read_text(path, "an acceptance record"), str(path))
    except (InputError, ValueError) as e:
        raise InputError(f"{path}: not an acceptance record ({e}) (fix: run `aiplat accept "
                         f"run -w {path.parent}` again or remove it)") from e


def _sim_summary(sim: SimResult) -> dict[str, object]:
    return {"tenants": [{"tenant": t.name, "wait_p95_hours": round(t.wait_p95_h, 2),
                         "share": round(t.obtained_share, 3), "fair_share": round(t.fair_share, 3)}
                        for t in sim.tenants],
            "jain": round(sim.jain_index, 3), "utilisation": round(sim.utilisation, 3)}


def _print_sim(sim: SimResult) -> None:
    waits = ", ".join(f"{t.name} p95 wait {t.wait_p95_h:.1f} h (share {t.obtained_share:.0%} "
                      f"vs fair {t.fair_share:.0%})" for t in sim.tenants)
    click.echo(f"simulated month: {waits}; Jain {sim.jain_index:.2f}; GPU utilisation "
               f"{sim.utilisation:.0%}")


def _kube_line(kube: KubeCheck) -> str:
    errors = sum(f.severity == "error" for f in kube.findings)
    validation = ", ".join(f"{v.version}: {len(v.errors)} errors" for v in kube.validations)
    return (f"kubernetes: {len(kube.rendered.objects())} objects; validation {validation}; "
            f"lint {errors} errors, {len(kube.findings) - errors} warnings; "
            + (f"{len(kube.differences)} differences from the plan: "
               + "; ".join(kube.differences) if kube.differences else "pods as planned"))


def _duration(hours: float | None) -> str:
    if hours is None:
        return "always on"
    return f"{hours / 24:,.1f} days" if hours >= 48 else f"{hours:,.1f} h"


def _summary_data(p: Plan) -> dict[str, object]:
    return {
        "platform": p.platform,
        "workloads": [{"name": w.name, "kind": w.kind, "pool": w.pool, "gpus": w.gpus,
                       "gpu_hours_per_month": round(w.gpu_hours_per_month, 1)}
                      for w in p.workloads],
        "pools": [{"name": q.name, "nodes": q.nodes, "gpus": q.gpus, "spares": q.spare_nodes,
                   "peak_demand_gpus": q.peak_demand_gpus, "power_kw": round(q.pool_power_kw, 2),
                   "racks": q.racks} for q in p.pools],
        "it_power_kw": round(p.facility.it_power_kw, 2),
        "facility_power_kw": round(p.facility.facility_power_kw, 2),
        "racks": p.facility.racks,
        "fabric": {"switches": p.fabric.switches, "racks": p.fabric.racks,
                   "power_kw": round(p.fabric.power_w / 1000, 2),
                   "compute": None if p.fabric.compute is None else {
                       "technology": p.fabric.compute.technology,
                       "tiers": p.fabric.compute.sized.tiers,
                       "leaves": p.fabric.compute.sized.leaves,
                       "spines": p.fabric.compute.sized.spines,
                       "cores": p.fabric.compute.sized.cores,
                       "ufm_appliances": p.fabric.compute.ufm_appliances}},
        "deployment": p.deployment.recommendation,
        "cost": {"currency": p.bom.currency, "capex": round(p.bom.capex, 2),
                 "unpriced": p.bom.unpriced, "opex_per_month": round(p.bom.opex_per_month, 2)},
    }


def _print_table(p: Plan, findings: list[Finding]) -> None:
    console = out_console()
    wt = box_table(f"Workloads — {p.platform}",
                   ("workload", "kind", "pool", "model", "GPUs", "run", "GPU-h/month"),
                   right=("GPUs", "GPU-h/month"))
    for w in p.workloads:
        run = _duration(w.run_hours)
        wt.add_row(w.name, w.kind, w.pool, w.model, str(w.gpus), run,
                   f"{w.gpu_hours_per_month:,.0f}")
    console.print(wt)
    cols = ("pool", "GPU", "nodes", "GPUs", "peak", "avg", "spares", "kW", "racks")
    pt = box_table("Pools", cols, right=cols[2:])
    for q in p.pools:
        pt.add_row(q.name, q.gpu_model or "CPU", str(q.nodes), str(q.gpus),
                   str(q.peak_demand_gpus), f"{q.average_demand_gpus:.1f}",
                   str(q.spare_nodes), f"{q.pool_power_kw:.1f}", str(q.racks))
    console.print(pt)
    f = p.facility
    console.print(
        f"IT power {f.it_power_kw:,.1f} kW of {f.power_budget_kw:g} kW budget · facility "
        f"{f.facility_power_kw:,.1f} kW · cooling {f.cooling_btu_per_hour:,.0f} BTU/h · "
        f"{f.racks} racks · deployment: {p.deployment.recommendation}"
    )
    console.print(p.fabric.summary())
    console.print(p.bom.summary())
    # Findings are diagnostics, on stderr as kubectl's warnings are; -o json|yaml has them
    # as data.
    for x in ordered(findings):
        click.echo(line(x), err=True)
    if not findings:
        click.echo("no findings", err=True)
