"""The CDI reference loader as an oracle: ``cdi-oracle``, built from pinned Go modules.

``tools/go.mod`` next to this file pins ``tags.cncf.io/container-device-interface`` (the
loader containerd, CRI-O and Podman link); ``tools/cdi-oracle/main.go`` is a main of ours
that runs ``cdi.ReadSpec`` on each file and prints one JSON verdict per line. ``build`` runs
``go build`` through :func:`aiplat.gobuild.go_build` into
``$XDG_CACHE_HOME/aiplat/devices/<version>/bin`` (nothing of theirs is committed);
``reference_verdicts`` feeds any number of files to one process, so thousands of generated
specs cost one start. ``python -m aiplat.devices.oracles`` builds and prints what it did.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from aiplat.errors import InputError
from aiplat.gobuild import Component, go_build

TOOLS = Path(str(resources.files("aiplat.devices") / "tools"))
MODULE = "tags.cncf.io/container-device-interface"
ORACLE = Component("cdi-oracle", MODULE, "aiplat.local/tools/devices/cdi-oracle")
# Whose test fixtures and golden specs the differential tests read (from the module cache)
NVIDIA_CTK = ("github.com/NVIDIA/nvidia-container-toolkit", "v1.20.2")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Verdict:
    file: str
    ok: bool
    error: str = ""


def pinned() -> str:
    """The reference loader's version in the tools module."""
    m = re.search(rf"^\s*(?:require\s+)?{re.escape(MODULE)} (v\S+)",
                  (TOOLS / "go.mod").read_text(), re.M)
    if not m:
        raise InputError(f"{TOOLS / 'go.mod'}: no version pinned for {MODULE}")
    return m.group(1)


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aiplat" / "devices" / f"cdi-{pinned()}"


def locate(cache: Path | None = None) -> Path:
    """The built oracle; InputError with the command that builds it."""
    p = (cache or default_cache()) / "bin" / ORACLE.name
    if not (p.is_file() and os.access(p, os.X_OK)):
        raise InputError(f"{p} not found (fix: run 'python -m aiplat.devices.oracles' "
                         "(needs Go >= 1.26))")
    return p


def build(cache: Path | None = None, progress: Progress = lambda _m: None,
          force: bool = False) -> dict[str, object]:
    """Build the oracle unless the cache has it for this pin; returns what was done."""
    version = pinned()
    cache = cache or default_cache()
    t0 = time.monotonic()
    # The main's own source is in the recipe: editing it rebuilds.
    source = hashlib.sha256((TOOLS / "cdi-oracle" / "main.go").read_bytes()).hexdigest()
    built = go_build(TOOLS, [ORACLE], cache, "-s -w", progress=progress, force=force,
                     stamp_extra={"versions": {MODULE: version}, "source": source})
    return {"cache": str(cache), "version": version, "built": built,
            "seconds": round(time.monotonic() - t0, 1)}


CTK_TOOLS = Path(str(resources.files("aiplat.devices") / "ctk-tools"))


def ctk_binary(cache: Path | None = None) -> Path:
    return (cache or default_cache()) / "bin" / "ctk-generate"


def build_ctk(cache: Path | None = None, progress: Progress = lambda _m: None) -> Path:
    """``ctk-generate`` (nvidia-ctk's pkg/nvcdi with go-nvml's DGX A100 mock): cgo, so
    built here with CGO_ENABLED=1 rather than by go_build (which builds static binaries);
    rebuilt when its go.mod or main change."""
    exe = ctk_binary(cache)
    recipe = hashlib.sha256(b"".join((CTK_TOOLS / f).read_bytes() for f in (
        "go.mod", "go.sum", "ctk-generate/main.go"))).hexdigest()
    stamp = exe.parent / "ctk-generate.recipe"
    if exe.is_file() and stamp.is_file() and stamp.read_text() == recipe:
        return exe
    go = shutil.which("go") or "/usr/local/go/bin/go"
    exe.parent.mkdir(parents=True, exist_ok=True)
    progress(f"building ctk-generate with {go} (cgo)")
    cp = subprocess.run([go, "build", "-ldflags=-s -w", "-o", str(exe), "./ctk-generate"],
                        cwd=CTK_TOOLS, capture_output=True, text=True, check=False,
                        env={**os.environ, "CGO_ENABLED": "1",
                             "GOFLAGS": "-mod=readonly -buildvcs=false"})
    if cp.returncode != 0:
        raise InputError(f"go build ctk-generate failed (needs gcc for cgo):\n"
                         f"{cp.stderr.strip()[-3000:]}")
    stamp.write_text(recipe)
    return exe


def module_source(module: str, version: str) -> Path:
    """The module's source in the Go module cache (``go mod download``: from the proxy the
    first time), for the upstream fixtures the differential tests read."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    with tempfile.TemporaryDirectory() as tmp:  # outside any module: nothing is edited
        cp = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"],
                            capture_output=True, text=True, timeout=600, check=False,
                            cwd=tmp)
    try:
        return Path(json.loads(cp.stdout)["Dir"])
    except (ValueError, KeyError):
        raise InputError(f"go mod download {module}@{version} failed: "
                         f"{(cp.stderr or cp.stdout).strip()[-1000:]}") from None


def reference_verdicts(files: Sequence[str], binary: Path | None = None,
                       timeout: float = 600) -> dict[str, Verdict]:
    """The reference loader's verdict on each file, from one process (paths on stdin)."""
    exe = binary or locate()
    cp = subprocess.run([str(exe), "-"], input="".join(f"{f}\n" for f in files),
                        capture_output=True, text=True, timeout=timeout, check=False)
    if cp.returncode != 0:
        raise InputError(f"{exe} failed: {cp.stderr.strip()[-2000:]}")
    out = {}
    for line in cp.stdout.splitlines():
        v = json.loads(line)
        out[v["file"]] = Verdict(v["file"], bool(v["ok"]), v.get("error", ""))
    return out


def main() -> int:
    try:
        report = build(progress=lambda m: print(m, file=sys.stderr))
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:  # needs gcc (cgo): without it only the nvidia-ctk comparison test cannot run
        build_ctk(progress=lambda m: print(m, file=sys.stderr))
    except InputError as e:
        print(f"warning: {e}", file=sys.stderr)
    what = "built cdi-oracle" if report["built"] else "up to date"  # + ctk-generate
    print(f"CDI reference loader {report['version']}: {what} in {report['seconds']} s: "
          f"{report['cache']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
