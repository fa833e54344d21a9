"""The report layer: document validation, SVG charts, Markdown and self-contained HTML."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import matplotlib as mpl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from aiplat.report import (
    PALETTE,
    Chart,
    ChartKind,
    Document,
    KeyFigure,
    Section,
    Series,
    Table,
    format_value,
    render_html,
    render_markdown,
    render_svg,
)

KINDS: tuple[ChartKind, ...] = ("bar", "stacked-bar", "hbar", "stacked-hbar")


def chart(kind: ChartKind = "bar", chart_id: str = "memory", **changes: object) -> Chart:
    data: dict[str, object] = {
        "id": chart_id,
        "title": "Memory per GPU",
        "unit": "GiB",
        "categories": ["weights", "kv-cache", "activations"],
        "series": [
            Series(name="training", values=[17.5, 0.0, 40.25]),
            Series(name="serving", values=[70.0, 6.2, 1.0]),
        ],
        "kind": kind,
    }
    data.update(changes)
    return Chart.model_validate(data)


def sample_document() -> Document:
    return Document(
        title="Plan: <demo> & co",
        subtitle="sizing draft",
        summary=[
            KeyFigure(label="GPUs", value="64", detail="8 nodes × 8 H100"),
            KeyFigure(label="Power", value="82 kW"),
        ],
        sections=[
            Section(
                id="memory",
                title="Memory",
                paragraphs=["Weights & optimizer state dominate.", "# of GPUs follows."],
                tables=[
                    Table(
                        title="Per GPU",
                        columns=["Component", "Size | GiB"],
                        rows=[["weights", "70"], ["<script>alert(1)</script>", "a|b\\"]],
                        align=["left", "right"],
                    )
                ],
                charts=[chart("stacked-bar", "memory-stacked"), chart("bar", "memory-grouped")],
                notes=["Assumes bf16 weights."],
            ),
            Section(
                id="power",
                title="Power",
                charts=[
                    chart("hbar", "power-hbar"),
                    chart(
                        "stacked-hbar",
                        "pools",
                        categories=["<b>train</b>", "serve $5"],
                        series=[Series(name="GPUs", values=[48, 16])],
                    ),
                ],
            ),
        ],
    )


def bar_ids(svg: str, chart_id: str) -> list[str]:
    return re.findall(rf'<g id="({re.escape(chart_id)}_bar_\d+_\d+)"', svg)


# --- document model ---------------------------------------------------------------------


def test_series_length_must_match_categories() -> None:
    with pytest.raises(ValidationError, match="2 values for 3 categories"):
        chart(series=[Series(name="s", values=[1.0, 2.0])])


def test_stacked_charts_reject_negative_values_but_grouped_accept_them() -> None:
    negative = [Series(name="delta", values=[-1.0, 2.0, 3.0])]
    for kind in ("stacked-bar", "stacked-hbar"):
        with pytest.raises(ValidationError, match="negative values"):
            chart(kind, series=negative)
    assert chart("bar", series=negative).series[0].values[0] == -1.0
    assert chart("hbar", series=negative).kind == "hbar"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"id": "Not A Slug"}, "pattern"),
        ({"id": "under_score"}, "pattern"),
        ({"categories": ["a", "a", "b"]}, "categories repeat"),
        ({"categories": []}, "at least 1"),
        ({"series": []}, "at least 1"),
        (
            {"series": [Series(name="x", values=[1, 2, 3]), Series(name="x", values=[1, 2, 3])]},
            "series names repeat",
        ),
        ({"kind": "pie"}, "bar"),
    ],
)
def test_chart_validation(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Chart.model_validate({**dict(chart()), **changes})


def test_series_values_must_be_finite() -> None:
    with pytest.raises(ValidationError, match="non-finite"):
        Series(name="s", values=[1.0, float("nan")])


def test_table_rows_and_align_must_match_columns() -> None:
    with pytest.raises(ValidationError, match="row 1 has 1 cells but there are 2 columns"):
        Table(columns=["a", "b"], rows=[["1", "2"], ["3"]])
    with pytest.raises(ValidationError, match="align has 1 entries for 2 columns"):
        Table(columns=["a", "b"], align=["right"])
    assert Table(columns=["a", "b"]).alignment == ["left", "left"]


def test_ids_must_be_unique_across_sections_and_charts() -> None:
    with pytest.raises(ValidationError, match="'memory' is used twice"):
        Document(title="t", sections=[Section(id="memory", title="M", charts=[chart()])])
    with pytest.raises(ValidationError, match="'a' is used twice"):
        Document(title="t", sections=[Section(id="a", title="A"), Section(id="a", title="B")])


def test_models_are_frozen() -> None:
    with pytest.raises(ValidationError, match="frozen"):
        chart().title = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0"), (-0.0, "0"), (12800, "12,800"), (1234.5, "1,234"), (80.25, "80.2"),
     (0.125, "0.125"), (-3.5, "-3.5"), (6.2, "6.2")],
)  # fmt: skip
def test_format_value(value: float, text: str) -> None:
    assert format_value(value) == text


def test_chart_as_table_adds_totals_for_stacked_charts() -> None:
    table = chart("stacked-bar").as_table()
    assert table.columns == ["", "training (GiB)", "serving (GiB)", "Total (GiB)"]
    assert table.rows[0] == ["weights", "17.5", "70", "87.5"]
    assert table.alignment == ["left", "right", "right", "right"]
    assert "Total (GiB)" not in chart("bar").as_table().columns


# --- SVG charts -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_svg_has_one_bar_per_data_point(kind: ChartKind) -> None:
    c = chart(kind)
    svg = render_svg(c)
    expected = [f"memory_bar_{s}_{i}" for s in range(2) for i in range(3)]
    assert sorted(bar_ids(svg, "memory")) == sorted(expected)
    # Each bar group holds exactly one drawn rectangle (a closed path).
    for bar in expected:
        group = re.search(rf'<g id="{bar}">\s*<path d="[^"]*z\s*"', svg)
        assert group is not None, bar


@pytest.mark.parametrize("kind", KINDS)
def test_svg_labels_every_bar_with_its_value(kind: ChartKind) -> None:
    svg = render_svg(chart(kind))
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    if kind.startswith("stacked"):
        # Totals always; segments where there is room (0.0 and 1.0 are too short).
        assert {"87.5", "6.2", "41.2"} <= set(texts)
        assert {"17.5", "70", "40.2", "6.2"} <= set(texts)
    else:
        assert {"17.5", "0", "40.2", "70", "6.2", "1"} <= set(texts)


@pytest.mark.parametrize("kind", KINDS)
def test_all_zero_chart_draws_zero_length_bars_on_a_positive_axis(kind: ChartKind) -> None:
    zeros = [Series(name="a", values=[0, 0, 0]), Series(name="b", values=[0, 0, 0])]
    svg = render_svg(chart(kind, series=zeros))
    assert len(bar_ids(svg, "memory")) == 6
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "1" in texts and not any(t.startswith("-") for t in texts)


def test_svg_is_ready_to_inline_in_html() -> None:
    svg = render_svg(chart(title="A < B"))
    assert svg.startswith(
        '<svg id="memory" class="aiplat-chart aiplat-chart-bar" role="img"'
        ' aria-labelledby="memory_title"'
    )
    assert '<title id="memory_title">A &lt; B</title>' in svg
    for absent in ("<?xml", "<!DOCTYPE", "<metadata", "xmlns", "http", "Matplotlib"):
        assert absent not in svg, absent
    assert svg.endswith("</svg>\n")
    # Text stays text (svg.fonttype none), in the page's sans-serif.
    assert "<text" in svg and "font-family: 'DejaVu Sans', sans-serif" in svg
    # matplotlib's global style rule is scoped to this chart.
    assert '<style type="text/css">#memory *{' in svg


def test_standalone_svg_keeps_namespaces() -> None:
    svg = render_svg(chart(), standalone=True)
    assert 'xmlns="http://www.w3.org/2000/svg"' in svg
    assert 'xmlns:xlink="http://www.w3.org/1999/xlink"' in svg


def test_svg_ids_are_namespaced_and_references_resolve() -> None:
    svg = render_svg(chart())
    ids = re.findall(r'\sid="([^"]+)"', svg)
    assert len(ids) == len(set(ids))
    assert all(i == "memory" or i.startswith("memory_") for i in ids)
    refs = re.findall(r'(?:url\(#|href="#)([^")]+)', svg)
    assert refs and set(refs) <= set(ids)


def test_svg_uses_the_colour_blind_safe_palette_in_order() -> None:
    svg = render_svg(chart())
    fills = re.findall(r'<g id="memory_bar_(\d)_0">\s*<path[^>]*fill: (#[0-9a-f]{6})', svg)
    assert fills == [("0", PALETTE[0].lower()), ("1", PALETTE[1].lower())]


def test_svg_escapes_labels_and_does_not_parse_math() -> None:
    svg = render_svg(
        chart(categories=["<b>x</b>", "$5 & $6", "c"], series=[Series(name="s", values=[1, 2, 3])])
    )
    assert "&lt;b&gt;x&lt;/b&gt;" in svg and "<b>" not in svg
    assert ">$5 &amp; $6<" in svg


def test_svg_is_deterministic_and_ignores_global_matplotlib_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = render_svg(chart("stacked-hbar"))
    monkeypatch.setitem(mpl.rcParams, "axes.facecolor", "#ff0000")
    monkeypatch.setitem(mpl.rcParams, "font.size", 30.0)
    monkeypatch.setitem(mpl.rcParams, "svg.fonttype", "path")
    assert render_svg(chart("stacked-hbar")) == first
    assert mpl.rcParams["svg.fonttype"] == "path"  # and leaves them as they were


def test_concurrent_renders_match_sequential_ones() -> None:
    charts = [chart(kind, f"c-{kind}") for kind in KINDS]
    sequential = [render_svg(c) for c in charts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(render_svg, charts)) == sequential


@settings(max_examples=20, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    data=st.integers(1, 6).flatmap(
        lambda n: st.lists(
            st.lists(
                st.floats(0, 1e6, allow_nan=False, allow_infinity=False), min_size=n, max_size=n
            ),
            min_size=1,
            max_size=4,
        )
    ),
)
def test_any_valid_chart_renders_one_bar_per_value(
    kind: ChartKind, data: list[list[float]]
) -> None:
    c = Chart(
        id="prop",
        title="property",
        categories=[f"category {i}" for i in range(len(data[0]))],
        series=[Series(name=f"s{j}", values=values) for j, values in enumerate(data)],
        kind=kind,
    )
    svg = render_svg(c)
    assert len(bar_ids(svg, "prop")) == len(data) * len(data[0])


# --- Markdown ---------------------------------------------------------------------------


def _split_row(line: str) -> list[str]:
    assert line.startswith("| ") and line.endswith(" |"), line
    return re.split(r"(?<!\\) \| ", line[2:-2])


def test_markdown_structure() -> None:
    md = render_markdown(sample_document())
    assert md.startswith("# Plan: &lt;demo> & co\n\n_sizing draft_\n\n## Summary\n")
    assert md.endswith("\n") and not md.endswith("\n\n")
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings == ["## Summary", "## Memory", "## Power"]
    assert "\\# of GPUs follows." in md
    assert "> **Note:** Assumes bf16 weights." in md
    assert "**Memory per GPU** (GiB)" in md


def test_markdown_tables_have_a_consistent_shape() -> None:
    md = render_markdown(sample_document())
    tables: list[list[str]] = []
    for line in md.splitlines():
        if line.startswith("|"):
            if not tables or not tables[-1]:
                tables.append([])
            tables[-1].append(line)
        elif tables and tables[-1]:
            tables.append([])
    tables = [t for t in tables if t]
    assert len(tables) == 1 + 1 + 4  # summary, one table, four charts as data tables
    for table in tables:
        width = len(_split_row(table[0]))
        assert all(len(_split_row(row)) == width for row in table), table
        assert all(re.fullmatch(r"---:?", c) for c in _split_row(table[1])), table[1]
    per_gpu = next(t for t in tables if t[0] == "| Component | Size \\| GiB |")
    assert per_gpu[1] == "| --- | ---: |"
    assert per_gpu[3] == "| &lt;script>alert(1)&lt;/script> | a\\|b\\\\ |"
    stacked = next(t for t in tables if "Total (GiB)" in t[0])
    assert stacked[2] == "| weights | 17.5 | 70 | 87.5 |"


# --- HTML -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def html() -> str:
    """The sample document's page, rendered once for the read-only checks below."""
    return render_html(sample_document())


