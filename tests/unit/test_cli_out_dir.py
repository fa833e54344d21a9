"""One convention for the output folder (issue #45): every ``-d`` names a folder the command
writes, and ``-d -`` is refused (exit 2, nothing created) except where the command streams
(``kube render``), instead of a folder named ``-``. The click tree is walked, so a new
command is held to it without being listed."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from test_cli_help_examples import all_commands

from aiplat.cli._output import OutDir
from aiplat.cli.main import main

# What takes -d otherwise, and why: kube render streams the tree to stdout for '-';
# plan refuses '-' itself (its message names the stream it has); samples get's -d is the
# sample's own path (a file or a folder).
OWN_RULE = {"kube render", "plan", "samples get"}


def _out_dirs() -> dict[str, click.Parameter]:
    return {name: p for name, cmd in all_commands().items() for p in cmd.params
            if "-d" in getattr(p, "opts", [])}


def test_every_out_dir_is_a_folder_that_refuses_a_dash() -> None:
    found = _out_dirs()
    assert {"slurm render", "monitoring render", "runbook", "cdi generate"} <= set(found)
    wrong = {n: type(p.type).__name__ for n, p in found.items()
             if n not in OWN_RULE and not isinstance(p.type, OutDir)}
    assert not wrong, wrong


@pytest.mark.parametrize("argv", [["slurm", "render", "-d", "-"],
                                  ["monitoring", "render", "-d", "-"],
                                  ["runbook", "-d", "-"],
                                  ["matrix", "show", "-d", "-"],
                                  ["plan", "-d", "-"]])
def test_dash_is_refused_and_nothing_is_written(
        argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: -d -") and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
