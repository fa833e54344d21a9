"""The HTML report in a real browser (headless Chromium), and the harness's own controls.

The negative controls matter as much as the report test: a harness that never reports
console errors would make "no console errors" meaningless, and a CI run that skips for lack
of a browser would make the whole file meaningless.
"""

from __future__ import annotations

import functools
import os
import re
import struct
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

import pytest
from browser import Browser, LayoutReport

from aiplat.catalog import load_catalog
from aiplat.fsutil import write_tree
from aiplat.ops.plan_outputs import plan_outputs
from aiplat.report import (
    Chart,
    Code,
    Document,
    KeyFigure,
    Link,
    Section,
    Series,
    Table,
    render_html,
)
from aiplat.spec import EXAMPLE, example_text, parse_platform

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
                    Chart(
                        id="gpus-over-time",
                        title="GPUs over time",
                        unit="GPUs",
                        kind="line",
                        categories=[f"{h} h" for h in range(0, 721, 24)],
                        x=[float(h) for h in range(0, 721, 24)],
                        x_unit="hours",
                        series=[
                            Series(name="allocated", values=[20 + (h % 96) / 4
                                                             for h in range(0, 721, 24)]),
                            Series(name="provisioned", values=[72.0] * 31),
                        ],
                    ),
                ],
            ),
            Section(
                id="procedure",
                title="Node patch",
                paragraphs=[["Set ", Code(text="$NODE"), " first; see the ",
                             Link(text="runbook", href="runbook/runbook.html"), "."]],
                code=[Code(text="export NODE=gpu-node-01\naiplat node check --pool h100")],
                tables=[
                    Table(
                        title="Steps",
                        columns=["#", "Action", "Command", "Expect"],
                        rows=[[str(i), "Update the node per the approved matrix and reboot",
                               Code(text=COMMAND), EXPECT] for i in range(1, 4)],
                        align=["right", "left", "left", "left"],
                    ),
                    Table(
                        title="Checks",
                        columns=["check", "result", "detail"],
                        rows=[["driver", "pass", "580.95.05"], ["nccl", "fail", "busbw low"],
                              ["mtu", "warning", "1500 on storage"], ["rdma", "skip", "-"],
                              ["inventory", "info", "8 GPUs"]],
                    ),
                ],
                notes=["error: the canary node did not come back"],
            ),
        ],
    )


COMMAND = ("kubectl get pods -A --field-selector spec.nodeName=$NODE -o jsonpath='{range "
           ".items[*]}{.metadata.namespace}{\" \"}{.metadata.ownerReferences[0].uid}{\"\\n\"}"
           "{end}' | sort -u | tee workloads-$NODE.txt")
EXPECT = ("allocatable GPUs as in the spec: kubectl get node $NODE -o jsonpath='{.status."
          "allocatable.nvidia\\.com/gpu}' (DRA: kubectl get resourceslices "
          "--field-selector spec.nodeName=$NODE)")
WIDTHS = (390, 1280)
MIN_CHART_TEXT_PX = 10.0


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


