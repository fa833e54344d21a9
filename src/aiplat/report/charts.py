"""Charts as inline SVG, written directly as text.

Why hand-written: the report's charts are bar and line charts (rectangles, paths, text) and
matplotlib, which drew them before, cost about 0.65 s of the 2 s budget of ``aiplat plan``:
0.4 s to import and 0.25 s to render the six charts. Building the SVG as a string takes well
under a millisecond per chart, needs no dependency and no lock, and the output is small and
deterministic (the same chart gives the same bytes, so golden files and caches work).

Two layouts in one picture: every chart is drawn twice, for a 640-unit width (``<g
class="wide">``) and for 320 units (``<g class="narrow">``, drawn at twice the scale so it
spans the same viewBox width, hidden by a ``display`` attribute). The page scales the
picture to its column; on a phone the column is ~350 px, so 11-unit text of the wide layout
would render at ~6 px, and shrunk value labels at ~3 px. The page's narrow-screen CSS
therefore hides the wide drawing, shows the narrow one and sets the aspect ratio the root
carries in ``--narrow-ratio`` (the viewBox is pinned top-left, so the taller narrow drawing
extends it downwards). The narrow layout shortens labels sooner and leaves value labels out
where they would have to shrink below 9.5 units (the data table below the chart has every
number), so its text renders at 10 px or more on a 390-px screen. One ``<svg>`` per chart,
rather than two switched by CSS, keeps one image (one title, one role) per chart.

Layout rules (all sizes in SVG user units of the layout; the height follows from the
content):

- Value axis: "nice" ticks (steps of 1, 2 or 5 × 10^k, 3 to 6 intervals) from the lowest to
  the highest tick covering the data, zero always included; light grid lines at the ticks and
  a darker zero line, which negative values (non-stacked kinds only) extend away from. All
  zero data gets an empty 0..1 axis.
- Vertical kinds: a fixed plot height; the categories share the width in equal bands. Category
  labels rotate by -30° when the longest does not fit its band with an em to spare, and value
  labels turn upright (and shrink to the bar's width) when wider than their bar.
- Horizontal kinds: a fixed band height per category, first category on top; the left margin
  fits the longest category label (shortened past 40 % of the width), the right margin the
  widest value label.
- Line charts: the vertical value axis of the bar kinds, one path per series through its
  points, placed at their ``x`` on a nice numeric axis (labelled ``x_unit``) or evenly in
  bands; each series has an Okabe–Ito colour *and* a dash pattern (:data:`DASHES`), so
  lines differ in greyscale or for any colour vision. No value labels (the data table has
  them); x labels are thinned so they never touch.
- Grouped bars sit side by side within a category's band; stacked bars are cumulative, with the
  bold total past the end and each segment's value centred inside it when the segment is at
  least 7 % of the longest bar and the label fits.
- Text widths are estimated from the characters (about 0.6 em each in DejaVu Sans, narrow and
  wide letters counted apart): there is no font engine here, so estimates err a little wide.
- A legend (swatch and name, in centred rows above the plot) appears when there is more than
  one series.

Contract with the HTML report:

- The ``<svg>`` has ``id=chart.id``, ``class="aiplat-chart aiplat-chart-<kind>"``,
  ``role="img"`` and a ``<title>``; every bar also carries its value as a text label, so nothing
  is read off an axis. Text stays ``<text>``: searchable, selectable, in the page's sans-serif.
- It is made to be inlined in HTML5: no XML declaration and no namespace declarations (the
  HTML parser puts ``<svg>`` in the SVG namespace by itself, and the page contains no URL).
  ``standalone=True`` adds ``xmlns`` for writing a ``.svg`` file.
- Every id inside is ``<chart id>_...`` so several charts can share a page; each bar is one
  ``<rect id="<chart id>_bar_<series>_<category>">`` and each line one ``<path
  id="<chart id>_line_<series>">``, which tests (and anyone post-processing the SVG) use to
  find the data marks; the narrow layout's ids are ``<chart id>_narrow_...``.
- Colours come from the Okabe–Ito palette, which stays distinguishable with the common
  colour-vision deficiencies; series past its eight colours also get a hatch pattern.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from aiplat.report.document import Chart, format_value

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
"""Hatch per round through the palette: series 8-15 get ``//``, 16-23 ``..``, and so on."""

