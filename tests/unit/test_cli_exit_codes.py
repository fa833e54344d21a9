"""Exit codes as documented (issue #45 item 4): `aiplat --help` promises 2 for a usage, input
or output error with a message that names the file and the fix. The click tree is walked
(as the group loads it), so a new command is held to this without being listed:

- an unknown option: exit 2, click's usage message, no traceback, nothing on stdout;
- a path input that does not exist, given where a command takes a file or folder (its first
  argument when that is a path, and every option whose type is a path that must exist):
  exit 2, ``error: PATH: ... (fix: ...)``, no traceback, nothing on stdout.
"""

from __future__ import annotations

import click
import pytest

from aiplat.cli._output import Existing
from aiplat.cli.main import COMMANDS, cli, main

MISSING = "/nonexistent/aiplat-input.yaml"


def _leaves() -> dict[str, click.Command]:
    out: dict[str, click.Command] = {}

    def walk(cmd: click.Command, name: str) -> None:
        if isinstance(cmd, click.Group):
            for sub, c in cmd.commands.items():
                walk(c, f"{name} {sub}")
        else:
            out[name] = cmd

    ctx = click.Context(cli)
    for name in COMMANDS:
        cmd = cli.get_command(ctx, name)
        assert cmd is not None
        walk(cmd, name)
    return out


LEAVES = _leaves()
# First arguments named like a file or folder input, and the commands that read one there.
PATHLIKE = {"spec", "file", "target", "targets", "paths", "source", "folder", "snapshot",
            "a", "baseline_file", "directory", "record", "tree"}
# What else such a command needs before it reads the path (a required option), given here.
NEEDS = {"accept report": ["-d", "{tmp}/out"], "maintain plan": ["--pool", "gpu",
                                                                  "--change", "driver=1"],
         "maintain run": ["--pool", "gpu", "--change", "driver=1", "--dry-run"],
         "matrix diff": ["--set", "driver=1"],
         "node agent": ["--pool", "h100", "--once", "--dry-run"],
         "node baseline record": ["--pool", "h100", "-w", "{tmp}/b.json"],
         "node placement": ["--pool", "h100"], "node prepare": ["--pool", "h100"],
         "sharing plan": ["--demand", "1g.10gb=1"]}


def _path_commands() -> list[str]:
    out = []
    for name, cmd in LEAVES.items():
        args = [p for p in cmd.params if isinstance(p, click.Argument)]
        if args and args[0].name in PATHLIKE:
            out.append(name)
    return sorted(out)


@pytest.mark.parametrize("name", sorted(LEAVES))
def test_an_unknown_option_is_a_usage_error(name: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*name.split(), "--no-such-option-here"]) == 2
    out, err = capsys.readouterr()
    assert "No such option" in err and "Traceback" not in err and out == ""


def test_the_walk_finds_the_path_commands() -> None:
    found = _path_commands()
    assert {"plan", "spec validate", "kube validate", "kube lint", "sim replay",
            "cdi validate", "accept run", "model push", "diagnose rdma"} <= set(found), found


@pytest.mark.parametrize("name", _path_commands())
def test_a_missing_input_names_the_path_and_the_fix(name: str, tmp_path: object,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    cmd = LEAVES[name]
    args = [p for p in cmd.params if isinstance(p, click.Argument)]
    rest = ["x"] * (sum(1 for p in args[1:] if p.required))
    extra = [a.format(tmp=tmp_path) for a in NEEDS.get(name, [])]
    assert main([*name.split(), MISSING, *rest, *extra]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err, err
    line = next((ln for ln in err.splitlines() if ln.startswith("error: ")), "")
    assert line.startswith(f"error: {MISSING}") and "(fix: " in line, err


def test_options_that_must_exist_use_one_type() -> None:
    """An option or argument that must exist is an ``Existing`` (aiplat's message), never
    click's ``exists=True`` (its "Invalid value ... does not exist" names no fix)."""
    clicks = [f"{name} {p.name}" for name, cmd in LEAVES.items() for p in cmd.params
              if isinstance(p.type, click.Path) and not isinstance(p.type, Existing)
              and p.type.exists]
    assert not clicks, clicks
