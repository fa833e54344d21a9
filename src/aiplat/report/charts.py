"""Charts as inline SVG, drawn by matplotlib without pyplot.

Why this shape:

- ``matplotlib.figure.Figure`` with an explicit ``FigureCanvasSVG`` never touches pyplot's
  global figure manager or a GUI backend, so rendering works headless and in threads.
  matplotlib still reads a few settings (SVG font type, the id hash salt) from the global
  ``rcParams``; they are applied with ``rc_context`` on top of the ``default`` style (so a
  user's ``matplotlibrc`` cannot change the output) under a module lock, which serialises
  renders in this process.
- Text stays text (``svg.fonttype = 'none'``): the file stays small, the labels are
  searchable and selectable in the browser, and the page's sans-serif font applies.
- Output is deterministic — the same chart gives the same bytes — so golden files and
  caches work: the id hash salt is fixed and the date/creator metadata is dropped.
- The result is made to be inlined in HTML5: the XML declaration, doctype, RDF metadata and
  namespace declarations are removed (the HTML parser puts ``<svg>`` in the SVG namespace by
  itself, and the page then contains no URL at all); matplotlib's own ids (``figure_1``,
  clip paths, tick markers) are prefixed with ``<chart id>_`` so several charts can share a
  page, and its global ``*{...}`` style rule is scoped to the chart. ``standalone=True``
  keeps the namespaces for writing a ``.svg`` file.
- Accessibility: the ``<svg>`` has ``role="img"`` and a ``<title>``; every bar carries its
  value as a label, so nothing is read off an axis; colours come from the Okabe–Ito
  palette, which stays distinguishable with the common colour-vision deficiencies, and
  series past its eight colours also get a hatch pattern.
- Every bar rectangle gets the id ``<chart id>_bar_<series>_<category>``, which tests (and
  anyone post-processing the SVG) use to find the data marks.
"""

from __future__ import annotations

import html
import io
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import matplotlib as mpl
import matplotlib.style
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from aiplat.report.document import Chart, format_value

if TYPE_CHECKING:  # matplotlib >= 3.10 types rcParams keys as literals
    from matplotlib.typing import RcKeyType

PALETTE: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#56B4E9",  # sky blue
    "#CC79A7",  # reddish purple
    "#F0E442",  # yellow: last of the colours, it has the least contrast on white
    "#000000",
)
"""Okabe & Ito (2008), "Color Universal Design": distinguishable by most colour-blind readers."""

HATCHES: tuple[str, ...] = ("", "//", "..", "xx", "\\\\")

WIDTH_IN = 7.2
_LABEL_SIZE = 8.0
_MIN_LABELLED_SHARE = 0.07
"""Stacked segments shorter than this share of the longest bar get no inner label (no room)."""

_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "aiplat",
    "text.parse_math": False,  # a '$' in a label is a dollar, not TeX
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],  # ships with matplotlib; keeps the SVG's font list short
    "font.size": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.axisbelow": True,
    "axes.edgecolor": "#555555",
    "xtick.color": "#333333",
    "ytick.color": "#333333",
}
_LOCK = threading.Lock()

_TAG = re.compile(r"<[^>]+>")
"""A tag; text and attribute values are XML-escaped, so '>' cannot occur inside one."""
_ID_OR_REF = re.compile(r'((?<=\s)id="|url\(#|href="#)')
_NAMESPACES = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')


def render_svg(chart: Chart, *, standalone: bool = False) -> str:
    """Draw ``chart`` and return its ``<svg>`` element, ready to inline in an HTML page.

    The root element has ``id=chart.id``, ``class="aiplat-chart aiplat-chart-<kind>"``,
    ``role="img"`` and a ``<title>`` with the chart's title. With ``standalone=True`` the
    namespace declarations are kept, so the string is also a valid ``.svg`` file.
    """
    with _LOCK, matplotlib.style.context("default"), mpl.rc_context(_RC):
        figure = _draw(chart)
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return _finish(buffer.getvalue(), chart, standalone=standalone)


