"""Build hook only (the project is declared in pyproject.toml): a wheel built from a git
checkout records its commit in ``aiplat/_commit.txt`` for ``aiplat version``. Written into
the build folder, never the source tree; outside git nothing is written and the commit
reads "unknown"."""

from __future__ import annotations

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithCommit(build_py):
    def run(self) -> None:
        super().run()
        try:
            done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent,
                                  capture_output=True, text=True, check=False, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return
        if done.returncode == 0 and done.stdout.strip():
            out = Path(self.build_lib) / "aiplat" / "_commit.txt"
            out.write_text(done.stdout.strip() + "\n")


setup(cmdclass={"build_py": BuildWithCommit})
