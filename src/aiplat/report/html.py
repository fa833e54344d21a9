"""Render a :class:`~aiplat.report.document.Document` as one self-contained HTML file.

The file is the handover artefact: it is mailed, attached to tickets and opened years later
on machines without network access. So everything is inline — CSS, charts as SVG — and it
references no URL at all: no web font, no CDN, no script. Light and dark colour schemes
follow the reader's setting; print styles avoid splitting figures and tables.

The page comes from a Jinja2 template shipped as package data
(``aiplat/report/templates/report.html.j2``), rendered with autoescaping on and undefined
variables as errors. Document text is therefore always escaped; the only markup passed
through is the SVG from :func:`aiplat.report.charts.render_svg`, which escapes the text it
draws itself. Each chart is followed by its data in a collapsed table, for screen readers
and for copying numbers.
"""

from __future__ import annotations

import functools

import jinja2
from markupsafe import Markup

from aiplat import __version__
from aiplat.report.charts import render_svg
from aiplat.report.document import Document

TEMPLATE = "report.html.j2"


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("aiplat.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_html(doc: Document) -> str:
    """Return the document as a complete HTML5 page (deterministic: same doc, same text)."""
    # render_svg escapes the chart text it writes, so its output is safe to mark as markup.
    svgs = {chart.id: Markup(render_svg(chart)) for chart in doc.all_charts()}
    template = _environment().get_template(TEMPLATE)
    return template.render(doc=doc, svgs=svgs, version=__version__)
