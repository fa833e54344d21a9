"""The whole course end to end: a fresh lab, ``aiplat lab exercise all``, every exercise
done; ``--check`` (from disk only) agrees, and fails once a result is removed; then the lab
goes down and nothing is left: no lab object, no fault, no probe image.

Root; fails (not skips) in CI. The lab is not the default one: another prefix and other
subnets (the steps name the lab only through $LAB, $LAB_NODE and $LAB_STORE), and the course
folder's path holds a space; its state file lives in a folder of the test's own and its
Prometheus on a free port, so an existing lab is never touched: a lab with the course's prefix
whose state is not in that folder makes the test fail, naming what is up. A run killed midway
(its lab left up) is taken down by the next run, from the state it left in that folder.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from ipaddress import IPv4Network
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import need

from aiplat.cli.course import exercise
from aiplat.course.actions import PROBE_IMAGE
from aiplat.course.exercises import EXERCISES
from aiplat.netdiag import lab as labio
from aiplat.netdiag.model import DEFAULT_SEGMENTS, plan_lab
from aiplat.netdiag.state import load_state
from aiplat.netdiag.testing import free_port, lab_unavailable, running_lab

pytestmark = pytest.mark.integration
ROOT = Path(__file__).parents[2]
LAB_PREFIX = "crs"
# The course's own state folder, the same in every run, so a killed run's lab can be found.
LAB_DIR = Path(tempfile.gettempdir()) / "aiplat-test-course-labs"
SEGMENTS = [s.model_copy(update={"cidr": IPv4Network(f"10.246.{i}.0/24")})
            for i, s in enumerate(DEFAULT_SEGMENTS)]


def _images() -> set[str]:
    out = subprocess.run(["podman", "images", "--format", "{{.Repository}}:{{.Tag}}"],
                         capture_output=True, text=True, check=False).stdout
    return set(out.split())


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    reason = lab_unavailable()
    need(reason)
    monkeypatch.setenv("AIPLAT_LAB_DIR", str(LAB_DIR))
    if load_state(LAB_PREFIX) is None and (found := labio.leftovers(LAB_PREFIX)):
        pytest.fail(f"a lab '{LAB_PREFIX}' that is not this test's is up on this host: take it "
                    f"down first (aiplat lab down --prefix {LAB_PREFIX}); found: "
                    + ", ".join(found[:6]), pytrace=False)
    images = _images()
    with running_lab(plan_lab(SEGMENTS, nodes=3, prefix=LAB_PREFIX, prom_port=free_port())):
        yield
    assert labio.leftovers(LAB_PREFIX) == []
    assert _images() <= images, _images() - images
    assert PROBE_IMAGE not in _images()


def test_course_runs_end_to_end_and_checks_from_disk(lab: None, tmp_path: Path) -> None:
    course = tmp_path / "the course"
    run = CliRunner().invoke(exercise, ["all", "--course", str(course), "--root", str(ROOT),
                                        "--lab", LAB_PREFIX])
    assert run.exit_code == 0, run.stdout + run.stderr
    for ex in EXERCISES:
        assert f"exercise {ex.number} ({ex.slug}): done" in run.stdout, run.stdout
    assert "7 of 7 exercises done" in run.stdout
    state = load_state(LAB_PREFIX)
    assert state is not None and state.faults == []  # exercises 6 and 7 cleared theirs

    check = CliRunner().invoke(exercise, ["all", "--check", "--course", str(course)])
    assert check.exit_code == 0, check.stdout
    assert "7 of 7 exercises done" in check.stdout

    (course / "ex6" / "diagnose-fault.json").unlink()
    check = CliRunner().invoke(exercise, ["all", "--check", "--course", str(course)])
    assert check.exit_code == 1
    assert "exercise 6 (diagnose): NOT done" in check.stdout
    assert "ex6/diagnose-fault.json is missing" in check.stdout
    assert "6 of 7 exercises done" in check.stdout
