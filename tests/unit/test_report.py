"""The report layer: document validation, SVG charts, Markdown and self-contained HTML."""

from __future__ import annotations

import itertools
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

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
    return re.findall(rf'<rect id="({re.escape(chart_id)}_bar_\d+_\d+)"', svg)


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


def render(c: Chart, **options: bool) -> str:
    """The chart's SVG with only its wide layout (the narrow one has tests of its own)."""
    return drop_narrow(render_svg(c, **options))


def drop_narrow(svg: str) -> str:
    narrow = svg.index('\n<g class="narrow"')
    return svg[:narrow] + svg[svg.rindex("\n</svg>"):]


def svg_root(svg: str) -> ET.Element:
    """The chart parsed as XML: the inline form is well-formed XML too."""
    return ET.fromstring(svg)


def rects(svg: str) -> dict[str, tuple[float, float, float, float]]:
    """``x, y, width, height`` of every bar, by id."""
    found = {}
    for r in svg_root(svg).iter("rect"):
        if "_bar_" in r.get("id", ""):
            x, y, width, height = (float(r.get(k, "nan")) for k in ("x", "y", "width", "height"))
            found[r.get("id", "")] = (x, y, width, height)
    return found


def group(svg: str, group_id: str) -> ET.Element | None:
    return next((g for g in svg_root(svg).iter("g") if g.get("id") == group_id), None)


def tick_values(svg: str, chart_id: str) -> list[float]:
    ticks = group(svg, f"{chart_id}_ticks")
    assert ticks is not None
    return [float((t.text or "").replace(",", "")) for t in ticks.iter("text")]


def nine_series(kind: ChartKind = "bar") -> Chart:
    return chart(kind, series=[Series(name=f"s{i}", values=[i + 1.0, 1.0, 2.0]) for i in range(9)])


def test_charts_do_not_import_matplotlib() -> None:
    """matplotlib cost ~0.65 s of the plan's 2 s budget; the SVG is now written directly."""
    code = "import sys, aiplat.report; print([m for m in sys.modules if 'matplotlib' in m])"
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("kind", KINDS)
def test_svg_has_one_bar_per_data_point(kind: ChartKind) -> None:
    c = chart(kind)
    svg = render(c)
    expected = [f"memory_bar_{s}_{i}" for s in range(2) for i in range(3)]
    assert sorted(bar_ids(svg, "memory")) == sorted(expected)
    # Each id is exactly one drawn rectangle.
    for bar in expected:
        assert svg.count(f'id="{bar}"') == 1, bar
        assert re.search(rf'<rect id="{bar}" x="[\d.]+" y="[\d.]+" width="[\d.]+" height="[\d.]+"',
                         svg), bar


@pytest.mark.parametrize("kind", KINDS)
def test_svg_labels_every_bar_with_its_value(kind: ChartKind) -> None:
    svg = render(chart(kind))
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    if kind.startswith("stacked"):
        # Totals always; segments where there is room (0.0 and 1.0 are too short).
        assert {"87.5", "6.2", "41.2"} <= set(texts)
        assert {"17.5", "70", "40.2", "6.2"} <= set(texts)
    else:
        assert {"17.5", "0", "40.2", "70", "6.2", "1"} <= set(texts)


@pytest.mark.parametrize("kind", ["stacked-bar", "stacked-hbar"])
def test_stacked_totals_are_bold_and_segment_labels_contrast(kind: ChartKind) -> None:
    root = svg_root(render(chart(kind)))
    bold = [t.text for t in root.iter("text") if t.get("font-weight") == "bold"]
    assert bold == ["87.5", "6.2", "41.2"]
    fills = {t.text: t.get("fill") for t in root.iter("text") if t.get("font-size") == "9.5"}
    assert set(fills) == {"17.5", "70", "6.2", "40.2"}  # not 0.0 and 1.0: under 7 % of 87.5
    assert fills["17.5"] == "#ffffff"  # on blue
    assert fills["70"] == "#000000"  # on orange
    # A single series has no segments to label: only the totals.
    single = svg_root(render(chart(kind, series=[Series(name="s", values=[1, 2, 3])])))
    assert [t.get("font-size") for t in single.iter("text")].count("9.5") == 0


@pytest.mark.parametrize("kind", KINDS)
def test_all_zero_chart_draws_zero_length_bars_on_a_positive_axis(kind: ChartKind) -> None:
    zeros = [Series(name="a", values=[0, 0, 0]), Series(name="b", values=[0, 0, 0])]
    svg = render(chart(kind, series=zeros))
    assert len(bar_ids(svg, "memory")) == 6
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "1" in texts and not any(t.startswith("-") for t in texts)
    assert tick_values(svg, "memory")[0] == 0 and tick_values(svg, "memory")[-1] == 1
    assert all(0 in (w, h) for _, _, w, h in rects(svg).values())


