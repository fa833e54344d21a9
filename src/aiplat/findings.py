"""One Finding: what a check found that a person must read, and the one way it is printed.

Every part of aiplat that judges something — the plan, node placement and the version
matrix, CDI specs, kube lint (and the tree reader's not-modelled notes) — reports ``Finding``s
(a check's pass|warn|fail is a status, not a severity: node checks and acceptance keep theirs):

    severity   error | warning | info   (error: not usable as it is; warning: needs a
                                          decision; info: worth knowing)
    subject    what it is about, as the user names it: 'pool h100', 'ClusterQueue/team-a',
               'gpu 0000:17:00.0', 'nvidia.json device 0 containerEdits.mounts[2]'
    message    what is wrong, in one sentence
    fix        what to change ('' when nothing can be changed)
    source     the rule or check that made it ('flavor-taints', 'numa-mismatch',
               'host-check'; '' for the plan's own findings)

``line()`` is the one text form (CLI, logs, acceptance reports), ``Finding.model_dump()`` the
one data form (``-o json|yaml``, plan.json), ``table()`` the report's. Text that came
from outside (object names, paths, spec strings) may hold terminal control sequences: the
text form shows them escaped (``aiplat.text.shown``), so a finding cannot drive the admin's
terminal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aiplat.text import shown

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")  # the order findings list in
TABLE_COLUMNS = ("severity", "source", "subject", "finding", "fix")


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    severity: Severity
    subject: str = Field(description="what the finding is about, e.g. 'pool h100'")
    message: str
    fix: str = ""
    source: str = Field("", description="the rule or check that made it")


def line(f: Finding) -> str:
    """``severity: [source] subject: message (fix: fix)``, the parts that are empty left out."""
    src = f"[{f.source}] " if f.source else ""
    subject = f"{f.subject}: " if f.subject else ""
    fix = f" (fix: {f.fix})" if f.fix else ""
    return shown(f"{f.severity}: {src}{subject}{f.message}{fix}")


def table(findings: Iterable[Finding]) -> tuple[list[str], list[list[str]]]:
    """Columns and rows of ``findings`` in order, for a report (which escapes its own text);
    the source column only when some finding has one (the plan's have none)."""
    fs = ordered(findings)
    with_source = any(f.source for f in fs)
    cols = [c for c in TABLE_COLUMNS if with_source or c != "source"]
    rows = [[f.severity, *([f.source] if with_source else []), f.subject, f.message, f.fix]
            for f in fs]
    return cols, rows


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; by source and subject within a severity, and
    as they came within a subject (a check's findings on one thing read in its order)."""
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: (rank[f.severity], f.source, f.subject))


def counts(findings: Iterable[Finding]) -> dict[Severity, int]:
    out: dict[Severity, int] = dict.fromkeys(SEVERITIES, 0)
    for f in findings:
        out[f.severity] += 1
    return out


__all__ = ["SEVERITIES", "TABLE_COLUMNS", "Finding", "Severity", "counts", "line", "ordered",
           "table"]
