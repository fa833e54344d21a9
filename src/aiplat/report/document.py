"""The document model every aiplat report is built from.

A report (the plan today; acceptance reports and runbooks later) is first built as plain
data — a :class:`Document` of sections holding paragraphs, tables, charts, figures (drawings
as checked SVG) and notes — and only
then rendered, to Markdown (:mod:`aiplat.report.markdown`) or to one self-contained HTML file
(:mod:`aiplat.report.html`). Keeping the content format-neutral means the layer that knows
the subject (sizing, acceptance) never writes markup, every renderer shows the same facts,
and tests can assert on the data rather than on HTML.

All text is plain text, never markup: renderers escape it for their format. Numbers arrive
already formatted as strings in tables and key figures (the producer knows the unit and the
precision worth showing); charts carry floats, shown with :func:`format_value`.

Beyond plain strings, a table cell, a paragraph or a note may hold a :class:`Link` (a
relative path to another file of the same output tree: the page still references no URL),
a :class:`Code` span (a command, shown in monospace and never reflowed into prose) or a list
mixing them with text. Statuses (``pass``, ``error``, ``warning`` ...) stay plain words: the
renderers recognise them (:mod:`aiplat.report.status`).

A document may say when it was made and from what (:attr:`Document.generated`,
:attr:`Document.source`): the date comes in from the caller (the model stays pure) and the
source names the spec by path and a sha256 prefix of its text, so a printed report can be
matched to the spec it came from.

The models are frozen pydantic models and validate what would otherwise fail late or render
wrong: a series whose length differs from the categories, a negative value in a stacked
chart (stacking cannot show it), a row narrower than its header, and ids that would collide
once they become HTML anchors.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import posixpath
import re
from datetime import date
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from aiplat.text import shown_all, shown_lines

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$", max_length=64)]
"""Lower-case letters, digits and single hyphens: safe as an HTML id and a URL fragment.

