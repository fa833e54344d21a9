"""aiplat's error types. Each says what was wrong, where, and how to fix it.

    AiplatError                      base; ``exit_code`` tells the CLI how to exit (1)
    ├── InputError                   bad user input (exit 2)
    │   ├── SpecError                a platform spec that does not load; ``SpecIssue``s
    │   ├── OutputError              an output that cannot be written (also an ``OSError``)
    │   ├── spec.models.SpecValueError      a rule inside the spec (a ValueError for pydantic)
    │   ├── kube.quantity.QuantityError     not a Kubernetes quantity (also a ValueError)
    │   ├── kube.cel.CelError               a CEL selector that does not compile or evaluate
    │   ├── devices: CdiSpecError, DecodeError (cdiyaml), DeviceError (host),
    │   │   SharingError, RuntimeConfigError, AccountingError (the last three ValueErrors too)
    │   ├── artifacts.errors.ArtifactInputError
    │   └── netdiag.model.LabInputError
    ├── devices.mig.MigPlanError     a MIG demand that cannot be met (a finding: exit 1)
    ├── artifacts.errors.ArtifactError
    │   └── RegistryError, DigestMismatchError, SignatureError, ManifestError, StorageError
    ├── kube.apply.ApiError          the API server refused or failed
    │   └── UnreachableError
    ├── cluster.run.ClusterError     the lab control plane did not come up or go down
    ├── course.runner.CourseError
    └── netdiag.model.LabError
        └── netdiag.prom.PromError

The CLI catches ``AiplatError`` once and prints ``str(err)``; nothing else prints tracebacks
for expected failures. Library code raises these, not bare ``ValueError``s (pydantic
validators excepted: pydantic turns their ValueErrors into located spec issues).
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path


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


_OUTPUT_FIXES = {
    errno.EROFS: "the file system is read-only: write somewhere writable (another -o/--write)",
    errno.ENOSPC: "the disk is full: free space or write to another file system",
    errno.EDQUOT: "the disk quota is exhausted: free space or write elsewhere",
    errno.EACCES: "no permission: choose a directory you can write, or fix its permissions",
    errno.EPERM: "not permitted: choose a directory you can write",
    errno.ENOTDIR: "a file is where a directory is needed: remove it or choose another output",
    errno.EEXIST: "a file is where a directory is needed: remove it or choose another output",
    errno.EISDIR: "a directory is where a file is needed: remove it or choose another output",
    errno.ENAMETOOLONG: "the path is too long: choose a shorter output path",
    errno.ENOENT: "the directory cannot be created there: choose another output",
}


class OutputError(InputError, OSError):
    """An output that cannot be written: the path, the system's reason and a fix."""

    def __init__(self, path: str | Path, cause: OSError) -> None:
        reason = cause.strerror or str(cause)
        where = cause.filename if cause.filename not in (None, "") else path
        fix = _OUTPUT_FIXES.get(cause.errno or 0, "choose another output location")
        self.message = f"cannot write {path}: {reason} ({where}) (fix: {fix})" \
            if str(where) != str(path) else f"cannot write {path}: {reason} (fix: {fix})"
        OSError.__init__(self, cause.errno, self.message, str(path))

    def __str__(self) -> str:
        return self.message
