"""aiplat's error types. Each says what was wrong, where, and how to fix it.

    AiplatError                 base; ``exit_code`` tells the CLI how to exit
    ├── InputError              bad user input (exit 2)
    │   └── SpecError           a platform spec that does not load; carries ``SpecIssue``s
    └── (capability errors are added by later layers)

The CLI catches ``AiplatError`` once and prints ``str(err)``; nothing else prints tracebacks
for expected failures.
"""

from __future__ import annotations

from dataclasses import dataclass


class AiplatError(Exception):
    exit_code = 1


class InputError(AiplatError):
    exit_code = 2


@dataclass(frozen=True)
class SpecIssue:
    """One problem in a spec, located as precisely as the YAML allows."""

    file: str
    line: int | None
    column: int | None
    path: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        field = f" {self.path}:" if self.path else ""
        hint = f" (fix: {self.hint})" if self.hint else ""
        return f"{where}:{field} {self.message}{hint}"


class SpecError(InputError):
    def __init__(self, issues: list[SpecIssue]) -> None:
        self.issues = issues
        super().__init__("\n".join(str(i) for i in issues))
