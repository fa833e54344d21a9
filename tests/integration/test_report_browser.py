"""The HTML report in a real browser (headless Chromium), and the harness's own controls.

The negative controls matter as much as the report test: a harness that never reports
console errors would make "no console errors" meaningless, and a CI run that skips for lack
of a browser would make the whole file meaningless.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from browser import Browser

from aiplat.report import Chart, Document, KeyFigure, Section, Series, Table, render_html

pytestmark = pytest.mark.integration


def sample_document() -> Document:
    """One chart of every kind, with a table and the characters that need escaping."""
    return Document(
        title="Sample plan <with> & escapes",
        subtitle="Headless Chromium check",
        summary=[
            KeyFigure(label="GPUs", value="64", detail="8 nodes × 8"),
            KeyFigure(label="Power", value="82 kW"),
        ],
        sections=[
            Section(
                id="memory",
                title="Memory",
                paragraphs=["Per-GPU memory by component."],
                tables=[
                    Table(
                        title="Per GPU",
                        columns=["Component", "GiB"],
                        rows=[["weights", "70"], ["<script>alert(1)</script>", "1"]],
                        align=["left", "right"],
                    )
                ],
                charts=[
                    Chart(
                        id="memory-per-gpu",
                        title="Memory per GPU",
                        unit="GiB",
                        categories=["training", "serving"],
                        series=[
                            Series(name="weights", values=[17.5, 70]),
                            Series(name="optimizer", values=[52.5, 0]),
                            Series(name="kv-cache", values=[0, 6.2]),
                        ],
                        kind="stacked-bar",
                    ),
                    Chart(
                        id="throughput",
                        title="Throughput",
                        unit="tokens/s",
                        categories=["H100", "H200", "B200"],
                        series=[
                            Series(name="fp8", values=[3200, 4100, 7900]),
                            Series(name="bf16", values=[1800, 2300, 4200]),
                        ],
                        kind="bar",
                    ),
                ],
            ),
            Section(
                id="power",
                title="Power",
                charts=[
                    Chart(
                        id="rack-power",
                        title="Power per rack",
                        unit="kW",
                        categories=["rack-1", "rack-2", "rack-3"],
                        series=[Series(name="IT", values=[40.5, 38.0, 3.5])],
                        kind="hbar",
                    ),
                    Chart(
                        id="pool-gpus",
                        title="GPUs per pool",
                        unit="GPUs",
                        categories=["train", "serve"],
                        series=[
                            Series(name="reserved", values=[48, 8]),
                            Series(name="burst", values=[0, 8]),
                        ],
                        kind="stacked-hbar",
                    ),
                    Chart(
                        id="many-tenants",
                        title="GPU-hours per tenant and pool",
                        categories=["train", "serve"],
                        # Nine series: the ninth repeats a colour with a hatch pattern, whose
                        # url(#...) reference must resolve on the shared page.
                        series=[Series(name=f"team-{i}", values=[i + 1, 9 - i])
                                for i in range(9)],
                        kind="stacked-bar",
                    ),
                ],
            ),
        ],
    )


@pytest.fixture
def report_file(tmp_path: Path) -> Path:
    path = tmp_path / "report.html"
    path.write_text(render_html(sample_document()), encoding="utf-8")
    return path


def test_report_renders_cleanly_in_chromium(browser: Browser, report_file: Path) -> None:
    doc = sample_document()
    page = browser.inspect(report_file)

    assert page.title == doc.title
    assert page.problems == [], page.console
    assert [s.id for s in page.svgs] == [c.id for c in doc.all_charts()]
    for svg in page.svgs:
        assert svg.visible, svg
        assert svg.width > 50 and svg.height > 50, svg
        assert svg.shapes > 0, svg
    # Ids are namespaced per chart, so references inside each SVG resolve on one shared page.
    assert 'url(#many-tenants_' in report_file.read_text(encoding="utf-8")  # one to check
    assert page.dangling_refs == ()
    # No script in the page, so the <script> in a table cell cannot have run.
    assert "alert" not in " ".join(e.message for e in page.console)


def test_report_follows_dark_mode_and_keeps_charts_readable(
    browser: Browser, report_file: Path
) -> None:
    light = browser.inspect(report_file, color_scheme="light")
    dark = browser.inspect(report_file, color_scheme="dark")
    assert light.background != dark.background
    assert dark.problems == []
    # Charts are drawn for a light background and keep it in dark mode.
    assert {s.background for s in dark.svgs} == {"rgb(255, 255, 255)"}


def test_report_prints_to_pdf(browser: Browser, report_file: Path) -> None:
    pdf = browser.print_pdf(report_file)
    assert pdf.startswith(b"%PDF-")
    assert len(pdf) > 10_000


def test_harness_reports_console_errors(browser: Browser, tmp_path: Path) -> None:
    """Negative control: a script error, a missing image and a dangling reference surface."""
    page_file = tmp_path / "broken.html"
    page_file.write_text(
        "<!DOCTYPE html><html><head><title>broken</title>"
        '<link rel="icon" href="data:,"></head><body>'
        "<script>console.error('boom')</script>"
        '<img src="missing.png" alt="">'
        '<svg width="10" height="10"><rect width="10" height="10"/><use href="#nowhere"/></svg>'
        "</body></html>",
        encoding="utf-8",
    )
    page = browser.inspect(page_file)
    messages = [e.message for e in page.problems]
    assert page.title == "broken"
    assert any("boom" in m for m in messages), page.console
    assert any("missing.png" in m for m in messages), page.console
    # The tiny svg is seen, and seen as too small for a chart; its broken reference is found.
    assert [(s.width, s.height, s.rects) for s in page.svgs] == [(10.0, 10.0, 1)]
    assert page.dangling_refs == ("nowhere",)


@pytest.mark.parametrize(
    ("ci", "expected_rc", "expected_outcome"), [("true", 1, "1 error"), (None, 0, "1 skipped")]
)
def test_missing_chromium_fails_in_ci_and_skips_elsewhere(
    tmp_path: Path,
    request: pytest.FixtureRequest,
    ci: str | None,
    expected_rc: int,
    expected_outcome: str,
) -> None:
    """Run one browser test in a child pytest with the browser pointed at nothing."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["AIPLAT_CHROMIUM"] = str(tmp_path / "no-chromium")
    node = f"{Path(__file__).resolve()}::test_harness_reports_console_errors"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", node, "-p", "no:cacheprovider", "-q"],
        cwd=request.config.rootpath,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == expected_rc, output
    assert expected_outcome in output, output
    assert "headless Chromium is not available" in output, output
