"""When a maintenance run may start a batch: the spec's ``operations.maintenanceWindows``
(issue #42).

A window opens at each time its cron schedule names and stays open ``durationHours``. The
schedule is read in UTC: the spec names no time zone, and the run may be started from a
laptop in any zone, so the one reading that means the same everywhere is UTC (the runbook
says so). A batch starts only while a window is open; a batch that has started is finished
even past the window's end, since a node left half changed (cordoned, drained, its driver
swapped) is worse than a late one. With no window in the spec a run may start at any time,
and ``--ignore-windows`` (an emergency) lifts them for one run.

Cron's arithmetic is croniter's (a well-kept library; five fields as Vixie cron reads them,
day-of-month and day-of-week or-ed), not written here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from croniter import CroniterBadCronError, croniter

from aiplat.errors import InputError


@dataclass(frozen=True)
class Window:
    name: str
    schedule: str  # five cron fields, UTC
    hours: float


def check(windows: list[Window]) -> None:
    """Refuse a schedule cron cannot read (the spec's pattern admits only cron's characters,
    not only valid fields: '61 * * * *')."""
    for i, w in enumerate(windows):
        if not croniter.is_valid(w.schedule):
            raise InputError(f"operations.maintenanceWindows[{i}] ({w.name}): schedule "
                             f"{w.schedule!r} is not a cron schedule (fix: five fields, "
                             "minute 0-59, hour 0-23, day 1-31, month 1-12, weekday 0-6, "
                             "e.g. '0 2 * * 6')")


def _last_start(w: Window, now: float) -> float:
    # get_prev from one second on: a window that opens exactly now counts as open
    try:
        return float(croniter(w.schedule, now + 1).get_prev(float))
    except CroniterBadCronError as e:  # check() refuses these first
        raise InputError(f"maintenance window {w.name}: {e}") from e


def open_window(windows: list[Window], now: float) -> Window | None:
    """The window open at ``now`` (the first in the spec's order), or None."""
    for w in windows:
        if now < _last_start(w, now) + w.hours * 3600:
            return w
    return None


def next_opening(windows: list[Window], now: float) -> tuple[Window, float]:
    """The window that opens next after ``now`` and when (epoch seconds)."""
    starts = [(float(croniter(w.schedule, now).get_next(float)), i) for i, w in
              enumerate(windows)]
    at, i = min(starts)
    return windows[i], at


def closed_reason(windows: list[Window], now: float) -> str | None:
    """None when a batch may start at ``now``; else what the run waits for, with the fix."""
    if not windows or open_window(windows, now) is not None:
        return None
    w, at = next_opening(windows, now)
    when = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (f"outside every maintenance window: the next, {w.name}, opens {when} for "
            f"{w.hours:g} h (fix: `aiplat maintain resume` then; in an emergency "
            "`aiplat maintain resume --ignore-windows`)")