def _draw(chart: Chart) -> Figure:
    n_categories = len(chart.categories)
    n_series = len(chart.series)
    # Margins come from label lengths (_margins) rather than matplotlib's constrained layout,
    # which measures every text twice and took most of a report's rendering time.
    rotated = not chart.horizontal and _labels_too_long(chart.categories)
    figure = Figure(figsize=(WIDTH_IN, _height(chart) + (_rotated_depth(chart) if rotated else 0)))
    FigureCanvasSVG(figure)
    ax = figure.add_subplot()
    positions = [float(i) for i in range(n_categories)]
    max_total = max((abs(v) for v in _extent(chart)), default=0.0)

    if chart.stacked:
        thickness = 0.6
        base = [0.0] * n_categories
        containers = []
        for index, series in enumerate(chart.series):
            container = _bars(
                ax,
                chart,
                index,
                positions=positions,
                values=series.values,
                thickness=thickness,
                base=base,
            )
            containers.append(container)
            if index > 0:
                # A segment's base must not pin the axis limit (a zero-length top segment on
                # the longest bar would leave no room for its total label); only 0 is sticky.
                for patch in container.patches:
                    edges = patch.sticky_edges.x if chart.horizontal else patch.sticky_edges.y
                    edges.clear()
            base = [b + v for b, v in zip(base, series.values, strict=True)]
            if n_series > 1:
                # Segment labels inside the bar; segments too short for one stay unlabelled.
                labels = [
                    format_value(v) if max_total and v / max_total >= _MIN_LABELLED_SHARE else ""
                    for v in series.values
                ]
                ax.bar_label(
                    container,
                    labels=labels,
                    label_type="center",
                    fontsize=_LABEL_SIZE - 0.5,
                    color=_text_colour(_colour(index)),
                )
        ax.bar_label(
            containers[-1],
            labels=[format_value(t) for t in chart.totals()],
            padding=2,
            fontsize=_LABEL_SIZE,
            fontweight="bold",
        )
    else:
        group = 0.8
        thickness = group / n_series if n_series > 1 else 0.6
        for index, series in enumerate(chart.series):
            offset = (index - (n_series - 1) / 2) * thickness
            shifted = [p + offset for p in positions]
            container = _bars(
                ax,
                chart,
                index,
                positions=shifted,
                values=series.values,
                thickness=thickness,
                base=None,
            )
            ax.bar_label(
                container,
                labels=[format_value(v) for v in series.values],
                padding=2,
                fontsize=_LABEL_SIZE,
            )
        if any(v < 0 for s in chart.series for v in s.values):
            line = ax.axhline if not chart.horizontal else ax.axvline
            line(0.0, color="#555555", linewidth=0.8)

    if max_total == 0:
        # All zero: matplotlib would centre the axis on 0; show an empty 0..1 axis instead.
        (ax.set_xlim if chart.horizontal else ax.set_ylim)(0.0, 1.0)
    value_axis = ax.xaxis if chart.horizontal else ax.yaxis
    value_axis.set_major_formatter(FuncFormatter(lambda v, _pos: format_value(v)))
    ax.grid(axis="x" if chart.horizontal else "y", color="#dddddd", linewidth=0.6)
    if chart.horizontal:
        ax.set_yticks(positions, labels=chart.categories)
        ax.invert_yaxis()  # first category on top, as it reads
        ax.tick_params(axis="y", length=0)
        ax.margins(x=0.12)  # room for the value labels past the bar ends
        if chart.unit:
            ax.set_xlabel(chart.unit)
    else:
        ax.set_xticks(positions, labels=chart.categories)
        ax.tick_params(axis="x", length=0)
        if _labels_too_long(chart.categories):
            for label in ax.get_xticklabels():
                label.set_rotation(30)
                label.set_horizontalalignment("right")
                label.set_rotation_mode("anchor")
        ax.margins(y=0.1)
        if chart.unit:
            ax.set_ylabel(chart.unit)

    if n_series > 1:
        figure.legend(loc="upper center", bbox_to_anchor=(0.5, 1.0), ncols=min(n_series, 4),
                      frameon=False)
    _margins(figure, chart, max_total, rotated=rotated)
    return figure


