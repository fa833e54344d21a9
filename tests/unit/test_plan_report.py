"""The plan report a manager reads (issue #45 item 6): one list of findings shared by the
report, the CLI and its JSON; no code identifiers in the prose; the summary and the bill of
materials (see also tests/integration/test_report_browser.py for the page in Chromium)."""

from __future__ import annotations

import functools
import json
import re
from datetime import date
from pathlib import Path

import pytest

from aiplat.catalog import load_catalog
from aiplat.cli.main import main
from aiplat.findings import line
from aiplat.ops.plan_outputs import PlanOutputs, plan_outputs
from aiplat.report.document import Code
from aiplat.report.prose import prose
from aiplat.spec import EXAMPLE, example_text, parse_platform


@functools.cache
def example() -> PlanOutputs:
    catalog = load_catalog()
    return plan_outputs(parse_platform(example_text(), EXAMPLE, catalog), catalog,
                        today=date(2026, 12, 1))


def test_network_warnings_are_findings_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example's RoCE storage segment draws a network warning: it was in the report's
    network section only, not in the findings, the CLI's lines or -o json."""
    out = example()
    network = [f for f in out.findings if f.source == "network"]
    assert [(f.severity, f.subject) for f in network] == [("warning", "segment storage")]
    assert all(f in out.plan.all_findings for f in network)
    md = out.files["report.md"]
    findings_part = md.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert "PFC on priority 3" in findings_part
    assert main(["plan", "-d", str(tmp_path / "t")]) == 0
    assert line(network[0]) in capsys.readouterr().err
    assert main(["plan", "-d", str(tmp_path / "j"), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["message"] for f in data["findings"]] == [f.message for f in out.findings]


def test_report_prose_has_no_snake_case_identifiers() -> None:
    """bare_metal, operating_effort, high_performance ... read as words; names the admin
    types in another tool (xmit_hash_policy) stay exact, as code spans."""
    md = example().files["report.md"]
    outside_code = re.sub(r"`[^`]*`", "", md)
    assert re.findall(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b", outside_code) == []
    assert "`xmit_hash_policy`" in md and "bare metal" in md


def test_prose_turns_identifiers_into_words_and_keeps_typed_names_as_code() -> None:
    assert prose("kubernetes beats bare_metal") == "kubernetes beats bare metal"
    assert prose("set xmit_hash_policy layer3+4 on bond_0") == [
        "set ", Code(text="xmit_hash_policy"), " layer3+4 on bond 0"]
    assert prose("plain") == "plain"
