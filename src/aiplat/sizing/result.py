"""The common shape of every sizing result."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

InputValue = float | int | str | bool | None


class Result(BaseModel):
    """Base for sizing results: figures as fields, plus how they were obtained."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    formula: str = Field(description="the formula in words, with its source")
    inputs: dict[str, InputValue] = Field(description="every input the formula used")
    notes: list[str] = Field(default_factory=list, description="assumptions worth reading")


BYTES_PER_PARAM: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    # NVFP4 (Blackwell): 4-bit E2M1 values with one FP8 scale per 16 of them, 4.5 bits.
    "fp4": 0.5625,
    "int8": 1.0,
    "int4": 0.5,
    "nf4": 0.5,
}
"""Storage bytes per value for each precision name used in specs."""
