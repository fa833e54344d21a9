"""The top-level help documents exit codes and examples, every example in any command's
help runs, and -v/--verbose shows an error's cause chain and aiplat's logs on stderr."""

from __future__ import annotations

import importlib
import logging
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
import pytest

from aiplat.cli import main as cli_main
from aiplat.cli.main import main, verbosity

BIN = Path(sys.executable).parent
# A heading with a parenthesis names what its examples need ("Examples (root, a lab):"): they
# run in tests/integration/test_help_examples_live.py against the real thing, not here.
HEADING = re.compile(r"^\s*Examples?(?: \((?P<needs>[^)\n]+)\))?:\n"
                     r"(?P<block>(?:[ \t]+\S.*\n?)+)", re.M)
# The exit codes of the top-level and catalog/version/completion examples: 0 only.
STRICT = {"aiplat", "catalog", "version", "completion"}


def _help(command: click.Command, name: str) -> str:
    ctx = click.Context(command, info_name=name, max_content_width=100)
    return command.get_help(ctx)


def example_blocks(help_text: str) -> list[tuple[str | None, list[str]]]:
    """(what they need, or None for offline; the command lines) per examples heading: the
    indented lines under it, up to a blank line."""
    return [(m["needs"], [line.strip() for line in m["block"].splitlines() if line.strip()])
            for m in HEADING.finditer(help_text)]


def examples(help_text: str, needs: str | None = None) -> list[str]:
    """The command lines of the blocks needing ``needs`` (default: the offline ones)."""
    return [line for need, lines in example_blocks(help_text) if need == needs
            for line in lines]


def _walk(command: click.Command, name: str, out: dict[str, click.Command]) -> None:
    out[name] = command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for sub in command.list_commands(ctx):
            subcommand = command.get_command(ctx, sub)
            if subcommand is not None:
                _walk(subcommand, f"{name} {sub}", out)


def all_commands() -> dict[str, click.Command]:
    """Every command and group by its path after "aiplat", nested groups included."""
    out: dict[str, click.Command] = {}
    for name, (module, attr) in cli_main.COMMANDS.items():
        _walk(getattr(importlib.import_module(module), attr), name, out)
    return out


def _all_helps() -> dict[str, str]:
    helps = {"aiplat": _help(cli_main.cli, "aiplat")}
    helps |= {name: _help(cmd, f"aiplat {name}") for name, cmd in all_commands().items()}
    return helps


def leaf_helps() -> dict[str, str]:
    return {name: _help(cmd, f"aiplat {name}") for name, cmd in all_commands().items()
            if not isinstance(cmd, click.Group)}


HELPS = _all_helps()


def test_top_level_help_documents_exit_codes_and_examples() -> None:
    text = HELPS["aiplat"]
    codes = dict(re.findall(r"^\s+(\d+)\s+(\S.*)$", text.split("Exit codes:")[1], re.M))
    assert set(codes) == {"0", "1", "2", "130"}
    assert len(examples(text)) >= 3


def test_example_blocks_parse_headings_and_needs() -> None:
    text = ("Usage: x\n\n  Examples:\n    aiplat a\n    aiplat b\n\n  Example:\n"
            "    aiplat c\n\n  Examples (root, a lab):\n    aiplat lab up\n\nOptions:\n")
    assert example_blocks(text) == [(None, ["aiplat a", "aiplat b"]), (None, ["aiplat c"]),
                                    ("root, a lab", ["aiplat lab up"])]
    assert examples(text) == ["aiplat a", "aiplat b", "aiplat c"]
    assert examples(text, "root, a lab") == ["aiplat lab up"]
    # an inline "Example: ..." is prose, not a block click keeps
    assert example_blocks("  Example: aiplat x\n") == []


@pytest.mark.parametrize("name", sorted(leaf_helps()))
def test_every_leaf_command_has_examples(name: str) -> None:
    """1-3 lines an admin would type (a block may start with the aiplat commands that make
    its inputs), each an aiplat command."""
    blocks = example_blocks(leaf_helps()[name])
    assert blocks, f"aiplat {name} --help has no Examples: block"
    for _needs, lines in blocks:
        assert 1 <= len(lines) <= 4, (name, lines)
        assert all(line.startswith("aiplat ") for line in lines), (name, lines)
        assert any(line.startswith(f"aiplat {name} ") or line == f"aiplat {name}"
                   for line in lines), (name, "no example of the command itself", lines)


def example_env(work: Path) -> dict[str, str]:
    """This venv's aiplat first on PATH; the model cache (the env the help documents) in
    WORK, so `model gc|verify|ls` never touch a real cache."""
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                AIPLAT_MODEL_CACHE=str(work / ".model-cache"))


def run_examples(name: str, lines: list[str], work: Path, env: dict[str, str],
                 strict: bool = False) -> str | None:
    """Run LINES in order in bash in WORK (a line may use what the previous made); the first
    failure, or None. Each may exit 0, or 1 where the example shows a check finding problems
    (a degraded node): valid usage either way, never a usage/input error (2) or a
    traceback."""
    for line in lines:
        if not line.startswith("aiplat "):
            return f"{name}: {line!r} is not an aiplat command"
        done = subprocess.run(["bash", "-c", line], cwd=work, env=env,
                              capture_output=True, text=True, check=False, timeout=600)
        if done.returncode not in ((0,) if strict else (0, 1)) or "Traceback" in done.stderr:
            return f"{name}: {line!r} exit {done.returncode}:\n{done.stderr[-2000:]}"
    return None


OFFLINE = sorted(n for n, t in HELPS.items() if examples(t))


@pytest.fixture(scope="module")
def offline_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | None]:
    """Every offline example block, one fresh folder per command, the commands side by side
    (each line a process that mostly waits on imports: a pool keeps the test quick)."""
    root = tmp_path_factory.mktemp("examples")

    def one(name: str) -> str | None:
        work = root / name.replace(" ", "-")
        work.mkdir()
        return run_examples(name, examples(HELPS[name]), work, example_env(work),
                            strict=name in STRICT)

    with ThreadPoolExecutor(max_workers=max(2, min(8, 2 * (os.cpu_count() or 1)))) as pool:
        return dict(zip(OFFLINE, pool.map(one, OFFLINE), strict=True))


@pytest.mark.parametrize("name", OFFLINE)
def test_every_offline_example_runs(name: str, offline_runs: dict[str, str | None]) -> None:
    failure = offline_runs[name]
    assert failure is None, failure


def test_examples_that_need_services_are_aiplat_commands() -> None:
    """Blocks whose heading names a need (root, a lab, a registry...) run against the real
    thing in tests/integration/test_help_examples_live.py (which fails on a need it does not
    run); here each of their lines must be an aiplat command."""
    needing = {name: sorted({need for need, _ in example_blocks(text) if need is not None})
               for name, text in HELPS.items()}
    needing = {name: needs for name, needs in needing.items() if needs}
    assert len(needing) >= 20, sorted(needing)
    bad = [(name, line) for name, needs in needing.items() for need in needs
           for line in examples(HELPS[name], need) if not line.startswith("aiplat ")]
    assert not bad, bad


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
