"""Report features beyond plain text: links, code, statuses, grouped findings, provenance,
line charts and the narrow chart layout."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import re
import xml.etree.ElementTree as ET
from datetime import date
from functools import cache

import pytest
from pydantic import ValidationError

from aiplat import __version__
from aiplat.catalog import load_catalog
from aiplat.kube.crds import CrdIndex
from aiplat.kube.pipeline import KubeCheck, check_platform
from aiplat.kube.validate import SUPPORTED_VERSIONS, validate_objects
from aiplat.ops.sim_month import tree_queues
from aiplat.plan import build_plan
from aiplat.report import Chart, Document, Section, Series, Table, render_html, render_markdown
from aiplat.report.charts import DASHES, NARROW_WIDTH, PALETTE, WIDTH, render_svg
from aiplat.report.document import Code, Link, Source, plain
from aiplat.report.grouping import compact, group_repeats
from aiplat.report.kube_doc import kube_section
from aiplat.report.plan_doc import plan_document
from aiplat.report.sim_doc import TIME_POINTS, sim_sections
from aiplat.report.status import status_of
from aiplat.sched.platform import simulate_platform
from aiplat.spec import EXAMPLE, example_text, parse_platform

# --- links --------------------------------------------------------------------------------


@pytest.mark.parametrize("href", ["runbook/runbook.html", "matrix/matrix.html#entries",
                                  "#findings", "monitoring/aiplat-rules.yaml", "a/../b.html",
                                  "./report.md"])
def test_relative_links_are_accepted(href: str) -> None:
    assert Link(text="x", href=href).href == href


@pytest.mark.parametrize(("href", "why"), [
    ("https://example.com/x", "scheme or host"),
    ("javascript:alert(1)", "scheme or host"),
    ("file:///etc/passwd", "scheme or host"),
    ("//evil.example/x", "scheme or host"),
    ("/etc/passwd", "absolute path"),
    ("../secrets.txt", "leaves the report's folder"),
    ("a/../../b", "leaves the report's folder"),
    ("a b.html", "spaces"),
    ("a\\b.html", "backslash"),
    ("", "empty"),
])  # fmt: skip
def test_links_outside_the_output_tree_are_refused(href: str, why: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(why)):
        Link(text="x", href=href)


def linked_document() -> Document:
    return Document(title="t", sections=[Section(
        id="handover", title="Handover",
        paragraphs=[["See the ", Link(text="runbook", href="runbook/runbook.html"), "."]],
        tables=[Table(columns=["item", "file"], rows=[
            ["matrix", Link(text="matrix/matrix.html", href="matrix/matrix.html")]])],
        notes=[["Rules: ", Link(text="rules [yaml]", href="monitoring/aiplat-rules.yaml")]],
    )])


def test_links_render_as_anchors_in_html_and_as_links_in_markdown() -> None:
    html = render_html(linked_document())
    assert '<p>See the <a href="runbook/runbook.html">runbook</a>.</p>' in html
    assert ('<td data-label="file" class="long"><a href="matrix/matrix.html">'
            "matrix/matrix.html</a></td>") in html
    assert '<li>Rules: <a href="monitoring/aiplat-rules.yaml">rules [yaml]</a></li>' in html
    md = render_markdown(linked_document())
    assert "See the [runbook](runbook/runbook.html)." in md
    assert "| matrix | [matrix/matrix.html](matrix/matrix.html) |" in md
    assert "> **Note:** Rules: [rules \\[yaml\\]](monitoring/aiplat-rules.yaml)" in md


def test_markdown_link_destinations_stay_one_link() -> None:
    doc = Document(title="t", sections=[Section(
        id="s", title="S", paragraphs=[[Link(text="log", href="logs/run(1).txt")]])])
    assert "[log](logs/run%281%29.txt)" in render_markdown(doc)
    assert '<a href="logs/run(1).txt">log</a>' in render_html(doc)


def test_plain_text_of_rich_values() -> None:
    assert plain(["a ", Link(text="b", href="b.html"), " ", Code(text="c")]) == "a b c"


# --- code ---------------------------------------------------------------------------------

COMMAND = "kubectl get pods -o jsonpath='{.items[*].metadata.name}' | sort -u | grep `x`"


def code_document() -> Document:
    return Document(title="t", sections=[Section(
        id="steps", title="Steps",
        paragraphs=[["Run ", Code(text="aiplat node check"), " first."]],
        code=[Code(text="aiplat plan platform.yaml -d out\naiplat kube validate out/kube")],
        tables=[Table(columns=["#", "Command", "Expect"], rows=[
            ["1", Code(text=COMMAND), "a list of pods"],
            ["2", Code(text="echo a\\b\necho c"), "two lines"],
        ])],
    )])


def test_code_renders_monospace_in_html() -> None:
    html = render_html(code_document())
    assert "<p>Run <code>aiplat node check</code> first.</p>" in html
    assert ('<pre class="code"><code>aiplat plan platform.yaml -d out\n'
            "aiplat kube validate out/kube</code></pre>") in html
    escaped = COMMAND.replace("'", "&#39;").replace("|", "|")
    assert f'<td data-label="Command" class="long"><code class="cmd">{escaped}</code></td>' in html
    # The CSS keeps commands monospace and wrapping, never widening the table.
    assert re.search(r"code\.cmd \{[^}]*white-space: pre-wrap;[^}]*overflow-wrap: anywhere", html)


def test_code_renders_as_code_spans_and_fences_in_markdown() -> None:
    md = render_markdown(code_document())
    assert "Run `aiplat node check` first." in md
    assert "```sh\naiplat plan platform.yaml -d out\naiplat kube validate out/kube\n```" in md
    # In a cell: the pipes escaped (GitHub unescapes them inside the span), the backtick
    # inside fenced by two, backslashes left alone, and lines as separate spans.
    row = next(line for line in md.splitlines() if line.startswith("| 1 |"))
    assert row == ("| 1 | `` kubectl get pods -o jsonpath='{.items[*].metadata.name}' \\| sort -u "
                   "\\| grep `x` `` | a list of pods |")
    assert "| 2 | `echo a\\b`<br>`echo c` | two lines |" in md


def test_only_cells_with_long_words_may_break_anywhere() -> None:
    """A short number must never split ("1" over "0" in a narrow column); a path, jsonpath
    or command may, so it cannot push the table's last columns off the page."""
    doc = Document(title="t", sections=[Section(id="s", title="S", tables=[Table(
        columns=["#", "expect", "command"], align=["right", "left", "left"],
        rows=[["10", "node $NODE Ready", Code(text="ls")],
              ["11", "jsonpath='{.status.allocatable}'", "x"]])])])
    html = render_html(doc)
    assert '<td data-label="#" class="r">10</td>' in html
    assert '<td data-label="expect">node $NODE Ready</td>' in html
    assert '<td data-label="expect" class="long">jsonpath=' in html
    assert '<td data-label="command" class="long"><code class="cmd">ls</code></td>' in html
    assert "td.long, th.long { overflow-wrap: anywhere; }" in html


