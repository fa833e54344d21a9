"""The README's promise: exactly two commands, the first plans the example on a fresh copy."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    first_block = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert first_block is not None and readme.index("```bash") < readme.index("## "), (
        "the README must start with its command block")
    return [line for line in first_block.group(1).splitlines() if line.strip()]


def test_readme_starts_with_exactly_two_commands_and_ci_runs_the_second() -> None:
    commands = _commands()
    assert len(commands) == 2
    assert "aiplat plan" in commands[0]
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci.replace("exec ", "")


def test_first_command_plans_the_example_on_a_fresh_copy(tmp_path: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.split("\0")
    copy = tmp_path / "aiplat"
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            dst = copy / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())
    done = subprocess.run(["bash", "-c", _commands()[0]], cwd=copy, capture_output=True,
                          check=False, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    out = copy / "out"
    assert {"plan.json", "report.html", "report.md", "kube"} <= {p.name for p in out.iterdir()}
    assert "domain-pretrain" in done.stdout