@functools.cache
def shots_dir() -> Path:
    """Where the screenshots go: $AIPLAT_SCREENSHOTS when set (to keep and look at them),
    else one temp dir per run."""
    chosen = os.environ.get("AIPLAT_SCREENSHOTS")
    path = Path(chosen) if chosen else Path(tempfile.mkdtemp(prefix="aiplat-shots-"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n", png[:8]
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def assert_readable(report: LayoutReport, name: str, *, charts: bool = True) -> None:
    """No sideways scroll anywhere, chart text at 10 px or more, and a screenshot kept."""
    shot = shots_dir() / f"{name}-{report.viewport}.png"
    shot.write_bytes(report.screenshot)
    assert report.scroll_width <= report.viewport, (name, report.scroll_width)
    assert report.overflowing == (), (name, report.overflowing)
    if charts:
        assert report.chart_texts > 50, (name, report.chart_texts)
        assert report.min_chart_font_px >= MIN_CHART_TEXT_PX, (name, report.smallest_chart_text)
    width, height = png_size(report.screenshot)
    assert width == report.viewport and height > 600, (shot, width, height)
    print(f"{shot}: scrollWidth {report.scroll_width} <= {report.viewport}, smallest chart "
          f"text {report.min_chart_font_px:.1f} px ({report.chart_texts} texts)")


@pytest.fixture(scope="module")
def plan_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real ``aiplat plan`` outputs of the built-in example (report, runbook, ...)."""
    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    out = tmp_path_factory.mktemp("plan")
    write_tree(out, plan_outputs(platform, catalog, today=date(2026, 12, 1)).files)
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_sample_report_is_readable_on_a_phone_and_a_desktop(
    browser: Browser, report_file: Path, width: int
) -> None:
    assert_readable(browser.layout(report_file, width), "sample-report")


PLAN_SCREENS = ((390, 844), (1366, 768))
"""A phone (iPhone 12-15 class, CSS pixels) and the most common laptop screen."""
MAX_PHONE_PAGE_PX = 12_000
"""The plan report was past 30,000 px tall on a phone with every section open."""


@pytest.mark.parametrize(("width", "height"), PLAN_SCREENS)
def test_plan_report_is_readable_on_a_phone_and_a_desktop(
    browser: Browser, plan_tree: Path, width: int, height: int
) -> None:
    """As it opens (engineers' sections folded) and with every section opened: no element
    wider than the screen (tables fit or stack; nothing scrolls sideways) and, opened, chart
    text at 10 px or more."""
    page = plan_tree / "report.html"
    folded = browser.layout(page, width, height=height)
    assert_readable(folded, "plan-report", charts=False)
    opened = browser.layout(page, width, height=height, open_details=True)
    # The drawings (report/drawings.py, report/timelines.py) are held to it too: their
    # narrow layout is drawn at 2.5 times the scale.
    assert_readable(opened, "plan-report-opened", charts=True)
    assert folded.page_height < opened.page_height
    print(f"plan report at {width} px: {folded.page_height:,} px folded, "
          f"{opened.page_height:,} px opened")
    if width < 500:
        assert folded.page_height <= MAX_PHONE_PAGE_PX, folded.page_height


SUMMARY_JS = """
  const cards = [...document.querySelectorAll('dl.summary .figure-card')].map(card => {
    const box = card.getBoundingClientRect();
    return {label: card.querySelector('dt').textContent, top: box.top, bottom: box.bottom,
            right: box.right, visible: card.checkVisibility()};
  });
  const findings = document.getElementById('findings').getBoundingClientRect().top;
  return {cards: cards, screen: innerHeight, findings: findings};"""
MANAGER_CARDS = ("GPUs to buy", "Purchase (capex)", "Running cost per month", "At risk")


@pytest.mark.parametrize(("width", "height"), PLAN_SCREENS)
def test_plan_summary_is_the_first_screen_and_the_page_is_not_blank(
    browser: Browser, plan_tree: Path, width: int, height: int
) -> None:
    """What to buy, what it costs and what is at risk are on the first screen, before any
    scrolling; the first screen's screenshot has ink (a page whose CSS hid everything, or
    painted text in the background colour, would pass every DOM check but this one)."""
    page = plan_tree / "report.html"
    seen = browser.evaluate(page, SUMMARY_JS, width=width, height=height)
    cards = {c["label"]: c for c in seen["cards"]}
    for label in MANAGER_CARDS:
        card = cards[label]
        assert card["visible"] and card["bottom"] <= seen["screen"], (label, card, seen["screen"])
        assert card["right"] <= width, (label, card)
    shot = browser.layout(page, width, height=height).first_screen
    assert png_size(shot) == (width, height)
    (shots_dir() / f"plan-first-screen-{width}.png").write_bytes(shot)
    ink = browser.ink(shot)
    assert ink > 0.03, ink  # text, cards and borders: a few per cent of the pixels at least


def test_ink_sees_a_blank_page_as_blank(browser: Browser, tmp_path: Path) -> None:
    """Negative control for the screenshot check: an empty page has no ink; one word has."""
    blank = tmp_path / "blank.html"
    blank.write_text('<!DOCTYPE html><title>blank</title><link rel="icon" href="data:,">',
                     encoding="utf-8")
    assert browser.ink(browser.layout(blank, 390, height=844).first_screen) == 0.0
    word = tmp_path / "word.html"
    word.write_text('<!DOCTYPE html><title>w</title><link rel="icon" href="data:,">'
                    '<p style="font-size:40px">aiplat</p>', encoding="utf-8")
    assert 0 < browser.ink(browser.layout(word, 390, height=844).first_screen) < 0.03


def test_plan_report_prints_every_section_to_pdf(plan_tree: Path, browser: Browser) -> None:
    """report.pdf as `aiplat plan --pdf` makes it (report/pdf.py: headless Chromium's
    --print-to-pdf of the page with every section open): a PDF, and longer than the
    page printed folded (the folded sections would print as their titles only)."""
    from aiplat.catalog import load_catalog as catalog_of
    from aiplat.report.pdf import html_to_pdf

    catalog = catalog_of()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    doc = plan_outputs(platform, catalog, today=date(2026, 12, 1)).report
    opened = html_to_pdf(render_html(doc, expanded=True))
    folded = html_to_pdf(render_html(doc))
    assert opened.startswith(b"%PDF-") and folded.startswith(b"%PDF-")
    pages = [len(re.findall(rb"/Type\s*/Page\b", pdf)) for pdf in (opened, folded)]
    assert pages[0] > pages[1] + 5, pages


@pytest.mark.parametrize("width", (390, 1280, 1400))
def test_runbook_keeps_every_column_on_the_page(
    browser: Browser, plan_tree: Path, width: int
) -> None:
    """The Expect column was cut off at 1400 px: long tokens kept the table wider than
    the page and the scroll box hid the rest. Every cell must now end inside the page."""
    page = plan_tree / "runbook" / "runbook.html"
    assert_readable(browser.layout(page, width), "runbook", charts=False)
    last = browser.evaluate(page, width=width, script="""
      const out = [];
      for (const td of document.querySelectorAll('td:last-child')) {
        const box = td.getBoundingClientRect(), table = td.closest('table');
        out.push([box.right, table.parentElement.getBoundingClientRect().right]);
      }
      return out;""")
    assert last and all(right <= limit + 1 for right, limit in last)
    # Short cells (the step numbers 10 to 13) stay on one line: only long words may break.
    split = browser.evaluate(page, width=width, script="""
      const out = [];
      for (const td of document.querySelectorAll('td')) {
        const text = td.textContent.trim();
        if (!text || text.length > 3 || td.childNodes.length !== 1) continue;
        const range = document.createRange();
        range.selectNodeContents(td);
        const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (lines.size > 1) out.push(text);
      }
      return out;""")
    assert split == []


def test_phone_layout_stacks_tables_into_labelled_rows(
    browser: Browser, report_file: Path
) -> None:
    script = """
      const td = [...document.querySelectorAll('td')].find(c => c.dataset.label === 'Expect');
      return {display: getComputedStyle(td).display,
              label: getComputedStyle(td, '::before').content,
              head: getComputedStyle(document.querySelector('thead')).position,
              code: getComputedStyle(document.querySelector('code.cmd')).fontFamily,
              wrap: getComputedStyle(document.querySelector('code.cmd')).whiteSpace};"""
    phone = browser.evaluate(report_file, script, width=390)
    desktop = browser.evaluate(report_file, script, width=1280)
    assert phone["display"] == "grid" and phone["label"] == '"Expect"'
    assert phone["head"] == "absolute"  # kept for screen readers, out of the way
    assert desktop["display"] == "table-cell" and desktop["label"] == "none"
    for seen in (phone, desktop):
        assert "monospace" in seen["code"] and seen["wrap"] == "pre-wrap"


STATUS_JS = """
  const out = {};
  for (const kind of ['good', 'bad', 'warn', 'info', 'skip']) {
    const badge = document.querySelector('.st-' + kind);
    const glyph = badge.querySelector('.st-g');
    out[kind] = {bg: getComputedStyle(glyph).backgroundColor, ink: getComputedStyle(glyph).color,
                 text: badge.textContent, word: getComputedStyle(badge).color,
                 visible: glyph.checkVisibility()};
  }
  return out;"""
OKABE_ITO = {"good": "rgb(0, 158, 115)", "bad": "rgb(213, 94, 0)", "warn": "rgb(230, 159, 0)",
             "info": "rgb(0, 114, 178)"}


@pytest.mark.parametrize(("scheme", "media"), [("light", "screen"), ("dark", "screen"),
                                               ("dark", "print")])
def test_statuses_have_a_colour_a_glyph_and_the_word(
    browser: Browser, report_file: Path, scheme: str, media: str
) -> None:
    found = browser.evaluate(report_file, STATUS_JS, color_scheme=scheme,  # type: ignore[arg-type]
                             media=media)  # type: ignore[arg-type]
    assert {k: v["text"] for k, v in found.items()} == {
        "good": "✓pass", "bad": "✗fail", "warn": "▲warning", "info": "iinfo", "skip": "–skip"}
    colours = {k: v["bg"] for k, v in found.items()}
    expected = dict(OKABE_ITO)
    if scheme == "dark" and media == "screen":
        expected["info"] = "rgb(86, 180, 233)"  # sky blue reads better on a dark page
    assert {k: colours[k] for k in expected} == expected
    assert len(set(colours.values())) == 5 and all(v["visible"] for v in found.values())
    # The glyph contrasts with its disc; the word has the page's text colour.
    assert all(v["ink"] != v["bg"] for v in found.values())
    words = {v["word"] for v in found.values()}
    assert words == ({"rgb(0, 0, 0)"} if media == "print" else
                     {"rgb(230, 237, 243)"} if scheme == "dark" else {"rgb(31, 35, 40)"})


def test_links_point_at_files_next_to_the_report(browser: Browser, report_file: Path) -> None:
    (report_file.parent / "runbook").mkdir()
    target = report_file.parent / "runbook" / "runbook.html"
    target.write_text("<!DOCTYPE html><title>runbook</title>", encoding="utf-8")
    hrefs = browser.evaluate(report_file, """
      return [...document.querySelectorAll('main a[href]')].map(a => a.href);""")
    assert hrefs == [target.resolve().as_uri()]


def test_harness_measures_overflow_and_small_chart_text(
    browser: Browser, tmp_path: Path
) -> None:
    """Negative control for the layout checks: a table pushed wide by an unbreakable token
    inside a scroll box (the runbook's old failure), and 640-unit chart text squeezed into a
    phone, must both be seen."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width">'
        '<link rel="icon" href="data:,"><title>bad</title></head><body>'
        '<div style="overflow-x:auto"><table><tr><td>' + "x" * 200 + "</td></tr></table></div>"
        '<svg viewBox="0 0 640 100" style="width:100%"><text x="10" y="50" font-size="11">'
        "tiny</text></svg></body></html>",
        encoding="utf-8",
    )
    report = browser.layout(page, 390)
    assert any(o.startswith("div") and "scrollWidth" in o for o in report.overflowing)
    assert report.smallest_chart_text[0][1] == "tiny"
    assert report.min_chart_font_px == pytest.approx(11 * (390 - 16) / 640, abs=0.5)


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
