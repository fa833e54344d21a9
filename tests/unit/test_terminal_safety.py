"""Text from outside reaches the terminal escaped wherever aiplat prints it (issue #38): an
error message that quotes a path or name, and YAML data (which counts a bidi override as
printable and would write it raw)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from aiplat.cli.main import main
from aiplat.cli.node import node
from fixtures.nodes import l40s_4

ESC = "\x1b]0;PWNED\x07\x1b[2J"
RLO = "\u202e"


def _hostile_sample(name: str, folder: Path, suffix: str) -> None:
    """Sample snapshot ``name`` in ``folder``, every Workload's name ending in ``suffix``."""
    import json

    from aiplat.samples import get

    get(name, folder)
    wl = folder / "workloads.json"
    doc = json.loads(wl.read_text())
    for w in doc["items"]:
        w["metadata"]["name"] += suffix
    wl.write_text(json.dumps(doc))


def test_an_error_quoting_a_hostile_path_is_escaped(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    path = tmp_path / f"plat{ESC}{RLO}form.yaml"
    path.write_text("apiVersion: aiplat/v1alpha1\nkind: Platform\nmetadata: {name: x}\n"
                    "pools: 3\n")
    assert main(["spec", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and RLO not in err and "\x07" not in err
    assert "plat\\x1b]0;PWNED\\x07\\x1b[2J\\u202eform.yaml" in err
    assert err.count("\n") >= 1  # a message's own lines stay lines


def test_node_inventory_yaml_escapes_a_bidi_override_in_the_hostname(tmp_path: Path) -> None:
    root = l40s_4(tmp_path)
    (root / "proc/sys/kernel/hostname").write_text(f"gpu{RLO}01\n")
    r = CliRunner().invoke(node, ["inventory", "--root", str(root), "-o", "yaml"])
    assert r.exit_code == 0, r.output
    assert RLO not in r.stdout and "\\u202E" in r.stdout
    assert yaml.safe_load(r.stdout)["host"]["hostname"] == f"gpu{RLO}01"  # the data kept




def test_accounting_refuses_a_tenant_that_could_drive_the_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A tenant is a namespace or label value: a control or format character is no part of
    one, so a record holding one is refused (table, CSV and JSON alike), named escaped."""
    csv = tmp_path / "rec.csv"
    csv.write_text("tenant,start,end,count\n"
                   f"x{ESC}{RLO}y,2026-01-01T00:00:00Z,2026-01-02T00:00:00Z,1\n")
    for out in ("table", "csv", "json"):
        assert main(["accounting", "report", str(csv), "--until", "2026-01-03T00:00:00Z",
                     "-o", out]) == 2
        io = capsys.readouterr()
        assert "\x1b" not in io.out + io.err and RLO not in io.out + io.err
        assert "tenant 'x\\x1b]0;PWNED\\x07\\x1b[2J\\u202ey' holds a control" in io.err


def test_sim_replay_shows_a_snapshots_names_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Workload names of a snapshot reach the replay's table and its warnings escaped (and a
    name like '[/x]' is no rich markup)."""
    _hostile_sample("snapshot-waiting-for-preemption", tmp_path / "snap", f"{ESC}{RLO}[/x]")
    (tmp_path / "snap" / "namespaces.json").unlink()  # a warning names the workloads
    assert main(["sim", "replay", str(tmp_path / "snap")]) == 0
    io = capsys.readouterr()
    assert "\x1b" not in io.out + io.err and RLO not in io.out + io.err
    assert "\\x1b]0;PWNED" in io.out  # the table (its cells may wrap)
    assert "\\x1b]0;PWNED\\x07\\x1b[2J\\u202e[/x]" in io.err  # the not-replayed warning


def test_plan_refuses_paths_its_documents_would_quote_raw(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The spec's path and -d land in the report and the runbook's commands (the red team's
    fourth round: report.md, runbook.md and their HTML carried ESC, BEL and U+202E)."""
    from aiplat.spec import example_text

    spec = tmp_path / f"sp{ESC}{RLO}.yaml"
    spec.write_text(example_text())
    assert main(["plan", str(spec), "-d", str(tmp_path / "out")]) == 2
    assert main(["plan", "-d", str(tmp_path / f"out{ESC}")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and RLO not in err
    assert "SPEC '" in err and "-d '" in err and "holds a control or format character" in err
    assert not list(tmp_path.glob("out*"))  # nothing written


def test_success_lines_show_file_names_escaped(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from aiplat.spec import example_text

    spec = tmp_path / f"sp{RLO}.yaml"
    spec.write_text(example_text())
    assert main(["spec", "validate", str(spec)]) == 0
    out = capsys.readouterr().out
    assert RLO not in out and "sp\\u202e.yaml: valid" in out


def test_why_pending_shows_a_snapshots_names_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _hostile_sample("snapshot-tas-rack-too-small", tmp_path / "snap", f"{ESC}{RLO}")
    for fmt in ("table", "yaml", "json"):
        main(["kube", "why-pending", "pretrain-big", "-n", "research", "--snapshot",
              str(tmp_path / "snap"), "-o", fmt])
        io = capsys.readouterr()
        assert "\x1b" not in io.out + io.err and RLO not in io.out + io.err, fmt
        assert "PWNED" in io.out, fmt
        back = yaml.safe_load(io.out) if fmt != "table" else None
        assert back is None or any(f"{ESC}{RLO}" in str(v) for v in back.values())  # kept


def test_sharing_plan_shows_a_demands_tenant_escaped(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    main(["sharing", "plan", "--gpu", "H100-SXM-80GB", "--demand", f"t{ESC}{RLO}:1g.10gb=3"])
    io = capsys.readouterr()
    assert "\x1b" not in io.out + io.err and RLO not in io.out + io.err
    assert "tenant t\\x1b]0;PWNED" in io.out


def test_reports_show_outside_text_escaped_and_keep_their_lines() -> None:
    """Markdown and HTML documents (the plan's report, the runbook, acceptance reports) quote
    records, specs and peers: no escape sequence or bidi override is written raw."""
    from aiplat.report.document import Document, Section, Table
    from aiplat.report.html import render_html
    from aiplat.report.markdown import render_markdown

    doc = Document(title=f"t{ESC}", sections=[Section(
        id="s", title="s", paragraphs=[f"line one{RLO}\nline two"],
        tables=[Table(columns=["a"], rows=[[f"cell{ESC}"]])])])
    for text in (render_markdown(doc), render_html(doc)):
        assert "\x1b" not in text and RLO not in text and "\x07" not in text
        assert "PWNED" in text and "\\u202e" in text
    assert "line one\\u202e\nline two" in render_markdown(doc)


def test_model_tables_show_names_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    """A ref name read back from the cache (or a registry's) reaches `model ls` escaped."""
    from aiplat.cli.model import _emit

    _emit({}, "table", [f"sha256:abc  1 KiB  127.0.0.1:5000/m:t{ESC}{RLO}"])
    out = capsys.readouterr().out
    assert "\x1b" not in out and RLO not in out and "m:t\\x1b]0;PWNED" in out


def test_runtime_config_diff_shows_a_configs_bidi_override_escaped(
        capsys: pytest.CaptureFixture[str]) -> None:
    """TOML allows U+202E and U+200B raw in strings and comments (the red team's sixth round,
    F3): the diff shown before --write quotes the host's file, escaped."""
    toml = Path(__file__).resolve().parents[1] / "fixtures" / "containerd-bidi.toml"
    main(["runtime", "config", "containerd", "--current", str(toml), "--version", "1.7.20",
          "-o", "diff"])
    out = capsys.readouterr().out
    assert out and RLO not in out and "\u200b" not in out and "\\u202e" in out
