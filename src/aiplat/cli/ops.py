"""``aiplat monitoring render [SPEC] -d DIR`` and ``aiplat runbook [SPEC] -d DIR``.

Thin: load the spec (default: the built-in example), call the builders in ``aiplat.ops``,
render everything in memory, then write the files atomically. A summary goes to stdout;
what was written and the open items go to stderr.
"""

from __future__ import annotations

import shlex
import sys

import click

from aiplat.catalog import load_catalog
from aiplat.cli._output import OutDir
from aiplat.fsutil import write_tree
from aiplat.ops.monitoring import (
    Discovery,
    monitoring_rules,
    render_monitoring,
    verify_commands,
    verify_notes,
)
from aiplat.ops.runbook import gaps, runbook_document
from aiplat.plan import build_plan
from aiplat.report import render_html, render_markdown
from aiplat.spec import EXAMPLE, example_text, load_platform, parse_platform
from aiplat.spec.models import Platform
from aiplat.text import shown


def _platform(spec: str | None) -> Platform:
    catalog = load_catalog()
    return load_platform(spec, catalog) if spec else parse_platform(
        example_text(), EXAMPLE, catalog)


@click.group()
def monitoring() -> None:
    """Prometheus rules, their unit tests, scrape configuration and checklist."""


@monitoring.command("render")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("-d", "--out-dir", "out_dir", default="out/monitoring", show_default=True,
              type=OutDir(), help="directory for the files")
@click.option("--discovery", type=click.Choice(["kubernetes", "file"]), default="kubernetes",
              show_default=True, help="scrape targets from Kubernetes pods or from files")
def monitoring_render(spec: str | None, out_dir: str, discovery: str) -> None:
    """Write the rules, their promtool tests, prometheus.yaml and the checklist for SPEC.

    Check them with promtool in DIR: check rules, test rules and check config --syntax-only
    (the full check config once the Kueue token file is in place; Kubernetes discovery needs
    a promtool built with it, which Debian's is not). The commands are printed at the end.

    \b
    Examples:
      aiplat monitoring render -d monitoring
      aiplat spec example > platform.yaml
      aiplat monitoring render platform.yaml -d monitoring --discovery file
    """
    mode: Discovery = "file" if discovery == "file" else "kubernetes"
    platform = _platform(spec)
    groups = monitoring_rules(platform)
    written = write_tree(out_dir, render_monitoring(platform, mode))
    for g in groups:
        names = ", ".join(a.name for a in g.alerts)
        records = len(g.rules) - len(g.alerts)
        click.echo(f"{g.name}: {len(g.alerts)} alerts, {records} recording rules — {names}")
    click.echo(f"wrote {shown(', '.join(str(p) for p in written))}", err=True)
    checks = " && ".join(cmd for _, cmd in verify_commands(mode))
    click.echo(f"check: cd {shlex.quote(out_dir)} && {checks}", err=True)
    for note in verify_notes(mode):
        click.echo(f"note: {note}", err=True)


@click.command()
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("-d", "--out-dir", "out_dir", default="out/runbook", show_default=True,
              type=OutDir(), help="directory for runbook.md and .html")
@click.option("--strict", is_flag=True, help="exit 1 when the spec leaves handover items open")
def runbook(spec: str | None, out_dir: str, strict: bool) -> None:
    """Write the runbook for SPEC (default: the built-in example) as Markdown and HTML.

    Responsibilities, escalation, alert response, maintenance windows with canary order,
    approved versions and the procedures with their exact aiplat and kubectl commands.

    \b
    Examples:
      aiplat runbook -d runbook
      aiplat spec example > platform.yaml
      aiplat runbook platform.yaml -d runbook --strict
    """
    platform = _platform(spec)
    plan = build_plan(platform, load_catalog())
    spares = {p.name: p.spare_nodes for p in plan.pools}
    doc = runbook_document(platform, spec or "platform.yaml", spares)
    files = {"runbook.md": render_markdown(doc), "runbook.html": render_html(doc)}
    written = write_tree(out_dir, files)
    for section in doc.sections:
        steps = sum(len(t.rows) for t in section.tables if t.title == "Steps")
        click.echo(f"{section.id:18} {section.title}" + (f" ({steps} steps)" if steps else ""))
    open_items = gaps(platform)
    for item in open_items:
        click.echo(f"warning: {item}", err=True)
    click.echo(f"wrote {shown(', '.join(str(p) for p in written))}", err=True)
    if strict and open_items:
        sys.exit(1)
