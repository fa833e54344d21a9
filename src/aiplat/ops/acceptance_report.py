"""The acceptance record as a report (pure: a :class:`Record` in, a ``Document`` out).

Rendered by :mod:`aiplat.report` to Markdown or one self-contained HTML file. It lives in
``aiplat.ops`` rather than ``aiplat.report`` because the layers contract puts ``ops`` above
``report``: the report package may not import the record's types, while ops may build a
document (as the runbook does). Sections: summary per suite, the matrix entry the node
matched, the environment fingerprint, each suite's criteria with their evidence, the
measurements (with a chart of medians) and the notes (e.g. device nodes made for the run).
"""

from __future__ import annotations

from collections.abc import Mapping

from aiplat.ops.acceptance import SUITES, Record, RecordDiff
from aiplat.ops.matrix import MatrixCheck
from aiplat.report.document import (
    Chart,
    Document,
    KeyFigure,
    Link,
    Rich,
    Section,
    Series,
    Table,
)


def acceptance_document(rec: Record) -> Document:
    counts = rec.counts()
    summary = [
        KeyFigure(label="acceptance", value=rec.status.upper(),
                  detail=f"{rec.platform} / pool {rec.pool}"),
        KeyFigure(label="criteria", value=f"{counts['pass']} pass, {counts['fail']} fail",
                  detail=f"{counts['warn']} warn, {counts['skip']} skipped"),
        KeyFigure(label="matrix entry", value=str(rec.matrix.get("matched") or "none"),
                  detail="" if rec.matrix.get("matched")
                  else f"closest: {rec.matrix.get('closest')}"),
        KeyFigure(label="runs", value=str(rec.runs), detail=f"{rec.seconds:.1f} s in total"),
    ]
    per_suite = Table(
        title="Per suite", columns=["suite", "pass", "fail", "warn", "skip"],
        rows=[[s, *(str(sum(1 for c in rec.criteria if c.suite == s and c.status == st))
                    for st in ("pass", "fail", "warn", "skip"))]
              for s in SUITES if s in rec.suites],
        align=["left", "right", "right", "right", "right"])
    sections = [Section(
        id="overview", title="Criteria overview",
        paragraphs=[f"Started {rec.started_at}, finished {rec.finished_at}; suites "
                    f"{', '.join(rec.suites)}; spec {rec.spec_file}."],
        tables=[per_suite,
                Table(title="Criteria", columns=["criterion", "status", "observed"],
                      rows=[[c.id, c.status, c.observed] for c in rec.criteria])],
        notes=rec.notes)]
    entry = rec.matrix.get("entry") or {}
    observed = rec.matrix.get("observed") or {}
    keys = [k for k in entry if k != "name"] + [k for k in observed if k not in entry]
    sections.append(Section(
        id="matrix", title="Version matrix entry",
        paragraphs=[f"Matched entry: {rec.matrix.get('matched') or 'none'}."],
        tables=[Table(columns=["component", "approved", "observed on the node"],
                      rows=[[k, str(entry.get(k, "–")), str(observed.get(k) or "–")]
                            for k in keys])] if keys else [],
        notes=[f"{f['severity']}: {f['subject']}: {f['message']}"
               for f in rec.matrix.get("facts", [])]))
    sections.append(Section(
        id="environment", title="Environment fingerprint",
        tables=[Table(columns=["key", "value"],
                      rows=[[k, str(v)] for k, v in rec.fingerprint.items()])]))
    for suite in SUITES:
        crit = [c for c in rec.criteria if c.suite == suite]
        if not crit:
            continue
        tables = [Table(title="Criteria", columns=["criterion", "status", "expected", "observed"],
                        rows=[[c.title, c.status, c.expected, c.observed] for c in crit])]
        for c in crit:
            if c.evidence:
                tables.append(Table(title=f"Evidence: {c.id}", columns=["evidence"],
                                    rows=[[e] for e in c.evidence]))
        sections.append(Section(id=f"suite-{suite}", title=suite.capitalize(), tables=tables))
    if rec.measurements:
        names = list(rec.measurements)
        sections.append(Section(
            id="measurements", title="Measurements",
            tables=[Table(columns=["metric", "unit", "median", "CV", "samples", "method"],
                          rows=[[n, m.unit, f"{m.median:,.1f}", f"{m.cv:.1%}",
                                 ", ".join(f"{s:,.1f}" for s in m.samples), m.method]
                                for n, m in rec.measurements.items()])],
            charts=[Chart(id="cv-chart", title="Coefficient of variation per metric",
                          unit="%", kind="hbar", categories=names,
                          series=[Series(name="CV", values=[round(rec.measurements[n].cv * 100,
                                                                  2) for n in names])])]))
    return Document(title=f"Acceptance — {rec.platform} / {rec.pool}",
                    subtitle=f"{rec.status.upper()} · {rec.started_at}", summary=summary,
                    sections=sections)


