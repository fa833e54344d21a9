"""The base of the Plan's models. The plan's findings are aiplat's one ``Finding``
(``aiplat.findings``): what a reviewer must act on."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from aiplat.findings import Finding


class PlanModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


__all__ = ["Finding", "PlanModel"]
