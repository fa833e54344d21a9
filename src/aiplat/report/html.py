"""Render a :class:`~aiplat.report.document.Document` as one self-contained HTML file.

The file is the handover artefact: it is mailed, attached to tickets and opened years later
on machines without network access. So everything is inline — CSS, charts as SVG — and it
references no URL at all: no web font, no CDN, no script; the only links are the document's
own :class:`~aiplat.report.document.Link`\\ s, relative paths to files next to it. Light and
dark colour schemes follow the reader's setting; print styles avoid splitting figures and
tables.

The page comes from a Jinja2 template shipped as package data
(``aiplat/report/templates/report.html.j2``), rendered with autoescaping on and undefined
variables as errors. Document text is therefore always escaped; the markup passed through
is the SVG from :func:`aiplat.report.charts.render_svg`, which escapes the text it draws
itself, the figures' SVG (drawn by :mod:`aiplat.report.drawings`, checked by
:class:`~aiplat.report.document.Figure`), and the inline markup built here (links, code,
status badges) from escaped text.
Each chart is followed by its data in a collapsed table, for screen readers and for copying
numbers.

Narrow screens: tables become one card per row (each cell labelled with its column through
``data-label``) and charts switch to their narrow layout (see :mod:`aiplat.report.charts`),
both by CSS media queries, so a phone needs no sideways scrolling and chart text stays
legible.
"""

from __future__ import annotations

import functools

import jinja2
from markupsafe import Markup, escape

from aiplat import __version__
from aiplat.report.charts import render_svg
from aiplat.report.document import Code, Document, Link, Rich, plain, printable
from aiplat.report.status import Status, status_of

TEMPLATE = "report.html.j2"


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("aiplat.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(rich=rich, cell=cell, note=note)
    env.globals.update(cell_class=cell_class)
    return env


def render_html(doc: Document, *, expanded: bool = False) -> str:
    """Return the document as a complete HTML5 page (deterministic: same doc, same text).

    ``expanded`` opens the collapsed sections (:attr:`Section.collapsed`): for printing,
    where a closed ``<details>`` would print as its title only."""
    doc = printable(doc)
    # render_svg escapes the chart text it writes, so its output is safe to mark as markup.
    svgs = {chart.id: Markup(render_svg(chart)) for chart in doc.all_charts()}
    # A figure's SVG was drawn with its text escaped and checked by Figure's validator
    # (no script, handler or outside reference): shown as it is.
    figures = {f.id: Markup(f.svg) for f in doc.all_figures()}
    template = _environment().get_template(TEMPLATE)
    return template.render(doc=doc, svgs=svgs, figures=figures, version=__version__,
                           expanded=expanded)


def rich(value: Rich) -> Markup:
    """Text, links and inline code as escaped HTML."""
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, Link):
        return Markup('<a href="{}">{}</a>').format(value.href, value.text)
    if isinstance(value, Code):
        return Markup("<code>{}</code>").format(value.text)
    return Markup("").join(rich(v) for v in value)


def cell(value: Rich) -> Markup:
    """A table cell: a status word becomes a badge, a command a wrapping code block."""
    if isinstance(value, str):
        status = status_of(value)
        return badge(status) if status else escape(value)
    if isinstance(value, Code):
        return Markup('<code class="cmd">{}</code>').format(value.text)
    return rich(value)


LONG_TOKEN = 18
"""Characters from which a word (a path, a jsonpath, a flag) may be broken anywhere."""


def cell_class(value: Rich, align: str) -> Markup:
    """The ``class`` attribute of a cell: ``r`` when right-aligned, ``long`` when it holds
    a word that could push the table past the page (it may then break anywhere). Short
    words never break, so "10" in a narrow column stays whole."""
    classes = ["r"] if align == "right" else []
    if isinstance(value, Code) or any(len(w) >= LONG_TOKEN for w in plain(value).split()):
        classes.append("long")
    return Markup(' class="{}"').format(" ".join(classes)) if classes else Markup("")


def note(value: Rich) -> Markup:
    """A note: one that opens with a status word ("warning: ...") gets its badge."""
    status = status_of(value, prefix=True) if isinstance(value, str) else None
    if status is None:
        return rich(value)
    return badge(status) + Markup(" ") + escape(status.rest)


def badge(status: Status) -> Markup:
    """The word with a coloured glyph before it: colour, shape and text say the same thing."""
    return Markup(
        '<span class="st st-{}"><span class="st-g" aria-hidden="true">{}</span>{}</span>'
    ).format(status.kind, status.glyph, status.word)