WIDTH = 640.0
NARROW_WIDTH = 320.0
"""The narrow layout's width: drawn at twice the scale in the same picture (see render_svg)."""
_PAD = 8.0  # around the picture
_FONT = 11.0  # ticks, categories, legend, unit
_LABEL_FONT = 10.0  # value labels
_SEGMENT_FONT = 9.5  # labels inside stacked segments
_MIN_FONT = 6.0  # value labels shrink to fit narrow bars, down to this
_NARROW_MIN_FONT = 9.5  # ... but not in the narrow layout: there they are left out instead
_NARROW = frozenset(" !'()-./:;I[]fijlrt|")  # about 0.3-0.4 em in DejaVu Sans
_WIDE = frozenset("#%&+<=>@MW_mw~")  # about 0.8-1 em
_GAP = 4.0  # between a bar's end and its label, or a label and its axis
_PLOT_HEIGHT = 210.0  # vertical kinds
_MIN_BAND = 28.0  # horizontal kinds: height of a category with one bar
_GROUPED_BAR = 14.0  # horizontal kinds: thickness of each bar in a group
_LEGEND_ROW = 18.0
_SWATCH = 10.0
_LEGEND_SPACING = 16.0
_MAX_LABEL_SHARE = 0.4  # horizontal category labels: at most this share of the width
_MAX_LABEL_CHARS = 38  # longer category and series names are shortened with "…"
_NARROW_LABEL_CHARS = 22
_LINE_WIDTH = 2.0
_LINE_SWATCH = 22.0  # legend sample of a line series
DASHES: tuple[str, ...] = ("", "7 3", "2 2.5", "9 3 2 3", "4 4", "1 3")
"""Dash pattern per line series (cycled), so lines differ without colour too."""
_ROTATION = 30.0  # degrees, for category labels too long for their band
_MIN_LABELLED_SHARE = 0.07
"""Stacked segments shorter than this share of the longest bar get no inner label (no room)."""
_TINY = 1e-300  # below this span 10**k underflows: treat the data as all zero

_FONT_FAMILY = "'DejaVu Sans', sans-serif"  # whose metrics _text_width assumes
_TEXT = "#333333"
_GRID = "#dddddd"
_AXIS = "#555555"
_EDGE = "#ffffff"


def render_svg(chart: Chart, *, standalone: bool = False) -> str:
    """Draw ``chart`` and return its ``<svg>`` element, ready to inline in an HTML page.

    The root element has ``id=chart.id``, ``class="aiplat-chart aiplat-chart-<kind>"``,
    ``role="img"`` and a ``<title>`` with the chart's title. With ``standalone=True`` the
    namespace declaration is added, so the string is also a valid ``.svg`` file.
    """
    wide = _layout(chart, _Frame(WIDTH, _MIN_FONT, _MAX_LABEL_CHARS, chart.id))
    narrow = _layout(chart, _Frame(NARROW_WIDTH, _NARROW_MIN_FONT, _NARROW_LABEL_CHARS,
                                   f"{chart.id}_narrow"))
    scale = _num(WIDTH / NARROW_WIDTH)
    parts = [
        _root(chart, wide, narrow, standalone=standalone),
        *_defs(chart),
        '<g class="wide">',
        *_drawing(chart, wide),
        "</g>",
        # Hidden unless the page's narrow-screen CSS shows it (and hides the wide one).
        f'<g class="narrow" display="none" transform="scale({scale})">',
        *_drawing(chart, narrow),
        "</g>",
        "</svg>\n",
    ]
    return "\n".join(parts)


def _drawing(chart: Chart, layout: _Layout) -> list[str]:
    """Everything of one layout but the root and the shared pattern definitions."""
    common = [*_legend(chart, layout), *_grid(chart, layout)]
    if chart.kind == "line":
        return [*common, _zero_line(layout), *_lines(chart, layout), *_x_labels(chart, layout)]
    bars = _bars(chart, layout)
    return [
        *common,
        *_bar_rects(chart, layout, bars),
        _zero_line(layout),
        *_value_labels(chart, layout, bars),
        *_category_labels(layout),
    ]


# --- layout -------------------------------------------------------------------------------

# Records are NamedTuples rather than dataclasses: as immutable, and several times cheaper to
# define, which counts against the import budget.


class _Axis(NamedTuple):
    """The value axis: its range (the outer ticks) and the ticks."""

    lo: float
    hi: float
    ticks: tuple[float, ...]

    def fraction(self, value: float) -> float:
        return (value - self.lo) / (self.hi - self.lo)


class _Box(NamedTuple):
    left: float
    top: float
    right: float
    bottom: float


class _Frame(NamedTuple):
    """What differs between the wide and the narrow layout of one chart."""

    width: float
    min_font: float  # value labels shrink down to this; below, they are left out
    max_chars: int  # longer category labels are shortened
    ident: str  # prefix of the ids inside the layout