def diff_lines(d: RecordDiff) -> list[str]:
    lines = [f"status: {d.status[0]} -> {d.status[1]}"]
    for side, only in zip(("A", "B"), d.suites_only, strict=True):
        if only:
            lines.append(f"suites run only in {side}: {', '.join(only)} (not compared)")
    if d.matrix[0] != d.matrix[1]:
        lines.append(f"matrix entry: {d.matrix[0]} -> {d.matrix[1]}")
    for c in d.criteria:
        lines.append(f"criterion {c.id}: {c.before or 'absent'} -> {c.after or 'absent'}"
                     + (f" ({c.detail})" if c.detail else ""))
    for m in d.metrics:
        before = f"{m.before:,.1f}" if m.before is not None else "–"
        after = f"{m.after:,.1f}" if m.after is not None else "–"
        ratio = f" x{m.ratio:.3f}" if m.ratio is not None else ""
        lines.append(f"metric {m.metric}: {before} -> {after} {m.unit}{ratio}")
    for k, (a, b) in d.fingerprint.items():
        lines.append(f"environment {k}: {a} -> {b}")
    return lines


def handover_section(matrix: MatrixCheck, record: Record | None,
                     links: Mapping[str, str]) -> Section:
    """The plan's "Handover" section: the matrix status, the last acceptance run, and links
    (label -> relative path) to the matrix, runbook, monitoring rules and acceptance report.

    For ``aiplat plan``: the CLI (which may import ops) builds this section and appends it to
    the plan document; :mod:`aiplat.report` stays free of ops types.
    """
    def file(key: str) -> Rich:
        href = links.get(key, "")
        return Link(text=href, href=href) if href else ""

    n = len(matrix.entries)
    rows: list[list[Rich]] = [
        ["version matrix", matrix.status, f"{n} approved entr{'y' if n == 1 else 'ies'}",
         file("matrix")]]
    if record is None:
        # No link: the acceptance report does not exist until a run writes it.
        rows.append(["acceptance", "", "no acceptance run recorded yet (aiplat accept run "
                     "SPEC --pool POOL -w DIR)", ""])
    else:
        c = record.counts()
        rows.append(["acceptance", record.status, f"on {record.started_at} (pool "
                     f"{record.pool}: {c['pass']} pass, {c['fail']} fail, {c['skip']} skipped; "
                     f"matrix entry {record.matrix.get('matched') or 'none'})",
                     file("acceptance")])
    for key, label in (("runbook", "runbook"), ("monitoring", "monitoring rules")):
        if key in links:
            rows.append([label, "", "", file(key)])
    return Section(id="handover", title="Handover",
                   paragraphs=["What an operator takes over with this platform: the approved "
                               "versions, the last acceptance record, the runbook and the "
                               "minimum monitoring."],
                   tables=[Table(columns=["item", "status", "detail", "file"], rows=rows)])
