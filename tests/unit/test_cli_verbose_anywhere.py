"""Global options anywhere on the line (issue #45 item 4): ``-v`` after the command name
does what it does before it (logs on stderr, an error's cause chain), on every command of
the click tree, walked so a new command is held to it without being listed."""

from __future__ import annotations

import logging

import click
import pytest

from aiplat.cli.main import COMMANDS, cli, main


def _walk(cmd: click.Command, name: str, out: dict[str, click.Command]) -> None:
    out[name] = cmd
    if isinstance(cmd, click.Group):
        for sub, c in cmd.commands.items():
            _walk(c, f"{name} {sub}", out)


def test_every_command_takes_v_and_none_has_a_v_of_its_own() -> None:
    """Through the group, as a user's command line loads them."""
    commands: dict[str, click.Command] = {}
    ctx = click.Context(cli)
    for name in COMMANDS:
        cmd = cli.get_command(ctx, name)
        assert cmd is not None
        _walk(cmd, name, commands)
    assert len(commands) > 60
    missing, clash = [], []
    for name, cmd in commands.items():
        mine = [p for p in cmd.params if "-v" in getattr(p, "opts", [])]
        if not mine:
            missing.append(name)
        elif len(mine) > 1 or "--verbose" not in mine[0].opts:
            clash.append(name)
    assert not missing and not clash, (missing, clash)


@pytest.mark.parametrize("argv", [["catalog", "gpus", "nope", "-v"],
                                  ["catalog", "-v", "gpus", "nope"],
                                  ["-v", "catalog", "gpus", "nope"]])
def test_an_error_shows_its_cause_chain_wherever_v_stands(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "aiplat/cli/catalog.py" in err
    assert err.rstrip().endswith("'nope'") or "error: no GPU 'nope'" in err


def test_without_v_the_error_is_one_line_and_the_count_does_not_carry_over(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "gpus", "nope", "-vv"]) == 2
    assert logging.getLogger("aiplat").level == logging.DEBUG
    capsys.readouterr()
    assert main(["catalog", "gpus", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no GPU 'nope'") and "Traceback" not in err
    assert logging.getLogger("aiplat").level == logging.WARNING


@pytest.mark.parametrize(("argv", "level"), [
    (["catalog", "gpus", "-v"], logging.INFO),
    (["catalog", "-v", "gpus", "-v"], logging.DEBUG),
    (["-v", "catalog", "gpus", "--verbose"], logging.DEBUG),
    (["catalog", "gpus"], logging.WARNING)])
def test_v_sets_the_log_level_wherever_it_stands(argv: list[str], level: int,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    assert logging.getLogger("aiplat").level == level
    assert "H100" in capsys.readouterr().out  # the data itself, on stdout as ever