# --- statuses -----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "kind"), [
    ("pass", "good"), ("OK", "good"), (" fits ", "good"), ("fail", "bad"), ("error", "bad"),
    ("EXCEEDED", "bad"), ("warning", "warn"), ("info", "info"), ("skipped", "skip"),
    ("error budget", None), ("ok to proceed", None), ("passive", None), ("", None),
])  # fmt: skip
def test_status_words(text: str, kind: str | None) -> None:
    status = status_of(text)
    assert (status.kind if status else None) == kind


def status_document() -> Document:
    return Document(title="t", sections=[Section(
        id="checks", title="Checks",
        tables=[Table(columns=["check", "result"], rows=[
            ["driver", "pass"], ["nccl", "fail"], ["mtu", "warning"], ["rdma", "skip"],
            ["note", "info"], ["budget", "error budget"]])],
        notes=["warning: two pools share a VLAN", "plain note"],
    )])


def test_statuses_get_a_colour_class_and_a_glyph_with_the_word() -> None:
    html = render_html(status_document())
    for word, kind, glyph in (("pass", "good", "✓"), ("fail", "bad", "✗"),
                              ("warning", "warn", "▲"), ("skip", "skip", "–"),
                              ("info", "info", "i")):
        assert (f'<span class="st st-{kind}"><span class="st-g" aria-hidden="true">{glyph}'
                f"</span>{word}</span>") in html
    assert '<td data-label="result">error budget</td>' in html  # not a status
    assert ('<li><span class="st st-warn"><span class="st-g" aria-hidden="true">▲</span>'
            "warning</span> two pools share a VLAN</li>") in html
    assert "<li>plain note</li>" in html
    # Okabe-Ito colours in the stylesheet, and a dark-scheme variant for blue.
    for colour in ("#009e73", "#d55e00", "#e69f00", "#0072b2", "#56b4e9"):
        assert colour in html
    # Markdown keeps the plain words.
    md = render_markdown(status_document())
    assert "| nccl | fail |" in md and "> **Note:** warning: two pools share a VLAN" in md


# --- grouped findings ---------------------------------------------------------------------

