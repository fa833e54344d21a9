"""Reports: a format-neutral document model and its renderers.

Producers (the plan, acceptance reports, runbooks) build a :class:`Document`; this package
turns it into GitHub-flavoured Markdown (:func:`render_markdown`) or one self-contained HTML
file with inline SVG charts (:func:`render_html`). It knows nothing about sizing or any other
subject, so every report looks and behaves the same.
"""

from aiplat.report.charts import PALETTE, render_svg
from aiplat.report.document import (
    Chart,
    ChartKind,
    Document,
    KeyFigure,
    Section,
    Series,
    Table,
    format_value,
)
from aiplat.report.html import render_html
from aiplat.report.markdown import render_markdown

__all__ = [
    "PALETTE",
    "Chart",
    "ChartKind",
    "Document",
    "KeyFigure",
    "Section",
    "Series",
    "Table",
    "format_value",
    "render_html",
    "render_markdown",
    "render_svg",
]