class _Layout(NamedTuple):
    frame: _Frame
    horizontal: bool
    height: float
    plot: _Box
    axis: _Axis
    band: float  # room per category along the category axis
    thickness: float  # of one bar (or one stack)
    categories: tuple[str, ...]  # as shown: long ones shortened
    legend: tuple[tuple[int, ...], ...]  # series indices per legend row
    rotate_categories: bool
    rotate_values: bool
    value_font: float  # of the labels past the bar ends
    low_room: float  # past the axis' low end (below or left) for labels of negative bars
    show_values: bool = True  # False when the labels would not fit at the frame's min font
    points: tuple[float, ...] = ()  # line charts: x of each point
    x_labels: tuple[tuple[float, str], ...] = ()  # line charts: labelled x positions

    def value_at(self, value: float) -> float:
        """The coordinate of ``value`` along the value axis (x, or y growing upwards)."""
        fraction = self.axis.fraction(value)
        if self.horizontal:
            return self.plot.left + fraction * (self.plot.right - self.plot.left)
        return self.plot.bottom - fraction * (self.plot.bottom - self.plot.top)

    def band_start(self, category: int) -> float:
        return (self.plot.top if self.horizontal else self.plot.left) + category * self.band


def _layout(chart: Chart, frame: _Frame) -> _Layout:
    axis = _nice_axis(_extent(chart))
    legend = _legend_rows(chart, frame.width)
    if chart.kind == "line":
        return _line_layout(chart, axis, legend, frame)
    if chart.horizontal:
        return _horizontal_layout(chart, axis, legend, frame)
    return _vertical_layout(chart, axis, legend, frame)


def _value_axis_left(chart: Chart, axis: _Axis) -> float:
    """Left edge of a plot whose value axis is vertical: unit title, tick labels, gaps."""
    tick_width = max(_text_width(format_value(t), _FONT) for t in axis.ticks)
    return _PAD + (_FONT + _GAP if chart.unit else 0.0) + tick_width + 2 * _GAP


def _vertical_layout(
    chart: Chart, axis: _Axis, legend: tuple[tuple[int, ...], ...], frame: _Frame
) -> _Layout:
    categories = tuple(_shorten(c, frame.max_chars) for c in chart.categories)
    n = len(categories)
    left = _value_axis_left(chart, axis)
    right = frame.width - _PAD
    label_width = max(_text_width(c, _FONT) for c in categories)
    # Rotate unless every label fits its band with about an em to spare between neighbours.
    rotate_categories = label_width + 0.8 * _FONT > (right - left) / n
    depth = _FONT + _GAP
    if rotate_categories:
        left = _left_for_rotated(categories, left, right)
        depth = label_width * math.sin(math.radians(_ROTATION)) + _FONT
    band = (right - left) / n
    thickness = _thickness(chart, band)
    # A value label wider than its slot would run into its neighbour: turn it upright, and
    # make it no taller than the slot is wide (down to a legible minimum).
    slot = band if chart.stacked or len(chart.series) == 1 else thickness
    above, below = _end_label_widths(chart)
    rotate_values = max(above, below) > slot - 1
    value_font = _LABEL_FONT
    show_values = not rotate_values or slot >= frame.min_font
    if not show_values:  # the data table below the chart has the numbers
        headroom, low_room = _GAP, 0.0
    elif rotate_values:
        value_font = max(frame.min_font, min(_LABEL_FONT, slot))
        above, below = (w * value_font / _LABEL_FONT for w in (above, below))
        headroom, low_room = above + _GAP, (below + _GAP if below else 0.0)
    else:
        headroom, low_room = _LABEL_FONT + _GAP, (_LABEL_FONT + _GAP if below else 0.0)
    top = _PAD + _legend_height(legend) + headroom
    plot = _Box(left, top, right, top + _PLOT_HEIGHT)
    return _Layout(
        frame=frame,
        show_values=show_values,
        horizontal=False,
        height=plot.bottom + low_room + depth + _GAP + _PAD,
        plot=plot,
        axis=axis,
        band=band,
        thickness=thickness,
        categories=categories,
        legend=legend,
        rotate_categories=rotate_categories,
        rotate_values=rotate_values,
        value_font=value_font,
        low_room=low_room,
    )


def _left_for_rotated(categories: Sequence[str], left: float, right: float) -> float:
    """The least left edge that keeps every rotated category label inside the picture.

    A label rotated about its end hangs ``width × cos(30°)`` left of its band's centre, and
    the centre of band i sits at ``left + (i + ½) / n × (right - left)``; solving for ``left``
    gives the bound for each label.
    """
    n = len(categories)
    cos = math.cos(math.radians(_ROTATION))
    for index, name in enumerate(categories):
        share = (index + 0.5) / n
        left = max(left, (_PAD + _text_width(name, _FONT) * cos - share * right) / (1 - share))
    return left