No underscore on purpose: :func:`aiplat.report.charts.render_svg` namespaces the ids inside a
chart as ``<chart id>_<inner id>``, which therefore can never collide with a slug.
"""

ChartKind = Literal["bar", "stacked-bar", "hbar", "stacked-hbar", "line"]
Align = Literal["left", "right"]

STACKED_KINDS: frozenset[str] = frozenset({"stacked-bar", "stacked-hbar"})
HORIZONTAL_KINDS: frozenset[str] = frozenset({"hbar", "stacked-hbar"})


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def check_relative_href(href: str) -> str:
    """``href`` if it is a relative reference inside the output tree, else a ValueError.

    Reports travel as a folder (``out/``) opened from disk or attached to a ticket, so a
    link may only point at a sibling file: no scheme (``https:``, ``javascript:``,
    ``file:``), no host, no absolute path and no ``..`` that climbs out of the folder.
    A fragment (``runbook/runbook.html#node-patch`` or ``#findings``) is fine.
    """
    if not href or href != href.strip() or re.search(r"[\x00-\x20\x7f\\]", href):
        raise ValueError(f"link {href!r}: empty, or has spaces, control characters or a "
                         "backslash; give a relative path like 'runbook/runbook.html'")
    # RFC 3986 section 3.1: a scheme is a letter, then letters, digits, "+", "-", "."
    # (parsed here rather than with urllib: the report package imports no network module).
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", href) or href.startswith("//"):
        raise ValueError(f"link {href!r}: has a scheme or host; reports link only to files "
                         "next to them (a relative path like 'matrix/matrix.html')")
    path = re.split(r"[?#]", href, maxsplit=1)[0]
    if path.startswith("/"):
        raise ValueError(f"link {href!r}: absolute path; make it relative to the report")
    if path and posixpath.normpath(path).split("/")[0] == "..":
        raise ValueError(f"link {href!r}: '..' leaves the report's folder; link to a file "
                         "inside it")
    return href


class Link(_Model):
    """A link to another file of the same output tree, e.g. the runbook next to the plan."""

    text: str = Field(min_length=1)
    href: str

    @model_validator(mode="after")
    def _check_href(self) -> Link:
        check_relative_href(self.href)
        return self


class Code(_Model):
    """A command or other literal text, shown in monospace with its spaces and line breaks.

    In a table cell or a paragraph it is inline code; in :attr:`Section.code` a block.
    """

    text: str = Field(min_length=1)


Inline = str | Link | Code
"""One piece of running text."""

Rich = str | Link | Code | list[Inline]
"""What a cell, paragraph or note holds: text, a link, code, or a sequence of them."""


def plain(value: Rich) -> str:
    """The text a reader sees, without markup: for sorting, grouping and labels."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(plain(v) for v in value)
    return value.text


class Source(_Model):
    """What a document was generated from: a spec's path and a digest of its text."""

    path: str = Field(min_length=1)
    digest: str = Field(pattern=r"^sha256:[0-9a-f]{12,64}$")

    @classmethod
    def of(cls, path: str, text: str) -> Source:
        """The source for a spec read from ``path`` with content ``text``.

        The digest is the first 12 hex digits of the sha256 of the UTF-8 text: enough to
        tell versions of a spec apart on paper, and ``sha256sum platform.yaml`` shows it.
        """
        return cls(path=path, digest=f"sha256:{spec_digest(text)}")


def spec_digest(text: str, length: int = 12) -> str:
    """The first ``length`` hex digits of the sha256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


class KeyFigure(_Model):
    """One headline number shown in the summary, e.g. ``GPUs needed: 64 (8 nodes)``."""

    label: str = Field(min_length=1)
    value: str = Field(min_length=1, description="already formatted, with its unit")
    detail: str = Field(default="", description="one short line of context")


class Table(_Model):
    """A table of already formatted cells; ``align`` defaults to left for every column."""

    title: str = ""
    columns: list[str] = Field(min_length=1)
    rows: list[list[Rich]] = Field(default_factory=list)
    align: list[Align] | None = None

    @model_validator(mode="after")
    def _check_shape(self) -> Table:
        width = len(self.columns)
        for index, row in enumerate(self.rows):
            if len(row) != width:
                raise ValueError(
                    f"table {self.title!r}: row {index} has {len(row)} cells but there are "
                    f"{width} columns {self.columns}; pad it with '' or fix the columns"
                )
        if self.align is not None and len(self.align) != width:
            raise ValueError(
                f"table {self.title!r}: align has {len(self.align)} entries for {width} columns;"
                " give one 'left'/'right' per column or leave align out"
            )
        return self

    @property
    def alignment(self) -> list[Align]:
        """The alignment of each column, with the default applied."""
        return list(self.align) if self.align is not None else ["left"] * len(self.columns)


class Series(_Model):
    """One named list of values, one per category of its chart."""

    name: str = Field(min_length=1)
    values: list[float]

    @model_validator(mode="after")
    def _check_finite(self) -> Series:
        bad = [v for v in self.values if not math.isfinite(v)]
        if bad:
            raise ValueError(f"series {self.name!r} has non-finite values {bad}; use numbers")
        return self


class Chart(_Model):
    """A bar chart (grouped or stacked, vertical or horizontal) or a line chart.

    ``unit`` labels the value axis (e.g. ``GiB``); categories are the bars' labels in order
    (top to bottom for horizontal kinds). A ``line`` chart draws one line per series through
    its points, left to right; ``x`` optionally places the points on a numeric axis (e.g. a
    time in hours, labelled ``x_unit``) instead of evenly, and the categories then label the
    points in the data table.
    """

    id: Slug
    title: str = Field(min_length=1)
    unit: str = ""
    categories: list[str] = Field(min_length=1)
    series: list[Series] = Field(min_length=1)
    kind: ChartKind = "bar"
    x: list[float] | None = None
    x_unit: str = ""

    @model_validator(mode="after")
    def _check_data(self) -> Chart:
        if len(set(self.categories)) != len(self.categories):
            raise ValueError(f"chart {self.id!r}: categories repeat: {self.categories}")
        names = [s.name for s in self.series]
        if len(set(names)) != len(names):
            raise ValueError(f"chart {self.id!r}: series names repeat: {names}")
        for s in self.series:
            if len(s.values) != len(self.categories):
                raise ValueError(
                    f"chart {self.id!r}: series {s.name!r} has {len(s.values)} values for "
                    f"{len(self.categories)} categories; give exactly one value per category"
                )
            if self.stacked and any(v < 0 for v in s.values):
                raise ValueError(
                    f"chart {self.id!r}: series {s.name!r} has negative values, which a "
                    f"{self.kind!r} chart cannot show; use kind 'bar' or 'hbar'"
                )
        self._check_x()
        return self

    def _check_x(self) -> None:
        if self.x is None:
            if self.x_unit:
                raise ValueError(f"chart {self.id!r}: x_unit without x; give x or drop it")
            return
        if self.kind != "line":
            raise ValueError(f"chart {self.id!r}: x positions need kind 'line'")
        if len(self.x) != len(self.categories):
            raise ValueError(
                f"chart {self.id!r}: {len(self.x)} x positions for {len(self.categories)} "
                "categories; give one per category"
            )
        if not all(math.isfinite(v) for v in self.x) or any(
            b <= a for a, b in itertools.pairwise(self.x)
        ):
            raise ValueError(f"chart {self.id!r}: x must be finite and strictly increasing")

    @property
    def stacked(self) -> bool:
        return self.kind in STACKED_KINDS

    @property
    def horizontal(self) -> bool:
        return self.kind in HORIZONTAL_KINDS

    def totals(self) -> list[float]:
        """The sum over series for each category (the bar's length when stacked)."""
        return [math.fsum(column) for column in zip(*(s.values for s in self.series), strict=True)]

    def as_table(self) -> Table:
        """The chart's data as a table: what Markdown shows, and HTML's accessible fallback."""
        unit = f" ({self.unit})" if self.unit else ""
        columns = ["", *(f"{s.name}{unit}" for s in self.series)]
        rows = [
            [category, *(format_value(s.values[i]) for s in self.series)]
            for i, category in enumerate(self.categories)
        ]
        if self.stacked and len(self.series) > 1:
            columns.append(f"Total{unit}")
            for row, total in zip(rows, self.totals(), strict=True):
                row.append(format_value(total))
        return Table(
            title=self.title,
            columns=columns,
            rows=rows,
            align=["left", *(["right"] * (len(columns) - 1))],
        )


SVG_FORBIDDEN = re.compile(
    r"<script|<foreignObject|<image|<use\b|\shref=|xlink:|url\(\s*['\"]?[^#'\"\s]|"
    r"\son[a-z]+\s*=|<!DOCTYPE|<!ENTITY|<\?xml-stylesheet|@import", re.IGNORECASE)
"""What a figure's SVG may not hold: scripts, event handlers, embedded documents and any
reference outside itself (the report opens offline and references no URL)."""


class Figure(_Model):
    """A drawing made for its subject (racks, a fabric, a timeline), as SVG text.

    The SVG comes from a drawing function of :mod:`aiplat.report.drawings` that escapes
    every text it draws and namespaces its ids with the figure's id; it is shown as it is
    in HTML and written as a file beside a Markdown report. ``table`` holds the drawing's
    facts (the accessible fallback, and what Markdown shows under the image); ``caption``
    says how to read it. The validator refuses SVG that could run code or load anything.
    """

    id: Slug
    title: str = Field(min_length=1)
    svg: str = Field(min_length=1)
    caption: str = ""
    table: Table | None = None

    @model_validator(mode="after")
    def _check_svg(self) -> Figure:
        if not self.svg.startswith("<svg ") or not self.svg.rstrip().endswith("</svg>"):
            raise ValueError(f"figure {self.id!r}: not one <svg> element")
        # Only markup can run or load something: text between tags is escaped, and may
        # say "onload=" (a name from the spec) without harm.
        bad = next((m for tag in re.findall(r"<[^>]*>", self.svg)
                    if (m := SVG_FORBIDDEN.search(tag))), None)
        if bad:
            raise ValueError(f"figure {self.id!r}: the SVG holds {bad.group(0)!r}; a "
                             "figure draws itself and references nothing outside it")
        return self


class Section(_Model):
    """A titled part of the report; its ``id`` is the anchor the table of contents links to."""

    id: Slug
    title: str = Field(min_length=1)
    paragraphs: list[Rich] = Field(default_factory=list)
    code: list[Code] = Field(default_factory=list, description="blocks, after the paragraphs")
    collapsed: bool = Field(default=False, description="HTML shows the body folded under its "
                            "title until opened (a long report stays short on a phone); "
                            "Markdown and print show it whole")
    tables: list[Table] = Field(default_factory=list)
    charts: list[Chart] = Field(default_factory=list)
    figures: list[Figure] = Field(default_factory=list, description="drawings, after charts")
    notes: list[Rich] = Field(default_factory=list)


class Document(_Model):
    """A whole report: title, optional subtitle, headline figures, then sections in order.

    ``generated`` (the date it was made) and ``source`` (the spec) are shown under the title
    and in the footer when given; the renderers add the aiplat version themselves.
    """

    title: str = Field(min_length=1)
    subtitle: str = ""
    generated: date | None = None
    source: Source | None = None
    summary: list[KeyFigure] = Field(default_factory=list)
    sections: list[Section] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_ids(self) -> Document:
        # Section, chart and figure ids share one HTML document: unique together.
        seen: set[str] = set()
        for section in self.sections:
            for ident in (section.id, *(c.id for c in section.charts),
                          *(f.id for f in section.figures)):
                if ident in seen:
                    raise ValueError(
                        f"id {ident!r} is used twice (section, chart and figure ids become HTML "
                        "anchors and must be unique in a document); rename one"
                    )
                seen.add(ident)
        return self

    def all_charts(self) -> list[Chart]:
        """Every chart of the document, in reading order."""
        return [chart for section in self.sections for chart in section.charts]

    def all_figures(self) -> list[Figure]:
        """Every figure (drawing) of the document, in reading order."""
        return [figure for section in self.sections for figure in section.figures]


def format_value(value: float) -> str:
    """Format a chart value for labels and data tables, the same way everywhere.

    Whole numbers get thousands separators; others keep three significant digits, which is
    what a bar label can usefully show.

    >>> format_value(12800), format_value(1234.5), format_value(80.25), format_value(0.125)
    ('12,800', '1,234', '80.2', '0.125')
    """
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def printable(doc: Document) -> Document:
    """``doc`` with every text shown terminal-safe line by line (``aiplat.text.shown``): a
    record's, a spec's or a peer's text may hold an escape sequence or a bidi override, which
    a report read with ``cat`` or copied from a browser would replay. Newlines stay."""
    return Document.model_validate(shown_all(doc.model_dump(), shown_lines))
