"""``aiplat kube`` as a user runs it: files written, stdout/stderr split, exit codes; and the
report section the plan uses."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.cli.kube import kube
from aiplat.errors import AiplatError
from aiplat.kube import check_platform, load_crds
from aiplat.report.kube_doc import kube_section
from aiplat.spec import EXAMPLE, example_text, parse_platform

SHARED = Path(__file__).parents[2].parent / "shared"
SNAPSHOTS = Path(__file__).parents[1] / "data" / "snapshots"


def run(args: list[str]) -> int:
    """What aiplat.cli.main.main does for a registered group."""
    try:
        kube.main(args=args, prog_name="aiplat kube", standalone_mode=False)
    except AiplatError as e:
        click.echo(f"error: {e}", err=True)
        return e.exit_code
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except SystemExit as e:
        return int(e.code or 0)
    return 0


def test_render_validate_lint_round_trip(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kube"
    assert run(["render", "-d", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    assert "tenants" in stdout and "wrote" in stderr and "wrote" not in stdout
    assert (out / "kustomization.yaml").exists()
    assert (out / "cluster" / "nodes" / "inventory.yaml").exists()
    assert run(["validate", str(out), "--k8s-version", "1.34", "--k8s-version", "1.35",
                "--crd-dir", str(SHARED / "schemas"), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(d["version"], d["errors"], d["issues"]) for d in data] == [
        ("1.34", 0, []), ("1.35", 0, [])]
    # The tree without its opt-in examples: the tenants' gateway NetworkPolicies open
    # pods that only the examples run, and lint says so.
    assert run(["lint", str(out), "-o", "yaml"]) == 0
    assert {(f["source"], f["subject"].split("/")[0]) for f in yaml.safe_load(
        capsys.readouterr().out)} == {("selector-matches", "NetworkPolicy")}
    # With them, the shipped example is lint-clean.
    assert run(["render", "-d", str(out), "--with-examples"]) == 0
    capsys.readouterr()
    assert run(["lint", str(out), "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == []


def test_validate_with_packaged_crds_and_lint_errors_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kube"
    assert run(["render", "-d", str(out)]) == 0
    assert run(["validate", str(out)]) == 0
    # The packaged CRDs check every custom resource without --crd-dir.
    assert "0 errors, 0 warnings" in capsys.readouterr().out
    lq = out / "kueue" / "localqueues.yaml"
    lq.write_text(lq.read_text().replace("clusterQueue: batch", "clusterQueue: bach"))
    assert run(["lint", str(out)]) == 1
    assert "[localqueue-clusterqueue] LocalQueue/batch/batch" in capsys.readouterr().out
    lq.write_text(lq.read_text().replace("kind: LocalQueue", "kind: LocalQueue\nspec2: {}", 1))
    assert run(["validate", str(out), "--crd-dir", str(SHARED / "schemas")]) == 1


def test_lint_a_spec_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "platform.yaml"
    # A borrowing limit nobody can lend: serving lends none of its h100 quota. A warning: exit 0.
    spec.write_text(example_text().replace("borrowingLimit: 4}", "borrowingLimit: 8}")
                    .replace("lendingLimit: 4}", "lendingLimit: 0}"))
    assert run(["lint", str(spec), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["source"] == "borrowing-cohort"


def test_why_pending_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["why-pending", "eval", "-n", "research", "--snapshot",
                str(SNAPSHOTS / "cohort-borrowing-limit")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "borrowingLimit is 8" in first and first.endswith("[BorrowingLimit]")
    assert run(["why-pending", "nothing", "--snapshot",
                str(SNAPSHOTS / "cohort-borrowing-limit")]) == 2
    assert run(["why-pending", "eval", "--snapshot", "x", "--kubeconfig", "y"]) == 2
    assert "not both" in capsys.readouterr().err


def test_why_pending_reads_the_kubeconfig_kubectl_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    assert run(["why-pending", "eval"]) == 2
    assert f"no kubeconfig at {tmp_path}/.kube/config" in capsys.readouterr().err
    bad = tmp_path / "kc"
    bad.write_text("{}")
    monkeypatch.setenv("KUBECONFIG", f"{bad}:{tmp_path}/other")
    assert run(["why-pending", "eval"]) == 2  # $KUBECONFIG's first file is the one read
    assert str(bad) in capsys.readouterr().err


def test_bad_inputs_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["validate", str(tmp_path / "missing")]) == 2
    assert run(["validate", str(tmp_path), "--k8s-version", "1.99"]) == 2
    (tmp_path / "kustomization.yaml").write_text("resources: [gone.yaml]\n")
    assert run(["validate", str(tmp_path)]) == 2
    assert "gone.yaml" in capsys.readouterr().err


def test_report_section_for_the_plan() -> None:
    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    check = check_platform(platform, catalog, load_crds(SHARED / "schemas"))
    assert [v.version for v in check.validations] == ["1.34", "1.35"]
    assert all(v.ok and not v.issues for v in check.validations)
    section = kube_section(check)
    assert section.id == "kubernetes"
    titles = [t.title for t in section.tables]
    assert titles == ["Rendered objects", "Validation"]  # the example is lint-clean


def test_plan_files_hold_the_tree_and_the_check() -> None:
    from aiplat.kube.pipeline import plan_files

    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    check = check_platform(platform, catalog, load_crds(SHARED / "schemas"))
    files = plan_files(check)
    assert "kube/kustomization.yaml" in files and "kube/kueue/clusterqueues.yaml" in files
    summary = json.loads(files["kube-check.json"])
    assert summary["ok"] is True and summary["objects"] > 80
    assert [v["errors"] for v in summary["validation"]] == [0, 0]
    assert summary["lint"] == []
