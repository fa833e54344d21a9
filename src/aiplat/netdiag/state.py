"""The lab's state file: everything the lab created, so ``down`` removes exactly that.

Objects are appended *before* the command that creates them runs, and the file is rewritten
atomically after every change; a crash at any point therefore leaves a file that lists a
superset of what exists, and ``down`` (which checks existence before removing) cleans it up.
Processes are recorded with their kernel start time (``/proc/<pid>/stat`` field 22) so a
recycled pid is never signalled.

The file lives in ``$AIPLAT_LAB_DIR`` (default ``/run/aiplat/lab``, a tmpfs: after a reboot
both the lab and its state are gone), as ``<prefix>/state.json`` next to the lab's working
files (Prometheus TSDB, registry storage, logs).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aiplat.fsutil import atomic_write
from aiplat.netdiag.model import LabInputError, LabPlan


def lab_root() -> Path:
    return Path(os.environ.get("AIPLAT_LAB_DIR", "/run/aiplat/lab"))


def lab_dir(prefix: str) -> Path:
    return lab_root() / prefix


class Created(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str = Field(description="netns | link | iptables")
    name: str
    argv: list[str] = Field(default_factory=list, description="iptables rule spec")


class Proc(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    pid: int
    start: int = Field(description="start time in clock ticks since boot")
    ns: str | None = None
    argv: list[str]
    fault: str | None = Field(default=None, description="the fault that owns it, if any")


class ActiveFault(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    kind: str
    node: str
    segment: str
    detail: str
    undo: list[list[str]]
    since: float


class PullBaseline(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node: str
    mbit: float


class LabState(BaseModel):
    model_config = ConfigDict(extra="forbid")
    plan: LabPlan
    phase: str = "starting"
    created: list[Created] = Field(default_factory=list)
    procs: list[Proc] = Field(default_factory=list)
    faults: list[ActiveFault] = Field(default_factory=list)
    blob_digest: str | None = None
    blob_bytes: int = 0
    baseline: list[PullBaseline] = Field(default_factory=list)
    up_seconds: float | None = None
    notes: list[str] = Field(default_factory=list, description="what the host could not do")


def state_path(prefix: str) -> Path:
    return lab_dir(prefix) / "state.json"


def load_state(prefix: str) -> LabState | None:
    """The lab's state, None when there is none; a file that is not one is an input error
    (it names the file and the way out), never a traceback."""
    path = state_path(prefix)
    if not path.exists():
        return None
    from aiplat import inputs

    try:
        return LabState.model_validate_json(inputs.read_text(path, "a lab state file"))
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(document)"
        raise LabInputError(
            f"{path}: not a lab state file ({where}: {first['msg']}) (fix: take the lab's "
            f"objects down by hand, 'ip netns list | grep {prefix}-', then remove "
            f"{path.parent})") from e


def save_state(state: LabState) -> None:
    atomic_write(state_path(state.plan.prefix), state.model_dump_json(indent=2) + "\n", 0o600)


def proc_start_time(pid: int) -> int | None:
    """The process's start time (clock ticks after boot), or None when it does not exist
    (or has exited and is a zombie)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # Field 2 (comm) may contain spaces and parentheses; fields after the last ')' are fixed.
    fields = raw[raw.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):  # exited; a zombie only waits for its parent to reap it
        return None
    return int(fields[19])