def _horizontal_layout(
    chart: Chart, axis: _Axis, legend: tuple[tuple[int, ...], ...], frame: _Frame
) -> _Layout:
    room = frame.width * _MAX_LABEL_SHARE
    categories = tuple(_shorten_to(_shorten(c, frame.max_chars), room) for c in chart.categories)
    n_series = len(chart.series)
    grouped = not chart.stacked and n_series > 1
    band = max(_MIN_BAND, n_series * _GROUPED_BAR / 0.8) if grouped else _MIN_BAND
    after, before = _end_label_widths(chart)
    low_room = before + _GAP if before else 0.0  # labels of negative bars, left of their end
    left = _PAD + max(_text_width(c, _FONT) for c in categories) + 2 * _GAP + low_room
    # Tick labels are centred on their tick: the outer two must not stick out of the picture.
    left = max(left, _PAD + _text_width(format_value(axis.ticks[0]), _FONT) / 2)
    last_tick = _text_width(format_value(axis.ticks[-1]), _FONT) / 2
    right = frame.width - _PAD - max(after + _GAP, last_tick)
    top = _PAD + _legend_height(legend)
    plot = _Box(left, top, right, top + band * len(categories))
    below = _GAP + _FONT + (_GAP + _FONT + _GAP if chart.unit else 0.0)
    return _Layout(
        frame=frame,
        horizontal=True,
        height=plot.bottom + below + _PAD,
        plot=plot,
        axis=axis,
        band=band,
        thickness=_thickness(chart, band),
        categories=categories,
        legend=legend,
        rotate_categories=False,
        rotate_values=False,
        value_font=_LABEL_FONT,
        low_room=low_room,
    )


def _line_layout(
    chart: Chart, axis: _Axis, legend: tuple[tuple[int, ...], ...], frame: _Frame
) -> _Layout:
    """A vertical value axis as for bars; points evenly spread or at their ``x``."""
    left = _value_axis_left(chart, axis)
    n = len(chart.categories)
    if chart.x is not None:
        x_axis = _nice_axis(chart.x, include_zero=False)
        ticks = [(t, format_value(t)) for t in x_axis.ticks]
    else:
        x_axis = None
        ticks = [(float(i), _shorten(c, frame.max_chars)) for i, c in enumerate(chart.categories)]
    half = max(_text_width(text, _FONT) for _, text in ticks[-1:]) / 2
    right = frame.width - _PAD - half
    top = _PAD + _legend_height(legend) + _FONT / 2 + _GAP  # room for the top tick label
    plot = _Box(left, top, right, top + _PLOT_HEIGHT)
    span = right - left

    def at(value: float) -> float:
        if x_axis is not None:
            return left + x_axis.fraction(value) * span
        return left + (value + 0.5) * span / n  # band centres, as for bars

    points = tuple(at(v) for v in (chart.x if chart.x is not None else range(n)))
    placed = [(at(v), text) for v, text in ticks]
    widest = max(_text_width(text, _FONT) for _, text in placed)
    room = span / max(1, len(placed) - 1) if len(placed) > 1 else span
    every = max(1, math.ceil((widest + 0.8 * _FONT) / room))  # labels that do not touch
    below = _GAP + _FONT + (_GAP + _FONT + _GAP if chart.x_unit else 0.0)
    return _Layout(
        frame=frame,
        horizontal=False,
        height=plot.bottom + below + _GAP + _PAD,
        plot=plot,
        axis=axis,
        band=span / n,
        thickness=0.0,
        categories=tuple(chart.categories),
        legend=legend,
        rotate_categories=False,
        rotate_values=False,
        value_font=_LABEL_FONT,
        low_room=0.0,
        show_values=False,
        points=points,
        x_labels=tuple(placed[::every]),
    )


def _thickness(chart: Chart, band: float) -> float:
    """Grouped bars share 80 % of the band; a lone bar or a stack takes 60 %."""
    if chart.stacked or len(chart.series) == 1:
        return 0.6 * band
    return 0.8 * band / len(chart.series)


def _extent(chart: Chart) -> list[float]:
    """The length of every drawn bar: totals when stacked, values otherwise."""
    if chart.stacked:
        return chart.totals()
    return [v for s in chart.series for v in s.values]


