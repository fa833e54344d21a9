"""Maintenance windows: a batch starts only inside one (cron in UTC), a started batch is
finished, and the run waits naming the next opening (issue #42)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from aiplat.errors import InputError
from aiplat.maintain.state import Options, WindowOption, batch_started, hold, set_status
from aiplat.maintain.windows import Window, check, closed_reason, next_opening, open_window

SAT_2 = Window("weekly", "0 2 * * 6", 4)  # Saturdays 02:00-06:00 UTC
NIGHTLY = Window("nightly", "30 23 * * *", 1.5)  # 23:30-01:00, across midnight


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(("when", "open_"), [
    ("2026-12-05T01:59:59", False),  # a Saturday, before the window
    ("2026-12-05T02:00:00", True),  # it opens exactly now
    ("2026-12-05T05:59:59", True),
    ("2026-12-05T06:00:00", False),  # 4 h later it is closed
    ("2026-12-06T03:00:00", False),  # Sunday
])
def test_a_window_is_open_from_its_cron_time_for_its_hours(when: str, open_: bool) -> None:
    assert (open_window([SAT_2], at(when)) is SAT_2) is open_


def test_a_window_open_across_midnight_and_the_first_open_one_is_named() -> None:
    assert open_window([SAT_2, NIGHTLY], at("2026-12-08T00:45:00")) is NIGHTLY
    assert open_window([SAT_2, NIGHTLY], at("2026-12-08T01:00:00")) is None


def test_the_reason_names_the_next_opening_in_utc_and_the_fix() -> None:
    w, start = next_opening([SAT_2, NIGHTLY], at("2026-12-07T12:00:00"))
    assert w is NIGHTLY and start == at("2026-12-07T23:30:00")
    why = closed_reason([SAT_2], at("2026-12-07T12:00:00"))
    assert why is not None
    assert "the next, weekly, opens 2026-12-12 02:00 UTC for 4 h" in why
    assert "aiplat maintain resume --ignore-windows" in why
    assert closed_reason([SAT_2], at("2026-12-12T03:00:00")) is None
    assert closed_reason([], at("2026-12-07T12:00:00")) is None  # no window: any time


def test_a_schedule_cron_cannot_read_is_refused_at_its_field() -> None:
    with pytest.raises(InputError, match=r"maintenanceWindows\[1\] \(bad\).*'61 \* \* \* \*'"):
        check([SAT_2, Window("bad", "61 * * * *", 1)])


def test_a_held_run_waits_with_the_reason_and_running_clears_it() -> None:
    from test_maintain_state import _run, _walk

    state = _run()
    first = state.nodes[0]
    assert not batch_started(state, first.batch)
    held = hold(state, "outside every maintenance window")
    assert held.status == "waiting" and held.wait.startswith("outside")
    assert held.events[-1].endswith("outside every maintenance window")
    assert set_status(held, "running").wait == ""
    moved = _walk(state, first.name, "cordoned")
    assert batch_started(moved, first.batch)


def test_windows_are_kept_in_the_runs_options() -> None:
    o = Options(windows=[WindowOption(name="weekly", schedule="0 2 * * 6", hours=4)])
    assert Options.model_validate_json(o.model_dump_json()) == o
    assert Options.model_validate_json('{"spec": "x"}').windows == []  # older runs load
