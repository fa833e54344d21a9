"""Build hook only (the project is declared in pyproject.toml): a wheel built from a git
checkout records its commit in ``aiplat/_commit.txt`` for ``aiplat version``; a build from
an exported tree (no .git) takes ``$AIPLAT_COMMIT`` instead. Written into the build folder,
never the source tree; with neither nothing is written and the commit reads "unknown"."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithCommit(build_py):
    def run(self) -> None:
        super().run()
        commit = _git_head() or os.environ.get("AIPLAT_COMMIT", "").strip()
        target = Path(self.build_lib) / "aiplat"
        if commit and target.is_dir():  # an editable install builds no package folder here
            (target / "_commit.txt").write_text(commit + "\n")


def _git_head() -> str:
    here = Path(__file__).parent
    if not (here / ".git").exists():
        return ""  # not a checkout (an sdist, an exported tree): no enclosing repo's HEAD
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                              text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


setup(cmdclass={"build_py": BuildWithCommit})