def _nice_axis(values: Sequence[float], *, include_zero: bool = True) -> _Axis:
    """Ticks at a 1/2/5 × 10^k step from below the lowest value to above the highest.

    Value axes include zero (bars grow from it); a line chart's x axis need not.
    """
    lo, hi = min(values), max(values)
    if include_zero:
        lo, hi = min(0.0, lo), max(0.0, hi)
    if hi - lo < _TINY:  # all equal: a unit-wide axis rather than a degenerate one
        lo, hi = (0.0, 1.0) if include_zero else (lo - 0.5, hi + 0.5)
    magnitude = 10.0 ** math.floor(math.log10((hi - lo) / 5))  # aiming at ~5 intervals
    for multiple in (1.0, 2.0, 5.0, 10.0):  # 10 × magnitude always gives at most 6
        step = multiple * magnitude
        first, last = _tick_range(lo, hi, step)
        if last - first <= 6:
            break
    ticks = tuple(float(f"{i * step:.12g}") for i in range(first, last + 1))  # 0.3, not 0.30…4
    return _Axis(ticks[0], ticks[-1], ticks)


def _tick_range(lo: float, hi: float, step: float) -> tuple[int, int]:
    """The multiples of ``step`` just covering lo..hi, ignoring float noise in the division
    (1.1 / 0.1 = 11.000000000000002 must not add a tick)."""
    return math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)


def _end_label_widths(chart: Chart) -> tuple[float, float]:
    """The widest label past a bar's end, for bars growing from zero and for negative bars."""
    if chart.stacked:
        totals = chart.totals()
        return max(_text_width(format_value(t), _LABEL_FONT, bold=True) for t in totals), 0.0
    values = [v for s in chart.series for v in s.values]
    widths = [(v < 0, _text_width(format_value(v), _LABEL_FONT)) for v in values]
    above = max((w for negative, w in widths if not negative), default=0.0)
    below = max((w for negative, w in widths if negative), default=0.0)
    return above, below


def _legend_rows(chart: Chart, width: float) -> tuple[tuple[int, ...], ...]:
    """Series indices packed greedily into rows that fit the width; none for one series."""
    if len(chart.series) < 2:
        return ()
    rows: list[list[int]] = [[]]
    used = 0.0
    for index in range(len(chart.series)):
        item = _legend_item_width(chart, index)
        if rows[-1] and used + _LEGEND_SPACING + item > width - 2 * _PAD:
            rows.append([])
            used = 0.0
        used += (_LEGEND_SPACING if rows[-1] else 0.0) + item
        rows[-1].append(index)
    return tuple(tuple(row) for row in rows)


def _legend_item_width(chart: Chart, index: int) -> float:
    name = _shorten(chart.series[index].name, _MAX_LABEL_CHARS)
    swatch = _LINE_SWATCH if chart.kind == "line" else _SWATCH
    return swatch + _GAP + _text_width(name, _FONT)


def _legend_height(rows: tuple[tuple[int, ...], ...]) -> float:
    return len(rows) * _LEGEND_ROW + (_GAP if rows else 0.0)


def _text_width(text: str, size: float, *, bold: bool = False) -> float:
    """Estimated from the characters: there is no font engine here.

    DejaVu Sans averages about 0.6 em per character; narrow and wide letters are counted
    apart so that short labels and the legend are not spaced too loosely. The estimate errs
    a little wide, which fallback fonts (mostly narrower) absorb.
    """
    ems = sum(
        0.35 if c in _NARROW else 0.9 if c in _WIDE else 0.7 if c.isupper() else 0.63
        for c in text
    )
    return ems * size * (1.1 if bold else 1.0)


