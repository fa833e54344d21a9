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


def _without_prices(text: str) -> str:
    """The example spec with every price line removed (the prices block and node prices)."""
    out, skipping = [], False
    for ln in text.splitlines():
        if ln.strip().startswith("prices:"):
            skipping = True
            continue
        if skipping and ln.startswith("    "):
            continue
        skipping = False
        if ln.strip().startswith("price:"):
            continue
        out.append(ln)
    return "\n".join(out) + "\n"


def _plan_of(text: str) -> PlanOutputs:
    catalog = load_catalog()
    return plan_outputs(parse_platform(text, EXAMPLE, catalog), catalog,
                        today=date(2026, 12, 1))


def test_bill_of_materials_counts_what_the_plan_buys_and_prices_it() -> None:
    """Quantities from the sized plan (spares included), totals = quantity × the spec's
    price, opex = energy (facility power × 730 h × price per kWh) + support share."""
    out = example()
    plan, bom = out.plan, out.plan.bom
    by_item = {ln.item: ln for ln in bom.lines}
    h100 = next(p for p in plan.pools if p.name == "h100")
    node = by_item["GPU node, pool h100"]
    assert node.quantity == h100.nodes + h100.spare_nodes
    assert node.total == node.quantity * 250_000
    assert by_item["rack"].quantity == plan.facility.racks
    switches = sum(ln.quantity for ln in bom.lines if ln.unit == "switch")
    assert switches == plan.fabric.switches
    assert bom.unpriced == []
    assert bom.capex == sum(ln.quantity * (ln.unit_price or 0) for ln in bom.lines)
    energy, support = bom.running
    assert energy.per_month == plan.facility.energy_cost_per_month
    assert support.per_month == pytest.approx(0.10 * bom.capex / 12)
    md = out.files["report.md"]
    assert f"| Purchase (capex) | {bom.capex:,.0f} EUR |" in md
    assert "illustrative" in md and "| shared storage | 700 TB |" in md


def test_a_spec_without_prices_says_so_instead_of_a_dash() -> None:
    out = _plan_of(_without_prices(example_text()))
    bom = out.plan.bom
    assert bom.capex == 0 and len(bom.unpriced) == len(bom.lines)
    assert bom.running[0].per_month == out.plan.facility.energy_cost_per_month  # always known
    assert bom.running[1].per_month is None
    md = out.files["report.md"]
    summary = md.split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert "| Purchase (capex) | no price given | set pools[].node.price and site.prices" \
        in summary
    assert "—" not in summary
    assert "no price given" in md.split("## Bill of materials", 1)[1].split("\n## ", 1)[0]


def test_a_partly_priced_bill_names_what_its_total_leaves_out() -> None:
    text = _without_prices(example_text()).replace(
        "      nodeType: hgx-h100-8\n", "      nodeType: hgx-h100-8\n      price: 1000\n")
    out = _plan_of(text)
    bom = out.plan.bom
    assert bom.capex == 7 * 1000 and "GPU node, pool h100" not in bom.unpriced
    assert "7,000 EUR + unpriced parts" in out.files["report.md"]
    assert "no price given for GPU node, pool l40s, non-compute node" in out.files["report.md"]


@pytest.mark.parametrize("engine", ["/nonexistent/chrome", None])
def test_pdf_without_an_engine_is_exit_2_naming_the_fix_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    engine: str | None,
) -> None:
    if engine is None:
        monkeypatch.delenv("AIPLAT_CHROMIUM", raising=False)
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    else:
        monkeypatch.setenv("AIPLAT_CHROMIUM", engine)
    out = tmp_path / "out"
    assert main(["plan", "--pdf", "-d", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--pdf" in err and "fix:" in err and ("apt-get install chromium" in err or engine in err)
    assert not out.exists()


def test_the_cli_prints_the_cost_in_one_line() -> None:
    bom = example().plan.bom
    assert bom.summary() == (
        f"cost: purchase {bom.capex:,.0f} EUR (illustrative round figures, not a quote); "
        f"running {bom.opex_per_month:,.0f} EUR/month (energy at full load "
        f"{bom.running[0].per_month:,.0f}, support and maintenance "
        f"{bom.running[1].per_month:,.0f})")
    unpriced = _plan_of(_without_prices(example_text())).plan.bom.summary()
    assert unpriced.startswith("cost: purchase no price given (set pools[].node.price")
