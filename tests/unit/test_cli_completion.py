"""`aiplat completion`: the printed script, sourced into a real bash, completes aiplat."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aiplat.cli.main import main

BIN = Path(sys.executable).parent
BASH = shutil.which("bash")


def _script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def _bash_complete(script: str, words: list[str], tmp_path: Path) -> list[str]:
    """What bash offers for WORDS (the last one being completed), as a user's shell would
    after `eval "$(aiplat completion bash)"`: the script's function run with COMP_WORDS set."""
    if BASH is None:
        if os.environ.get("CI", "").lower() in {"true", "1", "yes"}:
            pytest.fail("bash is not installed (CI=true: this test must run)")
        pytest.skip("bash is not installed")
    (tmp_path / "aiplat.bash").write_text(script)
    quoted = " ".join(f"'{w}'" for w in words)
    probe = (f"source {tmp_path / 'aiplat.bash'}\n"
             f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
             "_aiplat_completion aiplat\n"
             "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([BASH, "--norc", "--noprofile", "-c", probe], capture_output=True,
                          text=True, env=env, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_bash_completes_a_command_name(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    script = _script("bash", capsys)
    assert "complete -o nosort -F _aiplat_completion aiplat" in script
    assert _bash_complete(script, ["aiplat", "ku"], tmp_path) == ["kube"]
    assert _bash_complete(script, ["aiplat", "ru"], tmp_path) == ["runtime", "runbook"]


def test_bash_completes_a_subcommand_and_an_option_value(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    script = _script("bash", capsys)
    assert _bash_complete(script, ["aiplat", "kube", "va"], tmp_path) == ["validate"]
    assert _bash_complete(script, ["aiplat", "version", "-o", ""], tmp_path) == [
        "table", "json", "yaml"]
    # catalog names, from the KIND typed before
    assert _bash_complete(script, ["aiplat", "catalog", "node-types", "hgx"], tmp_path) == [
        "hgx-h100-8", "hgx-h200-8", "hgx-a100-8"]
    assert _bash_complete(script, ["aiplat", "catalog", "gpus", "h2"], tmp_path) == [
        "H200-SXM-141GB"]


@pytest.mark.parametrize(("shell", "marker"), [("zsh", "#compdef aiplat"),
                                               ("fish", "complete --no-files --command aiplat")])
def test_zsh_and_fish_scripts_call_back_with_their_protocol(
        shell: str, marker: str, capsys: pytest.CaptureFixture[str]) -> None:
    script = _script(shell, capsys)
    assert marker in script and f"_AIPLAT_COMPLETE={shell}_complete" in script
    # What the script asks aiplat, answered by the installed command itself.
    env = dict(os.environ, _AIPLAT_COMPLETE=f"{shell}_complete", COMP_WORDS="aiplat ver",
               COMP_CWORD="ver" if shell == "fish" else "1")
    done = subprocess.run([str(BIN / "aiplat")], capture_output=True, text=True, env=env,
                          check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "version" in done.stdout and "kube" not in done.stdout


def test_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "tcsh"]) == 2
    assert "'tcsh' is not one of" in capsys.readouterr().err
