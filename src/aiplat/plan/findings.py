"""What a reviewer must act on, and the base of the Plan's models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class PlanModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Finding(PlanModel):
    severity: Literal["info", "warning", "error"]
    subject: str = Field(description="what the finding is about, e.g. 'pool h100'")
    message: str
    fix: str = ""
