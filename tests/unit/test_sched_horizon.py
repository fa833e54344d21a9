"""A simulation cut at its horizon counts the work running at the cut (issue #45 item 6).

The defect: a 30-day pretraining job on a GB200 NVL72 site (and the same trays written as
plain nodes) showed 0 % GPU utilisation in the plan's simulated month. The job arrived at
about 496 h and would finish after 730 h; its FINISH event lay past the horizon, the loop
stopped there and the run ended at the last event it had handled (the start), so the
~234 h it ran inside the month, and the provisioned hours after it, were never counted.
"""

from __future__ import annotations

import pytest
from sched_helpers import cq, job, nodes

from aiplat.sched import queues, simulate

CFG = queues((cq("a", 64, cohort=None),))
H = 3600.0


def test_a_job_running_past_the_horizon_counts_up_to_the_horizon() -> None:
    r = simulate(nodes(n=2), [job("long", "a", 8, submit=6 * H, dur=100 * H)], CFG,
                 horizon=10 * H)
    assert r.end_h == pytest.approx(10.0)
    assert r.provisioned_gpu_hours == pytest.approx(16 * 10.0)  # 2 nodes x 8 GPUs x 10 h
    assert r.allocated_gpu_hours == pytest.approx(8 * 4.0)  # ran from 6 h to the cut
    assert r.utilisation == pytest.approx(32 / 160)
    assert r.tenant("a").gpu_hours == pytest.approx(32.0)


def test_a_run_that_ends_before_the_horizon_still_ends_at_its_last_event() -> None:
    r = simulate(nodes(n=2), [job("short", "a", 8, dur=2 * H)], CFG, horizon=10 * H)
    assert r.end_h == pytest.approx(2.0)
    assert r.allocated_gpu_hours == pytest.approx(16.0)
    assert r.utilisation == pytest.approx(0.5)