KINDS = ("ClusterQueue", "LocalQueue", "ResourceFlavor", "Topology", "AdmissionCheck")


def unchecked_resources() -> list[tuple[str, dict[str, object]]]:
    """Ten custom resources of a group no CRD defines: each is 'unchecked' per version."""
    return [(f"kueue/{kind.lower()}.yaml",
             {"apiVersion": "kueue.test/v1beta1", "kind": kind,
              "metadata": {"name": name, **({"namespace": "team-a"} if kind == "LocalQueue"
                                            else {})}})
            for kind in KINDS for name in ("research", "serving")]


@cache
def example_check() -> KubeCheck:
    catalog = load_catalog()
    return check_platform(parse_platform(example_text(), EXAMPLE, catalog), catalog)


def unchecked_check() -> KubeCheck:
    """The example's check, its validations replaced by the real validator's verdicts on ten
    custom resources it has no schema for, for four Kubernetes versions (40 warnings)."""
    validations = [validate_objects(unchecked_resources(), v, CrdIndex())
                   for v in SUPPORTED_VERSIONS]
    assert sum(len(v.issues) for v in validations) == 40
    assert {i.severity for v in validations for i in v.issues} == {"warning"}
    return dataclasses.replace(example_check(), validations=validations)


def test_forty_unchecked_resource_warnings_become_one_row_per_kind() -> None:
    section = kube_section(unchecked_check())
    table = next(t for t in section.tables if t.title == "Validation issues")
    assert table.columns == ["severity", "count", "issue", "where", "object", "version"]
    assert len(table.rows) == len(KINDS)
    assert [r[1] for r in table.rows] == ["8"] * len(KINDS)  # 2 objects x 4 versions
    first = table.rows[0]
    assert first[0] == "warning"
    assert first[4] == "ClusterQueue/{research, serving}"
    assert first[5] == ", ".join(SUPPORTED_VERSIONS)
    # The version the message quotes is masked, so the four versions' messages merge.
    assert "Kubernetes {version}" in str(first[2]) and "1.34" not in str(first[2])
    assert table.rows[1][4] == "LocalQueue/team-a/{research, serving}"
    doc = Document(title="t", sections=[section])
    md = render_markdown(doc)
    rows = [line for line in md.splitlines() if "no schema for kueue.test" in line]
    assert len(rows) == len(KINDS)
    assert rows[0].startswith("| warning | 8 | no schema for kueue.test/v1beta1 ClusterQueue")
    html = render_html(doc)
    assert html.count("no schema for kueue.test") == len(KINDS)
    assert '<td data-label="count" class="r">8</td>' in html


def test_grouping_keeps_distinct_findings_and_leaves_unrepeated_tables_alone() -> None:
    table = Table(columns=["severity", "subject", "finding"], rows=[
        ["warning", "pool-a", "pool-a has no spare node"],
        ["error", "web", "web needs 9 GPUs"],
        ["warning", "pool-b", "pool-b has no spare node"],
        ["warning", "pool-c", "pool-c runs hot"],
    ])
    grouped = group_repeats(table, ["subject"], count_after="severity")
    assert grouped.columns == ["severity", "count", "subject", "finding"]
    assert grouped.rows == [
        ["warning", "2", "pool-a, pool-b", "{subject} has no spare node"],
        ["error", "1", "web", "web needs 9 GPUs"],
        ["warning", "1", "pool-c", "pool-c runs hot"],
    ]
    assert grouped.alignment == ["left", "right", "left", "left"]
    lone = Table(columns=["severity", "subject"], rows=[["error", "a"], ["error", "b"]])
    assert group_repeats(lone, ["subject"]).rows == [["error", "2", "a, b"]]
    distinct = Table(columns=["severity", "subject"], rows=[["error", "a"], ["info", "a"]])
    assert group_repeats(distinct, ["subject"]) is distinct
    with pytest.raises(ValueError, match="no column 'object'"):
        group_repeats(distinct, ["object"])


def test_compact_lists() -> None:
    assert compact(["Pod/a", "Pod/b", "Job/c", "Pod/a", ""]) == "Pod/{a, b}, Job/c"
    assert compact(["1.34", "1.35"]) == "1.34, 1.35"


# --- date, version and spec digest -------------------------------------------------------


@cache
def example_plan():  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    return build_plan(parse_platform(example_text(), EXAMPLE, catalog), catalog)


