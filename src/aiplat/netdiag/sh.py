"""Running commands and processes for the lab (the I/O edge)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from aiplat.netdiag.model import Argv, LabError
from aiplat.netdiag.state import Proc, proc_start_time


def run(
    argv: Argv, *, check: bool = True, timeout: float = 30.0,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv``; raise :class:`LabError` with its stderr when it fails and ``check``."""
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as e:
        raise LabError(f"{argv[0]} is not installed (fix: apt-get install the package that "
                       f"provides it, see 'aiplat lab up --help')") from e
    except subprocess.TimeoutExpired as e:
        raise LabError(f"{shlex.join(argv)} did not finish within {timeout:.0f} s") from e
    if check and cp.returncode != 0:
        raise LabError(f"{shlex.join(argv)} failed (exit {cp.returncode}): "
                       f"{cp.stderr.strip() or cp.stdout.strip()}")
    return cp


def ok(argv: Argv, timeout: float = 30.0) -> bool:
    return run(argv, check=False, timeout=timeout).returncode == 0


_CHILDREN: list[subprocess.Popen[bytes]] = []
"""Popen objects of processes this interpreter started: kept so they are never collected
while running (which would warn), and reaped when they are stopped."""


def spawn(name: str, argv: Argv, log: Path, ns: str | None = None,
          fault: str | None = None) -> Proc:
    """Start a long-running process (in namespace ``ns``) in its own session, logging to ``log``."""
    full = (["ip", "netns", "exec", ns] if ns else []) + argv
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                             start_new_session=True)
    _CHILDREN.append(p)
    start = None
    for _ in range(50):
        start = proc_start_time(p.pid)
        if start is not None:
            break
        time.sleep(0.01)
    if start is None:
        raise LabError(f"{name} exited at once; see {log}")
    return Proc(name=name, pid=p.pid, start=start, ns=ns, argv=full, fault=fault)


def alive(proc: Proc) -> bool:
    return proc_start_time(proc.pid) == proc.start


def stop(proc: Proc, grace: float = 3.0) -> bool:
    """SIGTERM the process if it is still the one recorded, SIGKILL after ``grace`` s.
    Returns True when something was stopped."""
    if not alive(proc):
        return False
    return kill_pid(proc.pid, proc.start, grace)


def kill_pid(pid: int, start: int | None, grace: float = 3.0) -> bool:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(pid)
        now = proc_start_time(pid)
        if now is None or (start is not None and now != start):
            return True
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    _reap(pid)
    return True


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def wait_for(what: str, probe: Callable[[], bool], timeout: float, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.1)
    where = f"; see {log}" if log else ""
    raise LabError(f"{what} did not become ready within {timeout:.0f} s{where}")
