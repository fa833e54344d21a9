"""The data a monitoring rule is made of, apart from the rules themselves
(:mod:`aiplat.ops.monitoring` builds them, :mod:`aiplat.ops.monitoring_platform` too).

An alert is plain data with its two promtool cases: series on which it fires (with the exact
labels and annotations) and healthy series on which it stays silent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["critical", "warning", "info"]

RUNBOOK_PAGE = "runbook.html"


def runbook_url(procedure: str, base: str = "") -> str:
    """The link to a runbook procedure: ``<base>/runbook.html#<procedure>``; without a base
    (``operations.monitoring.runbookBaseUrl`` unset) the relative ``runbook.html#...``, which
    Alertmanager's receivers cannot open."""
    page = f"{RUNBOOK_PAGE}#{procedure}"
    return f"{base.rstrip('/')}/{page}" if base else page


@dataclass(frozen=True)
class Series:
    """One input series of a promtool test: ``metric{labels}`` and its values notation
    (e.g. ``0+5x30``: start 0, add 5 each interval, 30 times)."""

    metric: str
    labels: Mapping[str, str]
    values: str

    @property
    def selector(self) -> str:
        inner = ", ".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        return f"{self.metric}{{{inner}}}"


@dataclass(frozen=True)
class Case:
    """Series and the time to evaluate at; ``fires`` lists the label sets (series labels
    left by the expression, without the rule's own labels) the alert must have; empty means
    the alert must stay silent."""

    series: tuple[Series, ...]
    eval_time: str
    fires: tuple[Mapping[str, str], ...] = ()


@dataclass(frozen=True)
class RecordingRule:
    record: str
    expr: str


@dataclass(frozen=True)
class AlertRule:
    name: str
    expr: str
    severity: Severity
    component: str
    summary: str
    description: str
    procedure: str = ""  # runbook section id (its anchor)
    for_: str = "0m"
    firing: Case = field(default_factory=lambda: Case((), "0m"))
    healthy: Case = field(default_factory=lambda: Case((), "0m"))

    @property
    def labels(self) -> dict[str, str]:
        return {"severity": self.severity, "component": self.component}

    def annotations(self, labels: Mapping[str, str], runbook_base: str = "") -> dict[str, str]:
        """The annotations as rendered into the rule (``labels`` empty) or as Prometheus
        expands them for an alert with ``labels``; ``runbook_base`` makes the runbook link
        absolute (see :func:`runbook_url`)."""
        out = {"summary": self.summary, "description": self.description}
        if self.procedure:
            out["runbook_url"] = runbook_url(self.procedure, runbook_base)
        if labels:
            out = {k: expand(v, labels) for k, v in out.items()}
        return out


@dataclass(frozen=True)
class RuleGroup:
    name: str
    rules: tuple[RecordingRule | AlertRule, ...]
    interval: str = "1m"

    @property
    def alerts(self) -> list[AlertRule]:
        return [r for r in self.rules if isinstance(r, AlertRule)]


_LABEL_REF = re.compile(r"\{\{ \$labels\.([A-Za-z_][A-Za-z0-9_]*) \}\}")


def expand(template: str, labels: Mapping[str, str]) -> str:
    """Expand ``{{ $labels.NAME }}`` as Prometheus would; a label the alert lacks is an
    error here (Prometheus would print ``<no value>``)."""

    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in labels:
            raise KeyError(f"annotation uses label {m.group(1)!r}, which the alert lacks")
        return labels[m.group(1)]

    return _LABEL_REF.sub(sub, template)