def test_plan_page_shows_date_version_and_spec_digest() -> None:
    text = example_text()
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    doc = plan_document(example_plan(), generated=date(2026, 12, 1), spec_path="platform.yaml",
                        spec_text=text)
    assert doc.source == Source(path="platform.yaml", digest=f"sha256:{digest}")
    html = render_html(doc)
    assert (f'<p class="meta">2026-12-01 · aiplat {__version__} · spec platform.yaml '
            f"<code>sha256:{digest}</code></p>") in html
    assert (f"<footer>Generated by aiplat {__version__} on 2026-12-01 from platform.yaml "
            f"(<code>sha256:{digest}</code>).</footer>") in html
    md = render_markdown(doc)
    assert (f"Generated 2026-12-01 · aiplat {__version__} · spec platform.yaml "
            f"`sha256:{digest}`") in md
    # Another spec text, another digest; without date and text, neither is shown.
    other = plan_document(example_plan(), spec_text=text + "\n# edited\n")
    assert other.source is not None and other.source.digest != doc.source.digest
    bare = render_html(plan_document(example_plan()))
    assert 'class="meta"' not in bare and "sha256:" not in bare
    assert "<footer>Generated by aiplat " + __version__ + ".</footer>" in bare


def test_source_digest_is_checked() -> None:
    with pytest.raises(ValidationError, match="pattern"):
        Source(path="p.yaml", digest="md5:abc")


# --- line charts --------------------------------------------------------------------------


def line_chart(**changes: object) -> Chart:
    data: dict[str, object] = {
        "id": "gpus", "title": "GPUs over time", "unit": "GPUs", "kind": "line",
        "categories": ["0 h", "10 h", "40 h"], "x": [0.0, 10.0, 40.0], "x_unit": "hours",
        "series": [Series(name="allocated", values=[8, 40, 20]),
                   Series(name="provisioned", values=[72, 72, 64]),
                   Series(name="fragmented", values=[0, 2, 1])],
    }
    data.update(changes)
    return Chart.model_validate(data)


def wide_layout(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    found = next(g for g in root if g.get("class") == "wide")
    return found


def path_points(path: ET.Element) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in re.findall(r"[ML]([\d.]+),([\d.]+)",
                                                         path.get("d", ""))]


def test_line_chart_draws_one_dashed_path_per_series_at_its_x() -> None:
    wide = wide_layout(render_svg(line_chart()))
    paths = {p.get("id"): p for p in wide.iter("path")}
    assert list(paths) == ["gpus_line_0", "gpus_line_1", "gpus_line_2"]
    strokes = [(p.get("stroke"), p.get("stroke-dasharray", "")) for p in paths.values()]
    assert strokes == [(PALETTE[i], DASHES[i]) for i in range(3)]
    assert len({d for _, d in strokes}) == 3  # told apart without colour
    xs = [x for x, _ in path_points(paths["gpus_line_0"])]
    # Points sit at their x: 0, 10 and 40 hours, so the gaps are 1 : 3.
    assert (xs[2] - xs[1]) == pytest.approx(3 * (xs[1] - xs[0]), abs=0.05)
    ys = [y for _, y in path_points(paths["gpus_line_0"])]
    assert ys[1] < ys[2] < ys[0]  # 40 above 20 above 8 (y grows downwards)
    # Legend: a line sample with the series' dash per name; the x axis has its unit.
    legend = next(g for g in wide.iter("g") if g.get("id") == "gpus_legend")
    assert [t.text for t in legend.iter("text")] == ["allocated", "provisioned", "fragmented"]
    assert [ln.get("stroke-dasharray", "") for ln in legend.iter("line")] == list(DASHES[:3])
    assert "hours" in [t.text for t in wide.iter("text")]
    x_axis = next(g for g in wide.iter("g") if g.get("id") == "gpus_x")
    assert [t.text for t in x_axis.iter("text")][:2] == ["0", "10"]


def test_line_chart_without_x_spreads_points_evenly_and_thins_labels() -> None:
    cats = [f"day {i}" for i in range(40)]
    c = line_chart(categories=cats, x=None, x_unit="",
                   series=[Series(name="s", values=[float(i % 7) for i in range(40)])])
    wide = wide_layout(render_svg(c))
    xs = [x for x, _ in path_points(next(iter(wide.iter("path"))))]
    gaps = {round(b - a, 1) for a, b in itertools.pairwise(xs)}
    assert len(gaps) <= 2  # even (up to rounding)
    labels = [t.text for g in wide.iter("g") if g.get("id") == "gpus_x" for t in g.iter("text")]
    assert 2 <= len(labels) < 40 and labels[0] == "day 0"
    # The data table (Markdown, and HTML's fallback) still has every point.
    assert len(c.as_table().rows) == 40


def test_a_single_point_line_is_a_dot() -> None:
    c = line_chart(categories=["now"], x=[5.0], series=[Series(name="s", values=[3])])
    assert [e.tag for e in wide_layout(render_svg(c)) if e.get("id") == "gpus_line_0"] == [
        "circle"]


