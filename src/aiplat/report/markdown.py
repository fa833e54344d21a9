"""Render a :class:`~aiplat.report.document.Document` as GitHub-flavoured Markdown.

Markdown is the format that travels: a pull request, a ticket, a wiki page, a terminal.
It has no images worth inlining, so each chart appears as the table of its data (the same
numbers the bar labels show, via :meth:`Chart.as_table`).

Text in the document is plain text. The renderer escapes only what would change the
structure or inject markup: ``|`` and ``\\`` in table cells (a raw pipe would split the
cell), ``<`` everywhere (so a value like ``<script>`` stays text in renderers that allow
raw HTML), a ``#`` or ``>`` opening a paragraph's line, and line breaks in headings and
cells (they would end the heading or the row).
Emphasis characters are left alone, so authored text reads naturally in the raw file.
"""

from __future__ import annotations

from aiplat.report.document import Document, KeyFigure, Section, Table


def render_markdown(doc: Document) -> str:
    """Return the whole document as Markdown, ending with exactly one newline."""
    blocks: list[str] = [f"# {_line(doc.title)}"]
    if doc.subtitle:
        blocks.append(f"_{_line(doc.subtitle)}_")
    if doc.summary:
        blocks.append("## Summary")
        blocks.append(_summary(doc.summary))
    for section in doc.sections:
        blocks.extend(_section(section))
    return "\n\n".join(blocks) + "\n"


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
    for table in section.tables:
        if table.title:
            blocks.append(f"**{_line(table.title)}**")
        blocks.append(_table(table))
    for chart in section.charts:
        unit = f" ({_line(chart.unit)})" if chart.unit else ""
        blocks.append(f"**{_line(chart.title)}**{unit}")
        blocks.append(_table(chart.as_table()))
    if section.notes:
        blocks.append("\n".join(f"> **Note:** {_line(n)}" for n in section.notes))
    return blocks


def _table(table: Table) -> str:
    def row(cells: list[str]) -> str:
        return "| " + " | ".join(_cell(c) for c in cells) + " |"

    rule = "| " + " | ".join("---:" if a == "right" else "---" for a in table.alignment) + " |"
    return "\n".join([row(table.columns), rule, *(row(r) for r in table.rows)])


def _text(text: str) -> str:
    """A paragraph: kept as written (line breaks included), only raw HTML neutralised.

    A line starting with ``#`` or ``>`` would become a heading or a quote ("# of GPUs ..."),
    so that character is escaped.
    """
    lines = text.strip().replace("<", "&lt;").splitlines()
    return "\n".join("\\" + ln.lstrip() if ln.lstrip()[:1] in ("#", ">") else ln for ln in lines)


def _line(text: str) -> str:
    """Text that must stay on one line (a heading, a note, a caption)."""
    return " ".join(text.split()).replace("<", "&lt;")


def _cell(text: str) -> str:
    # Backslashes first, so an escaped pipe cannot be un-escaped by a preceding backslash.
    return _line(text).replace("\\", "\\\\").replace("|", "\\|")