def test_html_is_one_self_contained_page(html: str) -> None:
    assert html.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert html.rstrip().endswith("</html>")
    assert re.findall(r"https?:|//[a-z]", html, flags=re.IGNORECASE) == []
    assert re.findall(r"<script|<iframe|<img|@import|@font-face", html, flags=re.I) == []
    # Only in-page references: anchors, url(#id) in SVG, and the empty data: favicon.
    assert set(re.findall(r'(?:href|src)="([^#"][^"]*)"', html)) == {"data:,"}
    assert set(re.findall(r"url\((.)", html)) <= {"#"}
    assert "<title>Plan: &lt;demo&gt; &amp; co</title>" in html


def test_html_has_a_toc_and_one_svg_per_chart_with_all_bars(html: str) -> None:
    doc = sample_document()
    for section in doc.sections:
        assert f'<a href="#{section.id}">{section.title}</a>' in html
        assert f'<section id="{section.id}"' in html
    assert html.count("<svg ") == len(doc.all_charts()) == 4
    for c in doc.all_charts():
        assert f'<svg id="{c.id}" ' in html
        assert len(bar_ids(html, c.id)) == len(c.series) * len(c.categories)
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "duplicate ids on the page"


def test_html_escapes_document_text(html: str) -> None:
    assert "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>" in html
    assert "<script>" not in html
    assert "Weights &amp; optimizer state dominate." in html
    assert "&lt;b&gt;train&lt;/b&gt;" in html and "<b>" not in html


def test_html_shows_summary_notes_and_chart_data(html: str) -> None:
    assert '<dt>GPUs</dt>\n<dd><span class="value">64</span>' in html
    assert '<span class="detail">8 nodes × 8 H100</span>' in html
    assert "<li>Assumes bf16 weights.</li>" in html
    assert html.count("<summary>Data</summary>") == 4
    assert '<th scope="row">weights</th>' in html


def test_html_and_markdown_are_deterministic(html: str) -> None:
    doc = sample_document()
    assert render_html(doc).encode() == html.encode()
    assert render_markdown(doc).encode() == render_markdown(sample_document()).encode()


def test_empty_document_renders() -> None:
    doc = Document(title="Empty")
    assert render_markdown(doc) == "# Empty\n"
    html = render_html(doc)
    assert "<h1>Empty</h1>" in html and "<nav" not in html and "<svg" not in html
