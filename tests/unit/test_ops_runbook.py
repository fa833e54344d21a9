"""The runbook as data: RACI and gaps, escalation, canary plan, the procedures' commands and
their order, the links from alerts, and the rendered Markdown; the CLI commands."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from aiplat.catalog import load_catalog
from aiplat.cli.ops import monitoring, runbook
from aiplat.ops.monitoring import monitoring_rules
from aiplat.ops.runbook import (
    AREAS,
    Procedure,
    describe_cron,
    gaps,
    procedures,
    raci,
    rollout,
    runbook_document,
)
from aiplat.report import render_markdown
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform


def example(edit: Callable[[dict[str, Any]], None] | None = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), EXAMPLE, load_catalog())


def full_raci(data: dict[str, Any]) -> None:
    data["operations"]["responsibilities"] = [
        {"area": a, "responsible": f"{a.replace(' ', '-')}-team", "accountable": "cto"}
        for a in AREAS]


def by_id(platform: Platform) -> dict[str, Procedure]:
    return {p.id: p for p in procedures(platform, "site.yaml", {"h100": 1, "l40s": 2})}


def position(proc: Procedure, needle: str) -> int:
    for i, step in enumerate(proc.steps):
        if needle in step.command:
            return i
    raise AssertionError(f"{proc.id}: no step runs {needle!r}")


def only_nodes(data: dict[str, Any]) -> None:
    data["operations"]["responsibilities"] = data["operations"]["responsibilities"][:1]


def test_raci_covers_every_area_and_reports_gaps() -> None:
    rows, open_items = raci(example(only_nodes))
    assert [r[0] for r in rows] == list(AREAS)
    assert rows[0] == ["nodes", "platform-team", "head-of-infra", "research-leads",
                       "serving-oncall"]
    assert len(open_items) == len(AREAS) - 1
    assert all("operations.responsibilities" in g for g in open_items)
    assert raci(example())[1] == []  # the shipped example assigns every area
    assert raci(example(full_raci))[1] == []
    assert gaps(example(full_raci)) == []


def test_missing_escalation_and_windows_are_gaps_and_notes() -> None:
    def bare(data: dict[str, Any]) -> None:
        full_raci(data)
        data["operations"]["escalation"] = []
        data["operations"]["maintenanceWindows"] = []

    p = example(bare)
    assert len(gaps(p)) == 2
    doc = runbook_document(p)
    notes = {s.id: s.notes for s in doc.sections}
    assert any("escalation" in n for n in notes["escalation"])
    assert any("maintenance window" in n for n in notes["maintenance"])


def test_node_patch_order_respects_kueue_and_checks_before_uncordon() -> None:
    proc = by_id(example())["node-patch"]
    order = [position(proc, c) for c in (
        "aiplat node baseline record", "kubectl cordon", "kueue.x-k8s.io/job-uid",
        '"active":false', "kubectl drain", '"active":true', "aiplat node prepare",
        "aiplat node check", "aiplat node baseline compare", "aiplat cdi verify",
        "kubectl uncordon")]
    assert order == sorted(order)
    assert "site.yaml --pool $POOL --matrix" in proc.steps[position(
        proc, "aiplat node check")].command
    assert "--ignore-daemonsets" in proc.steps[position(proc, "kubectl drain")].command
    # Rollback returns to the previous approved entry and proves it.
    rollback = " ".join(s.command for s in proc.rollback)
    assert "site.yaml.previous" in rollback and "baseline compare" in rollback
    # The pool tolerance from the spec is what the comparison is judged by.
    assert "h100 10%" in proc.steps[position(proc, "baseline compare")].expect
    assert "--entry r580-k8s134 -w prepare-$NODE.sh" in proc.steps[position(
        proc, "aiplat node prepare")].command


def test_every_required_procedure_is_there_with_commands() -> None:
    procs = by_id(example())
    assert set(procs) == {"node-patch", "driver-upgrade", "operator-upgrade", "kueue-upgrade",
                          "cluster-upgrade", "add-tenant", "replace-node", "fabric-link"}
    for p in procs.values():
        assert any(s.command.startswith(("aiplat ", "kubectl ", "helm ")) for s in p.steps)
    assert "580.95.05" in " ".join(s.expect for s in procs["driver-upgrade"].steps)
    assert "v25.10.0" in " ".join(s.command for s in procs["operator-upgrade"].steps)
    tenant = " ".join(s.command for s in procs["add-tenant"].steps)
    for cmd in ("aiplat spec validate site.yaml", "aiplat kube lint", "kubectl apply -k",
                "aiplat monitoring render site.yaml"):
        assert cmd in tenant
    replace = " ".join(s.command for s in procs["replace-node"].steps)
    assert "label-and-taint.sh --at $POS $POOL $NODE" in replace and "aiplat node burnin" in replace
    fabric = " ".join(s.command for s in procs["fabric-link"].steps)
    assert "aiplat diagnose rdma rdma --before rdma-before" in fabric
    assert "kubectl drain $NODE" in fabric and "ib_write_bw -d $DEV" in fabric
    assert "etcdctl snapshot save" in " ".join(s.command for s in procs["cluster-upgrade"].steps)


def test_canary_plan_uses_spares_and_the_window() -> None:
    p = example()
    h100 = p.pools[0]
    # 6 nodes: 1 canary, then 5 in batches of 1; 4 h window = 5 batches of 45 min.
    assert rollout(h100, {"h100": 1}, 4) == ["h100", "6", "1", "1", "5", "2"]
    assert rollout(h100, {"h100": 2}, 4) == ["h100", "6", "1", "2", "3", "2"]
    assert rollout(h100, {}, 1) == ["h100", "6", "1", "1", "5", "6"]
    assert rollout(h100, {"h100": 0}, None)[3:] == ["1", "5", "—"]


@pytest.mark.parametrize(("cron", "reading"), [
    ("0 2 * * 6", "Saturdays 02:00"), ("30 23 * * 0", "Sundays 23:30"),
    ("0 4 * * *", "daily 04:00"), ("0 1 15 * *", "monthly on day 15 01:00"),
    ("*/5 * * * *", "*/5 * * * *"), ("0 2 * * 1-5", "0 2 * * 1-5")])
def test_describe_cron(cron: str, reading: str) -> None:
    assert describe_cron(cron) == reading


def test_every_alert_links_to_a_section_of_the_runbook() -> None:
    p = example()
    groups = monitoring_rules(p)
    doc = runbook_document(p, groups=groups)
    ids = {s.id for s in doc.sections}
    linked = {a.procedure for g in groups for a in g.alerts if a.procedure}
    assert linked and linked <= ids
    alert_table = next(s for s in doc.sections if s.id == "alerts").tables[0]
    assert len(alert_table.rows) == sum(len(g.alerts) for g in groups)


def test_markdown_keeps_commands_with_pipes_inside_their_cells() -> None:
    md = render_markdown(runbook_document(example(full_raci), "site.yaml", {"h100": 1}))
    assert "## Node patch (OS, kernel, firmware, driver on the node)" in md
    assert "kubectl cordon $NODE" in md
    header = "| # | Action | Command | Expect |"
    assert header in md
    # Every row of a steps table has exactly the header's 5 unescaped pipes.
    rows: list[str] = []
    inside = False
    for ln in md.splitlines():
        if ln == header:
            inside = True
        elif not ln:
            inside = False
        elif inside and not ln.startswith("| ---"):
            rows.append(ln)
    assert rows and all(len(re.findall(r"(?<!\\)\|", ln)) == 5 for ln in rows)
    assert "sort -u \\| while read" in md


def test_cli_runbook_and_monitoring_render_write_files(tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(runbook, ["-d", str(tmp_path / "rb")])
    assert r.exit_code == 0, r.output
    assert "node-patch" in r.stdout and "warning" not in r.stderr
    assert sorted(p.name for p in (tmp_path / "rb").iterdir()) == ["runbook.html", "runbook.md"]
    assert runner.invoke(runbook, ["-d", str(tmp_path / "rb"), "--strict"]).exit_code == 0
    gappy = tmp_path / "gappy.yaml"
    data = yaml.safe_load(example_text())
    only_nodes(data)
    gappy.write_text(yaml.safe_dump(data, sort_keys=False))
    r = runner.invoke(runbook, [str(gappy), "-d", str(tmp_path / "rb2"), "--strict"])
    assert r.exit_code == 1 and "warning: nobody is responsible for drivers" in r.stderr
    r = runner.invoke(monitoring, ["render", "-d", str(tmp_path / "mon"),
                                   "--discovery", "file"])
    assert r.exit_code == 0, r.output
    assert "aiplat-gpu: 12 alerts" in r.stdout
    assert (tmp_path / "mon" / "targets" / "dcgm-exporter.yaml").is_file()


def test_cli_runbook_on_a_spec_file_uses_its_path(tmp_path: Path) -> None:
    spec = tmp_path / "site.yaml"
    data = yaml.safe_load(example_text())
    full_raci(data)
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    r = CliRunner().invoke(runbook, [str(spec), "-d", str(tmp_path / "rb"), "--strict"])
    assert r.exit_code == 0, r.output
    md = (tmp_path / "rb" / "runbook.md").read_text()
    assert f"aiplat node check {spec} --pool $POOL --matrix" in md
