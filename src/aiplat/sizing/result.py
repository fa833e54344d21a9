"""The common shape of every sizing result, and the one check of each kind on its inputs.

Every sizing function checks its inputs with ``require_positive``, ``require_non_negative``,
``require_fraction`` and ``precision_bytes`` from here: one wording, one error type
(``InputError``: a figure the spec or a flag gave; the CLI exits 2 with it).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from aiplat.errors import InputError

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


def precision_bytes(precision: str) -> float:
    """Storage bytes of one value in ``precision`` (``bf16`` -> 2.0; any case)."""
    try:
        return BYTES_PER_PARAM[precision.lower()]
    except KeyError:
        names = ", ".join(sorted(BYTES_PER_PARAM))
        raise InputError(f"unknown precision {precision!r} (fix: use one of {names})") from None


def require_positive(**values: float) -> None:
    """Refuse the first value that is not a positive finite number (NaN and inf too)."""
    for name, value in values.items():
        if not (value > 0 and math.isfinite(value)):
            raise InputError(f"{name} must be a positive finite number, got {value!r}")


def require_non_negative(**values: float) -> None:
    """Refuse the first value that is not zero or a positive finite number."""
    for name, value in values.items():
        if not (value >= 0 and math.isfinite(value)):
            raise InputError(f"{name} must be zero or a positive finite number, got {value!r}")


def require_fraction(**values: float) -> None:
    """Refuse the first value outside (0, 1]."""
    for name, value in values.items():
        if not 0 < value <= 1:
            raise InputError(f"{name} must be in (0, 1], got {value!r}")
