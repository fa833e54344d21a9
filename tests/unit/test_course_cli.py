"""``aiplat lab exercise``: argument handling, ``--check`` from disk (exit 1 with the problems
on a missing result, 0 when done), ``--step`` validation, and ``register``."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from test_course_checks import GOOD

from aiplat.cli.course import exercise, register


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_check_all_on_an_empty_course_fails_for_each_exercise(tmp_path: Path) -> None:
    res = CliRunner().invoke(exercise, ["all", "--check", "--course", str(tmp_path)])
    assert res.exit_code == 1
    assert res.stdout.count("NOT done") == 7
    assert "ex1/plan/plan.json is missing" in res.stdout
    assert "0 of 7 exercises done" in res.stdout


def test_check_passes_on_complete_results_and_fails_on_one_wrong(tmp_path: Path) -> None:
    _write(tmp_path, GOOD)
    res = CliRunner().invoke(exercise, ["all", "--check", "--course", str(tmp_path)])
    assert res.exit_code == 0, res.stdout
    assert "7 of 7 exercises done" in res.stdout
    (tmp_path / "ex6/diagnose-clear.json").write_text('{"causes": [{"kind": "mtu"}]}')
    res = CliRunner().invoke(exercise, ["6", "--check", "--course", str(tmp_path)])
    assert res.exit_code == 1
    assert "exercise 6 (diagnose): NOT done" in res.stdout
    assert "a cause remains after the fault was cleared" in res.stdout


def test_course_defaults_to_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    _write(tmp_path, GOOD)
    monkeypatch.setenv("COURSE", str(tmp_path))
    res = CliRunner().invoke(exercise, ["1", "--check"])
    assert res.exit_code == 0, res.stdout


@pytest.mark.parametrize("args, message", [
    (["8"], "expected 1-7 or all"),
    (["x"], "expected 1-7 or all"),
    (["all", "--step", "accept"], "--step needs one exercise"),
])
def test_usage_errors_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    from aiplat.cli.main import main

    group = click.Group("lab")
    register(group)
    res = CliRunner().invoke(group, ["exercise", *args, "--course", str(tmp_path)])
    assert res.exception is not None and message in str(res.exception)
    assert getattr(res.exception, "exit_code", None) == 2
    del main


def test_unknown_step_is_reported(tmp_path: Path) -> None:
    res = CliRunner().invoke(exercise, ["1", "--step", "nope", "--course", str(tmp_path)])
    assert res.exit_code == 1
    assert "exercise 1 has no step 'nope'" in res.stdout


def test_register_adds_exercise_to_the_lab_group() -> None:
    group = click.Group("lab")
    register(group)
    assert group.get_command(click.Context(group), "exercise") is exercise


def test_lab_exercises_refuse_to_run_without_a_lab(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIPLAT_LAB_DIR", str(tmp_path / "no-lab"))
    res = CliRunner().invoke(exercise, ["5", "--course", str(tmp_path / "course")])
    assert res.exit_code == 1
    assert "exercise 5 (artifacts): NOT done" in res.stdout
    assert "aiplat lab up" in res.stdout or "need root" in res.stdout
    assert not (tmp_path / "course" / "ex5").exists()