def test_svg_is_ready_to_inline_in_html() -> None:
    svg = render(chart(title="A < B"))
    assert svg.startswith(
        '<svg id="memory" class="aiplat-chart aiplat-chart-bar" role="img"'
        ' aria-labelledby="memory_title"'
    )
    assert '<title id="memory_title">A &lt; B</title>' in svg
    for absent in ("<?xml", "<!DOCTYPE", "<metadata", "xmlns", "http", "Matplotlib"):
        assert absent not in svg, absent
    assert svg.endswith("</svg>\n")
    # Text stays text, in the page's sans-serif.
    assert "<text" in svg and "font-family: 'DejaVu Sans', sans-serif" in svg
    # Any style rule is scoped to this chart: an inline SVG's <style> applies to the whole page.
    for block in re.findall(r"<style[^>]*>(.*?)</style>", svg, flags=re.DOTALL):
        assert all(r.strip().startswith("#memory") for r in block.split("}") if r.strip())
    # It scales with the page: a viewBox matching its natural size.
    root = svg_root(svg)
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"


@pytest.mark.parametrize("kind", KINDS)
def test_standalone_svg_declares_its_namespace(kind: ChartKind) -> None:
    svg = render(nine_series(kind), standalone=True)
    assert 'xmlns="http://www.w3.org/2000/svg"' in svg
    assert svg_root(svg).tag == "{http://www.w3.org/2000/svg}svg"
    # Patterns are referenced with url(#...), never href, so no xlink namespace is needed.
    assert "href" not in svg


def test_svg_ids_are_namespaced_and_references_resolve() -> None:
    svg = render(nine_series())
    ids = re.findall(r'\sid="([^"]+)"', svg)
    assert len(ids) == len(set(ids))
    assert all(i == "memory" or i.startswith("memory_") for i in ids)
    refs = re.findall(r'(?:url\(#|href="#)([^")]+)', svg)
    assert refs and set(refs) <= set(ids)


def test_svg_uses_the_colour_blind_safe_palette_in_order() -> None:
    svg = render(chart())
    fills = re.findall(r'<rect id="memory_bar_(\d)_0"[^>]*fill="(#[0-9A-Fa-f]{6})"', svg)
    assert fills == [("0", PALETTE[0]), ("1", PALETTE[1])]


def test_series_past_the_palette_get_a_hatch_pattern_that_resolves() -> None:
    svg = render(nine_series())
    root = svg_root(svg)
    patterns = {p.get("id"): p for p in root.iter("pattern")}
    assert set(patterns) == {"memory_hatch_8"}
    fills = {r.get("id"): r.get("fill") for r in root.iter("rect") if r.get("id")}
    assert {fills[f"memory_bar_8_{i}"] for i in range(3)} == {"url(#memory_hatch_8)"}
    assert [fills[f"memory_bar_{s}_0"] for s in range(8)] == list(PALETTE)
    # The hatch is drawn over the series' colour (the palette wraps round).
    background = patterns["memory_hatch_8"].find("rect")
    assert background is not None and background.get("fill") == PALETTE[0]
    # The legend swatch shows the same hatch as the three bars.
    assert svg.count('fill="url(#memory_hatch_8)"') == 3 + 1


def test_svg_escapes_labels_and_does_not_parse_math() -> None:
    svg = render(
        chart(categories=["<b>x</b>", "$5 & $6", "c"], series=[Series(name="s", values=[1, 2, 3])])
    )
    assert "&lt;b&gt;x&lt;/b&gt;" in svg and "<b>" not in svg
    assert ">$5 &amp; $6<" in svg


@pytest.mark.parametrize(("kind", "length"), [("bar", 3), ("hbar", 2)])
def test_bar_length_is_proportional_to_value(kind: ChartKind, length: int) -> None:
    bars = rects(render(chart(kind, series=[Series(name="s", values=[1.0, 2.0, 0.5])])))
    one, two, half = (bars[f"memory_bar_0_{i}"] for i in range(3))
    assert two[length] == pytest.approx(2 * one[length], abs=0.02)
    assert half[length] == pytest.approx(one[length] / 2, abs=0.02)
    # All grow from the same baseline: the bottom edge, or the left edge.
    if kind == "bar":
        assert len({round(y + h, 2) for _, y, _, h in (one, two, half)}) == 1
    else:
        assert len({x for x, _, _, _ in (one, two, half)}) == 1


