"""Render a :class:`~aiplat.report.document.Document` as GitHub-flavoured Markdown.

Markdown is the format that travels: a pull request, a ticket, a wiki page, a terminal.
It has no images worth inlining, so each chart appears as the table of its data (the same
numbers the bar labels show, via :meth:`Chart.as_table`). A figure (a drawing: racks, the
fabric) has no table that replaces it, so it is an image, ``![title](figures/<id>.svg)``,
its SVG a file beside the report (:func:`figure_files`), followed by its facts as a table.
Why a file and not inline: GitHub's and GitLab's sanitizers strip inline ``<svg>`` and do
not show ``data:`` images, but show a relative ``.svg`` from the same repository or folder,
and a file opens in any browser or viewer.

Text in the document is plain text. The renderer escapes only what would change the
structure or inject markup: ``|`` and ``\\`` in table cells (a raw pipe would split the
cell), ``<`` everywhere (so a value like ``<script>`` stays text in renderers that allow
raw HTML), a ``#``, ``>`` or code fence opening a paragraph's line, and line breaks in headings and
cells (they would end the heading or the row).
Emphasis characters are left alone, so authored text reads naturally in the raw file.

Links become ``[text](href)`` (the href is a checked relative path, see
:func:`~aiplat.report.document.check_relative_href`); code becomes a code span (in cells,
with only ``|`` escaped: GitHub unescapes ``\\|`` inside a cell's code span) or, for
:attr:`Section.code`, a fenced block. Status words stay plain words.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from aiplat import __version__
from aiplat.report.document import (
    Code,
    Document,
    Figure,
    KeyFigure,
    Link,
    Rich,
    Section,
    Table,
    printable,
)

FIGURES = "figures"
"""The folder beside a Markdown report that holds its figures' SVG files."""


def figure_path(figure: Figure) -> str:
    """Where a figure's SVG lies, relative to the report: ``figures/<id>.svg``."""
    return f"{FIGURES}/{figure.id}.svg"


def figure_files(doc: Document) -> dict[str, str]:
    """The SVG file of every figure, by its path relative to the report: write them beside
    the Markdown, which links them as images."""
    return {figure_path(f): f.svg + "\n" for f in printable(doc).all_figures()}


def render_markdown(doc: Document) -> str:
    """Return the whole document as Markdown, ending with exactly one newline."""
    doc = printable(doc)
    blocks: list[str] = [f"# {_line(doc.title)}"]
    if doc.subtitle:
        blocks.append(f"_{_line(doc.subtitle)}_")
    if doc.generated or doc.source:
        blocks.append(_provenance(doc))
    if doc.summary:
        blocks.append("## Summary")
        blocks.append(_summary(doc.summary))
    for section in doc.sections:
        blocks.extend(_section(section))
    return "\n\n".join(blocks) + "\n"


def _provenance(doc: Document) -> str:
    parts = [doc.generated.isoformat()] if doc.generated else []
    parts.append(f"aiplat {__version__}")
    if doc.source:
        parts.append(f"spec {_line(doc.source.path)} `{doc.source.digest}`")
    return "Generated " + " · ".join(parts)


def _summary(figures: list[KeyFigure]) -> str:
    return _table(
        Table(
            columns=["Figure", "Value", "Detail"],
            rows=[[f.label, f.value, f.detail] for f in figures],
            align=["left", "right", "left"],
        )
    )


def _section(section: Section) -> list[str]:
    blocks = [f"## {_line(section.title)}"]
    blocks.extend(_text(p) for p in section.paragraphs)
    blocks.extend(_fenced(c.text) for c in section.code)
    for table in section.tables:
        if table.title:
            blocks.append(f"**{_line(table.title)}**")
        blocks.append(_table(table))
    for chart in section.charts:
        unit = f" ({_line(chart.unit)})" if chart.unit else ""
        blocks.append(f"**{_line(chart.title)}**{unit}")
        blocks.append(_table(chart.as_table()))
    for figure in section.figures:
        blocks.append(f"**{_line(figure.title)}**")
        alt = _line(figure.title).replace("[", "\\[").replace("]", "\\]")
        blocks.append(f"![{alt}]({figure_path(figure)})")
        if figure.caption:
            blocks.append(_text(figure.caption))
        if figure.table is not None:
            blocks.append(_table(figure.table))
    if section.notes:
        blocks.append("\n".join(f"> **Note:** {_inline(n, _flat).strip()}" for n in section.notes))
    return blocks


def _table(table: Table) -> str:
    def row(cells: list[Rich] | list[str]) -> str:
        return "| " + " | ".join(_cell(c) for c in cells) + " |"

    rule = "| " + " | ".join("---:" if a == "right" else "---" for a in table.alignment) + " |"
    return "\n".join([row(table.columns), rule, *(row(r) for r in table.rows)])


def _text(value: Rich) -> str:
    """A paragraph: kept as written (line breaks included), only raw HTML neutralised.

    A line starting with ``#`` or ``>`` would become a heading or a quote ("# of GPUs ..."),
    and one starting with a fence (three backticks or tildes) would open a code block that
    swallows what follows (text from a file name can hold one), so that character is escaped.
    """
    text = _inline(value, lambda t: t.replace("<", "&lt;"))
    lines = text.strip().splitlines()
    return "\n".join("\\" + ln.lstrip() if ln.lstrip()[:1] in ("#", ">")
                     or ln.lstrip()[:3] in ("```", "~~~") else ln for ln in lines)


def _line(text: str) -> str:
    """Text that must stay on one line (a heading, a note, a caption)."""
    return " ".join(text.split()).replace("<", "&lt;")


def _flat(text: str) -> str:
    """A piece of one-line text: like :func:`_line`, but keeping a space at either end
    (the text may continue with a link or code)."""
    return re.sub(r"\s+", " ", text).replace("<", "&lt;")


def _cell(value: Rich) -> str:
    return _inline(value, _cell_text, code=_cell_code).strip()


def _cell_text(text: str) -> str:
    # Backslashes first, so an escaped pipe cannot be un-escaped by a preceding backslash.
    return _flat(text).replace("\\", "\\\\").replace("|", "\\|")


def _cell_code(text: str) -> str:
    # A code span shows backslashes as they are; only the pipe needs escaping in a cell.
    # Line breaks cannot live in a row: each line is a span, joined by <br>.
    return "<br>".join(_span(line).replace("|", "\\|") for line in text.splitlines() if line)


def _inline(value: Rich, text: Callable[[str], str],
            code: Callable[[str], str] | None = None) -> str:
    """Render text, links and code with ``text`` escaping the plain parts."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Link):
        label = text(value.text).replace("[", "\\[").replace("]", "\\]")
        # Parentheses would end (or unbalance) the link destination.
        href = value.href.replace("(", "%28").replace(")", "%29").replace("<", "%3C")
        return f"[{label}]({href})"
    if isinstance(value, Code):
        return code(value.text) if code else _span(" ".join(value.text.split()))
    return "".join(_inline(v, text, code) for v in value)


def _span(text: str) -> str:
    """A code span: fenced by one more backtick than the longest run inside."""
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _fenced(text: str) -> str:
    fence = "`" * max(3, max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    return f"{fence}sh\n{text.rstrip()}\n{fence}"
