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
    Code,
    Document,
    KeyFigure,
    Link,
    Rich,
    Section,
    Series,
    Source,
    Table,
    format_value,
)
from aiplat.report.grouping import group_repeats
from aiplat.report.html import render_html
from aiplat.report.markdown import render_markdown

__all__ = [
    "PALETTE",
    "Chart",
    "ChartKind",
    "Code",
    "Document",
    "KeyFigure",
    "Link",
    "Rich",
    "Section",
    "Series",
    "Source",
    "Table",
    "format_value",
    "group_repeats",
    "render_html",
    "render_markdown",
    "render_svg",
]
