"""``aiplat.ops.matrix``: facts on approved entries, spec consistency, planned patches, CLI."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from aiplat.catalog import load_catalog
from aiplat.cli.handover import matrix_group
from aiplat.errors import InputError
from aiplat.ops.matrix import (
    check_entry,
    check_matrix,
    diff_entries,
    dra_versions,
    find_entry,
    lowest,
    matrix_document,
    parse_changes,
    planned_entry,
)
from aiplat.report import render_html, render_markdown
from aiplat.spec import EXAMPLE, example_text, parse_platform
from aiplat.spec.models import Platform, VersionEntry

TODAY = date(2026, 11, 29)


@pytest.fixture(scope="module")
def platform() -> Platform:
    return parse_platform(example_text(), EXAMPLE, load_catalog())


def _with(platform: Platform, **kube: object) -> Platform:
    k = platform.kubernetes.model_copy(update=kube)
    return platform.model_copy(update={"kubernetes": k})


def _severities(entry: VersionEntry, platform: Platform) -> dict[str, str]:
    return {f.message: f.severity for f in check_entry(entry, platform, TODAY).facts}


def test_lowest_admitted_version() -> None:
    assert lowest(">=6.1,<6.13") == "6.1"
    assert lowest("containerd 2.1") == "2.1"
    assert lowest("580.95.05") == "580.95.05"
    assert lowest(">=1.33,>=1.34") == "1.34"
    assert lowest("<2") is None


def test_dra_api_by_kubernetes_minor() -> None:
    assert "v1" in dra_versions("1.34")
    assert "v1" in dra_versions("1.35.1")
    assert dra_versions("1.33") == ("v1alpha3", "v1beta1", "v1beta2")
    assert "v1" not in dra_versions("1.32")


def test_example_matrix_passes(platform: Platform) -> None:
    check = check_matrix(platform, TODAY)
    assert check.status == "pass", check.entries[0].facts
    assert [e.name for e in check.entries] == ["r580-k8s134"]


def test_cuda_needs_driver_from_node_facts(platform: Platform) -> None:
    entry = find_entry(platform, None)
    bad = planned_entry(entry, {"driver": "575.57.08", "cuda": "13.0"})
    facts = check_entry(bad, platform, TODAY).facts
    assert any(f.severity == "error" and "CUDA 13.0 needs driver >= 580" in f.message
               for f in facts)


def test_driver_branch_end_of_life_depends_on_today(platform: Platform) -> None:
    entry = planned_entry(find_entry(platform, None), {"driver": "535.247.01", "cuda": "12.2"})
    before = check_entry(entry, platform, date(2026, 6, 1)).facts
    after = check_entry(entry, platform, TODAY).facts
    assert not any("end of life" in f.message for f in before)
    assert any(f.severity == "warning" and "R535 LTSB reached end of life" in f.message
               for f in after)


def test_dra_needs_kubernetes_serving_resource_v1(platform: Platform) -> None:
    dra = _with(platform, gpu_resources="dra", version="1.33")
    entry = planned_entry(find_entry(dra, None), {"kubernetes": "1.33"})
    sev = _severities(entry, dra)
    assert any(s == "error" and "resource.k8s.io/v1" in m for m, s in sev.items())
    ok = _with(platform, gpu_resources="dra")
    assert check_entry(find_entry(ok, None), ok, TODAY).status == "pass"


def test_kueue_api_must_be_served(platform: Platform) -> None:
    old = planned_entry(find_entry(platform, None), {"kueue": "0.14.2"})
    msgs = [f.message for f in check_entry(old, platform, TODAY).facts if f.severity == "error"]
    assert any("kueueApi v1beta2 is served from Kueue 0.15" in m for m in msgs)
    v1beta1 = _with(platform, kueue_api="v1beta1", kueue_version="0.14.2")
    assert check_entry(old, v1beta1, TODAY).status == "pass"


def test_entry_must_admit_the_rendered_versions(platform: Platform) -> None:
    e = planned_entry(find_entry(platform, None), {"kubernetes": "1.35"})
    assert any("renders manifests for Kubernetes 1.34" in f.message
               for f in check_entry(e, platform, TODAY).facts)


def test_no_approved_entry_fails(platform: Platform) -> None:
    empty = platform.model_copy(update={"versions": platform.versions.model_copy(
        update={"approved": []})})
    assert check_matrix(empty, TODAY).status == "fail"
    with pytest.raises(InputError):
        find_entry(empty, None)


def test_diff_shows_changes_and_new_violations(platform: Platform) -> None:
    cur = find_entry(platform, "r580-k8s134")
    plan = planned_entry(cur, parse_changes(["driver=575.57.08", "gpuOperator=v25.10.1"]))
    d = diff_entries(cur, plan, platform, TODAY)
    assert {c.key: (c.before, c.after) for c in d.changes} == {
        "driver": ("580.95.05", "575.57.08"), "gpu_operator": ("v25.10.0", "v25.10.1")}
    assert d.status == "fail"
    assert [f.severity for f in d.new_facts] == ["info", "error"]  # unknown branch, CUDA 13
    back = diff_entries(plan, cur, platform, TODAY)
    assert back.status == "pass" and any("cuda" in f.subject for f in back.resolved)


def test_parse_changes_rejects_unknown_keys() -> None:
    assert parse_changes(["container-toolkit=1.18.1", "firmware="]) == {
        "container_toolkit": "1.18.1", "firmware": None}
    with pytest.raises(InputError, match="KEY one of"):
        parse_changes(["drivers=1"])


def test_document_renders(platform: Platform) -> None:
    doc = matrix_document(check_matrix(platform, TODAY))
    md = render_markdown(doc)
    assert "580.95.05" in md and "containerd 2.1" in md
    assert "<table" in render_html(doc)


def test_cli_show_check_diff(tmp_path: Path) -> None:
    r = CliRunner()
    show = r.invoke(matrix_group, ["show", "-w", str(tmp_path), "--today", "2026-11-29"])
    assert show.exit_code == 0, show.output
    assert "r580-k8s134" in show.output and (tmp_path / "matrix.html").exists()
    js = r.invoke(matrix_group, ["check", "-o", "json", "--today", "2026-11-29"])
    assert js.exit_code == 0 and json.loads(js.output)["status"] == "pass"
    bad = r.invoke(matrix_group, ["diff", "--set", "kueue=0.14.0", "--today", "2026-11-29"])
    assert bad.exit_code == 1 and "new   error: kueue 0.14.0" in bad.output
    assert r.invoke(matrix_group, ["diff", "--set", "nope=1"]).exit_code != 0


def test_matrix_diff_set_without_a_version_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aiplat.cli.main import main
    from aiplat.spec import example_text

    spec = tmp_path / "platform.yaml"
    spec.write_text(example_text())
    assert main(["matrix", "diff", str(spec), "--set", "kueue=junk"]) == 2
    assert "--set kueue: 'junk' is not a version" in capsys.readouterr().err
