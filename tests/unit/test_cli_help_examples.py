"""The top-level help documents exit codes and examples, every example in any command's
help runs, and -v/--verbose shows an error's cause chain and aiplat's logs on stderr."""

from __future__ import annotations

import importlib
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from aiplat.cli import main as cli_main
from aiplat.cli.main import main, verbosity

BIN = Path(sys.executable).parent
# Commands whose help must carry at least one example (the rest: once they add them, the
# examples are run below all the same).
MUST_HAVE_EXAMPLES = {"catalog", "version", "completion"}


def _help(command: click.Command, name: str) -> str:
    ctx = click.Context(command, info_name=name, max_content_width=100)
    return command.get_help(ctx)


def examples(help_text: str) -> list[str]:
    """The command lines under an "Example:"/"Examples:" heading (indented, up to a blank
    line)."""
    out: list[str] = []
    for block in re.findall(r"^\s*Examples?:\n((?:[ \t]+\S.*\n?)+)", help_text, re.M):
        out += [line.strip() for line in block.splitlines() if line.strip()]
    return out


def _all_helps() -> dict[str, str]:
    helps = {"aiplat": _help(cli_main.cli, "aiplat")}
    for name, (module, attr) in cli_main.COMMANDS.items():
        command = getattr(importlib.import_module(module), attr)
        helps[name] = _help(command, f"aiplat {name}")
        if isinstance(command, click.Group):
            for sub in command.list_commands(click.Context(command)):
                subcommand = command.get_command(click.Context(command), sub)
                if subcommand is not None:
                    helps[f"{name} {sub}"] = _help(subcommand, f"aiplat {name} {sub}")
    return helps


def test_top_level_help_documents_exit_codes_and_examples() -> None:
    text = _help(cli_main.cli, "aiplat")
    codes = dict(re.findall(r"^\s+(\d+)\s+(\S.*)$", text.split("Exit codes:")[1], re.M))
    assert set(codes) == {"0", "1", "2", "130"}
    assert len(examples(text)) >= 3


@pytest.mark.parametrize("name", sorted(MUST_HAVE_EXAMPLES))
def test_new_commands_have_examples(name: str) -> None:
    assert examples(_all_helps()[name]), name


def test_every_example_in_any_help_runs(tmp_path: Path) -> None:
    """Each example exits as the exit codes say it may: 0, or 1 for an example that shows a
    check failing; the top-level and the catalog/version/completion examples exit 0."""
    helps = _all_helps()
    found = {name: examples(text) for name, text in helps.items() if examples(text)}
    assert set(found) >= {"aiplat", *MUST_HAVE_EXAMPLES}
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    strict = {"aiplat", *MUST_HAVE_EXAMPLES}
    for name, lines in found.items():
        # one shell per help, in a fresh folder: an example may use what the previous made
        work = tmp_path / name.replace(" ", "-")
        work.mkdir()
        for line in lines:
            assert line.startswith("aiplat "), (name, line)
            done = subprocess.run(["bash", "-c", line], cwd=work, env=env,
                                  capture_output=True, text=True, check=False, timeout=600)
            # 0, or 1 where the example shows a check finding problems (a degraded node):
            # valid usage either way, never a usage/input error (2) or a traceback
            assert done.returncode in ((0,) if name in strict else (0, 1)), (
                name, line, done.stderr[-2000:])
            assert "Traceback" not in done.stderr, (name, line, done.stderr[-2000:])


@pytest.mark.parametrize(("argv", "count"), [
    (["-v", "catalog", "gpus"], 1), (["-vv", "plan"], 2), (["--verbose", "-v", "x"], 2),
    (["catalog", "-v"], 0), (["--version"], 0), ([], 0), (["-h"], 0)])
def test_verbosity_counts_the_group_options_only(argv: list[str], count: int) -> None:
    assert verbosity(argv) == count


def test_verbose_error_shows_its_cause_chain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "gpus", "nope"]) == 2
    quiet = capsys.readouterr().err
    assert quiet.startswith("error: no GPU 'nope'") and "Traceback" not in quiet
    assert main(["-v", "catalog", "gpus", "nope"]) == 2
    loud = capsys.readouterr().err
    assert "Traceback (most recent call last)" in loud and "aiplat/cli/catalog.py" in loud
    assert loud.rstrip().endswith(quiet.rstrip())
    # a usage error stays a usage message
    assert main(["-v", "catalog", "switches"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_verbose_logs_go_to_stderr_for_this_invocation_only(
        capsys: pytest.CaptureFixture[str]) -> None:
    log = logging.getLogger("aiplat.test")
    assert main(["-v", "version", "-o", "json"]) == 0
    log.info("step one")
    log.debug("detail")
    out, err = capsys.readouterr()
    assert "step one" in err and "detail" not in err and "step one" not in out
    assert main(["-vv", "version", "-o", "json"]) == 0
    log.debug("detail")
    assert "DEBUG aiplat.test: detail" in capsys.readouterr().err
    assert main(["version", "-o", "json"]) == 0  # the next command is not verbose
    log.info("step two")
    log.warning("a warning")
    err = capsys.readouterr().err
    assert "step two" not in err and "WARNING aiplat.test: a warning" in err
