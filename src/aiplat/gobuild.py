"""Build upstream Go programs the ordinary Go way (pure helper for every pinned tools module).

A tools module (a ``go.mod`` with ``tool`` lines, shipped in the package) pins each program's
version; :func:`go_build` compiles the programs it lacks with one ``go build -mod=readonly``
into a cache outside the repository and records the recipe, so a changed pin rebuilds. The
lab cluster (``cluster.assets``), the model store's interop oracles, the CDI reference tools
and the FGD benchmark share it; it lives outside those packages so none of them depends on
another for it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aiplat.errors import InputError

GO_MIN = (1, 26)
Progress = Callable[[str], None]
# A line of `go build -v` that names a package it compiles (errors have spaces or colons).
_PACKAGE_LINE = re.compile(r"[\w.~+-]+(/[\w.~+-]+)*")


@dataclass(frozen=True)
class Component:
    name: str  # the binary
    module: str
    package: str


def go() -> str:
    """The ``go`` on PATH, checked to be recent enough for the pinned modules."""
    go = shutil.which("go")
    if go is None:
        raise InputError("go is not on PATH (fix: install Go >= 1.26, e.g. the golang "
                         "package, or pass --assets DIR with prebuilt binaries)")
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True,
                         check=False).stdout.strip()
    m = re.match(r"go(\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < GO_MIN:
        raise InputError(f"{go} is {out or 'unknown'}; the pinned modules need Go "
                         f">= {GO_MIN[0]}.{GO_MIN[1]} (fix: install a newer Go)")
    return go


def go_build(tools: Path, programs: list[Component], cache: Path, flags: str, *,
             progress: Progress = lambda _m: None, force: bool = False,
             stamp_extra: dict[str, object] | None = None,
             packages: Progress | None = None) -> list[str]:
    """Build the ``programs`` of the Go tools module ``tools`` into ``cache/bin`` with one
    ``go build`` (shared packages compile once): those missing, all of them when the recipe
    (pinned versions, ldflags) changed since the last build, or with ``force``. Returns the
    names built. Shared by the lab cluster and the model store's interop oracles.
    ``packages``, when given, hears each package as go compiles it (``go build -v``): the
    only sign of life a build of minutes gives."""
    bindir = cache / "bin"
    stamp = cache / "build.json"
    recipe = {**(stamp_extra or {}), "ldflags": flags}
    try:
        stale = json.loads(stamp.read_text()) != recipe
    except (OSError, ValueError):
        stale = True
    todo = [c for c in programs if force or stale or not (bindir / c.name).is_file()]
    if todo:
        go_bin = go()
        bindir.mkdir(parents=True, exist_ok=True)
        progress(f"building {', '.join(c.name for c in todo)} with {go_bin} (the first build "
                 "takes minutes on 2 cores; the Go caches make later builds fast)")
        tmp = cache / "bin.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        env = {**os.environ, "GOFLAGS": "-mod=readonly -buildvcs=false", "CGO_ENABLED": "0"}
        rc, err = _run_build([go_bin, "build", f"-ldflags={flags}", "-o", f"{tmp}/",
                              *(c.package for c in todo)], tools, env, packages)
        if rc != 0:
            raise InputError(f"go build failed:\n{err.strip()[-4000:]}")
        for c in todo:
            os.replace(tmp / binary_name(c.package), bindir / c.name)
        shutil.rmtree(tmp, ignore_errors=True)
    stamp.write_text(json.dumps(recipe, indent=2) + "\n")
    return [c.name for c in todo]


def _run_build(argv: list[str], cwd: Path, env: dict[str, str],
               packages: Progress | None) -> tuple[int, str]:
    """Run ``go build``: (exit status, its stderr less the package names of ``-v``)."""
    if packages is None:
        cp = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                            check=False)
        return cp.returncode, cp.stderr
    argv = [argv[0], argv[1], "-v", *argv[2:]]
    other: list[str] = []
    with subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            name = line.strip()
            if _PACKAGE_LINE.fullmatch(name):
                packages(name)
            else:
                other.append(line)
    return proc.returncode, "".join(other)


def binary_name(package: str) -> str:
    """The file ``go build -o DIR/`` writes: the last path element, or the one before a
    major-version suffix (``.../server/v3`` -> ``server``)."""
    parts = package.split("/")
    return parts[-2] if re.fullmatch(r"v\d+", parts[-1]) else parts[-1]
