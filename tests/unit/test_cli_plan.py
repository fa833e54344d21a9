"""`aiplat plan` as a user runs it: files written, exit codes, nothing half-written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from aiplat.cli.main import main
from aiplat.spec import example_text


def test_plan_writes_json_markdown_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["plan", "-d", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "figures", "kube", "kube-check.json", "matrix", "monitoring", "plan.json",
        "report.html", "report.md", "runbook", "simulation.json"]
    for linked in ("matrix/matrix.html", "runbook/runbook.html", "monitoring/aiplat-rules.yaml"):
        assert (out / linked).is_file()
    # the report's drawings: SVG files beside report.md, which shows each as an image
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert figures == ["compute-fabric.svg", "network-zones.svg", "rack-elevations.svg",
                       "sim-timelines.svg"]
    report = (out / "report.md").read_text()
    assert all(f"](figures/{name})" in report for name in figures)
    assert (out / "kube" / "kustomization.yaml").exists()
    plan = json.loads((out / "plan.json").read_text())  # fields spelled as the spec's
    assert plan["platform"] == "example" and plan["kubernetesVersion"]
    stdout, stderr = capsys.readouterr()
    assert "domain-pretrain" in stdout and "h100" in stdout
    assert "wrote" in stderr and "wrote" not in stdout
    assert "lint 0 errors" in stderr
    md = (out / "report.md").read_text()
    for heading in ("## Findings", "## Workloads", "## Pools", "## Power, cooling and racks",
                    "## Reserve", "## Node roles and network zones", "## Deployment model",
                    "## Kubernetes", "## Network", "## Model storage and cache",
                    "## Simulated queues", "## Handover"):
        assert heading in md
    html = (out / "report.html").read_text()
    # charts: demand, memory, power by pool; simulated waits, shares and capacity;
    # drawings: racks, network zones, compute fabric, tenants over the month
    assert html.count("<svg") == 6 + 4


def test_plan_json_format_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "-d", str(tmp_path), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {p["name"] for p in data["pools"]} == {"h100", "l40s"}
    assert data["deployment"] == "kubernetes"
    assert {t["tenant"] for t in data["simulation"]["tenants"]} == {"research", "serving", "batch"}


def test_output_is_a_format_and_the_directory_is_d(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # kubectl habits (issue 16/23): -o/--output is the format, -d/--out-dir the folder;
    # data on stdout, findings and progress on stderr.
    assert main(["plan", "--out-dir", str(tmp_path / "a"), "--output", "yaml"]) == 0
    out = capsys.readouterr()
    data = yaml.safe_load(out.out)
    assert data["platform"] == "example" and {p["name"] for p in data["pools"]} == {"h100", "l40s"}
    assert "warning:" not in out.out and "wrote plan.json" in out.err
    assert (tmp_path / "a" / "plan.json").is_file()
    assert main(["plan", "-d", str(tmp_path / "b")]) == 0
    table = capsys.readouterr()
    assert "Workloads" in table.out and "warning:" not in table.out
    assert ("warning:" in table.err) or ("no findings" in table.err)
    # The old spelling fails loudly instead of making a folder called json.
    assert main(["plan", "-o", str(tmp_path / "c")]) == 2
    assert "Invalid value for '-o'" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_bad_spec_exits_2_and_writes_nothing(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(example_text().replace("tenant: batch", "tenant: bacth"))
    out = tmp_path / "out"
    assert main(["plan", str(spec), "-d", str(out)]) == 2
    _, err = capsys.readouterr()
    assert f"{spec}:" in err and "unknown tenant 'bacth'" in err and "did you mean 'batch'" in err
    assert not out.exists()


def test_error_findings_exit_1_but_the_plan_is_written(tmp_path: Path) -> None:
    spec = tmp_path / "tight.yaml"
    spec.write_text(example_text().replace("powerBudgetKW: 160", "powerBudgetKW: 40"))
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        main(["plan", str(spec), "-d", str(out)])
    assert exc.value.code == 1
    plan = json.loads((out / "plan.json").read_text())
    assert plan["facility"]["fitsBudget"] is False


def test_existing_files_beside_the_outputs_survive(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "plan.json").write_text("old")
    assert main(["plan", "-d", str(out)]) == 0
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "plan.json").read_text().startswith("{")
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_a_corrupt_acceptance_record_beside_the_plan_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "out" / "acceptance" / "acceptance.json"
    record.parent.mkdir(parents=True)
    record.write_text("{not json")
    assert main(["plan", "-d", str(tmp_path / "out")]) == 2
    assert "not an acceptance record" in capsys.readouterr().err
    assert not (tmp_path / "out" / "plan.json").exists()
