"""Helpers for tests that run a real lab (public, like ``structlog.testing``).

``lab_unavailable()`` says why a lab cannot run here (not root, a tool missing), or None.
``running_lab(plan)`` brings a lab up and always takes it down again, also when the body
fails, and removes the leftovers of an earlier crashed run with the same prefix first.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from aiplat.netdiag import lab as labio
from aiplat.netdiag.model import LabPlan
from aiplat.netdiag.state import LabState


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for the lab's Prometheus)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def lab_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "the lab needs root (network namespaces, bridges, tc, iptables)"
    missing = labio.missing_tools()
    if missing:
        return "lab tools missing: " + ", ".join(missing)
    return None


@contextmanager
def running_lab(plan: LabPlan) -> Iterator[LabState]:
    labio.down(plan.prefix)  # a previous run that crashed
    result = labio.up(plan)
    try:
        yield result.state
    finally:
        labio.down(plan.prefix)