@pytest.mark.parametrize("kind", ["stacked-bar", "stacked-hbar"])
def test_stacked_segments_abut(kind: ChartKind) -> None:
    series = [Series(name=f"s{i}", values=[i + 1.0, 2.0, 0.0]) for i in range(3)]
    bars = rects(render(chart(kind, series=series)))
    for category in range(3):
        segments = [bars[f"memory_bar_{s}_{category}"] for s in range(3)]
        for first, then in itertools.pairwise(segments):
            if kind == "stacked-bar":  # upwards: the next one ends where this one starts
                assert then[1] + then[3] == pytest.approx(first[1], abs=1e-9)
                assert (then[0], then[2]) == (first[0], first[2])
            else:  # rightwards: the next one starts where this one ends
                assert then[0] == pytest.approx(first[0] + first[2], abs=1e-9)
                assert (then[1], then[3]) == (first[1], first[3])
    # The stack is as long as the total: 1 + 2 + 3 = 6 against 2 + 2 + 2 = 6.
    first_stack = [bars[f"memory_bar_{s}_0"] for s in range(3)]
    second_stack = [bars[f"memory_bar_{s}_1"] for s in range(3)]
    length = 3 if kind == "stacked-bar" else 2
    assert sum(b[length] for b in first_stack) == pytest.approx(
        sum(b[length] for b in second_stack), abs=0.05
    )


@pytest.mark.parametrize("kind", ["hbar", "stacked-hbar"])
def test_horizontal_charts_put_the_first_category_on_top(kind: ChartKind) -> None:
    svg = render(chart(kind))
    bars = rects(svg)
    tops = [bars[f"memory_bar_0_{i}"][1] for i in range(3)]
    assert tops == sorted(tops) and len(set(tops)) == 3
    label_y = {t.text: float(t.get("y", "nan")) for t in svg_root(svg).iter("text")}
    assert label_y["weights"] < label_y["kv-cache"] < label_y["activations"]
    # Each label sits beside its own bars.
    assert tops[0] < label_y["weights"] < tops[1]


@pytest.mark.parametrize("kind", ["bar", "hbar"])
def test_negative_values_extend_the_other_way_from_the_zero_line(kind: ChartKind) -> None:
    svg = render(chart(kind, series=[Series(name="s", values=[3.0, -2.0, 1.0])]))
    bars = rects(svg)
    pos, neg = bars["memory_bar_0_0"], bars["memory_bar_0_1"]
    zero_line = re.search(r'<line x1="([\d.]+)" y1="([\d.]+)"[^>]*stroke="#555555"', svg)
    assert zero_line is not None
    if kind == "bar":  # the positive bar stands on the line, the negative one hangs from it
        zero = float(zero_line.group(2))
        assert pos[1] + pos[3] == pytest.approx(zero, abs=0.011)
        assert neg[1] == pytest.approx(zero, abs=0.011)
        assert neg[3] == pytest.approx(pos[3] * 2 / 3, abs=0.02)
    else:  # the positive bar starts at the line, the negative one ends there
        zero = float(zero_line.group(1))
        assert pos[0] == pytest.approx(zero, abs=0.011)
        assert neg[0] + neg[2] == pytest.approx(zero, abs=0.011)
        assert neg[2] == pytest.approx(pos[2] * 2 / 3, abs=0.02)
    ticks = tick_values(svg, "memory")
    assert ticks[0] <= -2 and 0 in ticks
    assert "-2" in re.findall(r"<text[^>]*>([^<]*)</text>", svg)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n_series", [1, 2, 3])
def test_legend_names_the_series_exactly_when_there_are_several(
    kind: ChartKind, n_series: int
) -> None:
    names = [f"series-{i}" for i in range(n_series)]
    svg = render(chart(kind, series=[Series(name=n, values=[1, 2, 3]) for n in names]))
    legend = group(svg, "memory_legend")
    if n_series == 1:
        assert legend is None and "series-0" not in svg
        return
    assert legend is not None
    assert [t.text for t in legend.iter("text")] == names
    assert [r.get("fill") for r in legend.iter("rect")] == list(PALETTE[:n_series])


@pytest.mark.parametrize(
    ("kind", "values"),
    [
        ("bar", [17.5, 70, 40.25]),
        ("bar", [0.0583, 0.111, 0.116]),
        ("bar", [7.92, 7.92, 0.1]),
        ("bar", [3, -7.25, 12.5]),
        ("hbar", [1234567, 2, 30000]),
        ("hbar", [-0.4, -0.1, -0.3]),
        ("stacked-hbar", [48, 16, 0]),
        ("stacked-bar", [1, 1, 1e6]),
    ],
)
def test_value_axis_ticks_are_nice_and_cover_the_data(
    kind: ChartKind, values: list[float]
) -> None:
    svg = render(chart(kind, series=[Series(name="s", values=values)]))
    ticks = tick_values(svg, "memory")
    assert 4 <= len(ticks) <= 7
    step = ticks[1] - ticks[0]
    assert all(b - a == pytest.approx(step) for a, b in itertools.pairwise(ticks))
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 1e-6, step
    assert 0 in ticks
    assert ticks[0] <= min(0, *values) and ticks[-1] >= max(values)


