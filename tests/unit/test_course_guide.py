"""``docs/lab-guide.md`` is generated from the exercise definitions, so the guide's commands
are the ones ``aiplat lab exercise`` (and the end-to-end test) run; this fails when the
committed guide is stale (fix: ``python -m aiplat.course.guide > docs/lab-guide.md``)."""

from __future__ import annotations

import re
from pathlib import Path

from aiplat.course.exercises import EXERCISES
from aiplat.course.guide import render_guide

GUIDE = Path(__file__).parents[2] / "docs" / "lab-guide.md"


def test_committed_guide_is_up_to_date() -> None:
    assert GUIDE.read_text() == render_guide(), (
        "docs/lab-guide.md is stale: run python -m aiplat.course.guide > docs/lab-guide.md")


def test_guide_command_blocks_are_exactly_the_steps_in_order() -> None:
    text = GUIDE.read_text()
    sections = re.split(r"^## Exercise \d+: ", text, flags=re.M)[1:]
    assert len(sections) == len(EXERCISES)
    for ex, section in zip(EXERCISES, sections, strict=True):
        blocks = re.findall(r"^```bash\n(.*?)\n```$", section, flags=re.M | re.S)
        shown = [b for b in blocks if not b.startswith("aiplat lab exercise all --check")]
        assert shown == [ex.command(s) for s in ex.steps], ex.number


def test_every_exercise_has_goal_check_and_pitfalls() -> None:
    for ex in EXERCISES:
        assert ex.goal and ex.means and ex.results and ex.pitfalls, ex.number
        assert ex.steps and all(bool(s.cmd) != bool(s.action) for s in ex.steps), ex.number
        assert f"aiplat lab exercise {ex.number} --check" in render_guide()


def test_shell_steps_write_only_under_course() -> None:
    for ex in EXERCISES:
        for s in ex.steps:
            for target in re.findall(r"(?:>|-w|-o|--write|--cache)\s+(\S+)", s.cmd):
                assert target.startswith('"$COURSE/') or target in {"json", "/dev/null"}, (
                    ex.number, s.cmd)


def test_shell_steps_quote_every_path_and_name_no_lab_address() -> None:
    """Issue 22: a course folder with a space broke the unquoted $COURSE, and the steps named
    lab 'alab' and its subnets; they name the lab through $LAB, $LAB_NODE, $LAB_STORE."""
    for ex in EXERCISES:
        for s in ex.steps:
            unquoted = re.findall(r'(?<!")\$(?:COURSE|LAB_NODE|LAB_STORE|LAB|kc)\b', s.cmd)
            assert not unquoted, (ex.number, s.cmd)
            assert "alab" not in s.cmd and not re.search(r"\b10\.\d+\.\d+\.\d+", s.cmd), (
                ex.number, s.cmd)
            if re.search(r"aiplat (lab fault|diagnose|lab status)", s.cmd):
                assert '--prefix "$LAB"' in s.cmd, (ex.number, s.cmd)