def _shorten(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _shorten_to(text: str, width: float) -> str:
    """``text``, cut and ending in "…" where wider than ``width`` at the axis font size."""
    while len(text) > 1 and _text_width(text, _FONT) > width:
        text = text[:-2] + "…"
    return text


# --- drawing ------------------------------------------------------------------------------


class _Bar(NamedTuple):
    """One drawn bar (or stack segment) in value space, placed across the band."""

    series: int
    category: int
    start: float  # 0, or the end of the segment below when stacked
    end: float
    offset: float  # its leading edge across the category axis

    @property
    def negative(self) -> bool:
        return self.end < self.start


def _bars(chart: Chart, layout: _Layout) -> list[_Bar]:
    bars = []
    n_series = len(chart.series)
    for category in range(len(chart.categories)):
        band_start = layout.band_start(category)
        base = 0.0
        for index, series in enumerate(chart.series):
            value = series.values[category]
            if chart.stacked:
                offset = band_start + (layout.band - layout.thickness) / 2
                bars.append(_Bar(index, category, base, base + value, offset))
                base += value
            else:
                group = n_series * layout.thickness
                offset = band_start + (layout.band - group) / 2 + index * layout.thickness
                bars.append(_Bar(index, category, 0.0, value, offset))
    return bars


def _rect(layout: _Layout, bar: _Bar) -> tuple[float, float, float, float]:
    """``x, y, width, height`` of a bar."""
    # Ends rounded before the length is taken, so stacked segments meet exactly.
    a, b = sorted(round(layout.value_at(value), 2) for value in (bar.start, bar.end))
    if layout.horizontal:
        return a, bar.offset, b - a, layout.thickness
    return bar.offset, a, layout.thickness, b - a


def _root(chart: Chart, wide: _Layout, narrow: _Layout, *, standalone: bool) -> str:
    """The ``<svg>``: sized for the wide layout; ``--narrow-ratio`` is the picture's aspect
    ratio once the narrow layout (drawn at twice the scale) shows instead. The viewBox is
    pinned to the top left so the taller narrow drawing extends it downwards."""
    namespace = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
    title_id = f"{chart.id}_title"
    height = _num(wide.height)
    narrow_height = _num(narrow.height * WIDTH / NARROW_WIDTH)
    return (
        f'<svg id="{chart.id}" class="aiplat-chart aiplat-chart-{chart.kind}" role="img"'
        f' aria-labelledby="{title_id}"{namespace} width="{_num(WIDTH)}" height="{height}"'
        f' viewBox="0 0 {_num(WIDTH)} {height}" preserveAspectRatio="xMinYMin meet"'
        f' font-size="{_num(_FONT)}"'
        f' style="font-family: {_FONT_FAMILY}; --narrow-ratio: {_num(WIDTH)} / {narrow_height}">\n'
        f'<title id="{title_id}">{html.escape(chart.title)}</title>'
    )


def _fill(chart: Chart, index: int) -> str:
    """A series' colour, or its hatch pattern once the palette has been used up."""
    if _hatch(index):
        return f"url(#{chart.id}_hatch_{index})"
    return _colour(index)


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _hatch(index: int) -> str:
    return HATCHES[(index // len(PALETTE)) % len(HATCHES)]


_HATCH_SHAPES: dict[str, str] = {
    "//": '<path d="M-1,1 L1,-1 M0,6 L6,0 M5,7 L7,5"/>',
    "\\\\": '<path d="M-1,5 L1,7 M0,0 L6,6 M5,-1 L7,1"/>',
    "xx": '<path d="M0,6 L6,0 M0,0 L6,6"/>',
    "..": '<circle cx="3" cy="3" r="1.1" stroke="none"/>',
}
"""One 6×6 tile of each hatch; lines drawn corner to corner so the tiles join up."""


def _defs(chart: Chart) -> Iterator[str]:
    """A hatch pattern (the series colour behind contrasting lines) per hatched series."""
    hatched = [i for i in range(len(chart.series)) if _hatch(i)]
    if not hatched:
        return
    yield "<defs>"
    for index in hatched:
        colour = _colour(index)
        ink = _text_colour(colour)
        yield (
            f'<pattern id="{chart.id}_hatch_{index}" width="6" height="6"'
            f' patternUnits="userSpaceOnUse"><rect width="6" height="6" fill="{colour}"/>'
            f'<g stroke="{ink}" fill="{ink}" stroke-width="1">{_HATCH_SHAPES[_hatch(index)]}'
            "</g></pattern>"
        )
    yield "</defs>"


def _legend(chart: Chart, layout: _Layout) -> Iterator[str]:
    if not layout.legend:
        return
    yield f'<g id="{layout.frame.ident}_legend" fill="{_TEXT}">'
    line = chart.kind == "line"
    swatch = _LINE_SWATCH if line else _SWATCH
    for row, indices in enumerate(layout.legend):
        widths = [_legend_item_width(chart, i) for i in indices]
        x = (layout.frame.width - sum(widths) - _LEGEND_SPACING * (len(widths) - 1)) / 2
        middle = _PAD + (row + 0.5) * _LEGEND_ROW
        for index, width in zip(indices, widths, strict=True):
            name = _shorten(chart.series[index].name, _MAX_LABEL_CHARS)
            if line:
                yield _line(x, middle, x + swatch, middle, _stroke(index))
            else:
                yield (
                    f'<rect x="{_num(x)}" y="{_num(middle - _SWATCH / 2)}"'
                    f' width="{_num(_SWATCH)}" height="{_num(_SWATCH)}"'
                    f' fill="{_fill(chart, index)}"/>'
                )
            yield _text(x + swatch + _GAP, middle, name, anchor="start", centred=True)
            x += width + _LEGEND_SPACING
    yield "</g>"


def _grid(chart: Chart, layout: _Layout) -> Iterator[str]:
    """Grid lines and tick labels at every tick, and the unit as the axis title."""
    plot = layout.plot
    lines, labels = [], []
    for tick in layout.axis.ticks:
        at = layout.value_at(tick)
        text = format_value(tick)
        if layout.horizontal:
            lines.append(_line(at, plot.top, at, plot.bottom))
            labels.append(_text(at, plot.bottom + _GAP + 0.8 * _FONT, text))
        else:
            lines.append(_line(plot.left, at, plot.right, at))
            labels.append(_text(plot.left - _GAP, at, text, anchor="end", centred=True))
    yield f'<g stroke="{_GRID}" stroke-width="0.6">'
    yield from lines
    yield "</g>"
    yield f'<g id="{layout.frame.ident}_ticks" fill="{_TEXT}">'
    yield from labels
    yield "</g>"
    if chart.unit:
        yield _unit_title(chart.unit, layout)


def _unit_title(unit: str, layout: _Layout) -> str:
    plot = layout.plot
    if layout.horizontal:
        y = plot.bottom + 2 * _GAP + 1.8 * _FONT
        return _text((plot.left + plot.right) / 2, y, unit, fill=_TEXT)
    x, y = _PAD + 0.8 * _FONT, (plot.top + plot.bottom) / 2
    return _text(x, y, unit, rotate=-90.0, fill=_TEXT)


def _bar_rects(chart: Chart, layout: _Layout, bars: Sequence[_Bar]) -> Iterator[str]:
    yield f'<g stroke="{_EDGE}" stroke-width="0.6">'  # a thin white edge between neighbours
    for bar in bars:
        x, y, width, height = _rect(layout, bar)
        yield (
            f'<rect id="{layout.frame.ident}_bar_{bar.series}_{bar.category}" x="{_num(x)}"'
            f' y="{_num(y)}" width="{_num(width)}" height="{_num(height)}"'
            f' fill="{_fill(chart, bar.series)}"/>'
        )
    yield "</g>"


def _zero_line(layout: _Layout) -> str:
    """The baseline the bars grow from, drawn over their bases."""
    at, plot = layout.value_at(0.0), layout.plot
    style = f' stroke="{_AXIS}" stroke-width="0.8"'
    if layout.horizontal:
        return _line(at, plot.top, at, plot.bottom, style)
    return _line(plot.left, at, plot.right, at, style)


def _value_labels(chart: Chart, layout: _Layout, bars: Sequence[_Bar]) -> Iterator[str]:
    if not layout.show_values:
        return
    yield f'<g fill="{_TEXT}" font-size="{_num(layout.value_font)}">'
    if not chart.stacked:
        for bar in bars:
            yield _end_label(layout, bar, format_value(bar.end), bold=False)
        yield "</g>"
        return
    totals = chart.totals()
    longest = max(totals)
    if len(chart.series) > 1:
        for bar in bars:
            if _segment_has_room(layout, bar, longest):
                yield _segment_label(layout, bar)
    for category, total in enumerate(totals):
        offset = layout.band_start(category) + (layout.band - layout.thickness) / 2
        yield _end_label(layout, _Bar(-1, category, 0.0, total, offset), format_value(total),
                         bold=True)
    yield "</g>"


def _end_label(layout: _Layout, bar: _Bar, text: str, *, bold: bool) -> str:
    """A label just past the bar's end: beyond it for positive bars, before it for negative."""
    end = layout.value_at(bar.end)
    across = bar.offset + layout.thickness / 2
    if layout.horizontal:
        x = end - _GAP if bar.negative else end + _GAP
        anchor = "end" if bar.negative else "start"
        return _text(x, across, text, anchor=anchor, centred=True, bold=bold)
    if layout.rotate_values:
        y = end + _GAP if bar.negative else end - _GAP
        anchor = "end" if bar.negative else "start"
        return _text(across, y, text, anchor=anchor, centred=True, rotate=-90.0, bold=bold)
    y = end + _GAP + 0.75 * _LABEL_FONT if bar.negative else end - _GAP
    return _text(across, y, text, bold=bold)


def _segment_has_room(layout: _Layout, bar: _Bar, longest: float) -> bool:
    """At least 7 % of the longest bar, and the label fits inside the segment."""
    value = bar.end - bar.start
    if longest <= 0 or value / longest < _MIN_LABELLED_SHARE:
        return False
    width = _text_width(format_value(value), _SEGMENT_FONT)
    length = abs(layout.value_at(bar.end) - layout.value_at(bar.start))
    # The text runs horizontally: along a horizontal bar, across a vertical one.
    wide, high = (length, layout.thickness) if layout.horizontal else (layout.thickness, length)
    return width + 2 <= wide and high >= _SEGMENT_FONT


def _segment_label(layout: _Layout, bar: _Bar) -> str:
    along = (layout.value_at(bar.start) + layout.value_at(bar.end)) / 2
    across = bar.offset + layout.thickness / 2
    x, y = (along, across) if layout.horizontal else (across, along)
    text = format_value(bar.end - bar.start)
    colour = _colour(bar.series)
    # On a hatch, a halo in the plain colour keeps the digits readable.
    halo = colour if _hatch(bar.series) else None
    return _text(x, y, text, centred=True, size=_SEGMENT_FONT, fill=_text_colour(colour),
                 halo=halo)


def _stroke(index: int) -> str:
    """A line series' stroke: its colour, width and dash pattern (both cycle)."""
    dash = DASHES[index % len(DASHES)]
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    return (f' stroke="{_colour(index)}" stroke-width="{_num(_LINE_WIDTH)}"{dashes}'
            ' fill="none" stroke-linejoin="round" stroke-linecap="butt"')


def _lines(chart: Chart, layout: _Layout) -> Iterator[str]:
    """One path per series through its points; a lone point gets a dot (a path of one
    point draws nothing)."""
    for index, series in enumerate(chart.series):
        ys = [layout.value_at(v) for v in series.values]
        ident = f"{layout.frame.ident}_line_{index}"
        if len(ys) == 1:
            yield (f'<circle id="{ident}" cx="{_num(layout.points[0])}" cy="{_num(ys[0])}"'
                   f' r="3" fill="{_colour(index)}"/>')
            continue
        d = " ".join(f"{'M' if i == 0 else 'L'}{_num(x)},{_num(y)}"
                     for i, (x, y) in enumerate(zip(layout.points, ys, strict=True)))
        yield f'<path id="{ident}" d="{d}"{_stroke(index)}/>'


def _x_labels(chart: Chart, layout: _Layout) -> Iterator[str]:
    """The x axis of a line chart: tick marks, labels and the unit title below."""
    plot = layout.plot
    y = plot.bottom + _GAP + 0.8 * _FONT
    yield f'<g id="{layout.frame.ident}_x" fill="{_TEXT}">'
    for x, text in layout.x_labels:
        yield _line(x, plot.bottom, x, plot.bottom + _GAP, f' stroke="{_AXIS}"')
        yield _text(x, y + _GAP / 2, text)
    yield "</g>"
    if chart.x_unit:
        middle = (plot.left + plot.right) / 2
        yield _text(middle, plot.bottom + 2 * _GAP + 1.9 * _FONT, chart.x_unit, fill=_TEXT)


def _category_labels(layout: _Layout) -> Iterator[str]:
    plot = layout.plot
    yield f'<g fill="{_TEXT}">'
    for index, name in enumerate(layout.categories):
        middle = layout.band_start(index) + layout.band / 2
        if layout.horizontal:
            x = plot.left - layout.low_room - 2 * _GAP
            yield _text(x, middle, name, anchor="end", centred=True)
        elif layout.rotate_categories:
            y = plot.bottom + layout.low_room + _GAP + 0.75 * _FONT
            yield _text(middle, y, name, anchor="end", rotate=-_ROTATION)
        else:
            y = plot.bottom + layout.low_room + _GAP + 0.8 * _FONT
            yield _text(middle, y, name)
    yield "</g>"


# --- SVG primitives -----------------------------------------------------------------------


def _text(
    x: float,
    y: float,
    content: str,
    *,
    anchor: str = "middle",
    centred: bool = False,
    rotate: float = 0.0,
    size: float | None = None,
    bold: bool = False,
    fill: str | None = None,
    halo: str | None = None,
) -> str:
    """A ``<text>`` at (x, y); ``centred`` puts y at mid-height rather than the baseline."""
    attributes = [f'x="{_num(x)}"', f'y="{_num(y)}"']
    if centred:
        attributes.append('dy="0.35em"')
    if anchor != "start":
        attributes.append(f'text-anchor="{anchor}"')
    if rotate:
        attributes.append(f'transform="rotate({_num(rotate)} {_num(x)} {_num(y)})"')
    if size is not None:
        attributes.append(f'font-size="{_num(size)}"')
    if bold:
        attributes.append('font-weight="bold"')
    if fill is not None:
        attributes.append(f'fill="{fill}"')
    if halo is not None:
        attributes.append(f'stroke="{halo}" stroke-width="3" paint-order="stroke"')
    return f"<text {' '.join(attributes)}>{html.escape(content)}</text>"


def _line(x1: float, y1: float, x2: float, y2: float, style: str = "") -> str:
    return f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}"{style}/>'


def _num(value: float) -> str:
    """At most two decimals and no trailing zeros: keeps the SVG small and stable."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _text_colour(background: str) -> str:
    """Black or white, whichever contrasts more with ``background`` (WCAG luminance)."""

    def channel(hex_pair: str) -> float:
        c = int(hex_pair, 16) / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(background[i : i + 2]) for i in (1, 3, 5))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if (luminance + 0.05) / 0.05 > 1.05 / (luminance + 0.05) else "#ffffff"
