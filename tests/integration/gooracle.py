"""An upstream Go program as a test oracle: pinned in a ``go.mod`` beside the test, built with
:func:`aiplat.gobuild.go_build` into ``$XDG_CACHE_HOME/aiplat/<name>/<version>`` (default
``~/.cache``), with files copied out of the same module where the program reads them.
The GPU Operator's controller (``gpuoperator.py``) and the Prometheus Operator
(``promop.py``) are two of them; each says what it builds and what it copies.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aiplat.errors import InputError
from aiplat.gobuild import Component, go, go_build


def go_on_path() -> None:
    """Debian's Go tarball lands in /usr/local/go/bin, which a root shell's PATH may lack."""
    if shutil.which("go") is None and Path("/usr/local/go/bin/go").exists():
        os.environ["PATH"] += ":/usr/local/go/bin"


def user_cache() -> Path:
    """``$XDG_CACHE_HOME`` (default ``~/.cache``): where the built programs are kept."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


@dataclass(frozen=True)
class GoOracle:
    tools: Path
    """The folder with the go.mod that pins ``module``."""
    module: str
    program: Component
    title: str
    """How the errors name it ("the Prometheus Operator")."""
    script: str
    """The file that builds it when run (named in the fix)."""
    needs: tuple[str, ...]
    """Folders under the cache that the copied files make."""
    ldflags: Callable[[str], str]
    copy: Callable[[Path, Path], None]
    """(module source folder, cache) -> the files the program or the test reads."""

    def pinned(self) -> str:
        text = (self.tools / "go.mod").read_text()
        m = re.search(rf"^\s*{re.escape(self.module)} (v\S+)", text, re.M)
        if not m:
            raise InputError(f"{self.tools / 'go.mod'}: no version pinned for {self.module}")
        return m.group(1)

    def default_cache(self) -> Path:
        return user_cache() / "aiplat" / self.program.name / self.pinned()

    def _copied(self, cache: Path) -> bool:
        return all((cache / d).is_dir() for d in self.needs)

    def locate(self, cache: Path | None = None) -> Path:
        """The cache folder holding ``bin/<program>`` and the copied files; InputError with
        the command that builds them."""
        cache = cache or self.default_cache()
        if not ((cache / "bin" / self.program.name).is_file() and self._copied(cache)):
            raise InputError(f"{self.title} is not built in {cache} (fix: run 'python "
                             f"tests/integration/{self.script}' (needs Go >= 1.26 and the Go "
                             "module proxy))")
        return cache

    def build(self, cache: Path | None = None, force: bool = False) -> dict[str, object]:
        version = self.pinned()
        cache = cache or self.default_cache()
        t0 = time.monotonic()
        # The whole go.mod in the recipe: its other pins (the libraries it is compiled
        # against) can move while the program's stays, and that must rebuild it.
        gomod = hashlib.sha256((self.tools / "go.mod").read_bytes()).hexdigest()[:16]
        built = go_build(self.tools, [self.program], cache, self.ldflags(version), force=force,
                         stamp_extra={"versions": {self.module: version}, "go.mod": gomod})
        if built or not self._copied(cache):
            self.copy(self.source(), cache)
        return {"cache": str(cache), "version": version, "built": built,
                "seconds": round(time.monotonic() - t0, 1)}

    def source(self) -> Path:
        """The pinned module's source in the Go module cache (downloaded if need be)."""
        cp = subprocess.run([go(), "mod", "download", "-json",
                             f"{self.module}@{self.pinned()}"], cwd=self.tools,
                            capture_output=True, text=True, check=False)
        if cp.returncode != 0:
            raise InputError(f"go mod download failed: {cp.stderr.strip()[-2000:]}")
        return Path(json.loads(cp.stdout)["Dir"])

    def main(self) -> None:
        """``python <script> [--force]``: build and print what was done."""
        go_on_path()
        try:
            print(json.dumps(self.build(force="--force" in sys.argv[1:]), indent=2))
        except InputError as e:
            sys.exit(f"error: {e}")


def writable(paths: list[Path]) -> None:
    """The module cache is read-only; the copies need not be."""
    for p in paths:
        for q in [p, *p.rglob("*")]:
            q.chmod(0o755 if q.is_dir() else 0o644)
