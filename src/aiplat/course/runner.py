"""Run and check the exercises (the I/O edge of :mod:`aiplat.course`).

A shell step runs as ``bash -o pipefail -ec LINE`` from the repository root with ``COURSE``
set to the result folder, ``LAB``, ``LAB_NODE`` and ``LAB_STORE`` to the lab's name, its first
compute node's namespace and its model store (from the lab's state: any prefix, any subnets)
and the running interpreter's ``bin/`` first on ``PATH`` (so ``aiplat`` and ``python`` are the
ones of this installation, also under ``ip netns exec``).
Its output goes to ``$COURSE/exN/run.log``; on failure the tail is shown. An action step
calls :data:`aiplat.course.actions.ACTIONS`. A check only reads files (:class:`DirFiles`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aiplat import inputs
from aiplat.course.exercises import LAB_PREFIX, Exercise, Step
from aiplat.errors import AiplatError, InputError


class CourseError(AiplatError):
    exit_code = 1


@dataclass(frozen=True)
class DirFiles:
    """:class:`~aiplat.course.exercises.Files` over a folder on disk."""

    root: Path

    def text(self, rel: str) -> str | None:
        """The file's text; None when it is missing or no readable text (a directory, a
        FIFO, a device, binary: read bounded, never blocking)."""
        try:
            return inputs.read_text(self.root / rel, "a course result")
        except InputError:
            return None


def check(ex: Exercise, course: Path) -> list[str]:
    return ex.check(DirFiles(course))


def lab_problem(prefix: str = LAB_PREFIX) -> str | None:
    """Why the lab exercises cannot run now, or None."""
    from aiplat.netdiag.state import load_state

    if os.geteuid() != 0:
        return "exercises 5-7 need root (the lab's network namespaces)"
    if load_state(prefix) is None:
        return (f"no lab '{prefix}' is up (fix: run 'aiplat lab up --prefix {prefix}' "
                "first, or name the lab that is up with --lab)")
    return None


def lab_env(prefix: str) -> dict[str, str]:
    """``LAB``, ``LAB_NODE``, ``LAB_STORE`` of the lab ``prefix`` (only ``LAB`` when it is
    down: the exercises without a lab need none)."""
    from aiplat.netdiag.state import load_state

    state = load_state(prefix)
    return state.plan.shell_env() if state is not None else {"LAB": prefix}


def step_env(course: Path, lab: str = LAB_PREFIX) -> dict[str, str]:
    env = dict(os.environ)
    env["COURSE"] = str(course)
    env.update(lab_env(lab))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_step(ex: Exercise, step: Step, course: Path, root: Path,
             lab: str = LAB_PREFIX) -> None:
    """Run one step; raise :class:`CourseError` with the output's tail when it fails."""
    from aiplat.course.actions import ACTIONS

    log = course / f"ex{ex.number}" / "run.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    if step.action:
        try:
            ACTIONS[step.action](course, root, lab)
        except AiplatError as e:
            raise CourseError(f"exercise {ex.number}, {ex.command(step)}: {e}") from e
        return
    with log.open("a") as out:
        out.write(f"$ {step.cmd}\n")
        out.flush()
        proc = subprocess.run(["bash", "-o", "pipefail", "-ec", step.cmd], cwd=root,
                              env=step_env(course, lab), stdout=out, stderr=subprocess.STDOUT,
                              check=False)
        out.write(f"[exit {proc.returncode}]\n")
    if proc.returncode not in step.ok_rc:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise CourseError(f"exercise {ex.number}: `{step.cmd}` exited {proc.returncode} "
                          f"(full output in {log}):\n{tail}")


def run_exercise(ex: Exercise, course: Path, root: Path, echo: Callable[[str], None],
                 only: str | None = None, *, lab: str = LAB_PREFIX) -> list[str]:
    """Run the steps (or the one named ``only``) on lab ``lab``, then return the check's
    problems."""
    if ex.needs_lab:
        problem = lab_problem(lab)
        if problem:
            raise CourseError(f"exercise {ex.number}: {problem}")
    steps = [s for s in ex.steps if only is None or s.action == only]
    if not steps:
        names = ", ".join(s.action for s in ex.steps if s.action) or "none"
        raise CourseError(f"exercise {ex.number} has no step {only!r} (steps: {names})")
    try:
        for i, step in enumerate(steps, 1):
            t0 = time.perf_counter()
            run_step(ex, step, course, root, lab)
            echo(f"  {i}/{len(steps)} {step.title} ({time.perf_counter() - t0:.1f} s)")
    finally:
        if ex.cleanup and only is None:
            subprocess.run(["bash", "-ec", ex.cleanup], cwd=root, env=step_env(course, lab),
                           capture_output=True, check=False)
    return [] if only else check(ex, course)