def test_long_category_labels_rotate_only_when_they_do_not_fit() -> None:
    categories = [f"category number {i}" for i in range(8)]
    long = render(chart(categories=categories, series=[Series(name="s", values=[1.0] * 8)]))
    labels = [t for t in svg_root(long).iter("text") if t.text in categories]
    assert len(labels) == 8
    assert all("rotate(-30 " in t.get("transform", "") for t in labels)
    assert {t.get("text-anchor") for t in labels} == {"end"}
    short = render(chart())
    labels = [t for t in svg_root(short).iter("text") if t.text in {"weights", "kv-cache"}]
    assert len(labels) == 2 and not any(t.get("transform") for t in labels)
    # The rotated labels get room below the plot.
    assert float(svg_root(long).get("height", 0)) > float(svg_root(short).get("height", 0))


def test_horizontal_margin_fits_the_longest_category_label() -> None:
    name = "a fairly long category name"
    long = rects(render(chart("hbar", categories=[name, "b", "c"])))
    short = rects(render(chart("hbar", categories=["a", "b", "c"])))
    assert long["memory_bar_0_0"][0] >= len(name) * 11 * 0.5  # 11-unit text, >= 0.5 em a char
    assert long["memory_bar_0_0"][0] > short["memory_bar_0_0"][0]


def test_svg_is_deterministic() -> None:
    charts = [chart(kind, f"c-{kind}") for kind in KINDS] + [nine_series("stacked-hbar")]
    first = [render_svg(c) for c in charts]
    assert [render_svg(c) for c in reversed(charts)] == first[::-1]
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(lambda: [render_svg(c) for c in charts]).result() == first
    # An equal chart (not the same object) gives the same bytes.
    assert render_svg(Chart.model_validate(charts[0].model_dump())).encode() == first[0].encode()


def test_concurrent_renders_match_sequential_ones() -> None:
    charts = [chart(kind, f"c-{kind}") for kind in KINDS] * 4
    sequential = [render_svg(c) for c in charts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(render_svg, charts)) == sequential


@settings(max_examples=20, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    data=st.integers(1, 6).flatmap(
        lambda n: st.lists(
            st.lists(
                st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
                min_size=n,
                max_size=n,
            ),
            min_size=1,
            max_size=4,
        )
    ),
)
def test_any_valid_chart_renders_one_bar_per_value(
    kind: ChartKind, data: list[list[float]]
) -> None:
    if kind.startswith("stacked"):  # stacking cannot show negative values
        data = [[abs(v) for v in values] for values in data]
    c = Chart(
        id="prop",
        title="property",
        categories=[f"category {i}" for i in range(len(data[0]))],
        series=[Series(name=f"s{j}", values=values) for j, values in enumerate(data)],
        kind=kind,
    )
    svg = render(c)
    assert len(bar_ids(svg, "prop")) == len(data) * len(data[0])
    # Every bar lies inside the picture.
    root = svg_root(svg)
    width, height = float(root.get("width", "nan")), float(root.get("height", "nan"))
    for x, y, w, h in rects(svg).values():
        assert w >= 0 and h >= 0
        assert x >= 0 and y >= 0 and x + w <= width + 0.01 and y + h <= height + 0.01


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
    assert ('<td data-label="Component" class="long">&lt;script&gt;alert(1)&lt;/script&gt;'
            "</td>") in html
    assert "<script>" not in html
    assert "Weights &amp; optimizer state dominate." in html
    assert "&lt;b&gt;train&lt;/b&gt;" in html and "<b>" not in html


def test_html_shows_summary_notes_and_chart_data(html: str) -> None:
    assert '<dt>GPUs</dt>\n<dd><span class="value">64</span>' in html
    assert '<span class="detail">8 nodes × 8 H100</span>' in html
    assert "<li>Assumes bf16 weights.</li>" in html
    assert html.count("<summary>Data</summary>") == 4
    assert '<th scope="row" data-label="">weights</th>' in html


def test_html_and_markdown_are_deterministic(html: str) -> None:
    doc = sample_document()
    assert render_html(doc).encode() == html.encode()
    assert render_markdown(doc).encode() == render_markdown(sample_document()).encode()


def test_empty_document_renders() -> None:
    doc = Document(title="Empty")
    assert render_markdown(doc) == "# Empty\n"
    html = render_html(doc)
    assert "<h1>Empty</h1>" in html and "<nav" not in html and "<svg" not in html