@pytest.mark.parametrize(("changes", "message"), [
    ({"x": [0.0, 10.0]}, "2 x positions for 3 categories"),
    ({"x": [0.0, 10.0, 5.0]}, "strictly increasing"),
    ({"x": [0.0, float("inf"), 50.0]}, "finite"),
    ({"kind": "bar"}, "need kind 'line'"),
    ({"x": None}, "x_unit without x"),
])  # fmt: skip
def test_line_chart_x_is_validated(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        line_chart(**changes)


def test_sim_gpus_over_time_is_a_line_on_an_even_time_grid() -> None:
    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    result = simulate_platform(platform, example_plan(), seed=0,
                               queues=tree_queues(platform))
    chart = next(c for s in sim_sections(result) for c in s.charts if c.id == "sim-gpus")
    assert chart.kind == "line" and chart.x is not None and len(chart.x) == TIME_POINTS
    steps = {round(b - a, 6) for a, b in itertools.pairwise(chart.x)}
    assert len(steps) == 1
    assert chart.x[-1] == pytest.approx(result.end_h)
    # Each value is the state in force at that instant: the last event at or before it.
    timeline = sorted(result.timeline, key=lambda p: p.t)
    for hour, allocated in zip(chart.x, chart.series[0].values, strict=True):
        before = [p for p in timeline if p.t <= hour * 3600] or timeline[:1]
        assert allocated == before[-1].allocated_gpus


# --- the narrow layout --------------------------------------------------------------------


def narrow_layout(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    return next(g for g in root if g.get("class") == "narrow")


def font_sizes(group: ET.Element, base: float) -> list[tuple[float, str]]:
    """(font size, text) of every text in ``group``, inheriting from enclosing groups."""
    out = []

    def walk(el: ET.Element, size: float) -> None:
        size = float(el.get("font-size", size))
        if el.tag == "text":
            out.append((size, el.text or ""))
        for child in el:
            walk(child, size)

    walk(group, base)
    return out


NARROW_CHARTS = [
    Chart(id="many", title="Waits", unit="h", categories=[f"tenant-{i}" for i in range(24)],
          series=[Series(name=n, values=[1234.5 * (i + 1) for i in range(24)])
                  for n in ("p50", "p95", "p99")]),
    Chart(id="stack", title="Memory", kind="stacked-hbar", unit="GB",
          categories=["a workload with a long name", "b"],
          series=[Series(name=f"part {i}", values=[10.0 + i, 3.0]) for i in range(7)]),
    line_chart(),
]


@pytest.mark.parametrize("chart", NARROW_CHARTS, ids=lambda c: c.id)
def test_narrow_layout_keeps_text_at_least_as_large_as_the_wide_layout_minimum(
    chart: Chart,
) -> None:
    """At 390 px the chart is ~348 px wide: the narrow layout (320 units, drawn at twice
    the scale) maps a unit to ~1.09 px, so 9.5-unit text renders at ~10.3 px; the wide
    one's 6-unit shrunk labels would render at ~3.3 px there."""
    svg = render_svg(chart)
    root = ET.fromstring(svg)
    narrow = narrow_layout(svg)
    assert narrow.get("display") == "none" and narrow.get("transform") == "scale(2)"
    assert WIDTH / NARROW_WIDTH == 2
    sizes = font_sizes(narrow, float(root.get("font-size", "nan")))
    assert sizes and min(s for s, _ in sizes) >= 9.5, sorted(sizes)[:3]
    # Ids of the narrow drawing are its own: nothing collides with the wide one.
    ids = re.findall(r'\sid="([^"]+)"', svg)
    assert len(ids) == len(set(ids))
    assert all(i.startswith(f"{chart.id}_narrow_") for i in
               (e.get("id", "") for e in narrow.iter()) if i)
    # The page switches layouts with this ratio (the narrow drawing is taller).
    ratio = re.search(r"--narrow-ratio: 640 / ([\d.]+)", root.get("style", ""))
    assert ratio and float(ratio.group(1)) > float(root.get("height", "0"))


def test_narrow_layout_leaves_out_value_labels_rather_than_shrinking_them() -> None:
    crowded = NARROW_CHARTS[0]
    wide = font_sizes(wide_layout(render_svg(crowded)), 11.0)
    narrow = font_sizes(narrow_layout(render_svg(crowded)), 11.0)
    assert min(s for s, _ in wide) < 9.5  # shrunk to fit 72 bars in 640 units
    assert "1,234" in {t for _, t in wide} and "1,234" not in {t for _, t in narrow}