def _bars(
    ax: Axes,
    chart: Chart,
    index: int,
    *,
    positions: Sequence[float],
    values: Sequence[float],
    thickness: float,
    base: Sequence[float] | None,
) -> BarContainer:
    style: dict[str, Any] = {
        "color": _colour(index),
        "edgecolor": "#ffffff",
        "linewidth": 0.6,
        "label": chart.series[index].name,
    }
    hatch = HATCHES[(index // len(PALETTE)) % len(HATCHES)]
    if hatch:
        style["hatch"] = hatch
    if chart.horizontal:
        container = ax.barh(positions, values, height=thickness, left=base, **style)
    else:
        container = ax.bar(positions, values, width=thickness, bottom=base, **style)
    for category, patch in enumerate(container.patches):
        patch.set_gid(f"bar_{index}_{category}")
    return container


def _extent(chart: Chart) -> list[float]:
    """The length of every drawn bar: totals when stacked, values otherwise."""
    if chart.stacked:
        return chart.totals()
    return [v for s in chart.series for v in s.values]


def _height(chart: Chart) -> float:
    legend = 0.35 if len(chart.series) > 1 else 0.0
    if not chart.horizontal:
        return 3.6 + legend
    per_category = 0.34 if chart.stacked else 0.12 + 0.22 * len(chart.series)
    return max(1.8, 0.8 + per_category * len(chart.categories)) + legend


_CHAR_IN = 5.4 / 72
"""Average width of a 9 pt DejaVu Sans character, in inches."""


def _rotated_depth(chart: Chart) -> float:
    """Height that category labels rotated by 30° take below the axis."""
    return max(len(c) for c in chart.categories) * _CHAR_IN * 0.5


def _margins(figure: Figure, chart: Chart, max_total: float, *, rotated: bool) -> None:
    width, height = figure.get_size_inches()
    legend = 0.4 if len(chart.series) > 1 else 0.0
    value_chars = len(format_value(max_total)) + 1
    if chart.horizontal:
        left = 0.2 + max(len(c) for c in chart.categories) * _CHAR_IN
        bottom = 0.3 + (0.25 if chart.unit else 0.0)
        right = 0.3
    else:
        left = 0.2 + value_chars * _CHAR_IN + (0.25 if chart.unit else 0.0)
        bottom = 0.35 + (_rotated_depth(chart) if rotated else 0.0)
        right = 0.15
    top = 0.15 + legend
    figure.subplots_adjust(left=min(left / width, 0.6), right=1 - right / width,
                           bottom=bottom / height, top=1 - top / height)


def _labels_too_long(categories: Sequence[str]) -> bool:
    # Roughly 5.4 pt per character at 9 pt; the axes get ~85 % of the figure width.
    room_chars = WIDTH_IN * 72 * 0.85 / len(categories) / 5.4
    return max(len(c) for c in categories) > room_chars


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _text_colour(background: str) -> str:
    """Black or white, whichever contrasts more with ``background`` (WCAG luminance)."""

    def channel(hex_pair: str) -> float:
        c = int(hex_pair, 16) / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(background[i : i + 2]) for i in (1, 3, 5))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if (luminance + 0.05) / 0.05 > 1.05 / (luminance + 0.05) else "#ffffff"


def _finish(svg: str, chart: Chart, *, standalone: bool) -> str:
    svg = svg[svg.index("<svg") :]  # drop the XML declaration and doctype
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, count=1, flags=re.DOTALL)
    prefix = f"{chart.id}_"
    svg = _TAG.sub(lambda tag: _ID_OR_REF.sub(lambda m: m.group(1) + prefix, tag.group(0)), svg)
    svg = svg.replace('<style type="text/css">*{', f'<style type="text/css">#{chart.id} *{{', 1)

    end = svg.index(">")
    attributes = svg[len("<svg") : end]
    if not standalone:
        attributes = _NAMESPACES.sub("", attributes)
    title_id = f"{chart.id}_title"
    root = (
        f'<svg id="{chart.id}" class="aiplat-chart aiplat-chart-{chart.kind}" role="img"'
        f' aria-labelledby="{title_id}"{attributes}>'
        f'\n <title id="{title_id}">{html.escape(chart.title)}</title>'
    )
    return root + svg[end + 1 :].rstrip("\n") + "\n"
