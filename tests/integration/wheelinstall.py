"""This checkout built into a wheel and installed into a fresh virtual environment, as a user
gets aiplat from ``pip install``.

The wheel is built from a copy of the tracked and untracked-but-not-ignored files (what a
release builds; no stale build/ folder), with the commit passed as $AIPLAT_COMMIT since the
copy has no .git. The fresh venv gets aiplat's dependencies from this one through a .pth
line (no network for them), aiplat itself only from the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Installed:
    venv: Path
    commit: str

    @property
    def aiplat(self) -> Path:
        return self.venv / "bin" / "aiplat"


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=ROOT, check=True, capture_output=True,
                           text=True).stdout.split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_bytes(src.read_bytes())


def install(base: Path) -> Installed:
    src, dist, venv = base / "src", base / "dist", base / "venv"
    _copy_tree(src)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()
    env = dict(os.environ, AIPLAT_COMMIT=head)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                            str(dist), str(src)], env=env, capture_output=True, text=True,
                           check=False, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "aiplat-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next(dist.glob("aiplat-*.whl"))
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--no-deps", "--no-index", str(wheel)], capture_output=True,
                          text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return Installed(venv, head)
