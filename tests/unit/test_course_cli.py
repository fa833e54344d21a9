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


def test_an_exercise_runs_in_a_course_folder_with_spaces(tmp_path: Path) -> None:
    """Issue 22: the steps' unquoted $COURSE split a path with a space into two words."""
    course = tmp_path / "my course" / "results dir"
    root = Path(__file__).parents[2]
    res = CliRunner().invoke(exercise, ["1", "--course", str(course), "--root", str(root)])
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "exercise 1 (plan): done" in res.stdout
    assert (course / "ex1" / "plan" / "plan.json").is_file()
    assert not (tmp_path / "my").exists()


def _save_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ipaddress import IPv4Network

    from aiplat.netdiag.model import SegmentInput, plan_lab
    from aiplat.netdiag.state import LabState, save_state

    monkeypatch.setenv("AIPLAT_LAB_DIR", str(tmp_path / "labs"))
    segs = [SegmentInput(name="oob", purpose="management", cidr=IPv4Network("10.99.0.0/24")),
            SegmentInput(name="data", purpose="storage", mtu=9000,
                         cidr=IPv4Network("10.99.7.0/24"))]
    save_state(LabState(plan=plan_lab(segs, nodes=2, prefix="blab"), phase="up"))


def test_the_steps_get_the_named_labs_addresses(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22: the course was hard-coded to lab 'alab' and its subnets."""
    from aiplat.course.runner import step_env

    _save_lab(tmp_path, monkeypatch)
    env = step_env(tmp_path / "c d", "blab")
    assert (env["COURSE"], env["LAB"], env["LAB_NODE"]) == (str(tmp_path / "c d"), "blab",
                                                            "blab-node-1")
    assert env["LAB_STORE"].startswith("10.99.7.") and env["LAB_STORE"].endswith(":5000")
    assert step_env(tmp_path, "nolab")["LAB"] == "nolab" and "LAB_STORE" not in step_env(
        tmp_path, "nolab")


def test_lab_status_prints_the_lab_as_shell_variables(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    from aiplat.cli.lab import lab

    _save_lab(tmp_path, monkeypatch)
    res = CliRunner().invoke(lab, ["status", "--prefix", "blab", "-o", "env"])
    assert res.exit_code == 0, res.stdout
    shown = subprocess.run(["bash", "-c", res.stdout + 'echo "$LAB $LAB_NODE $LAB_STORE"'],
                           capture_output=True, text=True, check=True).stdout.split()
    assert shown[:2] == ["blab", "blab-node-1"] and shown[2].startswith("10.99.7.")
    down = CliRunner().invoke(lab, ["status", "--prefix", "zlab", "-o", "env"])
    assert down.exit_code == 1 and down.stdout == ""


def test_a_corrupt_lab_state_is_a_clear_error(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from aiplat.cli.main import main
    from aiplat.netdiag.state import state_path

    monkeypatch.setenv("AIPLAT_LAB_DIR", str(tmp_path / "labs"))
    state_path("blab").parent.mkdir(parents=True)
    for text in ("{}", "\xff not json", "[" * 5000):
        state_path("blab").write_text(text, errors="surrogateescape")
        assert main(["lab", "status", "--prefix", "blab"]) == 2
